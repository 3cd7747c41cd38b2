#include "mka/integration/priority.h"

#include "mka/api/kueue.h"
#include "mka/api/workload_status.h"
#include "mka/common/json_fields.h"

namespace mka::integration {

using json_fields::arrayMember;
using json_fields::objectMember;
using json_fields::stringMember;
using nlohmann::json;

namespace {

constexpr const char* kWorkloadPriorityClassGroup = "kueue.x-k8s.io";
constexpr const char* kWorkloadPriorityClassKind = "WorkloadPriorityClass";
constexpr const char* kPodPriorityClassGroup = "scheduling.k8s.io";
constexpr const char* kPodPriorityClassKind = "PriorityClass";

std::int32_t valueOf(const json& priorityClass) {
  const json& value = priorityClass.contains("value") ? priorityClass["value"] : json();
  return value.is_number_integer() ? value.get<std::int32_t>() : 0;
}

std::string priorityLabel(const json& job) {
  const auto& labels = objectMember(objectMember(job, "metadata"), "labels");
  return stringMember(labels, std::string(api::kPriorityClassLabel));
}

}  // namespace

std::variant<Priority, PriorityNotFound> resolvePriority(const json& job, const json& podSets,
                                                         const PriorityLookups& lookups) {
  if (const auto name = priorityLabel(job); !name.empty()) {
    const auto found = lookups.workloadPriorityClass(name);
    if (!found) return PriorityNotFound{true, "WorkloadPriorityClass \"" + name + "\" not found"};
    return Priority{kWorkloadPriorityClassGroup, kWorkloadPriorityClassKind, name, valueOf(*found)};
  }
  std::string podClass;
  for (const auto& podSet : podSets.is_array() ? podSets : json::array()) {
    podClass = stringMember(objectMember(objectMember(podSet, "template"), "spec"), "priorityClassName");
    if (!podClass.empty()) break;
  }
  if (!podClass.empty()) {
    const auto found = lookups.priorityClass(podClass);
    if (!found) return PriorityNotFound{false, "PriorityClass \"" + podClass + "\" not found"};
    return Priority{kPodPriorityClassGroup, kPodPriorityClassKind, podClass, valueOf(*found)};
  }
  std::optional<Priority> lowestDefault;
  for (const auto& pc : lookups.priorityClasses()) {
    if (!pc.value("globalDefault", false)) continue;
    const Priority candidate{kPodPriorityClassGroup, kPodPriorityClassKind,
                             stringMember(objectMember(pc, "metadata"), "name"), valueOf(pc)};
    if (!lowestDefault || candidate.value < lowestDefault->value) lowestDefault = candidate;
  }
  return lowestDefault ? *lowestDefault : Priority{};
}

std::optional<Priority> priorityOf(const json& workload) {
  const auto& spec = objectMember(workload, "spec");
  if (!spec.contains("priority") || !spec["priority"].is_number_integer()) return std::nullopt;
  const auto& ref = objectMember(spec, "priorityClassRef");
  return Priority{stringMember(ref, "group"), stringMember(ref, "kind"), stringMember(ref, "name"),
                  spec["priority"].get<std::int32_t>()};
}

bool followsPriorityLabel(const json& job, const json& workload) {
  const auto current = priorityOf(workload);
  const bool noClass = !current || current->name.empty();
  if (api::hasQuotaReservation(workload) && noClass) return false;
  if (!noClass && current->kind != kWorkloadPriorityClassKind) return false;
  return (noClass ? std::string() : current->name) != priorityLabel(job);
}

}  // namespace mka::integration
