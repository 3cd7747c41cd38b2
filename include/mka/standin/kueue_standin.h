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
// Manager role (Role::Manager):
// - quota is reserved when the LocalQueue and its ClusterQueue exist (or always, see
//   Options::requireQueues): status.admission, QuotaReserved=True, and one Pending
//   status.admissionChecks entry per check the ClusterQueue lists;
// - all checks Ready -> Admitted=True; a check in Retry -> evicted (reason AdmissionCheck,
//   clusterName/nominatedClusterNames cleared, checks reset to Pending); a check Rejected ->
//   DeactivationTarget=True, spec.active=false, evicted with reason Deactivated
//   (KUEUE-MULTIKUEUE.md §2.8; the Workload is not marked Finished, as Kueue does not);
// - a Finished Workload is left alone.
// Worker role (Role::Worker):
// - Workloads (created by the dispatcher) are reserved and admitted at once (no admission
//   checks on workers), at most Options::capacity at a time, oldest first;
// - evict(namespace, name) evicts on demand (Evicted=True reason Preempted);
// - a Workload with DeactivationTarget=True (the dispatcher's EvictedOnManagerCluster) gets
//   spec.active=false and is evicted (§2.7).
// Eviction is Kueue core's: Evicted=True, checks reset, clusterName and nominatedClusterNames
// cleared; the reservation stays until the job integration releases it (QuotaReserved=False,
// admission removed) after stopping the job, and the Workload is then reserved again, no sooner
// than Options::readmitDelay after the eviction.
// Flavors: each resource a pod set requests gets the first flavor of the ClusterQueue's
// resource group covering it; quotas are not counted (a worker's reservation is a count,
// Options::capacity).
// Left out, because the dispatcher and the integration do not depend on them: quotas, cohorts
// and preemption, the flavor's fit to the pod set's node selector, the ClusterQueue's own
// status (its Active condition), requeue backoff (one fixed readmitDelay), and every job
// integration (see above).
// Every write goes through ClusterApi (so admission, watches and the garbage collector apply);
// status is written through the status subresource, always with the resourceVersion read
// (optimistic concurrency: a 409 retries the key, never a blind overwrite).
//
// Threads: owns one worker thread that polls the cluster's watches, keeps a queue of Workload
// keys and reconciles them one at a time (one writer per key); public methods may be called
// from any thread. evict() writes on the caller's thread, with the same optimistic concurrency.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "mka/common/clock.h"

namespace mka::sandbox {
class ClusterApi;
}  // namespace mka::sandbox

namespace mka::standin {

class KueueStandIn {
 public:
  enum class Role { Manager, Worker };

  struct Options {
    Role role = Role::Manager;
    // Reserve quota only for a Workload whose LocalQueue (spec.queueName, same namespace) and
    // ClusterQueue exist, as Kueue does. false: reserve always; status.admission.clusterQueue
    // is then the LocalQueue's ClusterQueue when known, else the queue name.
    bool requireQueues = true;
    // Worker: Workloads holding quota at once (reserved and not finished); 0 = unlimited.
    std::size_t capacity = 0;
    // How long after an eviction a released Workload is reserved again at the earliest (Kueue
    // requeues with a backoff).
    std::chrono::nanoseconds readmitDelay{0};
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
