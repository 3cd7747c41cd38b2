#pragma once
// The AdmissionCheck reconciler (KUEUE-MULTIKUEUE.md §4) for checks whose
// spec.controllerName is ours (Options::controllerName): writes the check's `Active` condition
// from its parameters (a MultiKueueConfig) and the state of the config's clusters, with Kueue's
// reasons and messages (§1.4): Active / BadConfig / SomeActiveClusters / NoUsableClusters.
// A cluster is missing when no MultiKueueCluster of that name exists on the manager, and
// inactive when the registry does not have it connected (mode 2 reads connection state from
// the registry because Kueue may own MultiKueueCluster status; in mode 3 both agree).
// The status is written (optimistic concurrency, status subresource) only when status, reason
// or message change; observedGeneration = the check's generation.
//
// Threads: reconcile() on the admission-check controller's workers (one key at a time).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/conditions.h"
#include "mka/common/clock.h"
#include "mka/controller/controller.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/multikueue/cluster_registry.h"

namespace mka::multikueue {

// The MultiKueueConfig an AdmissionCheck's spec.parameters names, or the error Kueue reports
// (`missing parameters reference`, `empty name: bad parameters reference`,
// `wrong group "<g>", expecting "kueue.x-k8s.io": bad parameters reference`,
// `wrong kind "<k>", expecting "MultiKueueConfig": bad parameters reference`).
struct ConfigReference {
  std::string name;   // set when valid
  std::string error;  // set when invalid
};
ConfigReference multiKueueConfigOf(const nlohmann::json& admissionCheck);

// Whether an AdmissionCheck is ours: its spec.controllerName is `controllerName` (our
// dispatch.admissionCheckControllerName). Every "is this check ours" question asks this.
bool isOurCheck(const nlohmann::json& admissionCheck, std::string_view controllerName);

// A MultiKueueConfig's spec.clusters in order (entries that are not strings skipped).
std::vector<std::string> clustersOf(const nlohmann::json& multiKueueConfig);

// The `Active` condition of an AdmissionCheck of ours (§1.4), decided from what `objects` hold
// (the check's MultiKueueConfig, the MultiKueueClusters) and which clusters are `connected`;
// type, status, reason and message only (the write sets the rest).
api::Condition activeConditionOf(const nlohmann::json& admissionCheck, const controller::ObjectReader& objects,
                                 const std::function<bool(const std::string& cluster)>& connected);

class AdmissionCheckReconciler {
 public:
  struct Options {
    std::string controllerName;  // our dispatch.admissionCheckControllerName
  };
  // All borrowed; must outlive the reconciler. `objects` reads AdmissionChecks,
  // MultiKueueConfigs and MultiKueueClusters; `manager` writes AdmissionCheck status.
  AdmissionCheckReconciler(kube::Client& manager, const controller::ObjectReader& objects,
                           const ClusterRegistry& clusters, const Clock& clock, Options options);

  controller::Result reconcile(const std::string& admissionCheckName);

 private:
  kube::Client& manager_;
  const controller::ObjectReader& objects_;
  const ClusterRegistry& clusters_;
  const Clock& clock_;
  Options options_;
};

}  // namespace mka::multikueue
