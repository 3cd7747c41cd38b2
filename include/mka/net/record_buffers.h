#pragma once
// OpenSSL's record buffers, kept for reuse on the threads that ask for it. With
// SSL_MODE_RELEASE_BUFFERS (which an idle connection needs, so as not to hold ~34 KB) OpenSSL
// allocates a ~17 KB buffer for each read that finds a record and each write, and frees it
// after: about 2.4 per webhook request. At that size each is one of jemalloc's large
// allocations, which go through the arena's extent allocator under its lock (about 2 us a pair
// here; jemalloc's thread caches, which would avoid it, cover objects up to 1 KiB in this
// process, since larger ones parked in dozens of threads' caches cost the adapter a megabyte).
// A thread that holds a RecordBufferCache keeps up to a few such buffers it freed and hands
// them back to its next OpenSSL allocations of that size; every other thread and every other
// size goes straight to malloc.
//
// OpenSSL takes its allocation functions only before its first allocation, and shared
// libraries (httplib's) initialize it before any initializer of the program runs, so
// installOpensslAllocator() must be called from the executable's .preinit_array (main.cpp).
// Without it, a RecordBufferCache does nothing.
//
// Threads: the cache belongs to the thread that made it, for its whole life, and must be
// destroyed on that thread.

#include <cstddef>

namespace mka::net {

// Makes OpenSSL allocate through this module. False when OpenSSL had already allocated (then it
// keeps the C library's functions, and no cache sees its buffers).
bool installOpensslAllocator();
bool opensslAllocatorInstalled();

// OpenSSL's allocation functions, as installed; public for the tests.
void* opensslMalloc(std::size_t size, const char* file, int line);
void* opensslRealloc(void* block, std::size_t size, const char* file, int line);
void opensslFree(void* block, const char* file, int line);

class RecordBufferCache {
 public:
  // Keeps up to `buffers` freed record buffers for this thread.
  explicit RecordBufferCache(std::size_t buffers);
  ~RecordBufferCache();  // frees what it kept
  RecordBufferCache(const RecordBufferCache&) = delete;
  RecordBufferCache& operator=(const RecordBufferCache&) = delete;

  std::size_t kept() const { return count_; }

  // The sizes it keeps: OpenSSL's read buffer (a record's largest plaintext and its overhead)
  // and write buffer, not its other allocations.
  static constexpr std::size_t kMinSize = 16 * 1024;
  static constexpr std::size_t kMaxSize = 24 * 1024;
  static constexpr std::size_t kMaxBuffers = 8;

 private:
  friend void* opensslMalloc(std::size_t, const char*, int);
  friend void opensslFree(void*, const char*, int);
  void* take(std::size_t size);
  bool keep(void* block);

  struct Kept {
    void* block;
    std::size_t usable;
  };
  Kept kept_[kMaxBuffers] = {};
  std::size_t count_ = 0;
  std::size_t limit_;
};

}  // namespace mka::net
