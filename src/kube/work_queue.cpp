#include "mka/kube/work_queue.h"

#include <algorithm>
#include <stdexcept>

#include "mka/common/keyed_block.h"
#include "mka/common/thread_cache.h"
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

struct WorkQueue::KeyState {
  TimePoint addedAt{};           // metrics: when it became pending
  TimePoint processingSince{};   // metrics: when a worker took it
  std::uint32_t lowEntries = 0;  // lowQueue_ entries naming it, stale ones included
  std::uint32_t keySize = 0;     // a keyed block (common/keyed_block.h): the key follows
  bool dirty = false;
  bool low = false;
  bool processing = false;
};

std::string_view WorkQueue::keyOf(const KeyState* state) { return keyOfBlock(state); }

WorkQueue::KeyState* WorkQueue::stateLocked(std::string_view key) {
  if (auto* found = keys_.find(key)) return found;
  auto* state = newKeyedBlock<KeyState>(key, "work queue " + name_);
  keys_.put(state);
  return state;
}

void WorkQueue::releaseLocked(KeyState* state) {
  if (state->dirty || state->processing || state->lowEntries > 0) return;
  keys_.take(keyOf(state));
  destroy(state);
}

void WorkQueue::destroy(KeyState* state) { deleteKeyedBlock(state); }

WorkQueue::WorkQueue(Options options, const Clock& clock)
    : name_(std::move(options.name)),
      clock_(clock),
      rateLimiter_(options.rateLimiter ? std::move(options.rateLimiter) : defaultControllerRateLimiter(clock)),
      metrics_(options.metrics),
      normalHold_(options.normalHold) {
  timer_ = std::thread([this] { timerLoop(); });
}

WorkQueue::~WorkQueue() {
  shutDown();
  keys_.forEach(&WorkQueue::destroy);
  keys_.clear();
}

void WorkQueue::add(const std::string& key, Priority priority) {
  std::lock_guard lock(mutex_);
  addLocked(key, priority);
}

void WorkQueue::addLocked(const std::string& key, Priority priority) {
  if (shuttingDown_) return;
  auto* state = stateLocked(key);
  if (state->dirty) {
    // Already pending: only a raise matters. A waiting Low key moves to the Normal queue (its
    // Low entry goes stale); one held by a worker is queued as Normal by done().
    if (priority == Priority::Normal && state->low) {
      state->low = false;
      if (!state->processing) {
        queue_.emplace_back(state, clock_.now());
        keyReady_.notify_one();
      }
    }
    return;
  }
  state->dirty = true;
  ++dirtyCount_;
  if (priority == Priority::Low) state->low = true;
  if (metrics_ != nullptr) {
    metrics_->added();
    metrics_->depth(dirtyCount_);
    state->addedAt = clock_.now();
  }
  // Held by a worker: done() queues it, so two workers never hold it at once.
  if (state->processing) return;
  pushLocked(state);
}

void WorkQueue::pushLocked(KeyState* state) {
  if (state->low) {
    lowQueue_.push_back(state);
    ++state->lowEntries;
  } else {
    queue_.emplace_back(state, clock_.now());
  }
  ++ready_;
  keyReady_.notify_one();
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  keyReady_.wait(lock, [this] { return ready_ > 0 || shuttingDown_; });
  if (ready_ == 0) return std::nullopt;
  KeyState* state = nullptr;
  // Live Low entries exist when some ready keys are not in the Normal queue.
  const bool lowWaiting = ready_ > queue_.size();
  const bool normalDue = !queue_.empty() && (!lowWaiting || normalHold_ <= std::chrono::nanoseconds::zero() ||
                                             clock_.now() - queue_.front().second >= normalHold_);
  if (normalDue || !lowWaiting) {
    state = queue_.front().first;
    queue_.pop_front();
  } else {
    // Skips the entries of keys raised to Normal (handed out already, or held by a worker).
    for (;;) {
      state = lowQueue_.front();
      lowQueue_.pop_front();
      --state->lowEntries;
      if (state->low && !state->processing) break;
      releaseLocked(state);
    }
    state->low = false;
  }
  --ready_;
  state->processing = true;
  ++processingCount_;
  state->dirty = false;
  --dirtyCount_;
  if (metrics_ != nullptr) {
    const auto now = clock_.now();
    metrics_->depth(dirtyCount_);
    metrics_->queueLatency(since(state->addedAt, now));
    state->processingSince = now;
  }
  return std::string(keyOf(state));
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto* state = keys_.find(key);
  if (state == nullptr || !state->processing) {
    throw std::logic_error("work queue " + name_ + ": done(\"" + key +
                           "\") for a key that is not being processed: call done exactly once for each key get() "
                           "returned");
  }
  state->processing = false;
  --processingCount_;
  if (metrics_ != nullptr) metrics_->workDuration(since(state->processingSince, clock_.now()));
  if (state->dirty) {
    // Re-queued even while shutting down, as client-go does: it was added before the shutdown.
    pushLocked(state);
    return;
  }
  releaseLocked(state);
  if (processingCount_ == 0) drained_.notify_all();
}

std::size_t WorkQueue::unfinished() const {
  std::lock_guard lock(mutex_);
  std::size_t n = processingCount_;
  keys_.forEach([&](const KeyState* state) {
    if (state->dirty && !state->processing) ++n;
  });
  return n;
}

bool WorkQueue::queued(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto* state = keys_.find(key);
  return state != nullptr && state->dirty;
}

std::size_t WorkQueue::trackedKeys() const {
  std::lock_guard lock(mutex_);
  return keys_.size();
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
  disableThreadCache();  // it only moves due keys along
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
  drained_.wait(lock, [this] { return processingCount_ == 0 || !drain_; });
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard lock(mutex_);
  return shuttingDown_;
}

}  // namespace mka::kube
