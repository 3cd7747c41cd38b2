#include "mka/webhook/validator.h"

#include <optional>

#include <gtest/gtest.h>

#include "support/fixtures.h"
#include "support/table_test.h"
#include "webhook_test_util.h"

namespace mka::webhook {
// Named, not anonymous: the fixtures share names with mutator_test.cpp's (pipelineRun, kQueued,
// ...), and a unity build compiles both files as one source.
namespace validator_test {

using nlohmann::json;
using testing::kConfigMap;
using testing::kMpiJob;
using testing::kPipelineRun;
using testing::kWorkflow;
using testing::makeRequest;

const std::string kOurs = "kueue.x-k8s.io/multikueue";
const InMemoryQueueIndex kNoQueues;  // no namespace has a default LocalQueue

json pipelineRun(json labels, std::optional<std::string> managedBy = std::nullopt, json annotations = nullptr) {
  json object = {{"apiVersion", "tekton.dev/v1"},
                 {"kind", "PipelineRun"},
                 {"metadata", {{"name", "build-42"}, {"namespace", "tekton-ci"}}},
                 {"spec", {{"pipelineRef", {{"name", "build-and-push"}}}}}};
  if (!labels.is_null()) object["metadata"]["labels"] = std::move(labels);
  if (!annotations.is_null()) object["metadata"]["annotations"] = std::move(annotations);
  if (managedBy) object["spec"]["managedBy"] = *managedBy;
  return object;
}

json workflow(json labels) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Workflow"},
          {"metadata", {{"name", "dag-diamond-q7m2x"}, {"namespace", "argo-ci"}, {"labels", std::move(labels)}}},
          {"spec", {{"entrypoint", "diamond"}}}};
}

json mpiJob(std::optional<std::string> managedBy) {
  json object = {{"apiVersion", "kubeflow.org/v2beta1"},
                 {"kind", "MPIJob"},
                 {"metadata", {{"name", "pi"}, {"namespace", "hpc"}, {"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}},
                 {"spec", {{"runPolicy", {{"cleanPodPolicy", "Running"}}}}}};
  if (managedBy) object["spec"]["runPolicy"]["managedBy"] = *managedBy;
  return object;
}

const json kQueued = {{"kueue.x-k8s.io/queue-name", "team-a"}};

std::string subdomainProblem(const std::string& value) {
  return "invalid value \"" + value +
         "\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
         "must start and end with an alphanumeric character";
}

struct Case {
  std::string name{};
  api::GroupVersionKind kind{};
  std::string operation{};
  json object{};
  json oldObject = nullptr;
  // Expected denial message, exact, or "" when allowed. `contains` instead checks pieces.
  std::string denial{};
  std::vector<std::string> contains{};
  std::string warning{};  // exact expected warning, "" for none
};

std::vector<Case> appliesEveryRuleCases() {
  const std::string queuedPrebuilt = "kueue.x-k8s.io/prebuilt-workload-name";
  const std::vector<Case> cases = {
      // Valid jobs.
      {.name = "queued CREATE without marker",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun(kQueued)},
      {.name = "queued CREATE with our marker",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun(kQueued, kOurs)},
      {.name = "unqueued CREATE without marker",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun(nullptr)},
      {.name = "valid prebuilt label and annotation",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun({{"kueue.x-k8s.io/queue-name", "team-a"}, {queuedPrebuilt, "pipelinerun-build-42-3c1f"}},
                             std::nullopt, {{queuedPrebuilt, "pipelinerun-build-42-3c1f"}})},
      {.name = "a 253-character queue name is a valid subdomain",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun({{"kueue.x-k8s.io/queue-name", std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                                                std::string(63, 'c') + "." + std::string(61, 'd')}})},

      // Queue and prebuilt-workload names.
      {.name = "queue name with upper case and underscore",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun({{"kueue.x-k8s.io/queue-name", "Team_A"}}),
       .denial = "tekton-ci/build-42: metadata.labels[kueue.x-k8s.io/queue-name]: " + subdomainProblem("Team_A") +
                 " (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'): set it to the name of a "
                 "LocalQueue in the job's namespace"},
      {.name = "queue name too long",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun({{"kueue.x-k8s.io/queue-name", std::string(254, 'q')}}),
       .contains = {"tekton-ci/build-42: metadata.labels[kueue.x-k8s.io/queue-name]: invalid value \"qqqq",
                    "must be no more than 253 characters"}},
      {.name = "prebuilt label",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun({{queuedPrebuilt, "Build_42"}}),
       .contains = {"tekton-ci/build-42: metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: " +
                        subdomainProblem("Build_42"),
                    ": set it to the name of the prebuilt Workload (a DNS-1123 subdomain)"}},
      {.name = "prebuilt label present but empty",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun({{queuedPrebuilt, ""}}),
       .contains = {"tekton-ci/build-42: metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: invalid value \"\""}},
      {.name = "prebuilt annotation",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun(kQueued, std::nullopt, {{queuedPrebuilt, "PipelineRun/build-42"}}),
       .contains = {"tekton-ci/build-42: metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: " +
                    subdomainProblem("PipelineRun/build-42")}},
      {.name = "every problem is reported, joined with '; '",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun({{"kueue.x-k8s.io/queue-name", "A"}, {queuedPrebuilt, "B"}}, std::nullopt,
                             {{queuedPrebuilt, "C"}}),
       .oldObject = pipelineRun(kQueued, kOurs),
       .contains = {"tekton-ci/build-42: spec.managedBy: field is immutable: ",
                    "; metadata.labels[kueue.x-k8s.io/queue-name]: invalid value \"A\"",
                    "; metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: invalid value \"B\"",
                    "; metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: invalid value \"C\""}},

      // managedBy is immutable, wherever it lives.
      {.name = "UPDATE keeping the marker",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun(kQueued, kOurs),
       .oldObject = pipelineRun(kQueued, kOurs)},
      {.name = "UPDATE without marker on either side",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun(kQueued),
       .oldObject = pipelineRun(kQueued)},
      {.name = "UPDATE changing spec.managedBy",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun(kQueued, "tekton.dev/pipeline"),
       .oldObject = pipelineRun(kQueued, kOurs),
       .denial = "tekton-ci/build-42: spec.managedBy: field is immutable: it was \"kueue.x-k8s.io/multikueue\" and "
                 "the update sets \"tekton.dev/pipeline\"; keep the old value, or delete and re-create the "
                 "PipelineRun"},
      {.name = "UPDATE removing spec.managedBy",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun(kQueued),
       .oldObject = pipelineRun(kQueued, kOurs),
       .denial = "tekton-ci/build-42: spec.managedBy: field is immutable: it was \"kueue.x-k8s.io/multikueue\" and "
                 "the update removes it; keep the old value, or delete and re-create the PipelineRun"},
      {.name = "UPDATE adding spec.managedBy",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun(kQueued, kOurs),
       .oldObject = pipelineRun(kQueued),
       .denial = "tekton-ci/build-42: spec.managedBy: field is immutable: it was unset and the update sets "
                 "\"kueue.x-k8s.io/multikueue\"; keep the old value, or delete and re-create the PipelineRun"},
      {.name = "UPDATE changing the label marker",
       .kind = kWorkflow,
       .operation = "UPDATE",
       .object = workflow({{"kueue.x-k8s.io/queue-name", "team-b"},
                           {"workflows.argoproj.io/controller-instanceid", "team-b-controller"}}),
       .oldObject = workflow(
           {{"kueue.x-k8s.io/queue-name", "team-b"}, {"workflows.argoproj.io/controller-instanceid", "multikueue"}}),
       .denial = "argo-ci/dag-diamond-q7m2x: metadata.labels[workflows.argoproj.io/controller-instanceid]: field is "
                 "immutable: it was \"multikueue\" and the update sets \"team-b-controller\"; keep the old value, or "
                 "delete and re-create the Workflow"},
      {.name = "UPDATE changing spec.runPolicy.managedBy",
       .kind = kMpiJob,
       .operation = "UPDATE",
       .object = mpiJob("kubeflow.org/mpi-operator"),
       .oldObject = mpiJob(kOurs),
       .contains = {"hpc/pi: spec.runPolicy.managedBy: field is immutable: it was \"kueue.x-k8s.io/multikueue\""}},

      // Our marker on a job Kueue will never see.
      {.name = "our marker without queue label warns",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun(nullptr, kOurs),
       .warning = "tekton-ci/build-42: spec.managedBy is set without label kueue.x-k8s.io/queue-name: Kueue will "
                  "never admit it; add the label"},
      {.name = "our label marker with an empty queue label warns",
       .kind = kWorkflow,
       .operation = "CREATE",
       .object =
           workflow({{"kueue.x-k8s.io/queue-name", ""}, {"workflows.argoproj.io/controller-instanceid", "multikueue"}}),
       .warning = "argo-ci/dag-diamond-q7m2x: metadata.labels[workflows.argoproj.io/controller-instanceid] is set "
                  "without label kueue.x-k8s.io/queue-name: Kueue will never admit it; add the label"},
      {.name = "a denied UPDATE still warns",
       .kind = kPipelineRun,
       .operation = "UPDATE",
       .object = pipelineRun(nullptr, kOurs),
       .oldObject = pipelineRun(nullptr, "tekton.dev/pipeline"),
       .contains = {"tekton-ci/build-42: spec.managedBy: field is immutable"},
       .warning = "tekton-ci/build-42: spec.managedBy is set without label kueue.x-k8s.io/queue-name: Kueue will "
                  "never admit it; add the label"},
      {.name = "a foreign marker without queue label is not ours to judge",
       .kind = kPipelineRun,
       .operation = "CREATE",
       .object = pipelineRun(nullptr, "pipelines.example.com/custom-runner")},

      // Out of scope.
      {.name = "unconfigured kind is not validated",
       .kind = {"batch", "v1", "Job"},
       .operation = "UPDATE",
       .object = pipelineRun({{"kueue.x-k8s.io/queue-name", "Team_A"}}),
       .oldObject = pipelineRun(kQueued, kOurs)},
      {.name = "DELETE is allowed",
       .kind = kPipelineRun,
       .operation = "DELETE",
       .object = nullptr,
       .oldObject = pipelineRun({{"kueue.x-k8s.io/queue-name", "Team_A"}})},
      {.name = "CONNECT is allowed", .kind = kPipelineRun, .operation = "CONNECT", .object = nullptr},
  };
  return cases;
}

MKA_TABLE_TEST(ValidateJob, AppliesEveryRule, Case, appliesEveryRuleCases()) {
  const Case& c = testCase();
  const auto config = testing::testConfig();
  const auto response = validateJob(makeRequest(c.kind, c.operation, c.object, c.oldObject), config, kNoQueues);
  const bool denied = !c.denial.empty() || !c.contains.empty();
  EXPECT_EQ(response.allowed, !denied);
  EXPECT_FALSE(response.patch.has_value());
  if (c.warning.empty()) {
    EXPECT_TRUE(response.warnings.empty()) << response.warnings.front();
  } else {
    EXPECT_EQ(response.warnings, std::vector<std::string>{c.warning});
  }
  if (!denied) {
    EXPECT_FALSE(response.status.has_value()) << response.status->message;
    return;
  }
  ASSERT_TRUE(response.status.has_value());
  EXPECT_EQ(response.status->code, 403);
  EXPECT_EQ(response.status->reason, "Forbidden");
  if (!c.denial.empty()) {
    EXPECT_EQ(response.status->message, c.denial);
  }
  for (const auto& piece : c.contains) {
    EXPECT_NE(response.status->message.find(piece), std::string::npos)
        << "missing: " << piece << "\nin: " << response.status->message;
  }
}

json withLabel(json object, const std::string& key, const std::string& value) {
  object["metadata"]["labels"][key] = value;
  return object;
}

json flow(const std::string& queue, bool suspended, const std::string& prebuilt = "") {
  json object = workflow({{"kueue.x-k8s.io/queue-name", queue}});
  if (suspended) object["spec"]["suspend"] = true;
  if (!prebuilt.empty()) object["metadata"]["annotations"] = {{"kueue.x-k8s.io/prebuilt-workload-name", prebuilt}};
  return object;
}

struct Integrated {
  std::string name;
  json oldObject, object;
  std::string denial;  // "" when allowed
};

std::vector<Integrated> anIntegratedJobKeepsItsQueueAndPrebuiltWorkloadWhileItRunsCases() {
  const std::string prefix = "argo-ci/dag-diamond-q7m2x: ";
  const std::vector<Integrated> cases = {
      {"queue changed while running", flow("team-a", false), flow("team-b", false),
       prefix +
           "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"team-b\": field is immutable while the job "
           "is not suspended (it was \"team-a\"): set spec.suspend to true first, or keep the old value while the job "
           "runs"},
      {"queue changed while suspended", flow("team-a", true), flow("team-b", true), ""},
      {"queue changed as the job is resumed", flow("team-a", true), flow("team-b", false),
       prefix +
           "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"team-b\": field is immutable while the job "
           "is not suspended (it was \"team-a\"): set spec.suspend to true first, or keep the old value while the job "
           "runs"},
      {"prebuilt Workload changed while running", flow("team-a", false, "wl-1"), flow("team-a", false, "wl-2"),
       prefix +
           "metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: \"wl-2\": field is immutable "
           "while the job is not suspended (it was \"wl-1\"): set spec.suspend to true first, or keep the old value "
           "while the job runs"},
      {"the same labels while running", flow("team-a", false), flow("team-a", false), ""},
      {"the prebuilt name moved from the label to the annotation while running",
       withLabel(flow("team-a", false), "kueue.x-k8s.io/prebuilt-workload-name", "wl-1"), flow("team-a", false, "wl-1"),
       ""},
      {"a priority class added while running", flow("team-a", false),
       withLabel(flow("team-a", false), "kueue.x-k8s.io/priority-class", "high"),
       prefix +
           "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"high\": WorkloadPriorityClass cannot be "
           "added to a non-suspended workload: set spec.suspend to true first"},
      {"a priority class added while suspended", flow("team-a", true),
       withLabel(flow("team-a", true), "kueue.x-k8s.io/priority-class", "high"), ""},
      {"a priority class removed, even while suspended",
       withLabel(flow("team-a", true), "kueue.x-k8s.io/priority-class", "high"), flow("team-a", true),
       prefix + "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: unset: WorkloadPriorityClass cannot be "
                "removed from a workload: keep the label (it may name another WorkloadPriorityClass)"},
      {"a priority class changed while running",
       withLabel(flow("team-a", false), "kueue.x-k8s.io/priority-class", "high"),
       withLabel(flow("team-a", false), "kueue.x-k8s.io/priority-class", "low"), ""},
      {"a time limit of 0 seconds", flow("team-a", true),
       withLabel(flow("team-a", true), "kueue.x-k8s.io/max-exec-time-seconds", "0"),
       prefix +
           "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: \"0\": should be greater than 0: "
           "set it to a whole number of seconds greater than 0, or remove the label"},
      {"a time limit that is not a number", flow("team-a", true),
       withLabel(flow("team-a", true), "kueue.x-k8s.io/max-exec-time-seconds", "1h"),
       prefix + "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: \"1h\": not a whole number of "
                "seconds: set it to a whole number of seconds greater than 0, or remove the label"},
      {"a time limit changed while running",
       withLabel(flow("team-a", false), "kueue.x-k8s.io/max-exec-time-seconds", "600"),
       withLabel(flow("team-a", false), "kueue.x-k8s.io/max-exec-time-seconds", "60"),
       prefix +
           "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: \"60\": field is immutable while "
           "the job is not suspended (it was \"600\"): set spec.suspend to true first, or keep the old value while "
           "the job runs"},
  };
  return cases;
}

MKA_TABLE_TEST(ValidateJob, AnIntegratedJobKeepsItsQueueAndPrebuiltWorkloadWhileItRuns, Integrated,
               anIntegratedJobKeepsItsQueueAndPrebuiltWorkloadWhileItRunsCases()) {
  const Integrated& c = testCase();
  auto config = testing::testConfig();
  config.integrations.frameworks = {*config::integrationProfile(testing::kWorkflow)};
  json oldObject = c.oldObject, object = c.object;
  for (json* o : {&oldObject, &object}) (*o)["metadata"]["labels"][std::string(testing::kArgoLabel)] = "multikueue";
  const auto response = validateJob(makeRequest(testing::kWorkflow, "UPDATE", object, oldObject), config, kNoQueues);
  EXPECT_EQ(response.allowed, c.denial.empty());
  if (!c.denial.empty()) {
    ASSERT_TRUE(response.status.has_value());
    EXPECT_EQ(response.status->message, c.denial);
  }
}

TEST(ValidateJob, AnIntegratedJobKeepsItsQueueAndPrebuiltWorkloadWhileItRuns) {
  // Without the integration, the kind's own queue rules are Kueue's business, not ours.
  const auto response =
      validateJob(makeRequest(testing::kWorkflow, "UPDATE", flow("team-b", false), flow("team-a", false)),
                  testing::testConfig(), kNoQueues);
  EXPECT_TRUE(response.allowed) << response.status->message;
}

// KUEUE-JOBFRAMEWORK scenario 55: where a LocalQueue named "default" exists, a suspended job's
// queue name is not removed; elsewhere it may be.
TEST(ValidateJob, AQueueNameStaysWhereTheNamespaceHasADefaultLocalQueue) {
  auto config = testing::testConfig();
  config.integrations.frameworks = {*config::integrationProfile(testing::kWorkflow)};
  json queued = workflow({{"kueue.x-k8s.io/queue-name", "team-a"}, {std::string(testing::kArgoLabel), "multikueue"}});
  queued["spec"]["suspend"] = true;
  json unqueued = queued;
  unqueued["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  InMemoryQueueIndex queues;
  queues.upsertLocalQueue("argo-ci", "default", "cq");

  auto response = validateJob(makeRequest(testing::kWorkflow, "UPDATE", unqueued, queued), config, queues);
  ASSERT_FALSE(response.allowed);
  EXPECT_EQ(response.status->message,
            "argo-ci/dag-diamond-q7m2x: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": queue-name "
            "must not be empty in namespace with default queue: keep the label, or set it to another LocalQueue of "
            "namespace argo-ci");
  json emptied = queued;
  emptied["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "";
  EXPECT_FALSE(validateJob(makeRequest(testing::kWorkflow, "UPDATE", emptied, queued), config, queues).allowed)
      << "an empty name is no name";
  EXPECT_TRUE(validateJob(makeRequest(testing::kWorkflow, "UPDATE", unqueued, queued), config, kNoQueues).allowed)
      << "without a default LocalQueue";
  EXPECT_TRUE(validateJob(makeRequest(testing::kWorkflow, "UPDATE", queued, unqueued), config, queues).allowed)
      << "adding one is fine";
}

TEST(ValidateJob, NamesGeneratedObjectsByTheirPrefix) {
  json object = pipelineRun({{"kueue.x-k8s.io/queue-name", "Team_A"}});
  object["metadata"].erase("name");
  object["metadata"]["generateName"] = "build-";
  auto request = makeRequest(kPipelineRun, "CREATE", object);
  const auto response = validateJob(request, testing::testConfig(), kNoQueues);
  ASSERT_TRUE(response.status.has_value());
  EXPECT_EQ(response.status->message.rfind("tekton-ci/build-*: metadata.labels[", 0), 0u) << response.status->message;
}

const std::string kAdapterYaml = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: QueueLabeled
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)";

const std::string kKueueYaml = R"(apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
integrations:
  frameworks: ["batch/job"]
multiKueue:
  gcInterval: 2m
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)";

const std::string kBrokenYaml = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multiKueue:
  externalFrameworks:
  - name: PipelineRun..tekton.dev
)";

json configMap(json data, json labels = {{"multikueue-adapter.dev/config", "true"}}) {
  json object = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", {{"name", "multikueue-adapter-config"}, {"namespace", "kueue-system"}}}};
  if (!labels.is_null()) object["metadata"]["labels"] = std::move(labels);
  if (!data.is_null()) object["data"] = std::move(data);
  return object;
}

struct ConfigCase {
  std::string name{};
  std::string operation{};
  json object{};
  json oldObject = nullptr;
  api::GroupVersionKind kind = kConfigMap;
  std::vector<std::string> denialContains{};  // empty: allowed
};

std::vector<ConfigCase> runsTheConfigurationValidationCases() {
  const std::string key = "kueue-system/multikueue-adapter-config: ";
  const std::vector<ConfigCase> cases = {
      {.name = "adapter configuration", .operation = "CREATE", .object = configMap({{"config.yaml", kAdapterYaml}})},
      {.name = "Kueue configuration under Kueue's own key",
       .operation = "CREATE",
       .object = configMap({{"controller_manager_config.yaml", kKueueYaml}})},
      {.name = "other keys beside the configuration are ignored",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", kAdapterYaml}, {"README.md", "not: [yaml"}})},
      {.name = "invalid configuration",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", kBrokenYaml}}),
       .denialContains = {key + "data[config.yaml].multiKueue.externalFrameworks[0].name: "}},
      {.name = "invalid configuration on UPDATE",
       .operation = "UPDATE",
       .object = configMap({{"config.yaml", kBrokenYaml}}),
       .oldObject = configMap({{"config.yaml", kAdapterYaml}}),
       .denialContains = {key + "data[config.yaml].multiKueue.externalFrameworks[0].name: "}},
      {.name = "every .yaml and .yml entry is checked, errors joined with '; '",
       .operation = "CREATE",
       .object = configMap({{"a.yaml", "kind: AdapterConfiguration\n"}, {"b.yml", kBrokenYaml}}),
       .denialContains = {key + "data[a.yaml].", "; data[b.yml].multiKueue.externalFrameworks[0].name: "}},
      {.name = "YAML that does not parse",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", "multiKueue: [unclosed"}}),
       .denialContains = {key + "data[config.yaml]"}},
      {.name = "three bytes that once made the YAML library loop",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", ",w,"}}),
       .denialContains = {key + "data[config.yaml]: invalid YAML at line 1, column 1: did not find expected node "
                                "content"}},
      {.name = "aliases that repeat past the alias limit",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", mka::test::fixtureText("fuzz-regressions/config/billion-laughs")}}),
       .denialContains = {key + "data[config.yaml]: yaml: aliases repeat more than 100000 nodes (the alias limit)"}},
      {.name = "no configuration key",
       .operation = "CREATE",
       .object = configMap({{"config.json", "{}"}}),
       .denialContains = {key + "data: no configuration found: put the AdapterConfiguration (or Kueue "
                                "Configuration) YAML under data[config.yaml]"}},
      {.name = "no data at all",
       .operation = "CREATE",
       .object = configMap(nullptr),
       .denialContains = {key + "data: no configuration found: "}},
      {.name = "a value that is not text",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", 42}}),
       .denialContains = {key + "data[config.yaml]: must be a string"}},
      {.name = "ConfigMap without our label",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", kBrokenYaml}}, {{"app", "other"}})},
      {.name = "ConfigMap with our label set to false",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", kBrokenYaml}}, {{"multikueue-adapter.dev/config", "false"}})},
      {.name = "DELETE is allowed",
       .operation = "DELETE",
       .object = nullptr,
       .oldObject = configMap({{"config.yaml", kBrokenYaml}})},
      {.name = "a kind other than ConfigMap is not ours",
       .operation = "CREATE",
       .object = configMap({{"config.yaml", kBrokenYaml}}),
       .kind = {"", "v1", "Secret"}},
  };
  return cases;
}

MKA_TABLE_TEST(ValidateConfigMap, RunsTheConfigurationValidation, ConfigCase, runsTheConfigurationValidationCases()) {
  const ConfigCase& c = testCase();
  const std::string key = "kueue-system/multikueue-adapter-config: ";
  const auto response = validateConfigMap(makeRequest(c.kind, c.operation, c.object, c.oldObject));
  EXPECT_EQ(response.allowed, c.denialContains.empty());
  if (c.denialContains.empty()) {
    EXPECT_FALSE(response.status.has_value()) << response.status->message;
    return;
  }
  ASSERT_TRUE(response.status.has_value());
  EXPECT_EQ(response.status->code, 403);
  EXPECT_EQ(response.status->reason, "Forbidden");
  EXPECT_EQ(response.status->message.rfind(key, 0), 0u) << response.status->message;
  for (const auto& piece : c.denialContains) {
    EXPECT_NE(response.status->message.find(piece), std::string::npos)
        << "missing: " << piece << "\nin: " << response.status->message;
  }
}

}  // namespace validator_test
}  // namespace mka::webhook
