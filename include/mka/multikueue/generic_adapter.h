#pragma once
// The generic external-framework adapter (KUEUE-MULTIKUEUE.md §2.4-§2.6, SPEC §5): the
// Adapter of every configured job kind, and its object shaping as pure functions over
// unstructured objects, so that the adapter's I/O and this bookkeeping are tested apart:
// - the remote Workload clone and the remote job copy (marker removed wherever the framework
//   keeps it, origin label, prebuilt-workload link, metadata reduced);
// - the status to copy back from the worker's job (a JSON merge patch, nothing when unchanged);
// - ownership of remote objects by origin, and reading the prebuilt-workload link.
//
// Threads: pure functions; GenericAdapter is immutable.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"
#include "mka/config/configuration.h"
#include "mka/jobkind/job_kind.h"
#include "mka/multikueue/adapter.h"

namespace mka::multikueue {

// How the prebuilt-workload link is written: Kueue >= 0.18 reads the annotation
// (WorkloadIdentifierAnnotations); older workers read only the label, which can hold at most
// 63 characters.
enum class PrebuiltLink {
  Annotation,          // annotation only
  AnnotationAndLabel,  // both when the name fits in a label (our default: any worker version)
};

// The Workload to create on a worker (§2.4): apiVersion, kind, metadata reduced to name,
// namespace, labels and annotations (job-uid label removed, origin label added), the local
// spec, no status. `preemptionGated` (orchestrated preemption): spec.preemptionGates is only
// kueue.x-k8s.io/multikueue, not the manager's own gates.
nlohmann::json remoteWorkload(const nlohmann::json& local, const std::string& origin, bool preemptionGated = false);

// A remoteCopy patch that cannot be applied to one job (a `test` that fails, a `replace` of a
// field the job lacks): no copy is made, never a partial one.
class RemoteCopyError : public Error {
 public:
  using Error::Error;
};

// The job to create on a worker (§2.5): apiVersion, kind, metadata reduced to name, namespace,
// labels and annotations, the local spec; the managedBy marker removed where `kind` keeps
// it; then the kind's remoteCopy removals and patches; origin label and prebuilt-workload link
// (= the Workload's name) added last, so no patch can take them away. Throws RemoteCopyError
// naming the patch operation that failed.
nlohmann::json remoteJob(const nlohmann::json& local, const jobkind::JobKind& kind, const std::string& workloadName,
                         const std::string& origin, PrebuiltLink link = PrebuiltLink::AnnotationAndLabel);

// The JSON merge patch that makes the local job's status equal to the remote's (fields gone
// from the remote are removed locally), or nullopt when there is nothing to send: the remote
// has no status yet, or both are equal already. `exclude`: JSON pointers under status that
// are never copied (remoteStatus.exclude); the manager's job keeps none of them.
std::optional<nlohmann::json> statusPatch(const nlohmann::json& local, const nlohmann::json& remote,
                                          const std::vector<std::string>& exclude = {});

// The Workload a remote job is linked to (annotation first, then label, as Kueue >= 0.18
// reads it); nullopt when neither is set.
std::optional<std::string> prebuiltWorkloadName(const nlohmann::json& job);

// Whether a remote object was created by the manager with `origin` (§2.6). Throws mka::Error
// "multikueue origin is empty" for an empty origin, as Kueue does.
bool ownedByOrigin(const nlohmann::json& object, const std::string& origin);

// Kueue's generic external-framework adapter for one configured kind: the manager's job must
// carry the kind's marker; the copy is remoteJob(); the status goes back as statusPatch(),
// through the status subresource when the kind's CRD has one, else through the main resource
// (Argo's Workflow has none); a worker's job belongs to the Workload its prebuilt-workload link
// names.
class GenericAdapter final : public Adapter {
 public:
  explicit GenericAdapter(jobkind::JobKind kind, PrebuiltLink link = PrebuiltLink::AnnotationAndLabel);

  const jobkind::JobKind& kind() const override { return kind_; }
  std::optional<std::string> notManaged(const nlohmann::json& localJob) const override;
  SyncOutcome syncJob(const SyncRequest& request) const override;
  bool deleteRemoteObject(kube::Client& remote, const std::string& namespace_, const std::string& name) const override;
  std::optional<std::string> workloadKeyFor(const nlohmann::json& remoteJob) const override;
  std::optional<std::string> copyProblem(const nlohmann::json& localJob) const override;
  std::optional<std::string> missingDependency(kube::Client& manager, const nlohmann::json& localJob) const override;

 private:
  jobkind::JobKind kind_;
  PrebuiltLink link_;
};

// A GenericAdapter for every configured kind.
Adapters genericAdapters(const config::Configuration& configuration,
                         PrebuiltLink link = PrebuiltLink::AnnotationAndLabel);

}  // namespace mka::multikueue
