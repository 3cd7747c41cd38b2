#pragma once
// Injectable time, so that timeouts are tested without sleeping.

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace mka {

class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

// Test clock: time moves only when advance() is called. Safe to read from any thread.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{std::chrono::seconds{1'800'000'000}})
      : now_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint{TimePoint::duration{now_.load()}}; }
  void advance(std::chrono::nanoseconds d) { now_ += std::chrono::duration_cast<TimePoint::duration>(d).count(); }

 private:
  std::atomic<TimePoint::duration::rep> now_;
};

// "2026-11-22T16:35:01Z": RFC 3339 in UTC with whole seconds, as Kubernetes writes metav1.Time.
std::string toRfc3339(Clock::TimePoint time);
// The inverse, for metav1.Time strings (fractional seconds and "Z" or numeric offsets
// accepted); nullopt when `text` is not such a time.
std::optional<Clock::TimePoint> parseRfc3339(std::string_view text);

}  // namespace mka
