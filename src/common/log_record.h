#pragma once
// How a structured record travels through spdlog: the message and the fields are encoded in the
// record's payload, so that a sink that formats later (a ring buffer, an async logger) still has
// every field. Written by log::write, read by the formatters (log_format.cpp).
//
// Layout: kMark, u32 message size, message, then per field: type byte, u32 key size, key,
// u32 value size, value (numbers and booleans as their text).

#include <cstdint>
#include <cstring>
#include <string_view>

#include <spdlog/common.h>

#include "mka/common/log.h"

namespace mka::log::detail {

// A payload spdlog's own calls make never starts with a NUL byte.
inline constexpr std::string_view kMark{"\0R", 2};

enum class ValueType : char { String = 's', Number = 'n', NonFinite = 'f', Bool = 'b' };

struct RecordField {
  ValueType type;
  std::string_view key;
  std::string_view value;
};

void encode(spdlog::memory_buf_t& out, std::string_view msg, Fields fields);

// Reads a payload: the message, and the encoded fields one by one. A payload not made by
// encode() is all message and has no fields.
class RecordReader {
 public:
  explicit RecordReader(std::string_view payload);
  std::string_view message() const { return message_; }
  bool next(RecordField& field);  // false after the last field (or on a damaged payload)

 private:
  bool take(std::size_t n, std::string_view& out);
  bool takeSized(std::string_view& out);

  std::string_view rest_;
  std::string_view message_;
};

}  // namespace mka::log::detail
