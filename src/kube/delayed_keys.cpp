#include "mka/kube/delayed_keys.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "mka/common/keyed_block.h"

namespace mka::kube {

std::string_view DelayedKeys::keyOf(const Waiting* waiting) { return keyOfBlock(waiting); }

bool DelayedKeys::before(const Waiting* a, const Waiting* b) {
  return std::tie(a->readyAt, a->order) < std::tie(b->readyAt, b->order);
}

void DelayedKeys::destroy(Waiting* waiting) { deleteKeyedBlock(waiting); }

DelayedKeys::~DelayedKeys() { clear(); }

void DelayedKeys::place(std::size_t index, Waiting* waiting) {
  heap_[index] = waiting;
  waiting->heapIndex = static_cast<std::uint32_t>(index);
}

void DelayedKeys::siftUp(std::size_t index) {
  Waiting* moving = heap_[index];
  while (index > 0) {
    const std::size_t parent = (index - 1) / 2;
    if (!before(moving, heap_[parent])) break;
    place(index, heap_[parent]);
    index = parent;
  }
  place(index, moving);
}

void DelayedKeys::siftDown(std::size_t index) {
  Waiting* moving = heap_[index];
  const std::size_t size = heap_.size();
  for (;;) {
    std::size_t child = 2 * index + 1;
    if (child >= size) break;
    if (child + 1 < size && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], moving)) break;
    place(index, heap_[child]);
    index = child;
  }
  place(index, moving);
}

bool DelayedKeys::schedule(std::string_view key, TimePoint readyAt) {
  if (Waiting* waiting = byKey_.find(key)) {
    if (waiting->readyAt <= readyAt) return false;  // already due sooner
    waiting->readyAt = readyAt;
    waiting->order = nextOrder_++;
    siftUp(waiting->heapIndex);
    return waiting->heapIndex == 0;
  }
  if (heap_.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("work queue: too many delayed keys (4 billion)");
  // Room first (doubling, as push_back would), so a throw once the block exists leaks nothing.
  if (heap_.size() == heap_.capacity()) heap_.reserve(std::max<std::size_t>(16, 2 * heap_.size()));
  auto* waiting = newKeyedBlock<Waiting>(key, "work queue: delayed keys");
  waiting->readyAt = readyAt;
  waiting->order = nextOrder_++;
  try {
    byKey_.put(waiting);
  } catch (...) {
    destroy(waiting);
    throw;
  }
  heap_.push_back(waiting);
  siftUp(heap_.size() - 1);
  return waiting->heapIndex == 0;
}

std::optional<DelayedKeys::TimePoint> DelayedKeys::firstReadyAt() const {
  if (heap_.empty()) return std::nullopt;
  return heap_.front()->readyAt;
}

std::optional<std::string> DelayedKeys::popDue(TimePoint now) {
  if (heap_.empty() || heap_.front()->readyAt > now) return std::nullopt;
  Waiting* first = heap_.front();
  std::string key(keyOf(first));
  byKey_.take(key);
  Waiting* last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) {
    place(0, last);
    siftDown(0);
  }
  destroy(first);
  return key;
}

void DelayedKeys::clear() {
  for (Waiting* waiting : heap_) destroy(waiting);
  heap_.clear();
  heap_.shrink_to_fit();
  byKey_.clear();
}

}  // namespace mka::kube
