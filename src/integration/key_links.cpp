#include "mka/integration/key_links.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

namespace mka::integration {

struct KeyLinks::Link {
  Target* target = nullptr;
  Link* next = nullptr;  // the next key linked to the same target
  std::uint32_t size = 0;
  // then `size` characters of the key
};

struct KeyLinks::Target {
  Link* first = nullptr;
  std::uint32_t size = 0;
  // then `size` characters of the target
};

namespace {

template <class Block>
Block* makeBlock(std::string_view chars) {
  if (chars.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("key index: a key of " + std::to_string(chars.size()) + " bytes");
  auto* block = new (::operator new(sizeof(Block) + chars.size())) Block{};
  block->size = static_cast<std::uint32_t>(chars.size());
  std::memcpy(block + 1, chars.data(), chars.size());
  return block;
}

template <class Block>
void freeBlock(Block* block) {
  block->~Block();
  ::operator delete(block);
}

}  // namespace

std::string_view KeyLinks::keyOf(const Link* link) { return {reinterpret_cast<const char*>(link + 1), link->size}; }

std::string_view KeyLinks::nameOf(const Target* target) {
  return {reinterpret_cast<const char*>(target + 1), target->size};
}

KeyLinks::~KeyLinks() {
  links_.forEach([](Link* link) { freeBlock(link); });
  targets_.forEach([](Target* target) { freeBlock(target); });
}

void KeyLinks::link(std::string_view key, std::string_view target) {
  std::lock_guard lock(mutex_);
  if (const Link* found = links_.find(key); found != nullptr && nameOf(found->target) == target) return;
  unlinkLocked(key);
  if (target.empty()) return;
  Link* link = makeBlock<Link>(key);
  Target* to = targets_.find(target);
  if (to == nullptr) {
    to = makeBlock<Target>(target);
    targets_.put(to);
  }
  link->target = to;
  link->next = to->first;
  to->first = link;
  links_.put(link);
}

void KeyLinks::unlink(std::string_view key) {
  std::lock_guard lock(mutex_);
  unlinkLocked(key);
}

void KeyLinks::unlinkLocked(std::string_view key) {
  Link* link = links_.take(key);
  if (link == nullptr) return;
  Target* target = link->target;
  for (Link** at = &target->first; *at != nullptr; at = &(*at)->next) {
    if (*at == link) {
      *at = link->next;
      break;
    }
  }
  if (target->first == nullptr) {
    targets_.take(nameOf(target));
    freeBlock(target);
  }
  freeBlock(link);
}

std::vector<std::string> KeyLinks::keysTo(std::string_view target) const {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mutex_);
    if (const Target* found = targets_.find(target); found != nullptr)
      for (const Link* link = found->first; link != nullptr; link = link->next) keys.emplace_back(keyOf(link));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::size_t KeyLinks::links() const {
  std::lock_guard lock(mutex_);
  return links_.size();
}

std::size_t KeyLinks::targets() const {
  std::lock_guard lock(mutex_);
  return targets_.size();
}

}  // namespace mka::integration
