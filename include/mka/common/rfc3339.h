#pragma once
// Kubernetes timestamps (metav1.Time): RFC 3339 in UTC with whole seconds, as Go's
// time.RFC3339 formats a UTC time ("2027-01-15T08:00:00Z").
//
// Threads: pure functions.

#include <string>

#include "mka/common/clock.h"

namespace mka {

// Truncates to the second, as metav1.Time does.
std::string formatRfc3339(Clock::TimePoint time);

}  // namespace mka
