#include "mka/config/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "support/table_test.h"

namespace mka::config {
namespace {

using namespace std::chrono_literals;
using test::adapterDoc;
using test::kueueDoc;
using test::rendered;

Configuration mustParse(const std::string& text) {
  auto result = parseConfiguration(text);
  EXPECT_TRUE(result.ok()) << joinErrors(result.errors);
  EXPECT_EQ(result.config.has_value(), result.ok());
  return result.config.value_or(Configuration{});
}

TEST(Loader, HeaderOnlyGivesDefaults) {
  auto c = mustParse(adapterDoc(""));
  EXPECT_EQ(c.source, Configuration::Source::AdapterConfiguration);
  Configuration defaults;
  EXPECT_EQ(c.namespace_, defaults.namespace_);
  EXPECT_EQ(c.webhook.port, defaults.webhook.port);
  EXPECT_EQ(c.leaderElection.resourceNamespace, "kueue-system");
  EXPECT_EQ(c.leaderElection.leaseDuration, 15s);
  EXPECT_EQ(c.clientConnection.qps, 50);
  EXPECT_EQ(c.clientConnection.burst, 100);
  EXPECT_EQ(c.multiKueue.gcInterval, 1min);
  EXPECT_EQ(c.multiKueue.workerLostTimeout, 15min);
  EXPECT_EQ(c.multiKueue.origin, "multikueue");
  EXPECT_TRUE(c.multiKueue.orchestratedPreemption) << "on by default, as in Kueue 0.20";
  EXPECT_FALSE(c.multiKueue.stepSize.has_value());
}

TEST(Loader, OrchestratedPreemptionAndTheStepSizeAreRead) {
  auto c =
      mustParse(adapterDoc("multiKueue: {orchestratedPreemption: false, dispatcherName: "
                           "multikueue-adapter.dev/quota-aware, incrementalDispatcherConfig: {stepSize: 2}}\n"));
  EXPECT_FALSE(c.multiKueue.orchestratedPreemption);
  EXPECT_EQ(c.multiKueue.stepSize, 2);
}

TEST(Loader, NullSectionsReadAsAbsent) {
  auto c = mustParse(adapterDoc("webhook:\nleaderElection: ~\nmultiKueue: null\nnamespace:\n"));
  EXPECT_EQ(c.webhook.port, 9443);
  EXPECT_EQ(c.namespace_, "kueue-system");
  EXPECT_TRUE(c.multiKueue.externalFrameworks.empty());
}

TEST(Loader, AcceptsJson) {
  auto c = mustParse(R"({"apiVersion": "config.multikueue-adapter.dev/v1alpha1", "kind": "AdapterConfiguration",
    "webhook": {"port": 10443}, "multiKueue": {"externalFrameworks": [{"name": "PipelineRun.v1.tekton.dev"}],
    "gcInterval": "30s"}})");
  EXPECT_EQ(c.webhook.port, 10443);
  ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 1u);
  EXPECT_EQ(c.multiKueue.gcInterval, 30s);
}

struct ManagedByLocationsCase {
  std::string name;
  std::string entry;  // one externalFrameworks entry
  ManagedByLocation expected;
  bool fromProfile;
};

std::vector<ManagedByLocationsCase> managedByLocationsCases() {
  ManagedByLocation specPath;
  ManagedByLocation runPolicy;
  runPolicy.path = "spec.runPolicy.managedBy";
  ManagedByLocation argoLabel;
  argoLabel.type = ManagedByLocation::Type::Label;
  argoLabel.path.clear();
  argoLabel.labelKey = "workflows.argoproj.io/controller-instanceid";
  argoLabel.value = "multikueue";
  ManagedByLocation customLabel = argoLabel;
  customLabel.labelKey = "example.com/managed";
  customLabel.value = "mk";
  const std::vector<ManagedByLocationsCase> cases = {
      {"tekton profile", "{name: PipelineRun.v1.tekton.dev}", specPath, true},
      {"argo profile", "{name: Workflow.v1alpha1.argoproj.io}", argoLabel, true},
      {"no profile: default path", "{name: RayCluster.v1.ray.io}", specPath, false},
      {"explicit path", "{name: PyTorchJob.v1.kubeflow.org, managedBy: {path: spec.runPolicy.managedBy}}", runPolicy,
       false},
      {"explicit label", "{name: Thing.v1.example.com, managedBy: {label: example.com/managed, value: mk}}",
       customLabel, false},
      {"explicit beats profile", "{name: Workflow.v1alpha1.argoproj.io, managedBy: {path: spec.managedBy}}", specPath,
       false},
      {"explicit label equal to the profile",
       "{name: Workflow.v1.argoproj.io, managedBy: {label: workflows.argoproj.io/controller-instanceid, value: "
       "multikueue}}",
       argoLabel, false},
  };
  return cases;
}

MKA_TABLE_TEST(Loader, ManagedByLocations, ManagedByLocationsCase, managedByLocationsCases()) {
  const ManagedByLocationsCase& c = testCase();
  auto config = mustParse(adapterDoc("multiKueue:\n  externalFrameworks:\n  - " + c.entry + "\n"));
  ASSERT_EQ(config.multiKueue.externalFrameworks.size(), 1u);
  const auto& f = config.multiKueue.externalFrameworks[0];
  EXPECT_EQ(f.managedBy, c.expected);
  EXPECT_EQ(f.managedByFromProfile, c.fromProfile);
}

TEST(Loader, FrameworkGvkIsParsed) {
  auto c = mustParse(adapterDoc("multiKueue: {externalFrameworks: [{name: Workflow.v1alpha1.argoproj.io}]}\n"));
  ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 1u);
  EXPECT_EQ(c.multiKueue.externalFrameworks[0].name, "Workflow.v1alpha1.argoproj.io");
  EXPECT_EQ(c.multiKueue.externalFrameworks[0].gvk, (api::GroupVersionKind{"argoproj.io", "v1alpha1", "Workflow"}));
}

TEST(Loader, RemoteCopyAndRemoteStatusAreRead) {
  auto c = mustParse(adapterDoc(R"(multiKueue:
  externalFrameworks:
  - name: Workflow.v1alpha1.argoproj.io
    remoteCopy:
      removeFields: [/spec/podGC, /metadata/annotations/example.com~1note]
      patches:
      - {op: add, path: /metadata/labels/site, value: worker}
      - {op: replace, path: /spec/serviceAccountName, value: {name: runner}}
      - {op: add, path: /spec/x, value: null}
      - {op: move, from: /spec/a, path: /spec/b}
    remoteStatus: {exclude: [/nodes, /storedTemplates]}
)"));
  ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 1u);
  const auto& f = c.multiKueue.externalFrameworks[0];
  EXPECT_EQ(f.remoteCopy.removeFields,
            (std::vector<std::string>{"/spec/podGC", "/metadata/annotations/example.com~1note"}))
      << "as written: the built-in profile's removals are the JobKind's to add";
  EXPECT_EQ(f.remoteCopy.patches, nlohmann::json::parse(R"([
    {"op": "add", "path": "/metadata/labels/site", "value": "worker"},
    {"op": "replace", "path": "/spec/serviceAccountName", "value": {"name": "runner"}},
    {"op": "add", "path": "/spec/x", "value": null},
    {"op": "move", "from": "/spec/a", "path": "/spec/b"}])"));
  EXPECT_EQ(f.statusExclude, (std::vector<std::string>{"/nodes", "/storedTemplates"}));
}

TEST(Loader, SyncDependenciesAndDependenciesAreRead) {
  auto c = mustParse(adapterDoc(R"(multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
    syncDependencies: true
    dependencies:
    - {kind: Secret, path: "spec.params[*].value"}
  - name: Workflow.v1alpha1.argoproj.io
)"));
  ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 2u);
  const auto& f = c.multiKueue.externalFrameworks[0];
  EXPECT_TRUE(f.syncDependencies);
  EXPECT_EQ(f.dependencies, (std::vector<DependencyPath>{{"Secret", "spec.params[*].value"}}))
      << "as written: the built-in profile's paths are the JobKind's to add";
  EXPECT_FALSE(c.multiKueue.externalFrameworks[1].syncDependencies) << "off unless written";
  EXPECT_EQ(builtinDependencies(f.gvk).size(), 4u);
}

// The worked examples of docs/configuration.md, "Dependent objects", load as written.
TEST(Loader, TheDependentObjectsExamplesLoad) {
  for (const auto* frameworks : {
           "  - name: PipelineRun.v1.tekton.dev\n    syncDependencies: true\n",
           "  - name: Workflow.v1alpha1.argoproj.io\n    syncDependencies: true\n    dependencies:\n"
           "    - {kind: Secret, path: \"spec.arguments.parameters[*].value\"}\n",
           "  - name: Build.v1.example.com\n    syncDependencies: true\n    dependencies:\n"
           "    - {kind: Secret, path: spec.credentials.secretName}\n"
           "    - {kind: ConfigMap, path: \"spec.steps[*].configMapName\"}\n",
       }) {
    const auto c = mustParse(adapterDoc(std::string("multiKueue:\n  externalFrameworks:\n") + frameworks));
    ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 1u) << frameworks;
    EXPECT_TRUE(c.multiKueue.externalFrameworks[0].syncDependencies) << frameworks;
  }
}

struct KueueStyleDefaultingCase {
  std::string name;
  std::string body;
  std::string origin;
  std::string dispatcher;
  Duration gcInterval;
};

std::vector<KueueStyleDefaultingCase> kueueStyleDefaultingCases() {
  const std::vector<KueueStyleDefaultingCase> cases = {
      {"empty origin is defaulted", "multiKueue: {origin: \"\"}", "multikueue",
       "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", 1min},
      {"empty dispatcher is defaulted", "multiKueue: {dispatcherName: \"\"}", "multikueue",
       "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", 1min},
      {"external dispatcher kept", "multiKueue: {dispatcherName: example.com/mine}", "multikueue", "example.com/mine",
       1min},
      {"quoted zero turns gc off", "multiKueue: {gcInterval: \"0\"}", "multikueue",
       "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", 0s},
      {"plain zero too", "multiKueue: {gcInterval: 0}", "multikueue",
       "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", 0s},
      {"compound duration", "multiKueue: {gcInterval: 1h30m, origin: eu}", "eu",
       "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", 90min},
  };
  return cases;
}

MKA_TABLE_TEST(Loader, KueueStyleDefaulting, KueueStyleDefaultingCase, kueueStyleDefaultingCases()) {
  const KueueStyleDefaultingCase& c = testCase();
  for (const auto& doc : {adapterDoc(c.body + "\n"), kueueDoc(c.body + "\n")}) {
    auto config = mustParse(doc);
    EXPECT_EQ(config.multiKueue.origin, c.origin);
    EXPECT_EQ(config.multiKueue.dispatcherName, c.dispatcher);
    EXPECT_EQ(config.multiKueue.gcInterval, c.gcInterval);
  }
}

TEST(Loader, LeaseNamespaceFollowsNamespaceUnlessSet) {
  auto followed = mustParse(adapterDoc("namespace: batch\n"));
  EXPECT_EQ(followed.leaderElection.resourceNamespace, "batch");
  auto set = mustParse(adapterDoc("namespace: batch\nleaderElection: {resourceNamespace: leases}\n"));
  EXPECT_EQ(set.leaderElection.resourceNamespace, "leases");
}

// Each case is named by the text it parses.
struct ManagedByDefaultingValueCase {
  std::string name;
  ManagedByDefaulting policy;
};

std::vector<ManagedByDefaultingValueCase> managedByDefaultingValuesCases() {
  return {{"MultiKueueQueues", ManagedByDefaulting::MultiKueueQueues},
          {"QueueLabeled", ManagedByDefaulting::QueueLabeled},
          {"Never", ManagedByDefaulting::Never}};
}

MKA_TABLE_TEST(Loader, ManagedByDefaultingValues, ManagedByDefaultingValueCase, managedByDefaultingValuesCases()) {
  const auto& [text, policy] = testCase();
  EXPECT_EQ(mustParse(adapterDoc("managedByDefaulting: " + text + "\n")).managedByDefaulting, policy);
}

TEST(Loader, KueueConfigurationReadsItsSubset) {
  for (const std::string version : {"v1beta1", "v1beta2"}) {
    SCOPED_TRACE(version);
    auto c = mustParse(kueueDoc(R"(namespace: batch-system
manageJobsWithoutQueueName: true
webhook: {port: 9999}
leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}
metrics: {bindAddress: ":8443"}
health: {healthProbeBindAddress: ":8081"}
clientConnection: {qps: 20, burst: 30}
integrations: {frameworks: ["batch/job"]}
multiKueue:
  gcInterval: 2m
  origin: eu
  workerLostTimeout: 5m
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  incrementalDispatcherConfig: {stepSize: 2}
  clusterProfile:
    credentialsProviders:
    - name: x
      execConfig: {command: /bin/y, args: [-v], env: [{name: A, value: b}], apiVersion: client.authentication.k8s.io/v1beta1,
                   provideClusterInfo: true, interactiveMode: Never, installHint: get y}
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)",
                                version));
    EXPECT_EQ(c.source, Configuration::Source::KueueConfiguration);
    EXPECT_EQ(c.namespace_, "batch-system");
    EXPECT_EQ(c.leaderElection.resourceNamespace, "batch-system");
    EXPECT_EQ(c.clientConnection.qps, 20);
    EXPECT_EQ(c.clientConnection.burst, 30);
    EXPECT_EQ(c.multiKueue.gcInterval, 2min);
    EXPECT_EQ(c.multiKueue.origin, "eu");
    EXPECT_EQ(c.multiKueue.workerLostTimeout, 5min);
    EXPECT_EQ(c.multiKueue.dispatcherName, "kueue.x-k8s.io/multikueue-dispatcher-incremental");
    EXPECT_EQ(c.multiKueue.stepSize, 2) << "Kueue's incrementalDispatcherConfig is read now";
    ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 2u);
    EXPECT_TRUE(c.multiKueue.externalFrameworks[1].managedByFromProfile);
    // The deprecated list is the one used when accessProviders is empty, as in Kueue.
    ASSERT_TRUE(c.multiKueue.clusterProfile);
    ASSERT_EQ(c.multiKueue.clusterProfile->providers().size(), 1u);
    const auto& provider = c.multiKueue.clusterProfile->providers()[0];
    EXPECT_EQ(provider.name, "x");
    const api::ExecConfig exec{"/bin/y", {"-v"}, {{"A", "b"}}, "client.authentication.k8s.io/v1beta1",
                               "get y",  true,   "Never"};
    EXPECT_EQ(provider.execConfig, exec);
    // Kueue's own webhook, leader election and probes are for Kueue's process, not ours.
    EXPECT_EQ(c.webhook.port, 9443);
    EXPECT_EQ(c.leaderElection.resourceName, "multikueue-adapter");
    EXPECT_EQ(c.healthProbeBindAddress, ":8081");
  }
}

// Kueue decodes its Configuration strictly: what it would refuse (and so not start) is an error
// naming the key, which points to AdapterConfiguration for the adapter's own settings.
TEST(Loader, KueueConfigurationRefusesWhatKueuesStrictDecoderRefuses) {
  auto result = parseConfiguration(kueueDoc(R"(someFutureFeature: {enabled: true}
multiKueue:
  brandNewKnob: 3
  externalFrameworks:
  - name: Workflow.v1alpha1.argoproj.io
    managedBy: {label: workflows.argoproj.io/controller-instanceid, value: mk}
)",
                                            "v1beta2"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(test::paths(result.errors), (std::vector<std::string>{"someFutureFeature", "multiKueue.brandNewKnob",
                                                                  "multiKueue.externalFrameworks[0].managedBy"}));
  const auto text = rendered(result.errors);
  EXPECT_THAT(text[0], ::testing::HasSubstr("unknown field of Kueue's Configuration"));
  EXPECT_THAT(text[0], ::testing::HasSubstr("AdapterConfiguration"));
  EXPECT_THAT(text[2], ::testing::HasSubstr("multikueue-adapter extension"));
  EXPECT_THAT(text[2], ::testing::HasSubstr("kind: AdapterConfiguration"));
}

TEST(Loader, PathPrefixIsPutBeforeEveryPath) {
  auto result = parseConfiguration(adapterDoc("webhook: {port: 0}\nmultikueue: {}\n"), "data[config.yaml].");
  EXPECT_EQ(test::paths(result.errors),
            (std::vector<std::string>{"data[config.yaml].webhook.port", "data[config.yaml].multikueue"}));
  auto empty = parseConfiguration("", "data[config.yaml].");
  EXPECT_EQ(rendered(empty.errors)[0].rfind("data[config.yaml]: file is empty: ", 0), 0u) << rendered(empty.errors)[0];
}

TEST(Loader, ErrorsComeInFileOrder) {
  auto result = parseConfiguration(adapterDoc(R"(multiKueue:
  origin: "a/b"
  gcInterval: -1m
webhook:
  port: 0
namespace: Bad_NS
)"));
  EXPECT_EQ(test::paths(result.errors),
            (std::vector<std::string>{"multiKueue.origin", "multiKueue.gcInterval", "webhook.port", "namespace"}));
}

TEST(Loader, ResultHoldsNoConfigWhenThereAreErrors) {
  auto result = parseConfiguration(adapterDoc("webhook: {port: 0}\n"));
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.config.has_value());
}

// placement: the built-in OCM placement admission check controller, off unless enabled; an
// AdapterConfiguration section only (Kueue's Configuration has no such key).
struct PlacementSectionCase {
  std::string name;
  std::string doc;
  bool ok;
  bool enabled;
  std::vector<std::string> errorPaths;
};

std::vector<PlacementSectionCase> placementSectionCases() {
  const std::vector<PlacementSectionCase> cases = {
      {"absent: off", adapterDoc(""), true, false, {}},
      {"enabled", adapterDoc("placement: {enabled: true}\n"), true, true, {}},
      {"disabled", adapterDoc("placement: {enabled: false}\n"), true, false, {}},
      {"unknown key refused",
       adapterDoc("placement: {enabled: true, namespace: x}\n"),
       false,
       false,
       {"placement.namespace"}},
      {"not a boolean", adapterDoc("placement: {enabled: maybe}\n"), false, false, {"placement.enabled"}},
      {"not in Kueue's Configuration", kueueDoc("placement: {enabled: true}\n"), false, false, {"placement"}},
  };
  return cases;
}

MKA_TABLE_TEST(Loader, PlacementSection, PlacementSectionCase, placementSectionCases()) {
  const PlacementSectionCase& c = testCase();
  auto result = parseConfiguration(c.doc);
  ASSERT_EQ(result.ok(), c.ok) << joinErrors(result.errors);
  if (c.ok) {
    EXPECT_EQ(result.config->placement.enabled, c.enabled);
  } else {
    EXPECT_EQ(test::paths(result.errors), c.errorPaths);
  }
}

}  // namespace
}  // namespace mka::config
