#include "mka/multikueue/oldest_per_state.h"

#include <functional>

namespace mka::multikueue {

std::uint8_t OldestPerState::indexOf(const std::string& state) {
  for (std::size_t i = 0; i < states_.size(); ++i)
    if (states_[i] == state) return static_cast<std::uint8_t>(i);
  states_.push_back(state);
  byState_.emplace_back();
  return static_cast<std::uint8_t>(states_.size() - 1);
}

std::optional<Clock::TimePoint> OldestPerState::oldestAt(std::uint8_t state) const {
  const auto& times = byState_[state];
  if (times.empty()) return std::nullopt;
  return times.begin()->first;
}

std::vector<OldestPerState::Change> OldestPerState::set(const std::string& key, std::optional<Entry> entry) {
  std::vector<Change> changes;
  const auto hash = static_cast<std::uint64_t>(std::hash<std::string>{}(key));
  const auto it = byKey_.find(hash);
  const std::optional<std::uint8_t> next = entry ? std::optional(indexOf(entry->state)) : std::nullopt;
  if (it != byKey_.end() && next && it->second.state == *next && it->second.since == entry->since) return changes;
  // Each state touched, with its oldest before the change.
  std::vector<std::pair<std::uint8_t, std::optional<Clock::TimePoint>>> touched;
  if (it != byKey_.end()) {
    const auto state = it->second.state;
    touched.emplace_back(state, oldestAt(state));
    auto& times = byState_[state];
    if (auto t = times.find(it->second.since); t != times.end() && --t->second == 0) times.erase(t);
    byKey_.erase(it);
  }
  if (next) {
    if (touched.empty() || touched.front().first != *next) touched.emplace_back(*next, oldestAt(*next));
    ++byState_[*next][entry->since];
    byKey_.emplace(hash, Slot{*next, entry->since});
  }
  for (const auto& [state, before] : touched) {
    const auto after = oldestAt(state);
    if (after != before) changes.push_back({states_[state], after});
  }
  return changes;
}

std::optional<Clock::TimePoint> OldestPerState::oldest(std::string_view state) const {
  for (std::size_t i = 0; i < states_.size(); ++i)
    if (states_[i] == state) return oldestAt(static_cast<std::uint8_t>(i));
  return std::nullopt;
}

}  // namespace mka::multikueue
