#pragma once
// Injectable time, so that timeouts are tested without sleeping.

#include <atomic>
#include <chrono>

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
  explicit FakeClock(TimePoint start = TimePoint{std::chrono::seconds{1'800'000'000}}) : now_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint{TimePoint::duration{now_.load()}}; }
  void advance(std::chrono::nanoseconds d) {
    now_ += std::chrono::duration_cast<TimePoint::duration>(d).count();
  }

 private:
  std::atomic<TimePoint::duration::rep> now_;
};

}  // namespace mka
