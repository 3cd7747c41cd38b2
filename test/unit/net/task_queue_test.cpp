#include "mka/net/task_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <latch>

#include "support/eventually.h"

namespace mka::net {
namespace {

using namespace std::chrono_literals;
using test::eventually;

ElasticTaskQueue::Options options(std::size_t maxThreads, std::chrono::milliseconds idle = 10s) {
  return {"test", maxThreads, idle};
}

TEST(ElasticTaskQueueTest, RunsEveryTask) {
  ElasticTaskQueue queue(options(4));
  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i) queue.enqueue([&] { ++done; });
  queue.shutdown();
  EXPECT_EQ(done, 100);
}

TEST(ElasticTaskQueueTest, GrowsAThreadPerBlockedTaskSoNoneStarves) {
  ElasticTaskQueue queue(options(64));
  std::latch release(1);
  std::atomic<int> started{0};
  for (int i = 0; i < 50; ++i) {
    queue.enqueue([&] {
      ++started;
      release.wait();
    });
  }
  // All 50 run at once: each one got its own thread.
  EXPECT_TRUE(eventually([&] { return started == 50; }));
  EXPECT_EQ(queue.threads(), 50u);
  release.count_down();
  queue.shutdown();
}

TEST(ElasticTaskQueueTest, ReusesIdleThreads) {
  ElasticTaskQueue queue(options(64));
  for (int i = 0; i < 20; ++i) {
    std::promise<void> ran;
    queue.enqueue([&] { ran.set_value(); });
    ran.get_future().wait();
    ASSERT_TRUE(eventually([&] { return queue.idleThreads() == 1; }));
  }
  EXPECT_EQ(queue.threads(), 1u);
}

TEST(ElasticTaskQueueTest, QueuesBeyondMaxThreadsAndRunsEveryQueuedTaskLater) {
  ElasticTaskQueue queue(options(2));
  std::latch release(1);
  std::atomic<int> started{0};
  for (int i = 0; i < 2; ++i) {
    queue.enqueue([&] {
      ++started;
      release.wait();
    });
  }
  std::vector<int> ran;
  std::mutex ranMutex;
  for (int i = 0; i < 3; ++i) {
    queue.enqueue([&, i] {
      std::lock_guard lock(ranMutex);
      ran.push_back(i);
    });
  }
  ASSERT_TRUE(eventually([&] { return started == 2; }));
  EXPECT_EQ(queue.threads(), 2u);
  EXPECT_EQ(queue.queued(), 3u);
  release.count_down();
  queue.shutdown();
  // Two threads drain the queue at once, so only the set is certain here (order: next test).
  std::sort(ran.begin(), ran.end());
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
}

TEST(ElasticTaskQueueTest, QueuedTasksRunInFifoOrder) {
  ElasticTaskQueue queue(options(1));  // one thread: start order is run order
  std::latch release(1);
  std::atomic<bool> started{false};
  queue.enqueue([&] {
    started = true;
    release.wait();
  });
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) queue.enqueue([&, i] { order.push_back(i); });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  EXPECT_EQ(queue.queued(), 5u);
  release.count_down();
  queue.shutdown();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(ElasticTaskQueueTest, IdleThreadsExit) {
  ElasticTaskQueue queue(options(8, 20ms));
  std::latch release(1);
  for (int i = 0; i < 4; ++i) queue.enqueue([&] { release.wait(); });
  ASSERT_TRUE(eventually([&] { return queue.threads() == 4; }));
  release.count_down();
  EXPECT_TRUE(eventually([&] { return queue.threads() == 0; }));
  // And the pool grows again afterwards.
  std::promise<void> ran;
  queue.enqueue([&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(10s), std::future_status::ready);
}

TEST(ElasticTaskQueueTest, ShutdownRunsQueuedTasksThenDropsNewOnes) {
  ElasticTaskQueue queue(options(1));
  std::latch release(1);
  std::atomic<int> done{0};
  queue.enqueue([&] { release.wait(); });
  for (int i = 0; i < 5; ++i) queue.enqueue([&] { ++done; });
  auto shut = std::async(std::launch::async, [&] { queue.shutdown(); });
  release.count_down();
  shut.get();
  EXPECT_EQ(done, 5);
  queue.enqueue([&] { ++done; });
  EXPECT_EQ(done, 5);
  EXPECT_EQ(queue.threads(), 0u);
}

TEST(ElasticTaskQueueTest, WorksAsHttplibTaskQueue) {
  std::unique_ptr<httplib::TaskQueue> queue = std::make_unique<ElasticTaskQueue>(options(2));
  std::promise<void> ran;
  queue->enqueue([&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(10s), std::future_status::ready);
  queue->shutdown();
}

}  // namespace
}  // namespace mka::net
