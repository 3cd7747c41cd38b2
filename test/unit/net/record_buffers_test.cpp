// The record buffer cache, through the allocation functions OpenSSL is given (called here
// directly: this test binary installs its own counting functions in OpenSSL instead).
#include "mka/net/record_buffers.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "support/table_test.h"

namespace mka::net {
namespace {

constexpr std::size_t kReadBuffer = 16 * 1024 + 333;  // OpenSSL's, about: a record and its overhead

void* allocate(std::size_t size) { return opensslMalloc(size, __FILE__, __LINE__); }
void release(void* block) { opensslFree(block, __FILE__, __LINE__); }

TEST(RecordBufferCacheTest, AThreadWithACacheGetsItsFreedRecordBuffersBack) {
  RecordBufferCache cache(2);
  void* first = allocate(kReadBuffer);
  ASSERT_NE(first, nullptr);
  release(first);
  EXPECT_EQ(cache.kept(), 1u);
  EXPECT_EQ(allocate(kReadBuffer), first);  // the same block, not a new one
  EXPECT_EQ(cache.kept(), 0u);
  release(first);
}

struct FreedSizes {
  std::string name;
  std::vector<std::size_t> freed;  // sizes allocated, then freed in order
  std::size_t kept;
};

std::vector<FreedSizes> freedSizes() {
  return {
      {"small allocations go to malloc", {64, 4096, 12 * 1024}, 0},
      {"larger than a record buffer goes to malloc", {64 * 1024}, 0},
      {"a read and a write buffer", {kReadBuffer, kReadBuffer + 100}, 2},
      {"no more than the limit", {kReadBuffer, kReadBuffer, kReadBuffer, kReadBuffer}, 3},
  };
}

MKA_TABLE_TEST(RecordBufferCacheTest, OnlyRecordBufferSizesAreKeptAndOnlyUpToTheLimit, FreedSizes, freedSizes()) {
  const FreedSizes& c = testCase();
  RecordBufferCache cache(3);  // frees what it kept when it goes (ASan reports a leak otherwise)
  std::vector<void*> blocks;
  for (auto size : c.freed) blocks.push_back(allocate(size));
  for (void* block : blocks) release(block);
  EXPECT_EQ(cache.kept(), c.kept);
}

TEST(RecordBufferCacheTest, AKeptBufferServesOnlyARequestItIsLargeEnoughFor) {
  RecordBufferCache cache(1);
  void* small = allocate(RecordBufferCache::kMinSize);
  release(small);
  ASSERT_EQ(cache.kept(), 1u);
  void* larger = allocate(RecordBufferCache::kMaxSize);
  EXPECT_EQ(cache.kept(), 1u) << "a kept block too small for the request was handed out";
  release(larger);  // the cache is full: back to malloc
  EXPECT_EQ(cache.kept(), 1u);
}

TEST(RecordBufferCacheTest, OtherThreadsAndThreadsAfterTheirCacheGoStraightToMalloc) {
  std::size_t keptByOther = 0;
  {
    RecordBufferCache cache(2);
    std::thread other([] { release(allocate(kReadBuffer)); });
    other.join();
    keptByOther = cache.kept();
  }
  EXPECT_EQ(keptByOther, 0u);
  // The cache is gone: nothing keeps what this thread frees now.
  void* block = allocate(kReadBuffer);
  release(block);
  RecordBufferCache fresh(2);
  EXPECT_EQ(fresh.kept(), 0u);
}

}  // namespace
}  // namespace mka::net
