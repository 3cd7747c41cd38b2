// The command line, and what must be set before it runs (jemalloc's settings, OpenSSL's
// allocation functions); every subcommand lives in src/cli/ (and the modules it calls).
#include "mka/cli/cli.h"
#include "mka/net/record_buffers.h"

namespace {

// OpenSSL allocates through net/record_buffers, so that the webhook's event loops can reuse its
// record buffers. It must be told before its first allocation, which Debian's httplib library
// makes in its own initializer: .preinit_array runs before any shared library's.
void installOpensslAllocator(int, char**, char**) { mka::net::installOpensslAllocator(); }
[[gnu::section(".preinit_array"), gnu::used]] void (*const kInstallOpensslAllocator)(int, char**,
                                                                                     char**) = installOpensslAllocator;

}  // namespace

#ifdef MKA_JEMALLOC
// jemalloc's settings (read at its start, before main): one arena and memory handed back to the
// kernel soon after it is freed, so the RSS follows the objects the adapter tracks. One arena:
// the long-lived cache entries and the short-lived JSON of every event share fewer half-used
// slabs, and the workers mostly wait on round trips, so the arena's lock is little contended.
// The thread caches keep only small objects (up to 1 KiB) and give back what they do not use
// after every 16 KiB a thread allocates, not jemalloc's 64: with dozens of threads, the defaults
// leave a lot of freed memory parked in the caches (see bench/README.md). MALLOC_CONF in the
// environment still overrides them.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf =
    "narenas:1,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,tcache_max:1024,tcache_gc_incr_bytes:16384";
}
#endif

int main(int argc, char** argv) { return mka::cli::run(argc, argv); }
