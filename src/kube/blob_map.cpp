#include "mka/kube/blob_map.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace mka::kube {

namespace {

// An entry's two sizes, each as a LEB128 varint (one byte below 128, two below 16,384): a
// cached object's key is ~20-40 bytes and its blob ~50-200, so 2-3 bytes where two uint32 would
// take 8; with jemalloc's size classes 16-32 bytes apart, that moves many entries a class down.
constexpr std::size_t kMaxVarint = 5;  // enough for a uint32

std::uint32_t checkedSize(std::size_t size, const char* what) {
  if (size > UINT32_MAX)
    throw std::length_error(std::string("BlobMap: ") + what + " of " + std::to_string(size) +
                            " bytes is over the 4 GiB an entry can hold");
  return static_cast<std::uint32_t>(size);
}

std::size_t putVarint(char* out, std::uint32_t value) {
  std::size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out[n++] = static_cast<char>(value);
  return n;
}

std::uint32_t getVarint(const char*& in) {
  std::uint32_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(*in++);
    value |= std::uint32_t{byte & 0x7fu} << shift;
    if (byte < 0x80) return value;
  }
}

}  // namespace

std::string_view BlobMap::keyOf(const char* entry) {
  const std::uint32_t keySize = getVarint(entry);
  getVarint(entry);
  return {entry, keySize};
}

std::string_view BlobMap::blobOf(const char* entry) {
  const std::uint32_t keySize = getVarint(entry);
  const std::uint32_t blobSize = getVarint(entry);
  return {entry + keySize, blobSize};
}

BlobMap::~BlobMap() { clear(); }

BlobMap& BlobMap::operator=(BlobMap&& other) noexcept {
  if (this != &other) {
    clear();
    entries_ = std::move(other.entries_);
  }
  return *this;
}

std::optional<std::string_view> BlobMap::find(std::string_view key) const {
  const char* entry = entries_.find(key);
  if (entry == nullptr) return std::nullopt;
  return blobOf(entry);
}

std::string_view BlobMap::assign(std::string_view key, std::string_view blob) {
  // The new block is made before the old one goes, in case `key` or `blob` points into it.
  char sizes[2 * kMaxVarint];
  std::size_t header = putVarint(sizes, checkedSize(key.size(), "a key"));
  header += putVarint(sizes + header, checkedSize(blob.size(), "a blob"));
  auto fresh = std::make_unique_for_overwrite<char[]>(header + key.size() + blob.size());
  std::memcpy(fresh.get(), sizes, header);
  std::memcpy(fresh.get() + header, key.data(), key.size());
  std::memcpy(fresh.get() + header + key.size(), blob.data(), blob.size());
  std::unique_ptr<char[]> replaced(entries_.put(fresh.get()));
  return keyOf(fresh.release());
}

bool BlobMap::erase(std::string_view key) {
  std::unique_ptr<char[]> taken(entries_.take(key));
  return taken != nullptr;
}

void BlobMap::clear() {
  entries_.forEach([](char* entry) { delete[] entry; });
  entries_.clear();
}

void BlobMap::forEach(const std::function<void(std::string_view key, std::string_view blob)>& visit) const {
  entries_.forEach([&](const char* entry) { visit(keyOf(entry), blobOf(entry)); });
}

}  // namespace mka::kube
