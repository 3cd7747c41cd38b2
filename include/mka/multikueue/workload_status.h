#pragma once
// Reading and changing the parts of a Workload's status the dispatch loop uses (conditions,
// admission-check states, clusterName, nominatedClusterNames), as pure functions on the JSON
// object, so the reconciler's decisions are tested apart from its I/O. Setters follow
// Kubernetes' meta.SetStatusCondition rules: lastTransitionTime changes only when the status
// (or, for checks, the state) changes; they return whether anything changed.
//
// Threads: pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"

namespace mka::multikueue {

// The condition of `type` in object.status.conditions, or nullptr.
const nlohmann::json* findCondition(const nlohmann::json& object, std::string_view type);
bool conditionIsTrue(const nlohmann::json& object, std::string_view type);
// Sets status.conditions[type]; observedGeneration is the object's metadata.generation.
bool setCondition(nlohmann::json& object, std::string_view type, bool status, std::string_view reason,
                  std::string_view message, Clock::TimePoint now);

// A condition's lastTransitionTime (the epoch when missing or unreadable).
Clock::TimePoint transitionTime(const nlohmann::json& condition);

// Workload predicates.
bool isFinished(const nlohmann::json& workload);           // Finished=True
bool hasQuotaReservation(const nlohmann::json& workload);  // QuotaReserved=True
bool isAdmitted(const nlohmann::json& workload);           // Admitted=True
bool isEvicted(const nlohmann::json& workload);            // Evicted=True
bool isTerminating(const nlohmann::json& object);          // metadata.deletionTimestamp set

// status.admissionChecks[name == check], or nullptr.
const nlohmann::json* findCheckState(const nlohmann::json& workload, std::string_view check);
// Sets the entry's state and message (cut to 32 KiB); lastTransitionTime only on a state change.
bool setCheckState(nlohmann::json& workload, std::string_view check, std::string_view state, std::string_view message,
                   Clock::TimePoint now);
// `message` + `, Previously: "<old state>"`, as Kueue's check-state helper writes it.
std::string withPreviousState(std::string_view message, std::string_view oldState);

// Whether a remote copy's spec still equals the manager's (§2.3 step 5), preemption gates
// (the worker's business) and `active` (which the worker writes when it deactivates a copy)
// aside. A missing spec, or one that is not an object, reads as empty.
bool sameSpecAsCopy(const nlohmann::json& local, const nlohmann::json& remote);

std::string clusterName(const nlohmann::json& workload);  // "" when unset
std::vector<std::string> nominatedClusters(const nlohmann::json& workload);
// Sets status.nominatedClusterNames (removed when empty).
bool setNominatedClusters(nlohmann::json& workload, const std::vector<std::string>& clusters);

// Kueue's truncation of condition and check messages: at most 32 KiB, the last 4 bytes " ...".
std::string truncateMessage(std::string_view message, std::size_t limit);

}  // namespace mka::multikueue
