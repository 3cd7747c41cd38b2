#pragma once
// The in-house kind the integration's tests queue (the single-cluster sample's CRD): a TrainingRun
// with spec.suspend, spec.replicas, a pod template and a Succeeded condition, integrated by
// explicit rules as SPEC §7.1 shows them.

#include <filesystem>

#include "mka/jobkind/job_kind.h"
#include "mka/sandbox/cluster_api.h"

namespace mka::integration::fixture {

inline const std::filesystem::path kCrds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
inline const std::filesystem::path kTrainingRunCrd = std::filesystem::path(MKA_FIXTURES_DIR) / ".." / ".." /
                                                     "manifests" / "samples" / "single-cluster" / "cluster" /
                                                     "00-trainingrun-crd.yaml";
inline const api::GroupVersionKind kTrainingRun{"ml.example.com", "v1", "TrainingRun"};
inline const sandbox::ResourceRef kJobs{"ml.example.com", "v1", "trainingruns", "team-a", "", ""};
inline const sandbox::ResourceRef kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", "team-a", "", ""};

inline jobkind::JobKind trainingRuns() {
  config::IntegratedFramework rules;
  rules.name = "TrainingRun.v1.ml.example.com";
  rules.gvk = kTrainingRun;
  rules.suspend = config::FieldValue{"spec.suspend", true};
  rules.podSets = {{"main", {"spec.replicas", 1, std::nullopt}, "spec.template"}};
  rules.finished = config::FinishedRule{config::FinishedRule::Type::Condition, "Succeeded", "", {}, {}, ""};
  return jobkind::JobKind(config::ExternalFramework{rules.name, kTrainingRun, {}, false}, rules, false);
}

}  // namespace mka::integration::fixture
