#pragma once
// What the dispatch loop needs from a job kind, as Kueue's MultiKueueAdapter and
// MultiKueueWatcher define it (KUEUE-MULTIKUEUE.md §2.2, §2.5, §2.6, §3.6): whether the
// manager's job is MultiKueue's to dispatch, creating the worker's copy and copying its status
// back, deleting the copy, and which manager Workload a worker's job belongs to. The workload
// reconciler, the cluster registry and the garbage collector reach every job kind through it;
// GenericAdapter (generic_adapter.h) serves every configured kind.
//
// Threads: implementations are immutable and called from any thread.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/jobkind/job_kind.h"
#include "mka/kube/client.h"

namespace mka::multikueue {

// One SyncJob call: the manager's job and the worker's copy as the caller read them.
struct SyncRequest {
  kube::Client& manager;
  kube::Client& remote;
  std::string cluster;              // the worker's name, for messages
  std::string namespace_;           // the job's and its Workload's namespace
  std::string jobName;              // the job's name (its copy has the same)
  std::string workloadName;         // the manager's Workload (the copy's prebuilt-workload link)
  std::string origin;               // the origin label value of our copies
  const nlohmann::json* localJob;   // null: the manager's job is gone
  const nlohmann::json* remoteJob;  // null: no copy on the worker as far as the caller knows
  // Gets one line per dependency not copied (syncDependencies): refused, or the worker's own
  // object used as it is. Null: not wanted.
  std::vector<std::string>* notices = nullptr;
};

enum class SyncOutcome {
  Created,       // the copy was created on the worker
  StatusCopied,  // the copy's status was written to the manager's job
  Unchanged,     // the copy exists (or was created meanwhile) and its status is already copied
  NoLocalJob,    // the manager's job is gone: nothing to create or copy
};

class Adapter {
 public:
  virtual ~Adapter() = default;

  virtual const jobkind::JobKind& kind() const = 0;
  const api::GroupVersionKind& gvk() const { return kind().gvk(); }

  // IsJobManagedByKueue: nullopt when MultiKueue may dispatch `localJob`, else why not (the
  // text after "The owner is not managed by Kueue: ").
  virtual std::optional<std::string> notManaged(const nlohmann::json& localJob) const = 0;
  // SyncJob: creates the worker's copy when there is none, else copies its status to the
  // manager's job; with syncDependencies, first creates or updates the objects the job names
  // there (throws DependencyMissing, dependencies.h, rather than create a copy without them).
  // Throws mka::Error when the worker holds an object of that name that is not ours (no origin
  // label): it is never touched.
  virtual SyncOutcome syncJob(const SyncRequest& request) const = 0;
  // DeleteRemoteObject: deletes the worker's copy (background propagation). Returns false when
  // it was gone already.
  virtual bool deleteRemoteObject(kube::Client& remote, const std::string& namespace_,
                                  const std::string& name) const = 0;
  // WorkloadKeyFor: the manager Workload ("namespace/name") a worker's job belongs to; nullopt
  // when the job carries no link to one.
  virtual std::optional<std::string> workloadKeyFor(const nlohmann::json& remoteJob) const = 0;
  // Why no worker can get a copy of `localJob` (a remoteCopy patch that fails on it), checked
  // before any remote Workload is created; nullopt when a copy can be made.
  virtual std::optional<std::string> copyProblem(const nlohmann::json& localJob) const {
    (void)localJob;
    return std::nullopt;
  }
  // The first Secret, ConfigMap or ServiceAccount `localJob` names that the manager lacks
  // (syncDependencies), checked before any remote Workload is created; nullopt when none.
  virtual std::optional<std::string> missingDependency(kube::Client& manager, const nlohmann::json& localJob) const {
    (void)manager;
    (void)localJob;
    return std::nullopt;
  }
};

// The adapters of the configured kinds, looked up by the kind they serve.
class Adapters {
 public:
  Adapters() = default;
  explicit Adapters(std::vector<std::shared_ptr<const Adapter>> adapters);

  // The adapter for `gvk`, or null when no configured kind matches.
  const Adapter* find(const api::GroupVersionKind& gvk) const;
  const std::vector<std::shared_ptr<const Adapter>>& all() const { return adapters_; }
  bool empty() const { return adapters_.empty(); }

 private:
  std::vector<std::shared_ptr<const Adapter>> adapters_;
};

}  // namespace mka::multikueue
