#include "mka/kube/delayed_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>

namespace mka::kube {
namespace {

using namespace std::chrono_literals;
using ::testing::Optional;

const DelayedKeys::TimePoint kStart{std::chrono::seconds{1'800'000'000}};

TEST(DelayedKeysTest, HandsKeysBackInTimeOrderOnlyOnceDue) {
  DelayedKeys keys;
  EXPECT_EQ(keys.firstReadyAt(), std::nullopt);
  EXPECT_EQ(keys.popDue(kStart + 1h), std::nullopt);
  EXPECT_TRUE(keys.schedule("default/c", kStart + 3s));
  EXPECT_TRUE(keys.schedule("default/a", kStart + 1s));
  EXPECT_FALSE(keys.schedule("default/b", kStart + 2s));
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_THAT(keys.firstReadyAt(), Optional(kStart + 1s));
  EXPECT_EQ(keys.popDue(kStart), std::nullopt);
  EXPECT_THAT(keys.popDue(kStart + 2s), Optional(std::string("default/a")));
  EXPECT_THAT(keys.popDue(kStart + 2s), Optional(std::string("default/b")));
  EXPECT_EQ(keys.popDue(kStart + 2s), std::nullopt);
  EXPECT_THAT(keys.popDue(kStart + 3s), Optional(std::string("default/c")));
  EXPECT_TRUE(keys.empty());
}

TEST(DelayedKeysTest, EqualTimesComeBackInTheOrderScheduled) {
  DelayedKeys keys;
  for (const char* key : {"z", "m", "a", "q"}) keys.schedule(key, kStart + 5s);
  for (const char* key : {"z", "m", "a", "q"}) EXPECT_THAT(keys.popDue(kStart + 5s), Optional(std::string(key)));
}

// client-go's delaying queue: a key waits once, for the earlier of its times.
TEST(DelayedKeysTest, AWaitingKeyKeepsTheEarlierOfItsTimes) {
  DelayedKeys keys;
  keys.schedule("default/a", kStart + 10s);
  keys.schedule("default/b", kStart + 5s);
  EXPECT_FALSE(keys.schedule("default/a", kStart + 20s));  // later: nothing changes
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys.schedule("default/a", kStart + 1s));  // earlier: moves to the front
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_THAT(keys.firstReadyAt(), Optional(kStart + 1s));
  EXPECT_THAT(keys.popDue(kStart + 30s), Optional(std::string("default/a")));
  EXPECT_THAT(keys.popDue(kStart + 30s), Optional(std::string("default/b")));
  EXPECT_EQ(keys.popDue(kStart + 30s), std::nullopt);
}

TEST(DelayedKeysTest, ClearDropsEveryKeyAndTheSetIsUsableAfter) {
  DelayedKeys keys;
  for (int i = 0; i < 100; ++i) keys.schedule("ns/key-" + std::to_string(i), kStart + std::chrono::seconds(i));
  keys.clear();
  EXPECT_TRUE(keys.empty());
  EXPECT_EQ(keys.popDue(kStart + 1h), std::nullopt);
  EXPECT_TRUE(keys.schedule("ns/key-1", kStart + 1h));  // not "already due sooner"
  EXPECT_THAT(keys.popDue(kStart + 1h), Optional(std::string("ns/key-1")));
}

// Against a model (a map by key and a set by (time, order)) under random schedules and pops.
TEST(DelayedKeysTest, AgreesWithAModelUnderRandomSchedulesAndPops) {
  DelayedKeys keys;
  std::map<std::string, std::pair<DelayedKeys::TimePoint, int>> byKey;
  std::set<std::tuple<DelayedKeys::TimePoint, int, std::string>> byTime;
  std::mt19937 random(5);
  int order = 0;
  auto now = kStart;
  for (int step = 0; step < 30000; ++step) {
    if (random() % 3 != 0) {
      const auto key = "default/workload-" + std::to_string(random() % 700);
      const auto at = now + std::chrono::milliseconds(random() % 5000);
      bool first = false;
      auto it = byKey.find(key);
      if (it == byKey.end() || at < it->second.first) {
        if (it != byKey.end()) byTime.erase({it->second.first, it->second.second, key});
        byKey[key] = {at, order};
        byTime.insert({at, order, key});
        first = std::get<2>(*byTime.begin()) == key;
      }
      ++order;
      ASSERT_EQ(keys.schedule(key, at), first) << key;
    } else {
      now += std::chrono::milliseconds(random() % 400);
      while (!byTime.empty() && std::get<0>(*byTime.begin()) <= now) {
        const auto expected = std::get<2>(*byTime.begin());
        byTime.erase(byTime.begin());
        byKey.erase(expected);
        ASSERT_THAT(keys.popDue(now), Optional(expected));
      }
      ASSERT_EQ(keys.popDue(now), std::nullopt);
    }
    ASSERT_EQ(keys.size(), byKey.size());
  }
}

}  // namespace
}  // namespace mka::kube
