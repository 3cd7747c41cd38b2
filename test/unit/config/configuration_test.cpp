#include "mka/config/configuration.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::config {
namespace {

ManagedByLocation labelLocation(std::string key, std::string value) {
  ManagedByLocation where;
  where.type = ManagedByLocation::Type::Label;
  where.path.clear();
  where.labelKey = std::move(key);
  where.value = std::move(value);
  return where;
}

ManagedByLocation path(std::string p) {
  ManagedByLocation where;
  where.path = std::move(p);
  return where;
}

TEST(ManagedByLocation, DefaultsToSpecManagedByWithKueuesValue) {
  ManagedByLocation where;
  EXPECT_EQ(where.type, ManagedByLocation::Type::Path);
  EXPECT_EQ(where.path, "spec.managedBy");
  EXPECT_EQ(where.value, "kueue.x-k8s.io/multikueue");
}

struct FieldPathCase {
  std::string name;
  ManagedByLocation where;
  std::string fieldPath;
};

std::vector<FieldPathCase> fieldPathCases() {
  const std::vector<FieldPathCase> cases = {
      {"default", ManagedByLocation{}, "spec.managedBy"},
      {"run policy", path("spec.runPolicy.managedBy"), "spec.runPolicy.managedBy"},
      {"label", labelLocation("workflows.argoproj.io/controller-instanceid", "multikueue"),
       "metadata.labels[workflows.argoproj.io/controller-instanceid]"},
  };
  return cases;
}

MKA_TABLE_TEST(ManagedByLocation, FieldPath, FieldPathCase, fieldPathCases()) {
  const FieldPathCase& c = testCase();
  EXPECT_EQ(c.where.fieldPath(), c.fieldPath);
}

struct NamesRoundTripCase {
  std::string name;
  ManagedByDefaulting policy;
  std::string text;
};

std::vector<NamesRoundTripCase> namesRoundTripCases() {
  const std::vector<NamesRoundTripCase> cases = {
      {"multikueue queues", ManagedByDefaulting::MultiKueueQueues, "MultiKueueQueues"},
      {"queue labeled", ManagedByDefaulting::QueueLabeled, "QueueLabeled"},
      {"never", ManagedByDefaulting::Never, "Never"},
  };
  return cases;
}

MKA_TABLE_TEST(ManagedByDefaulting, NamesRoundTrip, NamesRoundTripCase, namesRoundTripCases()) {
  const NamesRoundTripCase& c = testCase();
  EXPECT_EQ(toString(c.policy), c.text);
  EXPECT_EQ(parseManagedByDefaulting(c.text), c.policy);
}

TEST(ManagedByDefaulting, NamesRoundTrip) {
  EXPECT_EQ(parseManagedByDefaulting("never"), std::nullopt);
  EXPECT_EQ(parseManagedByDefaulting(""), std::nullopt);
}

struct MatchesTektonAndArgoInAnyVersionCase {
  std::string name;
  api::GroupVersionKind gvk;
  std::optional<ManagedByLocation> profile;
};

std::vector<MatchesTektonAndArgoInAnyVersionCase> matchesTektonAndArgoInAnyVersionCases() {
  const auto argo = labelLocation("workflows.argoproj.io/controller-instanceid", "multikueue");
  const std::vector<MatchesTektonAndArgoInAnyVersionCase> cases = {
      {"tekton v1", {"tekton.dev", "v1", "PipelineRun"}, ManagedByLocation{}},
      {"tekton v1beta1", {"tekton.dev", "v1beta1", "PipelineRun"}, ManagedByLocation{}},
      {"argo", {"argoproj.io", "v1alpha1", "Workflow"}, argo},
      {"argo other version", {"argoproj.io", "v2", "Workflow"}, argo},
      {"tekton TaskRun is not a profile", {"tekton.dev", "v1", "TaskRun"}, std::nullopt},
      {"Workflow of another group", {"example.com", "v1", "Workflow"}, std::nullopt},
      {"ray", {"ray.io", "v1", "RayCluster"}, std::nullopt},
  };
  return cases;
}

MKA_TABLE_TEST(BuiltinProfile, MatchesTektonAndArgoInAnyVersion, MatchesTektonAndArgoInAnyVersionCase,
               matchesTektonAndArgoInAnyVersionCases()) {
  const MatchesTektonAndArgoInAnyVersionCase& c = testCase();
  EXPECT_EQ(builtinProfile(c.gvk), c.profile);
}

TEST(Configuration, DefaultsMatchTheSpecAndKueue) {
  Configuration c;
  EXPECT_EQ(c.source, Configuration::Source::Defaults);
  EXPECT_EQ(c.namespace_, "kueue-system");
  EXPECT_EQ(c.webhook.port, 9443);
  EXPECT_EQ(c.webhook.certDir, "/tmp/k8s-webhook-server/serving-certs");
  EXPECT_EQ(c.healthProbeBindAddress, ":8081");
  EXPECT_EQ(c.metricsBindAddress, ":8080");
  EXPECT_EQ(c.managedByDefaulting, ManagedByDefaulting::MultiKueueQueues);
  EXPECT_TRUE(c.dispatch.enabled);
  EXPECT_EQ(c.dispatch.admissionCheckControllerName, "multikueue-adapter.dev/dispatcher");
  EXPECT_EQ(c.multiKueue.gcInterval, std::chrono::minutes{1});
  EXPECT_EQ(c.multiKueue.origin, "multikueue");
  EXPECT_EQ(c.multiKueue.workerLostTimeout, std::chrono::minutes{15});
  EXPECT_EQ(c.multiKueue.dispatcherName, "kueue.x-k8s.io/multikueue-dispatcher-all-at-once");
  EXPECT_TRUE(c.multiKueue.externalFrameworks.empty());
}

TEST(Configuration, FindFramework) {
  Configuration c;
  ExternalFramework tekton;
  tekton.name = "PipelineRun.v1.tekton.dev";
  tekton.gvk = {"tekton.dev", "v1", "PipelineRun"};
  ExternalFramework argo;
  argo.name = "Workflow.v1alpha1.argoproj.io";
  argo.gvk = {"argoproj.io", "v1alpha1", "Workflow"};
  c.multiKueue.externalFrameworks = {tekton, argo};

  const auto* found = c.findFramework({"argoproj.io", "v1alpha1", "Workflow"});
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "Workflow.v1alpha1.argoproj.io");
  EXPECT_EQ(c.findFramework({"tekton.dev", "v1beta1", "PipelineRun"}), nullptr);  // versions are distinct kinds
  EXPECT_EQ(c.findFramework({"tekton.dev", "v1", "TaskRun"}), nullptr);
}

struct MultiKueueControllerNamesCase {
  std::string name;
  std::string ours;
  std::vector<std::string> expected;
};

std::vector<MultiKueueControllerNamesCase> multiKueueControllerNamesCases() {
  const std::vector<MultiKueueControllerNamesCase> cases = {
      {"default",
       "multikueue-adapter.dev/dispatcher",
       {"multikueue-adapter.dev/dispatcher", "kueue.x-k8s.io/multikueue"}},
      {"drop-in mode deduplicates", "kueue.x-k8s.io/multikueue", {"kueue.x-k8s.io/multikueue"}},
      {"custom", "example.com/mk", {"example.com/mk", "kueue.x-k8s.io/multikueue"}},
  };
  return cases;
}

MKA_TABLE_TEST(Configuration, MultiKueueControllerNames, MultiKueueControllerNamesCase,
               multiKueueControllerNamesCases()) {
  const MultiKueueControllerNamesCase& c = testCase();
  Configuration config;
  config.dispatch.admissionCheckControllerName = c.ours;
  EXPECT_EQ(config.multiKueueControllerNames(), c.expected);
}

}  // namespace
}  // namespace mka::config
