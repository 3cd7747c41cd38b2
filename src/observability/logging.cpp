#include "mka/observability/logging.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <iterator>
#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::observability {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view levelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "off";
  }
}

// RFC 3339 in UTC with milliseconds: sorts as text and reads the same in every time zone.
void appendTimestamp(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const auto since = msg.time.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds).count();
  const std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  fmt::format_to(std::back_inserter(dest), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

void append(spdlog::memory_buf_t& dest, std::string_view text) { dest.append(text.data(), text.data() + text.size()); }

class TextFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    appendTimestamp(msg, dest);
    fmt::format_to(std::back_inserter(dest), " {:<5} [{}] ", levelName(msg.level),
                   std::string_view(msg.logger_name.data(), msg.logger_name.size()));
    append(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<TextFormatter>(); }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    // Fixed key order (ts first) for people reading raw lines; values escaped by nlohmann,
    // with invalid UTF-8 replaced so one bad byte cannot make the line unparsable.
    append(dest, R"({"ts":")");
    appendTimestamp(msg, dest);
    append(dest, R"(","level":")");
    append(dest, levelName(msg.level));
    append(dest, R"(","logger":)");
    append(dest, quote(std::string_view(msg.logger_name.data(), msg.logger_name.size())));
    append(dest, R"(,"msg":)");
    append(dest, quote(std::string_view(msg.payload.data(), msg.payload.size())));
    append(dest, "}\n");
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }

 private:
  static std::string quote(std::string_view text) {
    return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
};

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

std::unique_ptr<spdlog::formatter> makeLogFormatter(LogFormat format) {
  if (format == LogFormat::Json) return std::make_unique<JsonFormatter>();
  return std::make_unique<TextFormatter>();
}

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
