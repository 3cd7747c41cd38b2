#include "mka/webhook/child_mutator.h"

#include <algorithm>
#include <variant>
#include <vector>

#include <spdlog/spdlog.h>

#include "mka/api/kueue.h"
#include "mka/api/pod_set_info.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

// The integrated framework whose children are of kind `gvk`, or nullptr.
const config::IntegratedFramework* parentOf(const config::Configuration& config, const api::GroupVersionKind& gvk) {
  for (const auto& f : config.integrations.frameworks)
    if (f.children && f.children->gvk == gvk) return &f;
  return nullptr;
}

void childSkipped(const AdmissionRequest& request, std::string_view why) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  log::debug("child not given an admission",
             {{"uid", request.uid}, {"object", request.objectKey()}, {"kind", request.kind.kind}, {"why", why}});
}

// The value at `path` in `object` for writing: made null when absent, which mergeMap and
// appendTolerations make a map or a list.
json& fieldForWriting(json& object, const std::string& path) {
  if (json* field = json_fields::fieldAt(object, path)) return *field;
  json_fields::setFieldAt(object, path, nullptr);
  return *json_fields::fieldAt(object, path);
}

// What a refused creation's message ends with: the job's controller creates the child again.
constexpr std::string_view kRetried = "; its controller retries a refused creation";

// The child as the admission leaves it: `info`'s node selector merged into the rule's field and
// its tolerations appended; a string is the conflict, said for `child` and `workload`.
std::variant<json, std::string> givenInfo(const json& object, const config::IntegratedFramework& parent,
                                          const api::PodSetInfo& info, const std::string& child,
                                          const std::string& workload) {
  const config::ChildRule& rule = *parent.children;
  json after = object;
  if (!rule.nodeSelector.empty() && !info.nodeSelector.empty()) {
    if (auto conflict = api::mergeMap(fieldForWriting(after, rule.nodeSelector), info.nodeSelector, "nodeSelector"))
      return child + ": " + rule.nodeSelector + ": invalid admission check PodSetUpdate: " + *conflict + ": " +
             workload + " was admitted where its pods need that node selector; remove the key from what the " +
             parent.gvk.kind + " gives its " + rule.gvk.kind + "s, or queue it where no flavor has that node label";
  }
  if (!rule.tolerations.empty() && !info.tolerations.empty())
    api::appendTolerations(fieldForWriting(after, rule.tolerations), info.tolerations);
  return after;
}

}  // namespace

AdmissionResponse mutateChild(const AdmissionRequest& request, const config::Configuration& config,
                              const AdmittedWorkloads* workloads) {
  // A child's pod template is set once, when it is created; what runs it reads it from then on.
  if (request.operation != "CREATE" || !request.object.is_object()) return AdmissionResponse::allow();
  const auto* parent = parentOf(config, request.kind);
  if (parent == nullptr) {
    childSkipped(request, "kind is no integrated framework's children");
    return AdmissionResponse::allow();
  }
  const std::string child = request.kind.kind + " " + request.objectKey();
  const auto podSet = labelOf(request.object, api::kPodSetLabel);
  if (!podSet || podSet->empty()) {
    childSkipped(request, "no pod set label: its job was not started by Kueue");
    return AdmissionResponse::allow();
  }
  const auto workloadName = annotationOf(request.object, api::kWorkloadAnnotation);
  if (!workloadName || workloadName->empty()) {
    AdmissionResponse response;
    response.warnings.push_back(child + " carries the label " + std::string(api::kPodSetLabel) + " but no annotation " +
                                std::string(api::kWorkloadAnnotation) +
                                ", so it names no Workload and its pods get no flavor's node selector or tolerations; "
                                "a " +
                                parent->gvk.kind + " Kueue started carries both: remove the label from yours");
    return response;
  }
  if (workloads == nullptr)
    throw Error("the webhook has no Workload cache to give " + child +
                " its admission's node selector and tolerations: the adapter started with no integrated kind "
                "whose children take them, and a reload added one; restart the adapter");

  const std::string ns = request.objectNamespace();
  const std::string workloadRef = "Workload " + ns + "/" + std::string(*workloadName) + " (annotation " +
                                  std::string(api::kWorkloadAnnotation) + ")";
  const auto workload = workloads->workload(ns, *workloadName);
  if (!workload) {
    return AdmissionResponse::deny(child + ": " + workloadRef +
                                   " is not in the adapter's cache, so the node selector and tolerations of its "
                                   "admission are not known: the cache may lag a Workload created moments ago" +
                                   std::string(kRetried) + "; if it stays refused, check that the Workload exists");
  }
  if (json_fields::objectMember(json_fields::objectMember(*workload, "status"), "admission").empty()) {
    return AdmissionResponse::deny(child + ": " + workloadRef +
                                   " has no admission (status.admission) in the adapter's cache, and its pods may "
                                   "run only where Kueue admits them: the cache may lag the admission" +
                                   std::string(kRetried) + "; a Workload Kueue evicted has none, and its " +
                                   parent->gvk.kind + " is being stopped");
  }
  const auto infos = api::podSetInfos(*workload, [&](const std::string& name) { return workloads->flavor(name); });
  if (const auto* missing = std::get_if<api::FlavorNotFound>(&infos)) {
    return AdmissionResponse::deny(child + ": ResourceFlavor \"" + missing->name + "\" of pod set " + missing->podSet +
                                   " in the admission of " + workloadRef +
                                   " is not in the adapter's cache: create it, or remove it from the ClusterQueue" +
                                   std::string(kRetried));
  }
  if (const auto* conflict = std::get_if<std::string>(&infos)) {
    return AdmissionResponse::deny(child + ": the admission of " + workloadRef + " cannot be given to its pods: " +
                                   *conflict + "; correct the admission checks' podSetUpdates");
  }
  const auto& admitted = std::get<std::vector<api::PodSetInfo>>(infos);
  const auto info = std::find_if(admitted.begin(), admitted.end(), [&](const auto& i) { return i.name == *podSet; });
  if (info == admitted.end()) {
    std::vector<std::string> names;
    for (const auto& i : admitted) names.push_back(i.name);
    return AdmissionResponse::deny(child + ": pod set \"" + std::string(*podSet) + "\" (label " +
                                   std::string(api::kPodSetLabel) + ") is not in the admission of " + workloadRef +
                                   ", which admits " + (names.empty() ? "none" : strings::join(names, ", ")) +
                                   ": correct the label on its " + parent->gvk.kind);
  }

  auto after = givenInfo(request.object, *parent, *info, child, workloadRef);
  if (const auto* conflict = std::get_if<std::string>(&after)) return AdmissionResponse::deny(*conflict);
  const json& given = std::get<json>(after);
  if (given == request.object) {
    childSkipped(request, "it holds its admission's node selector and tolerations already");
    return AdmissionResponse::allow();
  }
  AdmissionResponse response;
  response.patch = json::diff(request.object, given);
  return response;
}

}  // namespace mka::webhook
