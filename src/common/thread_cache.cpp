#include "mka/common/thread_cache.h"

#include <cstddef>

// jemalloc's control interface, weak so the libraries link without jemalloc: the adapter and the
// benchmarks link it (CMakeLists.txt, MKA_JEMALLOC), the sanitizer builds bring their own
// allocator and leave this null.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen)
    __attribute__((weak));

namespace mka {

bool disableThreadCache() {
  if (mallctl == nullptr) return false;
  bool off = false;
  return mallctl("thread.tcache.enabled", nullptr, nullptr, &off, sizeof off) == 0;
}

bool threadCacheEnabled() {
  if (mallctl == nullptr) return false;
  bool enabled = false;
  std::size_t size = sizeof enabled;
  return mallctl("thread.tcache.enabled", &enabled, &size, nullptr, 0) == 0 && enabled;
}

}  // namespace mka
