// libFuzzer target: any bytes given as a configuration file (validate-config, /validate-config,
// hot reload) must produce either a configuration or a list of field errors: never a crash,
// hang or sanitizer report, and never both or neither.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <spdlog/spdlog.h>

#include "mka/config/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto result = mka::config::parseConfiguration(text, "data[config.yaml].");
  if (result.ok() != result.config.has_value()) std::abort();
  for (const auto& error : result.errors) {
    if (error.problem.empty()) std::abort();  // every error must say what is wrong
  }
  return 0;
}
