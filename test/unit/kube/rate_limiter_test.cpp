#include "mka/kube/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include "support/eventually.h"
#include "support/table_test.h"

namespace mka::kube {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;
using test::eventually;

// ---------------------------------------------------------------------------------------------
// TokenBucket

TEST(TokenBucketTest, StartsFullThenThrottlesToQps) {
  FakeClock clock;
  TokenBucket bucket(TokenBucket::kDefaultQps, TokenBucket::kDefaultBurst, clock);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(bucket.tryAccept()) << "burst token " << i;
  EXPECT_FALSE(bucket.tryAccept());

  // 5 qps: one token every 200 ms, not sooner.
  clock.advance(199ms);
  EXPECT_FALSE(bucket.tryAccept());
  clock.advance(1ms);
  EXPECT_TRUE(bucket.tryAccept());
  EXPECT_FALSE(bucket.tryAccept());
}

TEST(TokenBucketTest, RefillStopsAtBurst) {
  FakeClock clock;
  TokenBucket bucket(5, 10, clock);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(bucket.tryAccept());
  clock.advance(1h);
  int accepted = 0;
  while (bucket.tryAccept()) ++accepted;
  EXPECT_EQ(accepted, 10);
}

TEST(TokenBucketTest, ReserveQueuesCallersBehindEachOther) {
  FakeClock clock;
  TokenBucket bucket(10, 2, clock);
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 100ms);
  EXPECT_EQ(bucket.reserve(), 200ms);
  // Reserved tokens are spoken for: nothing to try-accept until they are paid back.
  clock.advance(200ms);
  EXPECT_FALSE(bucket.tryAccept());
  EXPECT_EQ(bucket.reserve(), 100ms);
}

TEST(TokenBucketTest, UnlimitedAcceptsEverything) {
  FakeClock clock;
  TokenBucket bucket(std::numeric_limits<double>::infinity(), 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(bucket.tryAccept());
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_TRUE(bucket.accept());
}

struct BucketSettings {
  std::string name;
  double qps;
  int burst;
};

std::vector<BucketSettings> settingsThatNeverAccept() {
  return {
      {"zero qps", 0, 10},  {"negative qps", -1, 10},  {"NaN qps", std::nan(""), 10},
      {"zero burst", 5, 0}, {"negative burst", 5, -3},
  };
}

MKA_TABLE_TEST(TokenBucketTest, RejectsSettingsThatWouldNeverAccept, BucketSettings, settingsThatNeverAccept()) {
  const BucketSettings& c = testCase();
  EXPECT_THROW(TokenBucket(c.qps, c.burst), std::invalid_argument);
}

TEST(TokenBucketTest, AcceptReturnsAtOnceWhileTokensLast) {
  FakeClock clock;
  TokenBucket bucket(1, 3, clock);
  // The fake clock never moves: if accept() needed time to pass it would never return.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(bucket.accept());
  EXPECT_FALSE(bucket.tryAccept());
}

TEST(TokenBucketTest, AcceptBlocksUntilTheClockReachesItsToken) {
  FakeClock clock;
  TokenBucket bucket(1, 1, clock);
  ASSERT_TRUE(bucket.tryAccept());

  std::atomic<bool> accepted{false};
  std::thread caller([&] { accepted = bucket.accept(); });
  ASSERT_TRUE(eventually([&] { return bucket.waiting() == 1; }));

  // Half way: still blocked (the fake clock is the only way its token can arrive).
  clock.advance(500ms);
  bucket.recheckClock();
  EXPECT_EQ(bucket.waiting(), 1u);
  EXPECT_FALSE(accepted);

  clock.advance(500ms);
  bucket.recheckClock();
  caller.join();
  EXPECT_TRUE(accepted);
  EXPECT_EQ(bucket.waiting(), 0u);
  EXPECT_FALSE(bucket.tryAccept());  // the waiter took the refilled token
}

TEST(TokenBucketTest, StopReleasesBlockedAcceptAndHandsTheTokenBack) {
  FakeClock clock;
  TokenBucket bucket(1, 1, clock);
  ASSERT_TRUE(bucket.tryAccept());

  std::atomic<int> result{-1};
  std::thread caller([&] { result = bucket.accept() ? 1 : 0; });
  ASSERT_TRUE(eventually([&] { return bucket.waiting() == 1; }));
  bucket.stop();
  caller.join();
  EXPECT_EQ(result, 0);
  EXPECT_TRUE(bucket.stopped());

  // The cancelled reservation was returned: one second later exactly one token is there.
  // Had the stopped waiter kept it, the bucket would still be empty.
  clock.advance(1s);
  EXPECT_TRUE(bucket.tryAccept());
  EXPECT_FALSE(bucket.tryAccept());

  // Once stopped, blocking calls refuse at once, even with tokens available.
  clock.advance(1s);
  EXPECT_FALSE(bucket.accept());
  EXPECT_FALSE(bucket.acceptBefore(clock.now() + 1h));
}

// A caller that stops (an informer whose owner stops it) leaves the wait and hands its token
// back; the bucket goes on for the others.
TEST(TokenBucketTest, ACallersStopReleasesThatCallerOnlyAndHandsItsTokenBack) {
  FakeClock clock;
  TokenBucket bucket(1, 1, clock);
  ASSERT_TRUE(bucket.tryAccept());

  std::stop_source stopping;
  std::atomic<int> result{-1};
  std::thread caller([&] { result = bucket.accept(stopping.get_token()) ? 1 : 0; });
  ASSERT_TRUE(eventually([&] { return bucket.waiting() == 1; }));
  stopping.request_stop();
  caller.join();
  EXPECT_EQ(result, 0);
  EXPECT_FALSE(bucket.stopped());
  EXPECT_FALSE(bucket.accept(stopping.get_token())) << "a stopped caller is refused at once";

  // One second later exactly one token is there: the stopped caller's went back.
  clock.advance(1s);
  EXPECT_TRUE(bucket.tryAccept());
  EXPECT_FALSE(bucket.tryAccept());
  clock.advance(1s);
  EXPECT_TRUE(bucket.accept()) << "the others' calls go on";
}

TEST(TokenBucketTest, StopReleasesEveryBlockedCaller) {
  FakeClock clock;
  TokenBucket bucket(1, 1, clock);
  ASSERT_TRUE(bucket.tryAccept());
  std::atomic<int> refused{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&] {
      if (!bucket.accept()) ++refused;
    });
  }
  ASSERT_TRUE(eventually([&] { return bucket.waiting() == 4; }));
  bucket.stop();
  for (auto& t : callers) t.join();
  EXPECT_EQ(refused, 4);
}

TEST(TokenBucketTest, AcceptBeforeGivesUpWhenTheTokenComesTooLate) {
  FakeClock clock;
  TokenBucket bucket(1, 1, clock);
  ASSERT_TRUE(bucket.tryAccept());
  // The next token is 1 s away: a 500 ms deadline fails at once and takes nothing.
  EXPECT_FALSE(bucket.acceptBefore(clock.now() + 500ms));
  EXPECT_FALSE(bucket.acceptBefore(clock.now() - 1s));
  clock.advance(1s);
  EXPECT_TRUE(bucket.tryAccept());
}

TEST(TokenBucketTest, AcceptBeforeWaitsWhenTheTokenComesInTime) {
  FakeClock clock;
  TokenBucket bucket(1, 1, clock);
  ASSERT_TRUE(bucket.tryAccept());
  std::atomic<bool> accepted{false};
  std::thread caller([&] { accepted = bucket.acceptBefore(clock.now() + 2s); });
  ASSERT_TRUE(eventually([&] { return bucket.waiting() == 1; }));
  EXPECT_FALSE(accepted);
  clock.advance(1s);
  bucket.recheckClock();
  caller.join();
  EXPECT_TRUE(accepted);
}

// The only real-clock test: asserts that a throttled accept() returns, in order, never how fast.
TEST(TokenBucketTest, AcceptWithTheRealClockEventuallyReturns) {
  TokenBucket bucket(200, 1);
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(bucket.accept());
    order.push_back(i);
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

// ---------------------------------------------------------------------------------------------
// Per-item limiters

TEST(ItemExponentialFailureRateLimiterTest, DoublesPerFailureFromFiveMillisecondsUpToTheCap) {
  ItemExponentialFailureRateLimiter limiter;  // client-go's defaults: 5 ms .. 1000 s
  const std::vector<nanoseconds> expected = {5ms, 10ms, 20ms, 40ms, 80ms, 160ms, 320ms, 640ms, 1280ms, 2560ms};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(limiter.when("ns/a"), expected[i]) << "failure " << i;
  }
  EXPECT_EQ(limiter.numRequeues("ns/a"), 10);
  // 5 ms * 2^17 = 655.36 s, 5 ms * 2^18 = 1310.72 s > 1000 s.
  for (int i = 10; i < 17; ++i) limiter.when("ns/a");
  EXPECT_EQ(limiter.when("ns/a"), 655360ms);
  EXPECT_EQ(limiter.when("ns/a"), 1000s);
  EXPECT_EQ(limiter.when("ns/a"), 1000s);
}

TEST(ItemExponentialFailureRateLimiterTest, LongFailureStreaksSaturateInsteadOfOverflowing) {
  ItemExponentialFailureRateLimiter limiter(1s, 1000s);
  for (int i = 0; i < 2000; ++i) {
    const auto d = limiter.when("k");
    ASSERT_GT(d, 0ns) << "failure " << i;
    ASSERT_LE(d, 1000s) << "failure " << i;
  }
  EXPECT_EQ(limiter.when("k"), 1000s);
}

TEST(ItemExponentialFailureRateLimiterTest, ForgetResetsOneKeyOnly) {
  ItemExponentialFailureRateLimiter limiter(1ms, 1s);
  limiter.when("a");
  limiter.when("a");
  limiter.when("b");
  EXPECT_EQ(limiter.numRequeues("a"), 2);
  EXPECT_EQ(limiter.numRequeues("b"), 1);

  limiter.forget("a");
  EXPECT_EQ(limiter.numRequeues("a"), 0);
  EXPECT_EQ(limiter.when("a"), 1ms);
  EXPECT_EQ(limiter.when("b"), 2ms);
  EXPECT_EQ(limiter.numRequeues("never-seen"), 0);
}

TEST(ItemExponentialFailureRateLimiterTest, RejectsNegativeOrInvertedDelays) {
  EXPECT_THROW(ItemExponentialFailureRateLimiter(-1ms, 1s), std::invalid_argument);
  EXPECT_THROW(ItemExponentialFailureRateLimiter(2s, 1s), std::invalid_argument);
}

TEST(ItemFastSlowRateLimiterTest, FastForTheFirstAttemptsThenSlow) {
  ItemFastSlowRateLimiter limiter(5ms, 10s, 3);
  EXPECT_EQ(limiter.when("a"), 5ms);
  EXPECT_EQ(limiter.when("a"), 5ms);
  EXPECT_EQ(limiter.when("a"), 5ms);
  EXPECT_EQ(limiter.when("a"), 10s);
  EXPECT_EQ(limiter.when("b"), 5ms);
  EXPECT_EQ(limiter.numRequeues("a"), 4);
  limiter.forget("a");
  EXPECT_EQ(limiter.numRequeues("a"), 0);
  EXPECT_EQ(limiter.when("a"), 5ms);
}

TEST(BucketRateLimiterTest, BurstFreeThenOneRetryPerTenthOfASecondOverall) {
  FakeClock clock;
  BucketRateLimiter limiter(BucketRateLimiter::kDefaultQps, BucketRateLimiter::kDefaultBurst, clock);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(limiter.when("key-" + std::to_string(i)), 0ns) << i;
  // The bucket is shared: a brand-new key waits behind everyone else.
  EXPECT_EQ(limiter.when("other"), 100ms);
  EXPECT_EQ(limiter.when("another"), 200ms);
  clock.advance(1s);
  EXPECT_EQ(limiter.when("later"), 0ns);  // 10 tokens came back, 2 were owed
  EXPECT_EQ(limiter.numRequeues("other"), 0);
  limiter.forget("other");  // nothing per key to forget
  EXPECT_EQ(limiter.when("later-2"), 0ns);
}

TEST(MaxOfRateLimiterTest, TakesTheLongestWaitAndTheMostRequeues) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemFastSlowRateLimiter>(5ms, 3s, 3));
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(1ms, 1s));
  MaxOfRateLimiter limiter(std::move(limiters));

  EXPECT_EQ(limiter.when("a"), 5ms);  // fast 5ms vs exponential 1ms
  EXPECT_EQ(limiter.when("a"), 5ms);  // 5ms vs 2ms
  EXPECT_EQ(limiter.when("a"), 5ms);  // 5ms vs 4ms
  EXPECT_EQ(limiter.when("a"), 3s);   // slow 3s vs 8ms
  EXPECT_EQ(limiter.numRequeues("a"), 4);

  limiter.forget("a");  // reaches both limiters
  EXPECT_EQ(limiter.numRequeues("a"), 0);
  EXPECT_EQ(limiter.when("a"), 5ms);

  // Every limiter keeps counting even when it is not the maximum.
  for (int i = 0; i < 8; ++i) limiter.when("b");
  EXPECT_EQ(limiter.when("b"), 3s);  // slow 3s vs exponential 256ms
  EXPECT_EQ(limiter.numRequeues("b"), 9);
}

TEST(MaxOfRateLimiterTest, RejectsNoLimiters) {
  EXPECT_THROW(MaxOfRateLimiter({}), std::invalid_argument);
  std::vector<std::unique_ptr<RateLimiter>> withNull;
  withNull.push_back(nullptr);
  EXPECT_THROW(MaxOfRateLimiter(std::move(withNull)), std::invalid_argument);
}

TEST(DefaultControllerRateLimiterTest, PerKeyBackoffUntilTheOverallBucketRunsDry) {
  FakeClock clock;
  auto limiter = defaultControllerRateLimiter(clock);
  EXPECT_EQ(limiter->when("a"), 5ms);
  EXPECT_EQ(limiter->when("a"), 10ms);
  EXPECT_EQ(limiter->when("a"), 20ms);
  EXPECT_EQ(limiter->numRequeues("a"), 3);
  limiter->forget("a");
  EXPECT_EQ(limiter->when("a"), 5ms);

  // 4 bucket tokens used so far; the other 96 of the burst of 100 are free.
  for (int i = 0; i < 96; ++i) ASSERT_EQ(limiter->when("key-" + std::to_string(i)), 5ms) << i;
  // Then 10 qps overall decides, over a first failure's 5 ms.
  EXPECT_EQ(limiter->when("b"), 100ms);
  EXPECT_EQ(limiter->when("c"), 200ms);
}

}  // namespace
}  // namespace mka::kube
