#pragma once
// Every call the adapter makes to the API server of its own cluster, as one table: which part of
// the adapter makes it, on what, with which RBAC verbs, and why. The ClusterRole and Roles of
// `multikueue-adapter manifests` are generated from it, and the RBAC coverage test
// (test/integration/dispatch/rbac_coverage_test.cpp) runs a manager and a worker against the
// sandbox and fails when the code makes a call the rules lack, or the rules grant a verb nothing
// calls: a new client call needs a row here, a removed one loses its row.
//
// Calls to the workers' API servers (the dispatch loop's copies) use the kubeconfigs of the
// MultiKueueClusters and their rights, not the adapter's ServiceAccount: they are in
// mka/deploy/worker_access.h, from which `add-worker` grants them.
//
// Threads: immutable data and pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mka/api/gvk.h"
#include "mka/config/configuration.h"

namespace mka::deploy {

// Where the adapter is deployed: the manager runs the dispatch loop, a worker does not.
enum class Role { Manager, Worker };
std::string_view toString(Role role);
std::optional<Role> parseRole(std::string_view text);

// The part of the adapter that makes a call; each runs only under some configurations
// (runs()).
enum class Component {
  QueueIndex,      // the /mutate webhook's informers (managedByDefaulting: MultiKueueQueues)
  LeaderElection,  // the Lease of the replica running the controllers
  DispatchLoop,    // MultiKueue (the manager with dispatch.enabled)
  Integration,     // the job integration (integrations.frameworks)
  ReloadEvents,    // the Warning Event of a refused hot reload, by a process with cluster access
  MetricsAuth,     // metricsSecure: the scrapers' tokens and access reviewed
  Placement,       // the built-in OCM placement admission check controller (placement.enabled, manager)
};
std::string_view toString(Component component);

// A row's resource: fixed, or one per configured kind.
enum class Kinds {
  None,        // `resources` says
  Dispatched,  // each kind of multiKueue.externalFrameworks
  // Each dispatched kind's status: `<plural>/status` when its CRD has the status subresource,
  // the object itself when not (Argo's Workflow), both for a kind whose CRD is not known here.
  DispatchedStatus,
  Integrated,  // each kind of integrations.frameworks
};

// Where a row's rights apply: every namespace (the ClusterRole), or one namespace (a Role).
enum class Scope {
  Cluster,
  ConfiguredNamespace,  // the configuration's `namespace` (the workers' kubeconfig Secrets)
  LeaseNamespace,       // leaderElection.resourceNamespace
  PodNamespace,         // the namespace the manifests deploy the adapter's Pods to (kNamespace)
};

// A row that applies to some configurations of its component only.
enum class Condition {
  Always,
  DropInMode,        // dispatch.admissionCheckControllerName is Kueue's own (kueue.x-k8s.io/multikueue)
  JobRetention,      // integrations.objectRetentionPolicies.workloads.afterDeactivatedByKueue is set
  ClusterProfiles,   // multiKueue.clusterProfile is set
  SyncDependencies,  // a kind of multiKueue.externalFrameworks has syncDependencies: true
};

struct ApiAccess {
  Component component;
  std::string_view group;                   // "" for the core group
  std::vector<std::string_view> resources;  // "workloads", "workloads/status"; empty for a Kinds row
  Kinds kinds = Kinds::None;
  std::vector<std::string_view> verbs;  // RBAC's: get, list, watch, create, update, patch, delete
  Scope scope = Scope::Cluster;
  Condition condition = Condition::Always;
  std::string_view reason;    // one line: what the code does with it
  std::string_view untested;  // why the coverage test cannot make this call; "" when it does
};

// The table, in the order the rules are written.
const std::vector<ApiAccess>& apiAccessTable();

// Whether `component` runs in `role` under `configuration` (the Deployment passes no
// --kubeconfig, so the queue index runs only for MultiKueueQueues).
bool runs(Component component, Role role, const config::Configuration& configuration);

// One verb on one resource for one role and configuration, and the row it comes from.
struct Grant {
  const ApiAccess* access = nullptr;
  std::string group;
  std::string resource;  // with its subresource: "workloads/status"
  std::string verb;
  std::string namespace_;  // "" for every namespace
};
// Every grant of the table's rows that apply, kinds expanded, in table order (a verb granted by
// two rows appears twice).
std::vector<Grant> grantsFor(Role role, const config::Configuration& configuration);

// Whether the CRD of `gvk` has the status subresource, for the kinds of the built-in profiles
// (Tekton's PipelineRun has; Argo's Workflow has not); nullopt for any other kind.
std::optional<bool> knownStatusSubresource(const api::GroupVersionKind& gvk);

// RBAC's verbs in the order rules list them.
const std::vector<std::string_view>& verbOrder();

}  // namespace mka::deploy
