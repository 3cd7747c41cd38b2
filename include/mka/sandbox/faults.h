#pragma once
// Fault injection for one emulated cluster, consulted by its HTTP layer on every request:
// fail the next N matching requests with a status code, add latency, drop every open watch,
// answer 410 Gone to the next watch, make the cluster unreachable (connections refused/reset)
// and bring it back on the same port. (Dropping watches and unreachability act on the store
// and the listener: Cluster::faults() arms what lives here, ObjectStore::closeAllWatches() and
// Cluster::setUnreachable() do the rest.)
//
// Threads: any thread may arm faults; request threads consult them (one mutex inside).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mka::sandbox {

struct FaultMatch {
  std::string verb;         // "" = any; get|list|watch|create|update|patch|delete|deletecollection
  std::string resource;     // "" = any; plural, e.g. "workloads"
  std::string subresource;  // "" = any (use "status" to hit only status writes)
  // "" = any; else a part of the request's User-Agent: one client among several that share a
  // token, e.g. one replica of the adapter by its leader-election identity.
  std::string userAgent;
};

class FaultInjector {
 public:
  // The next `count` requests matching `match` fail with `code` (e.g. 500, 503, 429) and a
  // metav1.Status naming the injected fault; 429 carries Retry-After: `retryAfterSeconds`.
  // Only resource requests match (not discovery, /version, /openapi or the health checks).
  // Rules are consulted in the order they were armed; a request consumes one count of the
  // first rule it matches. Throws mka::Error when count < 1 or code is not 400-599.
  void failNext(int count, int code, FaultMatch match = {}, int retryAfterSeconds = 1);
  // Added to every request (health checks included) before it is served. Changing it
  // re-times the requests waiting now: setLatency(0) releases them at once.
  void setLatency(std::chrono::milliseconds latency);
  // Every request matching `match` from now on hangs (no answer) until clear() or
  // cancelDelays(): an API server that accepts the connection and never answers.
  void hang(FaultMatch match);
  void goneOnNextWatch();  // the next watch request gets 410 Expired (an ERROR event)
  void clear();            // disarms everything and releases delayed requests

  struct Decision {
    std::optional<int> failWith;  // status code to answer with instead of serving
    int retryAfterSeconds = 0;
    std::chrono::milliseconds latency{0};
    bool gone = false;  // a watch request: answer 410 Expired
    bool hang = false;  // hold it in hold() before serving
  };
  // Decides the fate of one request and consumes what it triggers (a failure count, the armed
  // 410). `resource` "" marks a non-resource request (discovery, /version, ...).
  Decision onRequest(const std::string& verb, const std::string& resource, const std::string& subresource,
                     const std::string& userAgent = "");

  // Blocks the calling request thread until `arrived` + the current latency, re-evaluated
  // whenever the latency changes, or until cancelDelays(). Returns at once without latency.
  void delay(std::chrono::steady_clock::time_point arrived);
  // Blocks the calling request thread while a hang() rule stands, or until cancelDelays().
  void hold();
  // Releases every request blocked in delay() now (server stop, cluster unreachable).
  void cancelDelays();

  std::uint64_t injectedFailures() const;  // failures and 410s injected so far
  std::size_t delayedRequests() const;     // requests blocked in delay() right now

 private:
  struct Rule {
    int remaining;
    int code;
    FaultMatch match;
    int retryAfterSeconds;
  };
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // latency changed or delays cancelled
  std::vector<Rule> rules_;
  std::vector<FaultMatch> hangs_;
  std::chrono::milliseconds latency_{0};
  bool goneOnNextWatch_ = false;
  std::uint64_t injected_ = 0;
  std::size_t delayed_ = 0;
  std::uint64_t cancelEpoch_ = 0;
};

// kube-apiserver's Status reason for an HTTP status code (500 -> "InternalError",
// 503 -> "ServiceUnavailable", 429 -> "TooManyRequests", ...); "" when it has none.
std::string statusReasonFor(int code);

}  // namespace mka::sandbox
