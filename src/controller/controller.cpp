#include "mka/controller/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "mka/common/log.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"
#include "mka/kube/api_error.h"

namespace mka::controller {

Result Result::sooner(Result a, Result b) {
  if (a.requeueAfter <= std::chrono::nanoseconds::zero()) return b;
  if (b.requeueAfter <= std::chrono::nanoseconds::zero()) return a;
  return a.requeueAfter < b.requeueAfter ? a : b;
}

// Forwards the queue's depth to the controller's observer.
class Controller::QueueObserver : public kube::WorkQueueMetrics {
 public:
  QueueObserver(std::string name, ControllerObserver* observer) : name_(std::move(name)), observer_(observer) {}
  void depth(std::size_t keys) override {
    if (observer_) observer_->queueDepth(name_, keys);
  }

 private:
  std::string name_;
  ControllerObserver* observer_;
};

Controller::Controller(Options options, Reconcile reconcile, const Clock& clock)
    : options_(std::move(options)),
      reconcile_(std::move(reconcile)),
      clock_(clock),
      queueObserver_(std::make_unique<QueueObserver>(options_.name, options_.observer)) {
  kube::WorkQueue::Options q;
  q.name = options_.name;
  q.metrics = queueObserver_.get();
  q.normalHold = options_.normalHold;
  queue_ = std::make_unique<kube::WorkQueue>(std::move(q), clock_);
}

Controller::~Controller() { stop(); }

void Controller::enqueue(const std::string& key, kube::WorkQueue::Priority priority) { queue_->add(key, priority); }

void Controller::enqueueAfter(const std::string& key, std::chrono::nanoseconds delay) { queue_->addAfter(key, delay); }

bool Controller::queued(const std::string& key) const { return queue_->queued(key); }

void Controller::start() {
  if (started_) return;
  started_ = true;
  for (std::size_t i = 0; i < std::max<std::size_t>(1, options_.workers); ++i) {
    threads_.emplace_back([this, i] {
      nameThisThread(options_.name + "-" + std::to_string(i));
      if (!options_.threadCache) disableThreadCache();
      work();
    });
  }
}

void Controller::stop() {
  queue_->shutDown();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

bool Controller::idle() const { return queue_->unfinished() == 0; }

void Controller::work() {
  while (true) {
    auto key = queue_->get();
    if (!key) return;
    const auto started = std::chrono::steady_clock::now();
    std::string outcome = "success";
    try {
      const auto result = reconcile_(*key);
      queue_->forget(*key);
      if (result.requeueAfter > std::chrono::nanoseconds::zero()) {
        outcome = "requeue";
        queue_->addAfter(*key, result.requeueAfter);
      }
    } catch (const kube::ApiError& e) {
      outcome = "error";
      // A conflict (the object changed) or a NotFound (it was deleted, e.g. a finished job's
      // Workload) after a read from the cache is a stale cache, not a fault: the retry reads the
      // newer state, so the first retries log at debug. One that persists is something else.
      const int retries = queue_->numRequeues(*key);
      const bool stale = e.reason() == kube::Reason::Conflict || e.reason() == kube::Reason::NotFound;
      log::at(stale && retries < kStaleCacheRetries ? spdlog::level::debug : spdlog::level::warn, "reconcile failed",
              {{"controller", options_.name}, {"key", *key}, {"retries", retries}, {"error", e.what()}});
      queue_->addRateLimited(*key);
    } catch (const std::exception& e) {
      outcome = "error";
      log::warn(
          "reconcile failed",
          {{"controller", options_.name}, {"key", *key}, {"retries", queue_->numRequeues(*key)}, {"error", e.what()}});
      queue_->addRateLimited(*key);
    }
    ++reconciles_;
    if (options_.observer) {
      options_.observer->reconciled(options_.name, outcome,
                                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    queue_->done(*key);
  }
}

}  // namespace mka::controller
