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

namespace {

const nlohmann::json* memberOf(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

const nlohmann::json& objectMember(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const auto* member = memberOf(object, key);
  return member != nullptr && member->is_object() ? *member : kEmpty;
}

const nlohmann::json& arrayMember(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const auto* member = memberOf(object, key);
  return member != nullptr && member->is_array() ? *member : kEmpty;
}

}  // namespace mka::json_fields
