#pragma once
// Reads CustomResourceDefinition manifests from files (YAML, one or more documents), the way a
// cluster is seeded with the CRDs of Kueue, Tekton or Argo before a test starts.
//
// Threads: pure functions.

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::sandbox {

// Every document of `file`, each a CustomResourceDefinition (apiextensions.k8s.io/v1). Throws
// mka::Error naming the file (and the document) when it cannot be read, is not YAML, or holds
// something else than a CRD.
std::vector<nlohmann::json> loadCrdFile(const std::filesystem::path& file);

}  // namespace mka::sandbox
