// The configuration files in test/fixtures/config, loaded from disk as the adapter would.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config_test_util.h"
#include "mka/config/loader.h"
#include "support/table_test.h"
#include "support/yaml_file.h"

namespace mka::config {
namespace {

using namespace std::chrono_literals;
using mka::test::readYamlFile;

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(MKA_FIXTURES_DIR) / "config" / name;
}

Configuration load(const std::string& name) {
  auto result = loadConfigurationFile(fixture(name));
  EXPECT_TRUE(result.ok()) << name << ":\n" << joinErrors(result.errors);
  return result.config.value_or(Configuration{});
}

TEST(Fixtures, SpecExample) {
  auto c = load("adapter-spec-example.yaml");
  EXPECT_EQ(c.source, Configuration::Source::AdapterConfiguration);
  EXPECT_EQ(c.namespace_, "kueue-system");
  EXPECT_EQ(c.webhook.port, 9443);
  EXPECT_EQ(c.webhook.certDir, "/tmp/k8s-webhook-server/serving-certs");
  EXPECT_EQ(c.healthProbeBindAddress, ":8081");
  EXPECT_EQ(c.metricsBindAddress, ":8080");
  EXPECT_TRUE(c.leaderElection.leaderElect);
  EXPECT_EQ(c.leaderElection.resourceName, "multikueue-adapter");
  EXPECT_EQ(c.clientConnection.qps, 50);
  EXPECT_EQ(c.clientConnection.burst, 100);
  EXPECT_EQ(c.managedByDefaulting, ManagedByDefaulting::MultiKueueQueues);
  EXPECT_TRUE(c.dispatch.enabled);
  EXPECT_EQ(c.dispatch.admissionCheckControllerName, "multikueue-adapter.dev/dispatcher");
  ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 2u);
  const auto& tekton = c.multiKueue.externalFrameworks[0];
  EXPECT_EQ(tekton.gvk, (api::GroupVersionKind{"tekton.dev", "v1", "PipelineRun"}));
  EXPECT_EQ(tekton.managedBy.fieldPath(), "spec.managedBy");
  EXPECT_TRUE(tekton.managedByFromProfile);
  const auto& argo = c.multiKueue.externalFrameworks[1];
  EXPECT_EQ(argo.managedBy.fieldPath(), "metadata.labels[workflows.argoproj.io/controller-instanceid]");
  EXPECT_EQ(argo.managedBy.value, "multikueue");
  EXPECT_FALSE(argo.managedByFromProfile);
  EXPECT_EQ(c.multiKueue.gcInterval, 1min);
  EXPECT_EQ(c.multiKueue.origin, "multikueue");
  EXPECT_EQ(c.multiKueue.workerLostTimeout, 15min);
  EXPECT_EQ(c.multiKueue.dispatcherName, "kueue.x-k8s.io/multikueue-dispatcher-all-at-once");
}

TEST(Fixtures, EveryKeySet) {
  auto c = load("adapter-all-keys.yaml");
  EXPECT_EQ(c.namespace_, "batch-system");
  EXPECT_EQ(c.webhook.host, "0.0.0.0");
  EXPECT_EQ(c.webhook.port, 10443);
  EXPECT_EQ(c.webhook.certDir, "/etc/multikueue-adapter/certs");
  EXPECT_EQ(c.webhook.certName, "serving.crt");
  EXPECT_EQ(c.webhook.keyName, "serving.key");
  EXPECT_EQ(c.healthProbeBindAddress, "127.0.0.1:9081");
  EXPECT_EQ(c.metricsBindAddress, "[::]:9080");
  EXPECT_FALSE(c.leaderElection.leaderElect);
  EXPECT_EQ(c.leaderElection.resourceName, "adapter-lock");
  EXPECT_EQ(c.leaderElection.resourceNamespace, "leases");
  EXPECT_EQ(c.leaderElection.leaseDuration, 30s);
  EXPECT_EQ(c.leaderElection.renewDeadline, 20s);
  EXPECT_EQ(c.leaderElection.retryPeriod, 5s);
  EXPECT_EQ(c.clientConnection.qps, 12.5);
  EXPECT_EQ(c.clientConnection.burst, 25);
  EXPECT_EQ(c.managedByDefaulting, ManagedByDefaulting::QueueLabeled);
  EXPECT_TRUE(c.dispatch.enabled);
  EXPECT_EQ(c.dispatch.admissionCheckControllerName, "kueue.x-k8s.io/multikueue");
  EXPECT_EQ(c.dispatch.workloadConcurrency, 12);
  ASSERT_EQ(c.multiKueue.externalFrameworks.size(), 4u);
  EXPECT_EQ(c.multiKueue.externalFrameworks[1].managedBy.path, "spec.runPolicy.managedBy");
  EXPECT_TRUE(c.multiKueue.externalFrameworks[2].managedByFromProfile);
  EXPECT_EQ(c.multiKueue.externalFrameworks[3].managedBy, ManagedByLocation{});
  EXPECT_EQ(c.multiKueue.gcInterval, 150s);
  EXPECT_EQ(c.multiKueue.origin, "manager-eu-1");
  EXPECT_EQ(c.multiKueue.workerLostTimeout, 1h);
  EXPECT_EQ(c.multiKueue.dispatcherName, "kueue.x-k8s.io/multikueue-dispatcher-incremental");
}

TEST(Fixtures, Minimal) {
  auto c = load("adapter-minimal.yaml");
  EXPECT_EQ(c.multiKueue.externalFrameworks.size(), 2u);
  EXPECT_EQ(c.webhook.port, 9443);
}

TEST(Fixtures, KueueConfigurations) {
  auto v2 = load("kueue-v1beta2.yaml");
  EXPECT_EQ(v2.source, Configuration::Source::KueueConfiguration);
  EXPECT_EQ(v2.multiKueue.origin, "eu-manager");
  EXPECT_EQ(v2.multiKueue.gcInterval, 30s);
  EXPECT_EQ(v2.multiKueue.workerLostTimeout, 10min);
  ASSERT_EQ(v2.multiKueue.externalFrameworks.size(), 2u);
  EXPECT_EQ(v2.multiKueue.externalFrameworks[1].managedBy.labelKey, "workflows.argoproj.io/controller-instanceid");
  EXPECT_EQ(v2.dispatch.workloadConcurrency, 5);  // controller.groupKindConcurrency["Workload.kueue.x-k8s.io"]

  auto v1 = load("kueue-v1beta1.yaml");
  EXPECT_EQ(v1.source, Configuration::Source::KueueConfiguration);
  EXPECT_TRUE(v1.multiKueue.externalFrameworks.empty());
  EXPECT_EQ(v1.multiKueue.workerLostTimeout, 15min);
  EXPECT_EQ(v1.dispatch.workloadConcurrency, 8);  // no controller section: the default
}

TEST(Fixtures, ConfigMapDataParsesWithItsPrefix) {
  // A ConfigMap is not itself a configuration; its data key is, and errors in it carry the key.
  auto asFile = loadConfigurationFile(fixture("configmap-adapter.yaml"));
  ASSERT_FALSE(asFile.ok());
  EXPECT_EQ(test::rendered(asFile.errors),
            std::vector<std::string>{"is a ConfigMap manifest, not a configuration: validate the configuration inside "
                                     "it: save its data key (such as config.yaml) to a file and pass that file"});

  auto configMap = readYamlFile(fixture("configmap-adapter.yaml"));
  auto text = configMap["data"]["config.yaml"].get<std::string>();
  auto good = parseConfiguration(text, "data[config.yaml].");
  EXPECT_TRUE(good.ok()) << joinErrors(good.errors);
  auto bad = parseConfiguration(text + "colour: blue\n", "data[config.yaml].");
  EXPECT_EQ(test::paths(bad.errors), std::vector<std::string>{"data[config.yaml].colour"});
}

struct BadFilesCase {
  std::string name;
  std::string file;
  std::vector<std::string> paths;
  std::string firstContains;
};

std::vector<BadFilesCase> badFilesCases() {
  const std::vector<BadFilesCase> cases = {
      {"Kueue's doc spelling", "kueue-multikueue-misspelled.yaml", {"multikueue"}, "did you mean \"multiKueue\"?"},
      {"five mistakes",
       "five-mistakes.yaml",
       {"webhook.port", "managedByDefaulting", "multiKueue.externalFrameworks[0].name", "multiKueue.gcInterval",
        "multiKueue.origin"},
       "webhook.port: must be between 1 and 65535, not 70000"},
      {"unknown keys",
       "adapter-unknown-keys.yaml",
       {"namepsace", "webhook.prot", "multikueue", "colour"},
       "namepsace: unknown field: did you mean \"namespace\"?"},
      {"empty", "empty.yaml", {""}, "file is empty"},
      {"syntax error", "syntax-error.yaml", {""}, "invalid YAML at line 5, column 3"},
  };
  return cases;
}

MKA_TABLE_TEST(Fixtures, BadFiles, BadFilesCase, badFilesCases()) {
  const BadFilesCase& c = testCase();
  auto result = loadConfigurationFile(fixture(c.file));
  EXPECT_EQ(test::paths(result.errors), c.paths) << joinErrors(result.errors);
  ASSERT_FALSE(result.errors.empty());
  EXPECT_NE(result.errors[0].toString().find(c.firstContains), std::string::npos) << result.errors[0].toString();
}

TEST(Fixtures, FiveMistakesEachHaveAProblemAndAFix) {
  auto result = loadConfigurationFile(fixture("five-mistakes.yaml"));
  ASSERT_EQ(result.errors.size(), 5u);
  for (const auto& e : result.errors) {
    SCOPED_TRACE(e.toString());
    EXPECT_FALSE(e.path.empty());
    EXPECT_FALSE(e.problem.empty());
    EXPECT_FALSE(e.fix.empty());
  }
}

// docs/configuration.md shows the five-mistakes output; keep it true.
TEST(Fixtures, ReferenceDocShowsTheRealFiveMistakesOutput) {
  std::ifstream in(std::filesystem::path(MKA_SOURCE_DIR) / "docs" / "configuration.md");
  ASSERT_TRUE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  auto result = loadConfigurationFile(fixture("five-mistakes.yaml"));
  ASSERT_EQ(result.errors.size(), 5u);
  for (const auto& e : result.errors)
    EXPECT_NE(doc.str().find("\n" + e.toString() + "\n"), std::string::npos) << e.toString();
}

TEST(Fixtures, UnreadableFiles) {
  auto missing = loadConfigurationFile(fixture("does-not-exist.yaml"));
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].path, fixture("does-not-exist.yaml").string());
  EXPECT_EQ(missing.errors[0].problem, "cannot read the file: it does not exist");

  auto directory = loadConfigurationFile(fixture(""));
  ASSERT_EQ(directory.errors.size(), 1u);
  EXPECT_EQ(directory.errors[0].problem, "is a directory, not a file");

  // A device has no size to check first: the read itself stops past the limit.
  auto endless = loadConfigurationFile("/dev/zero");
  ASSERT_EQ(endless.errors.size(), 1u);
  EXPECT_EQ(endless.errors[0].problem, "is larger than 1 MiB");
}

}  // namespace
}  // namespace mka::config
