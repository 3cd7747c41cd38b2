#pragma once
// The one optimistic-concurrency status write every reconciler uses, and a condition written
// through it (the condition's rules are api::setCondition's, mka/api/conditions.h).
//
// Threads: each write on the caller's thread.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mka/api/conditions.h"
#include "mka/api/gvk.h"
#include "mka/common/clock.h"
#include "mka/kube/api_error.h"
#include "mka/kube/client.h"

namespace mka::controller {

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
bool writeCondition(kube::Client& client, const nlohmann::json& current, const api::Condition& condition,
                    const Clock& clock);

// An API error as Kueue's messages show it: the server's message (`multikueueconfigs.kueue.x-k8s.io
// "c1" not found`), without the request our ApiError::what() also names.
std::string apiErrorMessage(const kube::ApiError& error);

}  // namespace mka::controller
