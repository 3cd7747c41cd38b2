#pragma once
// A job's Workload priority as Kueue's ExtractPriority resolves it (KUEUE-JOBFRAMEWORK.md §3.3):
// the WorkloadPriorityClass its kueue.x-k8s.io/priority-class label names; else the
// PriorityClass the first pod set's template names (spec.priorityClassName); else the
// cluster's global-default PriorityClass (the lowest value when several claim it); else no
// class and priority 0. Pure: the caller gives the lookups (GETs and a LIST against the
// cluster). Also which Workloads follow a changed label (Kueue's UpdateWorkloadPriority).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/integration/workload_builder.h"

namespace mka::integration {

struct PriorityLookups {
  // A class by name; nullopt when it does not exist (other read errors are thrown).
  std::function<std::optional<nlohmann::json>(const std::string& name)> workloadPriorityClass;
  std::function<std::optional<nlohmann::json>(const std::string& name)> priorityClass;
  std::function<std::vector<nlohmann::json>()> priorityClasses;  // every PriorityClass
};

// Why no priority could be resolved. `workloadPriorityClass`: the label names a missing
// WorkloadPriorityClass (Kueue warns WorkloadPriorityClassNotFound with `message`); else a pod
// PriorityClass is missing.
struct PriorityNotFound {
  bool workloadPriorityClass = false;
  std::string message;
};

std::variant<Priority, PriorityNotFound> resolvePriority(const nlohmann::json& job, const nlohmann::json& podSets,
                                                         const PriorityLookups& lookups);

// Whether `workload` should take the priority of `job`'s label now: it has no priority or a
// WorkloadPriorityClass-backed one (a pod-PriorityClass-backed Workload never follows the
// label), it did not reserve quota without a priority (the Workload CRD refuses adding a class
// then), and the class it names differs from the label's.
bool followsPriorityLabel(const nlohmann::json& job, const nlohmann::json& workload);

// The Workload's priority as written (class and value; none when it has no spec.priority).
std::optional<Priority> priorityOf(const nlohmann::json& workload);

}  // namespace mka::integration
