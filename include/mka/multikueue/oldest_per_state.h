#pragma once
// Per state, the earliest time a key still in that state entered it: what the dispatch loop
// publishes as "the Workload longest in each admission check state", so that an alert can see a
// Workload stuck there. Each change costs O(log n) and reports only the states whose oldest
// moved, so it can run on every reconcile.
//
// Memory is per running Workload, so it is kept small (about 50 bytes a key, against 180 with
// the key strings in ordered maps: 1.8 MiB of the manager's peak at 10,000 jobs): keys are held
// by their 64-bit hash (two keys colliding, odds about n^2 / 2^65, would share one entry of a
// metric, never a decision), states as indexes, and per state the count of keys per time (many
// Workloads enter a state within the same second).
//
// Threads: none of its own; the owner serialises the calls.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mka/common/clock.h"

namespace mka::multikueue {

class OldestPerState {
 public:
  struct Entry {
    std::string state;
    Clock::TimePoint since;
  };
  struct Change {
    std::string state;
    std::optional<Clock::TimePoint> oldest;  // nullopt: no key is in the state any more
  };

  // `key` is now in `entry` (nullopt: in none, or gone). Returns the states whose oldest moved.
  std::vector<Change> set(const std::string& key, std::optional<Entry> entry);
  std::optional<Clock::TimePoint> oldest(std::string_view state) const;

 private:
  struct Slot {
    std::uint8_t state;  // index into states_
    Clock::TimePoint since;
  };
  std::uint8_t indexOf(const std::string& state);
  std::optional<Clock::TimePoint> oldestAt(std::uint8_t state) const;

  std::unordered_map<std::uint64_t, Slot> byKey_;                 // hash of the key -> its state
  std::vector<std::string> states_;                               // the states seen, by index
  std::vector<std::map<Clock::TimePoint, std::size_t>> byState_;  // per state index: time -> keys
};

}  // namespace mka::multikueue
