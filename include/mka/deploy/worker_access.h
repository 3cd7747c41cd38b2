#pragma once
// Every call the manager's dispatch loop makes to a worker's API server, through the kubeconfig
// of the worker's MultiKueueCluster, as one table in the shape of rbac.h's (which covers the
// adapter's calls to its own cluster only). `add-worker` grants exactly this on the worker: a
// ClusterRole for the ServiceAccount whose token the MultiKueueCluster's kubeconfig holds. The
// add-worker test runs the dispatch loop through such a kubeconfig and checks each request
// the sandbox records against these rules: a new remote call needs a row here.
//
// Threads: immutable data and pure functions.

#include <vector>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"
#include "mka/deploy/rbac.h"

namespace mka::deploy {

// The rows, all of Component::DispatchLoop and Scope::Cluster (a job and its Workload may be
// in any namespace).
const std::vector<ApiAccess>& workerAccessTable();

// Every grant of the rows under `configuration`: Kinds::Dispatched expanded to each kind of
// multiKueue.externalFrameworks; in table order.
std::vector<Grant> workerGrants(const config::Configuration& configuration);

// The ClusterRole's `rules`: one rule per row and group, resources and verbs as granted.
nlohmann::ordered_json workerClusterRoleRules(const config::Configuration& configuration);

}  // namespace mka::deploy
