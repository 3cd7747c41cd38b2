#pragma once
// The process's log output: format (logfmt text or JSON, see mka/common/log.h), level and sink,
// from the command line.

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/common.h>
#include <spdlog/formatter.h>

#include "mka/common/log.h"

namespace mka::observability {

using LogFormat = log::Format;

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

// Makes the process log to stderr in `options.format` at `options.level`: the default logger
// ("main") and every named logger (e.g. "net"), including those created earlier. Call once at
// startup, before other threads log.
void setupLogging(const LogOptions& options);

// The line format, for sinks of one's own (tests, a file).
std::unique_ptr<spdlog::formatter> makeLogFormatter(LogFormat format);

}  // namespace mka::observability
