#include "mka/jobkind/managed_by.h"

#include <vector>

#include "mka/common/json_fields.h"
#include "mka/common/strings.h"

namespace mka::jobkind {
namespace {

// The object keys from the root to the marker: {"spec", "managedBy"} or
// {"metadata", "labels", "<key>"}.
std::vector<std::string> segments(const ManagedByLocation& where) {
  if (where.type == ManagedByLocation::Type::Label) return {"metadata", "labels", where.labelKey};
  return strings::split(where.path, '.');
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
  return json_fields::setFieldPatch(object, segments(where), where.value);
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
