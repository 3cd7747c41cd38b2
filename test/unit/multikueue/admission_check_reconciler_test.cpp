// The AdmissionCheck reconciler (KUEUE-MULTIKUEUE.md §4): its decision from objects in memory,
// and its writes against a sandbox manager with the cluster registry's real connection state.
// Both have worker1 connected, worker2 known but not connected (in the sandbox its Secret is
// missing), ghost and phantom without a MultiKueueCluster.
#include "mka/multikueue/admission_check_reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/api_error.h"
#include "sandbox_fixture.h"
#include "support/eventually.h"
#include "support/memory_reader.h"
#include "support/table_test.h"
#include "support/thrown.h"

namespace mka::multikueue {

using controller::Result;
namespace {

using nlohmann::json;
using std::chrono::minutes;

const std::string kOurs = "multikueue-adapter.dev/dispatcher";

json parameters(const std::string& name, const std::string& group = "kueue.x-k8s.io",
                const std::string& kind = "MultiKueueConfig") {
  return {{"apiGroup", group}, {"kind", kind}, {"name", name}};
}

json configObject(const std::string& name, const std::vector<std::string>& clusters) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "MultiKueueConfig"},
          {"metadata", {{"name", name}}},
          {"spec", {{"clusters", clusters}}}};
}
// `params` null: no spec.parameters.
json checkObject(const std::string& name, const json& params, const std::string& controller = kOurs) {
  json spec = {{"controllerName", controller}};
  if (!params.is_null()) spec["parameters"] = params;
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "AdmissionCheck"},
          {"metadata", {{"name", name}}},
          {"spec", spec}};
}
json clusterObject(const std::string& name) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "MultiKueueCluster"}, {"metadata", {{"name", name}}}};
}
// The registry's state in the fixture below: worker1 connected, worker2 not.
bool connectedWorker1(const std::string& cluster) { return cluster == "worker1"; }

class AdmissionCheckReconcilerTest : public fixture::MultiKueueSandbox {
 protected:
  AdmissionCheckReconcilerTest() {
    createSecretCluster("worker1", worker1.kubeconfig());
    createCluster("worker2", {{"kubeConfig", {{"location", "worker2-missing"}}}});
    startRegistry(registryOptions());
    EXPECT_TRUE(connect("worker1"));
    EXPECT_EQ(registry->reconcile("worker2"), Result::done());
    reconciler = std::make_unique<AdmissionCheckReconciler>(*managerClient, *objects, *registry, clock,
                                                            AdmissionCheckReconciler::Options{kOurs});
  }

  void createConfig(const std::string& name, const std::vector<std::string>& clusters) {
    manager.api().create(fixture::kConfigs, configObject(name, clusters));
  }
  void setConfigClusters(const std::string& name, const std::vector<std::string>& clusters) {
    manager.api().patch(fixture::named(fixture::kConfigs, name), "application/merge-patch+json",
                        json{{"spec", {{"clusters", clusters}}}}.dump());
  }
  void createCheck(const std::string& name, const json& params, const std::string& controller = kOurs) {
    manager.api().create(fixture::kChecks, checkObject(name, params, controller));
  }
  json check(const std::string& name) { return manager.api().get(fixture::named(fixture::kChecks, name)); }
  json checkActive(const std::string& name) {
    for (const auto& c : check(name).value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Active") return c;
    return nullptr;
  }

  std::unique_ptr<AdmissionCheckReconciler> reconciler;
};

struct ActiveCase {
  std::string name;
  std::vector<std::string> clusters;
  std::string status, reason, message;
};
std::vector<ActiveCase> activeCases() {
  return {
      {"all-usable", {"worker1"}, "True", "Active", "The admission check is active"},
      {"some-usable",
       {"worker1", "worker2", "ghost"},
       "True",
       "SomeActiveClusters",
       "Missing clusters: [ghost], Inactive clusters: [worker2]"},
      {"none-usable",
       {"worker2", "ghost"},
       "False",
       "NoUsableClusters",
       "Missing clusters: [ghost], Inactive clusters: [worker2]"},
      {"only-missing", {"ghost", "phantom"}, "False", "NoUsableClusters", "Missing clusters: [ghost phantom]"},
      {"only-inactive", {"worker1", "worker2"}, "True", "SomeActiveClusters", "Inactive clusters: [worker2]"},
  };
}
// What the check says, decided from the objects alone: an in-memory reader, the same clusters.
MKA_TABLE_TEST(AdmissionCheckActiveCondition, FollowsTheStateOfTheConfigsClusters, ActiveCase, activeCases()) {
  const auto& c = testCase();
  const auto check = checkObject(c.name, parameters(c.name));
  const test::MemoryReader objects{configObject(c.name, c.clusters), clusterObject("worker1"), clusterObject("worker2"),
                                   check};
  const auto active = activeConditionOf(check, objects, connectedWorker1);
  EXPECT_EQ(active.type, "Active");
  EXPECT_EQ(active.status, c.status);
  EXPECT_EQ(active.reason, c.reason);
  EXPECT_EQ(active.message, c.message);
}

// The reconciler writes that decision with the check's generation and the clock's time.
TEST_F(AdmissionCheckReconcilerTest, WritesTheDecisionWithTheChecksGenerationAndTheTime) {
  createConfig("config", {"worker1", "worker2", "ghost"});
  createCheck("ac", parameters("config"));
  EXPECT_EQ(reconciler->reconcile("ac"), Result::done());
  const auto active = checkActive("ac");
  EXPECT_EQ(active["status"], "True");
  EXPECT_EQ(active["reason"], "SomeActiveClusters");
  EXPECT_EQ(active["message"], "Missing clusters: [ghost], Inactive clusters: [worker2]");
  EXPECT_EQ(active["observedGeneration"], check("ac")["metadata"]["generation"]);
  EXPECT_EQ(active["lastTransitionTime"], toRfc3339(clock.now()));
}

// A missing config is written as BadConfig too.
TEST_F(AdmissionCheckReconcilerTest, WritesBadConfig) {
  createCheck("ac", parameters("gone"));
  EXPECT_EQ(reconciler->reconcile("ac"), Result::done());
  const auto active = checkActive("ac");
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], "BadConfig");
  EXPECT_EQ(active["message"],
            "Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io \"gone\" not found");
}

struct BadConfigCase {
  std::string name;
  json params;
  std::string error;
};
std::vector<BadConfigCase> badConfigCases() {
  return {
      {"no-parameters", nullptr, "missing parameters reference"},
      {"wrong-group", parameters("c", "example.dev"),
       "wrong group \"example.dev\", expecting \"kueue.x-k8s.io\": bad parameters reference"},
      {"wrong-kind", parameters("c", "kueue.x-k8s.io", "ConfigMap"),
       "wrong kind \"ConfigMap\", expecting \"MultiKueueConfig\": bad parameters reference"},
      {"missing-config", parameters("gone"), "multikueueconfigs.kueue.x-k8s.io \"gone\" not found"},
  };
}

TEST_F(AdmissionCheckReconcilerTest, AnEmptyConfigNameIsBadParametersAndRefusedByTheApiServer) {
  // An empty name is Kueue's error too, but kube-apiserver refuses such a check before any
  // controller sees it (the CRD's minLength and pattern on spec.parameters.name).
  EXPECT_EQ(multiKueueConfigOf({{"spec", {{"parameters", parameters("")}}}}).error,
            "empty name: bad parameters reference");
  EXPECT_THAT(test::messageOf<sandbox::ApiError>([&] { createCheck("empty-name", parameters("")); }),
              ::testing::HasSubstr("spec.parameters.name in body should be at least 1 chars long"));
}

MKA_TABLE_TEST(AdmissionCheckActiveCondition, BadParametersAndAMissingConfigAreBadConfig, BadConfigCase,
               badConfigCases()) {
  const auto& c = testCase();
  const auto check = checkObject(c.name, c.params);
  const test::MemoryReader objects{clusterObject("worker1"), check};
  EXPECT_EQ(multiKueueConfigOf(check).error, c.name == "missing-config" ? "" : c.error);
  const auto active = activeConditionOf(check, objects, connectedWorker1);
  EXPECT_EQ(active.status, "False");
  EXPECT_EQ(active.reason, "BadConfig");
  EXPECT_EQ(active.message, "Cannot load the AdmissionChecks parameters: " + c.error);
  if (c.name == "missing-config") {
    EXPECT_EQ(multiKueueConfigOf(check).name, "gone");
  }
}

TEST_F(AdmissionCheckReconcilerTest, ChecksOfOtherControllersAndMissingChecksAreLeftAlone) {
  createConfig("config", {"worker1"});
  createCheck("kueues", parameters("config"), "kueue.x-k8s.io/multikueue");
  const auto version = check("kueues")["metadata"]["resourceVersion"];
  EXPECT_EQ(reconciler->reconcile("kueues"), Result::done());
  EXPECT_EQ(check("kueues")["metadata"]["resourceVersion"], version);
  EXPECT_TRUE(checkActive("kueues").is_null());
  EXPECT_EQ(reconciler->reconcile("no-such-check"), Result::done());
}

TEST_F(AdmissionCheckReconcilerTest, WritesOnlyChangesAndMovesTheTransitionTimeOnlyWithTheStatus) {
  createConfig("config", {"worker1", "worker2", "ghost"});
  createCheck("ac", parameters("config"));
  const auto created = clock.now();
  reconciler->reconcile("ac");
  const auto version = check("ac")["metadata"]["resourceVersion"];
  clock.advance(minutes{1});
  reconciler->reconcile("ac");
  EXPECT_EQ(check("ac")["metadata"]["resourceVersion"], version) << "unchanged: not written";

  setConfigClusters("config", {"worker1", "ghost"});
  reconciler->reconcile("ac");
  auto active = checkActive("ac");
  EXPECT_EQ(active["message"], "Missing clusters: [ghost]");
  EXPECT_EQ(active["lastTransitionTime"], toRfc3339(created)) << "still True";

  setConfigClusters("config", {"ghost"});
  reconciler->reconcile("ac");
  active = checkActive("ac");
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], "NoUsableClusters");
  EXPECT_EQ(active["lastTransitionTime"], toRfc3339(clock.now()));
}

TEST_F(AdmissionCheckReconcilerTest, AWorkerThatDisconnectsBecomesInactive) {
  createConfig("config", {"worker1"});
  createCheck("ac", parameters("config"));
  reconciler->reconcile("ac");
  EXPECT_EQ(checkActive("ac")["reason"], "Active");

  worker1.setUnreachable(true);
  ASSERT_TRUE(test::eventually([&] { return registry->connected("worker1") == nullptr; }));
  reconciler->reconcile("ac");
  const auto active = checkActive("ac");
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], "NoUsableClusters");
  EXPECT_EQ(active["message"], "Inactive clusters: [worker1]");
}

}  // namespace
}  // namespace mka::multikueue
