#include "mka/multikueue/oldest_per_state.h"

namespace mka::multikueue {

std::vector<OldestPerState::Change> OldestPerState::set(const std::string& key, std::optional<Entry> entry) {
  std::vector<Change> changes;
  const auto it = byKey_.find(key);
  if (it != byKey_.end() && entry && it->second.state == entry->state && it->second.since == entry->since)
    return changes;
  // Each state touched, with its oldest before the change.
  std::vector<std::pair<std::string, std::optional<Clock::TimePoint>>> touched;
  if (it != byKey_.end()) {
    const auto state = byState_.find(it->second.state);
    touched.emplace_back(it->second.state, *state->second.begin());
    state->second.erase(state->second.find(it->second.since));
    if (state->second.empty()) byState_.erase(state);
    byKey_.erase(it);
  }
  if (entry) {
    if (touched.empty() || touched.front().first != entry->state)
      touched.emplace_back(entry->state, oldest(entry->state));
    byState_[entry->state].insert(entry->since);
    byKey_.emplace(key, std::move(*entry));
  }
  for (auto& [state, before] : touched) {
    auto after = oldest(state);
    if (after != before) changes.push_back({std::move(state), after});
  }
  return changes;
}

std::optional<Clock::TimePoint> OldestPerState::oldest(std::string_view state) const {
  const auto it = byState_.find(state);
  if (it == byState_.end()) return std::nullopt;
  return *it->second.begin();
}

}  // namespace mka::multikueue
