#pragma once
// Go time.Duration text ("1m", "1h30m", "250ms", "0"), as Kubernetes component configs write it.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace mka {

using Duration = std::chrono::nanoseconds;

// Parses a Go duration string; nullopt when it is not one. Negative values parse ("-1m").
std::optional<Duration> parseDuration(std::string_view text);
// Formats like Go's Duration.String(): "1m0s", "15m0s", "1.5s", "0s".
std::string formatDuration(Duration d);

}  // namespace mka
