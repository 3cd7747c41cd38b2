#pragma once
// One heap block for a small header struct and, right after it, the characters of its key: for
// tables of many small entries found through FlatPointerSet (the work queue's keys and its
// delayed keys, the job integration's key links). A std::string member would cost 32 bytes in
// the struct and, past 15 characters, a second block of its own, for every entry.
//
// `Block` is a struct with a `std::uint32_t keySize` member, which these functions set and read;
// everything else in it is the owner's. Only newKeyedBlock makes such a block, and only
// deleteKeyedBlock frees one.
//
// Threads: plain functions; the owner guards its blocks.

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mka {

// A new block: `Block` value-initialized, then `key`'s characters. A key over 4 GiB (its size
// is kept in 32 bits) is a std::length_error that names `owner`.
template <class Block>
Block* newKeyedBlock(std::string_view key, std::string_view owner) {
  if (key.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error(std::string(owner) + ": a key of " + std::to_string(key.size()) +
                            " bytes is longer than a key may be (4 GiB)");
  auto* block = new (::operator new(sizeof(Block) + key.size())) Block{};
  block->keySize = static_cast<std::uint32_t>(key.size());
  std::memcpy(reinterpret_cast<char*>(block + 1), key.data(), key.size());
  return block;
}

template <class Block>
std::string_view keyOfBlock(const Block* block) {
  return {reinterpret_cast<const char*>(block + 1), block->keySize};
}

template <class Block>
void deleteKeyedBlock(Block* block) {
  block->~Block();
  ::operator delete(block);
}

}  // namespace mka
