#pragma once
// The informers' cache table: string key -> string blob (an ObjectCodec blob), with each entry
// in one heap block ([key size][blob size][key][blob], the sizes as varints) behind a
// FlatPointerSet.
//
// Why not std::map<std::string, std::string> or an unordered_set of entries: at 10,000 jobs the
// adapter caches about 40,000 objects, and the blobs are small (50-200 bytes). A map entry costs
// a 96-byte tree node and two more heap blocks; a hash set's, a 32-byte node and an 8-byte
// bucket. Here an entry costs its block and 11-21 bytes of table.
//
// Threads: none of its own and no locking: the owner (Informer) guards it with its mutex.

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>

#include "mka/common/flat_pointer_set.h"

namespace mka::kube {

class BlobMap {
 public:
  BlobMap() = default;
  ~BlobMap();
  BlobMap(BlobMap&& other) noexcept = default;
  BlobMap& operator=(BlobMap&& other) noexcept;
  BlobMap(const BlobMap&) = delete;
  BlobMap& operator=(const BlobMap&) = delete;

  // Valid until the entry changes; moving the map keeps them valid.
  std::optional<std::string_view> find(std::string_view key) const;
  bool contains(std::string_view key) const { return entries_.find(key) != nullptr; }
  // Inserts, or replaces the blob of an existing key. Returns the key as stored, valid (like
  // find's view, and through a move of the map) until the entry changes.
  std::string_view assign(std::string_view key, std::string_view blob);
  bool erase(std::string_view key);  // false when absent
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void clear();
  // Every entry, in no particular order. `visit` must not change the map.
  void forEach(const std::function<void(std::string_view key, std::string_view blob)>& visit) const;

 private:
  // An entry is one block: [varint key size][varint blob size][key][blob].
  static std::string_view keyOf(const char* entry);
  static std::string_view blobOf(const char* entry);

  FlatPointerSet<char, &BlobMap::keyOf> entries_;  // owns the blocks (new[], freed here)
};

}  // namespace mka::kube
