#pragma once
// multikueue-adapter's command line: serve (default), validate-config, manifests, version, add-worker,
// remove-worker, sandbox, demo.

namespace mka::cli {

// Parses the command line, runs the chosen subcommand and returns the process exit code.
int run(int argc, char** argv);

}  // namespace mka::cli
