#pragma once
// Who may read /metrics under metricsSecure, as controller-runtime's secure metrics filter
// (filters.WithAuthenticationAndAuthorization) decides it: the request's bearer token goes to a
// TokenReview; the user it names needs "get" on the non-resource URL /metrics, asked by a
// SubjectAccessReview. Answers are kept for a minute per token (a Prometheus scraping every 15
// s asks the cluster four times an hour, not 240), as the delegating authenticator and
// authorizer cache theirs.
//
// Threads: check() from any thread (the metrics server's); the cache is under a mutex.

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "mka/common/clock.h"

namespace mka::kube {
class Client;
}

namespace mka::app {

class MetricsAccess {
 public:
  struct Decision {
    int status = 200;     // 200 allowed, 401 no valid token, 403 not allowed, 500 the reviews failed
    std::string message;  // why, for the answer's body (never the token)
  };

  MetricsAccess(kube::Client& client, const Clock& clock, std::chrono::seconds ttl = std::chrono::seconds{60});

  // `authorization`: the request's Authorization header; `path`: what it asks for.
  Decision check(std::string_view authorization, const std::string& path);

  static constexpr std::size_t kMaxCached = 1024;

 private:
  Decision review(const std::string& token, const std::string& path);

  kube::Client& client_;
  const Clock& clock_;
  std::chrono::seconds ttl_;
  struct Cached {
    Decision decision;
    Clock::TimePoint expires;
  };
  std::mutex mutex_;
  std::unordered_map<std::string, Cached> cache_;  // by path and token
};

}  // namespace mka::app
