#include "mka/common/log.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <iterator>

#include "log_record.h"

namespace mka {

std::shared_ptr<spdlog::logger> namedLogger(const std::string& name) {
  if (auto existing = spdlog::get(name)) return existing;
  auto created = spdlog::default_logger()->clone(name);
  try {
    spdlog::register_logger(created);
  } catch (const spdlog::spdlog_ex&) {  // registered concurrently by another thread
    return spdlog::get(name);
  }
  return created;
}

namespace log {

namespace {

// Before setupLogging() (and in tests and tools, which never call it) records are logfmt too,
// so that no field is lost to spdlog's default pattern.
const bool kDefaultLoggerWritesLogfmt = [] {
  spdlog::default_logger_raw()->set_formatter(makeFormatter(Format::Text));
  return true;
}();

void appendSized(spdlog::memory_buf_t& out, std::string_view text) {
  const auto size = static_cast<std::uint32_t>(text.size());
  const char* bytes = reinterpret_cast<const char*>(&size);
  out.append(bytes, bytes + sizeof size);
  out.append(text.data(), text.data() + text.size());
}

}  // namespace

namespace detail {

void encode(spdlog::memory_buf_t& out, std::string_view msg, Fields fields) {
  out.append(kMark.data(), kMark.data() + kMark.size());
  appendSized(out, msg);
  fmt::memory_buffer number;
  for (const auto& field : fields) {
    number.clear();
    ValueType type = ValueType::Number;
    std::string_view text;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string_view>) {
            type = ValueType::String;
            text = v;
          } else if constexpr (std::is_same_v<T, bool>) {
            type = ValueType::Bool;
            text = v ? "true" : "false";
          } else {
            if constexpr (std::is_same_v<T, double>) {
              if (!std::isfinite(v)) type = ValueType::NonFinite;
            }
            fmt::format_to(std::back_inserter(number), "{}", v);
            text = std::string_view(number.data(), number.size());
          }
        },
        field.value());
    out.push_back(static_cast<char>(type));
    appendSized(out, field.key());
    appendSized(out, text);
  }
}

RecordReader::RecordReader(std::string_view payload) {
  if (payload.substr(0, kMark.size()) != kMark) {
    message_ = payload;
    return;
  }
  rest_ = payload.substr(kMark.size());
  if (!takeSized(message_)) rest_ = {};
}

bool RecordReader::take(std::size_t n, std::string_view& out) {
  if (rest_.size() < n) return false;
  out = rest_.substr(0, n);
  rest_.remove_prefix(n);
  return true;
}

bool RecordReader::takeSized(std::string_view& out) {
  std::string_view sizeBytes;
  if (!take(sizeof(std::uint32_t), sizeBytes)) return false;
  std::uint32_t size = 0;
  std::memcpy(&size, sizeBytes.data(), sizeof size);
  return take(size, out);
}

bool RecordReader::next(RecordField& field) {
  std::string_view type;
  if (!take(1, type) || !takeSized(field.key) || !takeSized(field.value)) {
    rest_ = {};
    return false;
  }
  field.type = static_cast<ValueType>(type.front());
  return true;
}

}  // namespace detail

void write(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view msg, Fields fields, Where where) {
  if (!logger.should_log(level)) return;
  spdlog::memory_buf_t payload;
  detail::encode(payload, msg, fields);
  logger.log(spdlog::source_loc{where.file, where.line, where.function}, level,
             spdlog::string_view_t(payload.data(), payload.size()));
}

}  // namespace log
}  // namespace mka
