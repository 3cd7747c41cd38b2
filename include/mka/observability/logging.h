#pragma once
// Process-wide structured logging on spdlog. Messages are written as "text key=value ..."; the
// JSON format wraps each line in an object ({"ts","level","logger","msg"}) with proper escaping.

#include <string>
#include <string_view>

#include <spdlog/common.h>

namespace mka::observability {

enum class LogFormat { Text, Json };

struct LogOptions {
  LogFormat format = LogFormat::Text;
  spdlog::level::level_enum level = spdlog::level::info;
};

// Throws mka::Error naming the flag value and the accepted values.
LogFormat parseLogFormat(std::string_view text);
// "debug", "info", "warn", "error", ...; klog-style verbosity is mapped by verbosityToLevel.
spdlog::level::level_enum parseLogLevel(std::string_view text);
// --v=0 info, 1-3 debug, >=4 trace.
spdlog::level::level_enum verbosityToLevel(int v);

void setupLogging(const LogOptions& options);

}  // namespace mka::observability
