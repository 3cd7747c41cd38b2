// The Workload the job integration creates (KUEUE-JOBFRAMEWORK.md §3.1, §3.2; §9.1's naming
// scenarios), and the pod sets a kind's rules give, or the field they cannot read.
#include "mka/integration/workload_builder.h"

#include <gtest/gtest.h>

#include "mka/api/kueue.h"
#include "mka/common/clock.h"
#include "mka/sandbox/cluster_api.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"

namespace mka::integration {
namespace {

using nlohmann::json;

struct WorkloadNameCase {
  std::string name;  // the Workload's name wanted
  api::GroupVersionKind gvk;
  std::string jobName, uid;
};
std::vector<WorkloadNameCase> workloadNameCases() {
  return {
      {"job-test-job-ce737", {"batch", "v1", "Job"}, "test-job", "test-job"},
      {"job-name-ef3a1", {"batch", "v1", "Job"}, "name", "uid"},
      // KUEUE-JOBFRAMEWORK scenario 2: a 260-character owner name is cut to fit 253 characters.
      {"job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-"
       "media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-"
       "validation-checked-approved-by-l-218b8",
       {"batch", "v1", "Job"},
       "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-media-"
       "engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-"
       "validation-checked-approved-by-legal-and-ops-dept",
       "uid"},
      {"pipelinerun-build-42-644ab",
       {"tekton.dev", "v1", "PipelineRun"},
       "build-42",
       "11111111-2222-3333-4444-555555555555"},
  };
}

MKA_TABLE_TEST(WorkloadName, IsKueuesFormula, WorkloadNameCase, workloadNameCases()) {
  const auto& c = testCase();
  EXPECT_EQ(workloadName(c.gvk, c.jobName, c.uid), c.name);
}

TEST(WorkloadName, HashesNoVersionAndFitsAnyLength) {
  EXPECT_EQ(workloadName({"tekton.dev", "v2", "PipelineRun"}, "build-42", "11111111-2222-3333-4444-555555555555"),
            "pipelinerun-build-42-644ab")
      << "the version is not hashed";
  const auto longName = workloadName({"ml.example.com", "v1", "TrainingRun"}, std::string(300, 'a'), "u");
  EXPECT_EQ(longName.size(), 253u);
  EXPECT_EQ(longName.substr(0, 12), "trainingrun-");
}

config::IntegratedFramework trainingRun() {
  config::IntegratedFramework f;
  f.name = "TrainingRun.v1.ml.example.com";
  f.gvk = {"ml.example.com", "v1", "TrainingRun"};
  f.suspend = config::FieldValue{"spec.suspend", true};
  f.podSets = {{"launcher", {"", 1, 1}, "spec.launcher"},
               {"workers", {"spec.replicas", 2, std::nullopt}, "spec.template"}};
  return f;
}

json trainingJob(const json& spec) {
  return {{"apiVersion", "ml.example.com/v1"},
          {"kind", "TrainingRun"},
          {"metadata",
           {{"name", "train"},
            {"namespace", "team-a"},
            {"uid", "0f5e6b1c-1111-2222-3333-444455556666"},
            {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
          {"spec", spec}};
}

const json kPod = {{"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};

struct PodSetsFromRulesCase {
  std::string name;
  json spec;
  json podSets;                    // when no error
  std::optional<RuleError> error;  // else
};
std::vector<PodSetsFromRulesCase> podSetsFromRulesCases() {
  return {
      {"count read from its path",
       {{"replicas", 4}, {"launcher", kPod}, {"template", kPod}},
       {{{"name", "launcher"}, {"count", 1}, {"template", kPod}},
        {{"name", "workers"}, {"count", 4}, {"template", kPod}}},
       std::nullopt},
      {"count absent: its default",
       {{"launcher", kPod}, {"template", kPod}},
       {{{"name", "launcher"}, {"count", 1}, {"template", kPod}},
        {{"name", "workers"}, {"count", 2}, {"template", kPod}}},
       std::nullopt},
      {"count not an integer",
       {{"replicas", "four"}, {"launcher", kPod}, {"template", kPod}},
       nullptr,
       RuleError{"spec.replicas",
                 "the pod set workers's count must be a whole number from 0 to 2147483647, not \"four\""}},
      {"template missing",
       {{"replicas", 1}, {"launcher", kPod}},
       nullptr,
       RuleError{"spec.template", "the pod set workers's template is missing"}},
      {"template not an object",
       {{"launcher", "pod"}, {"template", kPod}},
       nullptr,
       RuleError{"spec.launcher", "the pod set launcher's template must be a pod template (an object), not string"}},
  };
}

MKA_TABLE_TEST(PodSetsFromRules, CountsAndTemplatesOrTheFieldThatIsWrong, PodSetsFromRulesCase,
               podSetsFromRulesCases()) {
  const auto& c = testCase();
  const auto result = podSetsFromRules(trainingJob(c.spec), trainingRun());
  EXPECT_EQ(result.error, c.error);
  if (!c.error) {
    EXPECT_EQ(result.podSets, c.podSets);
  }
}

// ---- The Argo profile's requests: a request that is not a quantity is named, no pod set ------

struct ArgoRequestsCase {
  std::string name;
  json templates;  // the Workflow's spec.templates
  json requests;   // the pod set's requests when no error
  std::optional<RuleError> error;
};

json withRequests(const json& requests) { return {{"image", "busybox"}, {"resources", {{"requests", requests}}}}; }

std::vector<ArgoRequestsCase> argoRequestsCases() {
  const auto notAQuantity = [](const std::string& field, const std::string& tmpl, const std::string& value,
                               const std::string& resource) {
    return RuleError{field, "template \"" + tmpl + "\" requests " + value + " of " + resource +
                                ", which is not a quantity: write a non-negative quantity such as \"4\", \"500m\" "
                                "or \"2Gi\" in the Workflow"};
  };
  const auto container = [](const std::string& name, const json& requests) {
    return json{{"name", name}, {"container", withRequests(requests)}};
  };
  json containerSet = {{"name", "set"}};
  containerSet["containerSet"]["containers"] =
      json::array({withRequests({{"cpu", "1"}}), withRequests({{"nvidia.com/gpu", true}})});
  json withInit = container("main", {{"cpu", "1"}});
  withInit["sidecars"] = json::array({withRequests({{"cpu", "1"}})});
  withInit["initContainers"] = json::array({withRequests({{"cpu", "2 cores"}})});
  json steps = {{"name", "steps"}, {"steps", json::array()}};
  steps["sidecars"] = json::array({withRequests({{"cpu", "x"}})});
  json script = {{"name", "main"}};
  script["script"] = withRequests({{"memory", "-1Gi"}});
  return {
      {"quantities as strings and numbers",
       json::array({container("main", {{"cpu", 1.5}, {"memory", "1Gi"}, {"nvidia.com/gpu", 1}})}),
       {{"cpu", "1500m"}, {"memory", "1073741824"}, {"nvidia.com/gpu", "1"}},
       std::nullopt},
      {"a container's request that is not a quantity",
       json::array({container("ok", {{"cpu", "1"}}), container("train", {{"cpu", "lots"}})}), nullptr,
       notAQuantity("spec.templates[1].container.resources.requests.cpu", "train", "\"lots\"", "cpu")},
      {"a negative request", json::array({script}), nullptr,
       notAQuantity("spec.templates[0].script.resources.requests.memory", "main", "\"-1Gi\"", "memory")},
      {"a container set's request, its resource name bracketed", json::array({containerSet}), nullptr,
       notAQuantity("spec.templates[0].containerSet.containers[1].resources.requests[nvidia.com/gpu]", "set", "true",
                    "nvidia.com/gpu")},
      {"an init container's", json::array({withInit}), nullptr,
       notAQuantity("spec.templates[0].initContainers[0].resources.requests.cpu", "main", "\"2 cores\"", "cpu")},
      {"a template that runs no pod is not read",
       json::array({steps, container("main", {{"cpu", "1"}})}),
       {{"cpu", "1"}},
       std::nullopt},
  };
}

MKA_TABLE_TEST(ArgoPodSets, RequestsOrTheOneThatIsNotAQuantity, ArgoRequestsCase, argoRequestsCases()) {
  const auto& c = testCase();
  const json workflow = {{"metadata", {{"name", "wf"}}}, {"spec", {{"templates", c.templates}}}};
  const auto result = podSetsFor(workflow, *config::integrationProfile({"argoproj.io", "v1alpha1", "Workflow"}));
  EXPECT_EQ(result.error, c.error);
  if (c.error) {
    EXPECT_EQ(result.podSets, json::array()) << "no pod set, so no Workload";
  } else {
    EXPECT_EQ(result.podSets.at(0)["template"]["spec"]["containers"][0]["resources"]["requests"], c.requests);
  }
}

// ---- More pod sets than a Workload holds ----------------------------------------------------

// The TrainingRun's rules with `count` pod sets: what configuration refuses beyond
// api::kMaxPodSets, built here as a profile's computed pod sets would be.
config::IntegratedFramework withPodSets(std::size_t count) {
  auto f = trainingRun();
  f.podSets.clear();
  for (std::size_t i = 0; i < count; ++i) f.podSets.push_back({"ps-" + std::to_string(i), {"", 1, 1}, "spec.template"});
  return f;
}

TEST(PodSetsFor, MoreThanAWorkloadHoldsIsAnErrorNotAWorkload) {
  const json job = trainingJob({{"template", kPod}});
  EXPECT_FALSE(podSetsFor(job, withPodSets(api::kMaxPodSets)).error) << "the limit itself is fine";
  const auto result = podSetsFor(job, withPodSets(api::kMaxPodSets + 1));
  ASSERT_TRUE(result.error);
  EXPECT_EQ(*result.error, (RuleError{"Workload spec.podSets",
                                      "the job's pod sets number 19, more than the 18 a Kueue Workload holds (its "
                                      "CRD's maxItems): split the job, or merge pod sets whose pods are alike"}));
}

TEST(NewWorkload, CarriesKueuesIdentityAndPassesTheWorkloadCrd) {
  auto job = trainingJob({{"replicas", 3}, {"launcher", kPod}, {"template", kPod}});
  job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "600";
  job["metadata"]["annotations"] = {{"provreq.kueue.x-k8s.io/maxRunDurationSeconds", "3600"},
                                    {"invalid-provreq-prefix/test-annotation-2", "x"}};
  const auto podSets = podSetsFromRules(job, trainingRun());
  ASSERT_FALSE(podSets.error);
  const auto wl = newWorkload(job, trainingRun().gvk, podSets.podSets,
                              Priority{"kueue.x-k8s.io", "WorkloadPriorityClass", "high", 1000});
  EXPECT_EQ(wl["metadata"]["name"], workloadName(trainingRun().gvk, "train", "0f5e6b1c-1111-2222-3333-444455556666"));
  EXPECT_EQ(wl["metadata"]["namespace"], "team-a");
  EXPECT_EQ(wl["metadata"]["ownerReferences"],
            json::parse(R"([{"apiVersion": "ml.example.com/v1", "kind": "TrainingRun", "name": "train",
                             "uid": "0f5e6b1c-1111-2222-3333-444455556666", "controller": true,
                             "blockOwnerDeletion": true}])"));
  EXPECT_EQ(wl["metadata"]["labels"], json({{"kueue.x-k8s.io/job-uid", "0f5e6b1c-1111-2222-3333-444455556666"}}));
  EXPECT_EQ(wl["metadata"]["finalizers"], json({"kueue.x-k8s.io/resource-in-use"}));
  EXPECT_EQ(wl["metadata"]["annotations"], json({{"provreq.kueue.x-k8s.io/maxRunDurationSeconds", "3600"}}))
      << "only ProvisioningRequest parameters are copied (scenario 5)";
  EXPECT_EQ(wl["spec"]["queueName"], "user-queue");
  EXPECT_EQ(wl["spec"]["maximumExecutionTimeSeconds"], 600);
  EXPECT_EQ(wl["spec"]["priority"], 1000);
  EXPECT_EQ(wl["spec"]["podSets"][1]["count"], 3);

  // What a real cluster would say of it: the Workload CRD's schema and CEL rules.
  FakeClock clock;
  sandbox::ResourceRegistry registry;
  sandbox::ObjectStore store;
  sandbox::ClusterApi api("test", registry, store, clock);
  api.create({"", "v1", "namespaces", "", "", ""}, json{{"metadata", {{"name", "team-a"}}}});
  api.create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""}, sandbox::test::workloadCrd());
  EXPECT_NO_THROW(api.create({"kueue.x-k8s.io", "v1beta2", "workloads", "team-a", "", ""}, wl));

  // A uid too long for a label value gets no job-uid label; a bad max-exec-time is ignored.
  job["metadata"]["uid"] = std::string(64, 'u');
  job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "-5";
  const auto other = newWorkload(job, trainingRun().gvk, podSets.podSets, std::nullopt);
  EXPECT_FALSE(other["metadata"].contains("labels"));
  EXPECT_FALSE(other["spec"].contains("maximumExecutionTimeSeconds"));
  EXPECT_FALSE(other["spec"].contains("priorityClassRef"));
}

// KUEUE-JOBFRAMEWORK scenario 4: with labelKeysToCopy {toCopyKey, redundantToCopyKey} and job
// labels toCopyKey and dontCopyKey, the Workload's labels are exactly job-uid and toCopyKey.
TEST(NewWorkload, CopiesTheLabelsListedInLabelKeysToCopy) {
  auto job = trainingJob({{"replicas", 1}, {"launcher", kPod}, {"template", kPod}});
  job["metadata"]["labels"] = {{"toCopyKey", "toCopyValue"}, {"dontCopyKey", "dontCopyValue"}};
  const auto podSets = podSetsFromRules(job, trainingRun());
  ASSERT_FALSE(podSets.error);
  const auto wl =
      newWorkload(job, trainingRun().gvk, podSets.podSets, std::nullopt, {"toCopyKey", "redundantToCopyKey"});
  EXPECT_EQ(wl["metadata"]["labels"],
            json({{"kueue.x-k8s.io/job-uid", "0f5e6b1c-1111-2222-3333-444455556666"}, {"toCopyKey", "toCopyValue"}}));
}

}  // namespace
}  // namespace mka::integration
