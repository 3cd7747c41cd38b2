#include "mka/config/store.h"

namespace mka::config {

ConfigStore::ConfigStore(Configuration initial) : current_(std::make_shared<const Configuration>(std::move(initial))) {}

std::shared_ptr<const Configuration> ConfigStore::get() const {
  std::lock_guard lock(mutex_);
  return current_;
}

void ConfigStore::set(Configuration next) {
  // Built outside the lock: readers only ever wait for a pointer swap.
  auto snapshot = std::make_shared<const Configuration>(std::move(next));
  std::lock_guard lock(mutex_);
  current_ = std::move(snapshot);
  ++generation_;
}

std::uint64_t ConfigStore::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

}  // namespace mka::config
