#include "mka/app/cli.h"

namespace mka::app {
int run(int, char**) { return 0; }
}  // namespace mka::app
