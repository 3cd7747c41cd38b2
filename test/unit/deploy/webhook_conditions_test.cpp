// The validating job webhooks' matchConditions: rendered on both of them, and, evaluated with
// the sandbox's CEL interpreter, true on a CREATE and on an UPDATE that changes what /validate
// checks (each kind's own marker, Kueue's labels, the prebuilt-workload annotation), false on
// the writes running jobs make (Argo's status writes, Tekton's metadata updates).
#include "mka/deploy/webhook_conditions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/api/kueue.h"
#include "mka/cel/cel.h"
#include "mka/config/loader.h"
#include "mka/deploy/manifests.h"
#include "support/table_test.h"

namespace mka::deploy {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// PipelineRuns keep the marker at spec.managedBy, Workflows in a label, TrainJobs at
// spec.runPolicy.managedBy; Notebooks are integrated only (no marker to check).
config::Configuration configuration() {
  auto loaded = config::parseConfiguration(R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
  - name: TrainJob.v1.ml.example.com
    managedBy: {path: spec.runPolicy.managedBy}
integrations:
  frameworks:
  - name: Workflow.v1alpha1.argoproj.io
  - name: Notebook.v1.ml.example.com
    suspend: {path: spec.suspend, value: true}
    podSets: [{name: main, count: {value: 1}, template: spec.template}]
    finished: {condition: {type: Succeeded}}
)");
  if (!loaded.ok()) throw ValidationError(loaded.errors);
  return *loaded.config;
}

const std::string kArgoMarker = "workflows.argoproj.io/controller-instanceid";

json job(const std::string& apiVersion, const std::string& kind) {
  return {{"apiVersion", apiVersion},
          {"kind", kind},
          {"metadata",
           {{"name", "job"},
            {"namespace", "team-a"},
            {"labels", {{api::kQueueNameLabel, "user-queue"}, {"app", "etl"}}},
            {"annotations", {{"note", "a"}}}}},
          {"spec", {{"managedBy", "kueue.x-k8s.io/multikueue"}, {"runPolicy", {{"managedBy", "x"}}}}}};
}
json pipelineRun() { return job("tekton.dev/v1", "PipelineRun"); }
json workflow() {
  json wf = job("argoproj.io/v1alpha1", "Workflow");
  wf["metadata"]["labels"][kArgoMarker] = "multikueue";
  return wf;
}
json trainJob() { return job("ml.example.com/v1", "TrainJob"); }
json notebook() { return job("ml.example.com/v1", "Notebook"); }

struct ConditionCase {
  std::string name;
  std::function<json()> old;  // the stored object
  std::function<void(json&)> change;
  bool sent;
  std::string operation = "UPDATE";
};

std::vector<ConditionCase> conditionCases() {
  const auto label = [](const std::string& key, const std::string& value) {
    return [=](json& o) { o["metadata"]["labels"][key] = value; };
  };
  const auto unlabel = [](std::string key) { return [=](json& o) { o["metadata"]["labels"].erase(key); }; };
  return {
      {"a created Workflow", workflow, [](json&) {}, true, "CREATE"},
      {"Argo's whole-object status write", workflow,
       [](json& o) {
         o["status"] = {{"phase", "Running"}, {"nodes", {{"n1", {{"phase", "Running"}}}}}};
         o["metadata"]["annotations"]["workflows.argoproj.io/pod-name-format"] = "v2";
       },
       false},
      {"Tekton's metadata update of a PipelineRun", pipelineRun,
       [](json& o) {
         o["metadata"]["labels"]["tekton.dev/pipeline"] = "build";
         o["metadata"]["annotations"]["chains.tekton.dev/signed"] = "true";
         o["metadata"]["finalizers"] = {"chains.tekton.dev/pipelinerun"};
       },
       false},
      {"a job without labels before or after",
       [] {
         json o = notebook();
         o["metadata"].erase("labels");
         return o;
       },
       [](json& o) { o["spec"]["suspend"] = false; }, false},
      {"the queue-name label changed", workflow, label(std::string(api::kQueueNameLabel), "other"), true},
      {"the queue-name label removed", pipelineRun, unlabel(std::string(api::kQueueNameLabel)), true},
      {"the queue-name label set to empty", notebook, label(std::string(api::kQueueNameLabel), ""), true},
      {"the prebuilt-workload label added", workflow, label(std::string(api::kPrebuiltWorkloadNameKey), "wl"), true},
      {"the prebuilt-workload annotation added", workflow,
       [](json& o) { o["metadata"]["annotations"][std::string(api::kPrebuiltWorkloadNameKey)] = "wl"; }, true},
      {"the prebuilt-workload annotation added where there were none",
       [] {
         json o = notebook();
         o["metadata"].erase("annotations");
         return o;
       },
       [](json& o) {
         o["metadata"]["annotations"] = {{std::string(api::kPrebuiltWorkloadNameKey), "wl"}};
       },
       true},
      {"the max-exec-time label changed", notebook, label(std::string(api::kMaxExecTimeLabel), "60"), true},
      {"the priority-class label added", notebook, label(std::string(api::kPriorityClassLabel), "high"), true},
      {"a Workflow's marker label changed", workflow, label(kArgoMarker, "other"), true},
      {"a Workflow's marker label removed", workflow, unlabel(kArgoMarker), true},
      {"a Workflow's spec.managedBy, which is not its marker", workflow,
       [](json& o) { o["spec"]["managedBy"] = "other"; }, false},
      {"a PipelineRun's spec.managedBy changed", pipelineRun, [](json& o) { o["spec"]["managedBy"] = "other"; }, true},
      {"a PipelineRun's spec.managedBy removed", pipelineRun, [](json& o) { o["spec"].erase("managedBy"); }, true},
      {"a PipelineRun's spec.managedBy added where spec was missing",
       [] {
         json o = pipelineRun();
         o.erase("spec");
         return o;
       },
       [](json& o) {
         o["spec"] = {{"managedBy", "kueue.x-k8s.io/multikueue"}};
       },
       true},
      {"a PipelineRun's Argo label, which is not its marker", pipelineRun, label(kArgoMarker, "x"), false},
      {"a TrainJob's spec.runPolicy.managedBy changed", trainJob,
       [](json& o) { o["spec"]["runPolicy"]["managedBy"] = "y"; }, true},
      {"a TrainJob's spec.managedBy, which is not its marker", trainJob, [](json& o) { o["spec"]["managedBy"] = "y"; },
       false},
      {"an integrated-only kind's spec.managedBy (no marker is checked)", notebook,
       [](json& o) { o["spec"]["managedBy"] = "y"; }, false},
  };
}

MKA_TABLE_TEST(WebhookConditions, UpdatesAreSentOnlyWhenTheyChangeWhatValidateChecks, ConditionCase, conditionCases()) {
  const auto& c = testCase();
  const auto program =
      cel::Program::compile(checkedFieldsChangedExpression(configuration()), {"object", "oldObject", "request"});
  const json old = c.old();
  json object = old;
  c.change(object);
  const auto [group, version] = [&] {
    const std::string apiVersion = object.at("apiVersion");
    const auto slash = apiVersion.find('/');
    return std::pair{apiVersion.substr(0, slash), apiVersion.substr(slash + 1)};
  }();
  const json request = {{"operation", c.operation},
                        {"kind", {{"group", group}, {"version", version}, {"kind", object.at("kind")}}},
                        {"namespace", "team-a"},
                        {"name", "job"}};
  const json oldObject = c.operation == "CREATE" ? json(nullptr) : old;
  cel::Activation activation;
  activation.variables = {{"object", &object}, {"oldObject", &oldObject}, {"request", &request}};
  EXPECT_EQ(program.evaluate(activation), json(c.sent)) << checkedFieldsChangedExpression(configuration());
}

// Both validating job webhooks carry the one condition; the mutating ones (CREATE only) and
// /validate-config need none. The comment above the configuration says why.
TEST(WebhookConditions, RenderedOnTheValidatingJobWebhooksWithTheReason) {
  const auto cfg = configuration();
  for (const auto& manifest : renderManifests(cfg, "")) {
    const std::string kind = manifest.object.value("kind", "");
    if (kind != "ValidatingWebhookConfiguration" && kind != "MutatingWebhookConfiguration") continue;
    for (const auto& hook : manifest.object.at("webhooks")) {
      const std::string name = hook.at("name");
      const bool scoped = kind == "ValidatingWebhookConfiguration" && name.starts_with("validate") &&
                          name != "validate-config.multikueue-adapter.dev";
      ASSERT_EQ(hook.contains("matchConditions"), scoped) << name;
      if (!scoped) continue;
      EXPECT_EQ(json::parse(hook.at("matchConditions").dump()),
                json::array({{{"name", std::string(kCheckedFieldsCondition)},
                              {"expression", checkedFieldsChangedExpression(cfg)}}}))
          << name;
    }
    if (kind == "ValidatingWebhookConfiguration") {
      EXPECT_THAT(manifest.comment, HasSubstr("matchConditions (kube-apiserver >= 1.28)"));
      EXPECT_THAT(manifest.comment, HasSubstr("Argo writes a Workflow's status by updating the whole object"));
    }
  }
}

// Each kind's marker is named for that kind only, kinds that keep it in one place share a term.
TEST(WebhookConditions, EachDispatchedKindsMarkerIsNamedForThatKind) {
  const std::string expression = checkedFieldsChangedExpression(configuration());
  EXPECT_THAT(expression, HasSubstr(R"(request.kind.group + "/" + request.kind.kind in ["tekton.dev/PipelineRun"] && )"
                                    R"(("spec" in object && "managedBy" in object["spec"] ? )"
                                    R"(object["spec"]["managedBy"] : null))"));
  EXPECT_THAT(expression, HasSubstr(R"(in ["argoproj.io/Workflow"] && [")" + kArgoMarker + R"("].exists(k, )"));
  EXPECT_THAT(expression, HasSubstr(R"(in ["ml.example.com/TrainJob"] && ("spec" in object && "runPolicy" in )"
                                    R"(object["spec"] && "managedBy" in object["spec"]["runPolicy"] ?)"));
  EXPECT_EQ(expression.find("Notebook"), std::string::npos) << "an integrated-only kind's marker is not checked";
}

}  // namespace
}  // namespace mka::deploy
