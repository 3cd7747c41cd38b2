#include "mka/kube/blob_map.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace mka::kube {

namespace {

constexpr std::size_t kSizes = 2 * sizeof(std::uint32_t);

std::uint32_t checkedSize(std::size_t size, const char* what) {
  if (size > UINT32_MAX)
    throw std::length_error(std::string("BlobMap: ") + what + " of " + std::to_string(size) +
                            " bytes is over the 4 GiB an entry can hold");
  return static_cast<std::uint32_t>(size);
}

}  // namespace

BlobMap::Entry::Entry(std::string_view key, std::string_view blob) {
  const std::uint32_t sizes[2] = {checkedSize(key.size(), "a key"), checkedSize(blob.size(), "a blob")};
  data_ = std::make_unique_for_overwrite<char[]>(kSizes + key.size() + blob.size());
  std::memcpy(data_.get(), sizes, kSizes);
  std::memcpy(data_.get() + kSizes, key.data(), key.size());
  std::memcpy(data_.get() + kSizes + key.size(), blob.data(), blob.size());
}

std::string_view BlobMap::Entry::key() const {
  std::uint32_t sizes[2];
  std::memcpy(sizes, data_.get(), kSizes);
  return {data_.get() + kSizes, sizes[0]};
}

std::string_view BlobMap::Entry::blob() const {
  std::uint32_t sizes[2];
  std::memcpy(sizes, data_.get(), kSizes);
  return {data_.get() + kSizes + sizes[0], sizes[1]};
}

std::optional<std::string_view> BlobMap::find(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->blob();
}

void BlobMap::assign(std::string_view key, std::string_view blob) {
  // A set's elements are immutable: a new blob means a new entry (one block either way). It is
  // made before the old one goes, in case `key` or `blob` points into it.
  Entry fresh(key, blob);
  if (auto it = entries_.find(fresh.key()); it != entries_.end()) entries_.erase(it);
  entries_.insert(std::move(fresh));
}

bool BlobMap::erase(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

void BlobMap::forEach(const std::function<void(std::string_view key, std::string_view blob)>& visit) const {
  for (const auto& entry : entries_) visit(entry.key(), entry.blob());
}

}  // namespace mka::kube
