#pragma once
// `multikueue-adapter workers`: one row per MultiKueueCluster on the manager, read the way the
// dispatch loop reads it (its kubeconfig Secret or Path, or its ClusterProfile, through
// worker_client.h and Kueue's security rules): whether this command could reach the
// worker, the configured kinds it serves and those it lacks, each ClusterQueue's free and nominal
// quota per flavor and resource (multikueue/capacity.h), and this manager's Workloads there
// (pending, admitted). A worker it cannot reach is a row saying why, never an abort.
//
// Threads: the caller's; one worker at a time.

#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"
#include "mka/kube/client.h"

namespace mka::app {

struct WorkersCommandOptions {
  // The manager: this file, else as the adapter's --kubeconfig does without it.
  std::string managerKubeconfig;
  std::string context;                                          // its context; "" = the current one
  std::filesystem::path configFile;                             // the adapter's configuration; "" = the defaults
  std::string output;                                           // "" (a table), "wide" or "json"
  std::chrono::milliseconds timeout{std::chrono::seconds{10}};  // per request to a worker
};

struct WorkerQuotaRow {
  std::string clusterQueue, flavor, resource;
  std::int64_t nominal = 0, reserved = 0, free = 0;  // thousandths
};

struct WorkerRow {
  std::string name;
  bool connected = false;
  std::string error;  // why not connected (or what failed after connecting)
  // The manager's MultiKueueCluster Active condition, as the dispatch loop (or Kueue) wrote it.
  std::string activeStatus, activeReason, activeMessage;
  std::vector<std::string> kindsServed, kindsMissing;  // configured kinds, as "Kind.version.group"
  std::vector<WorkerQuotaRow> quotas;
  std::int64_t pending = 0, admitted = 0;  // this manager's Workloads (its origin label)
};

// The rows, for every MultiKueueCluster, sorted by name.
std::vector<WorkerRow> readWorkers(kube::Client& manager, const config::Configuration& configuration,
                                   std::chrono::milliseconds timeout);

// -o json: {"workers": [ ... ]}, fields as WorkerRow (quantities as Kubernetes quantities).
nlohmann::ordered_json workersJson(const std::vector<WorkerRow>& rows);

int workersCommand(const WorkersCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace mka::app
