#pragma once
// The objects a job needs on the worker that runs it (a kind's syncDependencies): the
// Secrets, ConfigMaps and ServiceAccounts its kind's dependency paths name. They are created on
// the winning worker before the job's copy, labelled with our origin and annotated with the
// manager's Workloads that use them (kDependencyOwnersAnnotation), kept equal to the manager's
// while such a Workload's job runs there, and deleted once none of them has a copy on that
// worker. Everything is read back from the worker's objects, so a restart neither leaks nor
// deletes one still used.
//
// Never copied: a service-account token Secret (the worker's own token controller makes those),
// an object over kMaxDependencyBytes, a name in another namespace. Never touched: an object on
// the worker without our origin label (the worker's own, used as it is).
//
// Threads: pure functions, and I/O functions on the caller's thread.

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/common/errors.h"
#include "mka/jobkind/job_kind.h"
#include "mka/kube/client.h"

namespace mka::multikueue {

// One object a job names.
struct DependencyRef {
  api::GroupVersionKind gvk;  // Secret, ConfigMap or ServiceAccount (core v1)
  std::string name;           // as the job writes it
  std::string path;           // the dependency path it was found at, for messages
  bool operator==(const DependencyRef& other) const { return gvk == other.gvk && name == other.name; }
};

// The objects `job` names at `kind`'s dependency paths, in path order, each once.
std::vector<DependencyRef> dependenciesOf(const nlohmann::json& job, const jobkind::JobKind& kind);

// Why `ref`, read as `object` from the manager for a job in `namespace_`, is never copied;
// nullopt when it may travel. `object` null: only the name is checked (a name with a '/').
std::optional<std::string> dependencyRefusal(const DependencyRef& ref, const nlohmann::json* object,
                                             const std::string& namespace_);

// The manager's Workloads a worker's dependency copy is kept for (kDependencyOwnersAnnotation).
std::set<std::string> dependencyOwners(const nlohmann::json& object);

// The worker's copy of the manager's `local`: kind, name, namespace, labels and annotations
// (kubectl's last-applied one left out) with our origin label and `owners`, and the content
// (a Secret's type, data and immutable; a ConfigMap's data, binaryData and immutable; a
// ServiceAccount's imagePullSecrets and automountServiceAccountToken, not its token Secrets).
nlohmann::json remoteDependency(const nlohmann::json& local, const std::string& origin,
                                const std::set<std::string>& owners);

// Whether the worker's `remote` holds what remoteDependency() would write (content, labels,
// annotations): nothing to update.
bool sameDependency(const nlohmann::json& remote, const nlohmann::json& wanted);

// A dependency named by a job is not on the manager: that job gets no copy anywhere until it is.
class DependencyMissing : public Error {
 public:
  using Error::Error;
};

// Creates or updates on `remote` each dependency of `job` (a job of `kind` in `namespace_`) for
// the manager's Workload `workloadName`, reading each from `manager`. Throws DependencyMissing
// naming the first one the manager lacks (nothing written for it). `notices` gets one line per
// object not copied (refused, or the worker's own used as it is).
void syncDependencies(kube::Client& manager, kube::Client& remote, const std::string& cluster,
                      const nlohmann::json& job, const jobkind::JobKind& kind, const std::string& namespace_,
                      const std::string& workloadName, const std::string& origin, std::vector<std::string>& notices);

// The first dependency of `job` the manager lacks, as a message; nullopt when all are there (or
// refused, which is not the manager's lack).
std::optional<std::string> missingDependency(kube::Client& manager, const nlohmann::json& job,
                                             const jobkind::JobKind& kind, const std::string& namespace_);

// Takes the Workload `workloadName` off the owners of every dependency copy of ours in
// `namespace_` on `remote`, deleting those left with none (conditioned on the version read, so
// a Workload that just took one keeps it). Returns how many were deleted.
std::size_t releaseDependencies(kube::Client& remote, const std::string& namespace_, const std::string& workloadName,
                                const std::string& origin);

// The garbage collector's pass over one worker: every dependency copy of ours whose owners all
// fail `live` ("namespace/workloadName" -> still has a copy on that worker) is deleted, and dead
// owners are dropped from the others. Returns how many were deleted.
std::size_t collectDependencies(kube::Client& remote, const std::string& origin,
                                const std::function<bool(const std::string& workloadKey)>& live);

// The kinds a dependency may be, for listing a worker's copies.
const std::vector<api::GroupVersionKind>& dependencyKinds();

}  // namespace mka::multikueue
