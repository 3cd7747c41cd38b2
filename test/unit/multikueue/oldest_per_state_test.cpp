#include "mka/multikueue/oldest_per_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

// Its own namespace: the multikueue tests share a unity build.
namespace mka::multikueue::oldest_per_state_test {
namespace {

using std::chrono::seconds;
const Clock::TimePoint kT0{seconds{1'800'000'000}};

// The changes as "state=seconds after kT0" or "state=none".
std::vector<std::string> text(const std::vector<OldestPerState::Change>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes)
    out.push_back(c.state + "=" +
                  (c.oldest ? std::to_string(std::chrono::duration_cast<seconds>(*c.oldest - kT0).count()) : "none"));
  return out;
}

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(OldestPerStateTest, ReportsOnlyTheStatesWhoseOldestMoved) {
  OldestPerState states;
  EXPECT_THAT(text(states.set("a", {{"Pending", kT0 + seconds{10}}})), ElementsAre("Pending=10"));
  EXPECT_THAT(text(states.set("b", {{"Pending", kT0 + seconds{5}}})), ElementsAre("Pending=5"));
  EXPECT_THAT(text(states.set("c", {{"Pending", kT0 + seconds{20}}})), IsEmpty());  // not the oldest
  EXPECT_THAT(text(states.set("c", {{"Pending", kT0 + seconds{20}}})), IsEmpty());  // no change at all
  // The oldest moves on: the next oldest of the state counts.
  EXPECT_THAT(text(states.set("b", {{"Ready", kT0 + seconds{30}}})), ElementsAre("Pending=10", "Ready=30"));
  EXPECT_EQ(states.oldest("Pending"), kT0 + seconds{10});
  EXPECT_THAT(text(states.set("a", std::nullopt)), ElementsAre("Pending=20"));
  EXPECT_THAT(text(states.set("c", std::nullopt)), ElementsAre("Pending=none"));
  EXPECT_FALSE(states.oldest("Pending").has_value());
  EXPECT_THAT(text(states.set("gone", std::nullopt)), IsEmpty());  // never known
}

TEST(OldestPerStateTest, KeysEnteringAtTheSameTimeLeaveOneByOne) {
  OldestPerState states;
  states.set("a", {{"Retry", kT0}});
  states.set("b", {{"Retry", kT0}});
  EXPECT_THAT(text(states.set("a", std::nullopt)), IsEmpty());  // b still entered at kT0
  EXPECT_THAT(text(states.set("b", {{"Retry", kT0 + seconds{60}}})), ElementsAre("Retry=60"));  // re-entered
}

}  // namespace
}  // namespace mka::multikueue::oldest_per_state_test
