#pragma once
// The `validate-config FILE` subcommand.

#include <filesystem>
#include <iosfwd>

namespace mka::app {

// Prints every problem of `file` (one "<field path>: <problem>: <fix>" per line) to `err`, or a
// one-line summary to `out` when it is valid. Returns 0 when valid, 1 otherwise.
int validateConfigCommand(const std::filesystem::path& file, std::ostream& out, std::ostream& err);

}  // namespace mka::app
