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

json managerWorkflow() {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Workflow"},
          {"metadata",
           {{"name", "hello"},
            {"namespace", "argo"},
            {"labels", {{"workflows.argoproj.io/controller-instanceid", "multikueue"}, {"team", "a"}}}}},
          {"spec",
           {{"entrypoint", "main"},
            {"ttlStrategy", {{"secondsAfterCompletion", 0}}},
            {"podGC", {{"strategy", "OnPodCompletion"}}},
            {"arguments", {{"parameters", json::array({{{"name", "a"}}, {{"name", "b"}}})}}}}}};
}

// A Workflow kind whose remoteCopy is `copy`, written as in the configuration.
jobkind::JobKind workflowsCopied(const json& removeFields, const json& patches) {
  auto kind = workflows();
  auto f = kind.framework();
  f.remoteCopy.removeFields = removeFields.get<std::vector<std::string>>();
  f.remoteCopy.patches = patches;
  return jobkind::JobKind(std::move(f));
}

TEST(GenericAdapter, AWorkflowsCopyNeverCarriesItsTtlStrategy) {
  // The built-in profile: a copy that deletes itself once finished could go before its final
  // status reached the manager, which would then see its job gone.
  auto copy = remoteJob(managerWorkflow(), workflows(), "wl", "multikueue");
  EXPECT_FALSE(copy["spec"].contains("ttlStrategy"));
  EXPECT_EQ(copy["spec"]["podGC"], managerWorkflow()["spec"]["podGC"]) << "only the profile's field goes";
  EXPECT_EQ(workflows().remoteCopyRemovals(), (std::vector<std::string>{"/spec/ttlStrategy"}));
  EXPECT_TRUE(pipelineRuns().remoteCopyRemovals().empty());
}

TEST(GenericAdapter, RemoveFieldsAddToTheProfileAndSkipWhatIsAbsent) {
  const auto kind = workflowsCopied(
      json::array({"/spec/podGC", "/spec/arguments/parameters/0", "/spec/absent/x", "/spec/ttlStrategy"}),
      json::array());
  EXPECT_EQ(kind.remoteCopyRemovals(), (std::vector<std::string>{"/spec/ttlStrategy", "/spec/podGC",
                                                                 "/spec/arguments/parameters/0", "/spec/absent/x"}))
      << "the profile's first, each once";
  auto copy = remoteJob(managerWorkflow(), kind, "wl", "multikueue");
  EXPECT_FALSE(copy["spec"].contains("ttlStrategy"));
  EXPECT_FALSE(copy["spec"].contains("podGC"));
  EXPECT_EQ(copy["spec"]["arguments"]["parameters"], json::parse(R"([{"name": "b"}])")) << "a list element goes";
  EXPECT_EQ(copy["spec"]["entrypoint"], "main");
}

TEST(GenericAdapter, PatchesApplyInOrderAndTheDispatchLoopsOwnFieldsWin) {
  const auto kind = workflowsCopied(json::array(), json::parse(R"([
    {"op": "add", "path": "/metadata/labels/site", "value": "worker"},
    {"op": "replace", "path": "/spec/entrypoint", "value": "worker-main"},
    {"op": "copy", "from": "/spec/entrypoint", "path": "/metadata/labels/entry"},
    {"op": "remove", "path": "/metadata/labels/team"},
    {"op": "add", "path": "/spec/serviceAccountName", "value": "runner"},
    {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1multikueue-origin", "value": "someone-else"}])"));
  auto copy = remoteJob(managerWorkflow(), kind, "wl", "multikueue");
  EXPECT_EQ(copy["metadata"]["labels"]["site"], "worker");
  EXPECT_EQ(copy["spec"]["entrypoint"], "worker-main");
  EXPECT_EQ(copy["metadata"]["labels"]["entry"], "worker-main") << "each operation sees the ones before it";
  EXPECT_FALSE(copy["metadata"]["labels"].contains("team"));
  EXPECT_EQ(copy["spec"]["serviceAccountName"], "runner");
  EXPECT_EQ(copy["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"], "multikueue")
      << "the origin label is set after the patches: no patch takes a copy out of the dispatch loop's hands";
  EXPECT_EQ(copy["metadata"]["annotations"][std::string(api::kPrebuiltWorkloadNameKey)], "wl");
}

TEST(GenericAdapter, APatchThatDoesNotApplyNamesItsOperationAndGivesNoCopy) {
  const auto kind = workflowsCopied(json::array(), json::parse(R"([
    {"op": "add", "path": "/metadata/labels/site", "value": "worker"},
    {"op": "test", "path": "/spec/entrypoint", "value": "other"}])"));
  try {
    (void)remoteJob(managerWorkflow(), kind, "wl", "multikueue");
    FAIL() << "expected RemoteCopyError";
  } catch (const RemoteCopyError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Workflow argo/hello: remoteCopy.patches[1] (test /spec/entrypoint) of "
                        "Workflow.v1alpha1.argoproj.io does not apply: "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("no worker gets a copy until the job or the patch changes"), std::string::npos) << what;
  }
  const GenericAdapter adapter(kind);
  const auto problem = adapter.copyProblem(managerWorkflow());
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("remoteCopy.patches[1]"), std::string::npos) << *problem;
  auto matching = managerWorkflow();
  matching["spec"]["entrypoint"] = "other";
  EXPECT_EQ(adapter.copyProblem(matching), std::nullopt) << "a job the patch fits gets its copy";

  const GenericAdapter replaceMissing(
      workflowsCopied(json::array(), json::parse(R"([{"op": "replace", "path": "/spec/missing", "value": 1}])")));
  EXPECT_TRUE(replaceMissing.copyProblem(managerWorkflow()).has_value()) << "replace needs the field";
}

TEST(GenericAdapter, StatusPatchLeavesOutTheExcludedFields) {
  json remote = {{"status", {{"phase", "Running"}, {"nodes", {{"n1", {{"phase", "Running"}}}}}, {"progress", "1/2"}}}};
  const std::vector<std::string> exclude{"/nodes", "/absent"};
  auto patch = statusPatch(json::object(), remote, exclude);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(*patch, json::parse(R"({"status": {"phase": "Running", "progress": "1/2"}})"));

  json local = {{"status", {{"phase", "Running"}, {"progress", "1/2"}}}};
  remote["status"]["nodes"]["n2"] = {{"phase", "Pending"}};
  EXPECT_FALSE(statusPatch(local, remote, exclude).has_value()) << "only excluded fields changed: nothing to send";

  json stale = {{"status", {{"phase", "Running"}, {"progress", "1/2"}, {"nodes", {{"old", 1}}}}}};
  EXPECT_EQ(*statusPatch(stale, remote, exclude), json::parse(R"({"status": {"nodes": null}})"))
      << "the manager's job keeps none of them";
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
