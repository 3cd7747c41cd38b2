#include "mka/net/record_buffers.h"

#include <malloc.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace mka::net {
namespace {

std::atomic<bool> installed{false};
thread_local RecordBufferCache* threadCache = nullptr;

}  // namespace

bool installOpensslAllocator() {
  const bool done = CRYPTO_set_mem_functions(opensslMalloc, opensslRealloc, opensslFree) == 1;
  if (done) installed.store(true, std::memory_order_relaxed);
  return done;
}

bool opensslAllocatorInstalled() { return installed.load(std::memory_order_relaxed); }

void* opensslMalloc(std::size_t size, const char*, int) {
  if (threadCache != nullptr && size >= RecordBufferCache::kMinSize && size <= RecordBufferCache::kMaxSize)
    return threadCache->take(size);
  return std::malloc(size);
}

// A kept buffer is an ordinary malloc block, so it may be resized like any other.
void* opensslRealloc(void* block, std::size_t size, const char*, int) { return std::realloc(block, size); }

void opensslFree(void* block, const char*, int) {
  if (block != nullptr && threadCache != nullptr && threadCache->keep(block)) return;
  std::free(block);
}

RecordBufferCache::RecordBufferCache(std::size_t buffers) : limit_(std::min(buffers, kMaxBuffers)) {
  threadCache = this;
}

RecordBufferCache::~RecordBufferCache() {
  if (threadCache == this) threadCache = nullptr;
  for (std::size_t i = 0; i < count_; ++i) std::free(kept_[i].block);
}

void* RecordBufferCache::take(std::size_t size) {
  // The most recently kept first: its memory is the likeliest still in the CPU's cache.
  for (std::size_t i = count_; i-- > 0;) {
    if (kept_[i].usable < size) continue;
    void* block = kept_[i].block;
    kept_[i] = kept_[--count_];
    return block;
  }
  return std::malloc(size);
}

bool RecordBufferCache::keep(void* block) {
  if (count_ == limit_) return false;
  // Whatever OpenSSL frees comes here; only blocks of a record buffer's size stay.
  const std::size_t usable = malloc_usable_size(block);
  if (usable < kMinSize || usable > kMaxSize) return false;
  kept_[count_++] = {block, usable};
  return true;
}

}  // namespace mka::net
