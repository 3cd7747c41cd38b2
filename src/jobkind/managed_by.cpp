#include "mka/jobkind/managed_by.h"

#include <vector>

#include "mka/common/strings.h"

namespace mka::jobkind {
namespace {

// The object keys from the root to the marker: {"spec", "managedBy"} or
// {"metadata", "labels", "<key>"}.
std::vector<std::string> segments(const ManagedByLocation& where) {
  if (where.type == ManagedByLocation::Type::Label) return {"metadata", "labels", where.labelKey};
  return strings::split(where.path, '.');
}

std::string pointer(const std::vector<std::string>& keys, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += "/" + strings::escapeJsonPointer(keys[i]);
  return out;
}

}  // namespace

std::optional<std::string> readManagedBy(const nlohmann::json& object, const ManagedByLocation& where) {
  const nlohmann::json* node = &object;
  for (const auto& key : segments(where)) {
    if (!node->is_object()) return std::nullopt;
    auto it = node->find(key);
    if (it == node->end()) return std::nullopt;
    node = &*it;
  }
  if (!node->is_string()) return std::nullopt;
  return node->get<std::string>();
}

nlohmann::json managedByPatch(const nlohmann::json& object, const ManagedByLocation& where) {
  const auto keys = segments(where);
  auto patch = nlohmann::json::array();
  if (!object.is_object() || keys.empty()) return patch;

  const nlohmann::json* node = &object;
  std::size_t depth = 0;  // keys[0..depth) exist as objects
  while (depth + 1 < keys.size()) {
    auto it = node->find(keys[depth]);
    if (it == node->end() || it->is_null()) break;
    if (!it->is_object()) return patch;  // a list or scalar in the way: nothing sane to write
    node = &*it;
    ++depth;
  }
  // Build the missing tail inside-out: {"runPolicy": {"managedBy": value}}.
  nlohmann::json value = where.value;
  for (std::size_t i = keys.size() - 1; i > depth; --i) value = nlohmann::json{{keys[i], std::move(value)}};
  patch.push_back({{"op", "add"}, {"path", pointer(keys, depth + 1)}, {"value", std::move(value)}});
  return patch;
}

void removeManagedBy(nlohmann::json& object, const ManagedByLocation& where) {
  const auto keys = segments(where);
  nlohmann::json* node = &object;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    if (!node->is_object()) return;
    auto it = node->find(keys[i]);
    if (it == node->end()) return;
    node = &*it;
  }
  if (node->is_object() && !keys.empty()) node->erase(keys.back());
}

}  // namespace mka::jobkind
