#pragma once
// The worker of a sandbox controller that plays part of kube-controller-manager (the garbage
// collector, the token controller): tasks run one at a time on its own thread, and a task whose
// handler asks for it (returns true) or throws runs again after a delay, as the real controllers
// requeue. Tests await idle().
//
// Threads: every public method may be called from any thread; the handler runs on the loop's
// thread, never under the loop's lock.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mka/common/thread_name.h"

namespace mka::sandbox::detail {

template <typename Task>
class TaskLoop {
 public:
  // Returns true to run the task again after `retry`.
  using Handler = std::function<bool(const Task& task)>;
  // Told of a handler's exception (the task runs again after `retry`).
  using OnError = std::function<void(const std::exception& error)>;

  TaskLoop(std::string threadName, std::chrono::milliseconds retry, Handler handler, OnError onError)
      : threadName_(std::move(threadName)), retry_(retry), handler_(std::move(handler)), onError_(std::move(onError)) {}
  ~TaskLoop() { stop(); }
  TaskLoop(const TaskLoop&) = delete;
  TaskLoop& operator=(const TaskLoop&) = delete;

  // Returns false when it was running already.
  bool start() {
    std::lock_guard lock(mutex_);
    if (running_) return false;
    running_ = true;
    stopping_ = false;
    worker_ = std::thread([this] {
      nameThisThread(threadName_);
      run();
    });
    return true;
  }

  // Drops what is queued and joins the thread.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (!running_) return;
      stopping_ = true;
      running_ = false;
      queue_.clear();
      later_.clear();
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  // Ignored while the loop is not running.
  void push(Task task) {
    {
      std::lock_guard lock(mutex_);
      if (!running_) return;
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  bool idle() const {
    std::lock_guard lock(mutex_);
    return queue_.empty() && later_.empty() && !busy_;
  }

 private:
  using SteadyClock = std::chrono::steady_clock;

  void run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      const auto now = SteadyClock::now();
      for (auto it = later_.begin(); it != later_.end();) {
        if (it->first <= now) {
          queue_.push_back(std::move(it->second));
          it = later_.erase(it);
        } else {
          ++it;
        }
      }
      if (queue_.empty()) {
        if (later_.empty()) {
          wake_.wait(lock);
        } else {
          const auto earliest = std::min_element(later_.begin(), later_.end(),
                                                 [](const auto& a, const auto& b) { return a.first < b.first; });
          wake_.wait_until(lock, earliest->first);
        }
        continue;
      }
      auto task = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      bool again = false;
      try {
        again = handler_(task);
      } catch (const std::exception& e) {
        onError_(e);
        again = true;
      }
      lock.lock();
      busy_ = false;
      if (again && !stopping_) later_.emplace_back(SteadyClock::now() + retry_, std::move(task));
    }
  }

  const std::string threadName_;
  const std::chrono::milliseconds retry_;
  const Handler handler_;
  const OnError onError_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  std::vector<std::pair<SteadyClock::time_point, Task>> later_;
  bool busy_ = false;
  bool running_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace mka::sandbox::detail
