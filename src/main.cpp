// The command line only; every subcommand lives in src/app/.
#include "mka/app/cli.h"

#ifdef MKA_JEMALLOC
// jemalloc's settings (read at its start, before main): few arenas and memory handed back to the
// kernel soon after it is freed, so the RSS follows the objects the adapter tracks. The thread
// caches keep only small objects (up to 4 KiB) and give back what they do not use after every
// 16 KiB a thread allocates, instead of 64: with ~45 threads they held about 9 MB of freed
// memory at 10,000 jobs, 1.7 MB now (RSS about 2.4 MiB lower, adapter CPU ~4 % higher; see
// bench/README.md). MALLOC_CONF in the environment still overrides them.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf =
    "narenas:2,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,tcache_max:4096,tcache_gc_incr_bytes:16384";
}
#endif

int main(int argc, char** argv) { return mka::app::run(argc, argv); }
