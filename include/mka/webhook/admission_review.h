#pragma once
// AdmissionReview (admission.k8s.io/v1, and v1beta1 which has the same shape) decoding and
// encoding. Decoding is strict about what we rely on and says exactly what is wrong.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/common/errors.h"

namespace mka::webhook {

inline constexpr std::string_view kAdmissionV1 = "admission.k8s.io/v1";
inline constexpr std::string_view kAdmissionV1beta1 = "admission.k8s.io/v1beta1";
// Deeper JSON is refused before anything walks it: real objects nest a few dozen levels, and
// recursive JSON operations must not be able to exhaust a server thread's stack.
inline constexpr std::size_t kMaxJsonDepth = 512;

// The body is not an AdmissionReview we can answer; the message names the field, e.g.
// "request.uid: required: send an AdmissionReview with request.uid set".
class BadRequest : public Error {
 public:
  using Error::Error;
};

struct AdmissionRequest {
  std::string apiVersion;  // of the AdmissionReview, echoed in the response
  std::string uid;
  api::GroupVersionKind kind;  // request.kind (after matchPolicy conversion)
  std::string resource;        // request.resource.resource, e.g. "pipelineruns"
  std::string subResource;
  std::string operation;  // CREATE | UPDATE | DELETE | CONNECT
  std::string name;       // may be empty on CREATE with generateName
  std::string namespace_;
  bool dryRun = false;
  nlohmann::json object;     // null on DELETE
  nlohmann::json oldObject;  // null on CREATE

  // "<ns>/<name>" for messages; uses generateName + "*" when name is not yet set.
  std::string objectKey() const;
  // The request's namespace, else the object's (or the old object's) metadata.namespace.
  std::string objectNamespace() const;
};

struct AdmissionStatus {
  int code = 403;
  std::string reason = "Forbidden";
  std::string message;
};

struct AdmissionResponse {
  bool allowed = true;
  std::optional<AdmissionStatus> status;  // set when denied
  std::optional<nlohmann::json> patch;    // RFC 6902 operations; encoded as base64 JSONPatch
  std::vector<std::string> warnings;

  static AdmissionResponse allow() { return {}; }
  static AdmissionResponse deny(std::string message, int code = 403, std::string reason = "Forbidden");
};

// Throws BadRequest.
AdmissionRequest decodeAdmissionReview(std::string_view body);
// Returns the AdmissionReview JSON text answering `request`.
std::string encodeAdmissionReview(const AdmissionRequest& request, const AdmissionResponse& response);
// The same answer built as a DOM and serialized, bytes that are not UTF-8 replaced: what
// encodeAdmissionReview falls back to for such bytes, and the reference its tests compare with.
std::string encodeAdmissionReviewThroughDom(const AdmissionRequest& request, const AdmissionResponse& response);

}  // namespace mka::webhook
