#pragma once
// Client-side rate limiting, as client-go does it:
// - TokenBucket: flowcontrol.NewTokenBucketRateLimiter (golang.org/x/time/rate underneath), the
//   per-cluster QPS/burst limit a REST client puts in front of every request so that a busy
//   controller never floods an API server.
// - RateLimiter and its implementations: workqueue's per-item limiters, which decide how long a
//   failed key waits before it is retried (exponential backoff per key, capped by an overall
//   bucket).
//
// Every time comes from an injected Clock; tests pass a FakeClock and advance it instead of
// sleeping.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "mka/common/clock.h"

namespace mka::kube {

// The process-wide real clock, the default wherever a Clock is injected.
const Clock& systemClock();

// A token bucket of `burst` tokens, initially full, refilled at `qps` tokens per second.
// Every call takes one token; a caller that finds the bucket empty either gives up
// (tryAccept), is told how long to wait for its token (reserve), or waits for it (accept).
// Tokens can be reserved ahead: the bucket goes "negative" and later callers queue behind
// earlier ones, which is what makes the limit fair under load (x/time/rate semantics).
//
// Blocking waits measure time with the injected clock. The real clock needs nothing more; a
// FakeClock cannot wake anyone, so a test that advances one calls recheckClock() to make
// blocked accept() calls look at the clock again (they also re-check on their own whenever
// the real-time equivalent of their remaining wait has passed, or every 10 s at most).
//
// Threads: every method may be called from any thread. accept() blocks the calling thread;
// stop() (typically from the owner's shutdown path) releases every blocked caller, a stop
// requested on a caller's token that caller alone.
class TokenBucket {
 public:
  // client-go's rest.Config defaults (rest.DefaultQPS, rest.DefaultBurst).
  static constexpr double kDefaultQps = 5.0;
  static constexpr int kDefaultBurst = 10;

  // `qps` > 0, or +infinity for "no limit" (rate.Inf: every call succeeds at once);
  // `burst` >= 1. Throws std::invalid_argument otherwise. `clock` must outlive the bucket.
  TokenBucket(double qps, int burst, const Clock& clock = systemClock());
  ~TokenBucket();  // stops, then waits for blocked accept() calls to leave
  TokenBucket(const TokenBucket&) = delete;
  TokenBucket& operator=(const TokenBucket&) = delete;

  // Takes a token if one is available now (flowcontrol's TryAccept, rate.Allow).
  bool tryAccept();

  // Takes a token now or in the future and returns how long the caller must wait before using
  // it (zero when one was available). Never blocks and never fails: the caller is committed
  // (rate.Reserve().Delay(); what workqueue's BucketRateLimiter uses).
  std::chrono::nanoseconds reserve();

  // Blocks until a token is available and takes it (flowcontrol's Accept). Returns false,
  // without consuming a token, when stop() is called before then or was called already, or
  // when stop is requested on `caller` (a caller that stops while the bucket goes on for
  // others; rate.Wait with a cancelled context).
  [[nodiscard]] bool accept(std::stop_token caller = {});

  // Like accept(), but returns false at once, consuming nothing, when the token would not be
  // available by `deadline` (rate.Wait with a context deadline).
  [[nodiscard]] bool acceptBefore(Clock::TimePoint deadline);

  // Makes every blocked and future accept()/acceptBefore() return false; their reserved tokens
  // are handed back. tryAccept() and reserve() keep working (they never block). Idempotent.
  void stop();
  bool stopped() const;

  // Wakes blocked accept() calls so they re-read the clock. Only needed after a FakeClock was
  // advanced (see the class comment).
  void recheckClock();

  // Callers blocked in accept()/acceptBefore() right now (tests wait for this to be non-zero
  // before advancing a FakeClock).
  std::size_t waiting() const;

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  struct Reservation {
    bool ok = false;
    Clock::TimePoint timeToAct;
  };

  // rate.Limiter.reserveN for one token; `maxWait` bounds how far ahead a token may be taken.
  Reservation reserveLocked(Clock::TimePoint now, Clock::TimePoint::duration maxWait);
  // rate.Reservation.CancelAt: gives the token back unless later reservations depend on it.
  void cancelLocked(const Reservation& r, Clock::TimePoint now);
  // Tokens available at `now` (capped at burst); `now` earlier than the last update counts as
  // the last update (a clock that went back adds nothing).
  double tokensAt(Clock::TimePoint& now) const;
  bool waitFor(const Reservation& r, std::unique_lock<std::mutex>& lock, const std::stop_token& caller = {});
  bool unlimited() const;

  const double qps_;
  const int burst_;
  const Clock& clock_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // accept(): stop(), recheckClock(), or the waiters left
  double tokens_;
  Clock::TimePoint last_;       // when tokens_ was last brought up to date
  Clock::TimePoint lastEvent_;  // the latest reserved token's time (past or future)
  std::uint64_t clockChecks_ = 0;
  std::size_t waiting_ = 0;
  bool stopped_ = false;
};

// Decides how long a key waits before it is retried (workqueue.RateLimiter). Keys are strings
// ("namespace/name" or anything else). Implementations are safe to call from any thread.
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // Records one more failure of `item` and returns how long it should wait before its retry.
  virtual std::chrono::nanoseconds when(const std::string& item) = 0;
  // Stops tracking `item` (it succeeded, or the caller gave up on it).
  virtual void forget(const std::string& item) = 0;
  // Failures recorded for `item` since it was last forgotten.
  virtual int numRequeues(const std::string& item) = 0;
};

// baseDelay * 2^failures per key, capped at maxDelay (client-go's
// ItemExponentialFailureRateLimiter; 5 ms .. 1000 s in the default controller limiter).
// Threads: any; one mutex guards the failure counts.
class ItemExponentialFailureRateLimiter final : public RateLimiter {
 public:
  static constexpr std::chrono::milliseconds kDefaultBaseDelay{5};
  static constexpr std::chrono::seconds kDefaultMaxDelay{1000};

  // Throws std::invalid_argument when a delay is negative or maxDelay < baseDelay.
  ItemExponentialFailureRateLimiter(std::chrono::nanoseconds baseDelay = kDefaultBaseDelay,
                                    std::chrono::nanoseconds maxDelay = kDefaultMaxDelay);

  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  const std::chrono::nanoseconds baseDelay_;
  const std::chrono::nanoseconds maxDelay_;
  std::mutex mutex_;
  std::unordered_map<std::string, int> failures_;
};

// fastDelay for the first maxFastAttempts failures of a key, slowDelay afterwards (client-go's
// ItemFastSlowRateLimiter). Threads: any; one mutex guards the failure counts.
class ItemFastSlowRateLimiter final : public RateLimiter {
 public:
  // Throws std::invalid_argument when a delay or maxFastAttempts is negative.
  ItemFastSlowRateLimiter(std::chrono::nanoseconds fastDelay, std::chrono::nanoseconds slowDelay, int maxFastAttempts);

  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  const std::chrono::nanoseconds fastDelay_;
  const std::chrono::nanoseconds slowDelay_;
  const int maxFastAttempts_;
  std::mutex mutex_;
  std::unordered_map<std::string, int> failures_;
};

// One token bucket shared by every key: bounds the overall retry rate, whichever keys fail
// (client-go's BucketRateLimiter; 10 qps, burst 100 in the default controller limiter). It
// keeps no per-key state: numRequeues is always 0 and forget does nothing.
// Threads: any (the bucket has its own lock).
class BucketRateLimiter final : public RateLimiter {
 public:
  static constexpr double kDefaultQps = 10.0;
  static constexpr int kDefaultBurst = 100;

  BucketRateLimiter(double qps = kDefaultQps, int burst = kDefaultBurst, const Clock& clock = systemClock());

  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  TokenBucket bucket_;
};

// Asks every limiter and keeps the longest wait and the highest requeue count; forget goes to
// all (client-go's MaxOfRateLimiter). Every limiter is asked on each call, so each one keeps
// counting. Threads: any (each limiter locks for itself).
class MaxOfRateLimiter final : public RateLimiter {
 public:
  // Throws std::invalid_argument when `limiters` is empty or holds a null pointer.
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);

  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// client-go's DefaultControllerRateLimiter: max(per-key exponential 5 ms .. 1000 s,
// overall bucket 10 qps / burst 100).
std::unique_ptr<RateLimiter> defaultControllerRateLimiter(const Clock& clock = systemClock());

}  // namespace mka::kube
