#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

namespace mka::sandbox::patch {

// RFC 7386. kube-apiserver (evanphx/json-patch) refuses a patch that is not a JSON object
// with 400 "Invalid JSON Patch" rather than replacing the whole object with it.
nlohmann::json mergePatch(const nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_object()) throw ApiError::badRequest("Invalid JSON Patch");
  nlohmann::json out = target.is_object() ? target : nlohmann::json::object();
  out.merge_patch(patch);
  return out;
}

}  // namespace mka::sandbox::patch
