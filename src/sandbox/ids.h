#pragma once
// Random identifiers the API server hands out. Internal to the sandbox module.
//
// Threads: any.

#include <string>

namespace mka::sandbox::detail {

// An RFC 4122 version 4 UUID (metadata.uid, AdmissionReview request uid). Throws ApiError
// 500 when the system cannot supply random bytes.
std::string newUid();
// 32 random bytes as 64 hex digits: a bearer token (a cluster's own, a ServiceAccount's). Throws
// mka::Error naming `what` when the system cannot supply random bytes.
std::string newToken(const std::string& what);

}  // namespace mka::sandbox::detail
