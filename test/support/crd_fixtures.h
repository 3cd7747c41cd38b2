#pragma once
// The upstream CRDs in test/fixtures/crds, read as the sandbox reads them.

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/sandbox/crd_loader.h"

namespace mka::sandbox::test {

inline nlohmann::json fixtureCrd(const std::string& file) {
  return loadCrdFile(std::string(MKA_FIXTURES_DIR) + "/crds/" + file).at(0);
}

inline const nlohmann::json& workloadCrd() {
  static const nlohmann::json crd = fixtureCrd("kueue.x-k8s.io_workloads.yaml");
  return crd;
}
inline const nlohmann::json& pipelineRunCrd() {
  static const nlohmann::json crd = fixtureCrd("tekton.dev_pipelineruns.yaml");
  return crd;
}
inline const nlohmann::json& argoWorkflowCrd() {
  static const nlohmann::json crd = fixtureCrd("argoproj.io_workflows.minimal.yaml");
  return crd;
}

// The openAPIV3Schema of `version` in `crd`.
inline const nlohmann::json& versionSchema(const nlohmann::json& crd, const std::string& version) {
  for (const auto& v : crd.at("spec").at("versions"))
    if (v.at("name") == version) return v.at("schema").at("openAPIV3Schema");
  throw std::out_of_range("no version " + version);
}

}  // namespace mka::sandbox::test
