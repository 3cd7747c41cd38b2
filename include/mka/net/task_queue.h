#pragma once
// A thread pool that grows on demand: a task gets an idle thread if there is one, else a new
// thread (up to maxThreads; past that it waits in a FIFO queue). Threads idle for
// idleTimeout exit. Built for servers that hold a thread per connection for the connection's
// whole life (cpp-httplib does, and so does HttpServer): a fixed pool would let idle
// keep-alive connections, or long watches, starve new ones.
//
// Usable as httplib's task queue: `server.new_task_queue = [] { return new ElasticTaskQueue({}); };`
//
// Threads: enqueue() from any thread; shutdown() from the owner, once, after the last enqueue().

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mka::net {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  struct Options {
    std::string name = "worker";  // thread name prefix (15 chars total on Linux) and logs
    std::size_t maxThreads = 512;
    std::chrono::milliseconds idleTimeout{std::chrono::seconds{60}};
  };

  explicit ElasticTaskQueue(Options options);
  ~ElasticTaskQueue() override;  // shuts down if the owner did not
  ElasticTaskQueue(const ElasticTaskQueue&) = delete;
  ElasticTaskQueue& operator=(const ElasticTaskQueue&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs every queued task, then joins every thread. Tasks enqueued afterwards are dropped.
  void shutdown() override;

  std::size_t threads() const;      // alive now
  std::size_t idleThreads() const;  // alive and waiting for a task
  std::size_t queued() const;       // waiting for a thread

 private:
  void work();
  // Joins threads that exited; called without the lock held.
  static void join(std::vector<std::thread>& threads);

  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;     // workers: a task arrived or shutdown
  std::condition_variable drained_;  // shutdown(): the last worker left
  std::deque<std::function<void()>> tasks_;
  std::map<std::thread::id, std::thread> running_;
  std::vector<std::thread> exited_;  // to be joined by whoever comes next
  std::size_t idle_ = 0;
  std::size_t nextId_ = 0;
  bool stopping_ = false;
  bool warnedFull_ = false;
};

}  // namespace mka::net
