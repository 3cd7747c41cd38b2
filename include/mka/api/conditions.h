#pragma once
// Status conditions as Kubernetes' apimachinery reads and writes them (meta.FindStatusCondition,
// meta.SetStatusCondition; KUEUE-MULTIKUEUE.md §1.4), as pure functions on an object's JSON:
// a condition is rewritten only when its status, reason or message change; lastTransitionTime
// moves only when the status changes; observedGeneration is the object's generation. Every
// controller writes conditions through these, Kueue's objects and ours alike.
//
// Threads: pure functions.

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"

namespace mka::api {

struct Condition {
  std::string type;
  std::string status;  // "True" | "False"
  std::string reason;
  std::string message;
  bool operator==(const Condition&) const = default;
};

// Condition and admission-check messages are cut to 32 KiB, the last 4 bytes becoming " ..."
// (Kueue's truncation).
inline constexpr std::size_t kMaxConditionMessage = 32 * 1024;

// The condition of `type` in object.status.conditions, or nullptr.
const nlohmann::json* findCondition(const nlohmann::json& object, std::string_view type);
bool conditionIsTrue(const nlohmann::json& object, std::string_view type);
// Sets status.conditions[type]; observedGeneration is the object's metadata.generation.
bool setCondition(nlohmann::json& object, std::string_view type, bool status, std::string_view reason,
                  std::string_view message, Clock::TimePoint now);
// Sets `condition` in object.status.conditions; false (object untouched) when a condition of
// that type already has this status, reason and message.
bool setCondition(nlohmann::json& object, const Condition& condition, Clock::TimePoint now);

// A condition's lastTransitionTime (the epoch when missing or unreadable).
Clock::TimePoint transitionTime(const nlohmann::json& condition);

// metadata.deletionTimestamp is set.
bool isTerminating(const nlohmann::json& object);

// Kueue's truncation of condition and check messages: at most `limit` bytes, the last 4 " ...".
std::string truncateMessage(std::string_view message, std::size_t limit);

}  // namespace mka::api
