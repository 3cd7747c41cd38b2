#pragma once
// `multikueue-adapter jobs [-A | -n NS] [--kind K] [-o wide|json]`: one row per job of the
// configured kinds on the manager: name, kind, queue, state (explain's vocabulary,
// job_report.h), the worker it runs or ran on, age; `-o wide` adds the Workload and explain's
// sentence as far as the manager's objects tell it (jobs reads no worker: a worker's
// reachability is its MultiKueueCluster's Active condition). A configured kind the manager
// does not serve is a line on stderr, not an abort.
//
// Threads: the caller's.

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/app/command_setup.h"
#include "mka/app/job_report.h"
#include "mka/common/clock.h"

namespace mka::app {

struct JobsCommandOptions {
  ManagerAccess manager;
  std::string namespace_;      // "" = the context's namespace, else default
  bool allNamespaces = false;  // -A
  std::string kind;            // --kind, as explain's KIND; "" = every configured kind
  std::filesystem::path configFile;
  std::string output;            // "", "wide" or "json"
  const Clock* clock = nullptr;  // null: the system clock (the ages)
};

struct JobRow {
  std::string namespace_, name, kind, queue, workload;
  Verdict verdict;
  std::optional<Clock::TimePoint> created;
};

// The rows in `namespace_` ("" = all), kinds in configuration order, then by namespace and name.
// `problems` gets a line per configured kind that could not be listed.
std::vector<JobRow> readJobs(kube::Client& manager, const config::Configuration& configuration,
                             const std::vector<jobkind::JobKind>& kinds, const std::string& namespace_,
                             Clock::TimePoint now, std::vector<std::string>& problems);

// -o json: {"jobs": [{namespace, name, kind, queue, workload, state, worker, sentence,
// creationTimestamp}]} (docs/troubleshooting.md).
nlohmann::ordered_json jobsJson(const std::vector<JobRow>& rows);

int jobsCommand(const JobsCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace mka::app
