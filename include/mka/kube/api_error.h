#pragma once
// The error a Kubernetes API call ends with, classified the way client-go's
// k8s.io/apimachinery/pkg/api/errors does (IsNotFound, IsConflict, ...), built from the
// metav1.Status the server answered, or from a transport failure.
//
// Threads: a value.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::kube {

enum class Reason {
  NotFound,
  AlreadyExists,
  Conflict,
  Invalid,
  BadRequest,
  Unauthorized,
  Forbidden,
  MethodNotAllowed,
  UnsupportedMediaType,
  Gone,             // 410: watch or continue token too old, relist
  TooManyRequests,  // 429
  Timeout,          // 504, or the server's Timeout reason, or the client's deadline
  Unavailable,      // 503, or the server could not be reached
  Internal,         // 500
  Cancelled,        // the caller asked the call to stop (its std::stop_token): no answer is coming
  Unknown,
};
const char* toString(Reason reason);

class ApiError : public Error {
 public:
  // `what` is "<verb> <path>: <server message>" so logs say which call failed.
  ApiError(Reason reason, int code, std::string message, nlohmann::json status = nullptr);

  // Classifies an HTTP answer: the metav1.Status body when there is one (reason, message,
  // code), else the status code alone.
  static ApiError fromResponse(int httpStatus, const std::string& body, const std::string& what);
  // The server was not reached or the connection broke.
  static ApiError transport(const std::string& what, const std::string& why);

  Reason reason() const noexcept { return reason_; }
  int code() const noexcept { return code_; }  // HTTP status; 0 for a transport failure
  const nlohmann::json& status() const noexcept { return status_; }
  // Seconds the server asked to wait (Retry-After / details.retryAfterSeconds), 0 if none.
  int retryAfterSeconds() const noexcept { return retryAfter_; }
  ApiError withRetryAfter(int seconds) const;

 private:
  Reason reason_;
  int code_;
  nlohmann::json status_;
  int retryAfter_ = 0;
};

inline bool isNotFound(const std::exception& e) {
  auto* a = dynamic_cast<const ApiError*>(&e);
  return a && a->reason() == Reason::NotFound;
}
inline bool isConflict(const std::exception& e) {
  auto* a = dynamic_cast<const ApiError*>(&e);
  return a && a->reason() == Reason::Conflict;
}
inline bool isAlreadyExists(const std::exception& e) {
  auto* a = dynamic_cast<const ApiError*>(&e);
  return a && a->reason() == Reason::AlreadyExists;
}
inline bool isGone(const std::exception& e) {
  auto* a = dynamic_cast<const ApiError*>(&e);
  return a && a->reason() == Reason::Gone;
}
inline bool isCancelled(const std::exception& e) {
  auto* a = dynamic_cast<const ApiError*>(&e);
  return a && a->reason() == Reason::Cancelled;
}
// The cluster has no CRD for the kind (discovery's "no matches for kind"), as opposed to a
// missing object or a failed request.
inline bool isKindNotServed(const std::exception& e) {
  auto* a = dynamic_cast<const ApiError*>(&e);
  return a && a->reason() == Reason::NotFound &&
         std::string_view(e.what()).find("no matches for kind") != std::string_view::npos;
}

}  // namespace mka::kube
