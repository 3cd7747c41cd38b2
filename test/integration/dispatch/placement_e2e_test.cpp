// The seed "Set up MultiKueue with OCM Kueue Admission Check Controller", stories 1 and 2, with
// the built-in placement controller in place of OCM's kueue-addon: our dispatch, the Kueue
// stand-ins and the OCM scheduler stand-in. The Placement decides the workers; the controller
// writes the MultiKueueConfig and MultiKueueClusters; jobs go only to decided workers, and a
// relabelled worker moves new jobs to the new set. A ClusterQueue holding both checks
// dispatches nothing until the placement check is Ready.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/api/kinds.h"
#include "mka/placement/api.h"
#include "mka/placement/placement_controller.h"
#include "mka/standin/ocm_standin.h"
#include "support/reconcile_counts.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

const std::vector<std::string> kWorkers = {"worker1", "worker2", "worker3"};

// The seed's inventory: cluster2 and cluster3 carry the accelerator label.
std::vector<standin::ManagedClusterInput> seedClusters() {
  return {{"worker1", {}},
          {"worker2", {{"accelerator", "nvidia-tesla-t4"}}},
          {"worker3", {{"accelerator", "nvidia-tesla-t4"}}}};
}

class PlacementE2E : public ::testing::Test, protected DispatchFixture {
 protected:
  void SetUp() override {
    setUpEnvironment({.workers = kWorkers});
    auto& manager = env_->client("manager");
    // The kubeconfig Secrets OCM's addon would have made, multikueue-<cluster>.
    for (const auto& w : kWorkers) {
      auto secret = manager.get(api::kSecretGvk, "kueue-system", w + "-secret");
      manager.create({{"apiVersion", "v1"},
                      {"kind", "Secret"},
                      {"metadata", {{"name", "multikueue-" + w}, {"namespace", "kueue-system"}}},
                      {"data", secret["data"]}});
    }
    ocm_ = std::make_unique<standin::OcmStandIn>(env_->cluster("manager").api(), seedClusters(),
                                                 standin::OcmStandIn::Options{});
    ocm_->start();
    auto options = placement::PlacementController::Options::from(config_);
    options.controllerObserver = &reconciles_;
    placement_ = std::make_unique<placement::PlacementController>(manager, clock_, options);
    placement_->start();
    startAdapter();
  }
  void TearDown() override {
    if (placement_) placement_->stop();
    if (ocm_) ocm_->stop();
    tearDownEnvironment();
  }

  void createPlacement(const std::string& name, const json& spec) {
    env_->create("manager", {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
                             {"kind", "Placement"},
                             {"metadata", {{"name", name}, {"namespace", "kueue-system"}}},
                             {"spec", spec}});
  }
  void createPlacementCheck(const std::string& name, const std::string& placementName) {
    env_->create(
        "manager",
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "AdmissionCheck"},
         {"metadata", {{"name", name}}},
         {"spec",
          {{"controllerName", std::string(placement::kControllerName)},
           {"parameters",
            {{"apiGroup", "cluster.open-cluster-management.io"}, {"kind", "Placement"}, {"name", placementName}}}}}});
  }
  // Our MultiKueue check (the sample's) reads the MultiKueueConfig named after the Placement.
  void pointDispatchCheckAt(const std::string& config) {
    env_->client("manager").patch(api::kAdmissionCheckGvk, "", checkName_, kube::PatchType::Merge,
                                  {{"spec", {{"parameters", {{"name", config}}}}}});
  }
  void clusterQueueChecks(const std::vector<std::string>& checks) {
    json list = json::array();
    for (const auto& c : checks) list.push_back({{"name", c}});
    env_->client("manager").patch({"kueue.x-k8s.io", "v1beta2", "ClusterQueue"}, "", "cluster-queue",
                                  kube::PatchType::Merge,
                                  {{"spec", {{"admissionChecksStrategy", {{"admissionChecks", list}}}}}});
  }
  std::vector<std::string> configClusters(const std::string& name) {
    const auto config = get("manager", api::kMultiKueueConfigGvk, name, "");
    return config ? (*config)["spec"]["clusters"].get<std::vector<std::string>>() : std::vector<std::string>{};
  }
  json active(const std::string& check) {
    const auto ac = get("manager", api::kAdmissionCheckGvk, check, "");
    const auto* c = ac ? api::findCondition(*ac, "Active") : nullptr;
    return c ? *c : json(nullptr);
  }
  bool activeIs(const std::string& check, const std::string& status, const std::string& reason) {
    const auto c = active(check);
    return c.is_object() && c.value("status", "") == status && c.value("reason", "") == reason;
  }
  // Runs a PipelineRun; returns the sandbox worker it ran on ("" after a failed assertion).
  // Every copy went to a decided worker only: none appears on the others.
  std::string runOnDecided(const std::string& job, const std::string& placementName,
                           const std::vector<std::string>& decided) {
    createJob(kPipelineRun, job);
    const auto wl = awaitWorkload(kPipelineRun, job);
    EXPECT_TRUE(eventually([&] { return checkIs(wl, "Ready"); })) << checkState(wl).dump();
    const auto cluster = api::clusterName(*workload("manager", wl));
    const auto prefix = placementName + "-";
    EXPECT_EQ(cluster.rfind(prefix, 0), 0u) << cluster;
    const auto worker = cluster.substr(std::min(prefix.size(), cluster.size()));
    EXPECT_THAT(decided, ::testing::Contains(worker));
    EXPECT_TRUE(eventually([&] { return startsOn(worker, kPipelineRun, job) == 1; })) << "not started on " << worker;
    for (const auto& w : kWorkers) {
      if (std::find(decided.begin(), decided.end(), w) != decided.end()) continue;
      EXPECT_FALSE(workload(w, wl).has_value()) << "a copy on " << w << ", which is not decided";
    }
    return worker;
  }

  test::ReconcileCounts reconciles_;  // before placement_, which reports to it until it stops
  std::unique_ptr<standin::OcmStandIn> ocm_;
  std::unique_ptr<placement::PlacementController> placement_;
};

// Story 1: the default Placement selects every cluster; our check reads the generated config.
TEST_F(PlacementE2E, Story1DefaultPlacementUsesEveryWorker) {
  createPlacement("default", json::object());
  createPlacementCheck("multikueue-config-demo1", "default");
  pointDispatchCheckAt("default");
  ASSERT_TRUE(eventually([&] {
    return configClusters("default") ==
           std::vector<std::string>{"default-worker1", "default-worker2", "default-worker3"};
  })) << get("manager", api::kMultiKueueConfigGvk, "default", "").value_or(json()).dump();
  ASSERT_TRUE(eventually([&] { return activeIs("multikueue-config-demo1", "True", "Active"); }))
      << active("multikueue-config-demo1").dump();
  EXPECT_EQ(active("multikueue-config-demo1")["message"],
            "MultiKueueConfig default and MultiKueueClusters are generated successfully");
  ASSERT_TRUE(eventually([&] { return activeIs(checkName_, "True", "Active"); })) << active(checkName_).dump();
  const auto cluster = get("manager", api::kMultiKueueClusterGvk, "default-worker2", "");
  ASSERT_TRUE(cluster);
  EXPECT_EQ((*cluster)["spec"]["clusterSource"],
            (json{{"kubeConfig", {{"locationType", "Secret"}, {"location", "multikueue-worker2"}}}}));
  runOnDecided("story1-job", "default", kWorkers);
  // The check controller reports its reconciles (the controller_runtime_* series on /metrics).
  EXPECT_GT(reconciles_.count("placement-check", "success"), 0);
}

// Story 2: the Placement selects the labelled workers, the ClusterQueue holds both checks; a
// relabelled worker changes the decision and new jobs go to the new set.
TEST_F(PlacementE2E, Story2LabelSelectedWorkersAndADecisionChangeMovesNewJobs) {
  const std::string name = "multikueue-config-demo2";
  createPlacement(name,
                  {{"clusterSets", {"global"}},
                   {"predicates",
                    json::array({{{"requiredClusterSelector",
                                   {{"labelSelector", {{"matchLabels", {{"accelerator", "nvidia-tesla-t4"}}}}}}}}})}});
  createPlacementCheck(name, name);
  pointDispatchCheckAt(name);
  clusterQueueChecks({checkName_, name});
  ASSERT_TRUE(eventually([&] {
    return configClusters(name) == std::vector<std::string>{name + "-worker2", name + "-worker3"};
  }));
  ASSERT_TRUE(eventually([&] { return activeIs(name, "True", "Active"); })) << active(name).dump();
  ASSERT_TRUE(eventually([&] { return activeIs(checkName_, "True", "Active"); })) << active(checkName_).dump();
  EXPECT_FALSE(get("manager", api::kMultiKueueClusterGvk, name + "-worker1", "").has_value());
  const auto before = runOnDecided("story2-before", name, {"worker2", "worker3"});
  const auto beforeWl = workloadNameOf(kPipelineRun, "story2-before");

  // worker1 gains the label, worker3 loses it.
  auto relabelled = seedClusters();
  relabelled[0].labels["accelerator"] = "nvidia-tesla-t4";
  relabelled[2].labels.clear();
  ocm_->setClusters(relabelled);
  ASSERT_TRUE(eventually([&] {
    return configClusters(name) == std::vector<std::string>{name + "-worker1", name + "-worker2"};
  }));
  if (before == "worker3") {
    // worker3 runs story2-before: its MultiKueueCluster stays, out of the config, until the job
    // is done there (docs/worker-sets.md).
    EXPECT_TRUE(eventually([&] {
      return active(name)
                 .value("message", "")
                 .find("kept until the Workloads admitted or waiting there are done: " + name + "-worker3") !=
             std::string::npos;
    })) << active(name).dump();
    EXPECT_TRUE(get("manager", api::kMultiKueueClusterGvk, name + "-worker3", "").has_value());
  }
  // worker1's new MultiKueueCluster connects before the clock moves: advancing it during the
  // attempt would fail the attempt by its establishment timeout and back it off past the test.
  // (The dispatch check's Active message lists the clusters not connected.)
  ASSERT_TRUE(eventually([&] {
    const auto c = active(checkName_);
    return c.value("status", "") == "True" && c.value("message", "").find(name + "-worker1") == std::string::npos;
  })) << active(checkName_).dump();
  // The job runs to its end where it runs; then the undecided worker's MultiKueueCluster goes.
  ASSERT_TRUE(eventually(
      [&] {
        advance(std::chrono::seconds{20});
        placement_->recheckClock();
        return !get("manager", api::kMultiKueueClusterGvk, name + "-worker3", "").has_value();
      },
      std::chrono::seconds{30}))
      << "the MultiKueueCluster of the undecided worker is deleted once no Workload needs it";
  EXPECT_TRUE(eventually(
      [&] {
        advance(std::chrono::seconds{20});
        return api::isFinished(*workload("manager", beforeWl));
      },
      std::chrono::seconds{30}))
      << "story2-before finished where it ran";
  EXPECT_EQ(startsOn(before, kPipelineRun, "story2-before"), 1) << "ran once, where it was admitted";
  // The remote copies go in the reconcile after the one that marks the Workload finished.
  EXPECT_TRUE(eventually([&] { return !workload("worker3", beforeWl).has_value(); })) << "nothing left on worker3";
  // Under load a decided worker's connection attempt may fail; its retry waits on the fake clock.
  ASSERT_TRUE(eventually([&] {
    advance(std::chrono::seconds{5});
    return activeIs(checkName_, "True", "Active");
  })) << active(checkName_).dump();
  for (int i = 0; i < 2; ++i) runOnDecided("story2-after-" + std::to_string(i), name, {"worker1", "worker2"});
}

TEST_F(PlacementE2E, BothChecksDispatchNothingUntilThePlacementCheckIsReady) {
  const std::string name = "gate";
  createPlacementCheck(name, name);  // its Placement does not exist yet
  pointDispatchCheckAt(name);
  clusterQueueChecks({checkName_, name});
  ASSERT_TRUE(eventually([&] { return activeIs(name, "False", "PlacementNotFound"); })) << active(name).dump();
  createJob(kPipelineRun, "gated");
  const auto wl = awaitWorkload(kPipelineRun, "gated");
  const auto placementState = [&]() -> std::string {
    const auto w = workload("manager", wl);
    const auto* s = w ? api::findCheckState(*w, name) : nullptr;
    return s ? s->value("state", "") : "";
  };
  // The Placement check is not Active, so Kueue keeps the ClusterQueue inactive: no quota, no
  // check states, nothing to dispatch.
  const auto inadmissible = [&] {
    const auto w = workload("manager", wl);
    const auto* c = w ? api::findCondition(*w, "QuotaReserved") : nullptr;
    return c != nullptr && c->value("status", "") == "False" && c->value("reason", "") == "Inadmissible" &&
           c->value("message", "") == "ClusterQueue cluster-queue is inactive";
  };
  ASSERT_TRUE(eventually(inadmissible)) << workload("manager", wl)->dump();
  ASSERT_TRUE(settled());
  EXPECT_TRUE(inadmissible());
  EXPECT_EQ(placementState(), "");
  EXPECT_TRUE(api::nominatedClusters(*workload("manager", wl)).empty());
  for (const auto& w : kWorkers) {
    EXPECT_FALSE(workload(w, wl).has_value()) << "dispatched to " << w;
  }

  createPlacement(name, json::object());
  ASSERT_TRUE(eventually([&] { return placementState() == "Ready"; }));
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready"); })) << checkState(wl).dump();
  EXPECT_TRUE(eventually([&] {
    const auto w = workload("manager", wl);
    return w && api::isAdmitted(*w);
  })) << "both checks Ready: Kueue admits";
  // The Workload controller, which set the check Ready, reports its reconciles too.
  EXPECT_GT(reconciles_.count("placement-wl", "success"), 0);
}

}  // namespace
}  // namespace mka::e2e
