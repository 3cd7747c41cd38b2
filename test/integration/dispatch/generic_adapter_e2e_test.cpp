// KUEUE-MULTIKUEUE.md §7.1 (the generic adapter end to end), once with Tekton PipelineRuns
// (status through the status subresource, marker spec.managedBy) and once with Argo Workflows
// (status in the main resource, marker a label).

#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/sandbox/object_store.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

class GenericAdapterE2E : public ::testing::TestWithParam<JobKind>, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
  const JobKind& kind() const { return GetParam(); }
};

// §7.1 scenario 1 (and 4: the marker set explicitly): copies on both workers, worker2 admits,
// the check is Ready there, the manager Workload admitted, an event recorded, worker1's copy gone.
TEST_P(GenericAdapterE2E, FirstWorkerToAdmitWinsAndTheOtherCopyIsDeleted) {
  setUpEnvironment({.startWorkerKueues = false});
  startAdapter();
  createJob(kind(), "job1");
  const auto wl = awaitWorkload(kind(), "job1");

  // Both workers hold a copy with the manager's spec while nobody has admitted it, gated for
  // orchestrated preemption (on by default).
  ASSERT_TRUE(eventually([&] { return workload("worker1", wl) && workload("worker2", wl); }));
  const auto local = workload("manager", wl);
  for (const auto* worker : {"worker1", "worker2"}) {
    const auto copy = workload(worker, wl);
    auto spec = copy->at("spec");
    EXPECT_EQ(spec.value("preemptionGates", nlohmann::json()),
              nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/multikueue"}])"))
        << worker;
    spec.erase("preemptionGates");
    EXPECT_EQ(spec, local->at("spec")) << worker;
    EXPECT_EQ(copy->at("metadata").at("labels").value("kueue.x-k8s.io/multikueue-origin", ""), "multikueue");
    EXPECT_FALSE(copy->at("metadata").at("labels").contains("kueue.x-k8s.io/job-uid"));
    EXPECT_FALSE(copy->at("metadata").contains("ownerReferences") &&
                 !copy->at("metadata").at("ownerReferences").empty());
  }
  // AllAtOnce nominates the workers connected at the time: under load a worker's watch may drop
  // and come back between two reconciles, so the nomination is awaited, not read once.
  EXPECT_TRUE(eventually([&] {
    return api::nominatedClusters(*workload("manager", wl)) == std::vector<std::string>{"worker1", "worker2"};
  }));

  env_->startKueue("worker2");
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready", "The workload was admitted on \"worker2\""); }));
  ASSERT_TRUE(eventually([&] { return api::isAdmitted(*workload("manager", wl)); }));
  const auto admittedWl = *workload("manager", wl);
  const auto* admitted = api::findCondition(admittedWl, "Admitted");
  EXPECT_EQ(admitted->value("reason", ""), "Admitted");
  EXPECT_EQ(admitted->value("message", ""), "The workload is admitted");
  EXPECT_EQ(api::clusterName(*workload("manager", wl)), "worker2");
  EXPECT_TRUE(api::nominatedClusters(*workload("manager", wl)).empty());
  ASSERT_TRUE(eventually([&] { return !workload("worker1", wl); }));
  ASSERT_TRUE(eventually([&] { return get("worker2", kind().gvk, "job1").has_value(); }));
  EXPECT_FALSE(get("worker1", kind().gvk, "job1").has_value());

  const auto events = this->events(wl);
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const json& e) {
    return e.value("reason", "") == "MultiKueue" && e.value("type", "") == "Normal" &&
           e.value("message", "") == "The workload was admitted on \"worker2\"";
  }));
}

// §7.1 scenario 2: the worker's job status reaches the manager's job, whole, and the final one
// too; then the manager Workload finishes and the remote objects go.
TEST_P(GenericAdapterE2E, WorkerStatusIsCopiedToTheManagerJobUntilItFinishes) {
  setUpEnvironment({});
  startAdapter();
  // Running: the worker's integration resumed the copy, its controller stand-in runs it and its
  // status is on the manager's job.
  const auto [wl, worker] = runOnAWorker(kind(), "job1");
  ASSERT_FALSE(worker.empty());
  ASSERT_TRUE(eventually([&] {
    const auto remote = get(worker, kind().gvk, "job1");
    const auto local = get("manager", kind().gvk, "job1");
    return remote && local && remote->contains("status") && local->value("status", json()) == remote->at("status");
  }));

  // Finished on the worker: the final status is on the manager, the Workload Finished, the copies gone.
  json finalStatus;
  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", wl)); }));
  ASSERT_TRUE(eventually([&] { return !workload(worker, wl) && !get(worker, kind().gvk, "job1"); }));
  const auto local = get("manager", kind().gvk, "job1");
  if (kind().gvk.kind == "PipelineRun") {
    const auto* succeeded = api::findCondition(*local, "Succeeded");
    ASSERT_NE(succeeded, nullptr) << local->dump();
    EXPECT_EQ(succeeded->value("status", ""), "True");
  } else {
    EXPECT_EQ(local->at("status").value("phase", ""), "Succeeded") << local->dump();
  }
}

// §7.1 scenario 3: an owner reference on the manager's job does not travel (the worker's GC
// would delete the copy at once), nor do finalizers or status; the copy survives.
TEST_P(GenericAdapterE2E, RemoteCopyHasNoOwnerReferencesAndSurvives) {
  setUpEnvironment({});
  const auto owner = env_->create(
      "manager",
      json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "owner"}, {"namespace", "default"}}}});
  startAdapter();
  createJob(kind(), "job1", true, [&](json& job) {
    job["metadata"]["ownerReferences"] = json::array(
        {{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "owner"}, {"uid", owner.at("metadata").at("uid")}}});
  });
  const auto wl = awaitWorkload(kind(), "job1");
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready"); }));
  const auto worker = api::clusterName(*workload("manager", wl));
  ASSERT_TRUE(eventually([&] { return get(worker, kind().gvk, "job1").has_value(); }));
  ASSERT_TRUE(settled());
  const auto remote = get(worker, kind().gvk, "job1");
  ASSERT_TRUE(remote.has_value()) << "the copy was deleted";
  EXPECT_FALSE(remote->at("metadata").contains("ownerReferences")) << remote->dump();
  EXPECT_FALSE(remote->at("metadata").contains("finalizers"));
  // The marker is gone from the copy, the link and the origin are there.
  const auto labels = remote->at("metadata").value("labels", json::object());
  EXPECT_EQ(labels.value("kueue.x-k8s.io/multikueue-origin", ""), "multikueue");
  EXPECT_EQ(remote->at("metadata").at("annotations").value("kueue.x-k8s.io/prebuilt-workload-name", ""), wl);
  EXPECT_FALSE(labels.contains("workflows.argoproj.io/controller-instanceid"));
  EXPECT_FALSE(remote->at("spec").contains("managedBy"));
}

// §7.1 scenario 5: the manager's job and Workload deleted while both workers are unreachable;
// the copies stay until each worker is back, then the GC removes them (the job too).
TEST_P(GenericAdapterE2E, DeletedWhileWorkersAreUnreachableIsCollectedWhenTheyReturn) {
  setUpEnvironment({.startWorkerKueues = false});
  startAdapter();
  createJob(kind(), "job1");
  const auto wl = awaitWorkload(kind(), "job1");
  ASSERT_TRUE(eventually([&] { return workload("worker1", wl) && workload("worker2", wl); }));
  env_->cluster("worker2").setUnreachable(true);
  ASSERT_TRUE(eventually([&] { return !dispatcher_->registry().connected("worker2"); }));
  env_->startKueue("worker1");
  ASSERT_TRUE(eventually([&] { return get("worker1", kind().gvk, "job1").has_value(); }));
  env_->cluster("worker1").setUnreachable(true);
  ASSERT_TRUE(eventually([&] { return !dispatcher_->registry().connected("worker1"); }));

  // Deleted on the manager (the stand-in's finalizer goes once Kueue sees the deletion).
  env_->client("manager").remove(kind().gvk, "default", "job1", {.propagationPolicy = "Foreground"});
  ASSERT_TRUE(eventually([&] { return !workload("manager", wl) && !get("manager", kind().gvk, "job1"); }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(dispatcher_->collector().collect().workloadsDeleted, 0u);

  env_->cluster("worker2").setUnreachable(false);
  ASSERT_TRUE(awaitReconnect("worker2"));
  dispatcher_->collector().collect();
  EXPECT_FALSE(workload("worker2", wl).has_value());

  env_->cluster("worker1").setUnreachable(false);
  ASSERT_TRUE(awaitReconnect("worker1"));
  ASSERT_TRUE(eventually([&] {
    dispatcher_->collector().collect();
    return !workload("worker1", wl) && !get("worker1", kind().gvk, "job1");
  }));
}

// The copy rules of a kind (externalFrameworks[].remoteCopy, remoteStatus), with Argo Workflows.
class CopyRulesE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
  // Every version of every Workflow on the workers, as their API servers stored them.
  std::vector<json> workerWorkflowVersions() {
    std::vector<json> out;
    for (auto& watch : watches_)
      while (auto event = watch->next(std::chrono::milliseconds{0}))
        if (event->object) out.push_back(*event->object);
    return out;
  }
  void watchWorkers() {
    for (const auto* worker : {"worker1", "worker2"})
      watches_.push_back(env_->cluster(worker).store().watch("argoproj.io", "workflows", "", 0, nullptr));
  }
  std::vector<std::unique_ptr<sandbox::ObjectStore::Watch>> watches_;
};

// Argo's TTL controller deletes a finished Workflow ttlStrategy seconds after it ends: on the
// worker that could be before its final status reached the manager, which would then find its
// job gone there (OwnerNotFound) and dispatch it again. The copy never carries the field.
TEST_F(CopyRulesE2E, AWorkflowWithATtlStrategyRunsOnceAndItsFinalStatusReachesTheManager) {
  setUpEnvironment({});
  watchWorkers();
  startAdapter();
  const auto [wl, worker] = runOnAWorker(kWorkflow, "ttl", [](json& job) {
    job["spec"]["ttlStrategy"] = {{"secondsAfterCompletion", 0}};
  });
  ASSERT_FALSE(worker.empty());
  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", wl)); }));
  const auto local = get("manager", kWorkflow.gvk, "ttl");
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->at("status").value("phase", ""), "Succeeded") << local->dump();
  EXPECT_EQ(api::findCondition(*workload("manager", wl), "Finished")->value("reason", ""), "Succeeded");
  EXPECT_TRUE(local->at("spec").contains("ttlStrategy")) << "the manager's job keeps its own";
  ASSERT_TRUE(eventually([&] { return !get(worker, kWorkflow.gvk, "ttl"); }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(startsOn("worker1", kWorkflow, "ttl") + startsOn("worker2", kWorkflow, "ttl"), 1);
  const auto versions = workerWorkflowVersions();
  EXPECT_FALSE(versions.empty());
  for (const auto& version : versions) EXPECT_FALSE(version.at("spec").contains("ttlStrategy")) << version.dump();
}

// remoteStatus.exclude: the worker's status.nodes stays there; the phase reaches the manager.
TEST_F(CopyRulesE2E, ExcludedStatusFieldsStayOnTheWorker) {
  setUpEnvironment({.configure = [](config::Configuration& c) {
    for (auto& f : c.multiKueue.externalFrameworks)
      if (f.gvk == kWorkflow.gvk) f.statusExclude = {"/nodes"};
  }});
  startAdapter();
  const auto [wl, worker] = runOnAWorker(kWorkflow, "lean");
  ASSERT_FALSE(worker.empty());
  ASSERT_TRUE(eventually([&] {
    const auto remote = get(worker, kWorkflow.gvk, "lean");
    const auto local = get("manager", kWorkflow.gvk, "lean");
    return remote && local && remote->contains("status") && remote->at("status").contains("nodes") &&
           local->contains("status") && local->at("status").value("phase", "") == "Running";
  }));
  EXPECT_FALSE(get("manager", kWorkflow.gvk, "lean")->at("status").contains("nodes"));
  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", wl)); }));
  const auto local = get("manager", kWorkflow.gvk, "lean");
  EXPECT_EQ(local->at("status").value("phase", ""), "Succeeded") << local->dump();
  EXPECT_FALSE(local->at("status").contains("nodes")) << local->dump();
}

INSTANTIATE_TEST_SUITE_P(Kinds, GenericAdapterE2E, ::testing::Values(kPipelineRun, kWorkflow),
                         [](const ::testing::TestParamInfo<JobKind>& info) { return info.param.name; });

}  // namespace
}  // namespace mka::e2e
