// FaultInjector on its own: which requests a rule hits, how counts run out, the 410 knob, and
// latency that holds a request until it is released (no wall-clock assertions).
#include "mka/sandbox/faults.h"

#include <gtest/gtest.h>

#include <future>

#include "mka/common/errors.h"
#include "support/eventually.h"

namespace mka::sandbox {
namespace {

using namespace std::chrono_literals;
using mka::test::eventually;

TEST(FaultInjectorTest, NothingArmedServesEverything) {
  FaultInjector faults;
  const auto d = faults.onRequest("get", "configmaps", "");
  EXPECT_FALSE(d.failWith);
  EXPECT_FALSE(d.gone);
  EXPECT_EQ(d.latency, 0ms);
  EXPECT_EQ(faults.injectedFailures(), 0u);
}

TEST(FaultInjectorTest, FailNextFailsExactlyCountRequests) {
  FaultInjector faults;
  faults.failNext(2, 503);
  for (int i = 0; i < 2; ++i) {
    const auto d = faults.onRequest("list", "workloads", "");
    ASSERT_TRUE(d.failWith);
    EXPECT_EQ(*d.failWith, 503);
    EXPECT_EQ(d.retryAfterSeconds, 0);
  }
  EXPECT_FALSE(faults.onRequest("list", "workloads", "").failWith);
  EXPECT_EQ(faults.injectedFailures(), 2u);
}

TEST(FaultInjectorTest, FailNextOnlyHitsMatchingRequests) {
  FaultInjector faults;
  faults.failNext(1, 500, FaultMatch{"update", "workloads", "status"});
  EXPECT_FALSE(faults.onRequest("update", "workloads", "").failWith) << "main resource, not status";
  EXPECT_FALSE(faults.onRequest("patch", "workloads", "status").failWith) << "other verb";
  EXPECT_FALSE(faults.onRequest("update", "pipelineruns", "status").failWith) << "other resource";
  const auto hit = faults.onRequest("update", "workloads", "status");
  ASSERT_TRUE(hit.failWith);
  EXPECT_EQ(*hit.failWith, 500);
  EXPECT_FALSE(faults.onRequest("update", "workloads", "status").failWith) << "count used up";
}

TEST(FaultInjectorTest, FailNextCanHitOneClientByItsUserAgent) {
  FaultInjector faults;
  faults.failNext(2, 500, FaultMatch{.resource = "leases", .userAgent = "replica-a_"});
  const std::string a = "multikueue-adapter/v1 (linux/amd64) replica-a_x7k2",
                    b = "multikueue-adapter/v1 (linux/amd64) replica-b_q9z4";
  EXPECT_FALSE(faults.onRequest("get", "leases", "", b).failWith) << "another replica";
  EXPECT_FALSE(faults.onRequest("get", "leases", "").failWith) << "no User-Agent";
  EXPECT_FALSE(faults.onRequest("get", "workloads", "", a).failWith) << "another resource";
  EXPECT_EQ(faults.onRequest("get", "leases", "", a).failWith, 500);
  EXPECT_EQ(faults.onRequest("update", "leases", "", a).failWith, 500);
  EXPECT_FALSE(faults.onRequest("update", "leases", "", a).failWith) << "count used up";
}

// An API server that accepts a request and never answers: the matching requests are held until
// the hang is cleared; the others, and non-resource requests, are not.
TEST(FaultInjectorTest, AHangHoldsMatchingRequestsUntilCleared) {
  FaultInjector f;
  f.hang({.resource = "leases", .userAgent = "replica-a"});
  EXPECT_TRUE(f.onRequest("update", "leases", "", "x replica-a_1").hang);
  EXPECT_FALSE(f.onRequest("update", "leases", "", "x replica-b_1").hang);
  EXPECT_FALSE(f.onRequest("get", "workloads", "", "x replica-a_1").hang);
  EXPECT_FALSE(f.onRequest("get", "", "", "x replica-a_1").hang);
  auto held = std::async(std::launch::async, [&] { f.hold(); });
  ASSERT_TRUE(mka::test::eventually([&] { return f.delayedRequests() == 1; }));
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds{50}), std::future_status::timeout);
  f.clear();
  EXPECT_EQ(held.wait_for(std::chrono::seconds{10}), std::future_status::ready);
  EXPECT_FALSE(f.onRequest("update", "leases", "", "x replica-a_1").hang);
}

TEST(FaultInjectorTest, NonResourceRequestsAreNeverFailed) {
  FaultInjector faults;
  faults.failNext(1, 500);
  EXPECT_FALSE(faults.onRequest("get", "", "").failWith) << "discovery is not a resource request";
  EXPECT_TRUE(faults.onRequest("get", "namespaces", "").failWith);
}

TEST(FaultInjectorTest, RulesApplyInTheOrderArmed) {
  FaultInjector faults;
  faults.failNext(1, 500, FaultMatch{"create", "", ""});
  faults.failNext(1, 409);
  EXPECT_EQ(faults.onRequest("create", "configmaps", "").failWith, 500);
  EXPECT_EQ(faults.onRequest("create", "configmaps", "").failWith, 409);
  EXPECT_FALSE(faults.onRequest("create", "configmaps", "").failWith);
}

TEST(FaultInjectorTest, TooManyRequestsCarriesRetryAfter) {
  FaultInjector faults;
  faults.failNext(1, 429, {}, 7);
  const auto d = faults.onRequest("get", "configmaps", "");
  EXPECT_EQ(d.failWith, 429);
  EXPECT_EQ(d.retryAfterSeconds, 7);
}

TEST(FaultInjectorTest, RejectsNonsenseArguments) {
  FaultInjector faults;
  EXPECT_THROW(faults.failNext(0, 500), Error);
  EXPECT_THROW(faults.failNext(1, 200), Error);
  EXPECT_THROW(faults.failNext(1, 600), Error);
  EXPECT_THROW(faults.failNext(1, 429, {}, -1), Error);
}

TEST(FaultInjectorTest, GoneOnNextWatchHitsOnlyTheNextWatch) {
  FaultInjector faults;
  faults.goneOnNextWatch();
  EXPECT_FALSE(faults.onRequest("list", "workloads", "").gone) << "a list is not a watch";
  EXPECT_TRUE(faults.onRequest("watch", "workloads", "").gone);
  EXPECT_FALSE(faults.onRequest("watch", "workloads", "").gone) << "only once";
  EXPECT_EQ(faults.injectedFailures(), 1u);
}

TEST(FaultInjectorTest, ClearDisarmsEverything) {
  FaultInjector faults;
  faults.failNext(5, 500);
  faults.goneOnNextWatch();
  faults.setLatency(1s);
  faults.clear();
  const auto d = faults.onRequest("watch", "workloads", "");
  EXPECT_FALSE(d.failWith);
  EXPECT_FALSE(d.gone);
  EXPECT_EQ(d.latency, 0ms);
}

TEST(FaultInjectorTest, LatencyIsPartOfEveryDecision) {
  FaultInjector faults;
  faults.setLatency(250ms);
  EXPECT_EQ(faults.onRequest("get", "configmaps", "").latency, 250ms);
  EXPECT_EQ(faults.onRequest("get", "", "").latency, 250ms) << "discovery is delayed too";
}

TEST(FaultInjectorTest, DelayHoldsARequestUntilTheLatencyIsLifted) {
  FaultInjector faults;
  faults.setLatency(1h);
  auto done = std::async(std::launch::async, [&] { faults.delay(std::chrono::steady_clock::now()); });
  ASSERT_TRUE(eventually([&] { return faults.delayedRequests() == 1; }));
  EXPECT_EQ(done.wait_for(0s), std::future_status::timeout);
  faults.setLatency(0ms);
  EXPECT_EQ(done.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(faults.delayedRequests(), 0u);
}

TEST(FaultInjectorTest, CancelDelaysReleasesWaitingRequests) {
  FaultInjector faults;
  faults.setLatency(1h);
  auto first = std::async(std::launch::async, [&] { faults.delay(std::chrono::steady_clock::now()); });
  auto second = std::async(std::launch::async, [&] { faults.delay(std::chrono::steady_clock::now()); });
  ASSERT_TRUE(eventually([&] { return faults.delayedRequests() == 2; }));
  faults.cancelDelays();
  EXPECT_EQ(first.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(second.wait_for(10s), std::future_status::ready);
}

TEST(FaultInjectorTest, DelayWithoutLatencyReturnsAtOnce) {
  FaultInjector faults;
  faults.delay(std::chrono::steady_clock::now());
  EXPECT_EQ(faults.delayedRequests(), 0u);
}

TEST(FaultInjectorTest, ReasonsFollowKubeApiserver) {
  EXPECT_EQ(statusReasonFor(500), "InternalError");
  EXPECT_EQ(statusReasonFor(503), "ServiceUnavailable");
  EXPECT_EQ(statusReasonFor(429), "TooManyRequests");
  EXPECT_EQ(statusReasonFor(410), "Expired");
  EXPECT_EQ(statusReasonFor(418), "");
}

}  // namespace
}  // namespace mka::sandbox
