#include "mka/placement/placement_check_reconciler.h"

#include <algorithm>
#include <set>

#include "mka/api/kinds.h"
#include "mka/api/kueue.h"
#include "mka/api/views.h"
#include "mka/api/workload_status.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/controller/status_update.h"
#include "mka/kube/api_error.h"
#include "mka/placement/api.h"

namespace mka::placement {

using api::Condition;
using controller::Result;

using api::Condition;
using controller::Result;
using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> checkLogger() {
  static const auto log = namedLogger("placement-admissioncheck");
  return log;
}

std::string nameOf(const json& object) { return json_fields::metadataString(object, "name"); }

bool hasFinalizer(const json& object) {
  for (const auto& f : api::ObjectView(object).finalizers())
    if (f.is_string() && f.get<std::string>() == kFinalizer) return true;
  return false;
}

Condition active(bool ok, std::string_view reason, std::string message) {
  return {std::string(api::condition::kActive), ok ? "True" : "False", std::string(reason), std::move(message)};
}

std::string errorText(const std::exception& e) {
  if (const auto* api = dynamic_cast<const kube::ApiError*>(&e)) return controller::apiErrorMessage(*api);
  return e.what();
}

json generatedConfig(const std::string& placement, const std::vector<std::string>& clusters) {
  return {{"apiVersion", api::kMultiKueueConfigGvk.apiVersion()},
          {"kind", api::kMultiKueueConfigGvk.kind},
          {"metadata",
           {{"name", generatedConfigName(placement)}, {"labels", {{std::string(kGeneratedForLabel), placement}}}}},
          {"spec", {{"clusters", clusters}}}};
}

// Creates `desired` or brings the stored object's labels and spec to it; an object of that name
// this controller did not generate is refused (never taken over).
void createOrUpdate(kube::Client& client, const controller::ObjectReader& objects, const json& desired,
                    const std::string& placement) {
  const auto& gvk =
      desired.at("kind") == api::kMultiKueueConfigGvk.kind ? api::kMultiKueueConfigGvk : api::kMultiKueueClusterGvk;
  const auto name = nameOf(desired);
  const auto stored = objects.get(gvk, "", name);
  if (!stored) {
    client.create(desired);
    return;
  }
  if (labelValue(*stored, kGeneratedForLabel) != placement)
    throw Error(gvk.kind + " " + name + " exists and was not generated for Placement " + placement + " (label " +
                std::string(kGeneratedForLabel) + " is not \"" + placement +
                "\"): rename or delete it, or rename the Placement");
  if (stored->value("spec", json::object()) == desired.at("spec")) return;
  json updated = *stored;
  updated["spec"] = desired.at("spec");
  client.update(updated);
}

void removeIfExists(kube::Client& client, const api::GroupVersionKind& gvk, const std::string& name) {
  try {
    client.remove(gvk, "", name);
  } catch (const std::exception& e) {
    if (!kube::isNotFound(e)) throw;
  }
}

}  // namespace

std::string generatedConfigName(const std::string& placement) { return placement; }

std::string generatedClusterName(const std::string& placement, const std::string& cluster) {
  return placement + "-" + cluster;
}

bool wouldGenerate(const std::string& placement, const api::GroupVersionKind& kind, std::string_view name) {
  if (placement.empty()) return false;
  if (kind == api::kMultiKueueConfigGvk) return name == generatedConfigName(placement);
  if (kind != api::kMultiKueueClusterGvk) return false;
  const auto prefix = generatedClusterName(placement, "");
  return name.size() > prefix.size() && name.starts_with(prefix);
}

std::string labelValue(const json& object, std::string_view key) {
  return std::string(api::ObjectView(object).label(key));
}

bool isPlacementCheck(const json& admissionCheck) {
  return api::AdmissionCheckView(admissionCheck).controllerName() == kControllerName;
}

PlacementReference placementOf(const json& admissionCheck) {
  const api::AdmissionCheckView check(admissionCheck);
  const std::string name(check.parametersName());
  const std::string group(check.parametersApiGroup());
  const std::string kind(check.parametersKind());
  if (name.empty() || group != api::kOcmClusterGroup || kind != api::kPlacementKind)
    return {"", "AdmissionCheck " + std::string(check.name()) +
                    ": spec.parameters must name a Placement (apiGroup: " + std::string(api::kOcmClusterGroup) +
                    ", kind: " + std::string(api::kPlacementKind) + ", name: <placement>), found apiGroup \"" + group +
                    "\", kind \"" + kind + "\", name \"" + name + "\""};
  return {name, ""};
}

std::vector<std::string> decidedClusters(const std::vector<json>& decisions) {
  std::set<std::string> names;
  for (const auto& d : decisions)
    for (auto& name : api::PlacementDecisionView(d).clusterNames()) names.insert(std::move(name));
  return {names.begin(), names.end()};
}

json generatedCluster(const std::string& placement, const std::string& cluster, bool clusterProfiles) {
  const json source = clusterProfiles ? json{{"clusterProfileRef", {{"name", cluster}}}}
                                      : json{{"kubeConfig",
                                              {{"locationType", std::string(api::kLocationTypeSecret)},
                                               {"location", std::string(kSecretPrefix) + cluster}}}};
  return {{"apiVersion", api::kMultiKueueClusterGvk.apiVersion()},
          {"kind", api::kMultiKueueClusterGvk.kind},
          {"metadata",
           {{"name", generatedClusterName(placement, cluster)},
            {"labels", {{std::string(kGeneratedForLabel), placement}}}}},
          {"spec", {{"clusterSource", source}}}};
}

PlacementCheckReconciler::PlacementCheckReconciler(kube::Client& manager, const controller::ObjectReader& objects,
                                                   const Clock& clock, Options options)
    : manager_(manager), objects_(objects), clock_(clock), options_(std::move(options)) {}

struct PlacementCheckReconciler::Outcome {
  Condition condition;
  bool retry = false;  // an error the informers' events may not bring back: try again with backoff
  std::optional<std::chrono::nanoseconds> recheck;  // a kept MultiKueueCluster's grace ends then
};

PlacementCheckReconciler::Need PlacementCheckReconciler::stillNeeded(const std::string& name) const {
  Need need;
  const auto now = clock_.now();
  for (const auto& wl : objects_.list(api::kWorkloadGvk, "")) {
    const auto nominated = api::nominatedClusters(wl);
    if (api::clusterName(wl) != name && std::find(nominated.begin(), nominated.end(), name) == nominated.end())
      continue;
    if (!api::isFinished(wl)) return {true, std::nullopt};
    const auto* finished = api::findCondition(wl, api::condition::kFinished);
    const auto since = parseRfc3339(finished->value("lastTransitionTime", ""));
    if (!since || now - *since >= kFinishedGrace) continue;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(kFinishedGrace - (now - *since));
    need.needed = true;
    need.recheck = need.recheck ? std::min(*need.recheck, left) : left;
  }
  return need;
}

std::vector<std::string> PlacementCheckReconciler::placementsKeepingFor(const json& workload) const {
  std::vector<std::string> names = api::nominatedClusters(workload);
  if (auto admitted = api::clusterName(workload); !admitted.empty()) names.push_back(std::move(admitted));
  std::vector<std::string> out;
  if (names.empty()) return out;
  std::lock_guard lock(keptMutex_);
  for (const auto& [placement, clusters] : kept_)
    if (std::any_of(names.begin(), names.end(), [&](const auto& n) { return clusters.contains(n); }))
      out.push_back(placement);
  return out;
}

std::vector<json> PlacementCheckReconciler::generatedClusters(const std::string& placement) const {
  std::vector<json> out;
  for (auto& c : objects_.list(api::kMultiKueueClusterGvk, ""))
    if (labelValue(c, kGeneratedForLabel) == placement) out.push_back(std::move(c));
  return out;
}

Result PlacementCheckReconciler::reconcile(const std::string& admissionCheckName) {
  const auto found = objects_.get(api::kAdmissionCheckGvk, "", admissionCheckName);
  if (!found || !isPlacementCheck(*found)) return Result::done();
  const json& check = *found;

  if (api::isTerminating(check)) {
    cleanup(check);
    return Result::done();
  }
  if (!hasFinalizer(check)) {
    // OCM adds its finalizer first and converges on the update that follows.
    json updated = check;
    updated["metadata"]["finalizers"].push_back(std::string(kFinalizer));
    manager_.update(updated);
    log::info(*checkLogger(), "finalizer added", {{"admissionCheck", admissionCheckName}});
    return Result::done();
  }

  const auto ref = placementOf(check);
  Outcome outcome =
      ref.error.empty() ? converge(ref.name) : Outcome{active(false, reason::kPlacementError, ref.error), false};
  if (controller::writeCondition(manager_, check, outcome.condition, clock_))
    log::info(*checkLogger(), "admission check status written",
              {{"admissionCheck", admissionCheckName},
               {"active", outcome.condition.status},
               {"reason", outcome.condition.reason},
               {"message", outcome.condition.message}});
  if (outcome.retry) throw Error("AdmissionCheck " + admissionCheckName + ": " + outcome.condition.message);
  return outcome.recheck ? Result::after(*outcome.recheck) : Result::done();
}

PlacementCheckReconciler::Outcome PlacementCheckReconciler::converge(const std::string& placement) {
  std::optional<json> found;
  try {
    found = objects_.get(api::kPlacementGvk, options_.namespace_, placement);
  } catch (const std::exception& e) {
    return {active(false, reason::kPlacementError, "Failed to get placement " + placement + ": " + errorText(e)), true};
  }
  // The Placement's own events bring the check back when it is created.
  if (!found) return {active(false, reason::kPlacementNotFound, "Placement " + placement + " not found"), false};

  std::vector<std::string> clusters;
  try {
    std::vector<json> decisions;
    for (auto& d : objects_.list(api::kPlacementDecisionGvk, options_.namespace_))
      if (labelValue(d, kPlacementLabel) == placement) decisions.push_back(std::move(d));
    clusters = decidedClusters(decisions);
  } catch (const std::exception& e) {
    return {
        active(false, reason::kPlacementDecisionError, "Failed to refresh placement decision tracker: " + errorText(e)),
        true};
  }

  std::vector<std::string> wanted;
  for (const auto& cluster : clusters) {
    const auto desired = generatedCluster(placement, cluster, options_.clusterProfiles);
    try {
      createOrUpdate(manager_, objects_, desired, placement);
    } catch (const std::exception& e) {
      return {active(false, reason::kMultiKueueClusterError,
                     "Failed to create/update multi kueue cluster " + nameOf(desired) + ": " + errorText(e)),
              true};
    }
    wanted.push_back(nameOf(desired));
  }

  std::set<std::string> kept;
  std::optional<std::chrono::nanoseconds> recheck;
  try {
    for (const auto& stale : generatedClusters(placement)) {
      const auto name = nameOf(stale);
      if (std::find(wanted.begin(), wanted.end(), name) != wanted.end()) continue;
      // Out of the MultiKueueConfig already (no new work goes there), but connected until the
      // Workloads admitted or waiting there are done.
      if (const auto need = stillNeeded(name); need.needed) {
        kept.insert(name);
        if (need.recheck) recheck = recheck ? std::min(*recheck, *need.recheck) : *need.recheck;
        continue;
      }
      removeIfExists(manager_, api::kMultiKueueClusterGvk, name);
      log::info(*checkLogger(), "MultiKueueCluster no longer decided: deleted",
                {{"placement", placement}, {"cluster", name}});
    }
  } catch (const std::exception& e) {
    return {active(false, reason::kCleanupError, "Failed to cleanup MultiKueueClusters: " + errorText(e)), true};
  }
  std::string keptNote;
  for (const auto& name : kept) keptNote += (keptNote.empty() ? "" : ", ") + name;
  if (!keptNote.empty())
    keptNote = "; no longer decided, kept until the Workloads admitted or waiting there are done: " + keptNote;
  {
    std::lock_guard lock(keptMutex_);
    if (kept.empty()) {
      kept_.erase(placement);
    } else {
      kept_[placement] = kept;
    }
  }

  if (wanted.empty()) {
    try {
      const auto config = objects_.get(api::kMultiKueueConfigGvk, "", placement);
      if (config && labelValue(*config, kGeneratedForLabel) == placement)
        removeIfExists(manager_, api::kMultiKueueConfigGvk, placement);
    } catch (const std::exception& e) {
      return {active(false, reason::kMultiKueueConfigDeleteError,
                     "Failed to delete multi kueue config " + placement + ": " + errorText(e)),
              true};
    }
    return {active(false, reason::kNoClustersAvailable, "No clusters available for placement " + placement + keptNote),
            false, recheck};
  }
  try {
    createOrUpdate(manager_, objects_, generatedConfig(placement, wanted), placement);
  } catch (const std::exception& e) {
    return {active(false, reason::kMultiKueueConfigError,
                   "Failed to create/update multi kueue config " + placement + ": " + errorText(e)),
            true};
  }
  return {active(true, reason::kActive,
                 "MultiKueueConfig " + placement + " and MultiKueueClusters are generated successfully" + keptNote),
          false, recheck};
}

void PlacementCheckReconciler::cleanup(const json& check) {
  if (!hasFinalizer(check)) return;  // not ours to clean, or already clean
  const auto placement = placementOf(check).name;
  if (!placement.empty()) {
    // Only what this controller generated for the Placement: a user's objects stay.
    for (const auto& c : generatedClusters(placement)) removeIfExists(manager_, api::kMultiKueueClusterGvk, nameOf(c));
    const auto config = objects_.get(api::kMultiKueueConfigGvk, "", placement);
    if (config && labelValue(*config, kGeneratedForLabel) == placement)
      removeIfExists(manager_, api::kMultiKueueConfigGvk, placement);
  }
  json updated = check;
  auto& finalizers = updated["metadata"]["finalizers"];
  finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), json(std::string(kFinalizer))), finalizers.end());
  manager_.update(updated);
  log::info(*checkLogger(), "generated objects deleted, finalizer removed",
            {{"admissionCheck", nameOf(check)}, {"placement", placement}});
}

}  // namespace mka::placement
