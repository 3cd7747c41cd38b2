#include "mka/common/json_fields.h"

namespace mka::json_fields {

std::string stringMember(const nlohmann::json& object, std::string_view key, std::string_view fallback) {
  if (!object.is_object()) return std::string(fallback);
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

std::string metadataString(const nlohmann::json& object, std::string_view field) {
  if (!object.is_object()) return {};
  const auto meta = object.find("metadata");
  return meta == object.end() ? std::string() : stringMember(*meta, field);
}

}  // namespace mka::json_fields
