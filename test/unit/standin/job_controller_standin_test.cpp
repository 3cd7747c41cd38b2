// The framework controller stand-ins run a job exactly when the real controller would, and
// write the status it writes (SPEC §6; KUEUE-JOBFRAMEWORK.md §8.1-§8.3).
#include "mka/standin/job_controller_standin.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "mka/common/clock.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "support/crd_fixtures.h"
#include "support/eventually.h"

namespace mka::standin {
namespace {

using nlohmann::json;
using sandbox::ResourceRef;
using Style = JobControllerStandIn::Style;

class JobControllerStandInTest : public ::testing::Test {
 protected:
  JobControllerStandInTest() : api("test", registry, store, clock) {
    api.create({"", "v1", "namespaces", "", "", ""}, json{{"metadata", {{"name", "default"}}}});
    for (const auto* file :
         {"tekton.dev_pipelineruns.yaml", "tekton/tekton.dev_taskruns.yaml", "argoproj.io_workflows.minimal.yaml",
          "../../../manifests/samples/single-cluster/cluster/00-trainingrun-crd.yaml"})
      api.create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
                 sandbox::test::fixtureCrd(file));
  }
  ~JobControllerStandInTest() override {
    if (controller) controller->stop();
  }
  void start(Style style, std::function<bool(const json&)> podsPending = nullptr, bool taskRuns = false) {
    controller = std::make_unique<JobControllerStandIn>(
        api, clock,
        JobControllerStandIn::Options{.style = style,
                                      .runTime = std::chrono::seconds{10},
                                      .pollInterval = std::chrono::milliseconds{2},
                                      .podsPending = std::move(podsPending),
                                      .taskRuns = taskRuns});
    controller->start();
  }
  json get(const ResourceRef& ref, const std::string& name) {
    auto r = ref;
    r.name = name;
    return api.get(r);
  }
  // TrainingRun "t" of `replicas`, its pods Pending while the flag returned holds (shared: it
  // outlives the controller's thread).
  std::shared_ptr<std::atomic<bool>> startWithPendingPods(int replicas) {
    auto noNode = std::make_shared<std::atomic<bool>>(true);
    api.create(trainings, {{"apiVersion", "ml.example.com/v1"},
                           {"kind", "TrainingRun"},
                           {"metadata", {{"name", "t"}}},
                           {"spec", {{"replicas", replicas}, {"template", json::object()}}}});
    start(Style::InHouse, [noNode](const json&) { return noNode->load(); });
    return noNode;
  }
  json status(const ResourceRef& ref, const std::string& name) {
    return get(ref, name).value("status", json::object());
  }
  // A user's edit, retried on a conflict with the controller's own writes (client-go's
  // RetryOnConflict).
  void edit(const ResourceRef& ref, const std::string& name, const std::function<void(json&)>& change) {
    auto r = ref;
    r.name = name;
    for (int attempt = 0;; ++attempt) {
      json job = api.get(r);
      change(job);
      try {
        api.update(r, job);
        return;
      } catch (const sandbox::ApiError& e) {
        if (e.code() != 409 || attempt == 20) throw;
      }
    }
  }

  const ResourceRef runs{"tekton.dev", "v1", "pipelineruns", "default", "", ""};
  const ResourceRef flows{"argoproj.io", "v1alpha1", "workflows", "default", "", ""};
  const ResourceRef trainings{"ml.example.com", "v1", "trainingruns", "default", "", ""};
  const ResourceRef taskRuns{"tekton.dev", "v1", "taskruns", "default", "", ""};
  const ResourceRef pods{"", "v1", "pods", "default", "", ""};

  FakeClock clock;
  sandbox::ResourceRegistry registry;
  sandbox::ObjectStore store;
  sandbox::ClusterApi api;
  std::unique_ptr<JobControllerStandIn> controller;
};

json condition(const json& job, const std::string& type) {
  for (const auto& c : job.value("status", json::object()).value("conditions", json::array()))
    if (c["type"] == type) return c;
  return nullptr;
}
json succeeded(const json& job) { return condition(job, "Succeeded"); }

TEST_F(JobControllerStandInTest, TektonRunsWhatIsNotPendingOrAManagersCopy) {
  const auto run = [](const std::string& name, const json& spec) {
    return json{
        {"apiVersion", "tekton.dev/v1"}, {"kind", "PipelineRun"}, {"metadata", {{"name", name}}}, {"spec", spec}};
  };
  api.create(runs,
             run("managers-copy", {{"pipelineRef", {{"name", "p"}}}, {"managedBy", "kueue.x-k8s.io/multikueue"}}));
  api.create(runs, run("queued", {{"pipelineRef", {{"name", "p"}}}, {"status", "PipelineRunPending"}}));
  start(Style::Tekton);

  ASSERT_TRUE(test::eventually([&] { return controller->running() == 0 && controller->allStarts().empty(); }));
  edit(runs, "queued", [](json& job) { job["spec"].erase("status"); });
  ASSERT_TRUE(test::eventually([&] { return controller->running() == 1; }));
  ASSERT_TRUE(test::eventually([&] { return succeeded(get(runs, "queued"))["status"] == "Unknown"; }));
  EXPECT_TRUE(get(runs, "queued")["status"].contains("startTime"));
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return succeeded(get(runs, "queued"))["status"] == "True"; }));
  EXPECT_FALSE(get(runs, "managers-copy").contains("status")) << "Tekton filters MultiKueue's copies out";
  EXPECT_EQ(controller->starts("default/managers-copy"), 0);
  EXPECT_EQ(controller->starts("default/queued"), 1);

  api.create(runs, run("stopped", {{"pipelineRef", {{"name", "p"}}}}));
  ASSERT_TRUE(test::eventually([&] { return controller->running() == 1; }));
  edit(runs, "stopped", [](json& job) { job["spec"]["status"] = "StoppedRunFinally"; });
  ASSERT_TRUE(test::eventually([&] { return succeeded(get(runs, "stopped"))["status"] == "False"; }));
  EXPECT_EQ(succeeded(get(runs, "stopped"))["reason"], "StoppedRunFinally");
}

// Tekton's PipelineRun reconciler creates a TaskRun per pipeline task, with the run's labels
// and annotations and its taskRunTemplate's podTemplate; the TaskRun reconciler a Pod per
// TaskRun with the TaskRun's labels and the podTemplate's nodeSelector and tolerations.
TEST_F(JobControllerStandInTest, ATektonRunThatStartsGetsATaskRunPerTaskAndAPodPerTaskRun) {
  const json toleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  api.create(runs, json::parse(R"({
    "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
    "metadata": {"name": "build", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                 "annotations": {"kueue.x-k8s.io/workload": "wl"}},
    "spec": {"status": "PipelineRunPending",
      "taskRunTemplate": {"podTemplate": {"nodeSelector": {"gpu": "a100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
      "pipelineSpec": {"tasks": [
        {"name": "compile", "taskSpec": {"steps": [{"name": "make", "image": "gcc"}]}},
        {"name": "test", "taskSpec": {"steps": [{"name": "ctest", "image": "gcc"}]}}]}}})"));
  start(Style::Tekton, nullptr, /*taskRuns=*/true);
  ASSERT_TRUE(test::eventually([&] { return controller->allStarts().empty() && controller->running() == 0; }));
  EXPECT_EQ(api.list(taskRuns, {})["items"].size(), 0u) << "a pending run has no TaskRuns";

  edit(runs, "build", [](json& job) { job["spec"].erase("status"); });
  ASSERT_TRUE(test::eventually([&] { return api.list(pods, {})["items"].size() == 2; }));
  const json run = get(runs, "build");
  const json taskRun = get(taskRuns, "build-compile");
  EXPECT_EQ(taskRun["metadata"]["ownerReferences"], json::array({{{"apiVersion", "tekton.dev/v1"},
                                                                  {"kind", "PipelineRun"},
                                                                  {"name", "build"},
                                                                  {"uid", run["metadata"]["uid"]},
                                                                  {"controller", true},
                                                                  {"blockOwnerDeletion", true}}}));
  EXPECT_EQ(taskRun["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
  EXPECT_EQ(taskRun["metadata"]["labels"]["tekton.dev/pipelineTask"], "compile");
  EXPECT_EQ(taskRun["metadata"]["annotations"]["kueue.x-k8s.io/workload"], "wl");
  EXPECT_EQ(taskRun["spec"]["podTemplate"], run["spec"]["taskRunTemplate"]["podTemplate"]);

  const json pod = get(pods, "build-compile-pod");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "TaskRun");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], taskRun["metadata"]["uid"]);
  EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
  EXPECT_EQ(pod["metadata"]["labels"]["tekton.dev/taskRun"], "build-compile");
  EXPECT_EQ(pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"], "wl");
  EXPECT_EQ(pod["spec"]["nodeSelector"], json({{"gpu", "a100"}}));
  EXPECT_EQ(pod["spec"]["tolerations"], json::array({toleration}));
  EXPECT_EQ(pod["spec"]["containers"][0]["name"], "step-make");
  EXPECT_EQ(get(pods, "build-test-pod")["metadata"]["labels"]["tekton.dev/pipelineTask"], "test");
  EXPECT_TRUE(test::eventually([&] { return controller->starts("default/build") == 1; }))
      << "counted once its tasks exist";
}

TEST_F(JobControllerStandInTest, ArgoReadsRunningWhileSuspendedAndRunsPodsOnlyWhenResumed) {
  const auto flow = [](const std::string& name, bool suspended, bool labelled) {
    json wf = {{"apiVersion", "argoproj.io/v1alpha1"},
               {"kind", "Workflow"},
               {"metadata", {{"name", name}}},
               {"spec", {{"entrypoint", "main"}, {"suspend", suspended}}}};
    if (labelled) wf["metadata"]["labels"] = {{"workflows.argoproj.io/controller-instanceid", "multikueue"}};
    return wf;
  };
  api.create(flows, flow("managers-copy", false, true));
  api.create(flows, flow("queued", true, false));
  start(Style::Argo);

  ASSERT_TRUE(test::eventually([&] { return status(flows, "queued").value("phase", "") == "Running"; }));
  EXPECT_FALSE(status(flows, "queued").contains("nodes")) << "no pods while suspended";
  EXPECT_EQ(controller->starts("default/queued"), 0);
  edit(flows, "queued", [](json& job) { job["spec"].erase("suspend"); });
  ASSERT_TRUE(test::eventually([&] { return status(flows, "queued").contains("nodes"); }));
  EXPECT_EQ(controller->starts("default/queued"), 1);
  // A container entrypoint's one node is the root, the Workflow's pod.
  const json node = status(flows, "queued")["nodes"].value("queued", json::object());
  EXPECT_EQ(node.value("type", ""), "Pod") << status(flows, "queued").dump();
  EXPECT_EQ(node.value("phase", ""), "Running");
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return status(flows, "queued").value("phase", "") == "Succeeded"; }));
  EXPECT_EQ(status(flows, "queued")["nodes"]["queued"].value("phase", ""), "Succeeded");
  EXPECT_FALSE(get(flows, "managers-copy").contains("status")) << "a controller without an instanceID ignores it";
}

// Suspending a Workflow stops no running pod: it runs until its step ends; no new step starts
// and the Workflow stays Running until it is resumed, when the remaining steps run.
TEST_F(JobControllerStandInTest, ASuspendedWorkflowsPodRunsUntilItsStepEndsAndNoNewStepStarts) {
  api.create(flows, json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "etl"},
    "spec": {"entrypoint": "main", "templates": [
      {"name": "main", "steps": [[{"name": "extract", "template": "work"}], [{"name": "load", "template": "work"}]]},
      {"name": "work", "container": {"image": "busybox"}}]}})"));
  start(Style::Argo);
  // Argo's node ids: the Workflow's name for the root, else the name and the FNV-1a hash of the
  // node's name ("etl[0].extract").
  const std::string extract = "etl-3078942605", load = "etl-3635643563";
  const auto nodes = [&] { return status(flows, "etl").value("nodes", json::object()); };
  const auto phaseOf = [&](const std::string& id) { return nodes().value(id, json::object()).value("phase", ""); };
  ASSERT_TRUE(test::eventually([&] { return phaseOf(extract) == "Running"; })) << status(flows, "etl").dump();
  EXPECT_EQ(nodes()["etl"].value("type", ""), "Steps");
  EXPECT_EQ(nodes()["etl"].value("phase", ""), "Running");
  EXPECT_EQ(nodes()[extract].value("type", ""), "Pod");
  EXPECT_EQ(nodes()[extract].value("name", ""), "etl[0].extract");
  EXPECT_EQ(nodes()["etl-1416280458"].value("type", ""), "StepGroup");
  EXPECT_EQ(controller->running(), 1u);

  edit(flows, "etl", [](json& job) { job["spec"]["suspend"] = true; });
  clock.advance(std::chrono::seconds{5});
  EXPECT_EQ(phaseOf(extract), "Running") << "the pod runs on";
  clock.advance(std::chrono::seconds{5});
  ASSERT_TRUE(test::eventually([&] { return phaseOf(extract) == "Succeeded"; })) << status(flows, "etl").dump();
  // Written in the pass that would have started the next step, had the Workflow been resumed.
  EXPECT_FALSE(nodes().contains(load)) << "no new step while suspended";
  EXPECT_EQ(status(flows, "etl").value("phase", ""), "Running");
  EXPECT_TRUE(test::eventually([&] { return controller->running() == 0; }));

  edit(flows, "etl", [](json& job) { job["spec"].erase("suspend"); });
  ASSERT_TRUE(test::eventually([&] { return phaseOf(load) == "Running"; })) << status(flows, "etl").dump();
  EXPECT_EQ(controller->starts("default/etl"), 1) << "one run, resumed";
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return status(flows, "etl").value("phase", "") == "Succeeded"; }));
  EXPECT_EQ(phaseOf(load), "Succeeded");
  EXPECT_EQ(phaseOf("etl"), "Succeeded");
}

// A Workflow pod nothing can schedule: its Pod node reads Pending, which is no start; a
// suspension deletes no pod, so it runs once it can be scheduled, suspended or not.
TEST_F(JobControllerStandInTest, AWorkflowPodThatCannotBeScheduledStaysPendingSuspendedOrNot) {
  auto noNode = std::make_shared<std::atomic<bool>>(true);  // outlives the controller's thread
  api.create(flows, {{"apiVersion", "argoproj.io/v1alpha1"},
                     {"kind", "Workflow"},
                     {"metadata", {{"name", "wf"}}},
                     {"spec", {{"entrypoint", "main"}}}});
  start(Style::Argo, [noNode](const json&) { return noNode->load(); });
  const auto podPhase = [&] {
    return status(flows, "wf").value("nodes", json::object()).value("wf", json::object()).value("phase", "");
  };
  ASSERT_TRUE(test::eventually([&] { return podPhase() == "Pending"; })) << status(flows, "wf").dump();
  EXPECT_FALSE(status(flows, "wf")["nodes"]["wf"].contains("startedAt"));
  clock.advance(std::chrono::minutes{10});
  EXPECT_EQ(controller->starts("default/wf"), 0);

  edit(flows, "wf", [](json& job) { job["spec"]["suspend"] = true; });
  *noNode = false;
  ASSERT_TRUE(test::eventually([&] { return podPhase() == "Running"; })) << "scheduled while suspended";
  EXPECT_EQ(controller->starts("default/wf"), 1);
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return podPhase() == "Succeeded"; })) << status(flows, "wf").dump();
  EXPECT_EQ(status(flows, "wf").value("phase", ""), "Running") << "suspended: it ends once resumed";
}

TEST_F(JobControllerStandInTest, AnInHouseRunStartsOverAfterASuspension) {
  api.create(trainings, {{"apiVersion", "ml.example.com/v1"},
                         {"kind", "TrainingRun"},
                         {"metadata", {{"name", "t"}}},
                         {"spec", {{"replicas", 3}, {"template", json::object()}}}});
  start(Style::InHouse);
  ASSERT_TRUE(test::eventually([&] { return status(trainings, "t").value("activeReplicas", 0) == 3; }));
  edit(trainings, "t", [](json& job) { job["spec"]["suspend"] = true; });
  ASSERT_TRUE(test::eventually([&] { return status(trainings, "t").value("activeReplicas", -1) == 0; }));
  clock.advance(std::chrono::seconds{10});
  edit(trainings, "t", [](json& job) { job["spec"].erase("suspend"); });
  // The start is counted before the status that records it is written.
  ASSERT_TRUE(test::eventually([&] {
    return controller->starts("default/t") == 2 && condition(get(trainings, "t"), "Running")["status"] == "True";
  }));
  EXPECT_EQ(succeeded(get(trainings, "t")), nullptr) << "the run started over";
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return succeeded(get(trainings, "t"))["status"] == "True"; }));
}

// Pods nothing can schedule (the scheduler's doing, modelled by Options::podsPending): the
// replicas exist but do not run, the run time does not pass and no start is counted; a
// suspension deletes them; once they can be scheduled they run.
TEST_F(JobControllerStandInTest, AnInHouseRunWhosePodsStayPendingDoesNotStart) {
  const auto noNode = startWithPendingPods(2);
  ASSERT_TRUE(test::eventually([&] { return condition(get(trainings, "t"), "Running")["reason"] == "PodsPending"; }));
  EXPECT_EQ(status(trainings, "t").value("activeReplicas", 0), 2) << "created, Pending";
  EXPECT_EQ(condition(get(trainings, "t"), "Running")["status"], "False");
  clock.advance(std::chrono::minutes{10});
  EXPECT_EQ(controller->starts("default/t"), 0);
  EXPECT_EQ(succeeded(get(trainings, "t")), nullptr) << "Pending pods do not run";

  edit(trainings, "t", [](json& job) { job["spec"]["suspend"] = true; });
  ASSERT_TRUE(test::eventually([&] { return status(trainings, "t").value("activeReplicas", -1) == 0; }));
  EXPECT_EQ(condition(get(trainings, "t"), "Running")["reason"], "Suspended");

  *noNode = false;
  edit(trainings, "t", [](json& job) { job["spec"].erase("suspend"); });
  ASSERT_TRUE(test::eventually([&] { return condition(get(trainings, "t"), "Running")["status"] == "True"; }));
  EXPECT_EQ(controller->starts("default/t"), 1);
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return succeeded(get(trainings, "t"))["status"] == "True"; }));
  EXPECT_EQ(controller->starts("default/t"), 1);
}

// Pending replicas that can be scheduled later run then, without any change to the job.
TEST_F(JobControllerStandInTest, PendingReplicasRunOnceTheyCanBeScheduled) {
  const auto noNode = startWithPendingPods(1);
  ASSERT_TRUE(test::eventually([&] { return condition(get(trainings, "t"), "Running")["reason"] == "PodsPending"; }));
  *noNode = false;
  ASSERT_TRUE(test::eventually([&] { return condition(get(trainings, "t"), "Running")["status"] == "True"; }));
  EXPECT_EQ(controller->starts("default/t"), 1);
}

}  // namespace
}  // namespace mka::standin
