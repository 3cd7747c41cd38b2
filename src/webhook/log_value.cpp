#include "mka/webhook/log_value.h"

#include <cstdio>

namespace mka::webhook {
namespace {

constexpr std::size_t kMaxLogValueBytes = 256;

bool plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == '/' || c == ':' || c == '*' || c == '@' || c == '[' || c == ']' || c == ',' || c == '+';
}

}  // namespace

std::string logValue(std::string_view value) {
  const bool cut = value.size() > kMaxLogValueBytes;
  if (cut) value = value.substr(0, kMaxLogValueBytes);
  bool allPlain = !value.empty();
  for (char c : value) allPlain = allPlain && plain(c);
  if (allPlain && !cut) return std::string(value);

  std::string out = "\"";
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  if (cut) out += "...";
  out += '"';
  return out;
}

}  // namespace mka::webhook
