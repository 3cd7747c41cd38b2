#pragma once
// The built-in placement admission check controller (docs/placement.md), OCM kueue-addon's
// AdmissionCheck controller in the version that also generated MultiKueueClusters: for each
// AdmissionCheck whose spec.controllerName is open-cluster-management.io/placement, the
// Placement its spec.parameters names (in the adapter's namespace) and that Placement's
// PlacementDecisions (label cluster.open-cluster-management.io/placement=<name>) give the
// decided clusters; it keeps
// - one MultiKueueCluster `<placement>-<cluster>` per decided cluster (a ClusterProfile
//   reference when ClusterProfiles are configured, else the kubeconfig Secret
//   multikueue-<cluster>); a generated one whose cluster is not decided now is deleted once
//   no Workload needs it (see stillNeeded());
// - the MultiKueueConfig `<placement>` listing them (deleted while nothing is decided);
// - the check's `Active` condition with OCM's reasons and messages;
// - OCM's cleanup finalizer, removed once the generated objects are gone.
// Generated objects carry the label multikueue-adapter.dev/placement=<placement>; an object of
// the same name without it is a user's and is never changed or deleted (the check says so).
// Level-triggered: every reconcile reads the world and writes only differences, so a second
// instance on the same state writes nothing.
//
// Threads: reconcile() on the placement controller's worker (one key at a time).

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/common/clock.h"
#include "mka/controller/controller.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"

namespace mka::placement {

// The Placement an AdmissionCheck's spec.parameters names, or why it names none.
struct PlacementReference {
  std::string name;   // set when valid
  std::string error;  // set when invalid: names the field and the fix
};
PlacementReference placementOf(const nlohmann::json& admissionCheck);

bool isPlacementCheck(const nlohmann::json& admissionCheck);

// metadata.labels[key], "" when absent.
std::string labelValue(const nlohmann::json& object, std::string_view key);

// The decided clusters of a set of PlacementDecisions: every status.decisions[].clusterName,
// sorted, without duplicates (OCM's decision tracker takes the union of every decision group).
std::vector<std::string> decidedClusters(const std::vector<nlohmann::json>& decisions);

// The names of what is generated for `placement`: its MultiKueueConfig is named after it, the
// MultiKueueCluster of each decided cluster `<placement>-<cluster>`.
std::string generatedConfigName(const std::string& placement);
std::string generatedClusterName(const std::string& placement, const std::string& cluster);
// Whether `placement` generates, or would for some decided cluster, an object of `kind`
// (MultiKueueConfig or MultiKueueCluster) named `name`: whoever wrote such an object, a change
// to it concerns that Placement's check (a user's object of that name is why the check
// refuses; its deletion is what lets the check go on).
bool wouldGenerate(const std::string& placement, const api::GroupVersionKind& kind, std::string_view name);

// The MultiKueueCluster generated for `cluster` of `placement` (name, label, cluster source).
nlohmann::json generatedCluster(const std::string& placement, const std::string& cluster, bool clusterProfiles);

class PlacementCheckReconciler {
 public:
  struct Options {
    std::string namespace_ = "kueue-system";  // where Placements and PlacementDecisions are read
    bool clusterProfiles = false;             // multiKueue.clusterProfile has providers
  };
  // Borrowed; must outlive the reconciler. `objects` reads AdmissionChecks, Placements,
  // PlacementDecisions, MultiKueueConfigs and MultiKueueClusters; `manager` writes.
  PlacementCheckReconciler(kube::Client& manager, const controller::ObjectReader& objects, const Clock& clock,
                           Options options);

  controller::Result reconcile(const std::string& admissionCheckName);

  // The Placements whose undecided MultiKueueClusters are kept for `workload` (admitted on one of
  // them, or with copies sent there): when it changes, their checks are looked at again.
  // Any thread.
  std::vector<std::string> placementsKeepingFor(const nlohmann::json& workload) const;

  // How long a finished Workload keeps its worker's MultiKueueCluster: the dispatch loop removes
  // the remote copies in the reconciles right after the finish, which need the connection.
  static constexpr std::chrono::minutes kFinishedGrace{1};

 private:
  struct Outcome;
  struct Need {
    bool needed = false;
    std::optional<std::chrono::nanoseconds> recheck;  // a finished Workload's grace ends then
  };
  Outcome converge(const std::string& placement);
  void cleanup(const nlohmann::json& check);
  std::vector<nlohmann::json> generatedClusters(const std::string& placement) const;
  // Whether a Workload still needs the worker of MultiKueueCluster `name`: admitted there or
  // with copies sent there, and not finished (or finished less than kFinishedGrace ago). Deleting
  // it earlier would disconnect a worker that runs a job, or that holds copies the dispatch loop
  // must remove: the job would be dispatched again while it still runs, or its copies left behind.
  Need stillNeeded(const std::string& name) const;

  kube::Client& manager_;
  const controller::ObjectReader& objects_;
  const Clock& clock_;
  Options options_;
  mutable std::mutex keptMutex_;
  std::map<std::string, std::set<std::string>> kept_;  // placement -> MultiKueueClusters kept for Workloads
};

}  // namespace mka::placement
