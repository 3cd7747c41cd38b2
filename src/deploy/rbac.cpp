#include "mka/deploy/rbac.h"

#include <algorithm>
#include <cctype>

#include "mka/api/kueue.h"
#include "mka/deploy/manifests.h"

namespace mka::deploy {

namespace {

constexpr std::string_view kKueue = "kueue.x-k8s.io";
// Checked against src/ by the RBAC coverage test; each reason names the call sites.
const std::vector<ApiAccess> kTable = {
    // webhook/queue_index_informers.cpp: the /mutate webhook answers from memory.
    {.component = Component::QueueIndex,
     .group = kKueue,
     .resources = {"localqueues", "clusterqueues", "admissionchecks"},
     .verbs = {"list", "watch"},
     .reason = "the /mutate webhook's queue index: which LocalQueues lead to a ClusterQueue with a MultiKueue check "
               "(informers)"},
    // kube/leader_election.cpp.
    {.component = Component::LeaderElection,
     .group = "coordination.k8s.io",
     .resources = {"leases"},
     .verbs = {"get", "create", "update"},
     .scope = Scope::LeaseNamespace,
     .reason = "the Lease naming the replica that runs the controllers: read, created the first time, renewed, "
               "released on shutdown"},
    // multikueue/dispatcher.cpp informers; workload_reconciler.cpp and conditions.cpp writes.
    {.component = Component::DispatchLoop,
     .group = kKueue,
     .resources = {"workloads", "admissionchecks", "multikueueconfigs", "multikueueclusters"},
     .verbs = {"list", "watch"},
     .reason = "the dispatch loop's caches of Workloads, AdmissionChecks, MultiKueueConfigs and MultiKueueClusters "
               "(informers)"},
    {.component = Component::DispatchLoop,
     .group = kKueue,
     .resources = {"workloads", "admissionchecks"},
     .verbs = {"get"},
     .reason = "a status write answered 409 Conflict re-reads the object (conditions.cpp); the orphan collector "
               "reads a Workload its cache lacks (garbage_collector.cpp)"},
    {.component = Component::DispatchLoop,
     .group = kKueue,
     .resources = {"workloads/status", "admissionchecks/status"},
     .verbs = {"update"},
     .reason = "the Workload's check state, nominated clusters, clusterName, Finished and evictions; the Active "
               "condition of our AdmissionChecks"},
    {.component = Component::DispatchLoop,
     .group = kKueue,
     .resources = {"multikueueclusters", "multikueueclusters/status"},
     .verbs = {"get", "update"},
     .condition = Condition::DropInMode,
     .reason = "drop-in mode only: the MultiKueueClusters' Active condition (cluster_registry.cpp), re-read after a "
               "409 Conflict",
     .untested = "the test runs the dispatcher mode of manifests/base/config.yaml (our own check controller name), "
                 "in which Events take the condition's place"},
    {.component = Component::DispatchLoop,
     .group = "",
     .resources = {"secrets"},
     .verbs = {"list", "watch"},
     .scope = Scope::ConfiguredNamespace,
     .reason = "the workers' kubeconfigs, Secrets named by MultiKueueClusters (an informer on that namespace only)"},
    {.component = Component::DispatchLoop,
     .group = "",
     .resources = {"secrets", "configmaps", "serviceaccounts"},
     .verbs = {"get"},
     .condition = Condition::SyncDependencies,
     .reason = "syncDependencies only: the objects a job names, read to copy them to its worker (dependencies.cpp "
               "syncDependencies, missingDependency)"},
    {.component = Component::DispatchLoop,
     .group = "multicluster.x-k8s.io",
     .resources = {"clusterprofiles"},
     .verbs = {"list", "watch"},
     .scope = Scope::ConfiguredNamespace,
     .condition = Condition::ClusterProfiles,
     .reason = "the workers' ClusterProfiles, named by MultiKueueClusters' clusterProfileRef (an informer on that "
               "namespace only)"},
    {.component = Component::DispatchLoop,
     .kinds = Kinds::Dispatched,
     .verbs = {"get", "list", "watch"},
     .reason = "the manager's jobs (an informer), and a Workload's owner the cache lacks (workload_reconciler.cpp)"},
    {.component = Component::DispatchLoop,
     .kinds = Kinds::DispatchedStatus,
     .verbs = {"patch"},
     .reason = "the job's status copied from the worker that runs it (generic_adapter.cpp)"},
    {.component = Component::DispatchLoop,
     .group = "",
     .resources = {"events"},
     .verbs = {"create", "patch"},
     .reason = "Events on Workloads and MultiKueueClusters; a repeated one patches its count (events.cpp)"},
    // placement/placement_controller.cpp informers; placement_check_reconciler.cpp and
    // workload_check_reconciler.cpp writes (conditions.cpp re-reads after a 409).
    {.component = Component::Placement,
     .group = "cluster.open-cluster-management.io",
     .resources = {"placements", "placementdecisions"},
     .verbs = {"list", "watch"},
     .scope = Scope::ConfiguredNamespace,
     .reason = "the placement controller's caches of OCM Placements and PlacementDecisions (informers)"},
    {.component = Component::Placement,
     .group = kKueue,
     .resources = {"workloads", "admissionchecks", "multikueueconfigs", "multikueueclusters"},
     .verbs = {"list", "watch"},
     .reason = "the placement controller's caches of Workloads, AdmissionChecks and the MultiKueue objects it "
               "generates (informers)"},
    {.component = Component::Placement,
     .group = kKueue,
     .resources = {"workloads", "admissionchecks"},
     .verbs = {"get"},
     .reason = "a status write answered 409 Conflict re-reads the object (conditions.cpp)"},
    {.component = Component::Placement,
     .group = kKueue,
     .resources = {"admissionchecks"},
     .verbs = {"update"},
     .reason = "the placement checks' cleanup finalizer, added and removed"},
    {.component = Component::Placement,
     .group = kKueue,
     .resources = {"workloads/status", "admissionchecks/status"},
     .verbs = {"update"},
     .reason = "the placement check's Active condition, and its state Ready on Workloads"},
    {.component = Component::Placement,
     .group = kKueue,
     .resources = {"multikueueconfigs", "multikueueclusters"},
     .verbs = {"create", "update", "delete"},
     .reason = "the MultiKueueConfig and MultiKueueClusters generated from a Placement's decisions"},
    // integration/controller.cpp informers; job_reconciler.cpp writes.
    {.component = Component::Integration,
     .group = kKueue,
     .resources = {"workloads"},
     .verbs = {"list", "watch", "create", "update", "patch", "delete"},
     .reason = "the integrated jobs' Workloads: cached, created, their spec kept in step (queue, priority, pod sets), "
               "a prebuilt one adopted, the resource-in-use finalizer removed, a stale one deleted"},
    {.component = Component::Integration,
     .group = kKueue,
     .resources = {"workloads/status"},
     .verbs = {"update"},
     .reason = "Finished when the job ends, the quota reservation cleared after an eviction"},
    {.component = Component::Integration,
     .kinds = Kinds::Integrated,
     .verbs = {"list", "watch", "update"},
     .reason = "the integrated jobs: cached, suspended, resumed with their flavors' node labels, stopped"},
    {.component = Component::Integration,
     .kinds = Kinds::Integrated,
     .verbs = {"delete"},
     .condition = Condition::JobRetention,
     .reason = "integrations.objectRetentionPolicies: a job whose Workload Kueue deactivated is deleted after the "
               "retention period",
     .untested = "the test's configurations (manifests/base, manifests/overlays/worker) set no retention policy"},
    {.component = Component::Integration,
     .group = kKueue,
     .resources = {"resourceflavors", "workloadpriorityclasses"},
     .verbs = {"get"},
     .reason = "the assigned flavors' node labels and tolerations for a job it starts; the WorkloadPriorityClass "
               "named by a job's priority-class label"},
    {.component = Component::Integration,
     .group = "scheduling.k8s.io",
     .resources = {"priorityclasses"},
     .verbs = {"list", "watch"},
     .reason = "the PriorityClasses a new Workload's priority comes from (an informer)"},
    {.component = Component::Integration,
     .group = "",
     .resources = {"namespaces"},
     .verbs = {"list", "watch"},
     .reason = "the namespaces' labels for integrations.managedJobsNamespaceSelector (an informer)"},
    {.component = Component::Integration,
     .group = "",
     .resources = {"events"},
     .verbs = {"create", "patch"},
     .reason = "Events on the jobs; a repeated one patches its count"},
    // app/service.cpp.
    {.component = Component::ReloadEvents,
     .group = "",
     .resources = {"events"},
     .verbs = {"create", "patch"},
     .scope = Scope::PodNamespace,
     .reason = "a Warning ConfigReloadFailed Event on the replica's own Pod when a hot reload is refused; a repeated "
               "one patches its count"},
    // app/metrics_access.cpp.
    {.component = Component::MetricsAuth,
     .group = "authentication.k8s.io",
     .resources = {"tokenreviews"},
     .verbs = {"create"},
     .reason = "metricsSecure: a scraper's bearer token reviewed",
     .untested = "the test deploys manifests/base, which serves metrics over plain HTTP; "
                 "ServiceTest.SecureMetricsAnswerOnlyTokensAllowedToGetThem makes these calls"},
    {.component = Component::MetricsAuth,
     .group = "authorization.k8s.io",
     .resources = {"subjectaccessreviews"},
     .verbs = {"create"},
     .reason = "metricsSecure: whether the scraper may get /metrics",
     .untested = "the test deploys manifests/base, which serves metrics over plain HTTP; "
                 "ServiceTest.SecureMetricsAnswerOnlyTokensAllowedToGetThem makes these calls"},
};

bool applies(Condition condition, const config::Configuration& cfg) {
  switch (condition) {
    case Condition::Always: return true;
    case Condition::DropInMode: return cfg.dispatch.admissionCheckControllerName == api::kMultiKueueControllerName;
    case Condition::ClusterProfiles: return cfg.multiKueue.clusterProfile.has_value();
    case Condition::SyncDependencies:
      return std::any_of(cfg.multiKueue.externalFrameworks.begin(), cfg.multiKueue.externalFrameworks.end(),
                         [](const auto& f) { return f.syncDependencies; });
    case Condition::JobRetention:
      return std::any_of(cfg.integrations.frameworks.begin(), cfg.integrations.frameworks.end(),
                         [](const auto& f) { return f.deleteAfterDeactivatedByKueue.has_value(); });
  }
  return false;
}

std::string namespaceOf(Scope scope, const config::Configuration& cfg) {
  switch (scope) {
    case Scope::Cluster: return "";
    case Scope::ConfiguredNamespace: return cfg.namespace_;
    case Scope::LeaseNamespace: return cfg.leaderElection.resourceNamespace;
    case Scope::PodNamespace: return std::string(kNamespace);
  }
  return "";
}

// Each kind once, in configuration order.
std::vector<api::GroupVersionKind> distinct(std::vector<api::GroupVersionKind> gvks) {
  std::vector<api::GroupVersionKind> out;
  for (auto& gvk : gvks)
    if (std::none_of(out.begin(), out.end(),
                     [&](const auto& seen) { return seen.group == gvk.group && seen.kind == gvk.kind; }))
      out.push_back(std::move(gvk));
  return out;
}

// The resources a row names under `cfg`, with their group.
std::vector<std::pair<std::string, std::string>> resourcesOf(const ApiAccess& row, const config::Configuration& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  if (row.kinds == Kinds::None) {
    for (const auto resource : row.resources) out.emplace_back(std::string(row.group), std::string(resource));
    return out;
  }
  std::vector<api::GroupVersionKind> gvks;
  if (row.kinds == Kinds::Integrated) {
    for (const auto& f : cfg.integrations.frameworks) gvks.push_back(f.gvk);
  } else {
    for (const auto& f : cfg.multiKueue.externalFrameworks) gvks.push_back(f.gvk);
  }
  for (const auto& gvk : distinct(std::move(gvks))) {
    const auto plural = cfg.resourceOf(gvk);
    if (row.kinds != Kinds::DispatchedStatus) {
      out.emplace_back(gvk.group, plural);
      continue;
    }
    const auto status = knownStatusSubresource(gvk);
    if (!status || *status) out.emplace_back(gvk.group, plural + "/status");
    if (!status || !*status) out.emplace_back(gvk.group, plural);
  }
  return out;
}

}  // namespace

std::string_view toString(Role role) { return role == Role::Manager ? "manager" : "worker"; }

std::optional<Role> parseRole(std::string_view text) {
  if (text == "manager") return Role::Manager;
  if (text == "worker") return Role::Worker;
  return std::nullopt;
}

std::string_view toString(Component component) {
  switch (component) {
    case Component::QueueIndex: return "queue index";
    case Component::LeaderElection: return "leader election";
    case Component::DispatchLoop: return "dispatch loop";
    case Component::Integration: return "job integration";
    case Component::ReloadEvents: return "reload events";
    case Component::MetricsAuth: return "secure metrics";
    case Component::Placement: return "placement";
  }
  return "";
}

const std::vector<ApiAccess>& apiAccessTable() { return kTable; }

bool runs(Component component, Role role, const config::Configuration& cfg) {
  const bool dispatch = role == Role::Manager && cfg.dispatch.enabled;
  const bool integration = !cfg.integrations.frameworks.empty();
  switch (component) {
    case Component::QueueIndex: return cfg.managedByDefaulting == config::ManagedByDefaulting::MultiKueueQueues;
    // app::DispatchRunner elects a leader only when it has controllers to run.
    case Component::LeaderElection:
      return cfg.leaderElection.leaderElect && (dispatch || integration || runs(Component::Placement, role, cfg));
    case Component::DispatchLoop: return dispatch;
    case Component::Integration: return integration;
    // Only a process with a client can record an Event; without --kubeconfig the Deployment's
    // process has one when something else needs the cluster.
    case Component::ReloadEvents:
      return dispatch || integration || cfg.metricsSecure || runs(Component::QueueIndex, role, cfg);
    case Component::MetricsAuth: return cfg.metricsSecure;
    case Component::Placement: return role == Role::Manager && cfg.placement.enabled;
  }
  return false;
}

std::vector<Grant> grantsFor(Role role, const config::Configuration& cfg) {
  std::vector<Grant> out;
  for (const auto& row : kTable) {
    if (!runs(row.component, role, cfg) || !applies(row.condition, cfg)) continue;
    for (const auto& [group, resource] : resourcesOf(row, cfg))
      for (const auto verb : row.verbs)
        out.push_back({&row, group, resource, std::string(verb), namespaceOf(row.scope, cfg)});
  }
  return out;
}

std::optional<bool> knownStatusSubresource(const api::GroupVersionKind& gvk) {
  const auto profile = config::integrationProfile(gvk);
  if (!profile) return std::nullopt;
  switch (profile->podSetsFrom) {
    case config::PodSetsFrom::TektonAnnotations: return true;  // Tekton's CRDs declare it
    case config::PodSetsFrom::ArgoTemplates: return false;     // Argo keeps status in the object
    case config::PodSetsFrom::Rules: return std::nullopt;
  }
  return std::nullopt;
}

const std::vector<std::string_view>& verbOrder() {
  static const std::vector<std::string_view> order = {"get",    "list",  "watch",  "create",
                                                      "update", "patch", "delete", "deletecollection"};
  return order;
}

}  // namespace mka::deploy
