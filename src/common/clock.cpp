#include "mka/common/clock.h"

#include <cstdio>
#include <ctime>

namespace mka {

std::string toRfc3339(Clock::TimePoint time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(time));
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::optional<Clock::TimePoint> parseRfc3339(std::string_view text) {
  std::tm tm{};
  const std::string s(text);
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &consumed) != 6)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::size_t i = static_cast<std::size_t>(consumed);
  long nanos = 0;
  if (i < s.size() && s[i] == '.') {
    long scale = 100'000'000;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      nanos += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  long offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int hours = 0, minutes = 0;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d", &hours, &minutes) != 2) return std::nullopt;
    offset = (hours * 3600L + minutes * 60L) * (s[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  const std::time_t seconds = timegm(&tm) - offset;
  return Clock::TimePoint{std::chrono::seconds{seconds}} +
         std::chrono::duration_cast<Clock::TimePoint::duration>(std::chrono::nanoseconds{nanos});
}

}  // namespace mka
