#pragma once
// Per state, the earliest time a key still in that state entered it: what the dispatch loop
// publishes as "the Workload longest in each admission check state", so that an alert can see a
// Workload stuck there. Each change costs O(log n) and reports only the states whose oldest
// moved, so it can run on every reconcile.
//
// Threads: none of its own; the owner serialises the calls.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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
  std::map<std::string, Entry, std::less<>> byKey_;
  std::map<std::string, std::multiset<Clock::TimePoint>, std::less<>> byState_;
};

}  // namespace mka::multikueue
