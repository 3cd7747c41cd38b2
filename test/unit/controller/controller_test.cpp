#include "mka/controller/controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>

#include "mka/common/log.h"
#include "mka/kube/api_error.h"
#include "support/eventually.h"
#include "support/reconcile_counts.h"

namespace mka::controller {
namespace {

using namespace std::chrono_literals;
using test::eventually;

TEST(ResultTest, SoonerIgnoresDone) {
  EXPECT_EQ(Result::sooner(Result::done(), Result::after(5s)), Result::after(5s));
  EXPECT_EQ(Result::sooner(Result::after(3s), Result::after(5s)), Result::after(3s));
  EXPECT_EQ(Result::sooner(Result::after(3s), Result::done()), Result::after(3s));
}

TEST(ControllerTest, ReconcilesEachKeyAndReportsResults) {
  test::ReconcileCounts observer;
  std::mutex mutex;
  std::map<std::string, int> seen;
  Controller controller({"test", 2, &observer}, [&](const std::string& key) {
    std::lock_guard lock(mutex);
    ++seen[key];
    return Result::done();
  });
  controller.start();
  controller.enqueue("a");
  controller.enqueue("b");
  ASSERT_TRUE(eventually([&] { return controller.reconciles() >= 2 && controller.idle(); }));
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen["a"], 1);
  EXPECT_EQ(seen["b"], 1);
  EXPECT_EQ(observer.count("test", "success"), 2);
}

TEST(ControllerTest, QueuedIsTrueUntilAWorkerTakesTheKey) {
  std::promise<void> release;
  const std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  Controller controller({"test", 1, nullptr}, [&](const std::string&) {
    ++started;
    released.wait();
    return Result::done();
  });
  controller.enqueue("a");
  EXPECT_TRUE(controller.queued("a")) << "not started: the key waits in the queue";
  EXPECT_FALSE(controller.queued("b"));
  controller.start();
  ASSERT_TRUE(eventually([&] { return started.load() == 1; }));
  EXPECT_FALSE(controller.queued("a")) << "taken by the worker, nothing new since";
  controller.enqueue("a");
  EXPECT_TRUE(controller.queued("a")) << "changed during its reconcile: reconciled again";
  release.set_value();
  ASSERT_TRUE(eventually([&] { return started.load() == 2 && controller.idle(); }));
  EXPECT_FALSE(controller.queued("a"));
}

TEST(ControllerTest, AnErrorRetriesTheKeyWithBackoffUntilItSucceeds) {
  test::ReconcileCounts observer;
  std::atomic<int> calls{0};
  Controller controller({"test", 1, &observer}, [&](const std::string&) {
    if (++calls < 3) throw std::runtime_error("not yet");
    return Result::done();
  });
  controller.start();
  controller.enqueue("a");
  ASSERT_TRUE(eventually([&] { return calls.load() == 3 && controller.idle(); }));
  EXPECT_EQ(observer.count("test", "error"), 2);
  EXPECT_EQ(observer.count("test", "success"), 1);
}

// A conflict or a NotFound is a stale read (the object changed or was deleted since the cache
// saw it), retried like any error but logged at debug for the first retries: a fleet with many
// writers and finished jobs would otherwise warn on every ordinary race. One that persists warns,
// as other failures do.
TEST(ControllerTest, StaleReadsAreLoggedAtDebugUntilTheyPersistAndOtherFailuresWarn) {
  const auto previous = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  sink->set_formatter(log::makeFormatter(log::Format::Text));
  auto logger = std::make_shared<spdlog::logger>("controller-test", sink);
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
  std::atomic<int> calls{0};
  {
    Controller controller({"test", 1, nullptr}, [&](const std::string&) {
      ++calls;
      if (calls == 1) throw kube::ApiError(kube::Reason::Conflict, 409, "PUT /x: the object has been modified");
      if (calls == 2) throw kube::ApiError(kube::Reason::NotFound, 404, "PUT /x: not found");
      if (calls == 3) throw kube::ApiError(kube::Reason::Forbidden, 403, "PUT /x: forbidden");
      if (calls == 4) throw kube::ApiError(kube::Reason::NotFound, 404, "PUT /x: not found");
      return Result::done();
    });
    controller.start();
    controller.enqueue("a");
    ASSERT_TRUE(eventually([&] { return calls.load() == 5 && controller.idle(); }));
  }
  spdlog::set_default_logger(previous);
  static_assert(Controller::kStaleCacheRetries == 3, "the fourth call is the first past the stale retries");
  const auto lines = sink->last_formatted();
  ASSERT_EQ(lines.size(), 4u) << ::testing::PrintToString(lines);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"debug", "retries=0"}, {"debug", "retries=1"}, {"warn", "retries=2"}, {"warn", "retries=3"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    EXPECT_THAT(lines[i], ::testing::HasSubstr(" level=" + expected[i].first + " "));
    EXPECT_THAT(lines[i], ::testing::HasSubstr(R"(msg="reconcile failed" controller=test key=a )" + expected[i].second +
                                               " error="));
  }
}

TEST(ControllerTest, RequeueAfterBringsTheKeyBackWhenTheClockSaysSo) {
  FakeClock clock;
  std::atomic<int> calls{0};
  Controller controller(
      {"test", 1, nullptr},
      [&](const std::string&) {
        ++calls;
        return calls == 1 ? Result::after(1min) : Result::done();
      },
      clock);
  controller.start();
  controller.enqueue("a");
  ASSERT_TRUE(eventually([&] { return calls.load() == 1 && controller.idle(); }));
  clock.advance(30s);
  controller.recheckClock();
  ASSERT_TRUE(controller.idle());
  EXPECT_EQ(calls.load(), 1) << "not before its time";
  clock.advance(31s);
  controller.recheckClock();
  ASSERT_TRUE(eventually([&] { return calls.load() == 2 && controller.idle(); }));
}

TEST(ControllerTest, StopLetsTheKeyInProgressFinish) {
  std::atomic<bool> finished{false};
  std::atomic<bool> started{false};
  Controller controller({"test", 1, nullptr}, [&](const std::string&) {
    started = true;
    std::this_thread::sleep_for(50ms);  // a reconcile in flight while stop() is called
    finished = true;
    return Result::done();
  });
  controller.start();
  controller.enqueue("a");
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  controller.stop();
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace mka::controller
