#pragma once
// The `validate-config FILE` subcommand.

#include <filesystem>
#include <iosfwd>

namespace mka::app {

// Prints every problem of `file` (one "<field path>: <problem>: <fix>" per line) to `err`, or a
// one-line summary to `out` when it is valid. With `kueueConfig` (Kueue's own Configuration
// file), also says which of `file`'s integrated kinds (integrations.frameworks) Kueue's
// integrations.externalFrameworks lacks: Kueue's pod integration would then manage their pods
// itself; and, when `file` is in drop-in mode, refuses a Kueue that integrates any of its own
// kinds its MultiKueue dispatches (config/kueue_builtin_kinds.h): drop-in mode dispatches only
// the configured kinds. `file` "-" reads the configuration from `in` (standard input), named
// "<stdin>" in what is printed. Returns 0 when valid, 1 otherwise.
int validateConfigCommand(const std::filesystem::path& file, std::ostream& out, std::ostream& err,
                          const std::filesystem::path& kueueConfig = {}, std::istream* in = nullptr);

}  // namespace mka::app
