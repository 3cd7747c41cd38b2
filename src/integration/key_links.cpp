#include "mka/integration/key_links.h"

#include <algorithm>
#include <cstdint>

#include "mka/common/keyed_block.h"

namespace mka::integration {

// Keyed blocks (common/keyed_block.h): the key's characters follow each.
struct KeyLinks::Link {
  Target* target = nullptr;
  Link* next = nullptr;  // the next key linked to the same target
  std::uint32_t keySize = 0;
};

struct KeyLinks::Target {
  Link* first = nullptr;
  std::uint32_t keySize = 0;  // of the target's name
};

namespace {
constexpr std::string_view kOwner = "key index";
}  // namespace

std::string_view KeyLinks::keyOf(const Link* link) { return keyOfBlock(link); }

std::string_view KeyLinks::nameOf(const Target* target) { return keyOfBlock(target); }

KeyLinks::~KeyLinks() {
  links_.forEach([](Link* link) { deleteKeyedBlock(link); });
  targets_.forEach([](Target* target) { deleteKeyedBlock(target); });
}

void KeyLinks::link(std::string_view key, std::string_view target) {
  std::lock_guard lock(mutex_);
  if (const Link* found = links_.find(key); found != nullptr && nameOf(found->target) == target) return;
  unlinkLocked(key);
  if (target.empty()) return;
  Target* to = targets_.find(target);
  Link* link = nullptr;
  if (to == nullptr) {
    to = newKeyedBlock<Target>(target, kOwner);
    try {
      link = newKeyedBlock<Link>(key, kOwner);
    } catch (...) {
      deleteKeyedBlock(to);
      throw;
    }
    targets_.put(to);
  } else {
    link = newKeyedBlock<Link>(key, kOwner);
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
    deleteKeyedBlock(target);
  }
  deleteKeyedBlock(link);
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
