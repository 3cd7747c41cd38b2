#include "mka/kube/work_queue.h"

#include <algorithm>
#include <stdexcept>

#include "mka/common/thread_name.h"

namespace mka::kube {
namespace {

// The timer thread looks at the clock at least this often, whatever it expects (client-go's
// maxWait): insurance against a wall clock that jumped or a FakeClock nobody rechecked.
constexpr std::chrono::seconds kTimerMaxWait{10};

std::chrono::nanoseconds since(Clock::TimePoint from, Clock::TimePoint to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from);
}

}  // namespace

WorkQueue::WorkQueue(Options options, const Clock& clock)
    : name_(std::move(options.name)),
      clock_(clock),
      rateLimiter_(options.rateLimiter ? std::move(options.rateLimiter) : defaultControllerRateLimiter(clock)),
      metrics_(options.metrics),
      normalHold_(options.normalHold) {
  timer_ = std::thread([this] { timerLoop(); });
}

WorkQueue::~WorkQueue() { shutDown(); }

void WorkQueue::add(const std::string& key, Priority priority) {
  std::lock_guard lock(mutex_);
  addLocked(key, priority);
}

void WorkQueue::addLocked(const std::string& key, Priority priority) {
  if (shuttingDown_) return;
  if (!dirty_.insert(key).second) {
    // Already pending: only a raise matters. A waiting Low key moves to the Normal queue (its
    // Low entry goes stale); one held by a worker is queued as Normal by done().
    if (priority == Priority::Normal && low_.erase(key) > 0 && !processing_.contains(key)) {
      queue_.emplace_back(key, clock_.now());
      keyReady_.notify_one();
    }
    return;
  }
  if (priority == Priority::Low) low_.insert(key);
  if (metrics_ != nullptr) {
    metrics_->added();
    metrics_->depth(dirty_.size());
    addedAt_.try_emplace(key, clock_.now());
  }
  // Held by a worker: done() queues it, so two workers never hold it at once.
  if (processing_.contains(key)) return;
  pushLocked(key);
}

void WorkQueue::pushLocked(const std::string& key) {
  if (low_.contains(key)) {
    lowQueue_.push_back(key);
  } else {
    queue_.emplace_back(key, clock_.now());
  }
  ++ready_;
  keyReady_.notify_one();
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  keyReady_.wait(lock, [this] { return ready_ > 0 || shuttingDown_; });
  if (ready_ == 0) return std::nullopt;
  std::string key;
  // Live Low entries exist when some ready keys are not in the Normal queue.
  const bool lowWaiting = ready_ > queue_.size();
  const bool normalDue =
      !queue_.empty() && (!lowWaiting || normalHold_ <= std::chrono::nanoseconds::zero() ||
                          clock_.now() - queue_.front().second >= normalHold_);
  if (normalDue || !lowWaiting) {
    key = std::move(queue_.front().first);
    queue_.pop_front();
  } else {
    // Skips the entries of keys raised to Normal (handed out already, or held by a worker).
    for (;;) {
      key = std::move(lowQueue_.front());
      lowQueue_.pop_front();
      if (low_.contains(key) && !processing_.contains(key)) break;
    }
    low_.erase(key);
  }
  --ready_;
  processing_.insert(key);
  dirty_.erase(key);
  if (metrics_ != nullptr) {
    const auto now = clock_.now();
    metrics_->depth(dirty_.size());
    if (const auto it = addedAt_.find(key); it != addedAt_.end()) {
      metrics_->queueLatency(since(it->second, now));
      addedAt_.erase(it);
    }
    processingSince_[key] = now;
  }
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (processing_.erase(key) == 0) {
    throw std::logic_error("work queue " + name_ + ": done(\"" + key +
                           "\") for a key that is not being processed: call done exactly once for each key get() "
                           "returned");
  }
  if (metrics_ != nullptr) {
    if (const auto it = processingSince_.find(key); it != processingSince_.end()) {
      metrics_->workDuration(since(it->second, clock_.now()));
      processingSince_.erase(it);
    }
  }
  if (dirty_.contains(key)) {
    // Re-queued even while shutting down, as client-go does: it was added before the shutdown.
    pushLocked(key);
  } else if (processing_.empty()) {
    drained_.notify_all();
  }
}

std::size_t WorkQueue::unfinished() const {
  std::lock_guard lock(mutex_);
  std::size_t n = processing_.size();
  for (const auto& key : dirty_)
    if (!processing_.contains(key)) ++n;
  return n;
}

bool WorkQueue::queued(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return dirty_.contains(key);
}

std::size_t WorkQueue::len() const {
  std::lock_guard lock(mutex_);
  return ready_;
}

void WorkQueue::addAfter(const std::string& key, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mutex_);
  if (shuttingDown_) return;
  if (metrics_ != nullptr) metrics_->retried();
  const auto now = clock_.now();
  if (delay <= std::chrono::nanoseconds::zero()) {
    addLocked(key);
    return;
  }
  const auto readyAt = now + std::chrono::duration_cast<Clock::TimePoint::duration>(delay);
  if (waiting_.schedule(key, readyAt)) {  // the timer is waiting for something later
    ++timerWakeups_;
    timerWake_.notify_one();
  }
}

void WorkQueue::addRateLimited(const std::string& key) {
  // Asked outside the queue's lock: the limiter has its own, and may be shared.
  addAfter(key, rateLimiter_->when(key));
}

void WorkQueue::forget(const std::string& key) { rateLimiter_->forget(key); }

int WorkQueue::numRequeues(const std::string& key) { return rateLimiter_->numRequeues(key); }

void WorkQueue::promoteReadyLocked(TimePoint now) {
  while (auto key = waiting_.popDue(now)) addLocked(*key);
}

void WorkQueue::recheckClock() {
  std::lock_guard lock(mutex_);
  if (shuttingDown_) return;
  promoteReadyLocked(clock_.now());
  ++timerWakeups_;
  timerWake_.notify_one();
}

void WorkQueue::timerLoop() {
  nameThisThread("wq-" + name_);
  std::unique_lock lock(mutex_);
  while (!shuttingDown_) {
    // Read under the lock, so an advance followed by recheckClock() is never missed: either
    // this read sees it or the wait below is woken by it.
    const auto now = clock_.now();
    promoteReadyLocked(now);
    Clock::TimePoint::duration wait = kTimerMaxWait;
    if (const auto first = waiting_.firstReadyAt()) wait = std::min(wait, *first - now);
    const auto seen = timerWakeups_;
    timerWake_.wait_for(lock, wait, [&] { return shuttingDown_ || timerWakeups_ != seen; });
  }
  // Delayed keys are dropped at shutdown, as client-go's waiting loop drops them.
  waiting_.clear();
}

void WorkQueue::stopLocked(bool drain) {
  drain_ = drain;
  shuttingDown_ = true;
  keyReady_.notify_all();
  drained_.notify_all();
  timerWake_.notify_all();
}

void WorkQueue::joinTimer() {
  std::lock_guard lock(joinMutex_);
  if (timer_.joinable()) timer_.join();
}

void WorkQueue::shutDown() {
  {
    std::lock_guard lock(mutex_);
    stopLocked(false);
  }
  joinTimer();
}

void WorkQueue::shutDownWithDrain() {
  {
    std::lock_guard lock(mutex_);
    stopLocked(true);
  }
  joinTimer();
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return processing_.empty() || !drain_; });
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard lock(mutex_);
  return shuttingDown_;
}

}  // namespace mka::kube
