#pragma once
// `add-worker` and `remove-worker`: onboarding a worker cluster for MultiKueue, in place of
// Kueue's create-multikueue-kubeconfig.sh and the hand-written Secret, MultiKueueCluster and
// MultiKueueConfig edit that follow it.
//
// On the worker: a ServiceAccount for the manager's dispatch loop, a ClusterRole granting
// exactly what the dispatch loop calls there (deploy/worker_access.h), its binding, and a
// legacy token Secret the cluster's token controller fills. From that token, the worker's CA
// and the server of the worker kubeconfig's current context comes a kubeconfig with nothing
// but inline data, checked with the dispatcher's own security rules
// (kube::validateKubeconfigSecurity) and tried against the worker. On the manager: the
// kubeconfig Secret, the MultiKueueCluster naming it, and the cluster added to a
// MultiKueueConfig. Every write is "make it so": a second run changes nothing and says so.
// remove-worker deletes all of it. Each failure names the cluster (role, context, server),
// the object, the problem and the fix; nothing is written until every read that can refuse
// the request has passed.
//
// Names (the configuration's `namespace`, kueue-system by default, on both clusters):
//   worker:  ServiceAccount, ClusterRole and ClusterRoleBinding `multikueue-adapter-dispatcher`
//            (`-<origin>` appended when multiKueue.origin is not the default, so that managers
//            sharing a worker keep their own), token Secret `<that name>-token`;
//   manager: Secret `<NAME>-secret` (key `kubeconfig`, as Kueue's documentation names it) and
//            MultiKueueCluster `<NAME>`.
//
// Threads: the caller's; the commands block until done.

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"

namespace mka::app {

struct WorkerCommandOptions {
  std::string name;                        // the MultiKueueCluster's name
  std::filesystem::path workerKubeconfig;  // its current context reaches the worker
  // The manager: this file, else as the adapter's --kubeconfig does without it ($KUBECONFIG,
  // ~/.kube/config, the pod's service account).
  std::string managerKubeconfig;
  std::filesystem::path configFile;  // the adapter's configuration; "" = the defaults
  // The MultiKueueConfig to add the cluster to (or remove it from); "" = the only one there is
  // (add-worker), every one that lists it (remove-worker).
  std::string multiKueueConfig;
  bool dryRun = false;  // add-worker: print what would be written, write nothing
  std::chrono::milliseconds tokenTimeout{std::chrono::seconds{60}};  // for the token controller
};

// The names of the worker's objects for a configuration.
struct WorkerAccessNames {
  std::string namespace_;
  std::string serviceAccount;  // also the ClusterRole's and the ClusterRoleBinding's name
  std::string tokenSecret;
};
WorkerAccessNames workerAccessNames(const config::Configuration& configuration);
// The manager's kubeconfig Secret of MultiKueueCluster `name`.
std::string kubeconfigSecretName(const std::string& name);

// The worker's objects, in creation order: ServiceAccount, ClusterRole, ClusterRoleBinding,
// token Secret.
std::vector<nlohmann::ordered_json> workerAccessObjects(const config::Configuration& configuration);

// A kubeconfig with one cluster, user and context, all inline: what the dispatch loop reads.
struct WorkerKubeconfig {
  std::string clusterName;  // the MultiKueueCluster's name, naming the cluster and context
  std::string server;
  std::string caPem;          // "" leaves certificate-authority-data out
  std::string tlsServerName;  // "" leaves it out
  std::string user;           // the ServiceAccount
  std::string token;
};
std::string renderKubeconfig(const WorkerKubeconfig& kubeconfig);

// The subcommands: progress and results on `out`, failures on `err`. Return 0 on success, 1
// on failure.
int addWorkerCommand(const WorkerCommandOptions& options, std::ostream& out, std::ostream& err);
int removeWorkerCommand(const WorkerCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace mka::app
