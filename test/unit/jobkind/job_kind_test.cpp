#include "mka/jobkind/job_kind.h"

#include <gtest/gtest.h>

#include "mka/config/loader.h"
#include "support/table_test.h"

namespace mka::jobkind {
namespace {

using mka::joinErrors;
using nlohmann::json;

JobKind pipelineRuns() {
  return JobKind({"PipelineRun.v1.tekton.dev", {"tekton.dev", "v1", "PipelineRun"}, config::ManagedByLocation{}, true});
}

JobKind workflows() {
  config::ExternalFramework f{"Workflow.v1alpha1.argoproj.io", {"argoproj.io", "v1alpha1", "Workflow"}, {}, true};
  f.managedBy.type = config::ManagedByLocation::Type::Label;
  f.managedBy.path.clear();
  f.managedBy.labelKey = "workflows.argoproj.io/controller-instanceid";
  f.managedBy.value = "multikueue";
  return JobKind(std::move(f));
}

struct NotManagedByMultiKueueWordsKueuesReasonCase {
  std::string name;
  JobKind kind;
  json job;
  std::optional<std::string> reason;
};

std::vector<NotManagedByMultiKueueWordsKueuesReasonCase> notManagedByMultiKueueWordsKueuesReasonCases() {
  const std::vector<NotManagedByMultiKueueWordsKueuesReasonCase> cases = {
      {"spec.managedBy set", pipelineRuns(), {{"spec", {{"managedBy", "kueue.x-k8s.io/multikueue"}}}}, std::nullopt},
      {"spec.managedBy missing",
       pipelineRuns(),
       {{"spec", json::object()}},
       "Expecting .spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\""},
      {"spec.managedBy someone else's",
       pipelineRuns(),
       {{"spec", {{"managedBy", "tekton.dev/pipeline"}}}},
       "Expecting .spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"tekton.dev/pipeline\""},
      {"spec.managedBy not a string",
       pipelineRuns(),
       {{"spec", {{"managedBy", 7}}}},
       "Expecting .spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\""},
      {"label set",
       workflows(),
       {{"metadata", {{"labels", {{"workflows.argoproj.io/controller-instanceid", "multikueue"}}}}}},
       std::nullopt},
      {"label missing",
       workflows(),
       {{"metadata", {{"name", "wf"}}}},
       "Expecting metadata.labels[workflows.argoproj.io/controller-instanceid] to be \"multikueue\" not \"\""},
  };
  return cases;
}

MKA_TABLE_TEST(JobKind, NotManagedByMultiKueueWordsKueuesReason, NotManagedByMultiKueueWordsKueuesReasonCase,
               notManagedByMultiKueueWordsKueuesReasonCases()) {
  const NotManagedByMultiKueueWordsKueuesReasonCase& c = testCase();
  EXPECT_EQ(c.kind.notManagedByMultiKueue(c.job), c.reason);
}

TEST(JobKind, SetsReadsAndRemovesTheMarkerWhereTheKindKeepsIt) {
  for (const auto& kind : {pipelineRuns(), workflows()}) {
    SCOPED_TRACE(kind.name());
    json job = {{"metadata", {{"name", "j"}}}, {"spec", json::object()}};
    EXPECT_FALSE(kind.managedByValue(job).has_value());
    job = job.patch(kind.managedByPatch(job));
    EXPECT_EQ(kind.managedByValue(job), kind.managedBy().value);
    EXPECT_FALSE(kind.notManagedByMultiKueue(job).has_value());
    kind.removeManagedBy(job);
    EXPECT_FALSE(kind.managedByValue(job).has_value());
  }
}

TEST(JobKind, KindsOfFollowsTheConfigurationWithItsProfiles) {
  const auto loaded = config::parseConfiguration(R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multiKueue:
  externalFrameworks:
  - name: Workflow.v1alpha1.argoproj.io
  - name: TrainingRun.v1.ml.example.com
    managedBy: {path: spec.runPolicy.managedBy}
  - name: PipelineRun.v1.tekton.dev
)");
  ASSERT_TRUE(loaded.ok()) << joinErrors(loaded.errors);
  const auto kinds = kindsOf(*loaded.config);
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].name(), "Workflow.v1alpha1.argoproj.io");
  EXPECT_EQ(kinds[0].managedByField(), "metadata.labels[workflows.argoproj.io/controller-instanceid]");
  EXPECT_TRUE(kinds[1].is({"ml.example.com", "v1", "TrainingRun"}));
  EXPECT_EQ(kinds[1].managedByField(), ".spec.runPolicy.managedBy");
  EXPECT_EQ(kinds[2].managedByField(), ".spec.managedBy");
  EXPECT_FALSE(kinds[2].is({"tekton.dev", "v1beta1", "PipelineRun"})) << "another version is another kind";
  for (const auto& kind : kinds) EXPECT_EQ(kind.integration(), nullptr) << kind.name() << " is not integrated";
}

TEST(JobKind, IntegratedKindsCarryTheirRulesWhetherDispatchedOrNot) {
  const auto loaded = config::parseConfiguration(R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multiKueue:
  externalFrameworks:
  - name: Workflow.v1alpha1.argoproj.io
  - name: PipelineRun.v1.tekton.dev
integrations:
  frameworks:
  - name: Workflow.v1alpha1.argoproj.io
  - name: TrainingRun.v1.ml.example.com
    suspend: {path: spec.suspend, value: true}
    podSets:
    - name: main
      count: {path: spec.replicas, default: 1}
      template: spec.template
    finished:
      condition: {type: Succeeded}
)");
  ASSERT_TRUE(loaded.ok()) << joinErrors(loaded.errors);
  const auto dispatched = kindsOf(*loaded.config);
  ASSERT_EQ(dispatched.size(), 2u);
  ASSERT_NE(dispatched[0].integration(), nullptr);
  EXPECT_EQ(dispatched[0].integration()->podSetsFrom, config::PodSetsFrom::ArgoTemplates);
  EXPECT_EQ(dispatched[1].integration(), nullptr) << "PipelineRuns are left to tekton-kueue here";

  const auto integrated = integratedKindsOf(*loaded.config);
  ASSERT_EQ(integrated.size(), 2u);
  EXPECT_TRUE(integrated[0].dispatched());
  EXPECT_EQ(integrated[0].managedByField(), "metadata.labels[workflows.argoproj.io/controller-instanceid]");
  EXPECT_TRUE(integrated[1].is({"ml.example.com", "v1", "TrainingRun"}));
  EXPECT_FALSE(integrated[1].dispatched()) << "a single cluster's kind, not in externalFrameworks";
  EXPECT_EQ(integrated[1].managedByField(), ".spec.managedBy");
  ASSERT_NE(integrated[1].integration(), nullptr);
  EXPECT_EQ(integrated[1].integration()->podSets.at(0).templatePath, "spec.template");
}

}  // namespace
}  // namespace mka::jobkind
