#pragma once
// The controller work queue: client-go's rate-limiting work queue (workqueue.Typed +
// delayingType + rateLimitingType) in one class, keyed by strings ("namespace/name").
//
// What a controller relies on:
// - de-duplication: a key added several times before a worker takes it is handed out once;
// - one worker per key: a key added while a worker holds it is handed out again only after
//   that worker calls done(key), never to a second worker at the same time;
// - retries: addRateLimited(key) brings a failed key back after its rate limiter's delay
//   (per-key exponential backoff by default); forget(key) resets that backoff on success;
// - priorities (controller-runtime's priority queue, two levels): keys added with
//   Priority::Low (an informer's initial list) are handed out only when no Normal key is
//   ready, FIFO within a level. Adding a waiting Low key again as Normal raises it; adding a
//   Normal key as Low leaves it Normal. So a controller that starts on a large backlog finishes
//   the objects it has touched (their events come back Normal) before it opens new ones:
//   fewer objects half done at once, and each one done sooner. While Low keys wait, a Normal
//   key may be held for Options::normalHold first (see there), so the burst of events one
//   change sets off is handled by one pass instead of one pass per event.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "mka/common/clock.h"
#include "mka/common/flat_pointer_set.h"
#include "mka/kube/delayed_keys.h"
#include "mka/kube/rate_limiter.h"

namespace mka::kube {

// Observes a WorkQueue, for Prometheus or logs (client-go's workqueue metrics without the
// metrics library: the observability module adapts these calls to its own registry).
// Threads: called by whichever thread changed the queue, with the queue's lock held, so
// implementations must be quick and must not call back into the queue.
class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  // Keys waiting to be handed out, including keys re-added while a worker holds them
  // (workqueue_depth).
  virtual void depth(std::size_t /*keys*/) {}
  // A key became pending (workqueue_adds_total); re-adding a pending key does not count.
  virtual void added() {}
  // A key was handed out this long after it became pending (workqueue_queue_duration_seconds).
  virtual void queueLatency(std::chrono::nanoseconds) {}
  // A worker held a key this long, get() to done() (workqueue_work_duration_seconds).
  virtual void workDuration(std::chrono::nanoseconds) {}
  // addAfter() or addRateLimited() was called (workqueue_retries_total).
  virtual void retried() {}
};

// Threads: any number of producers (add, addAfter, addRateLimited; typically informer event
// handlers) and workers (get, done, forget) on their own threads; every method is safe from
// any thread. One mutex guards all state. The queue owns one thread of its own, the timer
// ("wq-<name>"), which moves delayed keys into the queue when their time comes; it starts in
// the constructor and is joined by shutDown()/shutDownWithDrain() or the destructor.
//
// Time comes from the injected clock. The timer thread waits, in real time, for the clock
// distance to the next ready key (at most 10 s, then it looks again, as client-go's
// heartbeat). With the real clock nothing more is needed. A FakeClock cannot wake anyone, so
// tests call recheckClock() after advancing it: that call moves every key whose time has come
// into the queue before it returns, so the test can assert on len() or get() at once, without
// waiting for the timer thread.
class WorkQueue {
 public:
  struct Options {
    std::string name = "workqueue";  // thread name and error messages
    // Decides addRateLimited() delays; null means defaultControllerRateLimiter(clock).
    std::unique_ptr<RateLimiter> rateLimiter;
    // Borrowed; must outlive the queue. Null means no metrics.
    WorkQueueMetrics* metrics = nullptr;
    // Only while Low keys are waiting: a Normal key is handed out once it has been ready this
    // long (on the clock), and a Low key goes first meanwhile; events for the key that come in
    // during the hold join it. Without Low keys, or with 0, Normal keys go out at once. A
    // worker never waits because of it: it takes a Low key, or a held Normal key when nothing
    // else is ready.
    std::chrono::nanoseconds normalHold{0};
  };

  // `clock` must outlive the queue.
  explicit WorkQueue(Options options, const Clock& clock = systemClock());
  // shutDown(). Destroy the queue only after every worker thread has left get()/done().
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  enum class Priority { Low, Normal };

  // Marks `key` as needing processing. Ignored after shutdown.
  void add(const std::string& key, Priority priority = Priority::Normal);

  // Blocks until a key is ready, marks it as being processed and returns it; the caller must
  // call done(key) when finished. Returns nullopt once the queue is shut down and empty (keys
  // already queued at shutdown are still handed out, as in client-go).
  std::optional<std::string> get();

  // Ends processing of a key returned by get(). If the key was added again meanwhile, it is
  // queued again now. Throws std::logic_error when `key` is not being processed (done called
  // twice, or for a key get() did not return): that would hand one key to two workers.
  void done(const std::string& key);

  // Keys ready to be handed out (not those waiting for their delay, nor those being
  // processed). For information only: another thread may change it right after.
  std::size_t len() const;
  // Keys ready plus keys being processed, read under one lock (so no key is ever between the
  // two counts). Zero means quiet, apart from keys waiting for their delay.
  std::size_t unfinished() const;
  // Keys the queue keeps state for: pending, being processed, or still named by the stale
  // Low entry of a raised key (it goes when that entry comes out). For tests and debugging.
  std::size_t trackedKeys() const;
  // Whether `key` is queued (also when it is being processed and was added again): a get()
  // will hand it out, so whatever changed before this call will be seen by a later reconcile.
  // A key waiting for its delay is not queued. For information only, like len().
  bool queued(const std::string& key) const;

  // Adds `key` once `delay` has passed on the clock; at once when delay <= 0. If the key is
  // already waiting, it keeps the earlier of the two times. Ignored after shutdown.
  void addAfter(const std::string& key, std::chrono::nanoseconds delay);

  // addAfter(key, rateLimiter.when(key)): records a failure and schedules the retry.
  void addRateLimited(const std::string& key);
  // Resets the key's failure count in the rate limiter (call it when processing succeeds).
  void forget(const std::string& key);
  int numRequeues(const std::string& key);

  // Stops the queue now: later adds are ignored, keys waiting for a delay are dropped, and
  // get() returns what is still queued, then nullopt. Does not wait for workers. Also ends a
  // shutDownWithDrain() that is still waiting. Idempotent.
  void shutDown();
  // Like shutDown(), then waits until every key being processed is done() (client-go: keys
  // still queued are not waited for; workers normally take them before they see nullopt).
  // Blocks forever if a worker never calls done(); shutDown() from another thread ends the
  // wait.
  void shutDownWithDrain();
  bool shuttingDown() const;

  // Moves every delayed key whose time has come on the clock into the queue before returning,
  // and wakes the timer thread to re-plan its wait. Only needed after advancing a FakeClock
  // (see the class comment).
  void recheckClock();

 private:
  using TimePoint = Clock::TimePoint;

  // One block per key the queue knows (pending, held by a worker, or named by a stale Low
  // entry): its state, then its characters, so each key is stored once and every state is one
  // lookup. Defined in the .cc. Separate string-keyed hash sets and maps (pending, Low,
  // processing, and the two metrics times) would cost about 400 bytes a key, and the keys of an
  // informer's initial list, all queued at once, set the adapter's peak RSS.
  struct KeyState;
  static std::string_view keyOf(const KeyState* state);
  KeyState* stateLocked(std::string_view key);  // found, or made (in no state yet)
  void releaseLocked(KeyState* state);          // frees it once nothing needs it
  static void destroy(KeyState* state);

  void addLocked(const std::string& key, Priority priority = Priority::Normal);
  void pushLocked(KeyState* state);
  void promoteReadyLocked(TimePoint now);
  void stopLocked(bool drain);
  void joinTimer();
  void timerLoop();

  const std::string name_;
  const Clock& clock_;
  const std::unique_ptr<RateLimiter> rateLimiter_;
  WorkQueueMetrics* const metrics_;
  const std::chrono::nanoseconds normalHold_;

  mutable std::mutex mutex_;
  std::condition_variable keyReady_;   // get(): a key was queued, or shutdown
  std::condition_variable drained_;    // shutDownWithDrain(): processing emptied, or shutDown()
  std::condition_variable timerWake_;  // timer thread: earlier key, recheckClock(), or shutdown

  // client-go's Type, in the KeyState flags: `dirty` (pending), `processing` (held by a
  // worker). Every key in queue_ is dirty and not processing; a key both dirty and processing is
  // queued again by done().
  FlatPointerSet<KeyState, &WorkQueue::keyOf> keys_;  // owns the blocks (freed by releaseLocked)
  std::size_t dirtyCount_ = 0;
  std::size_t processingCount_ = 0;
  std::deque<std::pair<KeyState*, TimePoint>> queue_;  // with the time each became ready
  // Low-priority keys (dirty keys with the `low` flag). A key raised to Normal leaves a stale
  // entry behind, skipped when it comes out (KeyState::lowEntries keeps its block until then);
  // `ready_` counts the live entries of both deques.
  std::deque<KeyState*> lowQueue_;
  std::size_t ready_ = 0;
  bool shuttingDown_ = false;
  bool drain_ = false;

  // The delaying part: keys waiting for their time (one entry per key, the earlier time kept).
  DelayedKeys waiting_;
  std::uint64_t timerWakeups_ = 0;

  std::mutex joinMutex_;  // one caller joins the timer thread
  std::thread timer_;
};

}  // namespace mka::kube
