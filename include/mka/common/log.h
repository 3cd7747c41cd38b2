#pragma once
// Structured logging: a message plus key/value fields, one call-site shape for both output
// formats (observability::setupLogging picks logfmt text or JSON, as controller-runtime's zap
// logger writes it):
//
//   log::info(logger(), "cluster connected", {{"cluster", name}, {"attempt", attempt}});
//   log::warn("gc pass failed", {{"error", e.what()}});   // the default logger ("main")
//
// The message is a constant sentence; every value goes in a field, so that a log pipeline can
// filter on it. A record travels through spdlog (its levels, sinks and named loggers) with the
// fields encoded in its payload, so a sink that formats later loses none of them.
//
// Named loggers for modules ("net", "file-watcher", ...) are clones of the default logger, so
// they write wherever and however setupLogging() configured.

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

namespace mka {

// Returns the logger registered under `name`, cloning the default logger on first use.
// Safe to call from any thread.
std::shared_ptr<spdlog::logger> namedLogger(const std::string& name);

namespace log {

// One key/value of a record. It holds views: a Field lives within the log call it is written
// in (with the temporaries of that full expression), so nothing is copied for a record below
// the logger's level.
class Field {
 public:
  using Value = std::variant<std::string_view, std::int64_t, std::uint64_t, double, bool>;

  Field(std::string_view key, std::string_view value) : key_(key), value_(value) {}
  Field(std::string_view key, const std::string& value) : key_(key), value_(std::string_view(value)) {}
  // Without this, a string literal would convert to bool before string_view.
  Field(std::string_view key, const char* value) : key_(key), value_(std::string_view(value ? value : "")) {}
  Field(std::string_view key, bool value) : key_(key), value_(value) {}
  Field(std::string_view key, double value) : key_(key), value_(value) {}
  template <std::signed_integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) Field(std::string_view key, T value)
      : key_(key), value_(static_cast<std::int64_t>(value)) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) Field(std::string_view key, T value)
      : key_(key), value_(static_cast<std::uint64_t>(value)) {}

  std::string_view key() const { return key_; }
  const Value& value() const { return value_; }

 private:
  std::string_view key_;
  Value value_;
};

using Fields = std::initializer_list<Field>;

// Where a record was written. Made by default arguments at the call site (the builtins GCC and
// Clang evaluate there), as std::source_location::current() would be; libstdc++'s
// source_location needs a Clang newer than the one the fuzz build uses.
struct Where {
  static constexpr Where here(const char* file = __builtin_FILE(), int line = __builtin_LINE(),
                              const char* function = __builtin_FUNCTION()) {
    return {file, line, function};
  }
  const char* file;
  int line;
  const char* function;
};

enum class Format { Text, Json };

// The record format. Text is logfmt:
//   ts=2026-11-22T10:00:00.123Z level=info logger=net caller=net/http_server.cpp:315 msg=listening server=webhook
// JSON, one object per line, the keys of controller-runtime's zap logger, then the fields:
//   {"ts":"2026-11-22T10:00:00.123Z","level":"info","logger":"net","caller":"net/http_server.cpp:315",
//    "msg":"listening","server":"webhook"}
// Every logger starts with the text format (tests and tools included); setupLogging() picks
// the process's format.
std::unique_ptr<spdlog::formatter> makeFormatter(Format format);

// Writes `msg` with `fields` at `level`, with `where` as the record's caller.
void write(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view msg, Fields fields, Where where);

#define MKA_LOG_LEVEL_FUNCTIONS(name, level)                                                                        \
  inline void name(spdlog::logger& logger, std::string_view msg, Fields fields = {}, Where where = Where::here()) { \
    write(logger, level, msg, fields, where);                                                                       \
  }                                                                                                                 \
  inline void name(std::string_view msg, Fields fields = {}, Where where = Where::here()) {                         \
    write(*spdlog::default_logger_raw(), level, msg, fields, where);                                                \
  }

MKA_LOG_LEVEL_FUNCTIONS(trace, spdlog::level::trace)
MKA_LOG_LEVEL_FUNCTIONS(debug, spdlog::level::debug)
MKA_LOG_LEVEL_FUNCTIONS(info, spdlog::level::info)
MKA_LOG_LEVEL_FUNCTIONS(warn, spdlog::level::warn)
MKA_LOG_LEVEL_FUNCTIONS(error, spdlog::level::err)

#undef MKA_LOG_LEVEL_FUNCTIONS

// For a level chosen at run time, on the default logger.
inline void at(spdlog::level::level_enum level, std::string_view msg, Fields fields = {}, Where where = Where::here()) {
  write(*spdlog::default_logger_raw(), level, msg, fields, where);
}

}  // namespace log
}  // namespace mka
