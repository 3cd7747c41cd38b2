#pragma once
// The informers' cache table: string key -> string blob (an ObjectCodec blob), with each entry
// in one heap block ([key size][blob size][key][blob]) behind a hash table of pointers.
//
// Why not std::map<std::string, std::string>: at 10,000 jobs the adapter caches about 40,000
// objects, and the blobs are small (70-200 bytes). A map entry cost a 96-byte tree node, a
// heap block for the key and one for the blob; here an entry costs its block and a 32-byte
// hash node, about 60-70 bytes less per object.
//
// Threads: none of its own and no locking: the owner (Informer) guards it with its mutex.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_set>

namespace mka::kube {

class BlobMap {
 public:
  std::optional<std::string_view> find(std::string_view key) const;  // valid until the entry changes
  bool contains(std::string_view key) const { return entries_.find(key) != entries_.end(); }
  // Inserts, or replaces the blob of an existing key.
  void assign(std::string_view key, std::string_view blob);
  bool erase(std::string_view key);  // false when absent
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }
  // Every entry, in no particular order. `visit` must not change the map.
  void forEach(const std::function<void(std::string_view key, std::string_view blob)>& visit) const;

 private:
  class Entry {
   public:
    Entry(std::string_view key, std::string_view blob);
    std::string_view key() const;
    std::string_view blob() const;

   private:
    std::unique_ptr<char[]> data_;  // [uint32 key size][uint32 blob size][key][blob]
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
    std::size_t operator()(const Entry& entry) const { return (*this)(entry.key()); }
  };
  struct Equal {
    using is_transparent = void;
    static std::string_view keyOf(std::string_view key) { return key; }
    static std::string_view keyOf(const Entry& entry) { return entry.key(); }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return keyOf(a) == keyOf(b);
    }
  };
  std::unordered_set<Entry, Hash, Equal> entries_;
};

}  // namespace mka::kube
