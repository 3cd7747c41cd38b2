// The command line only; every subcommand lives in src/app/.
#include "mka/app/cli.h"

int main(int argc, char** argv) { return mka::app::run(argc, argv); }
