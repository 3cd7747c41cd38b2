#pragma once
// The Workload reconciler (KUEUE-MULTIKUEUE.md §2.1-§2.14) for Workloads whose admission check
// is ours (spec.controllerName == Options::controllerName) and whose owner is a configured
// external framework: remote Workload copies on the nominated workers (AllAtOnce, Incremental,
// our quota-aware dispatcher, or an external dispatcher's nominatedClusterNames), the first worker to admit wins and
// the other copies go, the job copy is created there (generic adapter, marker removed), its status is copied back
// whenever it changes, the manager's Workload is finished from the worker's, evictions go both ways, a worker lost
// longer than workerLostTimeout sends the check to Retry, and remote objects are deleted in every case of §2.10.
//
// Reads come from caches (manager informers; the registry's worker informers); remote events
// bring keys back, so a cache that lags only delays a decision. Writes: Workload status with
// optimistic concurrency (the read object's resourceVersion; a 409 re-reads and re-decides),
// never a blind overwrite; creates tolerate AlreadyExists and deletes NotFound, so a restart
// mid-step never duplicates a job (names are deterministic: the remote copy has the local name).
//
// Threads: reconcile() on the workload controller's workers, one key at a time per key;
// rememberDeleted() on the manager Workload informer's thread. Shared state (deleted-workload
// cache, incremental rounds) is guarded by one mutex, never held during I/O.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/kueue.h"
#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/controller/controller.h"
#include "mka/controller/event_recorder.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/multikueue/adapter.h"
#include "mka/multikueue/capacity.h"
#include "mka/multikueue/cluster_registry.h"
#include "mka/multikueue/oldest_per_state.h"

namespace mka::multikueue {

// Kueue's dispatch metrics (multikueue_workloads_dispatched_total / _admitted_total).
class DispatchObserver {
 public:
  virtual ~DispatchObserver() = default;
  virtual void workloadDispatched(const std::string& clusterQueue, const std::string& cluster) = 0;
  virtual void workloadAdmitted(const std::string& clusterQueue, const std::string& cluster) = 0;
  // A worker's queues as they stand (null: disconnected or unreadable, its figures go).
  virtual void workerCapacity(const std::string& cluster, std::shared_ptr<const capacity::Snapshot> snapshot) {
    (void)cluster;
    (void)snapshot;
  }
  // When the running Workload (quota reserved, not finished) longest in `state` of our check
  // entered it: the later of the state's and QuotaReserved's lastTransitionTime. nullopt: no
  // running Workload is in that state any more. Called with the reconciler's lock held, in the
  // order the changes happen.
  virtual void oldestInCheckState(const std::string& state, std::optional<Clock::TimePoint> since) {
    (void)state;
    (void)since;
  }
};

class WorkloadReconciler {
 public:
  struct Options {
    std::string controllerName = std::string(config::kDefaultDispatchControllerName);
    std::string origin = std::string(api::kDefaultOrigin);
    Adapters adapters;  // one per configured job kind
    std::chrono::nanoseconds workerLostTimeout{std::chrono::minutes{15}};
    std::string dispatcherName = std::string(config::kDispatcherAllAtOnce);
    int incrementalStepSize = kIncrementalStepSize;
    // Kueue's MultiKueueOrchestratedPreemption: gated copies, one gate opened at a time.
    bool orchestratedPreemption = true;
  };

  // All borrowed; must outlive the reconciler. `observer` may be null.
  // `objects` reads the manager's Workloads, AdmissionChecks, MultiKueueConfigs and the
  // configured job kinds (a job it does not hold is read from `manager`).
  WorkloadReconciler(kube::Client& manager, const controller::ObjectReader& objects, const ClusterRegistry& clusters,
                     controller::EventRecorder& events, const Clock& clock, Options options,
                     DispatchObserver* observer = nullptr);

  // Reconciles the manager's Workload "namespace/name".
  controller::Result reconcile(const std::string& key);

  // The manager's Workload informer saw `workload` deleted: keep it so the next reconcile can
  // clean the workers (§2.1 step 1).
  void rememberDeleted(const nlohmann::json& workload);
  // Entries the reconciler keeps about Workloads between reconciles (deleted Workloads not yet
  // cleaned, remote objects it deleted that a cache may still show, rounds, its own writes):
  // they go with the Workload, so a long run does not grow with the jobs it has seen.
  std::size_t remembered() const;

  // Keys of cached Workloads with a state for one of `checks` (event mapping), in one pass over
  // the cache. The keys `skip` accepts are passed over without decoding their Workloads (the
  // dispatcher skips those already queued).
  std::vector<std::string> workloadsUsingChecks(
      const std::vector<std::string>& checks, const std::function<bool(const std::string& key)>& skip = nullptr) const;

  // The quota-aware dispatcher: a worker's room changed (RemoteCluster::capacity), so rounds
  // waiting for room end at their next reconcile; the owner enqueues waitingForRoom().
  void capacityChanged();
  // Workloads the quota-aware dispatcher nominated where nothing has room yet.
  std::vector<std::string> waitingForRoom() const;

 private:
  struct Group;
  struct Loaded {
    nlohmann::json object;
    bool deleted = false;  // gone from the cache (the last copy seen) or terminating
  };
  static std::string jobKey(const Group& group);

  // reconcile(), in the order of KUEUE-MULTIKUEUE.md §2.1: each step returns a controller::Result when the
  // reconcile ends there, nullopt to go on.
  std::optional<Loaded> loadWorkload(const std::string& key);  // step 1
  // step 2: `ours` (ourCheck) unless its state is missing or Rejected
  std::optional<std::string> activeCheck(const nlohmann::json& workload, const std::optional<std::string>& ours) const;
  // The Workload's state of `check` into checkStates_ (null workload, or no check: out of it).
  void trackCheckState(const std::string& key, const nlohmann::json* workload, const std::optional<std::string>& check);
  std::optional<std::string> ourCheck(const nlohmann::json& workload) const;
  std::optional<controller::Result> resolveAdapter(const nlohmann::json& workload, const std::string& check,
                                                   bool deleted,
                                                   Group& group);  // step 3, §2.2
  std::optional<controller::Result> requireManagedOwner(const nlohmann::json& workload, const std::string& check,
                                                        Group& group);                     // step 4
  void readGroup(const std::string& check, const nlohmann::json& workload, Group& group);  // step 5
  void removeOutsideCopies(Group& group);           // copies on workers the config dropped
  controller::Result cleanupDeleted(Group& group);  // step 6
  controller::Result reject(const nlohmann::json& workload, const std::string& check, const std::string& message);
  void forgetWorkload(const std::string& key);

  // reconcileGroup(), the steps of §2.3 in order.
  controller::Result reconcileGroup(const nlohmann::json& workload, const std::string& check, Group& group);
  std::optional<controller::Result> cleanupWhenNotRunning(const nlohmann::json& workload, Group& group);  // (2)
  std::optional<controller::Result> finishFromRemote(const nlohmann::json& workload, const std::string& check,
                                                     const std::string& state, Group& group);  // (3)
  std::optional<controller::Result> followRemoteEviction(const nlohmann::json& workload, const std::string& check,
                                                         const std::string& state, Group& group);  // (4)
  void removeOutOfSyncRemotes(const nlohmann::json& workload, Group& group);                       // (5)
  std::optional<controller::Result> followAdmittedRemote(const nlohmann::json& workload, const std::string& check,
                                                         const std::string& state, Group& group);  // (6)
  controller::Result retryLostAdmission(const nlohmann::json& workload, const std::string& check,
                                        const Group& group);  // 6a
  controller::Result runOnWinner(const nlohmann::json& workload, const std::string& check, const std::string& state,
                                 const std::string& cluster, const nlohmann::json& remoteWorkload, Group& group);  // 6b
  void markReady(const nlohmann::json& workload, const std::string& check, const std::string& cluster,
                 const Group& group);  // 6b.5
  // (7) Opens the preemption gate of the copy blocked on it the longest, at most one per
  // kSingleClusterPreemptionTimeout; returns when to look again (0: nothing pending).
  std::chrono::nanoseconds openPreemptionGate(Group& group);
  controller::Result nominateAndSync(const nlohmann::json& workload, const std::string& check,
                                     Group& group);  // (8), (9)
  std::vector<std::string> incrementalNomination(const nlohmann::json& workload, const Group& group,
                                                 controller::Result& result);
  // The quota-aware dispatcher's nominees; `message` becomes the check's (where it looked, why not).
  std::vector<std::string> quotaAwareNomination(const nlohmann::json& workload, const Group& group,
                                                controller::Result& result, std::string& message);

  controller::Result cleanupAll(Group& group);
  void removeRemoteObjects(RemoteCluster& remote, const Group& group);
  // Takes the Workload off the owners of its dependency copies on `remote` (syncDependencies).
  void releaseDependencies(RemoteCluster& remote, const Group& group);
  void syncJob(RemoteCluster& remote, const Group& group, bool freshRead);
  // Whether `cluster` holds a Workload copy or a job copy of the group.
  bool anyRemoteObject(const Group& group, const std::string& cluster, RemoteCluster& remote);
  // Sets our check from Ready to `state`; false when the stored check is not Ready (nothing written).
  bool setCheckFromReady(const nlohmann::json& workload, const std::string& check, const std::string& state,
                         const std::string& message);
  // Read-modify-write of the manager Workload's status: `mutate` returns false when nothing is
  // to change. A conflict re-reads the object and runs `mutate` again. Returns whether written.
  bool updateStatus(kube::Client& client, const nlohmann::json& cached,
                    const std::function<bool(nlohmann::json&)>& mutate);
  // Whether the cache still shows a Workload older than this reconciler's last status write
  // (controller-runtime's reconcilers meet the same lag). Deciding on that stale copy could undo
  // a decision just written, so the reconcile waits: the informer's event for the write
  // enqueues the Workload again. Only the write's resourceVersion is kept, not the object.
  bool lagsOwnWrite(const std::string& key, const nlohmann::json& cached);
  // A worker's cached object, except one this reconciler deleted and the cache still shows.
  std::optional<nlohmann::json> cachedRemote(RemoteCluster& remote, const api::GroupVersionKind& gvk,
                                             const std::string& key);
  // Remembers that `object` on `remote` was deleted for Workload `workloadKey`, until the cache
  // catches up or the Workload is forgotten.
  void forgetRemote(RemoteCluster& remote, const api::GroupVersionKind& gvk, const nlohmann::json& object,
                    const std::string& workloadKey);

  kube::Client& manager_;
  const controller::ObjectReader& objects_;
  const ClusterRegistry& clusters_;
  controller::EventRecorder& events_;
  const Clock& clock_;
  Options options_;
  DispatchObserver* observer_;
  bool syncsDependencies_ = false;  // a configured kind has syncDependencies on

  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json> deleted_;             // key -> last seen Workload
  std::map<std::string, Clock::TimePoint> incrementalRound_;  // key -> current round's start
  struct QuotaRound {
    Clock::TimePoint start;
    std::uint64_t generation = 0;  // capacityGeneration_ when it started
    bool roomNow = false;          // a nominee had room at the last look
    bool startedWithRoom = false;  // the nominee had room when the round started
  };
  std::map<std::string, QuotaRound> quotaRound_;  // key -> the quota-aware dispatcher's round
  std::atomic<std::uint64_t> capacityGeneration_{0};
  std::mutex placementMutex_;                 // the quota-aware decisions, one at a time (see quotaAwareNomination)
  std::map<std::string, long long> written_;  // key -> revision of our last status write
  std::map<std::string, std::string> removedRemotes_;  // "cluster|gvk|key" -> uid we deleted
  // Workload key -> its slots in removedRemotes_: a Workload's last removals are never looked up
  // again, so they go with the Workload (else one entry per finished job, for ever).
  std::map<std::string, std::vector<std::string>> removedSlotsOf_;
  std::mutex checkStatesMutex_;  // its own: the observer is called under it
  OldestPerState checkStates_;   // the running Workloads' states of our check, for the observer
};

}  // namespace mka::multikueue
