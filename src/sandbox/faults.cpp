#include "mka/sandbox/faults.h"

#include "mka/common/errors.h"

namespace mka::sandbox {
namespace {

bool matches(const FaultMatch& match, const std::string& verb, const std::string& resource,
             const std::string& subresource, const std::string& userAgent) {
  return (match.verb.empty() || match.verb == verb) && (match.resource.empty() || match.resource == resource) &&
         (match.subresource.empty() || match.subresource == subresource) &&
         (match.userAgent.empty() || userAgent.find(match.userAgent) != std::string::npos);
}

}  // namespace

void FaultInjector::failNext(int count, int code, FaultMatch match, int retryAfterSeconds) {
  if (count < 1) {
    throw Error("fault injection: failNext(count=" + std::to_string(count) +
                "): count must be at least 1; use clear() to disarm");
  }
  if (code < 400 || code > 599) {
    throw Error("fault injection: failNext(code=" + std::to_string(code) +
                "): the code must be an HTTP error status (400-599), e.g. 500, 503 or 429");
  }
  if (retryAfterSeconds < 0) {
    throw Error("fault injection: failNext(retryAfterSeconds=" + std::to_string(retryAfterSeconds) +
                "): must not be negative");
  }
  std::lock_guard lock(mutex_);
  rules_.push_back(Rule{count, code, std::move(match), retryAfterSeconds});
}

void FaultInjector::setLatency(std::chrono::milliseconds latency) {
  {
    std::lock_guard lock(mutex_);
    latency_ = latency < std::chrono::milliseconds{0} ? std::chrono::milliseconds{0} : latency;
  }
  changed_.notify_all();
}

void FaultInjector::hang(FaultMatch match) {
  std::lock_guard lock(mutex_);
  hangs_.push_back(std::move(match));
}

void FaultInjector::hold() {
  std::unique_lock lock(mutex_);
  const std::uint64_t epoch = cancelEpoch_;
  ++delayed_;
  changed_.wait(lock, [&] { return hangs_.empty() || cancelEpoch_ != epoch; });
  --delayed_;
}

void FaultInjector::goneOnNextWatch() {
  std::lock_guard lock(mutex_);
  goneOnNextWatch_ = true;
}

void FaultInjector::clear() {
  {
    std::lock_guard lock(mutex_);
    rules_.clear();
    hangs_.clear();
    latency_ = std::chrono::milliseconds{0};
    goneOnNextWatch_ = false;
  }
  changed_.notify_all();
}

FaultInjector::Decision FaultInjector::onRequest(const std::string& verb, const std::string& resource,
                                                 const std::string& subresource, const std::string& userAgent) {
  std::lock_guard lock(mutex_);
  Decision decision;
  decision.latency = latency_;
  if (resource.empty()) return decision;  // discovery, /version, health: latency only
  for (const auto& match : hangs_)
    if (matches(match, verb, resource, subresource, userAgent)) decision.hang = true;
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (!matches(it->match, verb, resource, subresource, userAgent)) continue;
    decision.failWith = it->code;
    decision.retryAfterSeconds = it->code == 429 ? it->retryAfterSeconds : 0;
    if (--it->remaining <= 0) rules_.erase(it);
    ++injected_;
    return decision;
  }
  if (verb == "watch" && goneOnNextWatch_) {
    goneOnNextWatch_ = false;
    decision.gone = true;
    ++injected_;
  }
  return decision;
}

void FaultInjector::delay(std::chrono::steady_clock::time_point arrived) {
  std::unique_lock lock(mutex_);
  if (latency_.count() <= 0) return;
  const std::uint64_t epoch = cancelEpoch_;
  ++delayed_;
  for (;;) {
    if (cancelEpoch_ != epoch) break;
    const auto until = arrived + latency_;
    if (std::chrono::steady_clock::now() >= until) break;
    changed_.wait_until(lock, until);
  }
  --delayed_;
}

void FaultInjector::cancelDelays() {
  {
    std::lock_guard lock(mutex_);
    ++cancelEpoch_;
  }
  changed_.notify_all();
}

std::uint64_t FaultInjector::injectedFailures() const {
  std::lock_guard lock(mutex_);
  return injected_;
}

std::size_t FaultInjector::delayedRequests() const {
  std::lock_guard lock(mutex_);
  return delayed_;
}

std::string statusReasonFor(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "";
  }
}

}  // namespace mka::sandbox
