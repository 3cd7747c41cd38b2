#pragma once
// The Workload the job integration creates for a job of a configured kind, as Kueue's
// jobframework constructs one for a built-in kind (KUEUE-JOBFRAMEWORK.md §3.1, §3.2): its name,
// owner, labels, finalizer, queue name and pod sets from the kind's rules (SPEC §7.1).
//
// Threads: pure functions.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/config/configuration.h"

namespace mka::integration {

// Kueue's name for a job's Workload: "<lower-case kind>-<job name>" cut to maxLength - 6
// characters, "-", and the first 5 hex digits of the SHA-1 of "<Kind>\n<group>\n<job name>\n<job
// uid>". maxLength is 253 with Kueue's ShortWorkloadNames gate off (its default), 63 with it on.
inline constexpr std::size_t kMaxWorkloadNameLength = 253;
inline constexpr std::size_t kShortWorkloadNameLength = 63;
std::string workloadName(const api::GroupVersionKind& gvk, std::string_view jobName, std::string_view jobUid,
                         std::size_t maxLength = kMaxWorkloadNameLength);

// Why a job's rules cannot be evaluated: the field (a dotted path in the job, or an annotation
// key) and what is wrong with it, for the Warning Event the job gets instead of a Workload.
struct RuleError {
  std::string field;
  std::string problem;
  bool operator==(const RuleError&) const = default;
};

// The Workload's spec.podSets for `job` by `framework`'s pod set rules (PodSetsFrom::Rules):
// each count read from its path (its default when the field is absent) or fixed, each pod
// template copied from its path. An error names the first field that cannot be read.
struct PodSetsResult {
  nlohmann::json podSets = nlohmann::json::array();
  std::optional<RuleError> error;
};
PodSetsResult podSetsFromRules(const nlohmann::json& job, const config::IntegratedFramework& framework);

// The annotation with which a job states its pod set's requests itself, replacing what a
// profile computes: a JSON object of resource names to quantities.
inline constexpr std::string_view kPodSetRequestsAnnotation = "multikueue-adapter.dev/pod-set-requests";
// tekton-kueue's per-resource request annotations ("kueue.konflux-ci.dev/requests-cpu: 2").
inline constexpr std::string_view kTektonRequestsPrefix = "kueue.konflux-ci.dev/requests-";
// The synthetic resource every tekton-kueue PipelineRun requests one of.
inline constexpr std::string_view kTektonPipelineRunsResource = "tekton.dev/pipelineruns";

// The Workload's spec.podSets for `job` by `framework`'s PodSetsFrom: the rules; or for the Argo
// Workflow profile one pod set "main", count 1, one container requesting the element-wise
// maximum over the Workflow's pod-running templates (each template's pod request as Kubernetes
// computes it: containers and sidecars summed, init containers maxed); or for the Tekton
// profile one pod set "pod-set-1" as tekton-kueue builds it, with the node selector and
// tolerations of the run's spec.taskRunTemplate.podTemplate (tekton-kueue records none). Either
// profile's pod set records the job's pod fields (PodSetRule::podFieldPaths) that Kueue matches
// flavors against. kPodSetRequestsAnnotation replaces the computed requests of either profile.
// An error names the first field that cannot be read: a rule's, a Workflow template's request
// that is not a quantity, or more pod sets than a Workload holds (api::kMaxPodSets).
PodSetsResult podSetsFor(const nlohmann::json& job, const config::IntegratedFramework& framework);

// The priority the Workload gets (resolvePriority, priority.h): the class it comes from and its
// value; no class (empty name) is Kueue's default priority, 0, with no priorityClassRef.
struct Priority {
  std::string group;  // "kueue.x-k8s.io" or "scheduling.k8s.io"; empty without a class
  std::string kind;   // "WorkloadPriorityClass" or "PriorityClass"; empty without a class
  std::string name;
  std::int32_t value = 0;
  bool operator==(const Priority&) const = default;
};

// The Workload to create for `job` (with `podSets` from podSetsFromRules or a profile):
// Kueue's name, the job's namespace, a controller ownerReference to the job, the job-uid
// label (when the uid is a valid label value), the job's provreq.kueue.x-k8s.io/* annotations
// (ProvisioningRequest parameters), the resource-in-use finalizer, spec.queueName
// from the queue-name label (absent without one), spec.maximumExecutionTimeSeconds from its label when a positive
// integer, spec.priority (with spec.priorityClassRef when it comes from a class) when given,
// and the job's labels of `labelKeysToCopy` that it has (Kueue's integrations.labelKeysToCopy).
nlohmann::json newWorkload(const nlohmann::json& job, const api::GroupVersionKind& gvk, nlohmann::json podSets,
                           const std::optional<Priority>& priority,
                           const std::vector<std::string>& labelKeysToCopy = {});

// Writes `priority` into a Workload's spec: spec.priority, and spec.priorityClassRef when it
// comes from a class (removed otherwise).
void setPriority(nlohmann::json& spec, const Priority& priority);

}  // namespace mka::integration
