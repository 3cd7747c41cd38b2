#include "mka/common/clock.h"

#include <gtest/gtest.h>

namespace mka {
namespace {

TEST(Rfc3339, FormatsUtcWholeSeconds) {
  using namespace std::chrono;
  EXPECT_EQ(toRfc3339(Clock::TimePoint{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(toRfc3339(Clock::TimePoint{seconds{1'800'000'000} + milliseconds{999}}), "2027-01-15T08:00:00Z");
  EXPECT_EQ(toRfc3339(Clock::TimePoint{seconds{-1} + milliseconds{500}}), "1969-12-31T23:59:59Z");
}

}  // namespace
}  // namespace mka
