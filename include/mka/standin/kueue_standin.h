#pragma once
// A Kueue stand-in for one sandbox cluster: a small controller that plays the part Kueue plays
// on a MultiKueue manager or worker, so the dispatch loop can be tested end to end without a
// real Kueue. It reads Kueue's protocol independently of the adapter's own MultiKueue code on
// purpose (two readings of the protocol catch each other's mistakes): it shares no code and
// no string constants with it.
//
// Manager role (Role::Manager), for every configured job kind:
// - a job labelled kueue.x-k8s.io/queue-name gets a Workload (kueue.x-k8s.io/v1beta2) named as
//   Kueue names it with the ShortWorkloadNames rule (workloadNameFor), owned by the job
//   (controller, blockOwnerDeletion), labelled kueue.x-k8s.io/job-uid, with finalizer
//   kueue.x-k8s.io/resource-in-use (removed once the Workload is being deleted);
// - quota is reserved when the LocalQueue and its ClusterQueue exist (or always, see
//   Options::requireQueues): status.admission, QuotaReserved=True, and one Pending
//   status.admissionChecks entry per check the ClusterQueue lists;
// - all checks Ready -> Admitted=True; a check in Retry -> evicted (reason AdmissionCheck,
//   quota released, clusterName/nominatedClusterNames cleared, checks reset to Pending) and
//   reserved again after Options::readmitDelay; a check Rejected -> DeactivationTarget=True,
//   spec.active=false, evicted with reason Deactivated (KUEUE-MULTIKUEUE.md §2.8; the Workload
//   is not marked Finished, as Kueue does not);
// - a Finished Workload is left alone.
// Worker role (Role::Worker):
// - Workloads (created by the dispatcher) are reserved and admitted at once (no admission
//   checks on workers), at most Options::capacity at a time, oldest first;
// - a job of a configured kind naming a Workload in annotation (or label)
//   kueue.x-k8s.io/prebuilt-workload-name adopts it (controller ownerReference + job-uid label)
//   and, once it is admitted, "runs": framework-shaped running status at once, final status
//   after Options::runTime on the injected clock, then Finished=True on the Workload;
// - evict(namespace, name) evicts on demand (Evicted=True reason Preempted);
// - a Workload with DeactivationTarget=True (the dispatcher's EvictedOnManagerCluster) gets
//   spec.active=false and is evicted (§2.7).
// Eviction is Kueue core's: Evicted=True, checks reset, clusterName cleared; the reservation
// stays until the job integration releases it (QuotaReserved=False, admission removed) after
// stopping the job, and is then reserved again after Options::readmitDelay. With
// Options::playsJobIntegration the stand-in releases it in the eviction's own write.
// Flavors: each resource a pod set requests gets the first flavor of the ClusterQueue's
// resource group covering it; quotas are not counted (a worker's reservation is a count,
// Options::capacity).
// Left out, because the dispatcher and the integration do not depend on them: quotas, cohorts
// and preemption, the flavor's fit to the pod set's node selector,
// AdmissionCheck objects and their Active condition (the ClusterQueue's list is trusted),
// suspending and unsuspending jobs, requeue backoff (one fixed readmitDelay), pod labels, and
// checking a prebuilt Workload against its job (OutOfSync).
// Every write goes through ClusterApi (so admission, watches and the garbage collector apply);
// status is written through the status subresource when the kind has one, always with the
// resourceVersion read (optimistic concurrency: a 409 retries the key, never a blind overwrite).
//
// Threads: owns one worker thread that polls the cluster's watches, keeps a queue of object
// keys and reconciles them one at a time (one writer per key); public methods may be called
// from any thread. evict() writes on the caller's thread, with the same optimistic concurrency.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"

namespace mka::sandbox {
class ClusterApi;
}  // namespace mka::sandbox

namespace mka::standin {

class KueueStandIn {
 public:
  enum class Role { Manager, Worker };

  // How a kind's framework controller reports a run in the job's status.
  enum class RunReport {
    SucceededCondition,  // Tekton: condition Succeeded Unknown (running), True or False
    Phase,               // Argo: status.phase Running, Succeeded, Failed or Error
  };
  struct JobKind {
    std::string group;    // "tekton.dev"
    std::string version;  // "v1"
    std::string plural;   // "pipelineruns"
    std::string kind;     // "PipelineRun"
    RunReport report = RunReport::SucceededCondition;
  };
  // Tekton PipelineRuns (tekton.dev/v1) and Argo Workflows (argoproj.io/v1alpha1), each with
  // the status its real controller writes.
  static std::vector<JobKind> defaultJobKinds();

  struct Options {
    Role role = Role::Manager;
    // true: also plays a job integration for jobKinds (manager: creates their Workloads; worker:
    // adopts prebuilt Workloads and runs their jobs) and removes the resource-in-use finalizer of
    // deleted Workloads, which real Kueue leaves to job integrations. false: Kueue core only
    // (quota, checks, admission, eviction), for runs where our integration and the framework
    // controller stand-ins do the rest, as deployed.
    bool playsJobIntegration = true;
    std::vector<JobKind> jobKinds = defaultJobKinds();
    // Reserve quota only for a Workload whose LocalQueue (spec.queueName, same namespace) and
    // ClusterQueue exist, as Kueue does. false: reserve always; status.admission.clusterQueue
    // is then the LocalQueue's ClusterQueue when known, else the queue name.
    bool requireQueues = true;
    // Worker: Workloads holding quota at once (reserved and not finished); 0 = unlimited.
    std::size_t capacity = 0;
    // How long after an eviction a Workload is reserved again (Kueue requeues with a backoff).
    std::chrono::nanoseconds readmitDelay{0};
    // Worker: how long a job runs, on the injected clock, from the moment it is seen admitted.
    std::chrono::nanoseconds runTime{std::chrono::seconds{10}};
    // Worker: whether a run fails (Tekton Succeeded=False, Argo phase Failed). Called with the
    // job; null = every run succeeds. Called on the worker thread.
    std::function<bool(const nlohmann::json& job)> runFails;
    // How often the worker thread looks at its watches and at the clock (the latency of a
    // reaction, not a sleep tests wait for: they await idle()).
    std::chrono::milliseconds pollInterval{5};
  };

  KueueStandIn(sandbox::ClusterApi& api, const Clock& clock, Options options);
  ~KueueStandIn();
  KueueStandIn(const KueueStandIn&) = delete;
  KueueStandIn& operator=(const KueueStandIn&) = delete;

  // Starts the worker thread. Watches on kinds whose CRD does not exist yet are opened as soon
  // as the CRD appears.
  void start();
  void stop();

  // Evicts a Workload holding quota as Kueue does on preemption (Evicted=True reason
  // Preempted; see above for who releases the reservation); it is reserved again after
  // Options::readmitDelay. Throws ApiError (404 when the Workload is missing) or mka::Error when
  // it holds no quota or is being evicted already.
  void evict(const std::string& namespace_, const std::string& name);
  // Makes the worker thread look at the clock now (after FakeClock::advance), instead of at
  // its next poll.
  void poke();

  // True when every event written so far has been handled, nothing is queued or in progress
  // and no run is due on the clock. Tests await it after a change.
  bool idle() const;
  // Workloads on this cluster holding quota (QuotaReserved=True, not Finished).
  std::size_t admittedCount() const;
  // Jobs being run (worker role): admitted, running status written, not finished yet.
  std::size_t runningCount() const;

  // Kueue's Workload name for a job (GetWorkloadNameForOwnerWithGVK with ShortWorkloadNames):
  // "<lower-case kind>-<job name>" cut to 57 characters, "-", then the first 5 hex digits of
  // SHA-1("<Kind>\n<group>\n<job name>\n<job uid>"); at most 63 characters, so the name fits
  // in a label value (the prebuilt-workload-name label).
  static std::string workloadNameFor(const JobKind& kind, const std::string& jobName, const std::string& jobUid);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::standin
