#pragma once
// Where a job of a configured kind is and why, for `explain` and `jobs`: the facts read on the
// manager (the job's marker and queue, its Workload's conditions and admission checks, the
// nominated and chosen workers, the last Events) and, for `explain`, on the workers it was
// dispatched to (the remote Workload, the remote job, their Events), read through the
// kubeconfigs the manager holds (worker_client.h). A worker that cannot be reached is a fact
// with the reason, never an exception.
//
// The state and its one sentence are a pure function of the facts and the time (verdictOf), so
// every sentence is tested without a server. The vocabulary, shared by both commands:
//   NotFound     the job is not on the manager
//   NotQueued    no Workload: no queue, no LocalQueue, or the job integration has not made one
//   Pending      the manager's Kueue has not reserved quota (no room, an inactive queue, ...)
//   Dispatching  quota reserved on the manager; copies on workers, none admitted yet
//   Running      admitted on a worker, which this command (or the manager) reaches
//   Waiting      admitted on a worker that is unreachable; the dispatch loop waits for it up to
//                multiKueue.workerLostTimeout before it dispatches again
//   Rejected     an admission check rejected the Workload (it is deactivated)
//   Finished     the Workload is Finished (on a worker, or on the manager)
//
// Threads: the caller's; one worker at a time.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/jobkind/job_kind.h"
#include "mka/kube/client.h"

namespace mka::app {

struct ConditionFact {
  std::string type, status, reason, message;
  std::optional<Clock::TimePoint> since;  // lastTransitionTime
};

struct CheckFact {
  std::string name, state, message;
  std::optional<Clock::TimePoint> since;
};

struct EventFact {
  std::string object;  // "PipelineRun/hello", "Workload/pipelinerun-hello-1a2b3"
  std::string type, reason, message;
  std::int64_t count = 1;
  std::optional<Clock::TimePoint> last;  // lastTimestamp, else eventTime, else firstTimestamp
};

// One worker as explain read it.
struct WorkerFacts {
  std::string name;
  // The manager's MultiKueueCluster Active condition, or what its Events say (ManagerIndex);
  // an empty status when neither is there.
  std::string activeStatus, activeReason, activeMessage;
  std::optional<Clock::TimePoint> activeSince;
  bool probed = false;   // this command tried to read the worker (explain does; jobs does not)
  bool reached = false;  // and read it
  std::string error;     // why not (or what failed after connecting)
  bool workloadFound = false;
  std::vector<ConditionFact> workloadConditions;
  std::string localQueue;          // "namespace/name" the copy is queued in there
  bool localQueueMissing = false;  // that LocalQueue does not exist on the worker
  bool jobFound = false;
  std::string jobPhase;  // by the kind's finished rule (a phase, or the condition's reason)
  bool jobSuspended = false;
  nlohmann::json jobStatus = nullptr;
  std::vector<EventFact> events;
};

struct JobFacts {
  std::string kind;  // as configured: "PipelineRun.v1.tekton.dev"
  std::string namespace_, name;
  bool found = false;
  std::optional<Clock::TimePoint> created;
  std::string markerField, marker;  // the managedBy marker and its value ("" when absent)
  std::string queue;                // kueue.x-k8s.io/queue-name
  std::string workloadName;         // "" when none
  std::vector<ConditionFact> workloadConditions;
  std::vector<CheckFact> checks;
  std::string clusterQueue;  // where quota is reserved, else the LocalQueue's ClusterQueue
  bool localQueueMissing = false;
  bool clusterQueueMissing = false;
  // When the manager's Kueue has not reserved: the first resource the ClusterQueue lacks room for.
  std::string shortResource;
  std::int64_t shortNeeds = 0, shortFree = 0;  // thousandths
  std::vector<std::string> nominated;          // status.nominatedClusterNames
  std::string chosen;                          // status.clusterName
  std::vector<EventFact> events;               // the job's and its Workload's on the manager
  std::vector<WorkerFacts> workers;            // the chosen one, else the nominated ones
};

struct Verdict {
  std::string state;     // one word of the vocabulary above
  std::string worker;    // where it runs or ran, else ""
  std::string sentence;  // starts with the state: "Running on worker2 for 3m12s (remote phase Running)"
};

struct ReadOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds{10}};  // per request to a worker
  bool readWorkers = true;                                      // false: the manager's facts only (`jobs`)
  std::size_t events = 5;                                       // the last Events kept per object and cluster
  std::string userAgent = "multikueue-adapter explain";
};

// The configured kinds: dispatched ones, then integrated ones that are not dispatched.
std::vector<jobkind::JobKind> configuredKinds(const config::Configuration& configuration);

// The kind a user typed: "pipelinerun", "PipelineRun", "pipelineruns", "pipelinerun.tekton.dev",
// "PipelineRun.v1.tekton.dev", matched case-insensitively against the configured kinds (the
// plural through `manager`'s discovery). Throws mka::Error listing the configured kinds.
jobkind::JobKind resolveKind(const std::string& typed, const config::Configuration& configuration,
                             kube::Client& manager);

// Reads the job and everything after it. Throws only for the manager (unreachable, forbidden).
JobFacts readJob(kube::Client& manager, const config::Configuration& configuration, const jobkind::JobKind& kind,
                 const std::string& namespace_, const std::string& name, const ReadOptions& options);

// What the manager holds about jobs besides the jobs, listed once for a namespace ("" = all).
struct ManagerIndex {
  std::map<std::string, nlohmann::json> workloadsByOwner;  // controlling job's uid -> Workload
  std::map<std::string, nlohmann::json> workloadsByKey;    // "namespace/name" -> Workload
  std::map<std::string, std::string> localQueues;          // "namespace/name" -> its ClusterQueue
  std::map<std::string, nlohmann::json> clusterQueues;     // name -> ClusterQueue
  std::map<std::string, nlohmann::json> clusters;          // name -> MultiKueueCluster
  // name -> whether the worker is reachable, as the manager records it: the MultiKueueCluster's
  // Active condition (Kueue's MultiKueue writes it, or the adapter in drop-in mode), else the
  // last Event the dispatch loop recorded about the cluster (dispatcher mode records the
  // condition's changes as Events: Normal is True, Warning is False, since the Event's first).
  std::map<std::string, ConditionFact> clusterActive;
};
ManagerIndex indexManager(kube::Client& manager, const std::string& namespace_);

// The manager's facts of `job` (no Events, no worker read; each chosen or nominated worker
// with its MultiKueueCluster's Active condition only).
JobFacts factsOf(const nlohmann::json& job, const jobkind::JobKind& kind, const ManagerIndex& index);

// The state and its sentence. `now` reads the durations ("for 3m12s", "since 2m").
Verdict verdictOf(const JobFacts& facts, const config::Configuration& configuration, Clock::TimePoint now);

// "45s", "3m12s", "2m", "1h5m", "3d4h": kubectl's short form of an age.
std::string shortDuration(std::chrono::nanoseconds d);

// -o json of explain; its schema is in docs/troubleshooting.md.
nlohmann::ordered_json explainJson(const JobFacts& facts, const Verdict& verdict);

}  // namespace mka::app
