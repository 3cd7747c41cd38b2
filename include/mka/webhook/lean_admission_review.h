#pragma once
// The fast path of AdmissionReview decoding: reads the common well-formed review with simdjson,
// without a DOM of the whole body, and returns the AdmissionRequest decodeAdmissionReview would
// return, except that `object` and `oldObject` hold only what the decisions read (metadata name,
// namespace, generateName, labels, ownerReferences, the annotations the rules read, and the
// marker and suspend fields of the request's kind with their parents). Anything it does not fully
// understand (malformed JSON, a duplicate key it reads, a mistyped field, an unsupported value,
// an unknown kind's paths) gives nullopt: the caller then decodes with decodeAdmissionReview,
// which words every error, so a bad input is answered by one code path only.
//
// Threads: any; each thread keeps its own parser buffers.

#include <cstddef>
#include <optional>
#include <string_view>

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"

namespace mka::webhook {

// Bodies up to this size are parsed in buffers the thread keeps; larger ones in buffers of
// their own, freed after the request, so that one big object does not pin memory per thread.
inline constexpr std::size_t kLeanReusedBufferBytes = 16 * 1024;

std::optional<AdmissionRequest> decodeLeanAdmissionReview(std::string_view body, const config::Configuration& config);

}  // namespace mka::webhook
