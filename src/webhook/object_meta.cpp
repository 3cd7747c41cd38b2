#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

const nlohmann::json* memberIfObject(const nlohmann::json& parent, std::string_view key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  return it == parent.end() ? nullptr : &*it;
}

std::optional<std::string_view> metadataMapEntry(const nlohmann::json& object, std::string_view map,
                                                 std::string_view key) {
  const auto* metadata = memberIfObject(object, "metadata");
  const auto* entries = metadata ? memberIfObject(*metadata, map) : nullptr;
  const auto* value = entries ? memberIfObject(*entries, key) : nullptr;
  if (!value || !value->is_string()) return std::nullopt;
  return std::string_view(value->get_ref<const std::string&>());
}

}  // namespace

std::optional<std::string_view> labelOf(const nlohmann::json& object, std::string_view key) {
  return metadataMapEntry(object, "labels", key);
}

std::optional<std::string_view> annotationOf(const nlohmann::json& object, std::string_view key) {
  return metadataMapEntry(object, "annotations", key);
}

}  // namespace mka::webhook
