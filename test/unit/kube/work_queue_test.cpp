#include "mka/kube/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/eventually.h"

namespace mka::kube {
namespace {

using namespace std::chrono_literals;
using test::eventually;

// A queue on a fake clock, retried with 1 s, 2 s, 4 s ... so delays are easy to step through.
WorkQueue::Options testOptions(std::string name = "test") {
  WorkQueue::Options options;
  options.name = std::move(name);
  options.rateLimiter = std::make_unique<ItemExponentialFailureRateLimiter>(1s, 1min);
  return options;
}

// Takes every ready key, in order, marking each done.
std::vector<std::string> drainReady(WorkQueue& queue) {
  std::vector<std::string> keys;
  while (queue.len() > 0) {
    auto key = queue.get();
    if (!key) break;
    keys.push_back(*key);
    queue.done(*key);
  }
  return keys;
}

// ---------------------------------------------------------------------------------------------
// The queue itself: de-duplication, one worker per key, shutdown

TEST(WorkQueueTest, AKeyAddedSeveralTimesIsHandedOutOnce) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/a");
  queue.add("ns/b");
  queue.add("ns/a");
  queue.add("ns/a");
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(queue.get(), "ns/a");
  EXPECT_EQ(queue.get(), "ns/b");
  queue.done("ns/a");
  queue.done("ns/b");
  EXPECT_EQ(queue.len(), 0u);
  queue.shutDown();
  EXPECT_EQ(queue.get(), std::nullopt);  // no second "ns/a"
}

TEST(WorkQueueTest, HandsKeysOutInTheOrderTheyWereFirstAdded) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  for (const char* key : {"c", "a", "b", "a", "c"}) queue.add(key);
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"c", "a", "b"}));
}

TEST(WorkQueueTest, AKeyAddedWhileProcessedComesBackAfterDone) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/a");
  ASSERT_EQ(queue.get(), "ns/a");

  queue.add("ns/a");
  queue.add("ns/a");
  EXPECT_EQ(queue.len(), 0u) << "a key being processed must not be handed to a second worker";

  queue.done("ns/a");
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(queue.get(), "ns/a");
  queue.done("ns/a");
  EXPECT_EQ(queue.len(), 0u);
}

TEST(WorkQueueTest, QueuedSaysWhetherAGetWillHandTheKeyOut) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  EXPECT_FALSE(queue.queued("ns/a"));
  queue.add("ns/a");
  EXPECT_TRUE(queue.queued("ns/a"));
  ASSERT_EQ(queue.get(), "ns/a");
  EXPECT_FALSE(queue.queued("ns/a")) << "being processed, with nothing new since it was taken";
  queue.add("ns/a");
  EXPECT_TRUE(queue.queued("ns/a")) << "added again while processed: it comes back after done";
  queue.done("ns/a");
  EXPECT_TRUE(queue.queued("ns/a"));
  ASSERT_EQ(queue.get(), "ns/a");
  queue.done("ns/a");
  EXPECT_FALSE(queue.queued("ns/a"));
  queue.addAfter("ns/b", 10s);
  EXPECT_FALSE(queue.queued("ns/b")) << "a key waiting for its delay is not queued yet";
  clock.advance(10s);
  queue.recheckClock();
  EXPECT_TRUE(queue.queued("ns/b"));
}

TEST(WorkQueueTest, DoneForAKeyNotBeingProcessedThrows) {
  FakeClock clock;
  WorkQueue queue(testOptions("orders"), clock);
  queue.add("ns/a");
  try {
    queue.done("ns/a");  // queued, not taken
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(),
                 "work queue orders: done(\"ns/a\") for a key that is not being processed: call done exactly once "
                 "for each key get() returned");
  }
  ASSERT_EQ(queue.get(), "ns/a");
  queue.done("ns/a");
  EXPECT_THROW(queue.done("ns/a"), std::logic_error);  // twice
  EXPECT_EQ(queue.len(), 0u);
}

TEST(WorkQueueTest, NoKeyIsEverHeldByTwoWorkersAndNoAddIsLost) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  constexpr int kKeys = 5;
  constexpr int kWorkers = 4;
  constexpr int kProducers = 2;
  constexpr int kAddsPerProducer = 3000;

  std::mutex mutex;  // guards the bookkeeping below
  std::set<std::string> held;
  int overlaps = 0;
  std::atomic<int> doneErrors{0};
  // A global sequence orders events: every add must be followed by a get of that key.
  std::uint64_t sequence = 0;
  std::map<std::string, std::uint64_t> lastAdd;
  std::map<std::string, std::uint64_t> lastGet;

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.get()) {
        {
          std::lock_guard lock(mutex);
          if (!held.insert(*key).second) ++overlaps;
          lastGet[*key] = ++sequence;
        }
        // Widen the window in which a second worker could take the same key.
        for (int i = 0; i < 20; ++i) std::this_thread::yield();
        {
          std::lock_guard lock(mutex);
          held.erase(*key);
        }
        try {
          queue.done(*key);
        } catch (const std::logic_error&) {
          ++doneErrors;  // two workers held the key, and the first one's done() ended both
        }
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::mt19937 random(static_cast<unsigned>(p));
      for (int i = 0; i < kAddsPerProducer; ++i) {
        const std::string key = "ns/key-" + std::to_string(random() % kKeys);
        {
          std::lock_guard lock(mutex);
          lastAdd[key] = ++sequence;
        }
        // Both priorities: raises of waiting Low keys and Low adds of held keys happen too.
        queue.add(key, random() % 2 == 0 ? WorkQueue::Priority::Low : WorkQueue::Priority::Normal);
        std::this_thread::yield();  // let workers run between adds, so keys are added while held
      }
    });
  }
  for (auto& t : producers) t.join();
  // Workers keep taking what is queued after shutdown and exit once the queue is empty.
  queue.shutDownWithDrain();
  for (auto& t : workers) t.join();

  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(doneErrors, 0);
  EXPECT_TRUE(held.empty());
  for (const auto& [key, added] : lastAdd) {
    EXPECT_GT(lastGet[key], added) << key << " was added and never processed afterwards";
  }
}

// ---------------------------------------------------------------------------------------------
// Priorities

constexpr auto kLow = WorkQueue::Priority::Low;
constexpr auto kNormal = WorkQueue::Priority::Normal;

TEST(WorkQueueTest, LowKeysGoAfterEveryNormalKeyInTheOrderOfEachLevel) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/low-1", kLow);
  queue.add("ns/normal-1");
  queue.add("ns/low-2", kLow);
  queue.add("ns/normal-2", kNormal);
  EXPECT_EQ(queue.len(), 4u);
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/normal-1", "ns/normal-2", "ns/low-1", "ns/low-2"}));
}

TEST(WorkQueueTest, AWaitingLowKeyAddedAsNormalIsRaisedAndStillHandedOutOnce) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/a", kLow);
  queue.add("ns/b", kLow);
  queue.add("ns/b");        // raised: ahead of ns/a
  queue.add("ns/b", kLow);  // a Low add does not lower it again
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/b", "ns/a"}));
  EXPECT_EQ(queue.len(), 0u);
  // The raised key's old Low place is not handed out as a second ns/b.
  queue.add("ns/c", kLow);
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/c"}));
  queue.shutDown();
  EXPECT_EQ(queue.get(), std::nullopt);
}

TEST(WorkQueueTest, AKeyLeavesNoStateBehindOnceDoneRaisedOrNot) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.push_back("ns/job-" + std::to_string(1000 + i));
  for (const auto& key : keys) queue.add(key, kLow);  // an informer's initial list
  for (int i = 0; i < 50; ++i) queue.add(keys[i]);    // raised: their Low entries go stale
  EXPECT_EQ(queue.trackedKeys(), 100u);
  std::set<std::string> handedOut;
  while (queue.len() > 0) {
    const auto key = queue.get();
    ASSERT_TRUE(key.has_value());
    EXPECT_TRUE(handedOut.insert(*key).second) << *key << " handed out twice";
    queue.done(*key);
  }
  EXPECT_EQ(handedOut.size(), 100u);
  // The stale Low entries came out (skipped) before the live ones, so every key is forgotten.
  EXPECT_EQ(queue.unfinished(), 0u);
  EXPECT_EQ(queue.trackedKeys(), 0u);
}

TEST(WorkQueueTest, AKeyAddedWhileHeldComesBackWithThePriorityItWasAddedWith) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/held");
  ASSERT_EQ(queue.get(), "ns/held");
  queue.add("ns/held", kLow);
  queue.add("ns/other", kLow);
  queue.done("ns/held");  // back as Low, behind ns/other
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/other", "ns/held"}));

  queue.add("ns/held");
  ASSERT_EQ(queue.get(), "ns/held");
  queue.add("ns/held", kLow);
  queue.add("ns/other", kLow);
  queue.add("ns/held");  // raised while held
  queue.done("ns/held");
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/held", "ns/other"}));
}

WorkQueue::Options holdOptions() {
  auto options = testOptions();
  options.normalHold = 50ms;
  return options;
}

TEST(WorkQueueTest, WhileLowKeysWaitANormalKeyIsHeldForItsWindowAndGathersItsEvents) {
  FakeClock clock;
  WorkQueue queue(holdOptions(), clock);
  queue.add("ns/low-1", kLow);
  queue.add("ns/low-2", kLow);
  queue.add("ns/event");
  EXPECT_EQ(queue.get(), "ns/low-1") << "a Normal key younger than the hold lets a Low key go first";
  queue.done("ns/low-1");
  queue.add("ns/event");  // a second event joins the held key
  clock.advance(50ms);
  EXPECT_EQ(queue.get(), "ns/event") << "held long enough: ahead of the Low keys again";
  queue.done("ns/event");
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/low-2"}));
}

TEST(WorkQueueTest, WithoutLowKeysOrWithNothingElseReadyANormalKeyIsNeverHeld) {
  FakeClock clock;
  WorkQueue queue(holdOptions(), clock);
  queue.add("ns/event");
  EXPECT_EQ(queue.get(), "ns/event") << "no Low key waits: no hold";
  queue.done("ns/event");

  queue.add("ns/low", kLow);
  queue.add("ns/event");
  EXPECT_EQ(queue.get(), "ns/low");
  EXPECT_EQ(queue.get(), "ns/event") << "only a held key is ready: handed out rather than waited for";
  queue.done("ns/low");
  queue.done("ns/event");
  EXPECT_EQ(queue.len(), 0u);
}

TEST(WorkQueueTest, ShutDownReleasesBlockedWorkers) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  std::atomic<int> entered{0};
  std::atomic<int> released{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      ++entered;
      if (!queue.get()) ++released;
    });
  }
  ASSERT_TRUE(eventually([&] { return entered == 3; }));
  queue.shutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(released, 3);
  EXPECT_TRUE(queue.shuttingDown());
}

TEST(WorkQueueTest, AfterShutDownQueuedKeysAreStillHandedOutButAddsAreIgnored) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("a");
  queue.add("b");
  queue.shutDown();
  queue.add("c");
  queue.addAfter("d", 0s);
  queue.addRateLimited("e");
  EXPECT_EQ(queue.get(), "a");
  EXPECT_EQ(queue.get(), "b");
  EXPECT_EQ(queue.get(), std::nullopt);
  queue.done("a");
  queue.done("b");
  queue.shutDown();  // idempotent
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForKeysBeingProcessed) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/a");
  ASSERT_EQ(queue.get(), "ns/a");

  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    queue.shutDownWithDrain();
    returned = true;
  });
  ASSERT_TRUE(eventually([&] { return queue.shuttingDown(); }));
  // Watch for a while: it must not return while "ns/a" is held.
  EXPECT_FALSE(eventually([&] { return returned.load(); }, 100ms));
  queue.add("ns/b");
  EXPECT_EQ(queue.len(), 0u) << "adds are ignored while draining";

  queue.done("ns/a");
  stopper.join();
  EXPECT_TRUE(returned);
}

TEST(WorkQueueTest, ShutDownEndsAWaitingShutDownWithDrain) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("ns/a");
  ASSERT_EQ(queue.get(), "ns/a");
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    queue.shutDownWithDrain();
    returned = true;
  });
  ASSERT_TRUE(eventually([&] { return queue.shuttingDown(); }));
  EXPECT_FALSE(eventually([&] { return returned.load(); }, 100ms));
  queue.shutDown();
  stopper.join();
  EXPECT_TRUE(returned);
  queue.done("ns/a");
}

// ---------------------------------------------------------------------------------------------
// Delays

TEST(WorkQueueTest, AddAfterReleasesKeysInReadyTimeOrderAsTheClockAdvances) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.addAfter("b", 2s);
  queue.addAfter("a", 1s);
  queue.addAfter("c", 3s);
  queue.addAfter("c2", 3s);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u);

  clock.advance(999ms);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u);

  clock.advance(1ms);
  queue.recheckClock();
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"a"}));

  clock.advance(5s);
  queue.recheckClock();
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"b", "c", "c2"}));
}

TEST(WorkQueueTest, AddAfterKeepsTheEarlierTimeForAKeyAlreadyWaiting) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.addAfter("sooner", 10s);
  queue.addAfter("sooner", 1s);  // moves it earlier
  queue.addAfter("later", 1s);
  queue.addAfter("later", 10s);  // does not postpone it
  clock.advance(1s);
  queue.recheckClock();
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"sooner", "later"}));
  clock.advance(20s);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u) << "each key waited once";
}

TEST(WorkQueueTest, AddAfterWithoutDelayAddsAtOnce) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.addAfter("zero", 0s);
  queue.addAfter("negative", -5s);
  EXPECT_EQ(queue.len(), 2u);
}

TEST(WorkQueueTest, ADelayedKeyAlreadyQueuedIsStillHandedOutOnce) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.add("a");
  queue.addAfter("a", 1s);
  clock.advance(1s);
  queue.recheckClock();
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"a"}));
}

TEST(WorkQueueTest, TheTimerThreadReleasesDelayedKeysByItself) {
  // No recheckClock(): the timer thread notices the advanced fake clock when its own short
  // wait ends. Asserts that it happens, not how fast.
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.addAfter("a", 20ms);
  clock.advance(20ms);
  EXPECT_TRUE(eventually([&] { return queue.len() == 1; }));
}

TEST(WorkQueueTest, TheTimerThreadReleasesDelayedKeysOnTheRealClock) {
  WorkQueue queue(WorkQueue::Options{});
  queue.addAfter("a", 1ms);
  queue.addAfter("b", 5ms);
  EXPECT_EQ(queue.get(), "a");  // blocks until the timer thread moves it
  EXPECT_EQ(queue.get(), "b");
  queue.done("a");
  queue.done("b");
}

TEST(WorkQueueTest, DelayedKeysAreDroppedAtShutDown) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);
  queue.addAfter("a", 1s);
  queue.shutDown();
  clock.advance(1s);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.get(), std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// Rate-limited retries

TEST(WorkQueueTest, AddRateLimitedBacksOffPerKeyAndForgetResets) {
  FakeClock clock;
  WorkQueue queue(testOptions(), clock);  // 1 s, 2 s, 4 s ...

  queue.addRateLimited("ns/a");
  EXPECT_EQ(queue.numRequeues("ns/a"), 1);
  clock.advance(999ms);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(1ms);
  queue.recheckClock();
  ASSERT_EQ(drainReady(queue), (std::vector<std::string>{"ns/a"}));

  queue.addRateLimited("ns/a");  // second failure: 2 s
  EXPECT_EQ(queue.numRequeues("ns/a"), 2);
  clock.advance(1s);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(1s);
  queue.recheckClock();
  ASSERT_EQ(drainReady(queue), (std::vector<std::string>{"ns/a"}));

  queue.forget("ns/a");  // success: the next failure starts over at 1 s
  EXPECT_EQ(queue.numRequeues("ns/a"), 0);
  queue.addRateLimited("ns/a");
  clock.advance(1s);
  queue.recheckClock();
  EXPECT_EQ(drainReady(queue), (std::vector<std::string>{"ns/a"}));
}

TEST(WorkQueueTest, DefaultRateLimiterRetriesAFirstFailureAfterFiveMilliseconds) {
  FakeClock clock;
  WorkQueue queue(WorkQueue::Options{}, clock);
  queue.addRateLimited("ns/a");
  clock.advance(4ms);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(1ms);
  queue.recheckClock();
  EXPECT_EQ(queue.len(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Metrics

struct RecordingMetrics : WorkQueueMetrics {
  std::vector<std::size_t> depths;
  int adds = 0;
  int retries = 0;
  std::vector<std::chrono::nanoseconds> latencies;
  std::vector<std::chrono::nanoseconds> durations;

  void depth(std::size_t keys) override { depths.push_back(keys); }
  void added() override { ++adds; }
  void queueLatency(std::chrono::nanoseconds d) override { latencies.push_back(d); }
  void workDuration(std::chrono::nanoseconds d) override { durations.push_back(d); }
  void retried() override { ++retries; }
};

TEST(WorkQueueTest, ReportsDepthAddsLatencyWorkDurationAndRetries) {
  FakeClock clock;
  RecordingMetrics metrics;
  auto options = testOptions();
  options.metrics = &metrics;
  WorkQueue queue(std::move(options), clock);

  queue.add("a");
  queue.add("a");  // already pending: not an add
  queue.add("b");
  clock.advance(3s);
  ASSERT_EQ(queue.get(), "a");
  clock.advance(2s);
  queue.done("a");
  queue.addRateLimited("a");

  EXPECT_EQ(metrics.adds, 2);
  EXPECT_EQ(metrics.depths, (std::vector<std::size_t>{1, 2, 1}));
  EXPECT_EQ(metrics.latencies, (std::vector<std::chrono::nanoseconds>{3s}));
  EXPECT_EQ(metrics.durations, (std::vector<std::chrono::nanoseconds>{2s}));
  EXPECT_EQ(metrics.retries, 1);
  queue.shutDown();
}

}  // namespace
}  // namespace mka::kube
