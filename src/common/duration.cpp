#include "mka/common/duration.h"

#include <array>
#include <cstdint>

namespace mka {
namespace {

// Mirrors Go's time.ParseDuration, including its overflow rules, so a value Kueue accepts we
// accept and one it refuses we refuse.
constexpr std::uint64_t kMaxMagnitude = std::uint64_t{1} << 63;  // |min int64|

struct Unit {
  std::string_view name;
  std::uint64_t nanos;
};
constexpr std::array<Unit, 8> kUnits{{
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // U+00B5 micro sign
    {"\xCE\xBCs", 1'000},  // U+03BC Greek small letter mu
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Leading integer; false on overflow.
bool leadingInt(std::string_view& s, std::uint64_t& out) {
  out = 0;
  std::size_t i = 0;
  for (; i < s.size() && isDigit(s[i]); ++i) {
    if (out > (kMaxMagnitude - 1) / 10) return false;
    out = out * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (out > kMaxMagnitude) return false;
  }
  s.remove_prefix(i);
  return true;
}

// Leading fraction digits as value/scale; digits past int64 precision are dropped, like Go.
void leadingFraction(std::string_view& s, std::uint64_t& value, double& scale) {
  value = 0;
  scale = 1;
  bool overflow = false;
  std::size_t i = 0;
  for (; i < s.size() && isDigit(s[i]); ++i) {
    if (overflow) continue;
    if (value > (kMaxMagnitude - 1) / 10) {
      overflow = true;
      continue;
    }
    std::uint64_t next = value * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (next > kMaxMagnitude) {
      overflow = true;
      continue;
    }
    value = next;
    scale *= 10;
  }
  s.remove_prefix(i);
}

// Writes the fraction of v / 10^precision, without trailing zeros (and without the point when
// the fraction is zero), to the front of `out`; returns v / 10^precision.
std::uint64_t formatFraction(std::string& out, std::uint64_t v, int precision) {
  std::string digits;
  bool printing = false;
  for (int i = 0; i < precision; ++i) {
    auto digit = v % 10;
    printing = printing || digit != 0;
    if (printing) digits.insert(digits.begin(), static_cast<char>('0' + digit));
    v /= 10;
  }
  if (printing) out.insert(0, "." + digits);
  return v;
}

}  // namespace

std::optional<Duration> parseDuration(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration{0};
  if (s.empty()) return std::nullopt;

  std::uint64_t total = 0;
  while (!s.empty()) {
    if (!isDigit(s.front()) && s.front() != '.') return std::nullopt;
    std::uint64_t whole = 0;
    auto before = s.size();
    if (!leadingInt(s, whole)) return std::nullopt;
    bool hadWhole = before != s.size();
    std::uint64_t fraction = 0;
    double scale = 1;
    bool hadFraction = false;
    if (!s.empty() && s.front() == '.') {
      s.remove_prefix(1);
      auto beforeFraction = s.size();
      leadingFraction(s, fraction, scale);
      hadFraction = beforeFraction != s.size();
    }
    if (!hadWhole && !hadFraction) return std::nullopt;

    std::size_t unitLength = 0;
    while (unitLength < s.size() && s[unitLength] != '.' && !isDigit(s[unitLength])) ++unitLength;
    if (unitLength == 0) return std::nullopt;  // Go refuses "5": a unit is required
    auto unitName = s.substr(0, unitLength);
    s.remove_prefix(unitLength);
    const Unit* unit = nullptr;
    for (const auto& u : kUnits)
      if (u.name == unitName) unit = &u;
    if (unit == nullptr) return std::nullopt;

    if (whole > kMaxMagnitude / unit->nanos) return std::nullopt;
    std::uint64_t value = whole * unit->nanos;
    if (fraction > 0) {
      value += static_cast<std::uint64_t>(static_cast<double>(fraction) * (static_cast<double>(unit->nanos) / scale));
      if (value > kMaxMagnitude) return std::nullopt;
    }
    total += value;
    if (total > kMaxMagnitude) return std::nullopt;
  }
  if (negative) return Duration{static_cast<std::int64_t>(~total + 1)};
  if (total > kMaxMagnitude - 1) return std::nullopt;
  return Duration{static_cast<std::int64_t>(total)};
}

std::string formatDuration(Duration d) {
  const auto count = d.count();
  const bool negative = count < 0;
  // Unsigned negation keeps the minimum int64 representable.
  std::uint64_t u = static_cast<std::uint64_t>(count);
  if (negative) u = ~u + 1;

  std::string out;
  if (u == 0) return "0s";
  if (u < 1'000'000'000) {
    // Below a second Go switches to the largest unit that keeps an integer part: 1.5ms, 250ns.
    std::string unit;
    int precision = 0;
    if (u < 1'000) {
      unit = "ns";
    } else if (u < 1'000'000) {
      unit = "\xC2\xB5s";
      precision = 3;
    } else {
      unit = "ms";
      precision = 6;
    }
    out = unit;
    u = formatFraction(out, u, precision);
    out.insert(0, std::to_string(u));
  } else {
    out = "s";
    u = formatFraction(out, u, 9);
    out.insert(0, std::to_string(u % 60));
    u /= 60;
    if (u > 0) {
      out.insert(0, std::to_string(u % 60) + "m");
      u /= 60;
      if (u > 0) out.insert(0, std::to_string(u) + "h");
    }
  }
  if (negative) out.insert(0, "-");
  return out;
}

}  // namespace mka
