#include "mka/common/rfc3339.h"

#include <ctime>

namespace mka {

std::string formatRfc3339(Clock::TimePoint time) {
  // floor, not truncation toward zero: times before 1970 keep their second.
  const auto seconds = std::chrono::floor<std::chrono::seconds>(time.time_since_epoch()).count();
  const auto t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[32];
  const auto n = std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(buffer, n);
}

}  // namespace mka
