#pragma once
// Status conditions the way apimeta.SetStatusCondition writes them (KUEUE-MULTIKUEUE.md §1.4):
// a condition is rewritten only when its status, reason or message change; lastTransitionTime
// moves only when the status changes; observedGeneration is the object's generation. And the
// one optimistic-concurrency status write every MultiKueue reconciler uses.
//
// Threads: pure functions, and a write on the caller's thread.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/common/clock.h"
#include "mka/kube/api_error.h"
#include "mka/kube/client.h"
#include "mka/multikueue/workload_status.h"  // findCondition

namespace mka::multikueue {

struct Condition {
  std::string type;
  std::string status;  // "True" | "False"
  std::string reason;
  std::string message;
  bool operator==(const Condition&) const = default;
};

// Sets `condition` in object.status.conditions; false (object untouched) when a condition of
// that type already has this status, reason and message.
bool setCondition(nlohmann::json& object, const Condition& condition, Clock::TimePoint now);

// Read-modify-write of an object's status subresource with optimistic concurrency. `current`
// is the object as last read (a cache copy saves a GET); `mutate` changes it and returns false
// when there is nothing to write. The write carries the read resourceVersion, never a blind
// overwrite; on 409 Conflict the object is read again and `mutate` runs again (5 attempts, then
// the conflict propagates). Returns the answer's metadata when it wrote, nullopt when there was
// nothing to write or the object is gone.
std::optional<nlohmann::json> updateStatus(kube::Client& client, const nlohmann::json& current,
                                           const std::function<bool(nlohmann::json&)>& mutate,
                                           std::string_view fieldManager = {});

// Writes `condition` on `current`'s object when it differs from what is stored (updateStatus).
// Returns whether it wrote.
bool writeCondition(kube::Client& client, const nlohmann::json& current, const Condition& condition,
                    const Clock& clock);

// An API error as Kueue's messages show it: the server's message (`multikueueconfigs.kueue.x-k8s.io
// "c1" not found`), without the request our ApiError::what() also names.
std::string apiErrorMessage(const kube::ApiError& error);

}  // namespace mka::multikueue
