#include "mka/deploy/worker_access.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "mka/api/kueue.h"

namespace mka::deploy {
namespace worker_access {

using Json = nlohmann::ordered_json;

// Checked against what the dispatch loop sends through a worker kubeconfig by the add-worker
// test; each reason names the call sites (src/multikueue/).
const std::vector<ApiAccess> kRows = {
    {.component = Component::DispatchLoop,
     .group = api::kKueueGroup,
     .resources = {"workloads"},
     .verbs = {"list", "watch"},
     .reason = "the worker's copies of this manager's Workloads (its origin label): the cluster registry's "
               "informer, which decides whether the worker is connected (cluster_registry.cpp)"},
    {.component = Component::DispatchLoop,
     .group = api::kKueueGroup,
     .resources = {"clusterqueues", "localqueues"},
     .verbs = {"list", "watch"},
     .reason = "the worker's queues, all of them: its room for the quota-aware dispatcher and the "
               "worker_cluster_queue_* metrics (cluster_registry.cpp addCapacity, capacity.cpp); not part of the "
               "connection"},
    {.component = Component::DispatchLoop,
     .group = api::kKueueGroup,
     .resources = {"workloads"},
     .verbs = {"get", "create", "update", "delete"},
     .reason = "a copy created on each nominated worker (workload_reconciler.cpp nominateAndSync); re-read and "
               "updated to drop the resource-in-use finalizer, then deleted, once the Workload is done, elsewhere "
               "or lost (removeRemoteObjects); orphans deleted (garbage_collector.cpp); re-read after a status "
               "write met a conflict (conditions.cpp)"},
    {.component = Component::DispatchLoop,
     .group = api::kKueueGroup,
     .resources = {"workloads/status"},
     .verbs = {"update"},
     .reason = "the winning worker's copy asked to deactivate when the manager evicts the Workload "
               "(DeactivationTarget, workload_reconciler.cpp runOnWinner)"},
    {.component = Component::DispatchLoop,
     .kinds = Kinds::Dispatched,
     .verbs = {"list", "watch"},
     .reason = "the worker's copies of this manager's jobs (its origin label): an informer per dispatched kind "
               "(cluster_registry.cpp)"},
    {.component = Component::DispatchLoop,
     .kinds = Kinds::Dispatched,
     .verbs = {"get", "create", "delete"},
     .reason = "the job copy created on the winning worker, re-read when that create meets AlreadyExists or for "
               "the final status copy (generic_adapter.cpp syncJob, workload_reconciler.cpp), deleted with "
               "Background propagation when done and as an orphan (deleteRemoteObject, garbage_collector.cpp)"},
    {.component = Component::DispatchLoop,
     .group = "",
     .resources = {"namespaces"},
     .verbs = {"list", "watch"},
     .reason = "a worker that answered a copy's create with its namespace missing: its Namespaces watched (started "
               "then, not part of the connection) until that namespace appears (cluster_registry.cpp "
               "namespaceMissing, workload_reconciler.cpp nominateAndSync)"},
    {.component = Component::DispatchLoop,
     .group = "",
     .resources = {"secrets", "configmaps", "serviceaccounts"},
     .verbs = {"list", "get", "create", "update", "delete"},
     .condition = Condition::SyncDependencies,
     .reason = "syncDependencies only: the objects a job names, created and kept in sync on its worker before its "
               "copy, their owners updated and the last owner's copy deleted (dependencies.cpp); ours listed by "
               "origin label when a Workload's copies go (removeRemoteObjects) and by the orphan collector"},
};

bool applies(const ApiAccess& row, const config::Configuration& cfg) {
  if (row.condition != Condition::SyncDependencies) return true;
  return std::any_of(cfg.multiKueue.externalFrameworks.begin(), cfg.multiKueue.externalFrameworks.end(),
                     [](const auto& f) { return f.syncDependencies; });
}

// The (group, resource) pairs of a row under `cfg`, each dispatched kind once.
std::vector<std::pair<std::string, std::string>> rowResources(const ApiAccess& row, const config::Configuration& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto add = [&](std::string group, std::string resource) {
    auto entry = std::pair{std::move(group), std::move(resource)};
    if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(std::move(entry));
  };
  if (row.kinds == Kinds::None) {
    for (const auto resource : row.resources) add(std::string(row.group), std::string(resource));
  } else {
    for (const auto& f : cfg.multiKueue.externalFrameworks) add(f.gvk.group, cfg.resourceOf(f.gvk));
  }
  return out;
}

Json stringArray(const std::vector<std::string>& items) {
  Json out = Json::array();
  for (const auto& item : items) out.push_back(item);
  return out;
}

}  // namespace worker_access

const std::vector<ApiAccess>& workerAccessTable() { return worker_access::kRows; }

std::vector<Grant> workerGrants(const config::Configuration& configuration) {
  std::vector<Grant> out;
  for (const auto& row : worker_access::kRows) {
    if (!worker_access::applies(row, configuration)) continue;
    for (const auto& [group, resource] : worker_access::rowResources(row, configuration))
      for (const auto verb : row.verbs) out.push_back({&row, group, resource, std::string(verb), ""});
  }
  return out;
}

nlohmann::ordered_json workerClusterRoleRules(const config::Configuration& configuration) {
  // Per resource its verbs; then one rule per group and set of verbs, in first-granted order.
  std::vector<std::pair<std::string, std::string>> resources;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> verbs;
  for (const auto& g : workerGrants(configuration)) {
    const auto key = std::pair{g.group, g.resource};
    if (!verbs.contains(key)) resources.push_back(key);
    verbs[key].insert(g.verb);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> ruleKeys;  // (group, verbs)
  std::map<std::pair<std::string, std::vector<std::string>>, std::vector<std::string>> grouped;
  for (const auto& key : resources) {
    std::vector<std::string> ordered;
    for (const auto verb : verbOrder())
      if (verbs[key].contains(std::string(verb))) ordered.emplace_back(verb);
    auto ruleKey = std::pair{key.first, ordered};
    if (!grouped.contains(ruleKey)) ruleKeys.push_back(ruleKey);
    grouped[ruleKey].push_back(key.second);
  }
  auto rules = nlohmann::ordered_json::array();
  for (const auto& ruleKey : ruleKeys)
    rules.push_back({{"apiGroups", worker_access::stringArray({ruleKey.first})},
                     {"resources", worker_access::stringArray(grouped[ruleKey])},
                     {"verbs", worker_access::stringArray(ruleKey.second)}});
  return rules;
}

}  // namespace mka::deploy
