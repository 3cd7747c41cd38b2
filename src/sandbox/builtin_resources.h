#pragma once
// The kinds kube-apiserver serves without CRDs that the sandbox emulates, and their OpenAPI
// schemas. Internal to the sandbox module.
//
// Threads: pure functions over constant tables.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox::detail {

// Discovery data as kube-apiserver v1.32 reports it (names, scope, verbs, short names,
// categories, status subresource).
std::vector<ResourceType> builtinResources();

// "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.coordination.v1.Lease", ...: the component names
// kube-apiserver gives its kinds in OpenAPI.
std::string builtinSchemaName(const std::string& group, const std::string& version, const std::string& kind);
// Every schema the built-in kinds and the shared meta types use, by component name; kinds and
// their lists carry x-kubernetes-group-version-kind.
const nlohmann::json& builtinSchemas();

}  // namespace mka::sandbox::detail
