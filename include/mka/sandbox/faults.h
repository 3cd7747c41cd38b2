#pragma once
// Fault injection for one emulated cluster, consulted by its HTTP layer on every request:
// fail the next N matching requests with a status code, add latency, drop every open watch,
// answer 410 Gone to the next watch, make the cluster unreachable (connections refused/reset)
// and bring it back on the same port.
//
// Threads: any thread may arm faults; request threads consult them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mka::sandbox {

struct FaultMatch {
  std::string verb;      // "" = any; get|list|watch|create|update|patch|delete
  std::string resource;  // "" = any; plural, e.g. "workloads"
  std::string subresource;  // "" = any (use "status" to hit only status writes)
};

class FaultInjector {
 public:
  // The next `count` requests matching `match` fail with `code` (e.g. 500, 503, 429) and a
  // metav1.Status naming the injected fault; 429 carries Retry-After: `retryAfterSeconds`.
  void failNext(int count, int code, FaultMatch match = {}, int retryAfterSeconds = 1);
  void setLatency(std::chrono::milliseconds latency);  // added to every request
  void goneOnNextWatch();                              // next watch request -> 410 Expired
  void clear();

  struct Decision {
    std::optional<int> failWith;  // status code to answer with instead of serving
    int retryAfterSeconds = 0;
    std::chrono::milliseconds latency{0};
    bool gone = false;
  };
  Decision onRequest(const std::string& verb, const std::string& resource, const std::string& subresource);
  std::uint64_t injectedFailures() const;

 private:
  struct Rule {
    int remaining;
    int code;
    FaultMatch match;
    int retryAfterSeconds;
  };
  mutable std::mutex mutex_;
  std::vector<Rule> rules_;
  std::chrono::milliseconds latency_{0};
  bool goneOnNextWatch_ = false;
  std::uint64_t injected_ = 0;
};

}  // namespace mka::sandbox
