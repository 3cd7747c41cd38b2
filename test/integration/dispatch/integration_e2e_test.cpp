// The job integration as deployed (SPEC §7.2, issue 21): our integration on the manager and on
// each worker, the Kueue stand-ins playing Kueue's core only, the Tekton and Argo controller
// stand-ins on every cluster. A PipelineRun and a Workflow go end to end; and, the stand-ins
// being honest, without our integration a Workflow gets no Workload and runs nowhere.

#include <map>

#include <gtest/gtest.h>

#include "dispatch_fixture.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

class IntegrationE2E : public ::testing::TestWithParam<JobKind>, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
  const JobKind& kind() const { return GetParam(); }

  int startsOn(const std::string& cluster, const std::string& job) {
    return DispatchFixture::startsOn(cluster, kind(), job);
  }
  bool suspended(const json& job) {
    return kind().gvk.kind == "Workflow" ? job.at("spec").value("suspend", false)
                                         : job.at("spec").value("status", "") == "PipelineRunPending";
  }
};

TEST_P(IntegrationE2E, RunsOnceOnAWorkerWithTheIntegrationOnEveryCluster) {
  setUpEnvironment({});
  startAdapter();
  createJob(kind(), "job1");

  // Our integration on the manager made the Workload, as Kueue's jobframework would.
  const auto wl = awaitWorkload(kind(), "job1");
  const auto created = *workload("manager", wl);
  EXPECT_EQ(created["metadata"]["finalizers"], json({"kueue.x-k8s.io/resource-in-use"}));
  EXPECT_EQ(created["metadata"]["ownerReferences"][0]["name"], "job1");

  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready"); }));
  const auto worker = api::clusterName(*workload("manager", wl));
  const auto other = worker == "worker1" ? "worker2" : "worker1";

  // The worker's integration adopted the Workload copy and resumed the job copy; its framework
  // controller runs it. The manager's job stays suspended: nothing runs there.
  ASSERT_TRUE(eventually([&] {
    const auto copy = get(worker, kind().gvk, "job1");
    return copy && !suspended(*copy) && startsOn(worker, "job1") == 1;
  }));
  const auto remoteWl = workload(worker, wl);
  ASSERT_TRUE(remoteWl.has_value());
  EXPECT_EQ(remoteWl->at("metadata").at("ownerReferences").at(0).value("name", ""), "job1") << "adopted";
  EXPECT_TRUE(suspended(*get("manager", kind().gvk, "job1")));

  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", wl)); }));
  ASSERT_TRUE(eventually([&] { return !workload(worker, wl) && !get(worker, kind().gvk, "job1"); }));
  ASSERT_TRUE(eventually([&] { return !workload("manager", wl)->at("metadata").contains("finalizers"); }))
      << "the manager's integration releases the finished Workload";
  const auto local = *get("manager", kind().gvk, "job1");
  if (kind().gvk.kind == "PipelineRun") {
    const auto* succeeded = api::findCondition(local, "Succeeded");
    ASSERT_NE(succeeded, nullptr) << local.dump();
    EXPECT_EQ(succeeded->value("status", ""), "True");
  } else {
    EXPECT_EQ(local.at("status").value("phase", ""), "Succeeded") << local.dump();
  }
  EXPECT_EQ(startsOn(worker, "job1"), 1) << "run once";
  EXPECT_EQ(startsOn(other, "job1"), 0) << "run nowhere else";
  EXPECT_EQ(startsOn("manager", "job1"), 0) << "never on the manager";
}

// The worker's adapter restarts while the job copy runs: the new one rebuilds its caches, adopts
// nothing twice, creates no Workload of its own, and finishes the worker's Workload once.
TEST_P(IntegrationE2E, AWorkerAdapterRestartedMidFlightResumesOnceAndFinishesOnce) {
  setUpEnvironment({});
  startAdapter();
  const auto [wl, worker] = runOnAWorker(kind(), "job1");
  ASSERT_FALSE(worker.empty());

  env_->restartIntegration(worker);
  ASSERT_TRUE(settled());
  EXPECT_EQ(env_->client(worker).listAll(api::kWorkloadGvk, "default").size(), 1u) << "one Workload on the worker";

  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", wl)); }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(startsOn(worker, "job1"), 1) << "resumed once";
  std::map<std::string, int> reasons;
  for (const auto& event : events("job1", worker)) ++reasons[event.value("reason", "")];
  // The worker's integration finishes its Workload, unless the manager's integration finished
  // the manager's first from the copied job status and the copies were removed before: as in
  // Kueue, either may come first, and neither twice.
  EXPECT_LE(reasons["FinishedWorkload"], 1) << "finished at most once: " << ::testing::PrintToString(reasons);
  const auto managerWorkload = workload("manager", wl);
  ASSERT_TRUE(managerWorkload);
  const auto* finished = api::findCondition(*managerWorkload, "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->value("reason", ""), "Succeeded");
  EXPECT_EQ(reasons["Started"], 1) << ::testing::PrintToString(reasons);
  EXPECT_EQ(reasons["CreatedWorkload"], 0) << "the copy's Workload is the dispatched one";
}

INSTANTIATE_TEST_SUITE_P(Kinds, IntegrationE2E, ::testing::Values(kPipelineRun, kWorkflow),
                         [](const ::testing::TestParamInfo<JobKind>& info) { return info.param.name; });

class HonestStandIns : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
};

// Kueue integrates no Argo Workflows: with only the dispatch loop (our integration off on the
// manager), nothing creates the Workflow's Workload, so nothing dispatches or runs it.
TEST_F(HonestStandIns, WithoutOurIntegrationAWorkflowGetsNoWorkloadAndRunsNowhere) {
  setUpEnvironment({});
  config_.integrations.frameworks.clear();
  dispatcher_ = startAdapterFor("manager", config_);  // the dispatch loop alone
  createJob(kWorkflow, "wf1");
  ASSERT_TRUE(settled());
  EXPECT_TRUE(env_->client("manager").listAll(api::kWorkloadGvk, "default").empty());
  for (const auto& cluster : {"manager", "worker1", "worker2"}) {
    EXPECT_EQ(env_->frameworkController(cluster, "Workflow")->starts("default/wf1"), 0) << cluster;
    EXPECT_TRUE(env_->client(cluster).listAll(kWorkflow.gvk, "default").size() == (cluster == std::string("manager")))
        << cluster;
  }
}

}  // namespace
}  // namespace mka::e2e
