#include "mka/webhook/mutator.h"

#include <optional>

#include <gtest/gtest.h>

#include "support/table_test.h"
#include "webhook_test_util.h"

namespace mka::webhook {
namespace {

using config::ManagedByDefaulting;
using nlohmann::json;
using testing::kMpiJob;
using testing::kPipelineRun;
using testing::kWorkflow;
using testing::makeRequest;
using Result = QueueLookup::Result;

// Answers every lookup with one configured result and remembers what it was asked; no
// namespace has a LocalQueue named "default".
class FakeQueueIndex final : public QueueIndex {
 public:
  explicit FakeQueueIndex(Result result) : result_(result) {}
  QueueLookup lookup(std::string_view ns, std::string_view localQueue,
                     std::span<const std::string> controllerNames) const override {
    if (localQueue == "default") return {};
    ++calls_;
    ns_ = ns;
    localQueue_ = localQueue;
    controllerNames_.assign(controllerNames.begin(), controllerNames.end());
    QueueLookup out;
    out.result = result_;
    if (result_ != Result::LocalQueueNotFound) out.clusterQueue = "team-a-cq";
    if (result_ == Result::MultiKueue) out.admissionCheck = "multikueue-ac";
    return out;
  }
  bool hasSynced() const override { return true; }

  mutable int calls_ = 0;
  mutable std::string ns_;
  mutable std::string localQueue_;
  mutable std::vector<std::string> controllerNames_;

 private:
  Result result_;
};

json pipelineRun(json labels, std::optional<json> spec = json{{"pipelineRef", {{"name", "build-and-push"}}}}) {
  json object = {{"apiVersion", "tekton.dev/v1"},
                 {"kind", "PipelineRun"},
                 {"metadata", {{"name", "build-42"}, {"namespace", "tekton-ci"}}}};
  if (!labels.is_null()) object["metadata"]["labels"] = std::move(labels);
  if (spec) object["spec"] = *spec;
  return object;
}

json workflow(json labels) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Workflow"},
          {"metadata", {{"generateName", "dag-diamond-"}, {"namespace", "argo-ci"}, {"labels", std::move(labels)}}},
          {"spec", {{"entrypoint", "diamond"}, {"templates", json::array()}}}};
}

json mpiJob(std::optional<json> spec) {
  json object = {
      {"apiVersion", "kubeflow.org/v2beta1"},
      {"kind", "MPIJob"},
      {"metadata", {{"name", "pi"}, {"namespace", "hpc"}, {"labels", {{"kueue.x-k8s.io/queue-name", "team-a"}}}}}};
  if (spec) object["spec"] = *spec;
  return object;
}

const json kQueued = {{"kueue.x-k8s.io/queue-name", "team-a"}, {"tekton.dev/pipeline", "build-and-push"}};

// Applies `patch` and checks that it only adds: either the marker itself or a parent that the
// object did not have (RFC 6902 "add" on an existing member would replace it wholesale).
json applyAddOnlyPatch(const json& object, const json& patch, const std::string& markerPointer) {
  EXPECT_TRUE(patch.is_array());
  for (const auto& op : patch) {
    EXPECT_EQ(op.at("op"), "add") << op;
    const std::string path = op.at("path");
    if (path == markerPointer) continue;
    EXPECT_EQ(markerPointer.rfind(path + "/", 0), 0u) << path << " is not a parent of " << markerPointer;
    const json::json_pointer pointer(path);
    EXPECT_TRUE(!object.contains(pointer) || object.at(pointer).is_null()) << path << " already existed";
  }
  return object.patch(patch);
}

struct MutateCase {
  std::string name{};
  api::GroupVersionKind kind{};
  json object{};
  std::string operation = "CREATE";
  ManagedByDefaulting policy = ManagedByDefaulting::MultiKueueQueues;
  Result lookup = Result::MultiKueue;
  // When set, a patch is expected that sets this JSON pointer to `value` and nothing else.
  std::optional<std::string> marker{};
  std::string value = "kueue.x-k8s.io/multikueue";
  std::string warning{};  // exact expected warning, "" for none
  bool looksUp = false;
};

std::vector<MutateCase> defaultsTheMarkerOnlyWhenItShouldCases() {
  const std::string specMarker = "/spec/managedBy";
  const std::string argoMarker = "/metadata/labels/workflows.argoproj.io~1controller-instanceid";
  const std::string runPolicyMarker = "/spec/runPolicy/managedBy";
  const json argoQueued = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  const std::vector<MutateCase> cases = {
      // managedBy locations, with and without their parents.
      {.name = "spec.managedBy with spec present",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .marker = specMarker,
       .looksUp = true},
      {.name = "spec.managedBy without spec",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued, std::nullopt),
       .marker = specMarker,
       .looksUp = true},
      {.name = "spec.managedBy with spec null",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued, json(nullptr)),
       .marker = specMarker,
       .looksUp = true},
      {.name = "spec.managedBy present but empty is defaulted",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued, json{{"managedBy", ""}, {"pipelineRef", {{"name", "p"}}}}),
       .marker = specMarker,
       .looksUp = true},
      {.name = "spec.runPolicy.managedBy with runPolicy present",
       .kind = kMpiJob,
       .object = mpiJob(json{{"runPolicy", {{"cleanPodPolicy", "Running"}}}, {"slotsPerWorker", 1}}),
       .marker = runPolicyMarker,
       .looksUp = true},
      {.name = "spec.runPolicy.managedBy without runPolicy",
       .kind = kMpiJob,
       .object = mpiJob(json{{"slotsPerWorker", 1}}),
       .marker = runPolicyMarker,
       .looksUp = true},
      {.name = "spec.runPolicy.managedBy without spec",
       .kind = kMpiJob,
       .object = mpiJob(std::nullopt),
       .marker = runPolicyMarker,
       .looksUp = true},
      {.name = "label whose key holds '/' is ~1-escaped",
       .kind = kWorkflow,
       .object = workflow(argoQueued),
       .marker = argoMarker,
       .value = "multikueue",
       .looksUp = true},
      {.name = "empty label marker is defaulted",
       .kind = kWorkflow,
       .object = workflow({{"kueue.x-k8s.io/queue-name", "team-a"}, {std::string(testing::kArgoLabel), ""}}),
       .marker = argoMarker,
       .value = "multikueue",
       .looksUp = true},

      // A value that is already there is kept, ours or not.
      {.name = "foreign spec.managedBy is kept",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued, json{{"managedBy", "pipelines.example.com/custom-runner"}})},
      {.name = "our spec.managedBy is kept",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued, json{{"managedBy", "kueue.x-k8s.io/multikueue"}})},
      {.name = "foreign label marker is kept",
       .kind = kWorkflow,
       .object = workflow({{"kueue.x-k8s.io/queue-name", "team-a"}, {std::string(testing::kArgoLabel), "team-b"}})},

      // Not queued, not configured, not a CREATE.
      {.name = "no labels at all", .kind = kPipelineRun, .object = pipelineRun(nullptr)},
      {.name = "no queue label", .kind = kPipelineRun, .object = pipelineRun({{"tekton.dev/pipeline", "p"}})},
      {.name = "empty queue label", .kind = kPipelineRun, .object = pipelineRun({{"kueue.x-k8s.io/queue-name", ""}})},
      {.name = "kind not configured", .kind = {"batch", "v1", "Job"}, .object = pipelineRun(kQueued)},
      {.name = "configured kind at another version",
       .kind = {"tekton.dev", "v1beta1", "PipelineRun"},
       .object = pipelineRun(kQueued)},
      {.name = "UPDATE is never defaulted",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .operation = "UPDATE"},
      {.name = "DELETE is never defaulted", .kind = kPipelineRun, .object = nullptr, .operation = "DELETE"},

      // Policies.
      {.name = "policy Never",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .policy = ManagedByDefaulting::Never},
      {.name = "policy QueueLabeled does not ask the index",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .policy = ManagedByDefaulting::QueueLabeled,
       .lookup = Result::LocalQueueNotFound,
       .marker = specMarker},
      {.name = "policy QueueLabeled needs the label too",
       .kind = kPipelineRun,
       .object = pipelineRun(nullptr),
       .policy = ManagedByDefaulting::QueueLabeled},

      // Queue lookups under MultiKueueQueues.
      {.name = "LocalQueue not found warns",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .lookup = Result::LocalQueueNotFound,
       .warning = "LocalQueue tekton-ci/team-a not found: spec.managedBy was not defaulted; create the LocalQueue "
                  "before submitting jobs to it",
       .looksUp = true},
      {.name = "ClusterQueue not found warns",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .lookup = Result::ClusterQueueNotFound,
       .warning = "ClusterQueue team-a-cq of LocalQueue tekton-ci/team-a not found: spec.managedBy was not "
                  "defaulted; create the ClusterQueue first",
       .looksUp = true},
      {.name = "ClusterQueue without MultiKueue check",
       .kind = kPipelineRun,
       .object = pipelineRun(kQueued),
       .lookup = Result::NotMultiKueue,
       .looksUp = true},
      {.name = "label location names the label in warnings",
       .kind = kWorkflow,
       .object = workflow(argoQueued),
       .lookup = Result::LocalQueueNotFound,
       .warning = "LocalQueue argo-ci/team-a not found: metadata.labels[workflows.argoproj.io/controller-instanceid] "
                  "was not defaulted; create the LocalQueue before submitting jobs to it",
       .looksUp = true},
  };
  return cases;
}

MKA_TABLE_TEST(MutateJob, DefaultsTheMarkerOnlyWhenItShould, MutateCase, defaultsTheMarkerOnlyWhenItShouldCases()) {
  const MutateCase& c = testCase();
  const auto config = testing::testConfig(c.policy);
  FakeQueueIndex queues(c.lookup);
  const AdmissionRequest request = makeRequest(c.kind, c.operation, c.object);

  const AdmissionResponse response = mutateJob(request, config, queues);

  EXPECT_TRUE(response.allowed);
  EXPECT_FALSE(response.status.has_value());
  EXPECT_EQ(queues.calls_, c.looksUp ? 1 : 0);
  if (c.warning.empty()) {
    EXPECT_TRUE(response.warnings.empty()) << response.warnings.front();
  } else {
    EXPECT_EQ(response.warnings, std::vector<std::string>{c.warning});
  }
  if (!c.marker) {
    EXPECT_FALSE(response.patch.has_value()) << *response.patch;
    return;
  }
  ASSERT_TRUE(response.patch.has_value());
  json expected = c.object;
  expected[json::json_pointer(*c.marker)] = c.value;
  EXPECT_EQ(applyAddOnlyPatch(c.object, *response.patch, *c.marker), expected) << *response.patch;
}

struct AsksTheIndexForTheJobsQueueWithBothControllerNamesCase {
  std::string name{};
  std::string requestNamespace{};
  std::string expectedNamespace{};
};

std::vector<AsksTheIndexForTheJobsQueueWithBothControllerNamesCase>
asksTheIndexForTheJobsQueueWithBothControllerNamesCases() {
  const std::vector<AsksTheIndexForTheJobsQueueWithBothControllerNamesCase> cases = {
      {"namespace from the request", "tekton-ci", "tekton-ci"},
      // The API server always sends it, but the object's own namespace is the same thing.
      {"namespace from the object when the request has none", "", "tekton-ci"},
  };
  return cases;
}

MKA_TABLE_TEST(MutateJob, AsksTheIndexForTheJobsQueueWithBothControllerNames,
               AsksTheIndexForTheJobsQueueWithBothControllerNamesCase,
               asksTheIndexForTheJobsQueueWithBothControllerNamesCases()) {
  const AsksTheIndexForTheJobsQueueWithBothControllerNamesCase& c = testCase();
  const auto config = testing::testConfig();
  FakeQueueIndex queues(Result::MultiKueue);
  AdmissionRequest request = makeRequest(kPipelineRun, "CREATE", pipelineRun(kQueued));
  request.namespace_ = c.requestNamespace;

  mutateJob(request, config, queues);

  EXPECT_EQ(queues.ns_, c.expectedNamespace);
  EXPECT_EQ(queues.localQueue_, "team-a");
  EXPECT_EQ(queues.controllerNames_,
            (std::vector<std::string>{"multikueue-adapter.dev/dispatcher", "kueue.x-k8s.io/multikueue"}));
}

TEST(MutateJob, DryRunIsAnsweredLikeAnyOtherRequest) {
  const auto config = testing::testConfig();
  FakeQueueIndex queues(Result::MultiKueue);
  AdmissionRequest request = makeRequest(kPipelineRun, "CREATE", pipelineRun(kQueued));
  const auto normal = mutateJob(request, config, queues);
  request.dryRun = true;
  const auto dryRun = mutateJob(request, config, queues);
  ASSERT_TRUE(dryRun.patch.has_value());
  EXPECT_EQ(dryRun.patch, normal.patch);
}

TEST(MutateJob, WorksWithTheRealInMemoryIndex) {
  InMemoryQueueIndex queues;
  queues.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
  queues.upsertClusterQueue("team-a-cq", {"provisioning", "dispatch"});
  queues.upsertAdmissionCheck("provisioning", "kueue.x-k8s.io/provisioning-request");
  queues.upsertAdmissionCheck("dispatch", "multikueue-adapter.dev/dispatcher");
  const auto config = testing::testConfig();
  const auto request = makeRequest(kPipelineRun, "CREATE", pipelineRun(kQueued));

  EXPECT_TRUE(mutateJob(request, config, queues).patch.has_value());
  queues.removeAdmissionCheck("dispatch");
  EXPECT_FALSE(mutateJob(request, config, queues).patch.has_value());
}

// ---- integrated kinds (SPEC §7.2): the suspend value in the same JSONPatch as the marker ----

struct IntegratedKindsStartSuspendedInTheSamePatchAsTheMarkerCase {
  std::string name;
  api::GroupVersionKind kind;
  json object;
  bool dispatched = true;  // listed in multiKueue.externalFrameworks too
  json expected;           // the object after the patch; null: no patch
};

std::vector<IntegratedKindsStartSuspendedInTheSamePatchAsTheMarkerCase>
integratedKindsStartSuspendedInTheSamePatchAsTheMarkerCases() {
  json runPending = pipelineRun(kQueued);
  runPending["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  runPending["spec"]["status"] = "PipelineRunPending";
  json cancelled = pipelineRun(kQueued, json{{"status", "Cancelled"}});
  json cancelledMarked = cancelled;
  cancelledMarked["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  json flowSuspended = workflow({{"kueue.x-k8s.io/queue-name", "team-a"}});
  flowSuspended["metadata"]["labels"]["workflows.argoproj.io/controller-instanceid"] = "multikueue";
  flowSuspended["spec"]["suspend"] = true;
  json flowFalse = workflow({{"kueue.x-k8s.io/queue-name", "team-a"}});
  flowFalse["spec"]["suspend"] = false;
  json flowFalseSuspended = flowFalse;
  flowFalseSuspended["spec"]["suspend"] = true;
  json noSpec = pipelineRun(kQueued, std::nullopt);
  json noSpecPatched = noSpec;
  noSpecPatched["spec"] = {{"managedBy", "kueue.x-k8s.io/multikueue"}, {"status", "PipelineRunPending"}};
  json prebuilt = workflow({{"kueue.x-k8s.io/multikueue-origin", "multikueue"}});
  prebuilt["metadata"]["annotations"] = {{"kueue.x-k8s.io/prebuilt-workload-name", "workflow-wf-1a2b3"}};
  json prebuiltSuspended = prebuilt;
  prebuiltSuspended["spec"]["suspend"] = true;
  const std::vector<IntegratedKindsStartSuspendedInTheSamePatchAsTheMarkerCase> cases = {
      {"marker and suspend together", kPipelineRun, pipelineRun(kQueued), true, runPending},
      {"no spec at all: one parent, both fields", kPipelineRun, noSpec, true, noSpecPatched},
      {"a status the user set is kept", kPipelineRun, cancelled, true, cancelledMarked},
      {"Argo: the label marker and spec.suspend", kWorkflow, workflow({{"kueue.x-k8s.io/queue-name", "team-a"}}), true,
       flowSuspended},
      {"not dispatched (a worker, a single cluster): suspend only", kWorkflow, flowFalse, false, flowFalseSuspended},
      {"a job copy with a prebuilt Workload and no queue name", kWorkflow, prebuilt, false, prebuiltSuspended},
      {"no queue name: left alone", kWorkflow, workflow(json::object()), true, nullptr},
  };
  return cases;
}

MKA_TABLE_TEST(MutateJob, IntegratedKindsStartSuspendedInTheSamePatchAsTheMarker,
               IntegratedKindsStartSuspendedInTheSamePatchAsTheMarkerCase,
               integratedKindsStartSuspendedInTheSamePatchAsTheMarkerCases()) {
  const IntegratedKindsStartSuspendedInTheSamePatchAsTheMarkerCase& c = testCase();
  auto config = testing::testConfig();
  config.managedByDefaulting = ManagedByDefaulting::QueueLabeled;
  if (!c.dispatched) config.multiKueue.externalFrameworks.clear();
  config.integrations.frameworks = {*config::integrationProfile(testing::kPipelineRun),
                                    *config::integrationProfile(testing::kWorkflow)};
  FakeQueueIndex queues(Result::MultiKueue);
  const auto response = mutateJob(makeRequest(c.kind, "CREATE", c.object), config, queues);
  EXPECT_TRUE(response.warnings.empty());
  if (c.expected.is_null()) {
    EXPECT_FALSE(response.patch.has_value()) << *response.patch;
    return;
  }
  ASSERT_TRUE(response.patch.has_value());
  EXPECT_EQ(c.object.patch(*response.patch), c.expected) << *response.patch;
}

// KUEUE-JOBFRAMEWORK scenario 51: a LocalQueue named "default" queues the namespace's jobs of
// an integrated kind that name no queue, and then they start suspended like any queued job.
struct AnIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCase {
  std::string name;
  api::GroupVersionKind kind;
  json object;
  json wantLabels;  // null: no patch
};

std::vector<AnIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCase>
anIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCases() {
  json owned = workflow(json::object());
  owned["metadata"]["ownerReferences"] = {{{"apiVersion", "argoproj.io/v1alpha1"},
                                           {"kind", "Workflow"},
                                           {"name", "parent"},
                                           {"uid", "u"},
                                           {"controller", true}}};
  json cronOwned = owned;
  cronOwned["metadata"]["ownerReferences"][0]["kind"] = "CronWorkflow";
  json emptyQueue = workflow({{"kueue.x-k8s.io/queue-name", ""}});
  json elsewhere = workflow(json::object());
  elsewhere["metadata"]["namespace"] = "other";
  const std::vector<AnIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCase> cases = {
      {"no queue name: default", kWorkflow, workflow(json::object()), {{"kueue.x-k8s.io/queue-name", "default"}}},
      {"an empty queue name: default", kWorkflow, emptyQueue, {{"kueue.x-k8s.io/queue-name", "default"}}},
      {"a queue name of its own is kept",
       kWorkflow,
       workflow({{"kueue.x-k8s.io/queue-name", "team-a"}}),
       {{"kueue.x-k8s.io/queue-name", "team-a"}}},
      {"its controller is a kind we queue: its Workload covers this one", kWorkflow, owned, nullptr},
      {"a controller of another kind does not stop it",
       kWorkflow,
       cronOwned,
       {{"kueue.x-k8s.io/queue-name", "default"}}},
      {"no default LocalQueue in the namespace", kWorkflow, elsewhere, nullptr},
      {"a kind we only dispatch is left to its own integration", kPipelineRun, pipelineRun(json::object()), nullptr},
  };
  return cases;
}

MKA_TABLE_TEST(MutateJob, AnIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueue,
               AnIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCase,
               anIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCases()) {
  const AnIntegratedJobWithoutAQueueGoesToTheNamespacesDefaultLocalQueueCase& c = testCase();
  InMemoryQueueIndex queues;
  queues.upsertLocalQueue("argo-ci", "default", "cq");
  queues.upsertClusterQueue("cq", {});
  auto config = testing::testConfig();
  config.integrations.frameworks = {*config::integrationProfile(testing::kWorkflow)};
  const auto response = mutateJob(makeRequest(c.kind, "CREATE", c.object), config, queues);
  if (c.wantLabels.is_null()) {
    EXPECT_FALSE(response.patch.has_value()) << *response.patch;
    return;
  }
  ASSERT_TRUE(response.patch.has_value());
  const json patched = c.object.patch(*response.patch);
  EXPECT_EQ(patched["metadata"]["labels"], c.wantLabels);
  EXPECT_EQ(patched["spec"]["suspend"], true);
  EXPECT_FALSE(patched["metadata"]["labels"].contains(std::string(testing::kArgoLabel)))
      << "the default LocalQueue is not a MultiKueue one";
}

}  // namespace
}  // namespace mka::webhook
