#pragma once
// The delaying part of the WorkQueue: keys waiting for a time, handed back in time order (FIFO
// among equal times), with at most one entry per key (scheduling a waiting key again keeps the
// earlier of its two times), as client-go's delaying queue.
//
// A controller keeps one waiting key per tracked object (the periodic resync; the MultiKueue
// Workload reconciler's workerLostTimeout), so at 10,000 jobs there are 10,000 of them: each is
// one heap block (its time, its order, its place in the heap and the key's characters) behind
// a binary heap of pointers and a FlatPointerSet, about 90 bytes a key where a std::map by time
// plus an unordered_map by key cost about 180.
//
// Threads: none of its own and no locking; the WorkQueue guards it with its mutex.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mka/common/clock.h"
#include "mka/common/flat_pointer_set.h"

namespace mka::kube {

class DelayedKeys {
 public:
  using TimePoint = Clock::TimePoint;

  DelayedKeys() = default;
  ~DelayedKeys();
  DelayedKeys(const DelayedKeys&) = delete;
  DelayedKeys& operator=(const DelayedKeys&) = delete;

  // Makes `key` wait until `readyAt`; a key already waiting keeps the earlier time (a later
  // time changes nothing). Returns true when the key is now the first due: whoever sleeps until
  // the first time must wake to re-plan.
  bool schedule(std::string_view key, TimePoint readyAt);
  // The time of the first key due, if any key waits.
  std::optional<TimePoint> firstReadyAt() const;
  // Takes out the first key due if its time is <= now.
  std::optional<std::string> popDue(TimePoint now);
  std::size_t size() const { return heap_.size(); }
  bool empty() const { return heap_.empty(); }
  void clear();

 private:
  // A keyed block (common/keyed_block.h): this header, then the key's characters.
  struct Waiting {
    TimePoint readyAt{};
    std::uint64_t order = 0;  // FIFO among equal times
    std::uint32_t heapIndex = 0;
    std::uint32_t keySize = 0;
  };
  static std::string_view keyOf(const Waiting* waiting);
  static bool before(const Waiting* a, const Waiting* b);
  static void destroy(Waiting* waiting);
  void place(std::size_t index, Waiting* waiting);
  void siftUp(std::size_t index);
  void siftDown(std::size_t index);

  std::vector<Waiting*> heap_;  // a binary min-heap by (readyAt, order); owns the blocks
  FlatPointerSet<Waiting, &DelayedKeys::keyOf> byKey_;
  std::uint64_t nextOrder_ = 0;
};

}  // namespace mka::kube
