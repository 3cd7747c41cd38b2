#pragma once
// What kube-apiserver's decoding into Go types does to a built-in kind's body, for the kinds the
// product and its tests write (ConfigMap, Secret, Namespace, ServiceAccount, both Events,
// Lease): a value of the wrong JSON type or a Secret value that is not base64 is a 400
// ("<Kind> in version \"v1\" cannot be handled as a <Kind>: json: cannot unmarshal ..."), and a
// Secret's stringData is folded into data. Unknown fields are pruned by the kind's schema
// (builtinTypeSchema) with the custom resources' pruning.
//
// Threads: pure functions over constant tables.

#include <string>

#include <nlohmann/json.hpp>

#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox::detail {

// The kind's OpenAPI schema with every $ref inlined (metadata left to the ObjectMeta rules), or
// nullptr for a built-in kind the sandbox does not type (webhook configurations, CRDs).
const nlohmann::json* builtinTypeSchema(const ResourceType& type);

// Throws ApiError 400 as the decoding would; on success folds Secret stringData into data.
void decodeBuiltin(nlohmann::json& object, const ResourceType& type, const nlohmann::json& schema);

}  // namespace mka::sandbox::detail
