// Which configuration changes restart the dispatch loop on a reload.
#include "mka/app/dispatch_runner.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace mka::app {
namespace {

using namespace std::chrono_literals;

config::Configuration configWithOneFramework() {
  config::Configuration c;
  c.multiKueue.externalFrameworks.push_back(
      {"PipelineRun.v1.tekton.dev", {"tekton.dev", "v1", "PipelineRun"}, {}, true});
  return c;
}

struct SettingChange {
  std::string name;
  std::function<void(config::Configuration&)> apply;
};

TEST(SameDispatchSettings, EverySettingTheDispatcherIsBuiltFromRestartsIt) {
  const std::vector<SettingChange> changes = {
      {"namespace", [](auto& c) { c.namespace_ = "batch-system"; }},
      {"dispatch.enabled", [](auto& c) { c.dispatch.enabled = false; }},
      {"dispatch.admissionCheckControllerName",
       [](auto& c) { c.dispatch.admissionCheckControllerName = "kueue.x-k8s.io/multikueue"; }},
      {"dispatch.workloadConcurrency", [](auto& c) { c.dispatch.workloadConcurrency = 3; }},
      {"clientConnection.qps", [](auto& c) { c.clientConnection.qps = 5; }},
      {"clientConnection.burst", [](auto& c) { c.clientConnection.burst = 7; }},
      {"a framework added",
       [](auto& c) {
         c.multiKueue.externalFrameworks.push_back(
             {"Workflow.v1alpha1.argoproj.io", {"argoproj.io", "v1alpha1", "Workflow"}, {}, false});
       }},
      {"a framework's managedBy", [](auto& c) { c.multiKueue.externalFrameworks[0].managedBy.path = "spec.x"; }},
      {"a framework's remoteCopy.removeFields",
       [](auto& c) { c.multiKueue.externalFrameworks[0].remoteCopy.removeFields = {"/spec/timeouts"}; }},
      {"a framework's remoteCopy.patches",
       [](auto& c) {
         c.multiKueue.externalFrameworks[0].remoteCopy.patches =
             nlohmann::json::parse(R"([{"op": "remove", "path": "/spec/timeouts"}])");
       }},
      {"a framework's remoteStatus.exclude",
       [](auto& c) { c.multiKueue.externalFrameworks[0].statusExclude = {"/childReferences"}; }},
      {"a framework's syncDependencies", [](auto& c) { c.multiKueue.externalFrameworks[0].syncDependencies = true; }},
      {"a framework's dependencies",
       [](auto& c) {
         c.multiKueue.externalFrameworks[0].dependencies = {{"Secret", "spec.credentials"}};
       }},
      {"multiKueue.gcInterval", [](auto& c) { c.multiKueue.gcInterval = 5min; }},
      {"multiKueue.origin", [](auto& c) { c.multiKueue.origin = "eu-manager"; }},
      {"multiKueue.workerLostTimeout", [](auto& c) { c.multiKueue.workerLostTimeout = 1h; }},
      {"multiKueue.dispatcherName",
       [](auto& c) { c.multiKueue.dispatcherName = "kueue.x-k8s.io/multikueue-dispatcher-incremental"; }},
      {"an integrated kind added",
       [](auto& c) {
         c.integrations.frameworks.push_back(*config::integrationProfile({"argoproj.io", "v1alpha1", "Workflow"}));
       }},
      {"multiKueue.clusterProfile set", [](auto& c) { c.multiKueue.clusterProfile = config::ClusterProfileAccess{}; }},
      {"placement.enabled", [](auto& c) { c.placement.enabled = true; }},
  };
  const auto running = configWithOneFramework();
  EXPECT_TRUE(sameDispatchSettings(running, configWithOneFramework()));
  // The registry keeps the exec plugins it was given: a provider changed by a reload restarts it.
  auto withProvider = configWithOneFramework();
  withProvider.multiKueue.clusterProfile = config::ClusterProfileAccess{};
  withProvider.multiKueue.clusterProfile->accessProviders.push_back({"ocm", {"/bin/cp-creds"}});
  auto otherCommand = withProvider;
  otherCommand.multiKueue.clusterProfile->accessProviders[0].execConfig.command = "/usr/local/bin/cp-creds";
  EXPECT_FALSE(sameDispatchSettings(withProvider, otherCommand)) << "a provider's command changed";
  for (const auto& change : changes) {
    auto next = configWithOneFramework();
    change.apply(next);
    EXPECT_FALSE(sameDispatchSettings(running, next)) << change.name << " changed but the dispatcher would go on";
  }
}

TEST(SameDispatchSettings, WebhookProbeMetricsAndElectionSettingsDoNotRestartIt) {
  const std::vector<SettingChange> changes = {
      {"webhook.port", [](auto& c) { c.webhook.port = 10443; }},
      {"healthProbeBindAddress", [](auto& c) { c.healthProbeBindAddress = ":9081"; }},
      {"metricsBindAddress", [](auto& c) { c.metricsBindAddress = "0"; }},
      {"managedByDefaulting", [](auto& c) { c.managedByDefaulting = config::ManagedByDefaulting::Never; }},
      {"leaderElection.leaseDuration", [](auto& c) { c.leaderElection.leaseDuration = 30s; }},
  };
  const auto running = configWithOneFramework();
  for (const auto& change : changes) {
    auto next = configWithOneFramework();
    change.apply(next);
    EXPECT_TRUE(sameDispatchSettings(running, next)) << change.name << " changed and the dispatcher would restart";
  }
}

}  // namespace
}  // namespace mka::app
