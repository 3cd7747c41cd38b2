#pragma once
// What several app tests build alike: a manager cluster with Kueue's and Tekton's CRDs, a
// MultiKueueCluster reading its kubeconfig from a Secret, and an AdmissionReview of a queued
// PipelineRun.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/common/base64.h"
#include "mka/sandbox/sandbox.h"

namespace mka::app::test_util {

// A manager with Kueue's and Tekton's CRDs only (no Argo CRD).
inline sandbox::ClusterOptions managerWithKueueAndTekton() {
  const std::filesystem::path crds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
  sandbox::ClusterOptions options{.name = "manager"};
  for (const auto& entry : std::filesystem::directory_iterator(crds)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("kueue.x-k8s.io_") || name.starts_with("tekton.dev_"))
      options.crdFiles.push_back(entry.path());
  }
  return options;
}

// MultiKueueCluster `name` on `manager`, its kubeconfig in Secret kueue-system/`name`.
inline void addSecretCluster(sandbox::Cluster& manager, const std::string& name, const std::string& kubeconfig) {
  manager.api().create({"", "v1", "secrets", "kueue-system", "", ""},
                       {{"apiVersion", "v1"},
                        {"kind", "Secret"},
                        {"metadata", {{"name", name}, {"namespace", "kueue-system"}}},
                        {"data", {{"kubeconfig", base64Encode(kubeconfig)}}}});
  manager.api().create({"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "", ""},
                       {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                        {"kind", "MultiKueueCluster"},
                        {"metadata", {{"name", name}}},
                        {"spec", {{"clusterSource", {{"kubeConfig", {{"location", name}}}}}}}});
}

// A CREATE review of PipelineRun ci/build-1 queued on LocalQueue q.
inline nlohmann::json pipelineRunReview(const std::string& uid = "uid-1") {
  return {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", uid},
        {"kind", {{"group", "tekton.dev"}, {"version", "v1"}, {"kind", "PipelineRun"}}},
        {"resource", {{"group", "tekton.dev"}, {"version", "v1"}, {"resource", "pipelineruns"}}},
        {"name", "build-1"},
        {"namespace", "ci"},
        {"operation", "CREATE"},
        {"object",
         {{"apiVersion", "tekton.dev/v1"},
          {"kind", "PipelineRun"},
          {"metadata", {{"name", "build-1"}, {"namespace", "ci"}, {"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}},
          {"spec", {{"pipelineRef", {{"name", "p"}}}}}}}}}};
}

}  // namespace mka::app::test_util
