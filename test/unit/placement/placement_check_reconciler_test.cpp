#include "mka/placement/placement_check_reconciler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/kueue.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/placement/api.h"
#include "mka/placement/workload_check_reconciler.h"
#include "mka/sandbox/sandbox.h"
#include "placement_sandbox.h"
#include "support/table_test.h"

namespace mka::placement {
namespace {

using nlohmann::json;

using namespace fixture;

struct NameCase {
  std::string name;
  const api::GroupVersionKind* kind;
  std::string objectName;
  bool generated;  // by Placement p1
};
std::vector<NameCase> nameCases() {
  return {
      {"the MultiKueueConfig of the Placement's name", &api::kMultiKueueConfigGvk, "p1", true},
      {"a MultiKueueConfig of another name", &api::kMultiKueueConfigGvk, "p1-cluster1", false},
      {"a MultiKueueCluster <placement>-<cluster>", &api::kMultiKueueClusterGvk, "p1-cluster1", true},
      {"a MultiKueueCluster of another Placement whose name starts alike", &api::kMultiKueueClusterGvk, "p10-cluster1",
       false},
      {"a MultiKueueCluster of the Placement's name alone", &api::kMultiKueueClusterGvk, "p1", false},
      {"a MultiKueueCluster with an empty cluster part", &api::kMultiKueueClusterGvk, "p1-", false},
      {"another kind", &api::kAdmissionCheckGvk, "p1", false},
  };
}

// What wakes a Placement's check when an object of that name changes, ours or a user's.
MKA_TABLE_TEST(PlacementNames, APlacementWouldGenerateItsConfigAndItsClustersNames, NameCase, nameCases()) {
  const auto& c = testCase();
  EXPECT_EQ(wouldGenerate("p1", *c.kind, c.objectName), c.generated);
}

TEST(PlacementNames, TheGeneratedObjectsCarryTheGeneratedNames) {
  EXPECT_EQ(generatedConfigName("p1"), "p1");
  EXPECT_EQ(generatedClusterName("p1", "cluster1"), "p1-cluster1");
  EXPECT_EQ(generatedCluster("p1", "cluster1", false)["metadata"]["name"], generatedClusterName("p1", "cluster1"));
  EXPECT_TRUE(wouldGenerate("p1", api::kMultiKueueClusterGvk, generatedClusterName("p1", "cluster1")));
  EXPECT_TRUE(wouldGenerate("p1", api::kMultiKueueConfigGvk, generatedConfigName("p1")));
}

// Every Active reason OCM's controller writes that the sandbox can bring about, one case each.
TEST_F(PlacementSandbox, ActiveConditionReasons) {
  struct Case {
    std::string name;
    std::function<void()> setup;
    std::string status, reason, message;
  };
  const std::vector<Case> cases = {
      {"no Placement", [] {}, "False", "PlacementNotFound", "Placement p1 not found"},
      {"Placement without decisions", [&] { placement("p1"); }, "False", "NoClustersAvailable",
       "No clusters available for placement p1"},
      {"decided clusters",
       [&] {
         decision("p1", 1, {"cluster2", "cluster1"});
       },
       "True", "Active", "MultiKueueConfig p1 and MultiKueueClusters are generated successfully"},
      {"a user's MultiKueueConfig of the same name",
       [&] {
         manager.api().remove(named(kConfigs, "p1"));
         manager.api().create(kConfigs, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                         {"kind", "MultiKueueConfig"},
                                         {"metadata", {{"name", "p1"}}},
                                         {"spec", {{"clusters", {"mine"}}}}});
       },
       "False", "MultiKueueConfigError",
       "Failed to create/update multi kueue config p1: MultiKueueConfig p1 exists and was not generated for Placement "
       "p1 (label multikueue-adapter.dev/placement is not \"p1\"): rename or delete it, or rename the Placement"},
      {"a user's MultiKueueCluster of a generated name",
       [&] {
         manager.api().remove(named(kConfigs, "p1"));
         manager.api().remove(named(kClusters, "p1-cluster1"));
         manager.api().create(kClusters, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                          {"kind", "MultiKueueCluster"},
                                          {"metadata", {{"name", "p1-cluster1"}}},
                                          {"spec", {{"clusterSource", {{"kubeConfig", {{"location", "mine"}}}}}}}});
       },
       "False", "MultiKueueClusterError",
       "Failed to create/update multi kueue cluster p1-cluster1: MultiKueueCluster p1-cluster1 exists and was not "
       "generated for Placement p1 (label multikueue-adapter.dev/placement is not \"p1\"): rename or delete it, or "
       "rename the Placement"},
  };
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  auto r = reconciler();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    c.setup();
    try {
      converge(r, "ac1");
    } catch (const std::exception&) {  // the errors that retry also throw, after the condition
    }
    const auto cond = active("ac1");
    ASSERT_FALSE(cond.is_null());
    EXPECT_EQ(cond["status"], c.status);
    EXPECT_EQ(cond["reason"], c.reason);
    EXPECT_EQ(cond["message"], c.message);
  }
  // The user's objects are untouched.
  EXPECT_EQ(manager.api().get(named(kClusters, "p1-cluster1"))["spec"]["clusterSource"]["kubeConfig"]["location"],
            "mine");
}

TEST_F(PlacementSandbox, ParametersThatNameNoPlacementArePlacementError) {
  auto check = placementCheck("ac1", "p1");
  check["spec"]["parameters"]["kind"] = "MultiKueueConfig";
  manager.api().create(kChecks, check);
  auto r = reconciler();
  converge(r, "ac1");
  const auto cond = active("ac1");
  EXPECT_EQ(cond["reason"], "PlacementError");
  EXPECT_EQ(cond["message"],
            "AdmissionCheck ac1: spec.parameters must name a Placement (apiGroup: cluster.open-cluster-management.io, "
            "kind: Placement, name: <placement>), found apiGroup \"cluster.open-cluster-management.io\", kind "
            "\"MultiKueueConfig\", name \"p1\"");
}

TEST_F(PlacementSandbox, GeneratedObjectsFollowTheDecisions) {
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  placement("p1");
  // A MultiKueueCluster a user wrote, whatever its name, is never deleted.
  manager.api().create(kClusters, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                   {"kind", "MultiKueueCluster"},
                                   {"metadata", {{"name", "user-cluster"}}},
                                   {"spec", {{"clusterSource", {{"kubeConfig", {{"location", "mine"}}}}}}}});
  auto r = reconciler();
  struct Step {
    std::string name;
    std::vector<std::vector<std::string>> decisions;  // one PlacementDecision per entry
    std::vector<std::string> config;                  // empty: no MultiKueueConfig
    std::vector<std::string> clusters;                // every MultiKueueCluster on the manager
  };
  const std::vector<Step> steps = {
      {"two decided",
       {{"cluster1", "cluster2"}},
       {"p1-cluster1", "p1-cluster2"},
       {"p1-cluster1", "p1-cluster2", "user-cluster"}},
      {"decision changes",
       {{"cluster2", "cluster3"}},
       {"p1-cluster2", "p1-cluster3"},
       {"p1-cluster2", "p1-cluster3", "user-cluster"}},
      {"two decision objects are one set",
       {{"cluster2"}, {"cluster4"}},
       {"p1-cluster2", "p1-cluster4"},
       {"p1-cluster2", "p1-cluster4", "user-cluster"}},
      {"nothing decided", {{}, {}}, {}, {"user-cluster"}},
  };
  for (const auto& s : steps) {
    SCOPED_TRACE(s.name);
    for (std::size_t i = 0; i < s.decisions.size(); ++i) decision("p1", static_cast<int>(i + 1), s.decisions[i]);
    converge(r, "ac1");
    EXPECT_EQ(clusterNames(), s.clusters);
    if (s.config.empty()) {
      EXPECT_FALSE(exists(named(kConfigs, "p1")));
    } else {
      EXPECT_EQ(configClusters("p1"), s.config);
    }
  }
}

// An undecided worker's MultiKueueCluster stays (out of the MultiKueueConfig) while a Workload
// runs there or has copies there, and for kFinishedGrace after it finished: the dispatch loop
// needs the connection to follow the job and remove its copies.
TEST_F(PlacementSandbox, AnUndecidedWorkersClusterIsKeptWhileWorkloadsNeedIt) {
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  placement("p1");
  auto r = reconciler();
  decision("p1", 1, {"cluster1", "cluster2", "cluster3"});
  converge(r, "ac1");

  // wl1 runs on cluster1; wl2 waits with copies on cluster2 and cluster3.
  const auto workload = [&](const std::string& name, const json& status) { putWorkload(name, status); };

  const json reserved = {{"type", "QuotaReserved"},
                         {"status", "True"},
                         {"reason", "QuotaReserved"},
                         {"message", "reserved"},
                         {"lastTransitionTime", toRfc3339(clock.now())}};
  workload("wl1", {{"conditions", {reserved}}, {"clusterName", "p1-cluster1"}});
  workload("wl2", {{"conditions", {reserved}}, {"nominatedClusterNames", {"p1-cluster2", "p1-cluster3"}}});

  struct Step {
    std::string name;
    std::function<void()> change;
    std::vector<std::string> clusters;  // every MultiKueueCluster after the reconcile
    std::vector<std::string> config;
    std::string keptNote;  // the end of the Active message ("" = nothing kept)
    bool recheck = false;  // the reconcile asks to come back (a finished Workload's grace)
  };
  const std::string note = "; no longer decided, kept until the Workloads admitted or waiting there are done: ";
  const std::vector<Step> steps = {
      {"cluster1 and cluster2 undecided: kept for wl1 and wl2",
       [&] {
         decision("p1", 1, {"cluster3", "cluster4"});
       },
       {"p1-cluster1", "p1-cluster2", "p1-cluster3", "p1-cluster4"},
       {"p1-cluster3", "p1-cluster4"},
       note + "p1-cluster1, p1-cluster2"},
      {"wl2's copies moved to the decided workers: cluster2 goes",
       [&] {
         workload("wl2", {{"conditions", {reserved}}, {"nominatedClusterNames", {"p1-cluster3", "p1-cluster4"}}});
       },
       {"p1-cluster1", "p1-cluster3", "p1-cluster4"},
       {"p1-cluster3", "p1-cluster4"},
       note + "p1-cluster1"},
      {"wl1 finished: kept for the grace period",
       [&] {
         json finished = {{"type", "Finished"},
                          {"status", "True"},
                          {"reason", "Succeeded"},
                          {"message", "done"},
                          {"lastTransitionTime", toRfc3339(clock.now())}};
         workload("wl1", {{"conditions", {reserved, finished}}, {"clusterName", "p1-cluster1"}});
       },
       {"p1-cluster1", "p1-cluster3", "p1-cluster4"},
       {"p1-cluster3", "p1-cluster4"},
       note + "p1-cluster1",
       true},
      {"the grace period over: deleted",
       [&] { clock.advance(PlacementCheckReconciler::kFinishedGrace); },
       {"p1-cluster3", "p1-cluster4"},
       {"p1-cluster3", "p1-cluster4"},
       ""},
  };
  for (const auto& step : steps) {
    SCOPED_TRACE(step.name);
    step.change();
    const auto result = r.reconcile("ac1");
    EXPECT_EQ(result.requeueAfter > std::chrono::nanoseconds::zero(), step.recheck);
    EXPECT_EQ(clusterNames(), step.clusters);
    EXPECT_EQ(configClusters("p1"), step.config);
    EXPECT_EQ(active("ac1")["message"],
              "MultiKueueConfig p1 and MultiKueueClusters are generated successfully" + step.keptNote);
  }
  EXPECT_TRUE(r.placementsKeepingFor(manager.api().get(named(kWorkloads, "wl1"))).empty());
}

struct ClusterSourceCase {
  std::string name;
  bool profiles;
  json source;
};
std::vector<ClusterSourceCase> clusterSourceCases() {
  return {
      {"profiles off: the kubeconfig Secret multikueue-<cluster>",
       false,
       {{"kubeConfig", {{"locationType", "Secret"}, {"location", "multikueue-cluster1"}}}}},
      {"profiles on: the ClusterProfile <cluster>", true, {{"clusterProfileRef", {{"name", "cluster1"}}}}},
  };
}

MKA_TABLE_TEST_F(PlacementSandbox, ClusterSourceIsASecretOrAClusterProfile, ClusterSourceCase, clusterSourceCases()) {
  const auto& c = testCase();
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  placement("p1");
  decision("p1", 1, {"cluster1"});
  auto r = reconciler(c.profiles);
  converge(r, "ac1");
  const auto cluster = manager.api().get(named(kClusters, "p1-cluster1"));
  EXPECT_EQ(cluster["spec"]["clusterSource"], c.source);
  EXPECT_EQ(cluster["metadata"]["labels"][std::string(kGeneratedForLabel)], "p1");
}

TEST_F(PlacementSandbox, FinalizerFirstThenCleanupOnDeletion) {
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  placement("p1");
  decision("p1", 1, {"cluster1"});
  manager.api().create(kClusters, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                   {"kind", "MultiKueueCluster"},
                                   {"metadata", {{"name", "user-cluster"}}},
                                   {"spec", {{"clusterSource", {{"kubeConfig", {{"location", "mine"}}}}}}}});
  auto r = reconciler();
  r.reconcile("ac1");
  const auto check = manager.api().get(named(kChecks, "ac1"));
  EXPECT_EQ(check["metadata"]["finalizers"], json::array({std::string(kFinalizer)}));
  EXPECT_FALSE(check.contains("status") && check["status"].contains("conditions")) << "the finalizer comes alone";
  EXPECT_EQ(clusterNames(), (std::vector<std::string>{"user-cluster"}));

  converge(r, "ac1");
  EXPECT_EQ(clusterNames(), (std::vector<std::string>{"p1-cluster1", "user-cluster"}));
  manager.api().remove(named(kChecks, "ac1"));
  ASSERT_TRUE(exists(named(kChecks, "ac1"))) << "held by the finalizer";
  r.reconcile("ac1");
  EXPECT_FALSE(exists(named(kChecks, "ac1")));
  EXPECT_FALSE(exists(named(kConfigs, "p1")));
  EXPECT_EQ(clusterNames(), (std::vector<std::string>{"user-cluster"}));
}

// Restart-safety: a second instance on the state the first converged to writes nothing.
TEST_F(PlacementSandbox, ASecondInstanceOnConvergedStateWritesNothing) {
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  placement("p1");
  decision("p1", 1, {"cluster1", "cluster2"});
  auto first = reconciler();
  converge(first, "ac1");
  const auto versions = [&] {
    std::vector<std::string> out;
    for (const auto& ref : {kChecks, kConfigs, kClusters}) {
      const auto list = manager.api().list(ref, {});
      for (const auto& o : list["items"]) out.push_back(o["metadata"]["resourceVersion"]);
    }
    return out;
  };
  const auto before = versions();
  auto second = reconciler();
  second.reconcile("ac1");
  EXPECT_EQ(versions(), before);
}

TEST_F(PlacementSandbox, WorkloadCheckTurnsReadyOnlyWhenActiveAndReserved) {
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  putWorkload(
      "wl1",
      {{"conditions",
        {{{"type", "QuotaReserved"},
          {"status", "True"},
          {"reason", "QuotaReserved"},
          {"message", "reserved"},
          {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}},
       {"admissionChecks",
        {{{"name", "ac1"}, {"state", "Pending"}, {"message", ""}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}},
         {{"name", "mk"}, {"state", "Pending"}, {"message", ""}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}});
  WorkloadCheckReconciler wr(*client, *reader, clock);
  auto states = [&] {
    std::vector<std::string> out;
    const auto wl = manager.api().get(named(kWorkloads, "wl1"));
    for (const auto& s : wl["status"]["admissionChecks"])
      out.push_back(s["name"].get<std::string>() + "=" + s["state"].get<std::string>());
    return out;
  };
  struct Step {
    std::string name;
    std::function<void()> change;
    std::vector<std::string> states;
  };
  auto r = reconciler();
  const std::vector<Step> steps = {
      {"check not Active: stays Pending", [] {}, {"ac1=Pending", "mk=Pending"}},
      {"check Active: Ready, the other check untouched",
       [&] {
         placement("p1");
         decision("p1", 1, {"cluster1"});
         converge(r, "ac1");
       },
       {"ac1=Ready", "mk=Pending"}},
      {"decisions gone: a Ready check stays Ready",
       [&] {
         decision("p1", 1, {});
         converge(r, "ac1");
       },
       {"ac1=Ready", "mk=Pending"}},
  };
  for (const auto& s : steps) {
    SCOPED_TRACE(s.name);
    s.change();
    wr.reconcile("default/wl1");
    EXPECT_EQ(states(), s.states);
  }
  EXPECT_EQ(manager.api().get(named(kWorkloads, "wl1"))["status"]["admissionChecks"][0]["message"],
            std::string(kWorkloadReadyPrefix) + "p1");
}

}  // namespace
}  // namespace mka::placement
