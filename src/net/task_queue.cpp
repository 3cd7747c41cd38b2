#include "mka/net/task_queue.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>

#include "log.h"

#include "mka/common/thread_name.h"

namespace mka::net {

ElasticTaskQueue::ElasticTaskQueue(Options options) : options_(std::move(options)) {}

ElasticTaskQueue::~ElasticTaskQueue() { shutdown(); }

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::vector<std::thread> toJoin;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      log::error(logger(), "task dropped: queue is shut down", {{"queue", options_.name}});
      return;
    }
    tasks_.push_back(std::move(fn));
    // Idle workers may not have woken for earlier tasks yet, so compare with the backlog.
    if (tasks_.size() > idle_) {
      if (running_.size() < std::max<std::size_t>(options_.maxThreads, 1)) {
        std::thread t([this] { work(); });
        const auto id = t.get_id();
        running_.emplace(id, std::move(t));
        ++idle_;  // counts as idle until it takes its first task
      } else if (!warnedFull_) {
        warnedFull_ = true;
        log::warn(logger(), "all threads busy, tasks wait for a free one",
                  {{"queue", options_.name}, {"threads", running_.size()}, {"queued", tasks_.size()}});
      }
    }
    toJoin.swap(exited_);
  }
  wake_.notify_one();
  join(toJoin);
}

void ElasticTaskQueue::work() {
  // A write to a peer that has left raises SIGPIPE, which ends the process unless it is
  // ignored: OpenSSL writes with write(2), which has no MSG_NOSIGNAL. Blocked here, the write
  // fails with EPIPE instead (the signal stays pending on this thread, never delivered), so a
  // process embedding a server (tests, the sandbox) survives a client that hangs up mid-stream.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::unique_lock lock(mutex_);
  const std::string name = options_.name.substr(0, 11) + "-" + std::to_string(nextId_++ % 1000);
  nameThisThread(name);
  for (;;) {
    if (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      if (tasks_.empty()) warnedFull_ = false;
      --idle_;
      lock.unlock();
      task();
      task = nullptr;  // release captured state before counting as idle again
      lock.lock();
      ++idle_;
      continue;
    }
    if (stopping_) break;
    if (!wake_.wait_for(lock, options_.idleTimeout, [this] { return !tasks_.empty() || stopping_; })) break;
  }
  --idle_;
  // Join the threads that left before this one, so an idle server does not keep their stacks;
  // this one is joined by whoever comes next (another exiting worker, enqueue or shutdown).
  std::vector<std::thread> earlier;
  earlier.swap(exited_);
  auto self = running_.find(std::this_thread::get_id());
  exited_.push_back(std::move(self->second));
  running_.erase(self);
  if (running_.empty()) drained_.notify_all();
  lock.unlock();
  join(earlier);
}

void ElasticTaskQueue::shutdown() {
  std::vector<std::thread> toJoin;
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
    drained_.wait(lock, [this] { return running_.empty(); });
    toJoin.swap(exited_);
  }
  join(toJoin);
}

void ElasticTaskQueue::join(std::vector<std::thread>& threads) {
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
}

std::size_t ElasticTaskQueue::threads() const {
  std::lock_guard lock(mutex_);
  return running_.size();
}

std::size_t ElasticTaskQueue::idleThreads() const {
  std::lock_guard lock(mutex_);
  return idle_;
}

std::size_t ElasticTaskQueue::queued() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

}  // namespace mka::net
