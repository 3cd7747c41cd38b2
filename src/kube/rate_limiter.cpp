#include "mka/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace mka::kube {
namespace {

using std::chrono::nanoseconds;

// Even a waiter whose clock never wakes it (a FakeClock nobody rechecks, a wall clock that
// jumped) looks again this often; client-go's delaying queue uses the same bound.
constexpr std::chrono::seconds kMaxWait{10};

std::string number(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

std::string millis(nanoseconds d) { return number(static_cast<double>(d.count()) / 1e6) + "ms"; }

// x/time/rate's Limit.durationFromTokens: how long `qps` takes to produce `tokens`.
Clock::TimePoint::duration durationFromTokens(double qps, double tokens) {
  const double ns = tokens * 1e9 / qps;
  if (ns >= static_cast<double>(std::numeric_limits<Clock::TimePoint::duration::rep>::max()))
    return Clock::TimePoint::duration::max();
  return std::chrono::duration_cast<Clock::TimePoint::duration>(nanoseconds{static_cast<nanoseconds::rep>(ns)});
}

// x/time/rate's Limit.tokensFromDuration, splitting seconds from the rest as Go does to keep
// rounding errors small.
double tokensFromDuration(double qps, Clock::TimePoint::duration d) {
  const auto ns = std::chrono::duration_cast<nanoseconds>(d).count();
  const double sec = static_cast<double>(ns / 1'000'000'000) * qps;
  const double rest = static_cast<double>(ns % 1'000'000'000) * qps;
  return sec + rest / 1e9;
}

// `now + d` without overflowing past the clock's range.
Clock::TimePoint saturatingAdd(Clock::TimePoint now, Clock::TimePoint::duration d) {
  if (d > Clock::TimePoint::max() - now) return Clock::TimePoint::max();
  return now + d;
}

}  // namespace

const Clock& systemClock() {
  static const SystemClock clock;
  return clock;
}

// ---------------------------------------------------------------------------------------------
// TokenBucket

TokenBucket::TokenBucket(double qps, int burst, const Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), tokens_(burst), last_(clock.now()), lastEvent_(last_) {
  if (!(qps > 0)) {  // also rejects NaN
    throw std::invalid_argument("token bucket: qps must be greater than 0, got " + number(qps) +
                                ": use a positive rate (client-go's default is 5), or infinity for no limit");
  }
  if (burst < 1) {
    throw std::invalid_argument("token bucket: burst must be at least 1, got " + std::to_string(burst) +
                                ": a burst of 0 would refuse every request (client-go's default is 10)");
  }
}

TokenBucket::~TokenBucket() {
  std::unique_lock lock(mutex_);
  stopped_ = true;
  wake_.notify_all();
  wake_.wait(lock, [this] { return waiting_ == 0; });
}

bool TokenBucket::unlimited() const { return std::isinf(qps_); }

double TokenBucket::tokensAt(Clock::TimePoint& now) const {
  if (now < last_) now = last_;
  // Cap the elapsed time before converting, so a bucket idle for years cannot overflow.
  const auto elapsed = std::min(now - last_, durationFromTokens(qps_, burst_ - tokens_));
  return std::min(tokens_ + tokensFromDuration(qps_, elapsed), static_cast<double>(burst_));
}

TokenBucket::Reservation TokenBucket::reserveLocked(Clock::TimePoint now, Clock::TimePoint::duration maxWait) {
  if (unlimited()) return {true, now};
  double tokens = tokensAt(now) - 1;
  Clock::TimePoint::duration wait{0};
  if (tokens < 0) wait = durationFromTokens(qps_, -tokens);
  if (wait > maxWait) {
    return {};  // nothing taken; time has not been brought forward either (as x/time/rate)
  }
  tokens_ = tokens;
  last_ = now;
  lastEvent_ = saturatingAdd(now, wait);
  return {true, lastEvent_};
}

void TokenBucket::cancelLocked(const Reservation& r, Clock::TimePoint now) {
  if (!r.ok || unlimited() || r.timeToAct < now) return;
  // Tokens reserved after this one (between its time and lastEvent_) stay taken: their holders
  // already computed their waits from them.
  const double restore = 1 - tokensFromDuration(qps_, lastEvent_ - r.timeToAct);
  if (restore <= 0) return;
  const double tokens = tokensAt(now) + restore;
  last_ = now;
  tokens_ = std::min(tokens, static_cast<double>(burst_));
  if (r.timeToAct == lastEvent_) {
    const auto previous = r.timeToAct - durationFromTokens(qps_, 1);
    if (previous >= now) lastEvent_ = previous;
  }
}

bool TokenBucket::tryAccept() {
  std::lock_guard lock(mutex_);
  return reserveLocked(clock_.now(), Clock::TimePoint::duration::zero()).ok;
}

std::chrono::nanoseconds TokenBucket::reserve() {
  std::lock_guard lock(mutex_);
  const auto now = clock_.now();
  const auto r = reserveLocked(now, Clock::TimePoint::duration::max());
  return std::chrono::duration_cast<nanoseconds>(std::max(r.timeToAct - now, Clock::TimePoint::duration::zero()));
}

bool TokenBucket::accept(std::stop_token caller) {
  // Notified under the lock, so that a stop between a waiter's check and its wait is not
  // missed. Made before the lock is taken: a stop requested already runs it here, at once.
  std::stop_callback wake(caller, [this] {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  });
  std::unique_lock lock(mutex_);
  if (stopped_ || caller.stop_requested()) return false;
  const auto r = reserveLocked(clock_.now(), Clock::TimePoint::duration::max());
  return waitFor(r, lock, caller);
}

bool TokenBucket::acceptBefore(Clock::TimePoint deadline) {
  std::unique_lock lock(mutex_);
  if (stopped_) return false;
  const auto now = clock_.now();
  if (deadline < now) return false;
  const auto r = reserveLocked(now, deadline - now);
  if (!r.ok) return false;
  return waitFor(r, lock);
}

bool TokenBucket::waitFor(const Reservation& r, std::unique_lock<std::mutex>& lock, const std::stop_token& caller) {
  ++waiting_;
  bool acquired = true;
  for (;;) {
    const auto now = clock_.now();
    if (stopped_ || caller.stop_requested()) {
      cancelLocked(r, now);
      acquired = false;
      break;
    }
    if (now >= r.timeToAct) break;
    // The clock is read under the lock and recheckClock() takes it, so an advance followed by
    // recheckClock() is never missed: either this read sees it or the wait below is woken.
    const auto seen = clockChecks_;
    const auto realWait = std::min<Clock::TimePoint::duration>(r.timeToAct - now, kMaxWait);
    wake_.wait_for(lock, realWait, [&] { return stopped_ || caller.stop_requested() || clockChecks_ != seen; });
  }
  --waiting_;
  if (waiting_ == 0 && stopped_) wake_.notify_all();  // the destructor may be waiting
  return acquired;
}

void TokenBucket::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  wake_.notify_all();
}

bool TokenBucket::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void TokenBucket::recheckClock() {
  std::lock_guard lock(mutex_);
  ++clockChecks_;
  wake_.notify_all();
}

std::size_t TokenBucket::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

// ---------------------------------------------------------------------------------------------
// Per-item limiters

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(nanoseconds baseDelay, nanoseconds maxDelay)
    : baseDelay_(baseDelay), maxDelay_(maxDelay) {
  if (baseDelay < nanoseconds::zero() || maxDelay < baseDelay) {
    throw std::invalid_argument("exponential failure rate limiter: need 0 <= baseDelay <= maxDelay, got baseDelay " +
                                millis(baseDelay) + " and maxDelay " + millis(maxDelay) +
                                ": client-go's defaults are 5ms and 1000s");
  }
}

nanoseconds ItemExponentialFailureRateLimiter::when(const std::string& item) {
  std::lock_guard lock(mutex_);
  int& failures = failures_[item];
  const int exponent = failures;
  if (failures < std::numeric_limits<int>::max()) ++failures;
  // In floating point, as client-go does, so that a long failure streak saturates at maxDelay
  // instead of overflowing.
  const double backoff = static_cast<double>(baseDelay_.count()) * std::pow(2.0, exponent);
  if (!(backoff < static_cast<double>(maxDelay_.count()))) return maxDelay_;
  return nanoseconds{static_cast<nanoseconds::rep>(backoff)};
}

void ItemExponentialFailureRateLimiter::forget(const std::string& item) {
  std::lock_guard lock(mutex_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::numRequeues(const std::string& item) {
  std::lock_guard lock(mutex_);
  const auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

ItemFastSlowRateLimiter::ItemFastSlowRateLimiter(nanoseconds fastDelay, nanoseconds slowDelay, int maxFastAttempts)
    : fastDelay_(fastDelay), slowDelay_(slowDelay), maxFastAttempts_(maxFastAttempts) {
  if (fastDelay < nanoseconds::zero() || slowDelay < nanoseconds::zero() || maxFastAttempts < 0) {
    throw std::invalid_argument(
        "fast/slow rate limiter: delays and maxFastAttempts must not be negative, got fastDelay " + millis(fastDelay) +
        ", slowDelay " + millis(slowDelay) + ", maxFastAttempts " + std::to_string(maxFastAttempts));
  }
}

nanoseconds ItemFastSlowRateLimiter::when(const std::string& item) {
  std::lock_guard lock(mutex_);
  int& failures = failures_[item];
  if (failures < std::numeric_limits<int>::max()) ++failures;
  return failures <= maxFastAttempts_ ? fastDelay_ : slowDelay_;
}

void ItemFastSlowRateLimiter::forget(const std::string& item) {
  std::lock_guard lock(mutex_);
  failures_.erase(item);
}

int ItemFastSlowRateLimiter::numRequeues(const std::string& item) {
  std::lock_guard lock(mutex_);
  const auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, const Clock& clock) : bucket_(qps, burst, clock) {}

nanoseconds BucketRateLimiter::when(const std::string&) { return bucket_.reserve(); }

void BucketRateLimiter::forget(const std::string&) {}

int BucketRateLimiter::numRequeues(const std::string&) { return 0; }

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {
  if (limiters_.empty()) {
    throw std::invalid_argument("max-of rate limiter: needs at least one limiter to take the maximum of");
  }
  if (std::any_of(limiters_.begin(), limiters_.end(), [](const auto& l) { return l == nullptr; })) {
    throw std::invalid_argument("max-of rate limiter: a limiter is null: pass constructed limiters only");
  }
}

nanoseconds MaxOfRateLimiter::when(const std::string& item) {
  nanoseconds longest{0};
  for (const auto& limiter : limiters_) longest = std::max(longest, limiter->when(item));
  return longest;
}

void MaxOfRateLimiter::forget(const std::string& item) {
  for (const auto& limiter : limiters_) limiter->forget(item);
}

int MaxOfRateLimiter::numRequeues(const std::string& item) {
  int most = 0;
  for (const auto& limiter : limiters_) most = std::max(most, limiter->numRequeues(item));
  return most;
}

std::unique_ptr<RateLimiter> defaultControllerRateLimiter(const Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>());
  limiters.push_back(
      std::make_unique<BucketRateLimiter>(BucketRateLimiter::kDefaultQps, BucketRateLimiter::kDefaultBurst, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace mka::kube
