#pragma once
// Reading and changing the parts of a Kueue Workload's status the controllers use (its
// conditions, admission-check states, clusterName, nominatedClusterNames), as pure functions on
// the JSON object, so the reconcilers' decisions are tested apart from their I/O. The readers
// are WorkloadView's (mka/api/views.h), for callers that hold the JSON. Setters follow
// Kubernetes' meta.SetStatusCondition rules (mka/api/conditions.h): lastTransitionTime changes
// only when the state changes; they return whether anything changed.
//
// Threads: pure functions.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/conditions.h"
#include "mka/common/clock.h"

namespace mka::api {

// Workload predicates.
bool isFinished(const nlohmann::json& workload);           // Finished=True
bool hasQuotaReservation(const nlohmann::json& workload);  // QuotaReserved=True
bool isAdmitted(const nlohmann::json& workload);           // Admitted=True
bool isEvicted(const nlohmann::json& workload);            // Evicted=True

// status.admissionChecks[name == check], or nullptr.
const nlohmann::json* findCheckState(const nlohmann::json& workload, std::string_view check);
// Sets the entry's state and message (cut to 32 KiB); lastTransitionTime only on a state change.
bool setCheckState(nlohmann::json& workload, std::string_view check, std::string_view state, std::string_view message,
                   Clock::TimePoint now);
// `message` + `, Previously: "<old state>"`, as Kueue's check-state helper writes it.
std::string withPreviousState(std::string_view message, std::string_view oldState);

// Whether a remote copy's spec still equals the manager's (KUEUE-MULTIKUEUE.md §2.3 step 5),
// preemption gates (the worker's business) and `active` (which the worker writes when it
// deactivates a copy) aside. A missing spec, or one that is not an object, reads as empty.
bool sameSpecAsCopy(const nlohmann::json& local, const nlohmann::json& remote);

std::string clusterName(const nlohmann::json& workload);  // "" when unset
std::vector<std::string> nominatedClusters(const nlohmann::json& workload);
// Sets status.nominatedClusterNames (removed when empty).
bool setNominatedClusters(nlohmann::json& workload, const std::vector<std::string>& clusters);

}  // namespace mka::api
