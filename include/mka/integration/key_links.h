#pragma once
// Each key linked to at most one target, and each target to the keys that link to it: the two
// directions of an informer index (the job integration's owner and prebuilt-name indexes, keys
// "ns/name"). It holds an entry for every Workload of the cluster, so it is stored the way the
// informers' caches are: each key and each target once, in a block with its characters, found
// through open-addressing tables (FlatPointerSet); the keys of one target are a list through
// their blocks. That is about 110 bytes a link, where a std::map of key to target and one of
// target to a std::set of keys took about 330: at 10,000 jobs, over 2 MB of the manager's heap.
//
// Threads: any; one lock.

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mka/common/flat_pointer_set.h"

namespace mka::integration {

class KeyLinks {
 public:
  KeyLinks() = default;
  ~KeyLinks();
  KeyLinks(const KeyLinks&) = delete;
  KeyLinks& operator=(const KeyLinks&) = delete;

  // Links `key` to `target`, replacing its earlier link; an empty `target` unlinks it.
  void link(std::string_view key, std::string_view target);
  void unlink(std::string_view key);
  // The keys linked to `target`, sorted (the reconciler's choices among them do not depend on
  // the order events came in).
  std::vector<std::string> keysTo(std::string_view target) const;
  // Links and targets held: for tests (nothing is kept for a target once its last key goes).
  std::size_t links() const;
  std::size_t targets() const;

 private:
  struct Link;    // a key, its target, and the next key of that target
  struct Target;  // a target and the first of its keys
  static std::string_view keyOf(const Link* link);
  static std::string_view nameOf(const Target* target);
  void unlinkLocked(std::string_view key);

  mutable std::mutex mutex_;
  FlatPointerSet<Link, &KeyLinks::keyOf> links_;       // owns the Link blocks
  FlatPointerSet<Target, &KeyLinks::nameOf> targets_;  // owns the Target blocks
};

}  // namespace mka::integration
