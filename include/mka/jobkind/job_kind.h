#pragma once
// A configured job kind: everything the product decides per kind, built once from the
// configuration (an entry of multiKueue.externalFrameworks and/or integrations.frameworks,
// completed by its built-in profile) and read by the webhooks, the dispatch loop, the job
// integration and the demo. Code that needs a per-kind answer
// asks the JobKind; nothing compares group or kind names.
//
// Threads: immutable after construction; shared freely.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/config/configuration.h"

namespace mka::jobkind {

class JobKind {
 public:
  explicit JobKind(config::ExternalFramework framework,
                   std::optional<config::IntegratedFramework> integration = std::nullopt, bool dispatched = true);

  // As configured: "PipelineRun.v1.tekton.dev".
  const std::string& name() const { return framework_.name; }
  const api::GroupVersionKind& gvk() const { return framework_.gvk; }
  bool is(const api::GroupVersionKind& gvk) const { return framework_.gvk == gvk; }

  // Where the kind keeps its "managed by MultiKueue" marker, and the value that means it.
  const config::ManagedByLocation& managedBy() const { return framework_.managedBy; }
  // The marker as users read it in messages: ".spec.managedBy" or "metadata.labels[<key>]".
  std::string managedByField() const;
  // The marker's value on `job`; nullopt when absent or not a string.
  std::optional<std::string> managedByValue(const nlohmann::json& job) const;
  // Kueue's IsJobManagedByKueue for a MultiKueue job: nullopt when `job` carries the marker
  // with the expected value, else why not, worded as Kueue words it:
  // `Expecting .spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""`.
  std::optional<std::string> notManagedByMultiKueue(const nlohmann::json& job) const;
  // RFC 6902 operations that set the marker on `job` (jobkind::managedByPatch).
  nlohmann::json managedByPatch(const nlohmann::json& job) const;
  // Removes the marker from `job` in place: a worker's copy runs there.
  void removeManagedBy(nlohmann::json& job) const;

  const config::ExternalFramework& framework() const { return framework_; }
  // What the worker's copy leaves out: the built-in profile's fields (a Workflow's
  // /spec/ttlStrategy), then remoteCopy.removeFields; JSON pointers.
  const std::vector<std::string>& remoteCopyRemovals() const { return copyRemovals_; }
  // remoteCopy.patches: RFC 6902 operations applied to the copy after the removals.
  const nlohmann::json& remoteCopyPatches() const { return framework_.remoteCopy.patches; }
  // remoteStatus.exclude: JSON pointers under status that are not copied back to the manager.
  const std::vector<std::string>& remoteStatusExclude() const { return framework_.statusExclude; }
  // syncDependencies: the worker gets the Secrets, ConfigMaps and ServiceAccounts its jobs name.
  bool syncsDependencies() const { return framework_.syncDependencies; }
  // Where its jobs name them: the built-in profile's paths, then dependencies as written; empty
  // unless syncDependencies is on.
  const std::vector<config::DependencyPath>& dependencyPaths() const { return dependencyPaths_; }

  // The job integration's rules (SPEC §7.1) when the kind is listed in integrations.frameworks:
  // our integration controller queues its jobs; nullptr when something else (Kueue, tekton-kueue)
  // does.
  const config::IntegratedFramework* integration() const { return integration_ ? &*integration_ : nullptr; }
  // Listed in multiKueue.externalFrameworks: the dispatch loop sends its jobs to workers.
  bool dispatched() const { return dispatched_; }

 private:
  config::ExternalFramework framework_;
  std::optional<config::IntegratedFramework> integration_;
  bool dispatched_ = true;
  std::vector<std::string> copyRemovals_;
  std::vector<config::DependencyPath> dependencyPaths_;
};

// One JobKind per configured external framework, in configuration order, with its integration
// rules when it is integrated too.
std::vector<JobKind> kindsOf(const config::Configuration& configuration);
// The JobKind of objects of `gvk`: a dispatched kind (with its integration rules when it is
// integrated too) or an integrated one; nullopt when the configuration lists neither.
std::optional<JobKind> kindOf(const config::Configuration& configuration, const api::GroupVersionKind& gvk);
// One JobKind per integrated framework, in configuration order: a kind that is not dispatched
// (a worker's or a single cluster's) gets its marker from its built-in profile, or the default
// spec.managedBy.
std::vector<JobKind> integratedKindsOf(const config::Configuration& configuration);

}  // namespace mka::jobkind
