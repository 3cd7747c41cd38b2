#include "mka/kube/api_error.h"

namespace mka::kube {
namespace {

Reason fromStatusReason(const std::string& reason) {
  static const std::pair<const char*, Reason> kReasons[] = {
      {"NotFound", Reason::NotFound},
      {"AlreadyExists", Reason::AlreadyExists},
      {"Conflict", Reason::Conflict},
      {"Invalid", Reason::Invalid},
      {"BadRequest", Reason::BadRequest},
      {"Unauthorized", Reason::Unauthorized},
      {"Forbidden", Reason::Forbidden},
      {"MethodNotAllowed", Reason::MethodNotAllowed},
      {"UnsupportedMediaType", Reason::UnsupportedMediaType},
      {"Gone", Reason::Gone},
      {"Expired", Reason::Gone},  // a too-old resourceVersion: 410 with reason Expired
      {"TooManyRequests", Reason::TooManyRequests},
      {"Timeout", Reason::Timeout},
      {"ServerTimeout", Reason::Timeout},
      {"ServiceUnavailable", Reason::Unavailable},
      {"InternalError", Reason::Internal},
  };
  for (const auto& [name, value] : kReasons)
    if (reason == name) return value;
  return Reason::Unknown;
}

Reason fromCode(int code) {
  switch (code) {
    case 400: return Reason::BadRequest;
    case 401: return Reason::Unauthorized;
    case 403: return Reason::Forbidden;
    case 404: return Reason::NotFound;
    case 405: return Reason::MethodNotAllowed;
    case 409: return Reason::Conflict;
    case 410: return Reason::Gone;
    case 415: return Reason::UnsupportedMediaType;
    case 422: return Reason::Invalid;
    case 429: return Reason::TooManyRequests;
    case 500: return Reason::Internal;
    case 502:
    case 503: return Reason::Unavailable;
    case 504: return Reason::Timeout;
    default: return Reason::Unknown;
  }
}

}  // namespace

const char* toString(Reason reason) {
  switch (reason) {
    case Reason::NotFound: return "NotFound";
    case Reason::AlreadyExists: return "AlreadyExists";
    case Reason::Conflict: return "Conflict";
    case Reason::Invalid: return "Invalid";
    case Reason::BadRequest: return "BadRequest";
    case Reason::Unauthorized: return "Unauthorized";
    case Reason::Forbidden: return "Forbidden";
    case Reason::MethodNotAllowed: return "MethodNotAllowed";
    case Reason::UnsupportedMediaType: return "UnsupportedMediaType";
    case Reason::Gone: return "Gone";
    case Reason::TooManyRequests: return "TooManyRequests";
    case Reason::Timeout: return "Timeout";
    case Reason::Unavailable: return "Unavailable";
    case Reason::Internal: return "Internal";
    case Reason::Cancelled: return "Cancelled";
    case Reason::Unknown: break;
  }
  return "Unknown";
}

ApiError::ApiError(Reason reason, int code, std::string message, nlohmann::json status)
    : Error(std::move(message)), reason_(reason), code_(code), status_(std::move(status)) {
  if (status_.is_object()) {
    const auto details = status_.value("details", nlohmann::json::object());
    if (details.is_object()) retryAfter_ = details.value("retryAfterSeconds", 0);
  }
}

ApiError ApiError::fromResponse(int httpStatus, const std::string& body, const std::string& what) {
  nlohmann::json status = nlohmann::json::parse(body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    const auto reasonText = status.value("reason", "");
    auto reason = fromStatusReason(reasonText);
    if (reason == Reason::Unknown) reason = fromCode(status.value("code", httpStatus));
    const auto message = status.value("message", reasonText);
    return {reason, httpStatus,
            what + ": " + message + " (" + toString(reason) + ", " + std::to_string(httpStatus) + ")",
            std::move(status)};
  }
  std::string excerpt = body.substr(0, 200);
  return {fromCode(httpStatus), httpStatus,
          what + ": the server answered " + std::to_string(httpStatus) + (excerpt.empty() ? "" : ": " + excerpt)};
}

ApiError ApiError::transport(const std::string& what, const std::string& why) {
  return {Reason::Unavailable, 0, what + ": " + why};
}

ApiError ApiError::withRetryAfter(int seconds) const {
  ApiError copy = *this;
  copy.retryAfter_ = seconds;
  return copy;
}

}  // namespace mka::kube
