#include "mka/config/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace mka::config {
namespace {

Configuration withOrigin(std::string origin) {
  Configuration c;
  c.multiKueue.origin = std::move(origin);
  return c;
}

TEST(ConfigStore, PublishesSnapshots) {
  ConfigStore store(withOrigin("first"));
  EXPECT_EQ(store.generation(), 0u);
  auto before = store.get();
  EXPECT_EQ(before->multiKueue.origin, "first");

  store.set(withOrigin("second"));
  EXPECT_EQ(store.generation(), 1u);
  EXPECT_EQ(store.get()->multiKueue.origin, "second");
  // A reader's snapshot is never changed under it.
  EXPECT_EQ(before->multiKueue.origin, "first");

  store.set(withOrigin("third"));
  EXPECT_EQ(store.generation(), 2u);
  EXPECT_NE(store.get(), before);
}

TEST(ConfigStore, ReadersSeeWholeSnapshotsWhileAWriterSwaps) {
  auto first = withOrigin("o0");
  first.multiKueue.dispatcherName = "d0";
  ConfigStore store(first);
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      while (!done) {
        auto snapshot = store.get();
        // Each snapshot is internally consistent: origin and dispatcher name were set together.
        if (snapshot->multiKueue.origin.substr(1) != snapshot->multiKueue.dispatcherName.substr(1)) ++torn;
      }
    });
  }
  for (int i = 1; i <= 500; ++i) {
    auto c = withOrigin("o" + std::to_string(i));
    c.multiKueue.dispatcherName = "d" + std::to_string(i);
    store.set(std::move(c));
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(store.generation(), 500u);
  EXPECT_EQ(store.get()->multiKueue.origin, "o500");
}

}  // namespace
}  // namespace mka::config
