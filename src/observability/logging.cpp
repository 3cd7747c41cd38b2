#include "mka/observability/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "mka/common/errors.h"
#include "mka/common/log.h"

namespace mka::observability {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

LogFormat parseLogFormat(std::string_view text) {
  const std::string value = lower(text);
  if (value == "text") return LogFormat::Text;
  if (value == "json") return LogFormat::Json;
  throw Error("invalid log format \"" + std::string(text) + "\": use \"text\" or \"json\"");
}

spdlog::level::level_enum parseLogLevel(std::string_view text) {
  const std::string value = lower(text);
  if (value == "trace") return spdlog::level::trace;
  if (value == "debug") return spdlog::level::debug;
  if (value == "info") return spdlog::level::info;
  if (value == "warn" || value == "warning") return spdlog::level::warn;
  if (value == "error") return spdlog::level::err;
  if (value == "critical") return spdlog::level::critical;
  if (value == "off") return spdlog::level::off;
  throw Error("invalid log level \"" + std::string(text) +
              "\": use one of trace, debug, info, warn, error, critical, off");
}

spdlog::level::level_enum verbosityToLevel(int v) {
  if (v >= 4) return spdlog::level::trace;
  if (v >= 1) return spdlog::level::debug;
  return spdlog::level::info;
}

std::unique_ptr<spdlog::formatter> makeLogFormatter(LogFormat format) { return log::makeFormatter(format); }

void setupLogging(const LogOptions& options) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_formatter(makeLogFormatter(options.format));
  auto main = std::make_shared<spdlog::logger>("main", sink);
  spdlog::set_default_logger(main);
  // Loggers made before this call (module loggers are clones of the default) switch over too.
  spdlog::apply_all([&sink](const std::shared_ptr<spdlog::logger>& logger) { logger->sinks().assign(1, sink); });
  spdlog::set_level(options.level);
  spdlog::flush_on(spdlog::level::warn);
}

}  // namespace mka::observability
