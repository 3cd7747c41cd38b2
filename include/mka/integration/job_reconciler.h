#pragma once
// The job integration's reconciler for one configured kind (SPEC §7.2): Kueue's jobframework
// loop (KUEUE-JOBFRAMEWORK.md §4.2) driven by the kind's rules. Keyed by job ("ns/name"),
// level-triggered: it creates the job's Workload (or adopts the prebuilt one a MultiKueue
// manager sent), keeps one matching Workload, finishes the Workload when the job finishes,
// starts the job once its Workload is admitted (flavor node labels, tolerations and admission
// checks' podSetUpdates in its pod templates), stops it and restores its templates on eviction
// and then clears the reservation, and releases the Workload when the job goes.
//
// Safety: it never starts a job without an admitted, unevicted Workload that the job controls,
// and never starts a job whose marker says MultiKueue (the dispatch loop runs it elsewhere;
// stricter than Kueue, SPEC §7.2); such a job is suspended, never stopped by a kind's
// irreversible stop rule. Writes go with the read object's resourceVersion, so a stale
// cache costs a 409 and a retry, never a second start; the Workload's name is deterministic and
// AlreadyExists means it was created before, so a restart between two writes duplicates nothing.
//
// Threads: reconcile() on the integration controller's workers, one key at a time per key;
// WorkloadOwners' handlers on the Workload informer's thread.

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/controller/controller.h"
#include "mka/controller/event_recorder.h"
#include "mka/controller/object_reader.h"
#include "mka/integration/key_links.h"
#include "mka/integration/workload_builder.h"
#include "mka/jobkind/job_kind.h"
#include "mka/kube/api_error.h"
#include "mka/kube/client.h"
#include "mka/kube/informer.h"

namespace mka::integration {

using controller::Result;

// Which Workloads each job controls (Kueue's owner index): kept from the Workload informer's
// events, read by the reconciler. Keys are "ns/name" on both sides.
class WorkloadOwners {
 public:
  // The job ("ns/name") `workload` names as its controller when the controller is of `gvk`'s
  // group and kind, else nullopt.
  static std::optional<std::string> controllerOf(const nlohmann::json& workload, const api::GroupVersionKind& gvk);

  void set(const nlohmann::json& workload, const api::GroupVersionKind& gvk);
  void remove(const nlohmann::json& workload);
  std::vector<std::string> workloadsOf(const std::string& jobKey) const;

 private:
  KeyLinks owners_;  // workload key -> its controlling job's key
};

// Which jobs name each Workload as their prebuilt one (kueue.x-k8s.io/prebuilt-workload-name),
// kept from the job informer's events. On a MultiKueue worker the Workload copy and the job
// copy arrive at nearly the same time: a job reconciled before its Workload is in the cache is
// brought back when the Workload arrives, before adoption makes the job its controller (until
// then WorkloadOwners cannot link them). Keys are "ns/name" on both sides.
class PrebuiltNames {
 public:
  // Records the name `job` gives, or forgets it when the job names none any more.
  void set(const nlohmann::json& job);
  void remove(const nlohmann::json& job);
  std::vector<std::string> jobsNaming(const std::string& workloadKey) const;

 private:
  KeyLinks names_;  // job key -> the key of the Workload it names
};

// Counts for /metrics (multikueue_adapter_integration_*), by kind name.
class IntegrationObserver {
 public:
  virtual ~IntegrationObserver() = default;
  virtual void workloadCreated(const std::string& kind) = 0;
  virtual void jobResumed(const std::string& kind) = 0;
  virtual void jobStopped(const std::string& kind) = 0;
  virtual void workloadFinished(const std::string& kind, const std::string& result) = 0;  // Succeeded|Failed
};

class JobReconciler {
 public:
  // All borrowed; `kind` must carry integration rules. `objects` reads this kind's jobs, every
  // Workload, PriorityClass and Namespace; `owners` is kept from the same Workloads' events.
  // `observer` may be null.
  JobReconciler(kube::Client& client, const jobkind::JobKind& kind, const controller::ObjectReader& objects,
                const WorkloadOwners& owners, controller::EventRecorder& events, const Clock& clock,
                IntegrationObserver* observer = nullptr);

  controller::Result reconcile(const std::string& jobKey);

 private:
  struct Ensured;
  controller::Result finalize(const std::string& jobKey);
  Ensured ensureOwn(nlohmann::json& job);
  Ensured ensurePrebuilt(nlohmann::json& job, const std::string& name);
  controller::Result createWorkload(const nlohmann::json& job);
  // Runs `write` (a create or update of `workload` for `job`) unless the API server refused this
  // same Workload before; false when it is not written. A refusal (422) is the job's to fix:
  // one Warning Event naming the job's fields, and no retry until the job changes what its
  // Workload would be.
  bool writeUnlessRefused(const nlohmann::json& job, const nlohmann::json& workload,
                          const std::function<void()>& write);
  void rememberRefusal(const nlohmann::json& job, const nlohmann::json& workload, std::size_t digest,
                       const kube::ApiError& refusal);
  void forgetRefused(const std::string& jobKey);
  controller::Result start(const nlohmann::json& job, const nlohmann::json& workload);
  // Stops a running job and restores its templates from `workload` (may be null); `job` becomes
  // the stopped object. False when it was not running (already suspended or stopped).
  bool stop(nlohmann::json& job, const nlohmann::json* workload, const std::string& reason, const std::string& message);
  // Returns the Workload's resourceVersion after the write.
  std::string finishWorkload(const nlohmann::json& workload, const std::string& reason, const std::string& message);
  void clearReservation(const nlohmann::json& workload);
  // Step 17 (waitForPodsReady on): writes the Workload's PodsReady condition when its status or
  // reason differs from what the job's pods say (job_rules.h podsReadyCondition). Returns
  // whether it wrote.
  bool syncPodsReady(const nlohmann::json& job, const nlohmann::json& workload);
  void removeFinalizer(const nlohmann::json& workload);
  void deleteWorkload(const nlohmann::json& workload);
  // The Workload's pod sets for `job` by the kind's rules; an unreadable rule gets a Warning
  // Event on the job and nullopt.
  std::optional<nlohmann::json> podSetsOrWarn(const nlohmann::json& job);
  bool matches(const nlohmann::json& job, const nlohmann::json& podSets, const nlohmann::json& workload) const;
  // After an eviction handled in step 18: a job whose Workload Kueue deactivated is deleted once
  // the kind's retention has passed (KUEUE-JOBFRAMEWORK §4.2 step 19); until then, a requeue.
  controller::Result afterDeactivation(const nlohmann::json& job, const nlohmann::json& workload,
                                       const nlohmann::json& evicted);
  // Whether the job's namespace is one the kind's namespace selector manages (KUEUE-JOBFRAMEWORK
  // §4.2 step 4); false too when the namespace is not there.
  bool inManagedNamespace(const nlohmann::json& job) const;
  // The Workload's priority for `job` (priority.h) read from the cluster; a missing class is an
  // error (retried with backoff), a missing WorkloadPriorityClass also a Warning on the job.
  Priority priorityFor(const nlohmann::json& job, const nlohmann::json& podSets);
  // Kueue's UpdateWorkloadPriority for the matching Workload: follows a changed label.
  void followPriorityLabel(const nlohmann::json& job, nlohmann::json& workload);
  std::optional<nlohmann::json> cachedWorkload(const std::string& key) const;
  // The job's managedBy marker says MultiKueue: it runs on a worker, never here.
  bool markedForMultiKueue(const nlohmann::json& job) const;
  // Whether the evicted job (its Workload's Evicted condition `evicted`) keeps its reservation
  // while the kind's active rule says its pods run. A job marked for MultiKueue reads a worker's
  // status, copied back while the copies are evicted; but after an eviction by an admission
  // check (MultiKueue's Retry: the worker evicted its copy, or was lost; or a Rejected check)
  // that status may never come back (a lost worker's is frozen), and the worker's own
  // integration holds the worker's quota while pods run there: it is judged without the rule.
  bool byActiveRule(const nlohmann::json& job, const nlohmann::json& evicted) const;

  kube::Client& client_;
  const jobkind::JobKind& kind_;
  const config::IntegratedFramework& rules_;
  const controller::ObjectReader& objects_;
  const WorkloadOwners& owners_;
  controller::EventRecorder& events_;
  const Clock& clock_;
  IntegrationObserver* observer_;
  // By job key, a digest of the Workload the API server refused for it (422): sending the same
  // Workload again would only be refused again. In memory only: after a restart the Workload is
  // sent once more, and refused with one more Warning.
  std::mutex refusedMutex_;
  std::unordered_map<std::string, std::size_t> refused_;
};

}  // namespace mka::integration
