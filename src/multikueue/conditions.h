#pragma once
// Status conditions the way apimeta.SetStatusCondition writes them, and the optimistic-
// concurrency status write both MultiKueue reconcilers share (KUEUE-MULTIKUEUE.md §1.4): a
// condition is rewritten only when its status, reason or message change; lastTransitionTime
// moves only when the status changes; observedGeneration is the object's generation.
//
// Threads: pure functions, and a write on the caller's thread.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/kube/api_error.h"
#include "mka/kube/client.h"
#include "mka/kube/gvk.h"
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

// Writes `condition` on the cluster-scoped object `name` through the status subresource when
// it differs from what is stored. `current` is the object as just read (saves a GET); on 409
// Conflict the object is read again and the change re-applied (kube::retryOnConflict). Returns
// whether it wrote; an object that is gone is not an error (false).
bool writeCondition(kube::Client& client, const kube::GroupVersionKind& gvk, const std::string& name,
                    const nlohmann::json& current, const Condition& condition, const Clock& clock);

// An API error as Kueue's messages show it: the server's message (`multikueueconfigs.kueue.x-k8s.io
// "c1" not found`), without the request our ApiError::what() also names.
std::string apiErrorMessage(const kube::ApiError& error);

}  // namespace mka::multikueue
