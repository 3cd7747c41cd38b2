// Drop-in mode end to end: the adapter serves Kueue's own MultiKueue controller name
// (dispatch.admissionCheckControllerName: kueue.x-k8s.io/multikueue, Kueue's MultiKueue gate
// off on the manager), so it also writes what Kueue's MultiKueue controllers write: the
// MultiKueueClusters' Active condition (reason and message as Kueue's), and the AdmissionCheck's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/multikueue/api.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

constexpr const char* kKueueController = "kueue.x-k8s.io/multikueue";
constexpr const char* kCheck = "multikueue-adapter";  // manifests/samples/kueue/10-admission-check.yaml

class DropInE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void SetUp() override {
    setUpEnvironment(
        {.configure = [](config::Configuration& c) { c.dispatch.admissionCheckControllerName = kKueueController; }});
    checkName_ = kCheck;
    // A drop-in install's AdmissionCheck names Kueue's controller; the field is immutable, so the
    // sample's check is replaced.
    auto check = *get("manager", api::kAdmissionCheckGvk, kCheck, "");
    env_->client("manager").remove(api::kAdmissionCheckGvk, "", kCheck);
    ASSERT_TRUE(eventually([&] { return !get("manager", api::kAdmissionCheckGvk, kCheck, ""); }));
    check["metadata"] = {{"name", kCheck}};
    check.erase("status");
    check["spec"]["controllerName"] = kKueueController;
    env_->create("manager", check);
    startAdapter();
  }
  void TearDown() override { tearDownEnvironment(); }

  // The Active condition of MultiKueueCluster `name` (null json when it has none).
  json clusterActive(const std::string& name) {
    const auto cluster = get("manager", api::kMultiKueueClusterGvk, name, "");
    if (!cluster) return nullptr;
    for (const auto& c : cluster->value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Active") return c;
    return nullptr;
  }
  bool clusterIs(const std::string& name, const std::string& status, std::string_view reason) {
    const auto c = clusterActive(name);
    return c.is_object() && c.value("status", "") == status && c.value("reason", "") == reason;
  }
};

TEST_F(DropInE2E, WritesTheClustersActiveConditionsAsKueueDoesAndRunsJobs) {
  for (const std::string worker : {"worker1", "worker2"}) {
    SCOPED_TRACE(worker);
    ASSERT_TRUE(eventually([&] { return clusterIs(worker, "True", multikueue::cluster_reason::kActive); }))
        << clusterActive(worker).dump();
    const auto c = clusterActive(worker);
    EXPECT_EQ(c.value("message", ""), multikueue::kClusterConnectedMessage);
    EXPECT_FALSE(c.value("lastTransitionTime", "").empty());
    EXPECT_EQ(c.value("observedGeneration", -1), 1);
  }
  EXPECT_TRUE(eventually([&] {
    const auto check = get("manager", api::kAdmissionCheckGvk, kCheck, "");
    for (const auto& c : check->value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Active") return c.value("status", "") == "True";
    return false;
  }));

  for (const auto& [kind, name] : {std::pair{kPipelineRun, "drop-in-pipelinerun"}, {kWorkflow, "drop-in-workflow"}}) {
    SCOPED_TRACE(kind.name);
    const auto [wl, worker] = runOnAWorker(kind, name);
    EXPECT_FALSE(worker.empty()) << "not dispatched in drop-in mode";
  }

  // A lost worker turns False with Kueue's reason, and True again once reachable.
  env_->cluster("worker2").setUnreachable(true);
  EXPECT_TRUE(eventually([&] {
    return clusterIs("worker2", "False", multikueue::cluster_reason::kClientConnectionFailed);
  })) << clusterActive("worker2").dump();
  EXPECT_TRUE(clusterIs("worker1", "True", multikueue::cluster_reason::kActive));
  env_->cluster("worker2").setUnreachable(false);
  ASSERT_TRUE(awaitReconnect("worker2"));
  EXPECT_TRUE(eventually([&] { return clusterIs("worker2", "True", multikueue::cluster_reason::kActive); }))
      << clusterActive("worker2").dump();
}

}  // namespace
}  // namespace mka::e2e
