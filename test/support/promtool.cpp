#include "support/promtool.h"

#include <unistd.h>

#include <cstdlib>

#include "mka/common/strings.h"
#include "support/child_process.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

namespace mka::test {

std::optional<std::filesystem::path> findPromtool() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (const auto& dir : strings::split(path, ':')) {
    if (dir.empty()) continue;
    const auto candidate = std::filesystem::path(std::string(dir)) / "promtool";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

ToolRun runTool(const std::filesystem::path& program, const std::vector<std::string>& args,
                const std::filesystem::path& input, std::chrono::milliseconds timeout) {
  TempDir dir("mka-tool");
  const auto output = dir / "output";
  ChildProcess child(program.string(), args, output, output, input);
  ToolRun run;
  if (!child.started()) return run;
  if (eventually([&] { return child.exitCode().has_value(); }, timeout)) run.exitCode = child.exitCode();
  run.output = readFile(output);
  return run;
}

}  // namespace mka::test
