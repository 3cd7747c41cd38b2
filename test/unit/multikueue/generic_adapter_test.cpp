#include "mka/multikueue/generic_adapter.h"

#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "mka/multikueue/api.h"

namespace mka::multikueue {
namespace {

using nlohmann::json;

jobkind::JobKind pipelineRuns() {
  return jobkind::JobKind(
      {"PipelineRun.v1.tekton.dev", {"tekton.dev", "v1", "PipelineRun"}, config::ManagedByLocation{}, true});
}

jobkind::JobKind workflows() {
  config::ExternalFramework f{"Workflow.v1alpha1.argoproj.io", {"argoproj.io", "v1alpha1", "Workflow"}, {}, false};
  f.managedBy.type = config::ManagedByLocation::Type::Label;
  f.managedBy.labelKey = "workflows.argoproj.io/controller-instanceid";
  f.managedBy.value = "multikueue";
  return jobkind::JobKind(std::move(f));
}

json managerPipelineRun() {
  return json::parse(R"({
    "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
    "metadata": {"name": "build-42", "namespace": "ci", "uid": "u-1", "resourceVersion": "17", "generation": 2,
                 "creationTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x"], "managedFields": [{}],
                 "ownerReferences": [{"uid": "owner"}],
                 "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "team": "a"},
                 "annotations": {"note": "kept"}},
    "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "pipelineRef": {"name": "build"}},
    "status": {"conditions": [{"type": "Succeeded", "status": "Unknown"}]}
  })");
}

TEST(GenericAdapter, RemoteJobKeepsOnlyWhatKueueCopiesAndRemovesTheFieldMarker) {
  auto copy = remoteJob(managerPipelineRun(), pipelineRuns(), "pipelinerun-build-42-1a2b3", "multikueue");
  EXPECT_EQ(copy, json::parse(R"({
    "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
    "metadata": {"name": "build-42", "namespace": "ci",
                 "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "team": "a",
                            "kueue.x-k8s.io/multikueue-origin": "multikueue",
                            "kueue.x-k8s.io/prebuilt-workload-name": "pipelinerun-build-42-1a2b3"},
                 "annotations": {"note": "kept", "kueue.x-k8s.io/prebuilt-workload-name": "pipelinerun-build-42-1a2b3"}},
    "spec": {"pipelineRef": {"name": "build"}}
  })"))
      << copy.dump(2);
}

TEST(GenericAdapter, RemoteJobRemovesALabelMarkerAndSkipsTheLabelForLongNames) {
  json wf = {{"apiVersion", "argoproj.io/v1alpha1"},
             {"kind", "Workflow"},
             {"metadata",
              {{"name", "hello"},
               {"namespace", "argo"},
               {"labels",
                {{"workflows.argoproj.io/controller-instanceid", "multikueue"}, {"kueue.x-k8s.io/queue-name", "q"}}}}},
             {"spec", {{"entrypoint", "main"}}}};
  const std::string longName(70, 'w');
  auto copy = remoteJob(wf, workflows(), longName, "origin-a");
  const auto& labels = copy["metadata"]["labels"];
  EXPECT_FALSE(labels.contains("workflows.argoproj.io/controller-instanceid")) << "the worker's Argo must run it";
  EXPECT_EQ(labels["kueue.x-k8s.io/multikueue-origin"], "origin-a");
  EXPECT_FALSE(labels.contains(std::string(api::kPrebuiltWorkloadNameKey)))
      << "more than 63 characters: annotation only";
  EXPECT_EQ(copy["metadata"]["annotations"][std::string(api::kPrebuiltWorkloadNameKey)], longName);
  EXPECT_EQ(prebuiltWorkloadName(copy), longName);

  auto annotationOnly = remoteJob(wf, workflows(), "short", "origin-a", PrebuiltLink::Annotation);
  EXPECT_FALSE(annotationOnly["metadata"]["labels"].contains(std::string(api::kPrebuiltWorkloadNameKey)));
}

TEST(GenericAdapter, RemoteWorkloadDropsTheJobUidAndAddsTheOrigin) {
  json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "Workload"},
             {"metadata",
              {{"name", "pipelinerun-build-42-1a2b3"},
               {"namespace", "ci"},
               {"uid", "w-1"},
               {"ownerReferences", json::array({{{"uid", "u-1"}}})},
               {"labels", {{"kueue.x-k8s.io/job-uid", "u-1"}}}}},
             {"spec", {{"queueName", "user-queue"}, {"podSets", json::array()}}},
             {"status", {{"admission", {{"clusterQueue", "cq"}}}}}};
  auto copy = remoteWorkload(wl, "multikueue");
  EXPECT_EQ(copy["metadata"], json({{"name", "pipelinerun-build-42-1a2b3"},
                                    {"namespace", "ci"},
                                    {"labels", {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}}}}));
  EXPECT_EQ(copy["spec"], wl["spec"]);
  EXPECT_FALSE(copy.contains("status"));
}

TEST(GenericAdapter, StatusPatchCopiesTheRemoteStatusOnlyWhenItChanged) {
  json local = {{"status", {{"startTime", "t0"}, {"localOnly", 1}, {"nested", {{"a", 1}, {"b", 2}}}}}};
  json remote = {{"status", {{"startTime", "t0"}, {"completionTime", "t1"}, {"nested", {{"a", 1}, {"c", 3}}}}}};
  auto patch = statusPatch(local, remote);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(*patch,
            json::parse(R"({"status": {"localOnly": null, "completionTime": "t1", "nested": {"b": null, "c": 3}}})"));
  json patched = local;
  patched.merge_patch(*patch);
  EXPECT_EQ(patched["status"], remote["status"]) << "applying the patch yields the remote status exactly";

  EXPECT_FALSE(statusPatch(remote, remote).has_value()) << "unchanged: nothing to send";
  EXPECT_FALSE(statusPatch(local, json{{"spec", json::object()}}).has_value()) << "no remote status yet";
  EXPECT_EQ(*statusPatch(json::object(), remote), json({{"status", remote["status"]}}));
}

TEST(GenericAdapter, OwnershipIsByOriginLabel) {
  json object = {{"metadata", {{"labels", {{"kueue.x-k8s.io/multikueue-origin", "a"}}}}}};
  EXPECT_TRUE(ownedByOrigin(object, "a"));
  EXPECT_FALSE(ownedByOrigin(object, "b")) << "another manager's object is left alone";
  EXPECT_FALSE(ownedByOrigin(json::object(), "a"));
  EXPECT_THROW(ownedByOrigin(object, ""), Error);
}

TEST(GenericAdapter, PrebuiltLinkReadsTheAnnotationFirst) {
  json job = {{"metadata",
               {{"labels", {{"kueue.x-k8s.io/prebuilt-workload-name", "from-label"}}},
                {"annotations", {{"kueue.x-k8s.io/prebuilt-workload-name", "from-annotation"}}}}}};
  EXPECT_EQ(prebuiltWorkloadName(job), "from-annotation");
  job["metadata"].erase("annotations");
  EXPECT_EQ(prebuiltWorkloadName(job), "from-label");
  EXPECT_EQ(prebuiltWorkloadName(json::object()), std::nullopt);
}

TEST(GenericAdapter, MapsAWorkersJobToTheManagersWorkloadThroughItsLink) {
  const GenericAdapter adapter(workflows());
  json job = {{"metadata",
               {{"name", "wf"},
                {"namespace", "team-a"},
                {"annotations", {{"kueue.x-k8s.io/prebuilt-workload-name", "workflow-wf-1a2b3"}}}}}};
  EXPECT_EQ(adapter.workloadKeyFor(job), "team-a/workflow-wf-1a2b3");
  job["metadata"].erase("annotations");
  EXPECT_EQ(adapter.workloadKeyFor(job), std::nullopt) << "a job without a link belongs to no Workload";
}

TEST(GenericAdapter, ManagedWhenTheKindsMarkerSaysMultiKueue) {
  const GenericAdapter adapter(workflows());
  json wf = {{"metadata", {{"labels", {{"workflows.argoproj.io/controller-instanceid", "multikueue"}}}}}};
  EXPECT_EQ(adapter.notManaged(wf), std::nullopt);
  wf["metadata"]["labels"].clear();
  EXPECT_EQ(adapter.notManaged(wf),
            "Expecting metadata.labels[workflows.argoproj.io/controller-instanceid] to be \"multikueue\" not \"\"");
}

TEST(Adapters, FindsTheAdapterOfAKindByItsFullGroupVersionKind) {
  const Adapters adapters(
      {std::make_shared<GenericAdapter>(pipelineRuns()), std::make_shared<GenericAdapter>(workflows())});
  const auto* found = adapters.find({"argoproj.io", "v1alpha1", "Workflow"});
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->kind().name(), "Workflow.v1alpha1.argoproj.io");
  EXPECT_EQ(adapters.find({"argoproj.io", "v1", "Workflow"}), nullptr) << "another version is not configured";
  EXPECT_EQ(adapters.find({"batch", "v1", "Job"}), nullptr);
  EXPECT_EQ(Adapters().find({"tekton.dev", "v1", "PipelineRun"}), nullptr);
}

}  // namespace
}  // namespace mka::multikueue
