#pragma once
// A configured job kind: everything the product decides per kind, built once from the
// configuration (an entry of multiKueue.externalFrameworks, completed by its built-in profile)
// and read by the webhooks, the dispatch loop and the demo. Code that needs a per-kind answer
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
  explicit JobKind(config::ExternalFramework framework);

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

 private:
  config::ExternalFramework framework_;
};

// One JobKind per configured external framework, in configuration order.
std::vector<JobKind> kindsOf(const config::Configuration& configuration);

}  // namespace mka::jobkind
