#include "mka/api/pod_set_info.h"

#include <algorithm>
#include <set>

#include "mka/api/kueue.h"
#include "mka/common/json_fields.h"
#include "mka/common/validation.h"

namespace mka::api {
namespace {

using json_fields::arrayMember;
using json_fields::objectMember;
using json_fields::stringMember;
using nlohmann::json;

std::string valueText(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

// An admission check's podSetUpdate added to its pod set's info (Kueue's podset.Merge).
std::optional<std::string> mergeInfo(PodSetInfo& info, const json& update) {
  if (auto e = mergeMap(info.labels, objectMember(update, "labels"), "labels")) return e;
  if (auto e = mergeMap(info.annotations, objectMember(update, "annotations"), "annotations")) return e;
  if (auto e = mergeMap(info.nodeSelector, objectMember(update, "nodeSelector"), "nodeSelector")) return e;
  appendTolerations(info.tolerations, arrayMember(update, "tolerations"));
  return std::nullopt;
}

}  // namespace

std::optional<std::string> mergeMap(json& into, const json& from, std::string_view what) {
  if (!into.is_object()) into = json::object();
  for (const auto& [key, value] : from.items()) {
    auto it = into.find(key);
    if (it != into.end() && *it != value) {
      return "conflict for " + std::string(what) + ": conflict for key=" + key + ", value1=" + valueText(*it) +
             ", value2=" + valueText(value);
    }
    into[key] = value;
  }
  return std::nullopt;
}

void appendTolerations(json& into, const json& from) {
  if (!into.is_array()) into = json::array();
  for (const auto& toleration : from)
    if (std::find(into.begin(), into.end(), toleration) == into.end()) into.push_back(toleration);
}

std::variant<std::vector<PodSetInfo>, std::string, FlavorNotFound> podSetInfos(const json& workload,
                                                                               const FlavorLookup& flavor) {
  const json& spec = objectMember(workload, "spec");
  const json& status = objectMember(workload, "status");
  const json& specPodSets = arrayMember(spec, "podSets");
  const std::string workloadName = json_fields::metadataString(workload, "name");
  const bool fromManager =
      !stringMember(objectMember(objectMember(workload, "metadata"), "labels"), kOriginLabel).empty();
  const std::string clusterQueue = stringMember(objectMember(status, "admission"), "clusterQueue");
  const std::string localQueue = stringMember(spec, "queueName");

  std::vector<PodSetInfo> infos;
  const json& assignments = arrayMember(objectMember(status, "admission"), "podSetAssignments");
  for (std::size_t i = 0; i < assignments.size(); ++i) {
    const json& assignment = assignments[i];
    PodSetInfo info;
    info.name = stringMember(assignment, "name");
    if (assignment.contains("count") && assignment["count"].is_number_integer()) {
      info.count = assignment["count"].get<std::int64_t>();
    } else if (i < specPodSets.size()) {
      info.count = specPodSets[i].value("count", std::int64_t{1});
    }
    std::set<std::string> seen;
    for (const auto& [resource, name] : objectMember(assignment, "flavors").items()) {
      if (!name.is_string() || !seen.insert(name.get<std::string>()).second) continue;
      const auto object = flavor(name.get<std::string>());
      if (!object) return FlavorNotFound{name.get<std::string>(), info.name};
      const json& flavorSpec = objectMember(*object, "spec");
      for (const auto& [key, value] : objectMember(flavorSpec, "nodeLabels").items()) info.nodeSelector[key] = value;
      appendTolerations(info.tolerations, arrayMember(flavorSpec, "tolerations"));
    }
    info.labels[std::string(kPodSetLabel)] = info.name;
    if (!localQueue.empty()) info.labels[std::string(kLocalQueueNameLabel)] = localQueue;
    if (!clusterQueue.empty() && validation::dns1123Label(clusterQueue).empty())
      info.labels[std::string(kClusterQueueNameLabel)] = clusterQueue;
    if (fromManager) info.labels[std::string(kWorkerWorkloadPodLabel)] = "true";
    info.annotations[std::string(kWorkloadAnnotation)] = workloadName;
    infos.push_back(std::move(info));
  }
  for (const auto& check : arrayMember(status, "admissionChecks")) {
    for (const auto& update : arrayMember(check, "podSetUpdates")) {
      for (auto& info : infos) {
        if (info.name != stringMember(update, "name")) continue;
        if (auto error = mergeInfo(info, update)) {
          return "in admission check \"" + stringMember(check, "name") +
                 "\": invalid admission check PodSetUpdate: " + *error;
        }
      }
    }
  }
  return infos;
}

}  // namespace mka::api
