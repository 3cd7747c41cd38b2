// The job integration as deployed (SPEC §7.2, issue 21): our integration on the manager and on
// each worker, the Kueue stand-ins playing Kueue's core only, the Tekton and Argo controller
// stand-ins on every cluster. A PipelineRun and a Workflow go end to end; and, the stand-ins
// being honest, without our integration a Workflow gets no Workload and runs nowhere.

#include <map>

#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/kube/client.h"
#include "mka/sandbox/cluster_api.h"

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

// A Workflow evicted on the manager while its copy's pod runs on a worker (issue 44, item 1):
// suspending stops no running pod, so the worker's Workload and the manager's keep their quota
// until the worker's status, copied back, says the pod ended; only then are the copies removed
// and the next Workflow admitted on the manager.
class EvictedWorkflow : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }

  // Two steps of 5 CPUs each, one step's pod at a time: a ClusterQueue of 8 CPUs holds one.
  static void twoBigSteps(json& wf) {
    wf["spec"]["templates"] = json::parse(R"([
      {"name": "main", "steps": [[{"name": "extract", "template": "work"}], [{"name": "load", "template": "work"}]]},
      {"name": "work", "container": {"image": "busybox", "resources": {"requests": {"cpu": "5"}}}}])");
    wf["spec"].erase("arguments");
  }
  void setManagerCpu(const std::string& quantity) {
    const sandbox::ResourceRef ref{"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""};
    auto& api = env_->cluster("manager").api();
    auto cq = api.get(ref);
    for (auto& flavor : cq["spec"]["resourceGroups"][0]["flavors"])
      for (auto& resource : flavor["resources"])
        if (resource.value("name", "") == "cpu") resource["nominalQuota"] = quantity;
    api.update(ref, cq);
  }
  bool reserved(const std::string& cluster, const std::string& wl) {
    const auto w = workload(cluster, wl);
    return w && api::hasQuotaReservation(*w);
  }
};

TEST_F(EvictedWorkflow, KeepsItsQuotaOnTheManagerUntilItsPodOnTheWorkerEnds) {
  setUpEnvironment({});
  setManagerCpu("8");
  startAdapter();
  const auto [a, worker] = runOnAWorker(kWorkflow, "a", twoBigSteps);
  ASSERT_FALSE(worker.empty());
  ASSERT_TRUE(eventually([&] { return workflowNodePhase(worker, "a", "a[0].extract") == "Running"; }));
  createJob(kWorkflow, "b", true, twoBigSteps);
  const auto b = awaitWorkload(kWorkflow, "b");
  ASSERT_TRUE(settled());
  ASSERT_FALSE(reserved("manager", b)) << "no room on the manager while A holds its quota";

  // A's Workload is deactivated on the manager: Kueue evicts it, the adapter asks the worker to
  // deactivate its copy, both integrations stop their Workflow at once.
  kube::retryOnConflict([&] {
    auto w = *workload("manager", a);
    w["spec"]["active"] = false;
    env_->client("manager").update(w);
  });
  ASSERT_TRUE(eventually([&] {
    const auto remote = workload(worker, a);
    return api::isEvicted(*workload("manager", a)) && remote && api::isEvicted(*remote) &&
           get(worker, kWorkflow.gvk, "a")->at("spec").value("suspend", false);
  }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(workflowNodePhase(worker, "a", "a[0].extract"), "Running") << "suspending stops no running pod";
  EXPECT_TRUE(reserved(worker, a)) << "the worker's pod holds the worker's capacity";
  EXPECT_TRUE(reserved("manager", a)) << "and the manager's: " << workload("manager", a)->dump();
  EXPECT_EQ(workflowNodePhase("manager", "a", "a[0].extract"), "Running") << "the worker's status came back";
  EXPECT_FALSE(reserved("manager", b));

  // Half the step later the pod still runs.
  advance(std::chrono::seconds{5});
  ASSERT_TRUE(settled());
  EXPECT_TRUE(reserved("manager", a));
  EXPECT_TRUE(workload(worker, a).has_value()) << "the copies stay while the pod runs";
  EXPECT_FALSE(reserved("manager", b));

  // The step ends: the worker's status says nothing runs; the manager releases A's quota, the
  // copies go, and B is admitted and runs.
  advance(std::chrono::seconds{5});
  ASSERT_TRUE(eventually([&] { return !reserved("manager", a) && reserved("manager", b); }))
      << workload("manager", a)->dump();
  ASSERT_TRUE(eventually([&] { return !workload(worker, a) && !get(worker, kWorkflow.gvk, "a"); }));
  ASSERT_TRUE(eventually([&] { return checkIs(b, "Ready"); }));
  EXPECT_EQ(workflowNodePhase("manager", "a", "a[0].extract"), "Succeeded");
  EXPECT_EQ(workflowNodePhase("manager", "a", "a[1].load"), "") << "no new step started";
  EXPECT_EQ(startsOn(worker, kWorkflow, "a"), 1);
}

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
