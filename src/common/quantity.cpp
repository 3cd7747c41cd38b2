#include "mka/common/quantity.h"

#include <cmath>
#include <limits>

namespace mka::quantity {
namespace {

std::optional<long double> suffixFactor(std::string_view suffix) {
  if (suffix.empty()) return 1.0L;
  if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    const auto at = kBinary.find(suffix[0]);
    if (at == std::string_view::npos) return std::nullopt;
    return std::pow(1024.0L, static_cast<long double>(at + 1));
  }
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view exponent = suffix.substr(1);
    bool negative = false;
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
      negative = exponent[0] == '-';
      exponent.remove_prefix(1);
    }
    if (exponent.empty() || exponent.size() > 3) return std::nullopt;
    int value = 0;
    for (char c : exponent) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    return std::pow(10.0L, static_cast<long double>(negative ? -value : value));
  }
  if (suffix.size() != 1) return std::nullopt;
  switch (suffix[0]) {
    case 'n': return 1e-9L;
    case 'u': return 1e-6L;
    case 'm': return 1e-3L;
    case 'k': return 1e3L;
    case 'M': return 1e6L;
    case 'G': return 1e9L;
    case 'T': return 1e12L;
    case 'P': return 1e15L;
    case 'E': return 1e18L;
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<std::int64_t> parseMilli(std::string_view text) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  long double number = 0;
  long double scale = 0;  // 0 before the decimal point
  bool digits = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (scale != 0) return std::nullopt;
      scale = 1;
      continue;
    }
    if (c < '0' || c > '9') break;
    digits = true;
    if (scale == 0) {
      number = number * 10 + (c - '0');
    } else {
      scale /= 10;
      number += (c - '0') * scale;
    }
  }
  if (!digits) return std::nullopt;
  const auto factor = suffixFactor(text.substr(i));
  if (!factor) return std::nullopt;
  const long double milli = std::ceil(number * *factor * 1000.0L - 1e-9L);
  if (milli > static_cast<long double>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  const auto value = static_cast<std::int64_t>(milli);
  return negative ? -value : value;
}

std::string formatMilli(std::int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

}  // namespace mka::quantity
