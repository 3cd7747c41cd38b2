#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <nlohmann/json.hpp>

#include "log_record.h"
#include "mka/common/log.h"

namespace mka::log {

namespace {

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

std::string_view view(const spdlog::string_view_t& text) { return {text.data(), text.size()}; }

// "multikueue/cluster_registry.cpp:195": the file's last two path components, as zap's short
// caller names package and file.
void appendCaller(const spdlog::source_loc& where, spdlog::memory_buf_t& dest) {
  std::string_view file = where.filename ? where.filename : "";
  if (const auto last = file.rfind('/'); last != std::string_view::npos && last > 0) {
    const auto previous = file.rfind('/', last - 1);
    if (previous != std::string_view::npos) file.remove_prefix(previous + 1);
  }
  append(dest, file);
  fmt::format_to(std::back_inserter(dest), ":{}", where.line);
}

// A field value longer than this is cut: a value can come from a request (an admission
// request's name or path), and one request must not write megabytes to the log.
constexpr std::size_t kMaxValueBytes = 4096;
constexpr std::string_view kCutMark = "...(cut)";

// A string value cut to kMaxValueBytes, with kCutMark after it.
std::string cutValue(std::string_view value) { return std::string(value.substr(0, kMaxValueBytes)).append(kCutMark); }

// A JSON string, with invalid UTF-8 replaced so that one bad byte cannot make the line unparsable.
void appendJsonString(std::string_view text, spdlog::memory_buf_t& dest) {
  append(dest, nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void appendJsonValue(const detail::RecordField& field, spdlog::memory_buf_t& dest) {
  switch (field.type) {
    case detail::ValueType::Number:
    case detail::ValueType::Bool: append(dest, field.value); break;
    case detail::ValueType::NonFinite: appendJsonString(field.value, dest); break;  // JSON has no NaN or Inf
    default:
      appendJsonString(field.value.size() > kMaxValueBytes ? cutValue(field.value) : std::string(field.value), dest);
  }
}

// logfmt quotes a value that is empty or holds a space, '=', '"' or a control byte; inside
// quotes, '"' and '\' are escaped and control bytes written as \n, \t or \u00XX.
bool needsQuotes(std::string_view text) {
  if (text.empty()) return true;
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= ' ' || u == 0x7f || c == '=' || c == '"';
  });
}

void appendLogfmtString(std::string_view text, spdlog::memory_buf_t& dest) {
  if (!needsQuotes(text)) {
    append(dest, text);
    return;
  }
  dest.push_back('"');
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': append(dest, "\\\""); break;
      case '\\': append(dest, "\\\\"); break;
      case '\n': append(dest, "\\n"); break;
      case '\r': append(dest, "\\r"); break;
      case '\t': append(dest, "\\t"); break;
      default:
        if (u < ' ' || u == 0x7f)
          fmt::format_to(std::back_inserter(dest), "\\u{:04x}", u);
        else
          dest.push_back(c);
    }
  }
  dest.push_back('"');
}

void appendLogfmtValue(const detail::RecordField& field, spdlog::memory_buf_t& dest) {
  if (field.type != detail::ValueType::String)
    append(dest, field.value);
  else if (field.value.size() > kMaxValueBytes)
    appendLogfmtString(cutValue(field.value), dest);
  else
    appendLogfmtString(field.value, dest);
}

// logfmt: ts=... level=info logger=net caller=net/http_server.cpp:315 msg=listening server=webhook
class TextFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    append(dest, "ts=");
    appendTimestamp(msg, dest);
    append(dest, " level=");
    append(dest, levelName(msg.level));
    append(dest, " logger=");
    appendLogfmtString(view(msg.logger_name), dest);
    if (!msg.source.empty()) {
      append(dest, " caller=");
      appendCaller(msg.source, dest);
    }
    detail::RecordReader record(view(msg.payload));
    append(dest, " msg=");
    appendLogfmtString(record.message(), dest);
    for (detail::RecordField field; record.next(field);) {
      dest.push_back(' ');
      append(dest, field.key);
      dest.push_back('=');
      appendLogfmtValue(field, dest);
    }
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<TextFormatter>(); }
};

// One object per line, the keys controller-runtime's zap logger writes, then the fields.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    append(dest, R"({"ts":")");
    appendTimestamp(msg, dest);
    append(dest, R"(","level":")");
    append(dest, levelName(msg.level));
    append(dest, R"(","logger":)");
    appendJsonString(view(msg.logger_name), dest);
    if (!msg.source.empty()) {
      append(dest, R"(,"caller":")");
      appendCaller(msg.source, dest);
      dest.push_back('"');
    }
    detail::RecordReader record(view(msg.payload));
    append(dest, R"(,"msg":)");
    appendJsonString(record.message(), dest);
    for (detail::RecordField field; record.next(field);) {
      dest.push_back(',');
      appendJsonString(field.key, dest);
      dest.push_back(':');
      appendJsonValue(field, dest);
    }
    append(dest, "}\n");
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

}  // namespace

std::unique_ptr<spdlog::formatter> makeFormatter(Format format) {
  if (format == Format::Json) return std::make_unique<JsonFormatter>();
  return std::make_unique<TextFormatter>();
}

}  // namespace mka::log
