// The dispatch loop's named scenarios (issue 5) beyond §7.1: rejections, evictions both ways,
// a lost worker, an adapter restart, the Incremental dispatcher, and origins shared workers.

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/multikueue/garbage_collector.h"
#include "support/threads.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

class DispatchE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }

  // A Workload made by hand on the manager (Kueue makes them for jobs; these have odd owners).
  std::string createWorkload(const std::string& name, json ownerReferences) {
    json wl = {
        {"apiVersion", "kueue.x-k8s.io/v1beta2"},
        {"kind", "Workload"},
        {"metadata", {{"name", name}, {"namespace", "default"}}},
        {"spec",
         {{"queueName", "user-queue"},
          {"podSets",
           json::array({{{"name", "main"},
                         {"count", 1},
                         {"template",
                          {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}})}}}};
    if (!ownerReferences.empty()) wl["metadata"]["ownerReferences"] = ownerReferences;
    env_->create("manager", wl);
    return name;
  }

  // A PipelineRun admitted on a worker, then that worker unreachable and seen disconnected:
  // (Workload name, worker).
  std::pair<std::string, std::string> admitThenLoseTheWorker() {
    setUpEnvironment({});
    startAdapter();
    createJob(kPipelineRun, "job1");
    const auto wl = awaitWorkload(kPipelineRun, "job1");
    const auto worker = admittedOn(wl);
    env_->cluster(worker).setUnreachable(true);
    EXPECT_TRUE(eventually([&] { return !dispatcher_->registry().connected(worker); }));
    EXPECT_TRUE(settled());
    return {wl, worker};
  }

  // The worker holding the admitted copy once the check is Ready.
  std::string admittedOn(const std::string& wl) {
    EXPECT_TRUE(eventually([&] { return checkIs(wl, "Ready"); })) << checkState(wl).dump();
    return api::clusterName(*workload("manager", wl));
  }
};

// The workload controller runs as many workers as dispatch.workloadConcurrency says (threads
// named mk-workload-<n>), and they dispatch.
TEST_F(DispatchE2E, WorkloadConcurrencySetsTheWorkloadControllersWorkers) {
  const auto workloadWorkers = [] {
    const auto names = test::threadNames();
    return std::count_if(names.begin(), names.end(), [](const auto& n) { return n.starts_with("mk-workload-"); });
  };
  ASSERT_EQ(workloadWorkers(), 0);
  setUpEnvironment({.configure = [](config::Configuration& c) { c.dispatch.workloadConcurrency = 3; }});
  startAdapter();
  // Each worker names its own thread once it runs, so the names appear shortly after start.
  EXPECT_TRUE(eventually([&] { return workloadWorkers() == 3; })) << workloadWorkers() << " workers";
  createJob(kPipelineRun, "job1");
  const auto wl = awaitWorkload(kPipelineRun, "job1");
  EXPECT_TRUE(eventually([&] { return checkIs(wl, "Ready"); })) << checkState(wl).dump();
  stopAdapter();
  EXPECT_EQ(workloadWorkers(), 0);
}

// §2.13: rejections, with Kueue's messages and the previous state.
TEST_F(DispatchE2E, RejectedWhenTheWorkloadHasNoOwner) {
  setUpEnvironment({});
  startAdapter();
  const auto wl = createWorkload("orphan", json::array());
  ASSERT_TRUE(eventually([&] {
    return checkIs(wl, "Rejected", "No multikueue adapter found, Previously: \"Pending\"");
  })) << checkState(wl).dump();
  EXPECT_FALSE(workload("worker1", wl));
  EXPECT_FALSE(workload("worker2", wl));
}

TEST_F(DispatchE2E, RejectedWhenTheOwnerKindHasNoAdapter) {
  setUpEnvironment({});
  startAdapter();
  const auto owner = env_->create(
      "manager",
      json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cm"}, {"namespace", "default"}}}});
  const auto wl = createWorkload("by-configmap", json::array({{{"apiVersion", "v1"},
                                                               {"kind", "ConfigMap"},
                                                               {"name", "cm"},
                                                               {"controller", true},
                                                               {"uid", owner.at("metadata").at("uid")}}}));
  ASSERT_TRUE(eventually([&] {
    return checkIs(wl, "Rejected",
                   "No multikueue adapter found for owner kind \"/v1, Kind=ConfigMap\", Previously: \"Pending\"");
  })) << checkState(wl).dump();
  ASSERT_TRUE(settled());
  EXPECT_FALSE(workload("worker1", wl));
}

TEST_F(DispatchE2E, RejectedWhenTheManagedByMarkerIsMissing) {
  setUpEnvironment({});
  startAdapter();
  createJob(kPipelineRun, "unmarked", /*marker=*/false);
  const auto wl = awaitWorkload(kPipelineRun, "unmarked");
  ASSERT_TRUE(eventually([&] {
    return checkIs(wl, "Rejected",
                   "The owner is not managed by Kueue: Expecting .spec.managedBy to be \"kueue.x-k8s.io/multikueue\" "
                   "not \"\", Previously: \"Pending\"");
  })) << checkState(wl).dump();
  // Kueue deactivates it; nothing ever reaches a worker.
  ASSERT_TRUE(settled());
  EXPECT_FALSE(workload("worker1", wl));
  EXPECT_FALSE(get("worker1", kPipelineRun.gvk, "unmarked"));
}

TEST_F(DispatchE2E, RejectedWhenTheManagedByMarkerIsForeign) {
  setUpEnvironment({});
  startAdapter();
  createJob(kWorkflow, "foreign", false, [](json& job) {
    job["metadata"]["labels"]["workflows.argoproj.io/controller-instanceid"] = "someone-else";
  });
  const auto wl = awaitWorkload(kWorkflow, "foreign");
  ASSERT_TRUE(eventually([&] {
    return checkIs(wl, "Rejected",
                   "The owner is not managed by Kueue: Expecting "
                   "metadata.labels[workflows.argoproj.io/controller-instanceid] to be \"multikueue\" not "
                   "\"someone-else\", Previously: \"Pending\"");
  })) << checkState(wl).dump();
}

// A worker evicts its copy: the check goes to Retry with Kueue's message, Kueue requeues the
// Workload, and it is dispatched again and admitted. A Workflow, whose stop is a suspend: a
// PipelineRun's is StoppedRunFinally, which ends the run for good (KUEUE-JOBFRAMEWORK.md §8.1),
// so an evicted PipelineRun finishes Failed instead (the next test).
TEST_F(DispatchE2E, WorkerEvictionSendsTheCheckToRetryAndTheJobIsDispatchedAgain) {
  // The evicted copy stays evicted until the clock moves (a preemptor holds the worker's
  // quota): a worker that reserved it again at once could do so before the adapter looked.
  constexpr auto kReadmitDelay = std::chrono::minutes{1};
  setUpEnvironment({.readmitDelay = kReadmitDelay});
  startAdapter();
  createJob(kWorkflow, "job1");
  const auto wl = awaitWorkload(kWorkflow, "job1");
  const auto first = admittedOn(wl);
  ASSERT_TRUE(eventually([&] { return workflowNodePhase("manager", "job1", "job1") == "Running"; }));
  env_->kueue(first).evict("default", wl);
  // Retry, then Kueue's eviction (reason AdmissionCheck) resets the check to Pending (retryCount
  // 1). The manager's copied status still shows the pod running, but after an eviction by the
  // check the manager releases at once (the worker's own integration holds the worker's quota
  // while the pod runs there), and the adapter deletes the remote copies; once the requeue delay
  // has passed, Ready again.
  ASSERT_TRUE(eventually([&] {
    const auto s = checkState(wl);
    return s.value("retryCount", 0) >= 1 && s.value("state", "") == "Pending";
  })) << checkState(wl).dump();
  ASSERT_TRUE(eventually([&] { return !workload("worker1", wl) && !workload("worker2", wl); }));
  advance(kReadmitDelay);
  ASSERT_TRUE(eventually([&] {
    const auto s = checkState(wl);
    return s.value("retryCount", 0) >= 1 && s.value("state", "") == "Ready";
  })) << workload("manager", wl)->dump();
  const auto evictedWl = *workload("manager", wl);
  const auto* evicted = api::findCondition(evictedWl, "Evicted");
  ASSERT_NE(evicted, nullptr);
  EXPECT_EQ(evicted->value("message", ""),
            "Previously: Evicted due to AdmissionCheck in Retry state: \"multikueue-adapter\" (Workload evicted on "
            "worker cluster: \"" +
                first + "\", resetting for re-admission. Previously: \"Ready\")");
  // The job runs exactly once: one copy of it, on the worker that admitted it this time.
  const auto second = api::clusterName(*workload("manager", wl));
  ASSERT_TRUE(eventually([&] { return get(second, kWorkflow.gvk, "job1").has_value(); }));
  ASSERT_TRUE(settled());
  int copies = 0;
  for (const auto* w : {"worker1", "worker2"}) copies += get(w, kWorkflow.gvk, "job1") ? 1 : 0;
  EXPECT_EQ(copies, 1);
}

// The manager evicts an admitted Workload (preemption): the dispatcher has the worker deactivate
// its copy; the copy's pod runs on to its end, and the manager's integration keeps the
// reservation while the copied status says so (as Kueue does for a MultiKueue batch Job); then
// it releases it, the dispatcher removes the remote objects and Kueue dispatches the Workload
// afresh.
TEST_F(DispatchE2E, ManagerEvictionRemovesTheRemoteCopiesAndTheJobIsDispatchedAfresh) {
  constexpr auto kReadmitDelay = std::chrono::minutes{1};
  setUpEnvironment({.readmitDelay = kReadmitDelay});
  startAdapter();
  createJob(kWorkflow, "job1");
  const auto wl = awaitWorkload(kWorkflow, "job1");
  const auto worker = admittedOn(wl);
  ASSERT_TRUE(eventually([&] { return get(worker, kWorkflow.gvk, "job1").has_value(); }));
  const auto firstCopy = get(worker, kWorkflow.gvk, "job1")->at("metadata").value("uid", "");
  ASSERT_TRUE(eventually([&] { return workflowNodePhase("manager", "job1", "job1") == "Running"; }));
  env_->kueue("manager").evict("default", wl);  // as Kueue's preemption does: Evicted, checks reset
  ASSERT_TRUE(eventually([&] {
    const auto remote = workload(worker, wl);
    return remote && api::isEvicted(*remote) && api::isEvicted(*workload("manager", wl));
  }));
  ASSERT_TRUE(settled());
  EXPECT_TRUE(api::hasQuotaReservation(*workload("manager", wl))) << "the copy's pod still runs";
  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] {
    const auto local = *workload("manager", wl);
    const auto* requeued = api::findCondition(local, "Requeued");
    return !api::hasQuotaReservation(local) && requeued != nullptr && requeued->value("reason", "") == "Preempted";
  })) << workload("manager", wl)->dump();
  ASSERT_TRUE(eventually([&] {
    for (const auto* w : {"worker1", "worker2"})
      if (workload(w, wl) || get(w, kWorkflow.gvk, "job1")) return false;
    return true;
  })) << "the remote objects removed";
  advance(kReadmitDelay);
  ASSERT_TRUE(eventually([&] {
    const auto second = api::clusterName(*workload("manager", wl));
    const auto copy = second.empty() ? std::nullopt : get(second, kWorkflow.gvk, "job1");
    return checkIs(wl, "Ready") && copy && copy->at("metadata").value("uid", "") != firstCopy;
  })) << workload("manager", wl)->dump();
  ASSERT_TRUE(settled());
  int copies = 0;
  for (const auto* w : {"worker1", "worker2"}) copies += get(w, kWorkflow.gvk, "job1") ? 1 : 0;
  EXPECT_EQ(copies, 1);
}

// The admitting worker is lost for less than workerLostTimeout: the check stays Ready.
TEST_F(DispatchE2E, WorkerLostShorterThanTheTimeoutKeepsTheCheckReady) {
  const auto [wl, worker] = admitThenLoseTheWorker();
  if (HasFailure()) return;
  advance(config_.multiKueue.workerLostTimeout / 2);
  ASSERT_TRUE(settled());
  EXPECT_TRUE(checkIs(wl, "Ready", "The workload was admitted on \"" + worker + "\""));
  // Back in time: still the same worker, the job was never dispatched twice.
  env_->cluster(worker).setUnreachable(false);
  ASSERT_TRUE(awaitReconnect(worker));
  ASSERT_TRUE(settled());
  EXPECT_TRUE(checkIs(wl, "Ready", "The workload was admitted on \"" + worker + "\""));
  const auto other = worker == "worker1" ? "worker2" : "worker1";
  EXPECT_FALSE(get(other, kPipelineRun.gvk, "job1"));
}

// Lost for longer: Retry with `Admitting remote lost`, then Kueue requeues it and the other
// worker runs it.
TEST_F(DispatchE2E, WorkerLostLongerThanTheTimeoutSendsTheCheckToRetry) {
  const auto [wl, worker] = admitThenLoseTheWorker();
  if (HasFailure()) return;
  advance(config_.multiKueue.workerLostTimeout + std::chrono::seconds{1});
  const auto other = worker == "worker1" ? "worker2" : "worker1";
  ASSERT_TRUE(eventually([&] {
    return checkIs(wl, "Ready", std::string("The workload was admitted on \"") + other + "\"");
  })) << checkState(wl).dump();
  const auto evictedWl = *workload("manager", wl);
  const auto* evicted = api::findCondition(evictedWl, "Evicted");
  ASSERT_NE(evicted, nullptr);
  EXPECT_NE(evicted->value("message", "").find("Admitting remote lost, Previously: \"Ready\""), std::string::npos)
      << evicted->dump();
}

// The adapter restarts between "copies exist" and "a worker admitted": the new process finds
// the copies, creates the job once, on the winner only.
TEST_F(DispatchE2E, AdapterRestartMidDispatchCreatesNoDuplicate) {
  setUpEnvironment({.startWorkerKueues = false});
  startAdapter();
  createJob(kPipelineRun, "job1");
  const auto wl = awaitWorkload(kPipelineRun, "job1");
  ASSERT_TRUE(eventually([&] { return workload("worker1", wl) && workload("worker2", wl); }));
  stopAdapter();
  env_->startKueue("worker1");
  ASSERT_TRUE(eventually([&] { return api::isAdmitted(*workload("worker1", wl)); }));
  const auto uidBefore = workload("worker1", wl)->at("metadata").value("uid", "");
  startAdapter();
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready", "The workload was admitted on \"worker1\""); }));
  ASSERT_TRUE(eventually([&] { return get("worker1", kPipelineRun.gvk, "job1").has_value(); }));
  stopAdapter();  // and once more, after the job copy exists
  startAdapter();
  ASSERT_TRUE(settled());
  EXPECT_EQ(workload("worker1", wl)->at("metadata").value("uid", ""), uidBefore) << "the copy was recreated";
  EXPECT_FALSE(workload("worker2", wl));
  EXPECT_FALSE(get("worker2", kPipelineRun.gvk, "job1"));
  const auto jobs = env_->client("worker1").listAll(kPipelineRun.gvk, "default");
  EXPECT_EQ(jobs.size(), 1u);
}

// The Incremental dispatcher nominates three workers per 5-minute round, in config order.
TEST_F(DispatchE2E, IncrementalDispatcherNominatesThreeWorkersPerRound) {
  setUpEnvironment({.workers = {"worker1", "worker2", "worker3", "worker4"},
                    .startWorkerKueues = false,
                    .configure = [](config::Configuration& c) {
                      c.multiKueue.dispatcherName = std::string(config::kDispatcherIncremental);
                    }});
  startAdapter();
  createJob(kPipelineRun, "job1");
  const auto wl = awaitWorkload(kPipelineRun, "job1");
  ASSERT_TRUE(
      eventually([&] { return workload("worker1", wl) && workload("worker2", wl) && workload("worker3", wl); }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(api::nominatedClusters(*workload("manager", wl)),
            (std::vector<std::string>{"worker1", "worker2", "worker3"}));
  EXPECT_FALSE(workload("worker4", wl));
  advance(std::chrono::minutes{5});
  ASSERT_TRUE(eventually([&] { return workload("worker4", wl).has_value(); }));
  EXPECT_EQ(api::nominatedClusters(*workload("manager", wl)),
            (std::vector<std::string>{"worker1", "worker2", "worker3", "worker4"}));
  env_->startKueue("worker4");
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready", "The workload was admitted on \"worker4\""); }));
  ASSERT_TRUE(
      eventually([&] { return !workload("worker1", wl) && !workload("worker2", wl) && !workload("worker3", wl); }));
}

// An external dispatcher (any other dispatcherName) writes status.nominatedClusterNames itself:
// copies go exactly there, and nowhere before it has chosen.
TEST_F(DispatchE2E, ExternalDispatcherNominationsAreFollowed) {
  setUpEnvironment({.startWorkerKueues = false, .configure = [](config::Configuration& c) {
                      c.multiKueue.dispatcherName = "example.com/my-dispatcher";
                    }});
  startAdapter();
  createJob(kPipelineRun, "job1");
  const auto wl = awaitWorkload(kPipelineRun, "job1");
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Pending"); }));
  ASSERT_TRUE(settled());
  EXPECT_FALSE(workload("worker1", wl));
  EXPECT_FALSE(workload("worker2", wl));
  kube::retryOnConflict([&] {
    auto local = *workload("manager", wl);
    local["status"]["nominatedClusterNames"] = {"worker2"};
    env_->client("manager").update(local, {.subresource = "status"});
  });
  ASSERT_TRUE(eventually([&] { return workload("worker2", wl).has_value(); }));
  ASSERT_TRUE(settled());
  EXPECT_FALSE(workload("worker1", wl));
  env_->startKueue("worker2");
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready", "The workload was admitted on \"worker2\""); }));
}

// Two managers, each with its adapter and its own origin, share both workers: each dispatches its
// own job, each job's final status lands on its own manager, and neither GC touches the other's
// copies.
TEST_F(DispatchE2E, TwoManagersWithDifferentOriginsShareTheWorkers) {
  setUpEnvironment({.managers = {"manager", "manager2"}});
  startAdapter();
  auto otherConfig = config_;
  otherConfig.multiKueue.origin = "other";
  auto other = startAdapterFor("manager2", otherConfig);
  createJob(kPipelineRun, "ours");
  createJob(kWorkflow, "theirs", true, {}, "manager2");
  const auto ours = awaitWorkload(kPipelineRun, "ours");
  const auto theirs = awaitWorkload(kWorkflow, "theirs", "manager2");
  const auto ourWorker = admittedOn(ours);
  std::string theirWorker;
  ASSERT_TRUE(eventually([&] {
    const auto wl = get("manager2", api::kWorkloadGvk, theirs);
    theirWorker = wl ? api::clusterName(*wl) : "";
    return !theirWorker.empty() && get(theirWorker, kWorkflow.gvk, "theirs").has_value();
  })) << get("manager2", api::kWorkloadGvk, theirs).value_or(json()).dump();
  ASSERT_TRUE(eventually([&] { return get(ourWorker, kPipelineRun.gvk, "ours").has_value(); }));
  EXPECT_EQ(get(theirWorker, kWorkflow.gvk, "theirs")
                ->at("metadata")
                .at("labels")
                .value("kueue.x-k8s.io/multikueue-origin", ""),
            "other");
  // Both collectors run while both jobs run: nothing of either goes.
  EXPECT_EQ(dispatcher_->collector().collect().workloadsDeleted + other->collector().collect().workloadsDeleted, 0u);
  EXPECT_TRUE(get(ourWorker, kPipelineRun.gvk, "ours").has_value());
  EXPECT_TRUE(get(theirWorker, kWorkflow.gvk, "theirs").has_value());

  // Both runs started (each from the moment its worker saw it admitted), then both finish.
  ASSERT_TRUE(eventually([&] { return runningOnWorkers() == 2; })) << runningOnWorkers() << " running";
  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] {
    const auto a = get("manager", kPipelineRun.gvk, "ours");
    const auto b = get("manager2", kWorkflow.gvk, "theirs");
    const auto* succeeded = a ? api::findCondition(*a, "Succeeded") : nullptr;
    return succeeded != nullptr && succeeded->value("status", "") == "True" && b &&
           b->value("status", json::object()).value("phase", "") == "Succeeded";
  })) << get("manager", kPipelineRun.gvk, "ours").value_or(json()).dump()
      << "\n"
      << get("manager2", kWorkflow.gvk, "theirs").value_or(json()).dump();
  ASSERT_TRUE(eventually(
      [&] { return !get(ourWorker, kPipelineRun.gvk, "ours") && !get(theirWorker, kWorkflow.gvk, "theirs"); }));
  other->stop();
}

// Another manager (origin "other") shares the workers: its objects are never touched, neither by
// the GC nor by the dispatch of a job with the same name.
TEST_F(DispatchE2E, ObjectsOfAnotherOriginOnASharedWorkerAreLeftAlone) {
  setUpEnvironment({});
  // What the other manager put on worker1: a Workload copy and its job.
  env_->create(
      "worker1",
      json{
          {"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata",
           {{"name", "theirs"}, {"namespace", "default"}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", "other"}}}}},
          {"spec",
           {{"queueName", "user-queue"},
            {"podSets",
             json::array({{{"name", "main"},
                           {"count", 1},
                           {"template",
                            {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}})}}}});
  env_->create("worker1", json{{"apiVersion", "tekton.dev/v1"},
                               {"kind", "PipelineRun"},
                               {"metadata",
                                {{"name", "theirs"},
                                 {"namespace", "default"},
                                 {"labels", {{"kueue.x-k8s.io/multikueue-origin", "other"}}},
                                 {"annotations", {{"kueue.x-k8s.io/prebuilt-workload-name", "theirs"}}}}},
                               {"spec", {{"pipelineRef", {{"name", "x"}}}}}});
  startAdapter();
  createJob(kPipelineRun, "job1");
  const auto wl = awaitWorkload(kPipelineRun, "job1");
  admittedOn(wl);
  ASSERT_TRUE(settled());
  const auto stats = dispatcher_->collector().collect();
  EXPECT_EQ(stats.workloadsDeleted + stats.jobsDeleted, 0u);
  EXPECT_TRUE(workload("worker1", "theirs").has_value());
  EXPECT_TRUE(get("worker1", kPipelineRun.gvk, "theirs").has_value());
}

// §2.12: an orphan of ours (no Workload on the manager) is collected, job first; a copy whose
// Workload lives is kept.
TEST_F(DispatchE2E, GarbageCollectorDeletesOurOrphansOnly) {
  setUpEnvironment({.startWorkerKueues = false});
  startAdapter();
  createJob(kPipelineRun, "job1");
  const auto wl = awaitWorkload(kPipelineRun, "job1");
  ASSERT_TRUE(eventually([&] { return workload("worker1", wl).has_value(); }));
  env_->create("worker2", json{{"apiVersion", "tekton.dev/v1"},
                               {"kind", "PipelineRun"},
                               {"metadata",
                                {{"name", "leftover"},
                                 {"namespace", "default"},
                                 {"labels", {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}}},
                                 {"annotations", {{"kueue.x-k8s.io/prebuilt-workload-name", "gone-long-ago"}}}}},
                               {"spec", {{"pipelineRef", {{"name", "x"}}}}}});
  ASSERT_TRUE(eventually([&] {
    auto remote = dispatcher_->registry().connected("worker2");
    return remote && remote->job(kPipelineRun.gvk, "default/leftover").has_value();
  }));
  const auto stats = dispatcher_->collector().collect();
  EXPECT_EQ(stats.jobsDeleted, 1u);
  EXPECT_EQ(stats.workloadsDeleted, 0u);
  EXPECT_FALSE(get("worker2", kPipelineRun.gvk, "leftover"));
  EXPECT_TRUE(workload("worker1", wl).has_value());
}

}  // namespace
}  // namespace mka::e2e
