#pragma once
// What kube-apiserver does with a CRD's structural schema on every write: prune unknown fields
// (honouring x-kubernetes-preserve-unknown-fields and x-kubernetes-embedded-resource), apply
// `default`s, drop nulls the schema does not allow, validate the result (types, formats,
// required, enum, pattern, bounds, lengths, list types and map keys), and tell server-side
// apply how lists merge (x-kubernetes-list-type, x-kubernetes-list-map-keys).
//
// Threads: pure functions.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::sandbox::schema {

// Removes fields the schema does not allow, in place. apiVersion, kind and the standard
// metadata fields are always kept at the root. A null schema keeps everything. `removed`, when
// given, receives the path of each field removed ("spec.containers[0].bogus").
void prune(nlohmann::json& object, const nlohmann::json& schema, std::vector<std::string>* removed = nullptr);
// Fills `default` values for absent fields, in place.
void applyDefaults(nlohmann::json& object, const nlohmann::json& schema);
// Removes null values of fields that are not `nullable`, in place (after defaulting, as
// kube-apiserver does: a null with a default has been replaced by then).
void pruneNulls(nlohmann::json& object, const nlohmann::json& schema);

// What one CRD version's schema needs prepared once, when the CRD is registered, not on every
// write: its `pattern`s and its x-kubernetes-validations rules, compiled (schema_rules.cpp).
struct Compiled;
// Compiles `schema`'s patterns and rules. What the sandbox cannot enforce (a rule outside the CEL
// it implements, a pattern std::regex would read differently from RE2, a transition rule where
// kube-apiserver cannot correlate oldSelf) is added to `errors` under `path`, the schema's place
// in the CRD ("spec.versions[0].schema.openAPIV3Schema"), so that the CRD is refused, never
// served with a rule skipped.
std::shared_ptr<const Compiled> compile(const nlohmann::json& schema, const std::string& path, FieldErrors& errors);

// The OpenAPI validation of a custom resource (after pruning and defaulting), as
// kube-apiserver's field errors: path from the root ("spec.podSets[0].count"), problem
// ("Invalid value: \"string\"", "Required value", "Unsupported value: \"x\"", "Too many: 3",
// "Duplicate value: ..."), and kube's detail ("spec.replicas in body must be of type integer:
// \"string\""). Empty when valid. apiVersion, kind and metadata are not checked here. Patterns
// come from `compiled`; without it they are compiled on the way.
FieldErrors validate(const nlohmann::json& object, const nlohmann::json& schema, const Compiled* compiled = nullptr);

// The x-kubernetes-validations rules, as kube-apiserver evaluates them once the OpenAPI
// validation has passed: each rule with `self` bound to the value at its schema node (absent
// and null values are not checked), transition rules (those reading oldSelf) only on an update
// and only where an old value correlates (object keys, the entries of a list-type map with the
// same keys). A failed rule is "<path>: Invalid value: \"<schema type>\": <message>" (or the
// reason's form), "<nil>" for the root; an evaluation error is "<error> evaluating rule: <rule>".
// On an update, an error of a rule that does not read oldSelf at a value equal to its old value
// is dropped, as kube-apiserver's validation ratcheting (on by default since 1.30) does. `old`
// is null on create.
FieldErrors validateRules(const nlohmann::json& object, const nlohmann::json* old, const Compiled& compiled);
// True when kube-apiserver would not evaluate the rules after these errors (a type, required,
// enum, too-long or too-many error: the values the rules read may not be there).
bool blocksRules(const FieldErrors& errors);
// The error kube-apiserver adds in that case.
FieldError rulesNotChecked();

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
