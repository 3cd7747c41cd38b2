#pragma once
// A job read and changed by its kind's integration rules (SPEC §7.1), as Kueue's GenericJob
// methods read and change a built-in kind (KUEUE-JOBFRAMEWORK.md §2, §4.3, §4.4): whether it is
// suspended, finished or active; the job started with the pod set infos an admission gives
// (api/pod_set_info.h: flavor node labels and tolerations, admission checks' podSetUpdates) and
// stopped with its pod templates restored.
//
// Threads: pure functions.

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/pod_set_info.h"
#include "mka/config/configuration.h"

namespace mka::integration {

// The suspend rule's field holds its value.
bool isSuspended(const nlohmann::json& job, const config::IntegratedFramework& framework);

struct Finished {
  bool succeeded = false;
  std::string message;
  bool operator==(const Finished&) const = default;
};
// By the finished rule: a condition True (succeeded) or False (failed), or a phase in one of
// the lists; nullopt while running or when the kind has no finished rule.
std::optional<Finished> finished(const nlohmann::json& job, const config::IntegratedFramework& framework);

// Kueue's IsActive for a configured kind: whether the job's pods may still run, by the active
// rule (a condition, a phase, or pods listed in the job's status); without one, while the job
// is neither suspended nor finished.
bool isActive(const nlohmann::json& job, const config::IntegratedFramework& framework);

// Kueue's PodsReady for a configured kind: the job is finished, or its podsReady rule holds;
// false without a rule.
bool podsReady(const nlohmann::json& job, const config::IntegratedFramework& framework);

// The Workload's PodsReady condition as Kueue's jobframework computes it (KUEUE-JOBFRAMEWORK.md
// §1.3, step 17) from the Workload as it is and whether the job's pods are ready: not admitted,
// False/WaitForStart; ready, True/Started (True/Recovered after a recovery); not ready
// once it has been ready, False/WaitForRecovery; else False/WaitForStart. Kueue's reasons and
// messages.
struct PodsReadyCondition {
  bool status = false;
  std::string reason;
  std::string message;
  bool operator==(const PodsReadyCondition&) const = default;
};
PodsReadyCondition podsReadyCondition(const nlohmann::json& workload, bool ready);

// `job` started (Kueue's RunWithPodSetsInfo): the suspend field removed and each pod set's
// fields (PodSetRule::podFieldPaths) given its info's labels, annotations, node selector and
// tolerations; a pod set with no such fields takes no infos. Under PodFieldPaths::specImmutable
// a field below spec is not written: a value there that conflicts with the info's is an error as
// anywhere, and one the field lacks is an error too, unless the kind's children take the node
// selector and tolerations (IntegratedFramework::children: the /mutate-children webhook gives
// them to each child the job's controller creates). A string is the error: a count of infos
// other than the pod sets', a value that conflicts with the job's own, or a value a fixed field
// lacks that no child takes.
std::variant<nlohmann::json, std::string> started(const nlohmann::json& job,
                                                  const config::IntegratedFramework& framework,
                                                  const std::vector<api::PodSetInfo>& infos);

// `job` stopped (Kueue's Suspend + RestorePodSetsInfo): the stop rule's value written and each
// pod set's fields given back the labels, annotations, node selector and tolerations of the
// Workload's pod set of the same name (`workloadPodSets`, the templates as the Workload was
// created); without them the fields are left as they are, and so are those of a pod set under
// PodFieldPaths::specImmutable (only the stop rule's field is written).
nlohmann::json stopped(const nlohmann::json& job, const config::IntegratedFramework& framework,
                       const nlohmann::json& workloadPodSets);

}  // namespace mka::integration
