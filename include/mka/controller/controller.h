#pragma once
// A controller in controller-runtime's shape: a work queue of object keys, worker threads that
// take one key at a time and call a level-triggered reconcile function, and what the result
// says: done (forget the key's backoff), requeue after a delay (periodic resync, backoff
// windows), or an exception (logged, retried with the queue's per-key exponential backoff).
//
// Threads: owns `workers` threads ("<name>-N") and the queue's timer thread; enqueue*() from
// any thread (informer handlers, other controllers). A key is never reconciled by two workers
// at once (the work queue guarantees it), so reconcile functions need no per-key locks.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mka/common/clock.h"
#include "mka/kube/rate_limiter.h"
#include "mka/kube/work_queue.h"

namespace mka::controller {

struct Result {
  std::chrono::nanoseconds requeueAfter{0};  // 0: done until an event brings the key back

  static Result done() { return {}; }
  static Result after(std::chrono::nanoseconds delay) { return {delay}; }
  // The earlier of two requeues (0 counts as "none").
  static Result sooner(Result a, Result b);
  bool operator==(const Result&) const = default;
};

// Reconcile latency and queue depth per controller, for /metrics (observability adapts it).
class ControllerObserver {
 public:
  virtual ~ControllerObserver() = default;
  // One reconcile of `controller` took `seconds`; result: success|requeue|error.
  virtual void reconciled(const std::string& controller, const std::string& result, double seconds) = 0;
  virtual void queueDepth(const std::string& controller, std::size_t depth) = 0;
};

class Controller {
 public:
  using Reconcile = std::function<Result(const std::string& key)>;
  // A Conflict or NotFound from the API server is logged at debug for this many retries of a
  // key (a stale cache clears on the next read), at warn after.
  static constexpr int kStaleCacheRetries = 3;
  struct Options {
    std::string name;  // logs, thread names (keep it short: threads are named "<name>-N")
    std::size_t workers = 1;
    ControllerObserver* observer = nullptr;  // borrowed, may be null
    // kube::WorkQueue::Options::normalHold: while Low keys wait, how long a Normal key waits
    // for more events before it goes ahead of them.
    std::chrono::nanoseconds normalHold{0};
    // false for a controller of objects that change rarely: its workers keep no allocator
    // thread cache (mka/common/thread_cache.h).
    bool threadCache = true;
  };

  // `clock` must outlive the controller.
  Controller(Options options, Reconcile reconcile, const Clock& clock = kube::systemClock());
  ~Controller();  // stop()
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Low: a key from an informer's initial list, handed out after every Normal one (see
  // kube::WorkQueue).
  void enqueue(const std::string& key, kube::WorkQueue::Priority priority = kube::WorkQueue::Priority::Normal);
  void enqueueAfter(const std::string& key, std::chrono::nanoseconds delay);
  // The key will be reconciled again without another enqueue (kube::WorkQueue::queued).
  bool queued(const std::string& key) const;

  void start();
  // Shuts the queue down, lets workers finish the key they hold, joins them. Idempotent.
  void stop();

  // Nothing queued and nothing in progress (keys waiting for a delay do not count). Tests await it.
  bool idle() const;
  // Reconciles run so far (all results), for tests and logs.
  std::uint64_t reconciles() const { return reconciles_.load(); }
  // For tests with a FakeClock: moves delayed keys whose time came into the queue.
  void recheckClock() { queue_->recheckClock(); }
  const std::string& name() const { return options_.name; }

 private:
  class QueueObserver;
  void work();

  Options options_;
  Reconcile reconcile_;
  const Clock& clock_;
  std::unique_ptr<QueueObserver> queueObserver_;
  std::unique_ptr<kube::WorkQueue> queue_;
  std::atomic<std::uint64_t> reconciles_{0};
  std::vector<std::thread> threads_;
  bool started_ = false;
};

}  // namespace mka::controller
