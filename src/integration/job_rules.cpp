#include "mka/integration/job_rules.h"

#include <algorithm>

#include "mka/api/kueue.h"
#include "mka/api/workload_status.h"
#include "mka/common/json_fields.h"

namespace mka::integration {
namespace {

using api::appendTolerations;
using api::mergeMap;
using api::PodSetInfo;
using json_fields::arrayMember;
using json_fields::fieldAt;
using json_fields::fieldOrEmpty;
using json_fields::objectMember;
using json_fields::stringMember;
using nlohmann::json;

bool holds(const json& job, const config::FieldValue& rule) {
  const json* value = fieldAt(job, rule.path);
  return value != nullptr && *value == rule.value;
}

std::string valueText(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

constexpr std::string_view kPodSetUpdateError = "invalid admission check PodSetUpdate: ";

// Whether a start may not write `path` (a field below the spec of a kind whose spec is fixed).
bool fixedPath(const config::PodFieldPaths& paths, const std::string& path) {
  return paths.specImmutable && path.starts_with("spec.");
}

// Why a job whose spec takes no change cannot be given `what` at `path`, and the fixes.
std::string unwritable(const config::IntegratedFramework& framework, const std::string& path, const std::string& what) {
  const std::string& kind = framework.gvk.kind;
  return path + ": the admission adds " + what + ", but a " + kind +
         "'s spec takes no change after creation (but its suspend and stop fields); create the " + kind +
         " with it there, or queue it where no flavor has node labels or tolerations";
}

// Whether the kind's children take the admission's values of `field` (the node selector or the
// tolerations) from the /mutate-children webhook, so that a job's fixed field need not hold them.
bool takenByChildren(const config::IntegratedFramework& framework, std::string config::ChildRule::*field) {
  return framework.children && !((*framework.children).*field).empty();
}

// The admission's map `from` added to the job's map at `path` (created when absent); a key the
// job holds with another value is Kueue's conflict. A fixed path is only checked: no key there
// may conflict, and each must be there already unless `childrenTake` (the children get them).
std::optional<std::string> addMap(json& job, const config::IntegratedFramework& framework,
                                  const config::PodFieldPaths& paths, const std::string& path, const json& from,
                                  std::string_view what, bool childrenTake = false) {
  if (from.empty() || path.empty()) return std::nullopt;  // an empty path: the kind has no such field
  if (!fixedPath(paths, path)) {
    if (auto e = mergeMap(fieldOrEmpty(job, path, json::object()), from, what))
      return std::string(kPodSetUpdateError) + *e;
    return std::nullopt;
  }
  const json* have = fieldAt(job, path);
  const json own = have != nullptr && have->is_object() ? *have : json::object();
  json merged = own;
  if (auto e = mergeMap(merged, from, what)) return std::string(kPodSetUpdateError) + *e;
  if (childrenTake) return std::nullopt;
  std::string missing;
  for (const auto& [key, value] : from.items())
    if (!own.contains(key)) missing += (missing.empty() ? "" : ", ") + key + "=" + valueText(value);
  if (missing.empty()) return std::nullopt;
  return unwritable(framework, path, std::string(what) + " " + missing);
}

// The admission's tolerations added to the job's list at `path`; a fixed path must hold each,
// unless `childrenTake` (the children get them; tolerations never conflict).
std::optional<std::string> addTolerations(json& job, const config::IntegratedFramework& framework,
                                          const config::PodFieldPaths& paths, const std::string& path, const json& from,
                                          bool childrenTake) {
  if (from.empty() || path.empty()) return std::nullopt;
  if (!fixedPath(paths, path)) {
    appendTolerations(fieldOrEmpty(job, path, json::array()), from);
    return std::nullopt;
  }
  if (childrenTake) return std::nullopt;
  const json* have = fieldAt(job, path);
  for (const auto& toleration : from)
    if (have == nullptr || !have->is_array() || std::find(have->begin(), have->end(), toleration) == have->end())
      return unwritable(framework, path, "the toleration " + toleration.dump());
  return std::nullopt;
}

// What the children take in the job's place (config::kChildPlacementAnnotation): the info's node
// selector and tolerations, those the job's fixed fields cannot take; empty when there are none.
json childPlacement(const config::IntegratedFramework& framework, const config::PodFieldPaths& paths,
                    const PodSetInfo& info) {
  json placement = json::object();
  if (fixedPath(paths, paths.nodeSelector) && takenByChildren(framework, &config::ChildRule::nodeSelector) &&
      !info.nodeSelector.empty())
    placement["nodeSelector"] = info.nodeSelector;
  if (fixedPath(paths, paths.tolerations) && takenByChildren(framework, &config::ChildRule::tolerations) &&
      !info.tolerations.empty())
    placement["tolerations"] = info.tolerations;
  return placement;
}

// One pod set's info given to the job at `paths` (Kueue's podset.Merge). What its children
// take goes beside the info's annotations, which the job's controller copies to them.
std::optional<std::string> addInfo(json& job, const config::IntegratedFramework& framework,
                                   const config::PodFieldPaths& paths, const PodSetInfo& info) {
  if (auto e = addMap(job, framework, paths, paths.labels, info.labels, "labels")) return e;
  json annotations = info.annotations;
  if (const json placement = childPlacement(framework, paths, info); !placement.empty())
    annotations[std::string(config::kChildPlacementAnnotation)] = placement.dump();
  if (auto e = addMap(job, framework, paths, paths.annotations, annotations, "annotations")) return e;
  if (auto e = addMap(job, framework, paths, paths.nodeSelector, info.nodeSelector, "nodeSelector",
                      takenByChildren(framework, &config::ChildRule::nodeSelector)))
    return e;
  return addTolerations(job, framework, paths, paths.tolerations, info.tolerations,
                        takenByChildren(framework, &config::ChildRule::tolerations));
}

// The job's field at `path` given back the pod template's `original` value, or removed.
void restoreField(json& job, const std::string& path, const json& podTemplate, std::string_view original) {
  if (const json* value = fieldAt(podTemplate, original); value != nullptr)
    json_fields::setFieldAt(job, path, *value);
  else
    json_fields::eraseFieldAt(job, path);
}

}  // namespace

bool isSuspended(const json& job, const config::IntegratedFramework& framework) {
  return framework.suspend && holds(job, *framework.suspend);
}

std::optional<Finished> finished(const json& job, const config::IntegratedFramework& framework) {
  if (!framework.finished) return std::nullopt;
  const auto& rule = *framework.finished;
  if (rule.type == config::FinishedRule::Type::Condition) {
    for (const auto& c : arrayMember(objectMember(job, "status"), "conditions")) {
      if (stringMember(c, "type") != rule.conditionType) continue;
      const std::string status = stringMember(c, "status");
      if (status != "True" && status != "False") return std::nullopt;
      return Finished{status == "True", stringMember(c, "message")};
    }
    return std::nullopt;
  }
  const json* phase = fieldAt(job, rule.phasePath);
  if (phase == nullptr || !phase->is_string()) return std::nullopt;
  const auto in = [&](const std::vector<std::string>& values) {
    return std::find(values.begin(), values.end(), phase->get<std::string>()) != values.end();
  };
  const bool succeeded = in(rule.succeeded);
  if (!succeeded && !in(rule.failed)) return std::nullopt;
  const json* message = rule.messagePath.empty() ? nullptr : fieldAt(job, rule.messagePath);
  return Finished{succeeded, message != nullptr && message->is_string() ? message->get<std::string>() : ""};
}

namespace {

// Whether `job` is in a state `rule` lists (the active rule's and the podsReady rule's shapes).
bool holdsRule(const json& job, const config::ActiveRule& rule) {
  const auto listed = [&](const json* value) {
    return value != nullptr && value->is_string() &&
           std::find(rule.running.begin(), rule.running.end(), value->get<std::string>()) != rule.running.end();
  };
  const auto in = [](const std::vector<std::string>& values, const std::string& value) {
    return std::find(values.begin(), values.end(), value) != values.end();
  };
  switch (rule.type) {
    case config::ActiveRule::Type::Condition:
      for (const auto& c : arrayMember(objectMember(job, "status"), "conditions")) {
        if (stringMember(c, "type") != rule.conditionType) continue;
        const std::string reason = stringMember(c, "reason");
        return stringMember(c, "status") == rule.conditionStatus && !in(rule.exceptReasons, reason) &&
               (rule.reasons.empty() || in(rule.reasons, reason));
      }
      return false;
    case config::ActiveRule::Type::Phase: return listed(fieldAt(job, rule.path));
    case config::ActiveRule::Type::Pods: {
      const json::json_pointer pointer(rule.items);
      if (!job.contains(pointer)) return false;
      const json& items = job.at(pointer);
      if (!items.is_array() && !items.is_object()) return false;
      for (const auto& item : items) {  // a map's values are its items
        if (rule.filter && !holds(item, *rule.filter)) continue;
        if (listed(fieldAt(item, rule.path))) return true;
      }
      return false;
    }
  }
  return false;
}

}  // namespace

bool isActive(const json& job, const config::IntegratedFramework& framework) {
  if (!framework.active) return !isSuspended(job, framework) && !finished(job, framework);
  return holdsRule(job, *framework.active);
}

bool podsReady(const json& job, const config::IntegratedFramework& framework) {
  return finished(job, framework).has_value() || (framework.podsReady && holdsRule(job, *framework.podsReady));
}

PodsReadyCondition podsReadyCondition(const json& workload, bool ready) {
  namespace pr = api::pods_ready;
  const auto make = [](bool status, std::string_view reason, std::string_view message) {
    return PodsReadyCondition{status, std::string(reason), std::string(message)};
  };
  // Not admitted (yet, or any more after an eviction): waiting for a start.
  if (!api::isAdmitted(workload)) return make(false, pr::kWaitForStart, pr::kNotReadyMessage);
  const json* current = api::findCondition(workload, api::condition::kPodsReady);
  const std::string reason = current != nullptr ? stringMember(*current, "reason") : "";
  if (ready) {
    const bool recovering = reason == pr::kWaitForRecovery || reason == pr::kRecovered;
    return make(true, recovering ? pr::kRecovered : pr::kStarted, pr::kReadyMessage);
  }
  // Ready once, not any more: a pod failed and the job waits for its replacement.
  if (current != nullptr && (stringMember(*current, "status") == "True" || reason == pr::kWaitForRecovery))
    return make(false, pr::kWaitForRecovery, pr::kWaitingForRecoveryMessage);
  return make(false, pr::kWaitForStart, pr::kNotReadyMessage);
}

std::variant<json, std::string> started(const json& job, const config::IntegratedFramework& framework,
                                        const std::vector<PodSetInfo>& infos) {
  json out = job;
  if (framework.suspend) json_fields::eraseFieldAt(out, framework.suspend->path);
  if (infos.size() != framework.podSets.size()) {
    return "invalid podset infos: expecting " + std::to_string(framework.podSets.size()) + " podset, got " +
           std::to_string(infos.size());
  }
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const auto paths = framework.podSets[i].podFieldPaths();
    if (paths.empty()) continue;
    if (!framework.podSets[i].templatePath.empty()) {
      const json* podTemplate = fieldAt(out, framework.podSets[i].templatePath);
      if (podTemplate == nullptr || !podTemplate->is_object()) continue;
    }
    if (auto error = addInfo(out, framework, paths, infos[i])) return *error;
  }
  return out;
}

json stopped(const json& job, const config::IntegratedFramework& framework, const json& workloadPodSets) {
  json out = job;
  const auto& stop = framework.stopRule();
  json_fields::setFieldAt(out, stop.path, stop.value);
  if (!workloadPodSets.is_array()) return out;
  for (const auto& rule : framework.podSets) {
    const auto paths = rule.podFieldPaths();
    // A job whose spec is fixed gets nothing back. Its spec was never written, and writing it
    // would have the whole stop refused. The admission's labels and annotations sit in the job's
    // own metadata beside the user's (kueue.x-k8s.io/queue-name), which the Workload's template
    // cannot tell apart; and such a job does not run again (a Tekton run, once started, cannot
    // turn Pending), so they stay as its TaskRuns' and pods' keep them: a record of the
    // Workload that ran it.
    if (paths.empty() || paths.specImmutable) continue;
    if (!rule.templatePath.empty()) {
      const json* podTemplate = fieldAt(out, rule.templatePath);
      if (podTemplate == nullptr || !podTemplate->is_object()) continue;
    }
    const auto original = std::find_if(workloadPodSets.begin(), workloadPodSets.end(),
                                       [&](const json& p) { return stringMember(p, "name") == rule.name; });
    if (original == workloadPodSets.end()) continue;
    const json& from = objectMember(*original, "template");
    restoreField(out, paths.labels, from, "metadata.labels");
    restoreField(out, paths.annotations, from, "metadata.annotations");
    // The metadata object a start created for them goes too (Argo's podMetadata is optional).
    for (const auto& path : {paths.labels, paths.annotations}) {
      const std::string parent = path.substr(0, path.rfind('.'));
      if (const json* p = fieldAt(out, parent); p != nullptr && p->is_object() && p->empty())
        json_fields::eraseFieldAt(out, parent);
    }
    restoreField(out, paths.nodeSelector, from, "spec.nodeSelector");
    restoreField(out, paths.tolerations, from, "spec.tolerations");
  }
  return out;
}

}  // namespace mka::integration
