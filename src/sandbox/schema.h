#pragma once
// What kube-apiserver does with a CRD's structural schema on every write: prune unknown fields
// (honouring x-kubernetes-preserve-unknown-fields and x-kubernetes-embedded-resource), apply
// `default`s, and tell server-side apply how lists merge (x-kubernetes-list-type,
// x-kubernetes-list-map-keys).
//
// Threads: pure functions.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::sandbox::schema {

// Removes fields the schema does not allow, in place. apiVersion, kind and the standard
// metadata fields are always kept at the root. A null schema keeps everything.
void prune(nlohmann::json& object, const nlohmann::json& schema);
// Fills `default` values for absent fields, in place.
void applyDefaults(nlohmann::json& object, const nlohmann::json& schema);

struct ListType {
  enum class Kind { Atomic, Set, Map };
  Kind kind = Kind::Atomic;
  std::vector<std::string> mapKeys;  // Kind::Map
};
// How the list at `path` (object keys from the root, e.g. {"status","conditions"}) merges.
// Unknown paths and schemas without a list-type are Atomic, as in kube-apiserver; the metadata
// lists it knows (finalizers: set, ownerReferences: map by uid, managedFields: atomic) are
// answered without a schema.
ListType listTypeAt(const nlohmann::json& schema, const std::vector<std::string>& path);

}  // namespace mka::sandbox::schema
