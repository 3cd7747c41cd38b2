#pragma once
// promtool (Debian's prometheus package; scripts/install-deps.sh installs it), which the tests
// of the alert rules and of /metrics run: found on PATH and run to its end, its output kept.
//
// Threads: the test's.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mka::test {

// What a test that needs promtool fails with when it is missing.
inline constexpr std::string_view kPromtoolMissing =
    "promtool not found on PATH: run scripts/install-deps.sh (it installs Debian's prometheus package, which "
    "provides promtool)";

std::optional<std::filesystem::path> findPromtool();

struct ToolRun {
  std::optional<int> exitCode;  // nullopt: it did not start, or was still running at the timeout
  std::string output;           // stdout and stderr
};

// Runs `program` with `args` (standard input from `input` when given) until it exits or
// `timeout` passes.
ToolRun runTool(const std::filesystem::path& program, const std::vector<std::string>& args,
                const std::filesystem::path& input = {}, std::chrono::milliseconds timeout = std::chrono::seconds{60});

}  // namespace mka::test
