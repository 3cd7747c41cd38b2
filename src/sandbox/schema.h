#pragma once
// What kube-apiserver does with a CRD's structural schema on every write: prune unknown fields
// (honouring x-kubernetes-preserve-unknown-fields and x-kubernetes-embedded-resource), apply
// `default`s, drop nulls the schema does not allow, validate the result (types, formats,
// required, enum, pattern, bounds, lengths, list types and map keys), and tell server-side
// apply how lists merge (x-kubernetes-list-type, x-kubernetes-list-map-keys).
//
// Threads: pure functions.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::sandbox::schema {

// Removes fields the schema does not allow, in place. apiVersion, kind and the standard
// metadata fields are always kept at the root. A null schema keeps everything.
void prune(nlohmann::json& object, const nlohmann::json& schema);
// Fills `default` values for absent fields, in place.
void applyDefaults(nlohmann::json& object, const nlohmann::json& schema);
// Removes null values of fields that are not `nullable`, in place (after defaulting, as
// kube-apiserver does: a null with a default has been replaced by then).
void pruneNulls(nlohmann::json& object, const nlohmann::json& schema);
// The OpenAPI validation of a custom resource (after pruning and defaulting), as
// kube-apiserver's field errors: path from the root ("spec.podSets[0].count"), problem
// ("Invalid value: \"string\"", "Required value", "Unsupported value: \"x\"", "Too many: 3",
// "Duplicate value: ..."), and kube's detail ("spec.replicas in body must be of type integer:
// \"string\""). Empty when valid. apiVersion, kind and metadata are not checked here.
FieldErrors validate(const nlohmann::json& object, const nlohmann::json& schema);

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
