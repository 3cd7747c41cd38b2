#pragma once
// Random identifiers the API server hands out. Internal to the sandbox module.
//
// Threads: any.

#include <string>

namespace mka::sandbox::detail {

// An RFC 4122 version 4 UUID (metadata.uid, AdmissionReview request uid). Throws ApiError
// 500 when the system cannot supply random bytes.
std::string newUid();

}  // namespace mka::sandbox::detail
