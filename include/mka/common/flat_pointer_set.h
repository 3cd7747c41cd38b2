#pragma once
// A hash set of pointers to elements that carry their own string key, for tables with many
// small entries: open addressing with linear probing, 8 bytes per slot, at most 3/4 full (it
// grows, it never shrinks), erase by backward shift (no tombstones). A std::unordered_set costs
// a 32-byte node and an 8-byte bucket per element instead; a std::map a 48-byte or larger node.
// Written by hand because the packaged flat hash tables (abseil) would bring a new dependency
// and its shared libraries into the adapter for two tables (the informers' caches and the work
// queue's delayed keys).
//
// The set does not own its elements: whoever puts one in frees it after taking it out (or after
// clear()). `KeyOf` maps an element to its key, which must not change while it is in the set.
//
// Threads: none of its own and no locking; its owner guards it.

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>

namespace mka {

template <class T, std::string_view (*KeyOf)(const T*)>
class FlatPointerSet {
 public:
  FlatPointerSet() = default;
  FlatPointerSet(FlatPointerSet&& other) noexcept
      : slots_(std::move(other.slots_)),
        capacity_(std::exchange(other.capacity_, 0)),
        size_(std::exchange(other.size_, 0)) {}
  FlatPointerSet& operator=(FlatPointerSet&& other) noexcept {
    slots_ = std::move(other.slots_);
    capacity_ = std::exchange(other.capacity_, 0);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  FlatPointerSet(const FlatPointerSet&) = delete;
  FlatPointerSet& operator=(const FlatPointerSet&) = delete;

  T* find(std::string_view key) const {
    if (size_ == 0) return nullptr;
    return slots_[slotOf(key)];
  }

  // Puts `element` in. Returns the element it replaces (same key), or null; the caller frees it.
  T* put(T* element) {
    if (4 * (size_ + 1) > 3 * capacity_) rehash(capacity_ == 0 ? kMinCapacity : 2 * capacity_);
    T*& slot = slots_[slotOf(KeyOf(element))];
    if (slot == nullptr) ++size_;
    return std::exchange(slot, element);
  }

  // Takes out the element with `key` and returns it (the caller frees it), or null.
  T* take(std::string_view key) {
    if (size_ == 0) return nullptr;
    std::size_t hole = slotOf(key);
    T* taken = std::exchange(slots_[hole], nullptr);
    if (taken == nullptr) return nullptr;
    --size_;
    // Backward shift: each later element of the run whose home is not cyclically between the
    // hole and itself moves into the hole, so a lookup never stops early at a free slot.
    const std::size_t mask = capacity_ - 1;
    for (std::size_t i = (hole + 1) & mask; slots_[i] != nullptr; i = (i + 1) & mask) {
      if (((i - home(KeyOf(slots_[i]))) & mask) >= ((i - hole) & mask)) {
        slots_[hole] = std::exchange(slots_[i], nullptr);
        hole = i;
      }
    }
    return taken;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Forgets every element (frees none) and the table.
  void clear() {
    slots_.reset();
    capacity_ = 0;
    size_ = 0;
  }

  // Every element, in no particular order. `visit` must not change the set.
  template <class Visit>
  void forEach(Visit&& visit) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i] != nullptr) visit(slots_[i]);
  }

 private:
  static constexpr std::size_t kMinCapacity = 16;

  std::size_t home(std::string_view key) const { return std::hash<std::string_view>{}(key) & (capacity_ - 1); }

  // The slot holding `key`, or the free slot where it would go (there is always one).
  std::size_t slotOf(std::string_view key) const {
    for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1))
      if (slots_[i] == nullptr || KeyOf(slots_[i]) == key) return i;
  }

  void rehash(std::size_t capacity) {
    auto old = std::exchange(slots_, std::make_unique<T*[]>(capacity));  // value-initialised: all free
    const std::size_t oldCapacity = std::exchange(capacity_, capacity);
    for (std::size_t i = 0; i < oldCapacity; ++i)
      if (old[i] != nullptr) slots_[slotOf(KeyOf(old[i]))] = old[i];
  }

  std::unique_ptr<T*[]> slots_;  // an element, or null for a free slot
  std::size_t capacity_ = 0;     // 0 or a power of two
  std::size_t size_ = 0;
};

}  // namespace mka
