#pragma once
// YAML to JSON the way Kubernetes reads manifests (sigs.k8s.io/yaml over go-yaml v2): plain
// scalars resolve by YAML 1.1 rules (true/yes/on -> true, 010 -> 8, 1_000 -> 1000, ~ -> null),
// quoted and block scalars stay strings, "<<" merge keys are honoured, and non-string keys are
// written as strings (yes: 1 -> {"true": 1}). Used for CRD files, apply-patch+yaml bodies and
// YAML request bodies, so the sandbox reads a manifest as kube-apiserver would.
//
// Threads: pure functions.

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace mka::sandbox {

// Throws mka::Error for what JSON cannot hold (NaN, infinities, collection keys).
nlohmann::json yamlToJson(const YAML::Node& node);
// Every non-empty document of a multi-document stream ("---" separated). Throws mka::Error
// "yaml: line N: <problem>" on a syntax error.
std::vector<nlohmann::json> loadYamlDocuments(std::string_view text);

}  // namespace mka::sandbox
