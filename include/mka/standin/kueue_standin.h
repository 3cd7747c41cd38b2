#pragma once
// A Kueue stand-in for one sandbox cluster: a small controller that plays Kueue's core on a
// MultiKueue manager or worker, so the dispatch loop and our job integration can be tested end
// to end without a real Kueue. It reads Kueue's protocol independently of the adapter's own
// MultiKueue code on purpose (two readings of the protocol catch each other's mistakes): it
// shares no code and no string constants with it.
//
// Kueue core only, as it treats kinds it does not integrate: the stand-in never creates,
// adopts or finishes a Workload, never reads or writes a job, and leaves the
// kueue.x-k8s.io/resource-in-use finalizer to whoever set it. Those are the job integration's
// (ours, src/integration) and the framework controller's (JobControllerStandIn) in the sandbox,
// as they are on a real cluster.
//
// Both roles: a ClusterQueue that lists an AdmissionCheck that is missing or not Active=True is
// inactive, as in Kueue: its Workloads get no quota, only QuotaReserved=False reason
// Inadmissible "ClusterQueue <name> is inactive", until the check is Active (on a MultiKueue
// manager, the adapter's admission check controller makes it so).
// Quota (both roles; src/standin/kueue_quota.h has the arithmetic and the Kueue code it reads):
// - a Workload (spec.queueName -> its LocalQueue -> spec.clusterQueue) is reserved only where
//   all its pod sets fit together: per pod set (each container's requests, a limit alone
//   counting, times count; "pods" when the ClusterQueue covers it) and resource group, the
//   group's flavors in order, the first where usage + request <= nominalQuota, or in a cohort
//   (spec.cohortName) <= nominalQuota + the cohort's unused quota, capped by borrowingLimit,
//   lenders keeping nominalQuota - lendingLimit (Kueue's default flavorFungibility). A resource
//   no group covers does not fit, so a ClusterQueue without resourceGroups takes only Workloads
//   that request nothing (as Kueue; the tests' bare Workloads request nothing);
// - pending Workloads are taken by spec.priority (higher first), then creation (or eviction
//   by an admission check), then name; one that does not fit does not block the next
//   (BestEffortFIFO). It keeps QuotaReserved=False with Kueue's message ("couldn't assign
//   flavors to pod set main: insufficient unused quota for cpu in flavor f, 2 more needed")
//   and granular reason (WaitingForQuota, ExceedsMaxQuota, NoMatchingFlavor: Kueue 0.20's
//   UnadmittedWorkloadsObservability, on by default), and Admitted=False NoReservation. Every
//   change (a Workload finished, deleted, released after an eviction, a ClusterQueue edited)
//   brings a new pass over all of them, so the message says what is lacking now (Kueue's may
//   still describe its last attempt until an event requeues the Workload);
// - status.admission.podSetAssignments names each resource's flavor and the pod set's
//   resourceUsage (spelled as quantity::formatMilli does: "3221225472" where Kueue writes
//   "3Gi");
// - each ClusterQueue's status as Kueue's ClusterQueue controller writes it, when it changes:
//   flavorsReservation (Workloads holding quota) and flavorsUsage (those admitted), per flavor
//   and covered resource {name, total, borrowed} in Kubernetes' canonical quantities, and
//   pendingWorkloads, reservingWorkloads, admittedWorkloads;
// - preemption within a ClusterQueue whose spec.preemption.withinClusterQueue is
//   LowerPriority: a Workload that fits only if admitted ones of strictly lower priority go
//   evicts the fewest (Kueue's candidate order and fill-back), each Preempted=True reason
//   InClusterQueue and Evicted=True reason Preempted, and waits (QuotaReserved=False reason
//   WaitingForPreemptedWorkloads, "... Pending the preemption of N workload(s)"), its request
//   held for the rest of the pass. With Options::orchestratedPreemption (MultiKueue's
//   orchestrated preemption, KEP-8303), a Workload with a preemption gate in spec whose
//   status.preemptionGates entry is not position Open evicts nobody: QuotaReserved=False reason
//   AdmissionGated and BlockedOnPreemptionGates=True reason PreemptionGated, both "Workload
//   requires preemption, but it's gated"; once the gate is Open it preempts as above, and the
//   condition turns False when it is reserved (reason QuotaReserved) or evicted, as in Kueue.
// Manager role (Role::Manager):
// - a reservation carries one Pending status.admissionChecks entry per check the ClusterQueue
//   lists (with Options::requireQueues off and no ClusterQueue: reserved as is, no flavors);
// - all checks Ready -> Admitted=True; a check in Retry -> evicted (reason AdmissionCheck,
//   clusterName/nominatedClusterNames cleared, checks reset to Pending); a check Rejected ->
//   DeactivationTarget=True, spec.active=false, evicted with reason DeactivatedDueToAdmissionCheck
//   (Kueue's reason with the target's cause; KUEUE-MULTIKUEUE.md §2.8; the Workload is not
//   marked Finished, as Kueue does not);
// - a Finished Workload is left alone.
// Worker role (Role::Worker):
// - Workloads (created by the dispatcher) are admitted as soon as they are reserved (no
//   admission checks on workers), besides the quotas at most Options::capacity at a time (a
//   Workload over it stays pending without a condition: not Kueue's);
// - evict(namespace, name) evicts on demand (Evicted=True reason Preempted);
// - a Workload with DeactivationTarget=True (the dispatcher's EvictedOnManagerCluster) gets
//   spec.active=false and is evicted (§2.7).
// Eviction is Kueue core's: Evicted=True, checks reset, clusterName and nominatedClusterNames
// cleared, BlockedOnPreemptionGates lifted, preemption gates closed; the reservation stays until
// the job integration releases it (QuotaReserved=False, admission removed) after stopping the
// job, and the Workload is then reserved again, no sooner than Options::readmitDelay after the
// eviction.
// Left out, because the dispatcher and the integration do not depend on them: Cohort objects
// (hierarchies, a cohort's own quota), fair sharing, preemption across the cohort
// (reclaimWithinCohort, borrowWithinCohort) and policies other than LowerPriority, the other
// flavorFungibility settings, partial admission (minCount), init containers, overhead and
// LimitRange defaults in requests, the flavor's fit to the pod set's node selector and taints
// (and whether the ResourceFlavor exists), namespaceSelector, StrictFIFO, topology, the
// ClusterQueue's Active condition and stopPolicy, the LocalQueue's status, requeue backoff
// (one fixed readmitDelay; only Options::waitForPodsReady's evictions back off), and every job
// integration (see above).
// Every write goes through ClusterApi (so admission, watches and the garbage collector apply);
// status is written through the status subresource, always with the resourceVersion read
// (optimistic concurrency: a 409 retries the key, never a blind overwrite).
//
// Threads: owns one worker thread that polls the cluster's watches, keeps a queue of Workload
// keys and reconciles them one at a time (one writer per key), then, after any change, runs the
// scheduling pass (reservations, preemptions, ClusterQueue status) on the same thread; public
// methods may be called from any thread. evict() writes on the caller's thread, with the same
// optimistic concurrency.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mka/common/clock.h"

namespace mka::sandbox {
class ClusterApi;
}  // namespace mka::sandbox

namespace mka::standin {

class KueueStandIn {
 public:
  enum class Role { Manager, Worker };

  // Kueue's waitForPodsReady settings (its defaults), applied as its core workload controller
  // does: an admitted, active, unevicted Workload whose PodsReady condition is not True within
  // `timeout` of its Admitted transition (absent or reason WaitForStart), or within
  // `recoveryTimeout` of PodsReady turning False/WaitForRecovery, is evicted with reason
  // PodsReadyTimeout, "Exceeded the PodsReady timeout <ns>/<name>", its status.requeueState
  // count + 1 and requeueAt = now + backoffBaseSeconds * 2^(count - 1), at most
  // backoffMaxSeconds (Kueue adds a jitter of 0.01 %; none here, so times are exact). Once the
  // job integration has released it, it is not reserved before requeueAt; then Requeued turns
  // True, reason BackoffFinished. A timeout with count + 1 > backoffLimitCount instead records
  // DeactivationTarget=True reason RequeuingLimitExceeded ("exceeding the maximum number of
  // re-queuing retries"): spec.active=false and the eviction DeactivatedDueToRequeuingLimitExceeded
  // follow, requeueState cleared. Not modelled: blockAdmission, requeuingStrategy.timestamp
  // Creation.
  struct WaitForPodsReady {
    std::chrono::nanoseconds timeout{std::chrono::minutes{30}};
    std::optional<std::chrono::nanoseconds> recoveryTimeout;  // unset: timeout; zero: no recovery timeout
    std::int64_t backoffBaseSeconds = 60;
    std::int64_t backoffMaxSeconds = 3600;
    std::optional<std::int64_t> backoffLimitCount;  // unset: requeued forever
  };

  struct Options {
    Role role = Role::Manager;
    // Reserve quota only for a Workload whose LocalQueue (spec.queueName, same namespace) and
    // ClusterQueue exist, as Kueue does. false: reserve always; status.admission.clusterQueue
    // is then the LocalQueue's ClusterQueue when known, else the queue name.
    bool requireQueues = true;
    // Worker: Workloads holding quota at once (reserved and not finished), on top of the
    // ClusterQueues' quotas; 0 = unlimited.
    std::size_t capacity = 0;
    // Kueue's MultiKueueOrchestratedPreemption feature gate (KEP-8303; Alpha, off by default in
    // Kueue, on in a worker of a MultiKueue that orchestrates preemption): a Workload with a
    // closed preemption gate does not preempt. false: gates are ignored, as Kueue does without it.
    bool orchestratedPreemption = true;
    // How long after an eviction a released Workload is reserved again at the earliest (Kueue
    // requeues with a backoff).
    std::chrono::nanoseconds readmitDelay{0};
    // How often the worker thread looks at its watches and at the clock (the latency of a
    // reaction, not a sleep tests wait for: they await idle()).
    std::chrono::milliseconds pollInterval{5};
    // Kueue's waitForPodsReady as its core workload controller applies it (a job integration
    // writes the PodsReady condition); unset: off. See WaitForPodsReady.
    std::optional<WaitForPodsReady> waitForPodsReady;
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
  // Preempted; the job integration releases the reservation, see above). Throws ApiError (404
  // when the Workload is missing) or mka::Error when it holds no quota or is being evicted
  // already.
  void evict(const std::string& namespace_, const std::string& name);
  // Makes the worker thread look at the clock now (after FakeClock::advance), instead of at
  // its next poll.
  void poke();

  // True when every event written so far has been handled, nothing is queued or in progress
  // and no readmission is due on the clock. Tests await it after a change.
  bool idle() const;
  // Workloads on this cluster holding quota (QuotaReserved=True, not Finished).
  std::size_t admittedCount() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::standin
