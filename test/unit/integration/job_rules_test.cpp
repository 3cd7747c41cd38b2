// A job read and changed by its kind's rules (SPEC §7.1; KUEUE-JOBFRAMEWORK.md §4.3, §4.4,
// §8.1, §8.2), and the pod sets the Argo and Tekton profiles compute.
#include "mka/integration/job_rules.h"

#include <gtest/gtest.h>

#include "mka/integration/workload_builder.h"
#include "support/table_test.h"

namespace mka::integration {
namespace {

using api::PodSetInfo;
using nlohmann::json;

config::IntegratedFramework profile(const api::GroupVersionKind& gvk) { return *config::integrationProfile(gvk); }
const api::GroupVersionKind kWorkflow{"argoproj.io", "v1alpha1", "Workflow"};
const api::GroupVersionKind kPipelineRun{"tekton.dev", "v1", "PipelineRun"};

config::IntegratedFramework inHouse() {
  config::IntegratedFramework f;
  f.gvk = {"ml.example.com", "v1", "TrainingRun"};
  f.suspend = config::FieldValue{"spec.suspend", true};
  f.podSets = {{"main", {"spec.replicas", 1, std::nullopt}, "spec.template"}};
  f.finished = config::FinishedRule{config::FinishedRule::Type::Condition, "Succeeded", "", {}, {}, ""};
  return f;
}

TEST(JobRules, SuspendedFinishedAndActiveByTheRules) {
  const auto argo = profile(kWorkflow);
  EXPECT_TRUE(isSuspended({{"spec", {{"suspend", true}}}}, argo));
  EXPECT_FALSE(isSuspended({{"spec", {{"suspend", false}}}}, argo));
  EXPECT_FALSE(isSuspended({{"spec", json::object()}}, argo));
  EXPECT_EQ(finished({{"status", {{"phase", "Running"}}}}, argo), std::nullopt);
  EXPECT_EQ(finished({{"status", {{"phase", "Succeeded"}}}}, argo), (Finished{true, ""}));
  EXPECT_EQ(finished({{"status", {{"phase", "Error"}, {"message", "OOMKilled"}}}}, argo),
            (Finished{false, "OOMKilled"}));

  const auto tekton = profile(kPipelineRun);
  EXPECT_TRUE(isSuspended({{"spec", {{"status", "PipelineRunPending"}}}}, tekton));
  const json running = {{"status", {{"conditions", {{{"type", "Succeeded"}, {"status", "Unknown"}}}}}}};
  EXPECT_EQ(finished(running, tekton), std::nullopt);
  EXPECT_TRUE(isActive(running, tekton));
  const json failed = {
      {"status", {{"conditions", {{{"type", "Succeeded"}, {"status", "False"}, {"message", "task t failed"}}}}}}};
  EXPECT_EQ(finished(failed, tekton), (Finished{false, "task t failed"}));
  EXPECT_FALSE(isActive(failed, tekton));
}

// Argo's status.nodes: the root (type Steps) and pod nodes keyed by node id.
json workflowWithPods(const std::string& podPhase, bool suspended) {
  json job = {{"spec", json::object()},
              {"status",
               {{"phase", "Running"},
                {"nodes",
                 {{"wf-x7k2p", {{"id", "wf-x7k2p"}, {"type", "Steps"}, {"phase", "Running"}}},
                  {"wf-x7k2p-1967249376", {{"id", "wf-x7k2p-1967249376"}, {"type", "Pod"}, {"phase", podPhase}}}}}}}};
  if (suspended) job["spec"]["suspend"] = true;
  return job;
}

TEST(JobRules, ActiveWhileTheArgoProfilesPodNodesRun) {
  const auto argo = profile(kWorkflow);
  EXPECT_TRUE(isActive(workflowWithPods("Running", true), argo)) << "suspending stops no running pod";
  EXPECT_TRUE(isActive(workflowWithPods("Pending", true), argo));
  EXPECT_FALSE(isActive(workflowWithPods("Succeeded", true), argo)) << "the root node Running is no pod";
  EXPECT_FALSE(isActive(workflowWithPods("Failed", false), argo));
  EXPECT_FALSE(isActive({{"status", {{"phase", "Running"}}}}, argo)) << "a queued Workflow reads Running, no nodes";
  EXPECT_FALSE(isActive({{"status", {{"nodes", "not a map"}}}}, argo));
}

TEST(JobRules, ActiveWhileTheTektonProfilesRunIsUnderWay) {
  const auto tekton = profile(kPipelineRun);
  const auto run = [](const std::string& status, const std::string& reason) {
    return json{{"status", {{"conditions", {{{"type", "Succeeded"}, {"status", status}, {"reason", reason}}}}}}};
  };
  EXPECT_TRUE(isActive(run("Unknown", "Running"), tekton));
  EXPECT_TRUE(isActive(run("Unknown", "PipelineRunStopping"), tekton)) << "stopped, its tasks still end";
  EXPECT_FALSE(isActive(run("Unknown", "PipelineRunPending"), tekton)) << "a pending run has no pods";
  EXPECT_FALSE(isActive(run("False", "StoppedRunFinally"), tekton));
  EXPECT_FALSE(isActive(json::object(), tekton));
}

TEST(JobRules, ActiveByAPhaseOrByAListOfPods) {
  auto byPhase = inHouse();
  byPhase.active = config::ActiveRule{
      .type = config::ActiveRule::Type::Phase, .path = "status.phase", .running = {"Starting", "Running"}};
  EXPECT_TRUE(isActive({{"spec", {{"suspend", true}}}, {"status", {{"phase", "Running"}}}}, byPhase));
  EXPECT_FALSE(isActive({{"status", {{"phase", "Stopped"}}}}, byPhase));
  EXPECT_FALSE(isActive(json::object(), byPhase)) << "no phase: nothing runs";

  auto byList = inHouse();
  byList.active = config::ActiveRule{.type = config::ActiveRule::Type::Pods,
                                     .path = "state.name",
                                     .running = {"Running"},
                                     .items = "/status/replicas"};
  const auto replicas = [](const json& states) {
    json list = json::array();
    for (const auto& s : states) list.push_back({{"state", {{"name", s}}}});
    return json{{"status", {{"replicas", list}}}};
  };
  EXPECT_TRUE(isActive(replicas({"Done", "Running"}), byList)) << "without a filter every item counts";
  EXPECT_FALSE(isActive(replicas({"Done", "Done"}), byList));
  EXPECT_FALSE(isActive(replicas(json::array()), byList));

  // Without a rule: neither suspended nor finished.
  EXPECT_TRUE(isActive({{"spec", json::object()}}, inHouse()));
  EXPECT_FALSE(isActive({{"spec", {{"suspend", true}}}}, inHouse()));
}

struct PodsReadyRuleCase {
  std::string name;
  config::IntegratedFramework rules;
  json job;
  bool ready;
};

std::vector<PodsReadyRuleCase> podsReadyRuleCases() {
  const auto argo = profile(kWorkflow);
  const auto tekton = profile(kPipelineRun);
  const auto run = [](const std::string& status, const std::string& reason) {
    return json{{"status", {{"conditions", {{{"type", "Succeeded"}, {"status", status}, {"reason", reason}}}}}}};
  };
  return {
      {"Argo: a queued Workflow reads Running, with no pod yet", argo, {{"status", {{"phase", "Running"}}}}, false},
      {"Argo: a Pending pod has not started", argo, workflowWithPods("Pending", false), false},
      {"Argo: a Running pod has", argo, workflowWithPods("Running", false), true},
      {"Argo: a pod that ran, the Workflow suspended", argo, workflowWithPods("Succeeded", true), true},
      {"Argo: a finished Workflow", argo, {{"status", {{"phase", "Error"}}}}, true},
      {"Tekton: running", tekton, run("Unknown", "Running"), true},
      {"Tekton: pending", tekton, run("Unknown", "PipelineRunPending"), false},
      {"Tekton: started, its TaskRuns not created yet", tekton, run("Unknown", "Started"), false},
      {"Tekton: finished, failed", tekton, run("False", "Failed"), true},
      {"Tekton: no condition", tekton, json::object(), false},
      {"no podsReady rule: only a finished job", inHouse(), {{"spec", json::object()}}, false},
  };
}

// Kueue's PodsReady by the profiles' podsReady rules; a finished job counts as started.
MKA_TABLE_TEST(JobRules, PodsReadyByTheRule, PodsReadyRuleCase, podsReadyRuleCases()) {
  const auto& c = testCase();
  EXPECT_EQ(podsReady(c.job, c.rules), c.ready);
}

struct PodsReadyConditionCase {
  std::string name;
  json workload;
  bool ready;
  PodsReadyCondition expected;
};

std::vector<PodsReadyConditionCase> podsReadyConditionCases() {
  const auto workload = [](bool admitted, const std::string& status = "", const std::string& reason = "") {
    json w = {{"status", {{"conditions", json::array()}}}};
    if (admitted) w["status"]["conditions"].push_back({{"type", "Admitted"}, {"status", "True"}});
    if (!status.empty())
      w["status"]["conditions"].push_back({{"type", "PodsReady"}, {"status", status}, {"reason", reason}});
    return w;
  };
  const PodsReadyCondition waitForStart{false, "WaitForStart", "Not all pods are ready or succeeded"};
  const PodsReadyCondition started{true, "Started", "All pods reached readiness and the workload is running"};
  const PodsReadyCondition recovered{true, "Recovered", "All pods reached readiness and the workload is running"};
  const PodsReadyCondition recovering{false, "WaitForRecovery", "At least one pod has failed, waiting for recovery"};
  return {
      {"not admitted, even with the pods ready", workload(false, "True", "Started"), true, waitForStart},
      {"admitted, not ready, no condition", workload(true), false, waitForStart},
      {"admitted, not ready, waiting for the start", workload(true, "False", "WaitForStart"), false, waitForStart},
      {"admitted, ready", workload(true, "False", "WaitForStart"), true, started},
      {"ready, then not", workload(true, "True", "Started"), false, recovering},
      {"still recovering", workload(true, "False", "WaitForRecovery"), false, recovering},
      {"recovered", workload(true, "False", "WaitForRecovery"), true, recovered},
      {"recovered, then not", workload(true, "True", "Recovered"), false, recovering},
      {"recovered stays Recovered", workload(true, "True", "Recovered"), true, recovered},
  };
}

// Kueue's generatePodsReadyCondition (KUEUE-JOBFRAMEWORK.md §1.3, scenario 44).
MKA_TABLE_TEST(JobRules, ThePodsReadyCondition, PodsReadyConditionCase, podsReadyConditionCases()) {
  const auto& c = testCase();
  EXPECT_EQ(podsReadyCondition(c.workload, c.ready), c.expected);
}

TEST(JobRules, StartedTakesTheInfosAndStoppedRestoresTheTemplate) {
  const json podTemplate = {{"metadata", {{"labels", {{"app", "x"}}}}},
                            {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
  const json job = {{"spec", {{"suspend", true}, {"template", podTemplate}}}};
  PodSetInfo info;
  info.name = "main";
  info.labels = {{"kueue.x-k8s.io/podset", "main"}};
  info.nodeSelector = {{"zone", "a"}};
  info.tolerations = {{{"key", "spot"}, {"operator", "Exists"}}};
  const auto result = started(job, inHouse(), {info});
  ASSERT_TRUE(std::holds_alternative<json>(result)) << std::get<std::string>(result);
  const json& running = std::get<json>(result);
  EXPECT_FALSE(running["spec"].contains("suspend"));
  EXPECT_EQ(running["spec"]["template"]["spec"]["nodeSelector"], json({{"zone", "a"}}));
  EXPECT_EQ(running["spec"]["template"]["metadata"]["labels"]["app"], "x");

  EXPECT_EQ(std::get<std::string>(started(job, inHouse(), {})), "invalid podset infos: expecting 1 podset, got 0");

  const json back = stopped(running, inHouse(), {{{"name", "main"}, {"template", podTemplate}}});
  EXPECT_EQ(back, job) << "suspended again, the template exactly as the Workload recorded it";
}

// ---- Start and stop by each kind's rules (Kueue's RunWithPodSetsInfo, RestorePodSetsInfo) ---

const json kSpot = {{"key", "spot"}, {"operator", "Exists"}};

// What an admission in flavor "gpu" (node label gpu=a100, toleration spot) gives pod set `name`.
PodSetInfo gpuInfo(const std::string& name) {
  PodSetInfo info;
  info.name = name;
  info.labels = {{"kueue.x-k8s.io/podset", name}};
  info.annotations = {{"kueue.x-k8s.io/workload", "wl"}};
  info.nodeSelector = {{"gpu", "a100"}};
  info.tolerations = json::array({kSpot});
  return info;
}

json trainingRunWith(const json& nodeSelector, bool suspended) {
  json podTemplate = {{"metadata", {{"labels", {{"app", "x"}}}}},
                      {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
  if (!nodeSelector.empty()) podTemplate["spec"]["nodeSelector"] = nodeSelector;
  json job = {{"spec", {{"template", podTemplate}}}};
  if (suspended) job["spec"]["suspend"] = true;
  return job;
}

// A PipelineRun as queued: its own labels, spec.status PipelineRunPending, and `podTemplate`
// (spec.taskRunTemplate.podTemplate) when not null.
json pipelineRun(const json& podTemplate, const std::string& status = "PipelineRunPending") {
  json run = {{"metadata", {{"name", "build"}, {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
              {"spec", {{"pipelineRef", {{"name", "p"}}}}}};
  if (!status.empty()) run["spec"]["status"] = status;
  if (!podTemplate.is_null()) run["spec"]["taskRunTemplate"] = {{"podTemplate", podTemplate}};
  return run;
}

// The run as the start leaves it: the admission's labels and annotation beside its own.
json withKueueMetadata(json run) {
  run["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "pod-set-1";
  run["metadata"]["annotations"] = {{"kueue.x-k8s.io/workload", "wl"}};
  return run;
}

// `run` as a start under the PipelineRun profile leaves it with gpuInfo's node selector and
// toleration: for its TaskRuns, in its annotations.
json withGpuPlacement(json run) {
  run = withKueueMetadata(std::move(run));
  run["metadata"]["annotations"]["multikueue-adapter.dev/pod-placement"] =
      json{{"nodeSelector", {{"gpu", "a100"}}}, {"tolerations", json::array({kSpot})}}.dump();
  return run;
}

const std::string kFixedSpecFix =
    ", but a PipelineRun's spec takes no change after creation (but its suspend and stop fields); create the "
    "PipelineRun with it there, or queue it where no flavor has node labels or tolerations";

struct StartStopCase {
  std::string name;
  config::IntegratedFramework framework;
  json job;  // queued
  PodSetInfo info;
  json workloadPodSets;  // the Workload's, for the stop
  json wantStarted;      // null: the start is refused with wantError
  std::string wantError;
  json wantStopped;  // the started job stopped; null: not checked
};

std::vector<StartStopCase> startStopCases() {
  const auto pipelineRuns = profile(kPipelineRun);
  // The profile as it would be if Tekton's TaskRuns could not take the flavor: the run itself
  // must hold it.
  auto withoutChildren = profile(kPipelineRun);
  withoutChildren.children.reset();
  const json userTemplate = {{"nodeSelector", {{"gpu", "a100"}, {"disk", "ssd"}}},
                             {"tolerations", json::array({kSpot})}};
  json stoppedRun = withGpuPlacement(pipelineRun(userTemplate, "StoppedRunFinally"));
  json trainingStarted = trainingRunWith({{"gpu", "a100"}}, false);
  trainingStarted["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "main";
  trainingStarted["spec"]["template"]["metadata"]["annotations"] = {{"kueue.x-k8s.io/workload", "wl"}};
  trainingStarted["spec"]["template"]["spec"]["tolerations"] = json::array({kSpot});
  return {
      {"TrainingRun: merged into its pod template, which a stop gives back",
       inHouse(),
       trainingRunWith({}, true),
       gpuInfo("main"),
       {{{"name", "main"}, {"template", trainingRunWith({}, true)["spec"]["template"]}}},
       trainingStarted,
       "",
       trainingRunWith({}, true)},
      {"TrainingRun: a node selector value of its own that conflicts refuses the start", inHouse(),
       trainingRunWith({{"gpu", "t4"}}, true), gpuInfo("main"), json::array(), nullptr,
       "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=gpu, value1=t4, value2=a100",
       nullptr},
      {"PipelineRun: the admission's labels and annotations go to the run's metadata, beside its own", pipelineRuns,
       pipelineRun(nullptr),
       [] {
         auto info = gpuInfo("pod-set-1");
         info.nodeSelector = json::object();
         info.tolerations = json::array();
         return info;
       }(),
       json::array(), withKueueMetadata(pipelineRun(nullptr, "")), "",
       withKueueMetadata(pipelineRun(nullptr, "StoppedRunFinally"))},
      {"PipelineRun: a podTemplate that holds the flavor already starts unchanged, its own keys kept", pipelineRuns,
       pipelineRun(userTemplate), gpuInfo("pod-set-1"), json::array(), withGpuPlacement(pipelineRun(userTemplate, "")),
       "", stoppedRun},
      {"PipelineRun: a stop writes only spec.status, the queue-name label kept (Tekton refuses the rest)",
       pipelineRuns,
       pipelineRun(userTemplate),
       gpuInfo("pod-set-1"),
       {{{"name", "pod-set-1"}, {"template", {{"spec", {{"containers", json::array()}}}}}}},
       withGpuPlacement(pipelineRun(userTemplate, "")),
       "",
       stoppedRun},
      {"PipelineRun: a node selector value of its own that conflicts refuses the start, though its TaskRuns take the "
       "flavor",
       pipelineRuns, pipelineRun({{"nodeSelector", {{"gpu", "t4"}}}}), gpuInfo("pod-set-1"), json::array(), nullptr,
       "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=gpu, value1=t4, value2=a100",
       nullptr},
      {"PipelineRun: a node label and a toleration its podTemplate lacks start it with its spec unchanged, an "
       "annotation holding them for its TaskRuns",
       pipelineRuns, pipelineRun({{"nodeSelector", {{"disk", "ssd"}}}}), gpuInfo("pod-set-1"), json::array(),
       withGpuPlacement(pipelineRun({{"nodeSelector", {{"disk", "ssd"}}}}, "")), "", nullptr},
      {"PipelineRun: a run without a podTemplate starts unchanged (its TaskRuns take the flavor)", pipelineRuns,
       pipelineRun(nullptr), gpuInfo("pod-set-1"), json::array(), withGpuPlacement(pipelineRun(nullptr, "")), "",
       withGpuPlacement(pipelineRun(nullptr, "StoppedRunFinally"))},
      {"PipelineRun without children: a node label its podTemplate lacks refuses the start, naming the field and the "
       "fix",
       withoutChildren, pipelineRun({{"nodeSelector", {{"disk", "ssd"}}}, {"tolerations", json::array({kSpot})}}),
       gpuInfo("pod-set-1"), json::array(), nullptr,
       "spec.taskRunTemplate.podTemplate.nodeSelector: the admission adds nodeSelector gpu=a100" + kFixedSpecFix,
       nullptr},
      {"PipelineRun without children: a toleration its podTemplate lacks refuses the start", withoutChildren,
       pipelineRun({{"nodeSelector", {{"gpu", "a100"}}}}), gpuInfo("pod-set-1"), json::array(), nullptr,
       "spec.taskRunTemplate.podTemplate.tolerations: the admission adds the toleration "
       "{\"key\":\"spot\",\"operator\":\"Exists\"}" +
           kFixedSpecFix,
       nullptr},
      {"PipelineRun without children: a podTemplate that holds the flavor starts unchanged", withoutChildren,
       pipelineRun(userTemplate), gpuInfo("pod-set-1"), json::array(), withKueueMetadata(pipelineRun(userTemplate, "")),
       "", nullptr},
      {"PipelineRun: a label of its own that conflicts refuses the start", pipelineRuns,
       [] {
         json run = pipelineRun(nullptr);
         run["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "other";
         return run;
       }(),
       gpuInfo("pod-set-1"), json::array(), nullptr,
       "invalid admission check PodSetUpdate: conflict for labels: conflict for key=kueue.x-k8s.io/podset, "
       "value1=other, value2=pod-set-1",
       nullptr},
  };
}

MKA_TABLE_TEST(JobRules, StartAndStopByEachKindsRules, StartStopCase, startStopCases()) {
  const StartStopCase& c = testCase();
  SCOPED_TRACE(c.name);
  const auto result = started(c.job, c.framework, {c.info});
  if (c.wantStarted.is_null()) {
    ASSERT_TRUE(std::holds_alternative<std::string>(result)) << std::get<json>(result).dump();
    EXPECT_EQ(std::get<std::string>(result), c.wantError);
    return;
  }
  ASSERT_TRUE(std::holds_alternative<json>(result)) << std::get<std::string>(result);
  EXPECT_EQ(std::get<json>(result), c.wantStarted);
  if (!c.wantStopped.is_null()) {
    EXPECT_EQ(stopped(std::get<json>(result), c.framework, c.workloadPodSets), c.wantStopped);
  }
}

// Argo gives every pod of a Workflow its spec.podMetadata, spec.nodeSelector and
// spec.tolerations: the flavor's node labels and tolerations go there, and stopping gives the
// Workflow back the values its Workload recorded.
TEST(JobRules, AWorkflowTakesTheFlavorInItsWorkflowWidePodFields) {
  const json workflow = {{"metadata", {{"name", "wf"}}},
                         {"spec",
                          {{"suspend", true},
                           {"podMetadata", {{"labels", {{"team", "a"}}}}},
                           {"nodeSelector", {{"disk", "ssd"}}},
                           {"tolerations", {{{"key", "dedicated"}, {"operator", "Exists"}}}},
                           {"templates", {{{"name", "main"}, {"container", {{"image", "busybox"}}}}}}}}};
  const auto podSets = podSetsFor(workflow, profile(kWorkflow));
  ASSERT_FALSE(podSets.error);
  const json& recorded = podSets.podSets.at(0)["template"];
  EXPECT_EQ(recorded["metadata"]["labels"], json({{"team", "a"}})) << "Kueue sees the pods' labels";
  EXPECT_EQ(recorded["spec"]["nodeSelector"], json({{"disk", "ssd"}})) << "Kueue matches flavors against it";
  EXPECT_EQ(recorded["spec"]["tolerations"], workflow["spec"]["tolerations"]);

  PodSetInfo info;
  info.name = "main";
  info.labels = {{"kueue.x-k8s.io/podset", "main"}};
  info.nodeSelector = {{"example.com/pool", "batch"}};
  info.tolerations = {{{"key", "spot"}, {"operator", "Exists"}}};
  const auto result = started(workflow, profile(kWorkflow), {info});
  ASSERT_TRUE(std::holds_alternative<json>(result)) << std::get<std::string>(result);
  const json& running = std::get<json>(result);
  EXPECT_FALSE(running["spec"].contains("suspend"));
  EXPECT_EQ(running["spec"]["nodeSelector"], json({{"disk", "ssd"}, {"example.com/pool", "batch"}}));
  EXPECT_EQ(running["spec"]["podMetadata"]["labels"], json({{"kueue.x-k8s.io/podset", "main"}, {"team", "a"}}));
  EXPECT_EQ(running["spec"]["tolerations"].size(), 2U);

  info.nodeSelector = {{"disk", "hdd"}};
  EXPECT_EQ(std::get<std::string>(started(workflow, profile(kWorkflow), {info})),
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=disk, value1=ssd, "
            "value2=hdd");

  json back = stopped(running, profile(kWorkflow), podSets.podSets);
  EXPECT_EQ(back["spec"]["nodeSelector"], workflow["spec"]["nodeSelector"]);
  EXPECT_EQ(back["spec"]["tolerations"], workflow["spec"]["tolerations"]);
  EXPECT_EQ(back["spec"]["podMetadata"]["labels"], workflow["spec"]["podMetadata"]["labels"]);
  EXPECT_FALSE(back["spec"]["podMetadata"].contains("annotations")) << "the Workflow had none";
  EXPECT_EQ(back["spec"]["suspend"], true);

  json plain = workflow;
  plain["spec"].erase("nodeSelector");
  const auto plainSets = podSetsFor(plain, profile(kWorkflow));
  const auto plainRunning = std::get<json>(started(plain, profile(kWorkflow), {info}));
  EXPECT_EQ(plainRunning["spec"]["nodeSelector"], json({{"disk", "hdd"}}));
  EXPECT_FALSE(stopped(plainRunning, profile(kWorkflow), plainSets.podSets)["spec"].contains("nodeSelector"))
      << "a node selector only the flavor gave is removed on stop";
}

json requestsOf(const PodSetsResult& result) {
  return result.podSets.at(0)["template"]["spec"]["containers"][0]["resources"]["requests"];
}

TEST(ProfilePodSets, ArgoTakesTheLargestPodOfItsTemplates) {
  const auto container = [](const json& requests) { return json{{"resources", {{"requests", requests}}}}; };
  const json templates = json::array(
      {{{"name", "steps"}, {"steps", json::array()}},
       {{"name", "train"},
        {"container", container({{"cpu", "2"}, {"memory", "1Gi"}})},
        {"sidecars", json::array({container({{"cpu", "500m"}})})},
        {"initContainers", json::array({container({{"memory", "4Gi"}})})}},
       {{"name", "eval"}, {"script", container({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})}},
       {{"name", "set"},
        {"containerSet", {{"containers", json::array({container({{"cpu", "1"}}), container({{"cpu", "1"}})})}}}}});
  json workflow = {{"metadata", {{"name", "wf"}}}, {"spec", {{"templates", templates}}}};
  auto result = podSetsFor(workflow, profile(kWorkflow));
  ASSERT_FALSE(result.error);
  EXPECT_EQ(result.podSets.at(0)["name"], "main");
  EXPECT_EQ(result.podSets.at(0)["count"], 1);
  EXPECT_EQ(requestsOf(result), json({{"cpu", "2500m"}, {"memory", "4294967296"}, {"nvidia.com/gpu", "1"}}));

  workflow["metadata"]["annotations"] = {{"multikueue-adapter.dev/pod-set-requests", R"({"cpu":"4"})"}};
  result = podSetsFor(workflow, profile(kWorkflow));
  ASSERT_FALSE(result.error);
  EXPECT_EQ(requestsOf(result), json({{"cpu", "4"}})) << "the annotation replaces the estimate";

  workflow["metadata"]["annotations"] = {{"multikueue-adapter.dev/pod-set-requests", "cpu=4"}};
  result = podSetsFor(workflow, profile(kWorkflow));
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->field, "metadata.annotations[multikueue-adapter.dev/pod-set-requests]");
  EXPECT_EQ(result.error->problem,
            "must be a JSON object of resource names to quantities, such as {\"cpu\":\"4\"}, not 'cpu=4'");

  workflow["metadata"]["annotations"] = {{"multikueue-adapter.dev/pod-set-requests", R"({"cpu":"four"})"}};
  result = podSetsFor(workflow, profile(kWorkflow));
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->problem,
            "the request for \"cpu\" must be a non-negative quantity (\"4\", \"500m\", \"2Gi\") written as a string, "
            "not \"four\"");
}

// Kueue matches flavors against the node selector and tolerations the run's TaskRun pods get;
// the run's own labels and annotations stay out of the pod set.
TEST(ProfilePodSets, TektonRecordsTheRunsPodTemplateNodeSelectorAndTolerations) {
  const json podTemplate = {{"nodeSelector", {{"example.com/accelerator", "a100"}}},
                            {"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}}};
  const json run = {{"metadata", {{"name", "build"}, {"labels", {{"kueue.x-k8s.io/queue-name", "gpu"}}}}},
                    {"spec", {{"taskRunTemplate", {{"podTemplate", podTemplate}}}}}};
  const auto result = podSetsFor(run, profile(kPipelineRun));
  ASSERT_FALSE(result.error);
  const json& recorded = result.podSets.at(0)["template"];
  EXPECT_EQ(recorded["spec"]["nodeSelector"], podTemplate["nodeSelector"]);
  EXPECT_EQ(recorded["spec"]["tolerations"], podTemplate["tolerations"]);
  EXPECT_FALSE(recorded.contains("metadata"));
}

TEST(ProfilePodSets, TektonAsTektonKueueBuildsIt) {
  json run = {{"metadata",
               {{"name", "build"},
                {"annotations",
                 {{"kueue.konflux-ci.dev/requests-cpu", "2"}, {"kueue.konflux-ci.dev/requests-memory", "3Gi"}}}}}};
  auto result = podSetsFor(run, profile(kPipelineRun));
  ASSERT_FALSE(result.error);
  EXPECT_EQ(result.podSets.at(0)["name"], "pod-set-1");
  EXPECT_EQ(result.podSets.at(0)["template"]["spec"]["containers"][0]["name"], "dummy");
  EXPECT_EQ(requestsOf(result), json({{"cpu", "2"}, {"memory", "3221225472"}, {"tekton.dev/pipelineruns", "1"}}));

  run["metadata"]["annotations"] = {{"kueue.konflux-ci.dev/requests-cpu", "lots"}};
  result = podSetsFor(run, profile(kPipelineRun));
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->field, "metadata.annotations[kueue.konflux-ci.dev/requests-cpu]");
  EXPECT_EQ(result.error->problem,
            "invalid resource quantity in annotation kueue.konflux-ci.dev/requests-cpu=\"lots\": quantities must match "
            "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");

  run["metadata"]["annotations"] = {{"kueue.konflux-ci.dev/requests-", "1"}};
  result = podSetsFor(run, profile(kPipelineRun));
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->problem, "empty resource name in annotation kueue.konflux-ci.dev/requests-");
}

}  // namespace
}  // namespace mka::integration
