#pragma once
// Reading the keywords of one structural schema node, for the pruning, defaulting and
// validation passes (schema.cpp, schema_validation.cpp).
//
// Threads: pure functions.

#include <nlohmann/json.hpp>

namespace mka::sandbox::schema {

// A boolean keyword that is present and true ("nullable", "x-kubernetes-preserve-unknown-fields").
inline bool flag(const nlohmann::json& schema, const char* key) {
  auto it = schema.find(key);
  return it != schema.end() && it->is_boolean() && it->get<bool>();
}

// A keyword whose value is an object ("items", "properties", "additionalProperties"), or null.
inline const nlohmann::json* child(const nlohmann::json& schema, const char* key) {
  auto it = schema.find(key);
  return it != schema.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace mka::sandbox::schema
