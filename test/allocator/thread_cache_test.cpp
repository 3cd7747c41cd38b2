#include "mka/common/thread_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

namespace mka {
namespace {

// Only meaningful on jemalloc (allocator_test links it when the build does: not under sanitizers).
// scripts/test.sh runs it in such a build with MKA_EXPECT_JEMALLOC=1, where skipping would hide
// a broken link.
TEST(ThreadCacheTest, ADisabledThreadHasNoCacheAndOtherThreadsKeepTheirs) {
  if (!threadCacheEnabled()) {
    if (std::getenv("MKA_EXPECT_JEMALLOC") != nullptr)
      FAIL() << "MKA_EXPECT_JEMALLOC is set, but jemalloc is not running";
    GTEST_SKIP() << "not running on jemalloc: thread caches are not ours to turn off";
  }
  bool disabled = false, after = true, neighbour = false;
  std::thread quiet([&] {
    disabled = disableThreadCache();
    after = threadCacheEnabled();
    delete new int(7);  // allocating afterwards works, from the shared arena
  });
  quiet.join();
  std::thread busy([&] { neighbour = threadCacheEnabled(); });
  busy.join();
  EXPECT_TRUE(disabled);
  EXPECT_FALSE(after);
  EXPECT_TRUE(neighbour) << "only the calling thread gives its cache up";
  EXPECT_TRUE(threadCacheEnabled());
}

TEST(ThreadCacheTest, WithoutJemallocDisablingIsANoOp) {
  if (threadCacheEnabled()) GTEST_SKIP() << "running on jemalloc: see the test above";
  std::thread quiet([] { EXPECT_FALSE(disableThreadCache()); });
  quiet.join();
}

}  // namespace
}  // namespace mka
