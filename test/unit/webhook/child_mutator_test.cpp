// POST /mutate-children: a started PipelineRun's TaskRuns get the node selector and tolerations
// of the run's admission, which Tekton refuses to have written into the run itself.
#include "mka/webhook/child_mutator.h"

#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "mka/observability/metrics.h"
#include "mka/webhook/admission_handler.h"
#include "support/table_test.h"
#include "webhook_test_util.h"

namespace mka::webhook {
namespace {

using nlohmann::json;
using testing::kPipelineRun;
using testing::makeRequest;
using testing::reviewBody;

const api::GroupVersionKind kTaskRun{"tekton.dev", "v1", "TaskRun"};
const json kGpuToleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
const json kOwnToleration = {{"key", "dedicated"}, {"operator", "Exists"}};

// A cache filled by hand.
class FakeAdmittedWorkloads final : public AdmittedWorkloads {
 public:
  std::optional<json> workload(std::string_view ns, std::string_view name) const override {
    const auto it = workloads.find(std::string(ns) + "/" + std::string(name));
    if (it == workloads.end()) return std::nullopt;
    return it->second;
  }
  std::optional<json> flavor(std::string_view name) const override {
    const auto it = flavors.find(std::string(name));
    if (it == flavors.end()) return std::nullopt;
    return it->second;
  }
  bool hasSynced() const override { return true; }

  std::map<std::string, json> workloads;  // "ns/name"
  std::map<std::string, json> flavors;
};

// Workload team-a/build-wl of PipelineRun "build", admitted with pod set pod-set-1 in flavor
// "gpu"; the flavor's node label example.com/accelerator=a100 and its GPU toleration.
FakeAdmittedWorkloads admittedInGpu() {
  FakeAdmittedWorkloads cache;
  cache.workloads["team-a/build-wl"] = {
      {"metadata", {{"name", "build-wl"}, {"namespace", "team-a"}}},
      {"spec", {{"queueName", "gpu"}, {"podSets", json::array({{{"name", "pod-set-1"}, {"count", 1}}})}}},
      {"status",
       {{"admission",
         {{"clusterQueue", "gpu-cq"},
          {"podSetAssignments",
           json::array({{{"name", "pod-set-1"}, {"flavors", {{"tekton.dev/pipelineruns", "gpu"}}}}})}}}}}};
  cache.flavors["gpu"] = {
      {"metadata", {{"name", "gpu"}}},
      {"spec",
       {{"nodeLabels", {{"example.com/accelerator", "a100"}}}, {"tolerations", json::array({kGpuToleration})}}}};
  return cache;
}

// The TaskRun Tekton creates for task "train" of run "build": the run's labels and annotations
// (the start's among them), and `podTemplate` unless null.
json taskRun(const json& podTemplate, const json& labels = {{"kueue.x-k8s.io/podset", "pod-set-1"}},
             const json& annotations = {{"kueue.x-k8s.io/workload", "build-wl"}}) {
  json object = {{"apiVersion", "tekton.dev/v1"},
                 {"kind", "TaskRun"},
                 {"metadata", {{"name", "build-train"}, {"namespace", "team-a"}, {"labels", labels}}},
                 {"spec", {{"taskSpec", {{"steps", json::array({{{"name", "fit"}, {"image", "pytorch"}}})}}}}}};
  object["metadata"]["labels"]["tekton.dev/pipelineRun"] = "build";
  if (!annotations.is_null()) object["metadata"]["annotations"] = annotations;
  if (!podTemplate.is_null()) object["spec"]["podTemplate"] = podTemplate;
  return object;
}

config::Configuration tektonIntegrated() {
  config::Configuration cfg;
  auto pipelineRuns = *config::integrationProfile(kPipelineRun);
  pipelineRuns.name = "PipelineRun.v1.tekton.dev";
  cfg.integrations.frameworks = {pipelineRuns};
  return cfg;
}

const std::string kChild = "TaskRun team-a/build-train";
const std::string kWorkloadRef = "Workload team-a/build-wl (annotation kueue.x-k8s.io/workload)";
const std::string kRetried = "; its controller retries a refused creation";

struct ChildCase {
  std::string name;
  json child;
  std::function<void(FakeAdmittedWorkloads&)> change = nullptr;  // the cache, from admittedInGpu()
  std::string operation = "CREATE";
  api::GroupVersionKind kind = kTaskRun;
  // Allowed when wantDenial is empty: the child as the patch leaves it (itself: no patch).
  json wantChild = nullptr;
  std::string wantDenial = "";
  std::string wantWarning = "";
};

// The cache changed so that admission check "prov" updates pod set pod-set-1's node selector.
std::function<void(FakeAdmittedWorkloads&)> withPodSetUpdate(const json& nodeSelector) {
  return [nodeSelector](FakeAdmittedWorkloads& cache) {
    cache.workloads["team-a/build-wl"]["status"]["admissionChecks"] =
        json::array({{{"name", "prov"},
                      {"podSetUpdates", json::array({{{"name", "pod-set-1"}, {"nodeSelector", nodeSelector}}})}}});
  };
}

std::vector<ChildCase> childCases() {
  const json gpuTemplate = {{"nodeSelector", {{"example.com/accelerator", "a100"}}},
                            {"tolerations", json::array({kGpuToleration})}};
  const json ownTemplate = {{"nodeSelector", {{"example.com/disk", "ssd"}}},
                            {"tolerations", json::array({kOwnToleration})}};
  const json mergedTemplate = {{"nodeSelector", {{"example.com/disk", "ssd"}, {"example.com/accelerator", "a100"}}},
                               {"tolerations", json::array({kOwnToleration, kGpuToleration})}};
  const json conflicting = {{"nodeSelector", {{"example.com/accelerator", "t4"}}}};
  return {
      {.name = "a TaskRun without a podTemplate gets the flavor's node selector and toleration",
       .child = taskRun(nullptr),
       .wantChild = taskRun(gpuTemplate)},
      {.name = "a TaskRun's own node selector keys and tolerations are kept beside the flavor's",
       .child = taskRun(ownTemplate),
       .wantChild = taskRun(mergedTemplate)},
      {.name = "a TaskRun that holds the flavor's values already is allowed without a patch",
       .child = taskRun(gpuTemplate),
       .wantChild = taskRun(gpuTemplate)},
      {.name = "an admission check's podSetUpdate node selector is given too",
       .child = taskRun(nullptr),
       .change = withPodSetUpdate({{"zone", "a"}}),
       .wantChild = taskRun({{"nodeSelector", {{"example.com/accelerator", "a100"}, {"zone", "a"}}},
                             {"tolerations", json::array({kGpuToleration})}})},
      {.name = "a node selector key the TaskRun holds with another value is denied, naming the key, the values and "
               "the field",
       .child = taskRun(conflicting),
       .wantDenial = kChild +
                     ": spec.podTemplate.nodeSelector: invalid admission check PodSetUpdate: conflict for "
                     "nodeSelector: conflict for key=example.com/accelerator, value1=t4, value2=a100: " +
                     kWorkloadRef +
                     " was admitted where its pods need that node selector; remove the key from what the "
                     "PipelineRun gives its TaskRuns, or queue it where no flavor has that node label"},
      {.name = "a Workload not in the cache is denied: the cache may lag, the creation is retried",
       .child = taskRun(nullptr),
       .change = [](FakeAdmittedWorkloads& cache) { cache.workloads.clear(); },
       .wantDenial = kChild + ": " + kWorkloadRef +
                     " is not in the adapter's cache, so the node selector and tolerations of its admission are not "
                     "known: the cache may lag a Workload created moments ago" +
                     kRetried + "; if it stays refused, check that the Workload exists"},
      {.name = "a Workload without an admission is denied",
       .child = taskRun(nullptr),
       .change = [](FakeAdmittedWorkloads& cache) { cache.workloads["team-a/build-wl"]["status"].erase("admission"); },
       .wantDenial = kChild + ": " + kWorkloadRef +
                     " has no admission (status.admission) in the adapter's cache, and its pods may run only where "
                     "Kueue admits them: the cache may lag the admission" +
                     kRetried + "; a Workload Kueue evicted has none, and its PipelineRun is being stopped"},
      {.name = "a flavor not in the cache is denied, naming it",
       .child = taskRun(nullptr),
       .change = [](FakeAdmittedWorkloads& cache) { cache.flavors.clear(); },
       .wantDenial = kChild + ": ResourceFlavor \"gpu\" of pod set pod-set-1 in the admission of " + kWorkloadRef +
                     " is not in the adapter's cache: create it, or remove it from the ClusterQueue" + kRetried},
      {.name = "admission checks whose podSetUpdates conflict are denied with Kueue's words",
       .child = taskRun(nullptr),
       .change = withPodSetUpdate({{"example.com/accelerator", "h100"}}),
       .wantDenial = kChild + ": the admission of " + kWorkloadRef +
                     " cannot be given to its pods: in admission check \"prov\": invalid admission check "
                     "PodSetUpdate: conflict for nodeSelector: conflict for key=example.com/accelerator, value1=a100, "
                     "value2=h100; correct the admission checks' podSetUpdates"},
      {.name = "a pod set the admission lacks is denied, naming those it has",
       .child = taskRun(nullptr, {{"kueue.x-k8s.io/podset", "workers"}}),
       .wantDenial = kChild + ": pod set \"workers\" (label kueue.x-k8s.io/podset) is not in the admission of " +
                     kWorkloadRef + ", which admits pod-set-1: correct the label on its PipelineRun"},
      {.name = "a TaskRun without the pod set label (its run was not started by Kueue) is allowed",
       .child = taskRun(nullptr, json::object(), nullptr),
       .wantChild = taskRun(nullptr, json::object(), nullptr)},
      {.name = "a TaskRun with the label but no Workload annotation is allowed with a warning",
       .child = taskRun(nullptr, {{"kueue.x-k8s.io/podset", "pod-set-1"}}, nullptr),
       .wantChild = taskRun(nullptr, {{"kueue.x-k8s.io/podset", "pod-set-1"}}, nullptr),
       .wantWarning = kChild +
                      " carries the label kueue.x-k8s.io/podset but no annotation kueue.x-k8s.io/workload, so it "
                      "names no Workload and its pods get no flavor's node selector or tolerations; a PipelineRun "
                      "Kueue started carries both: remove the label from yours"},
      {.name = "a kind no children rule names is allowed",
       .child = taskRun(nullptr),
       .kind = {"", "v1", "Pod"},
       .wantChild = taskRun(nullptr)},
      {.name = "another version of the child kind than the rule's is allowed",
       .child = taskRun(nullptr),
       .kind = {"tekton.dev", "v1beta1", "TaskRun"},
       .wantChild = taskRun(nullptr)},
      {.name = "an UPDATE is allowed: a child's pod template is given once, at creation",
       .child = taskRun(nullptr),
       .operation = "UPDATE",
       .wantChild = taskRun(nullptr)},
  };
}

MKA_TABLE_TEST(ChildMutator, GivesAStartedJobsChildrenTheirAdmission, ChildCase, childCases()) {
  const auto& c = testCase();
  SCOPED_TRACE(c.name);
  auto cache = admittedInGpu();
  if (c.change) c.change(cache);
  const auto request = makeRequest(c.kind, c.operation, c.child, c.operation == "UPDATE" ? c.child : json(nullptr));
  const auto response = mutateChild(request, tektonIntegrated(), &cache);
  if (!c.wantDenial.empty()) {
    ASSERT_FALSE(response.allowed);
    ASSERT_TRUE(response.status.has_value());
    EXPECT_EQ(response.status->code, 403);
    EXPECT_EQ(response.status->message, c.wantDenial);
    return;
  }
  ASSERT_TRUE(response.allowed) << (response.status ? response.status->message : "");
  if (c.wantChild == c.child) {
    EXPECT_FALSE(response.patch.has_value()) << response.patch->dump();
  } else {
    ASSERT_TRUE(response.patch.has_value());
    EXPECT_EQ(c.child.patch(*response.patch), c.wantChild) << response.patch->dump();
  }
  EXPECT_EQ(response.warnings, c.wantWarning.empty() ? std::vector<std::string>{} : std::vector{c.wantWarning});
}

// The handler routes /mutate-children through the DOM decoder (the lean one keeps no spec), and
// counts it under its own webhook label.
TEST(ChildMutator, TheHandlerAnswersMutateChildrenWithAJsonPatch) {
  const config::ConfigStore store(tektonIntegrated());
  InMemoryQueueIndex queues;
  observability::Metrics metrics;
  const auto cache = admittedInGpu();
  const AdmissionHandler handler(store, queues, &metrics, Decoding::LeanFirst, &cache);
  const auto response = handler.handle(
      {"POST", "/mutate-children", "application/json", reviewBody(kTaskRun, "CREATE", taskRun(nullptr))});
  ASSERT_EQ(response.status, 200) << response.body;
  const json answer = json::parse(response.body)["response"];
  EXPECT_EQ(answer["allowed"], true);
  EXPECT_EQ(answer["patchType"], "JSONPatch");
  EXPECT_NE(metrics.render().find(R"(webhook="mutate-children")"), std::string::npos);
}

// A process started without a children rule has no cache; a reload that adds one cannot make
// it: a child that needs it is answered 500, saying so, and so refused under failurePolicy Fail.
TEST(ChildMutator, WithoutACacheAChildThatNeedsItIsA500) {
  const config::ConfigStore store(tektonIntegrated());
  InMemoryQueueIndex queues;
  const AdmissionHandler handler(store, queues, nullptr);
  const auto response = handler.handle(
      {"POST", "/mutate-children", "application/json", reviewBody(kTaskRun, "CREATE", taskRun(nullptr))});
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(json::parse(response.body)["message"],
            "internal error while deciding: the webhook has no Workload cache to give " + kChild +
                " its admission's node selector and tolerations: the adapter started with no integrated kind whose "
                "children take them, and a reload added one; restart the adapter");
  const auto unlabelled = handler.handle({"POST", "/mutate-children", "application/json",
                                          reviewBody(kTaskRun, "CREATE", taskRun(nullptr, json::object()))});
  EXPECT_EQ(unlabelled.status, 200) << "a child of a job Kueue did not start needs no cache";
}

}  // namespace
}  // namespace mka::webhook
