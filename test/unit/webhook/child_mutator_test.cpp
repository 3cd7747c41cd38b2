// POST /mutate-children: a started PipelineRun's TaskRuns get the node selector and tolerations
// of the run's admission, which Tekton refuses to have written into the run itself; the start
// wrote them into the run's annotations, which Tekton copies to each TaskRun.
#include "mka/webhook/child_mutator.h"

#include <gtest/gtest.h>

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

// The annotation the start of a run admitted in flavor "gpu" writes (its node label
// example.com/accelerator=a100 and its GPU toleration).
json gpuPlacement() {
  return {{"nodeSelector", {{"example.com/accelerator", "a100"}}}, {"tolerations", json::array({kGpuToleration})}};
}

// The TaskRun Tekton creates for task "train" of run "build": the run's labels and annotations,
// the start's among them (`placement` dumped, or as it is when a string; none when null), and
// `podTemplate` unless null.
json taskRun(const json& podTemplate, const json& placement = gpuPlacement()) {
  json object = {{"apiVersion", "tekton.dev/v1"},
                 {"kind", "TaskRun"},
                 {"metadata",
                  {{"name", "build-train"},
                   {"namespace", "team-a"},
                   {"labels", {{"kueue.x-k8s.io/podset", "pod-set-1"}, {"tekton.dev/pipelineRun", "build"}}},
                   {"annotations", {{"kueue.x-k8s.io/workload", "build-wl"}}}}},
                 {"spec", {{"taskSpec", {{"steps", json::array({{{"name", "fit"}, {"image", "pytorch"}}})}}}}}};
  if (!placement.is_null())
    object["metadata"]["annotations"]["multikueue-adapter.dev/pod-placement"] =
        placement.is_string() ? placement : json(placement.dump());
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
const std::string kAnnotation = "annotation multikueue-adapter.dev/pod-placement";
const std::string kNotPlacement =
    " is not {\"nodeSelector\": {<key>: <value>}, \"tolerations\": [<toleration>]}: the start of its PipelineRun "
    "writes it, and the PipelineRun copies it to its TaskRuns; remove it from the PipelineRun if it was set by hand";

struct ChildCase {
  std::string name;
  json child;
  std::string operation = "CREATE";
  api::GroupVersionKind kind = kTaskRun;
  // Allowed when wantDenial is empty: the child as the patch leaves it (itself: no patch).
  json wantChild = nullptr;
  std::string wantDenial = "";
};

std::vector<ChildCase> childCases() {
  const json gpuTemplate = {{"nodeSelector", {{"example.com/accelerator", "a100"}}},
                            {"tolerations", json::array({kGpuToleration})}};
  const json ownTemplate = {{"nodeSelector", {{"example.com/disk", "ssd"}}},
                            {"tolerations", json::array({kOwnToleration})}};
  const json mergedTemplate = {{"nodeSelector", {{"example.com/disk", "ssd"}, {"example.com/accelerator", "a100"}}},
                               {"tolerations", json::array({kOwnToleration, kGpuToleration})}};
  const json conflicting = {{"nodeSelector", {{"example.com/accelerator", "t4"}}}};
  const json tolerationsOnly = {{"tolerations", json::array({kGpuToleration})}};
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
      {.name = "a placement of tolerations only adds them, the node selector left as it is",
       .child = taskRun(ownTemplate, tolerationsOnly),
       .wantChild = taskRun({{"nodeSelector", {{"example.com/disk", "ssd"}}},
                             {"tolerations", json::array({kOwnToleration, kGpuToleration})}},
                            tolerationsOnly)},
      {.name = "a node selector key the TaskRun holds with another value is denied, naming the key, the values and "
               "the field",
       .child = taskRun(conflicting),
       .wantDenial = kChild +
                     ": spec.podTemplate.nodeSelector: invalid admission check PodSetUpdate: conflict for "
                     "nodeSelector: conflict for key=example.com/accelerator, value1=t4, value2=a100: its pods need "
                     "the node selector of the admission (" +
                     kAnnotation +
                     "); remove the key from what the PipelineRun gives its TaskRuns, or queue it where no flavor "
                     "has that node label"},
      {.name = "an annotation that is not JSON is denied, naming it",
       .child = taskRun(nullptr, json("example.com/accelerator=a100")),
       .wantDenial = kChild + ": " + kAnnotation + kNotPlacement},
      {.name = "an annotation of another shape (a node selector value that is not a string) is denied",
       .child = taskRun(nullptr, json{{"nodeSelector", {{"example.com/accelerator", 100}}}}),
       .wantDenial = kChild + ": " + kAnnotation + kNotPlacement},
      {.name = "a TaskRun without the annotation (its run not started by Kueue, or admitted where nothing is "
               "added) is allowed",
       .child = taskRun(nullptr, nullptr),
       .wantChild = taskRun(nullptr, nullptr)},
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
  const auto request = makeRequest(c.kind, c.operation, c.child, c.operation == "UPDATE" ? c.child : json(nullptr));
  const auto response = mutateChild(request, tektonIntegrated());
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
  EXPECT_TRUE(response.warnings.empty());
}

// The handler routes /mutate-children through the DOM decoder (the lean one keeps no spec), and
// counts it under its own webhook label.
TEST(ChildMutator, TheHandlerAnswersMutateChildrenWithAJsonPatch) {
  const config::ConfigStore store(tektonIntegrated());
  InMemoryQueueIndex queues;
  observability::Metrics metrics;
  const AdmissionHandler handler(store, queues, &metrics);
  const auto response = handler.handle(
      {"POST", "/mutate-children", "application/json", reviewBody(kTaskRun, "CREATE", taskRun(nullptr))});
  ASSERT_EQ(response.status, 200) << response.body;
  const json answer = json::parse(response.body)["response"];
  EXPECT_EQ(answer["allowed"], true);
  EXPECT_EQ(answer["patchType"], "JSONPatch");
  EXPECT_NE(metrics.render().find(R"(webhook="mutate-children")"), std::string::npos);
}

}  // namespace
}  // namespace mka::webhook
