// The command line only; every subcommand lives in src/app/.
#include "mka/app/cli.h"

#ifdef MKA_JEMALLOC
// jemalloc's settings (read at its start, before main): few arenas and memory handed back to the
// kernel soon after it is freed, so the RSS follows the objects the adapter tracks. MALLOC_CONF
// in the environment still overrides them.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf = "narenas:2,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
#endif

int main(int argc, char** argv) { return mka::app::run(argc, argv); }
