#pragma once
// Read-only access to an object's metadata that tolerates any JSON shape: a missing or
// mistyped field reads as absent instead of throwing, because admission input is untrusted.

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mka::webhook {

// metadata.labels[key] / metadata.annotations[key] when present and a string.
std::optional<std::string_view> labelOf(const nlohmann::json& object, std::string_view key);
std::optional<std::string_view> annotationOf(const nlohmann::json& object, std::string_view key);

}  // namespace mka::webhook
