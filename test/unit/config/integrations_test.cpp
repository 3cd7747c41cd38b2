// The integrations section (SPEC §7.1): built-in profiles, explicit rules for any other kind,
// overrides, and every problem reported as "<field path>: <problem>: <fix>".
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "mka/config/loader.h"
#include "support/table_test.h"

namespace mka::config {
namespace {

using nlohmann::json;
using test::adapterDoc;
using test::rendered;

Configuration parsed(const std::string& text) {
  auto result = parseConfiguration(text);
  EXPECT_TRUE(result.ok()) << joinErrors(result.errors);
  return result.config.value_or(Configuration{});
}

TEST(Integrations, BuiltInProfilesNeedOnlyAName) {
  auto c = parsed(adapterDoc(
      "integrations:\n  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n  - name: PipelineRun.v1.tekton.dev\n"));
  ASSERT_EQ(c.integrations.frameworks.size(), 2u);

  const auto& argo = c.integrations.frameworks[0];
  EXPECT_TRUE(argo.profile);
  EXPECT_EQ(argo.gvk.goString(), api::GroupVersionKind({"argoproj.io", "v1alpha1", "Workflow"}).goString());
  EXPECT_EQ(argo.suspend, (FieldValue{"spec.suspend", true}));
  EXPECT_EQ(argo.stopRule(), (FieldValue{"spec.suspend", true})) << "stop defaults to suspend";
  EXPECT_EQ(argo.podSetsFrom, PodSetsFrom::ArgoTemplates);
  ASSERT_TRUE(argo.finished);
  EXPECT_EQ(argo.finished->type, FinishedRule::Type::Phase);
  EXPECT_EQ(argo.finished->phasePath, "status.phase");
  EXPECT_EQ(argo.finished->succeeded, std::vector<std::string>{"Succeeded"});
  EXPECT_EQ(argo.finished->failed, (std::vector<std::string>{"Failed", "Error"}));
  EXPECT_EQ(argo.finished->messagePath, "status.message");
  ASSERT_TRUE(argo.active) << "suspending a Workflow stops no running pod";
  EXPECT_EQ(argo.active->type, ActiveRule::Type::Pods);
  EXPECT_EQ(argo.active->items, "/status/nodes");
  EXPECT_EQ(argo.active->filter, (FieldValue{"type", "Pod"}));
  EXPECT_EQ(argo.active->path, "phase");
  EXPECT_EQ(argo.active->running, (std::vector<std::string>{"Pending", "Running"}));

  const auto& tekton = c.integrations.frameworks[1];
  EXPECT_EQ(tekton.suspend, (FieldValue{"spec.status", "PipelineRunPending"}));
  EXPECT_EQ(tekton.stopRule(), (FieldValue{"spec.status", "StoppedRunFinally"}));
  EXPECT_EQ(tekton.podSetsFrom, PodSetsFrom::TektonAnnotations);
  ASSERT_EQ(tekton.podSets.size(), 1u);
  EXPECT_EQ(tekton.podSets[0].name, "pod-set-1");
  // The run's metadata reaches its TaskRuns' pods; Tekton refuses any change to its spec.
  EXPECT_EQ(tekton.podSets[0].podFieldPaths(),
            (PodFieldPaths{"metadata.labels", "metadata.annotations", "spec.taskRunTemplate.podTemplate.nodeSelector",
                           "spec.taskRunTemplate.podTemplate.tolerations", true}));
  // Its TaskRuns take the admission's node selector and tolerations (/mutate-children), which
  // the start writes into the run's annotations.
  EXPECT_EQ(tekton.children, (ChildRule{{"tekton.dev", "v1", "TaskRun"},
                                        "taskruns",
                                        "spec.podTemplate.nodeSelector",
                                        "spec.podTemplate.tolerations"}));
  EXPECT_FALSE(argo.children) << "a Workflow's own fields take the admission";
  ASSERT_TRUE(tekton.finished);
  EXPECT_EQ(tekton.finished->type, FinishedRule::Type::Condition);
  EXPECT_EQ(tekton.finished->conditionType, "Succeeded");
  ASSERT_TRUE(tekton.active);
  EXPECT_EQ(tekton.active->type, ActiveRule::Type::Condition);
  EXPECT_EQ(tekton.active->conditionType, "Succeeded");
  EXPECT_EQ(tekton.active->conditionStatus, "Unknown");
  EXPECT_EQ(tekton.active->exceptReasons, std::vector<std::string>{"PipelineRunPending"});
  EXPECT_EQ(c.integrations.find(tekton.gvk), &tekton);
}

TEST(Integrations, AnyOtherKindIsDescribedByItsRules) {
  auto c = parsed(adapterDoc(R"(integrations:
  frameworks:
  - name: TrainingRun.v1.ml.example.com
    suspend: {path: spec.suspend, value: true}
    stop: {path: spec.runPolicy.stopped, value: "yes"}
    podSets:
    - name: launcher
      count: {value: 1}
      template: spec.launcher.template
    - name: workers
      count: {path: spec.replicas, default: 2}
      template: spec.template
    finished:
      phase: {path: status.state, succeeded: [Done], failed: [Crashed, Killed], message: status.reason}
)"));
  ASSERT_EQ(c.integrations.frameworks.size(), 1u);
  const auto& f = c.integrations.frameworks[0];
  EXPECT_FALSE(f.profile);
  EXPECT_EQ(f.suspend, (FieldValue{"spec.suspend", true}));
  EXPECT_EQ(f.stopRule(), (FieldValue{"spec.runPolicy.stopped", "yes"}));
  EXPECT_EQ(f.podSetsFrom, PodSetsFrom::Rules);
  EXPECT_EQ(f.podSets, (std::vector<PodSetRule>{{"launcher", {"", 1, 1}, "spec.launcher.template"},
                                                {"workers", {"spec.replicas", 2, std::nullopt}, "spec.template"}}));
  FinishedRule finished;
  finished.type = FinishedRule::Type::Phase;
  finished.phasePath = "status.state";
  finished.succeeded = {"Done"};
  finished.failed = {"Crashed", "Killed"};
  finished.messagePath = "status.reason";
  EXPECT_EQ(f.finished, finished);
  EXPECT_EQ(f.active, std::nullopt) << "absent: active while neither suspended nor finished";
}

TEST(Integrations, TheActiveRuleIsAConditionAPhaseOrPods) {
  const auto activeOf = [](const std::string& rule) {
    return parsed(adapterDoc("integrations:\n  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n    active: " +
                             rule + "\n"))
        .integrations.frameworks.at(0)
        .active;
  };
  EXPECT_EQ(activeOf("{condition: {type: Running}}"),
            (ActiveRule{.type = ActiveRule::Type::Condition, .conditionType = "Running", .conditionStatus = "True"}))
      << "status defaults to True";
  EXPECT_EQ(activeOf("{condition: {type: Succeeded, status: Unknown, exceptReasons: [Pending]}}"),
            (ActiveRule{.type = ActiveRule::Type::Condition,
                        .conditionType = "Succeeded",
                        .conditionStatus = "Unknown",
                        .exceptReasons = {"Pending"}}));
  EXPECT_EQ(activeOf("{phase: {path: status.phase, running: [Running]}}"),
            (ActiveRule{.type = ActiveRule::Type::Phase, .path = "status.phase", .running = {"Running"}}));
  EXPECT_EQ(
      activeOf("{pods: {items: /status/replicaStatuses, state: {path: state.name, running: [Up]}}}"),
      (ActiveRule{
          .type = ActiveRule::Type::Pods, .path = "state.name", .running = {"Up"}, .items = "/status/replicaStatuses"}))
      << "the filter is optional";
}

TEST(Integrations, RulesOverrideAProfileOneRuleAtATime) {
  auto c = parsed(adapterDoc(R"(integrations:
  frameworks:
  - name: Workflow.v1alpha1.argoproj.io
    finished: {condition: {type: Completed}}
    podSets: [{name: main, count: {value: 3}, template: spec.podSpecPatchTemplate}]
)"));
  const auto& f = c.integrations.frameworks[0];
  EXPECT_TRUE(f.profile);
  EXPECT_EQ(f.suspend, (FieldValue{"spec.suspend", true})) << "kept from the profile";
  EXPECT_EQ(f.finished->type, FinishedRule::Type::Condition);
  EXPECT_EQ(f.finished->conditionType, "Completed");
  EXPECT_EQ(f.podSetsFrom, PodSetsFrom::Rules) << "written pod sets replace the computed one";
  EXPECT_EQ(f.podSets[0].count.value, 3);
}

struct ProblemsNameTheFieldAndTheFixCase {
  std::string name;
  std::string frameworks;  // the list under integrations.frameworks
  std::vector<std::string> errors;
};

// A TrainingRun whose rules list `count` pod sets, "ps-0", "ps-1", ...
std::string trainingRunWithPodSets(int count) {
  std::string out =
      "  - name: TrainingRun.v1.ml.example.com\n"
      "    suspend: {path: spec.suspend, value: true}\n"
      "    finished: {condition: {type: Succeeded}}\n"
      "    podSets:\n";
  for (int i = 0; i < count; ++i)
    out += "    - {name: ps-" + std::to_string(i) + ", count: {value: 1}, template: spec.t" + std::to_string(i) + "}\n";
  return out;
}

std::vector<ProblemsNameTheFieldAndTheFixCase> problemsNameTheFieldAndTheFixCases() {
  const std::string p = "integrations.frameworks[0]";
  const std::vector<ProblemsNameTheFieldAndTheFixCase> cases = {
      {"a kind without a profile and without rules",
       "  - name: TrainingRun.v1.ml.example.com\n",
       {p + ".suspend: is required for a kind without a built-in profile: add suspend: {path: spec.suspend, value: "
            "true}, the field and value that keep the job from running",
        p + ".podSets: is required for a kind without a built-in profile: add podSets: [{name: main, count: {path: "
            "spec.replicas, default: 1}, template: spec.template}]",
        p + ".finished: is required for a kind without a built-in profile: add finished: {condition: {type: "
            "Succeeded}}, or finished: {phase: {path: status.phase, succeeded: [Succeeded], failed: [Failed]}}"}},
      {"paths, counts and names",
       "  - name: TrainingRun.v1.ml.example.com\n"
       "    suspend: {path: status.suspended}\n"
       "    podSets:\n"
       "    - {name: Main, count: {path: spec.replicas, value: 2}, template: spec.template}\n"
       "    - {name: w, count: {}, template: template}\n"
       "    - {name: w, count: {value: 0}, template: spec.t}\n"
       "    finished: {phase: {path: status.phase}}\n",
       {p + ".suspend.path: must be a dotted field path below spec, not \"status.suspended\": write the field's "
            "dotted path, such as spec.suspend",
        p + ".suspend.value: is required: write the value the field holds while the job is suspended, such as true",
        p + ".podSets[0].name: invalid value \"Main\": a lowercase RFC 1123 label must consist of lower case "
            "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
            "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'): use a lower-case name of "
            "letters, digits and '-', such as main or workers",
        p + ".podSets[0].count: sets both path and value: write {path: spec.replicas, default: 1} to read it from "
            "the job, or {value: 4}",
        p + ".podSets[1].count: must set path or value: write {path: spec.replicas, default: 1} to read it from the "
            "job, or {value: 4}",
        p + ".podSets[1].template: must be a dotted field path below spec, not \"template\": write the pod "
            "template's dotted path, such as spec.template",
        p + ".podSets[2].name: duplicates " + p + ".podSets[1].name (\"w\"): give each pod set its own name",
        p + ".podSets[2].count.value: must be at least 1, not 0: write {path: spec.replicas, default: 1} to read it "
            "from the job, or {value: 4}",
        p + ".finished.phase.succeeded: must list at least one phase: list the phases that mean the job succeeded, "
            "such as [Succeeded]"}},
      {"reading errors",
       "  - name: Workflow.v1alpha1.argoproj.io\n"
       "    suspend: {path: spec.suspend, value: [1]}\n"
       "    finished: {condition: {type: Done}, phase: {path: status.phase, succeeded: [Ok]}}\n"
       "    bogus: 1\n",
       {p + ".suspend.value: must be a single value, not a list: write the value the field holds while the job is "
            "suspended, such as true",
        p + ".finished: sets both condition and phase: keep the one that tells when the job is done",
        p + ".bogus: unknown field: remove it; the fields accepted in " + p +
            " are name, resource, suspend, stop, podSets, finished, active, podsReady"}},
      {"active rules",
       "  - name: Workflow.v1alpha1.argoproj.io\n"
       "    active: {}\n"
       "  - name: PipelineRun.v1.tekton.dev\n"
       "    active: {condition: {type: Succeeded, status: unknown}, phase: {path: status.phase}}\n"
       "  - name: TrainingRun.v1.ml.example.com\n"
       "    suspend: {path: spec.suspend, value: true}\n"
       "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
       "    finished: {condition: {type: Succeeded}}\n"
       "    active: {phase: {path: phase}}\n"
       "  - name: Job.v1.example.com\n"
       "    suspend: {path: spec.suspend, value: true}\n"
       "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
       "    finished: {condition: {type: Succeeded}}\n"
       "    active: {pods: {items: status.nodes, filter: {path: type}, state: {path: .phase, running: []}}}\n",
       {p + ".active: must set condition, phase or pods: write {pods: {items: /status/nodes, filter: {path: type, "
            "value: Pod}, state: {path: phase, running: [Pending, Running]}}}, {condition: {type: Running, status: "
            "\"True\"}} or {phase: {path: status.phase, running: [Running]}}",
        "integrations.frameworks[1].active: sets more than one of condition, phase and pods: keep the one that "
        "tells whether the job's pods may still run",
        "integrations.frameworks[2].active.phase.path: must be a dotted field path, not \"phase\": write the "
        "phase field's dotted path, such as status.phase",
        "integrations.frameworks[2].active.phase.running: must list at least one phase: list the phases in which "
        "the job's pods may run, such as [Running]",
        "integrations.frameworks[3].active.pods.items: \"status.nodes\" is not a JSON pointer to a field: start "
        "it with / and separate the keys with /, such as /status/nodes",
        "integrations.frameworks[3].active.pods.filter.value: is required: write the value the item's field holds "
        "for a pod, such as Pod",
        "integrations.frameworks[3].active.pods.state.path: must be a dotted field path, not \".phase\": write "
        "the item's state field, such as phase",
        "integrations.frameworks[3].active.pods.state.running: must list at least one state: list the states in "
        "which a pod may run, such as [Pending, Running]"}},
      {"an active condition's status",
       "  - name: PipelineRun.v1.tekton.dev\n"
       "    active: {condition: {type: Succeeded, status: unknown}}\n",
       {p + ".active.condition.status: must be True, False or Unknown, not \"unknown\": write the status the "
            "condition has while the job's pods may run, such as \"True\""}},
      {"more pod sets than a Workload holds",
       trainingRunWithPodSets(19),
       {p + ".podSets: lists 19 pod sets for TrainingRun, more than the 18 a Kueue Workload holds (its CRD's "
            "spec.podSets maxItems): merge pod sets whose pods are alike (same template, counts added) until at "
            "most 18 remain"}},
      {"podsReady rules",
       "  - name: Workflow.v1alpha1.argoproj.io\n"
       "    podsReady: {condition: {type: Running, reasons: [Up], exceptReasons: [Down]}, phase: {path: x}}\n"
       "  - name: PipelineRun.v1.tekton.dev\n"
       "    podsReady: {condition: {type: Succeeded, reasons: [Running], exceptReasons: [Pending]}}\n"
       "  - name: TrainingRun.v1.ml.example.com\n"
       "    suspend: {path: spec.suspend, value: true}\n"
       "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
       "    finished: {condition: {type: Succeeded}}\n"
       "    podsReady: {pods: {items: /status/pods, state: {path: phase, running: []}}}\n",
       {p + ".podsReady: sets more than one of condition, phase and pods: keep the one that tells when the job's "
            "pods have started",
        "integrations.frameworks[1].podsReady.condition: sets both reasons and exceptReasons: keep reasons (the "
        "reasons that count) or exceptReasons (the reasons that do not)",
        "integrations.frameworks[2].podsReady.pods.state.running: must list at least one state: list the states "
        "in which a pod may run, such as [Pending, Running]"}},
      {"the same kind twice",
       "  - name: Workflow.v1alpha1.argoproj.io\n  - name: Workflow.v1alpha1.argoproj.io\n",
       {"integrations.frameworks[1].name: duplicates integrations.frameworks[0].name "
        "(argoproj.io/v1alpha1, Kind=Workflow): remove one of the two entries"}},
  };
  return cases;
}

MKA_TABLE_TEST(Integrations, ProblemsNameTheFieldAndTheFix, ProblemsNameTheFieldAndTheFixCase,
               problemsNameTheFieldAndTheFixCases()) {
  const ProblemsNameTheFieldAndTheFixCase& c = testCase();
  auto result = parseConfiguration(adapterDoc("integrations:\n  frameworks:\n" + c.frameworks));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(rendered(result.errors), c.errors);
}

// The Workload CRD's limit itself is accepted: only more pod sets than it holds are refused.
TEST(Integrations, AsManyPodSetsAsAWorkloadHoldsAreAccepted) {
  auto c = parsed(adapterDoc("integrations:\n  frameworks:\n" + trainingRunWithPodSets(18)));
  ASSERT_EQ(c.integrations.frameworks.size(), 1u);
  EXPECT_EQ(c.integrations.frameworks[0].podSets.size(), 18u);
}

struct PodsReadyRuleCase {
  std::string name;
  std::string framework;  // one integrations.frameworks entry
  std::optional<ActiveRule> podsReady;
};

std::vector<PodsReadyRuleCase> podsReadyRuleCases() {
  const std::string trainingRun =
      "  - name: TrainingRun.v1.ml.example.com\n    suspend: {path: spec.suspend, value: true}\n"
      "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
      "    finished: {condition: {type: Succeeded}}\n";
  return {
      {"Workflow's profile: a Pod node that runs or ran (phase Running comes before any pod)",
       "  - name: Workflow.v1alpha1.argoproj.io\n",
       ActiveRule{.type = ActiveRule::Type::Pods,
                  .path = "phase",
                  .running = {"Running", "Succeeded", "Failed"},
                  .items = "/status/nodes",
                  .filter = FieldValue{"type", "Pod"}}},
      {"PipelineRun's profile: Succeeded Unknown with reason Running", "  - name: PipelineRun.v1.tekton.dev\n",
       ActiveRule{.type = ActiveRule::Type::Condition,
                  .conditionType = "Succeeded",
                  .conditionStatus = "Unknown",
                  .reasons = {"Running"}}},
      {"a kind without a profile has none", trainingRun, std::nullopt},
      {"a condition", trainingRun + "    podsReady: {condition: {type: Running}}\n",
       ActiveRule{.type = ActiveRule::Type::Condition, .conditionType = "Running", .conditionStatus = "True"}},
      {"a phase", trainingRun + "    podsReady: {phase: {path: status.phase, running: [Running, Done]}}\n",
       ActiveRule{.type = ActiveRule::Type::Phase, .path = "status.phase", .running = {"Running", "Done"}}},
      {"pods", trainingRun + "    podsReady: {pods: {items: /status/pods, state: {path: phase, running: [Running]}}}\n",
       ActiveRule{.type = ActiveRule::Type::Pods, .path = "phase", .running = {"Running"}, .items = "/status/pods"}},
      {"overriding a profile's", "  - name: PipelineRun.v1.tekton.dev\n    podsReady: {condition: {type: Ready}}\n",
       ActiveRule{.type = ActiveRule::Type::Condition, .conditionType = "Ready", .conditionStatus = "True"}},
  };
}

// The podsReady rule takes the active rule's shapes (plus a condition's reasons).
MKA_TABLE_TEST(Integrations, ThePodsReadyRule, PodsReadyRuleCase, podsReadyRuleCases()) {
  const auto& c = testCase();
  const auto f = parsed(adapterDoc("integrations:\n  frameworks:\n" + c.framework)).integrations.frameworks.at(0);
  EXPECT_EQ(f.podsReady, c.podsReady);
  EXPECT_FALSE(f.waitForPodsReady) << "off unless waitForPodsReady.enable is true";
}

// waitForPodsReady.enable, Kueue's key: on for every kind, each of which then needs a podsReady
// rule; the timeouts are Kueue's and refused here.
TEST(Integrations, WaitForPodsReadyNeedsAPodsReadyRuleForEveryKind) {
  const std::string kinds =
      "integrations:\n  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"
      "  - name: TrainingRun.v1.ml.example.com\n    suspend: {path: spec.suspend, value: true}\n"
      "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
      "    finished: {condition: {type: Succeeded}}\n";
  auto on = parsed(
      adapterDoc("waitForPodsReady: {enable: true}\n" + kinds + "    podsReady: {condition: {type: Running}}\n"));
  ASSERT_EQ(on.integrations.frameworks.size(), 2u);
  for (const auto& f : on.integrations.frameworks) EXPECT_TRUE(f.waitForPodsReady) << f.name;

  auto missing = parseConfiguration(adapterDoc("waitForPodsReady: {enable: true, timeout: 5m}\n" + kinds));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(rendered(missing.errors),
            (std::vector<std::string>{
                "waitForPodsReady.timeout: is Kueue's setting: Kueue's workload controller times Workloads out and "
                "requeues them, not the adapter: set it in Kueue's Configuration and keep only enable here",
                "integrations.frameworks[1].podsReady: is required while waitForPodsReady.enable is true: Kueue "
                "evicts an admitted Workload whose PodsReady condition is not True within waitForPodsReady.timeout, "
                "and without the rule the integration cannot tell when the pods of TrainingRun.v1.ml.example.com "
                "have started: add podsReady, such as {condition: {type: Running, status: \"True\"}}, or set "
                "waitForPodsReady.enable to false in both this file and Kueue's Configuration"}));
}

// Kueue's integrations.labelKeysToCopy, the same list for every kind; each key checked.
TEST(Integrations, LabelKeysToCopyGoToEveryKindAndAreCheckedAsLabelKeys) {
  auto c =
      parsed(adapterDoc("integrations:\n  labelKeysToCopy: [team, example.com/cost-center]\n  frameworks:\n"
                        "  - name: Workflow.v1alpha1.argoproj.io\n  - name: PipelineRun.v1.tekton.dev\n"));
  ASSERT_EQ(c.integrations.frameworks.size(), 2u);
  for (const auto& f : c.integrations.frameworks)
    EXPECT_EQ(f.labelKeysToCopy, (std::vector<std::string>{"team", "example.com/cost-center"}));

  auto result = parseConfiguration(
      adapterDoc("integrations:\n  labelKeysToCopy: [team, team, \"bad key\", {a: 1}]\n  frameworks:\n"
                 "  - name: Workflow.v1alpha1.argoproj.io\n"));
  EXPECT_FALSE(result.ok());
  const auto errors = rendered(result.errors);
  ASSERT_EQ(errors.size(), 3u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "integrations.labelKeysToCopy[1]: \"team\" is listed twice: list each key once");
  EXPECT_EQ(errors[1].rfind("integrations.labelKeysToCopy[2]: \"bad key\" is not a valid label key: ", 0), 0u)
      << errors[1];
  EXPECT_EQ(errors[2],
            "integrations.labelKeysToCopy[3]: must be a label key, not a mapping: write a label key such as "
            "example.com/team");
}

// Kueue's managedJobsNamespaceSelector: by default every namespace but kube-system and the
// adapter's own; {} selects every namespace; a selector is checked field by field.
TEST(Integrations, ManagedJobsNamespaceSelector) {
  using Operator = LabelSelector::Expression::Operator;
  const auto selectorOf = [](const std::string& section) {
    return parsed(adapterDoc("namespace: batch-system\nintegrations:\n" + section +
                             "  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"))
        .integrations.frameworks.at(0)
        .namespaceSelector;
  };
  EXPECT_EQ(selectorOf(""),
            (LabelSelector{{}, {{"kubernetes.io/metadata.name", Operator::NotIn, {"kube-system", "batch-system"}}}}));
  EXPECT_EQ(selectorOf("  managedJobsNamespaceSelector: {}\n"), LabelSelector{});
  EXPECT_EQ(selectorOf("  managedJobsNamespaceSelector:\n    matchLabels: {managed-by-kueue: \"true\"}\n"
                       "    matchExpressions: [{key: tier, operator: In, values: [batch, ml]}]\n"),
            (LabelSelector{{{"managed-by-kueue", "true"}}, {{"tier", Operator::In, {"batch", "ml"}}}}));

  auto result = parseConfiguration(
      adapterDoc("integrations:\n  managedJobsNamespaceSelector:\n"
                 "    matchExpressions: [{key: tier, operator: Like, values: [a]}, {key: tier, operator: In},\n"
                 "      {key: tier, operator: Exists, values: [a]}]\n"
                 "  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"));
  EXPECT_FALSE(result.ok());
  const std::string p = "integrations.managedJobsNamespaceSelector.matchExpressions";
  EXPECT_EQ(rendered(result.errors),
            (std::vector<std::string>{
                p + "[0].operator: unsupported operator \"Like\": use In, NotIn, Exists or DoesNotExist",
                p + "[1].values: must list at least one value for operator In: write it as [a, b]",
                p + "[2].values: must be empty for operator Exists: remove the values"}));
}

// Kueue's objectRetentionPolicies.workloads.afterDeactivatedByKueue, for every kind.
TEST(Integrations, DeactivationRetention) {
  const auto retentionOf = [](const std::string& section) {
    return parsed(adapterDoc("integrations:\n" + section + "  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"))
        .integrations.frameworks.at(0)
        .deleteAfterDeactivatedByKueue;
  };
  EXPECT_EQ(retentionOf(""), std::nullopt) << "kept by default";
  EXPECT_EQ(retentionOf("  objectRetentionPolicies: {workloads: {afterDeactivatedByKueue: 1h}}\n"),
            std::optional<Duration>(std::chrono::hours{1}));
  EXPECT_EQ(retentionOf("  objectRetentionPolicies: {workloads: {afterDeactivatedByKueue: 0s}}\n"),
            std::optional<Duration>(Duration::zero()));

  auto result = parseConfiguration(
      adapterDoc("integrations:\n  objectRetentionPolicies: {workloads: {afterDeactivatedByKueue: -5m}}\n"
                 "  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(rendered(result.errors),
            std::vector<std::string>{"integrations.objectRetentionPolicies.workloads.afterDeactivatedByKueue: must not "
                                     "be negative: write how long to keep the job, such as 1h, or 0s to delete it at "
                                     "once"});
}

struct MatchesAsTheApiServerDoesCase {
  std::string name;
  LabelSelector selector;
  json labels;
  bool matches;
};

std::vector<MatchesAsTheApiServerDoesCase> matchesAsTheApiServerDoesCases() {
  using Operator = LabelSelector::Expression::Operator;
  const std::vector<MatchesAsTheApiServerDoesCase> cases = {
      {"empty selects everything", {}, nullptr, true},
      {"matchLabels: equal", {{{"a", "1"}}, {}}, {{"a", "1"}, {"b", "2"}}, true},
      {"matchLabels: other value", {{{"a", "1"}}, {}}, {{"a", "2"}}, false},
      {"matchLabels: missing", {{{"a", "1"}}, {}}, json::object(), false},
      {"In", {{}, {{"a", Operator::In, {"1", "2"}}}}, {{"a", "2"}}, true},
      {"In: missing key", {{}, {{"a", Operator::In, {"1"}}}}, nullptr, false},
      {"NotIn: missing key matches", {{}, {{"a", Operator::NotIn, {"1"}}}}, nullptr, true},
      {"NotIn: listed", {{}, {{"a", Operator::NotIn, {"1"}}}}, {{"a", "1"}}, false},
      {"Exists", {{}, {{"a", Operator::Exists, {}}}}, {{"a", ""}}, true},
      {"DoesNotExist", {{}, {{"a", Operator::DoesNotExist, {}}}}, {{"a", ""}}, false},
      {"all must hold", {{{"a", "1"}}, {{"b", Operator::Exists, {}}}}, {{"a", "1"}}, false},
  };
  return cases;
}

MKA_TABLE_TEST(LabelSelectorTest, MatchesAsTheApiServerDoes, MatchesAsTheApiServerDoesCase,
               matchesAsTheApiServerDoesCases()) {
  const MatchesAsTheApiServerDoesCase& c = testCase();
  EXPECT_EQ(c.selector.matches(c.labels), c.matches);
}

}  // namespace
}  // namespace mka::config
