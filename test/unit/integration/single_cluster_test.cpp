// The job integration running as deployed on one cluster (SPEC §7.2, "Roles": no MultiKueue):
// an in-house kind queued by Kueue (its core played by the Kueue stand-in, which admits and
// evicts the Workload and never touches the job), run by its own controller (the generic job
// controller stand-in): restarted mid-flight, and evicted and readmitted with a flavor's node
// selector; Workflows and PipelineRuns with theirs beside it, run by the Argo and Tekton
// stand-ins (a PipelineRun's TaskRuns through the adapter's /mutate-children webhook).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <functional>

#include <gtest/gtest.h>

#include "mka/api/workload_status.h"
#include "mka/common/base64.h"
#include "mka/config/store.h"
#include "mka/deploy/manifests.h"
#include "mka/integration/controller.h"
#include "mka/integration/workload_builder.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/rate_limiter.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"
#include "mka/standin/job_controller_standin.h"
#include "mka/standin/kueue_standin.h"
#include "mka/webhook/admission_handler.h"
#include "support/crd_fixtures.h"
#include "support/eventually.h"
#include "support/temp_dir.h"
#include "support/tls.h"
#include "training_run.h"

namespace mka::integration {
namespace {

using nlohmann::json;
using namespace fixture;

class SingleCluster : public ::testing::Test {
 protected:
  static constexpr std::chrono::seconds kReadmitDelay{60};

  explicit SingleCluster(standin::KueueStandIn::Options kueueOptions = {.role = standin::KueueStandIn::Role::Worker,
                                                                        .readmitDelay = kReadmitDelay},
                         standin::JobControllerStandIn::Options runnerOptions = {.runTime = std::chrono::seconds{10}})
      : cluster(sandbox.addCluster(
            {.name = "single",
             .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "kueue.x-k8s.io_resourceflavors.yaml",
                          kCrds / "kueue.x-k8s.io_clusterqueues.yaml", kCrds / "kueue.x-k8s.io_localqueues.yaml",
                          kCrds / "argoproj.io_workflows.minimal.yaml", kTrainingRunCrd}})),
        kueue(cluster.api(), clock, std::move(kueueOptions)),
        runner(cluster.api(), clock, std::move(runnerOptions)) {
    cluster.api().create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "team-a"}}}});
    // One flavor for CPU, whose pods go to on-demand nodes.
    createQueue("on-demand", {{"nodeLabels", {{"example.com/capacity", "on-demand"}}}}, "cq", "cpu", "8", "lq");
    kube::ClientOptions options;
    options.qps = 0;
    client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(cluster.kubeconfig())), options));
    kueue.start();
    runner.start();
  }

  // ResourceFlavor `flavor`, ClusterQueue `clusterQueue` giving `quota` of `resource` in it to
  // every namespace, and LocalQueue team-a/`localQueue` of it.
  void createQueue(const std::string& flavor, const json& flavorSpec, const std::string& clusterQueue,
                   const std::string& resource, const std::string& quota, const std::string& localQueue) {
    cluster.api().create({"kueue.x-k8s.io", "v1beta2", "resourceflavors", "", "", ""},
                         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                          {"kind", "ResourceFlavor"},
                          {"metadata", {{"name", flavor}}},
                          {"spec", flavorSpec}});
    const json flavors = {{{"name", flavor}, {"resources", {{{"name", resource}, {"nominalQuota", quota}}}}}};
    cluster.api().create({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""},
                         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                          {"kind", "ClusterQueue"},
                          {"metadata", {{"name", clusterQueue}}},
                          {"spec",
                           {{"namespaceSelector", json::object()},
                            {"resourceGroups", {{{"coveredResources", {resource}}, {"flavors", flavors}}}}}}});
    cluster.api().create({"kueue.x-k8s.io", "v1beta2", "localqueues", "team-a", "", ""},
                         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                          {"kind", "LocalQueue"},
                          {"metadata", {{"name", localQueue}, {"namespace", "team-a"}}},
                          {"spec", {{"clusterQueue", clusterQueue}}}});
  }

  // `change` changes each kind's rules (TrainingRun's as trainingRuns() has them, Workflow's
  // profile) as the test needs; `more`: kinds beside the TrainingRun and the Workflow, whose CRDs
  // the test created.
  std::unique_ptr<IntegrationController> startIntegration(
      IntegrationController::Options options = {},
      const std::function<void(config::IntegratedFramework&)>& change = nullptr,
      std::vector<jobkind::JobKind> more = {}) {
    const api::GroupVersionKind workflowGvk{"argoproj.io", "v1alpha1", "Workflow"};
    std::vector<jobkind::JobKind> kinds{
        trainingRuns(),
        jobkind::JobKind(config::ExternalFramework{"Workflow.v1alpha1.argoproj.io", workflowGvk, {}, false},
                         *config::integrationProfile(workflowGvk), false)};
    for (auto& kind : kinds) {
      if (!change) break;
      auto rules = *kind.integration();
      change(rules);
      kind = jobkind::JobKind(kind.framework(), rules, false);
    }
    for (auto& kind : more) kinds.push_back(std::move(kind));
    auto controller = std::make_unique<IntegrationController>(*client, std::move(kinds), clock, std::move(options));
    controller->start(std::chrono::seconds{30});
    return controller;
  }

  std::vector<json> workloads() { return cluster.api().list(kWorkloads, {})["items"].get<std::vector<json>>(); }
  // The Workload job `job` owns, if any.
  std::optional<json> workloadOf(const std::string& job) {
    for (const auto& w : workloads())
      if (w.at(json::json_pointer("/metadata/ownerReferences/0/name")) == job) return w;
    return std::nullopt;
  }
  json job() { return cluster.api().get({kJobs.group, kJobs.version, kJobs.plural, "team-a", "train", ""}); }
  static json trainingRun(const std::string& name) {
    return {{"apiVersion", "ml.example.com/v1"},
            {"kind", "TrainingRun"},
            {"metadata", {{"name", name}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
            {"spec",
             {{"suspend", true},
              {"replicas", 2},
              {"template",
               {{"spec",
                 {{"containers",
                   {{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}}}}}}};
  }
  void createJob() { cluster.api().create(kJobs, trainingRun("train")); }
  // "<type> <reason>: <message>" of every Event about job `name`.
  std::vector<std::string> eventsAbout(const std::string& name) {
    std::vector<std::string> out;
    const auto events = cluster.api().list({"", "v1", "events", "team-a", "", ""}, {});
    for (const auto& event : events.at("items"))
      if (event["involvedObject"].value("name", "") == name)
        out.push_back(event.value("type", "") + " " + event.value("reason", "") + ": " + event.value("message", ""));
    return out;
  }
  // How many times an Event about job "train" with `reason` was recorded (repeats count on
  // one Event, as client-go aggregates them).
  long trainEvents(const std::string& reason) {
    long times = 0;
    const auto events = cluster.api().list({"", "v1", "events", "team-a", "", ""}, {});
    for (const auto& event : events.at("items"))
      if (event["involvedObject"].value("name", "") == "train" && event.value("reason", "") == reason)
        times += event.value("count", 1);
    return times;
  }

  FakeClock clock;
  sandbox::Sandbox sandbox{clock};
  sandbox::Cluster& cluster;
  standin::KueueStandIn kueue;
  standin::JobControllerStandIn runner;
  std::unique_ptr<kube::Client> client;
};

TEST_F(SingleCluster, AnInHouseJobIsQueuedResumedOnceAndFinishedOnceAcrossARestart) {
  auto integration = startIntegration();
  createJob();

  ASSERT_TRUE(test::eventually([&] { return !job()["spec"].value("suspend", false); }))
      << "resumed once its Workload was admitted: " << job().dump();
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; }));
  ASSERT_EQ(workloads().size(), 1u);
  EXPECT_TRUE(api::isAdmitted(workloads()[0]));

  // The adapter restarts while the job runs: its caches are rebuilt from scratch.
  integration->stop();
  integration = startIntegration();

  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && api::isFinished(all[0]) && !all[0]["metadata"].contains("finalizers");
  })) << workloads().at(0).dump();
  const json workload = workloads().at(0);
  const auto* finished = api::findCondition(workload, "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->value("reason", ""), "Succeeded");
  EXPECT_EQ(finished->value("message", ""), "the training run completed");
  EXPECT_EQ(runner.starts("team-a/train"), 1) << "resumed once";
  EXPECT_EQ(workloads().size(), 1u) << "one Workload";
  EXPECT_TRUE(test::eventually([&] { return integration->idle(); }));
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
}

TEST_F(SingleCluster, AnEvictedInHouseJobStopsIsRestoredAndRunsAgainWithItsFlavor) {
  auto integration = startIntegration();
  createJob();
  const auto nodeSelector = json::json_pointer("/spec/template/spec/nodeSelector");

  // Admitted on the on-demand flavor: resumed with the flavor's node labels in its pod template.
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << job().dump();
  const auto admitted = workloads();
  ASSERT_EQ(admitted.size(), 1u);
  const auto wlName = admitted[0]["metadata"].value("name", "");
  const json assignment = admitted[0].at(json::json_pointer("/status/admission/podSetAssignments/0"));
  EXPECT_EQ(assignment["flavors"], json({{"cpu", "on-demand"}}));
  EXPECT_EQ(assignment["resourceUsage"], json({{"cpu", "1"}})) << "two replicas of 500m";
  EXPECT_EQ(job().at(nodeSelector), json({{"example.com/capacity", "on-demand"}}));

  // Kueue evicts it (preemption): our integration stops the job, restores its pod template and
  // releases the reservation; Kueue requeues it after its backoff.
  kueue.evict("team-a", wlName);
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return runner.running() == 0 && !api::hasQuotaReservation(all.at(0));
  })) << workloads().at(0).dump();
  EXPECT_TRUE(job()["spec"].value("suspend", false));
  EXPECT_FALSE(job().contains(nodeSelector)) << "the pod template as the user wrote it: " << job().dump();
  const json evicted = workloads().at(0);
  EXPECT_FALSE(evicted["status"].contains("admission"));
  const auto* requeued = api::findCondition(evicted, "Requeued");
  ASSERT_NE(requeued, nullptr) << evicted.dump();
  EXPECT_EQ(requeued->value("status", ""), "True");
  EXPECT_EQ(requeued->value("reason", ""), "Preempted");
  ASSERT_TRUE(test::eventually([&] { return trainEvents("Stopped") == 1; }))
      << ::testing::PrintToString(eventsAbout("train"));

  // Readmitted after the backoff: resumed on the flavor again, run to the end, finished once.
  clock.advance(kReadmitDelay);
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << workloads().at(0).dump();
  EXPECT_EQ(job().at(nodeSelector), json({{"example.com/capacity", "on-demand"}}));
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && api::isFinished(all[0]) && !all[0]["metadata"].contains("finalizers");
  })) << workloads().at(0).dump();
  EXPECT_EQ(runner.starts("team-a/train"), 2) << "run, evicted, run again";
  EXPECT_EQ(workloads().size(), 1u) << "one Workload throughout";
  EXPECT_EQ(trainEvents("Started"), 2) << ::testing::PrintToString(eventsAbout("train"));
  EXPECT_EQ(trainEvents("CreatedWorkload"), 1) << ::testing::PrintToString(eventsAbout("train"));
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
}

// A Workflow has no pod template: Argo gives every pod the Workflow's spec.nodeSelector,
// spec.tolerations and spec.podMetadata, so that is where the flavor goes, and where stopping
// restores the Workflow as the user wrote it.
TEST_F(SingleCluster, AWorkflowRunsWithItsFlavorInTheWorkflowWideNodeSelector) {
  standin::JobControllerStandIn argo(cluster.api(), clock, {.style = standin::JobControllerStandIn::Style::Argo});
  argo.start();
  auto integration = startIntegration();
  const sandbox::ResourceRef workflows{"argoproj.io", "v1alpha1", "workflows", "team-a", "", ""};
  auto etl = workflows;
  etl.name = "etl";
  cluster.api().create(
      workflows, {{"apiVersion", "argoproj.io/v1alpha1"},
                  {"kind", "Workflow"},
                  {"metadata", {{"name", "etl"}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
                  {"spec",
                   {{"suspend", true},
                    {"entrypoint", "main"},
                    {"nodeSelector", {{"disk", "ssd"}}},
                    {"templates",
                     {{{"name", "main"},
                       {"container", {{"image", "busybox"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}}}});
  const auto workflow = [&] { return cluster.api().get(etl); };

  ASSERT_TRUE(test::eventually([&] { return argo.running() == 1; })) << workflow().dump();
  EXPECT_EQ(workflow()["spec"]["nodeSelector"], json({{"disk", "ssd"}, {"example.com/capacity", "on-demand"}}));
  EXPECT_EQ(workflow()["spec"]["podMetadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
  const auto wl = workloads().at(0);
  EXPECT_EQ(wl.at(json::json_pointer("/spec/podSets/0/template/spec/nodeSelector")), json({{"disk", "ssd"}}))
      << "Kueue sees the node selector the Workflow's pods have";

  kueue.evict("team-a", wl["metadata"].value("name", ""));
  // Argo keeps a suspended Workflow's phase Running: what tells is spec.suspend.
  ASSERT_TRUE(test::eventually([&] { return workflow()["spec"].value("suspend", false); })) << workflow().dump();
  EXPECT_EQ(workflow()["spec"]["nodeSelector"], json({{"disk", "ssd"}})) << "as the user wrote it";
  EXPECT_FALSE(workflow()["spec"].contains("podMetadata")) << workflow().dump();
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
}

// Suspending a Workflow stops no running pod (Argo runs it until its step ends): a deactivated
// Workflow is stopped at once, but its Workload keeps the quota until its pod node says the pod
// ended, and only then does Kueue admit the next Workflow onto that capacity (Kueue's IsActive,
// KUEUE-JOBFRAMEWORK.md §4.2 step 18). Everything runs on the fake clock.
// Kueue with waitForPodsReady (a 5-minute timeout, a 60 s backoff base), beside a TrainingRun
// controller whose replicas stay Pending while `noNode` holds: nothing can schedule them.
class SingleClusterWaitingForPodsReady : public SingleCluster {
 protected:
  static constexpr std::chrono::minutes kTimeout{5};
  static constexpr std::chrono::seconds kBackoff{60};

  SingleClusterWaitingForPodsReady()
      : SingleCluster(
            {.role = standin::KueueStandIn::Role::Worker,
             .readmitDelay = kReadmitDelay,
             .waitForPodsReady = standin::KueueStandIn::WaitForPodsReady{kTimeout, std::nullopt, kBackoff.count()}},
            {.runTime = std::chrono::seconds{10}, .podsPending = [this](const json&) { return noNode.load(); }}) {}
  ~SingleClusterWaitingForPodsReady() override { runner.stop(); }  // before noNode goes

  // The integration, with TrainingRun's podsReady rule (its Running condition) and
  // waitForPodsReady on.
  std::unique_ptr<IntegrationController> startWaitingIntegration() {
    return startIntegration({}, [](config::IntegratedFramework& rules) {
      if (!rules.podsReady)  // the Workflow profile has its own
        rules.podsReady = config::ActiveRule{
            .type = config::ActiveRule::Type::Condition, .conditionType = "Running", .conditionStatus = "True"};
      rules.waitForPodsReady = true;
    });
  }
  json workload() { return workloads().at(0); }
  std::string podsReady() {
    const auto all = workloads();
    const auto* c = all.empty() ? nullptr : api::findCondition(all[0], "PodsReady");
    return c == nullptr ? "" : c->value("status", "") + "/" + c->value("reason", "");
  }

  std::atomic<bool> noNode{true};
};

// KUEUE-JOBFRAMEWORK scenario 44 end to end: the job's pods never start, so its Workload stays
// PodsReady=False; Kueue evicts it after the timeout, the integration stops the job (its
// Pending replicas go) and releases it; once nodes are there it is readmitted after the backoff,
// runs, becomes PodsReady, and finishes: its pods ran exactly once.
TEST_F(SingleClusterWaitingForPodsReady, AJobWhosePodsNeverStartIsRequeuedAfterTheTimeoutAndRunsOnce) {
  auto integration = startWaitingIntegration();
  createJob();
  ASSERT_TRUE(test::eventually([&] { return !job()["spec"].value("suspend", false); })) << job().dump();
  ASSERT_TRUE(test::eventually([&] { return podsReady() == "False/WaitForStart" && kueue.idle(); }))
      << workload().dump();
  EXPECT_EQ(api::findCondition(workload(), "PodsReady")->value("message", ""), "Not all pods are ready or succeeded");
  EXPECT_EQ(runner.starts("team-a/train"), 0) << "its replicas are Pending";

  // A second early: nothing happens. At the timeout: evicted, stopped, released.
  clock.advance(kTimeout - std::chrono::seconds{1});
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] { return kueue.idle(); }));
  EXPECT_FALSE(api::isEvicted(workload()));
  clock.advance(std::chrono::seconds{1});
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] {
    const auto* requeued = api::findCondition(workload(), "Requeued");
    return requeued != nullptr && !api::hasQuotaReservation(workload()) && job()["spec"].value("suspend", false);
  })) << workload().dump();
  const json evicted = workload();
  const auto* eviction = api::findCondition(evicted, "Evicted");
  EXPECT_EQ(eviction->value("reason", ""), "PodsReadyTimeout");
  EXPECT_EQ(eviction->value("message", ""),
            "Exceeded the PodsReady timeout team-a/" + evicted["metadata"].value("name", ""));
  EXPECT_EQ(api::findCondition(evicted, "Requeued")->value("status", ""), "False");
  EXPECT_EQ(api::findCondition(evicted, "Requeued")->value("reason", ""), "PodsReadyTimeout");
  EXPECT_EQ(evicted["status"]["requeueState"]["count"], 1);
  ASSERT_TRUE(test::eventually([&] { return job()["status"].value("activeReplicas", -1) == 0; }))
      << "the Pending replicas deleted: " << job().dump();

  // Nodes appear; at requeueAt (the backoff, also the stand-in's readmitDelay) it is readmitted
  // and runs.
  noNode = false;
  ASSERT_TRUE(test::eventually([&] { return kueue.idle(); }));
  EXPECT_FALSE(api::hasQuotaReservation(workload())) << "not before requeueAt";
  clock.advance(kBackoff);
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << workload().dump();
  ASSERT_TRUE(test::eventually([&] { return podsReady() == "True/Started"; })) << workload().dump();
  EXPECT_EQ(api::findCondition(workload(), "Requeued")->value("reason", ""), "BackoffFinished");

  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && api::isFinished(all[0]) && !all[0]["metadata"].contains("finalizers");
  })) << workload().dump();
  EXPECT_EQ(api::findCondition(workload(), "Finished")->value("reason", ""), "Succeeded");
  EXPECT_EQ(runner.starts("team-a/train"), 1) << "its pods ran exactly once";
  EXPECT_EQ(trainEvents("Started"), 2) << "resumed twice: " << ::testing::PrintToString(eventsAbout("train"));
  EXPECT_EQ(trainEvents("Stopped"), 1) << ::testing::PrintToString(eventsAbout("train"));
  EXPECT_EQ(workloads().size(), 1u) << "one Workload throughout";
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
}

// The same with a Workflow: suspending it deletes no pod, so its Pending pod keeps the
// Workload's reservation after the PodsReadyTimeout eviction (the profile's active rule, as
// Kueue's IsActive); once a node is there the pod runs, suspended, and ends; the reservation is
// released, the Workload readmitted at requeueAt and the Workflow resumed ends: one pod run.
TEST_F(SingleClusterWaitingForPodsReady, AWorkflowWhosePodCannotStartKeepsItsQuotaUntilThePodHasRun) {
  standin::JobControllerStandIn argo(cluster.api(), clock,
                                     {.style = standin::JobControllerStandIn::Style::Argo,
                                      .podsPending = [this](const json&) { return noNode.load(); }});
  argo.start();
  auto integration = startWaitingIntegration();
  sandbox::ResourceRef wf{"argoproj.io", "v1alpha1", "workflows", "team-a", "", ""};
  cluster.api().create(wf, {{"apiVersion", "argoproj.io/v1alpha1"},
                            {"kind", "Workflow"},
                            {"metadata", {{"name", "one"}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
                            {"spec", {{"suspend", true}, {"entrypoint", "main"}}}});
  wf.name = "one";
  const auto podPhase = [&] {
    return cluster.api()
        .get(wf)
        .value("status", json::object())
        .value("nodes", json::object())
        .value("one", json::object())
        .value("phase", "");
  };
  ASSERT_TRUE(test::eventually([&] { return podPhase() == "Pending" && podsReady() == "False/WaitForStart"; }))
      << cluster.api().get(wf).dump();
  ASSERT_TRUE(test::eventually([&] { return kueue.idle() && integration->idle(); }));

  clock.advance(kTimeout);
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] {
    return api::isEvicted(workload()) && cluster.api().get(wf)["spec"].value("suspend", false) && integration->idle();
  })) << workload().dump();
  EXPECT_EQ(api::findCondition(workload(), "Evicted")->value("reason", ""), "PodsReadyTimeout");
  EXPECT_TRUE(api::hasQuotaReservation(workload())) << "its Pending pod may still run";
  EXPECT_EQ(podPhase(), "Pending") << "suspending deletes no pod";

  noNode = false;
  ASSERT_TRUE(test::eventually([&] { return podPhase() == "Running" && argo.starts("team-a/one") == 1; }));
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] { return podPhase() == "Succeeded" && !api::hasQuotaReservation(workload()); }))
      << workload().dump();
  EXPECT_EQ(api::findCondition(workload(), "Requeued")->value("reason", ""), "PodsReadyTimeout");

  clock.advance(kBackoff);
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && api::isFinished(all[0]) && !all[0]["metadata"].contains("finalizers");
  })) << workload().dump();
  EXPECT_EQ(cluster.api().get(wf)["status"].value("phase", ""), "Succeeded");
  EXPECT_EQ(argo.starts("team-a/one"), 1) << "its pod ran once";
  EXPECT_EQ(workload()["status"]["requeueState"]["count"], 1);
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
}

TEST_F(SingleCluster, AStoppedWorkflowKeepsItsQuotaUntilItsRunningPodEnds) {
  standin::JobControllerStandIn argo(cluster.api(), clock, {.style = standin::JobControllerStandIn::Style::Argo});
  argo.start();
  auto integration = startIntegration();
  const sandbox::ResourceRef workflows{"argoproj.io", "v1alpha1", "workflows", "team-a", "", ""};
  // Two steps of 5 CPUs each: the ClusterQueue (8 CPUs) has room for one such Workflow.
  const auto createWorkflow = [&](const std::string& name) {
    json wf = json::parse(R"({
      "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
      "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "lq"}},
      "spec": {"suspend": true, "entrypoint": "main", "templates": [
        {"name": "main", "steps": [[{"name": "extract", "template": "work"}], [{"name": "load", "template": "work"}]]},
        {"name": "work", "container": {"image": "busybox", "resources": {"requests": {"cpu": "5"}}}}]}})");
    wf["metadata"]["name"] = name;
    cluster.api().create(workflows, wf);
  };
  const auto workflow = [&](const std::string& name) {
    auto ref = workflows;
    ref.name = name;
    return cluster.api().get(ref);
  };
  const auto reserved = [&](const std::string& job) {
    const auto w = workloadOf(job);
    return w && api::hasQuotaReservation(*w);
  };
  // A's pod node for its first step ("a[0].extract"; Argo's id: the name and the FNV-1a hash).
  const auto extractPhase = [&] {
    const json nodes = workflow("a").value("status", json::object()).value("nodes", json::object());
    for (const auto& [id, node] : nodes.items())
      if (node.value("name", "") == "a[0].extract") return node.value("phase", "");
    return std::string();
  };
  const auto settled = [&] { return integration->idle() && kueue.idle(); };

  createWorkflow("a");
  ASSERT_TRUE(test::eventually([&] { return extractPhase() == "Running"; })) << workflow("a").dump();
  createWorkflow("b");
  ASSERT_TRUE(test::eventually([&] { return workloadOf("b") && settled(); }));
  ASSERT_FALSE(reserved("b")) << "no room while A runs: " << workloadOf("b")->dump();

  // A's Workload is deactivated: Kueue evicts it, the integration stops A at once.
  for (int attempt = 0;; ++attempt) {
    json w = *workloadOf("a");
    w["spec"]["active"] = false;
    try {
      cluster.api().update(
          {kWorkloads.group, kWorkloads.version, kWorkloads.plural, "team-a", w["metadata"].value("name", ""), ""}, w);
      break;
    } catch (const sandbox::ApiError& e) {
      ASSERT_TRUE(e.code() == 409 && attempt < 20) << e.what();
    }
  }
  ASSERT_TRUE(test::eventually([&] {
    return workflow("a")["spec"].value("suspend", false) && api::isEvicted(*workloadOf("a")) && settled();
  })) << workloadOf("a")->dump();
  EXPECT_EQ(extractPhase(), "Running") << "suspending stops no running pod";
  EXPECT_TRUE(reserved("a")) << "the pod still holds its capacity: " << workloadOf("a")->dump();
  EXPECT_FALSE(reserved("b"));

  // Half the step later the pod still runs: A keeps the quota, B waits.
  clock.advance(std::chrono::seconds{5});
  kueue.poke();
  ASSERT_TRUE(test::eventually(settled));
  EXPECT_EQ(extractPhase(), "Running");
  EXPECT_TRUE(reserved("a"));
  EXPECT_FALSE(reserved("b"));

  // The step ends: A's pod node goes Succeeded, no new step starts, the integration releases
  // A's reservation and Kueue admits B, which runs.
  clock.advance(std::chrono::seconds{5});
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] { return reserved("b") && argo.starts("team-a/b") == 1; }))
      << workloadOf("b")->dump();
  EXPECT_EQ(extractPhase(), "Succeeded");
  EXPECT_EQ(workflow("a")["status"].value("phase", ""), "Running") << "suspended, not finished";
  const json released = *workloadOf("a");
  EXPECT_FALSE(api::hasQuotaReservation(released));
  EXPECT_FALSE(released["status"].contains("admission"));
  const auto* requeued = api::findCondition(released, "Requeued");
  ASSERT_NE(requeued, nullptr) << released.dump();
  EXPECT_EQ(requeued->value("status", ""), "False");
  EXPECT_EQ(requeued->value("reason", ""), "Deactivated");
  const auto events = eventsAbout("a");
  EXPECT_EQ(std::count(events.begin(), events.end(), "Normal Stopped: The workload is deactivated"), 1)
      << ::testing::PrintToString(events);
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
  argo.stop();
}

// The adapter's /mutate-children as deployed on `cluster`: the MutatingWebhookConfiguration
// entries `manifests` renders for `config`, their Service resolved to a TLS server on loopback
// answering with the AdmissionHandler `serve` runs.
// Threads: made and destroyed by the test thread; the server's threads call the handler.
class ChildWebhook {
 public:
  ChildWebhook(sandbox::Sandbox& sandbox, sandbox::Cluster& cluster, config::Configuration config)
      : store_(std::move(config)), handler_(store_, queues_, nullptr) {
    const std::string host = std::string(deploy::kWebhookService) + "." + std::string(deploy::kNamespace) + ".svc";
    const auto files =
        test::writeServingFiles(dir_ / "serving", ca_, ca_.issue({.commonName = host, .dnsNames = {host}}));
    certificates_ = std::make_shared<net::CertificateReloader>(files.cert, files.key);
    certificates_->start();
    server_ = std::make_unique<net::HttpServer>(net::ServerOptions{.name = "child-webhook", .host = "127.0.0.1"},
                                                certificates_);
    server_->handleEverything([this](const httplib::Request& req, httplib::Response& res) {
      const auto out = handler_.handle({req.method, req.path, req.get_header_value("Content-Type"), req.body});
      res.status = out.status;
      res.set_content(out.body, out.contentType);
    });
    sandbox.services().expose(std::string(deploy::kNamespace), std::string(deploy::kWebhookService), 443, "127.0.0.1",
                              server_->start());
    for (const auto& manifest : deploy::renderManifests(*store_.get(), "")) {
      if (manifest.object.value("kind", "") != "MutatingWebhookConfiguration") continue;
      json configuration = json::parse(manifest.object.dump());
      json hooks = json::array();
      for (auto& hook : configuration["webhooks"]) {
        if (hook["clientConfig"]["service"]["path"] != "/mutate-children") continue;
        hook["clientConfig"]["caBundle"] = base64Encode(ca_.certPem());
        hooks.push_back(hook);
      }
      configuration["webhooks"] = hooks;
      cluster.api().create({"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "", "", ""},
                           configuration);
    }
  }
  ~ChildWebhook() {
    server_->stop();
    certificates_->stop();
  }
  ChildWebhook(const ChildWebhook&) = delete;
  ChildWebhook& operator=(const ChildWebhook&) = delete;

 private:
  test::TempDir dir_;
  test::TestCa ca_{"child-webhook-ca"};
  config::ConfigStore store_;
  webhook::InMemoryQueueIndex queues_;
  webhook::AdmissionHandler handler_;
  std::shared_ptr<net::CertificateReloader> certificates_;
  std::unique_ptr<net::HttpServer> server_;
};

// Tekton's webhook refuses any change to a PipelineRun's spec but spec.status, pending or not,
// so a flavor's node labels and tolerations cannot be written into the run. A run starts with
// its spec untouched, and the admission's labels and annotation reach its TaskRuns through the
// run's metadata, which Tekton copies to them, the flavor's node selector and tolerations among
// them (an annotation): by it, the adapter's /mutate-children webhook gives each TaskRun, as
// Tekton creates it, the flavor's node selector and tolerations in its spec.podTemplate, which
// its pod takes. A run pinned to the flavor by its own podTemplate gets
// nothing more; one holding another value for the flavor's node label is not started: its
// Workload finishes FailedToStart saying why.
TEST_F(SingleCluster, APipelineRunsTaskPodsRunOnItsGpuFlavor) {
  for (const char* file : {"tekton.dev_pipelineruns.yaml", "tekton/tekton.dev_taskruns.yaml"})
    cluster.api().create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
                         sandbox::test::fixtureCrd(file));
  const json gpuToleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  createQueue("gpu",
              {{"nodeLabels", {{"example.com/accelerator", "a100"}}},
               {"nodeTaints", {{{"key", "nvidia.com/gpu"}, {"value", "true"}, {"effect", "NoSchedule"}}}},
               {"tolerations", {gpuToleration}}},
              "gpu-cq", "tekton.dev/pipelineruns", "10", "gpu");
  standin::JobControllerStandIn tekton(cluster.api(), clock,
                                       {.style = standin::JobControllerStandIn::Style::Tekton, .taskRuns = true});
  tekton.start();
  const api::GroupVersionKind gvk{"tekton.dev", "v1", "PipelineRun"};
  std::vector<jobkind::JobKind> more;
  more.emplace_back(config::ExternalFramework{"PipelineRun.v1.tekton.dev", gvk, *config::builtinProfile(gvk), true},
                    *config::integrationProfile(gvk), false);
  auto integration = startIntegration({}, nullptr, std::move(more));
  config::Configuration adapterConfig;
  adapterConfig.integrations.frameworks = {*config::integrationProfile(gvk)};
  adapterConfig.integrations.frameworks[0].name = "PipelineRun.v1.tekton.dev";
  ChildWebhook childWebhook(sandbox, cluster, adapterConfig);

  const sandbox::ResourceRef pipelineRuns{"tekton.dev", "v1", "pipelineruns", "team-a", "", ""};
  const auto pipelineRun = [&](const std::string& name, const json& podTemplate) {
    json run = {
        {"apiVersion", "tekton.dev/v1"},
        {"kind", "PipelineRun"},
        {"metadata", {{"name", name}, {"labels", {{"kueue.x-k8s.io/queue-name", "gpu"}}}}},
        {"spec",
         {{"status", "PipelineRunPending"},
          {"pipelineSpec",
           {{"tasks", {{{"name", "train"}, {"taskSpec", {{"steps", {{{"name", "fit"}, {"image", "pytorch"}}}}}}}}}}}}}};
    if (!podTemplate.is_null()) run["spec"]["taskRunTemplate"] = {{"podTemplate", podTemplate}};
    return *cluster.api().create(pipelineRuns, run);
  };
  const auto get = [&](sandbox::ResourceRef ref, const std::string& name) {
    ref.name = name;
    return cluster.api().get(ref);
  };
  const auto failedToStart = [&](const std::string& job) -> std::string {
    const auto w = workloadOf(job);
    const auto* finished = w ? api::findCondition(*w, "Finished") : nullptr;
    return finished && finished->value("reason", "") == "FailedToStart" ? finished->value("message", "") : "";
  };
  const auto specLessStatus = [](json run) {
    run["spec"].erase("status");
    return run["spec"];
  };

  // Pinned to the flavor by its own podTemplate (and a node selector key of its own): started.
  const json pinned = {{"nodeSelector", {{"example.com/accelerator", "a100"}, {"example.com/disk", "ssd"}}},
                       {"tolerations", {gpuToleration}}};
  const json created = pipelineRun("pinned", pinned);
  ASSERT_TRUE(test::eventually([&] { return tekton.starts("team-a/pinned") == 1; }))
      << get(pipelineRuns, "pinned").dump();
  const json started = get(pipelineRuns, "pinned");
  EXPECT_EQ(specLessStatus(started), specLessStatus(created)) << "Tekton's webhook would refuse any other change";
  const auto wl = *workloadOf("pinned");
  EXPECT_EQ(wl.at(json::json_pointer("/status/admission/podSetAssignments/0/flavors")),
            json({{"tekton.dev/pipelineruns", "gpu"}}));
  EXPECT_EQ(wl.at(json::json_pointer("/spec/podSets/0/template/spec/nodeSelector")), pinned["nodeSelector"])
      << "Kueue matches flavors against what the run's pods get";
  EXPECT_EQ(started["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "gpu");
  EXPECT_EQ(started["metadata"]["labels"]["kueue.x-k8s.io/podset"], "pod-set-1");

  const sandbox::ResourceRef pods{"", "v1", "pods", "team-a", "", ""};
  ASSERT_TRUE(test::eventually([&] { return cluster.api().list(pods, {})["items"].size() == 1; }));
  const json pod = get(pods, "pinned-train-pod");
  EXPECT_EQ(pod["spec"]["nodeSelector"], pinned["nodeSelector"]) << "the flavor's node label and the user's own";
  EXPECT_EQ(pod["spec"]["tolerations"], json::array({gpuToleration}));
  EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/podset"], "pod-set-1");
  EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "gpu");
  EXPECT_EQ(pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"], wl["metadata"]["name"]);

  const sandbox::ResourceRef taskRuns{"tekton.dev", "v1", "taskruns", "team-a", "", ""};
  EXPECT_EQ(get(taskRuns, "pinned-train")["spec"]["podTemplate"], pinned) << "it held the flavor's values already";

  // Not pinned: started with its spec untouched; its TaskRun takes the flavor's node selector
  // and toleration from /mutate-children, by the run's annotation, and its pod runs on the
  // flavor's nodes.
  const json unpinnedCreated = pipelineRun("unpinned", nullptr);
  ASSERT_TRUE(test::eventually([&] { return tekton.starts("team-a/unpinned") == 1; }))
      << (workloadOf("unpinned") ? workloadOf("unpinned")->dump() : "no Workload");
  EXPECT_EQ(failedToStart("unpinned"), "");
  EXPECT_EQ(specLessStatus(get(pipelineRuns, "unpinned")), specLessStatus(unpinnedCreated));
  const json flavorTemplate = {{"nodeSelector", {{"example.com/accelerator", "a100"}}},
                               {"tolerations", {gpuToleration}}};
  const json unpinnedStarted = get(pipelineRuns, "unpinned");
  EXPECT_EQ(json::parse(unpinnedStarted["metadata"]["annotations"].value("multikueue-adapter.dev/pod-placement", "0")),
            flavorTemplate)
      << "what the TaskRuns take, beside the run's other admission annotations";
  EXPECT_EQ(get(taskRuns, "unpinned-train")["spec"]["podTemplate"], flavorTemplate);
  ASSERT_TRUE(test::eventually([&] { return cluster.api().list(pods, {})["items"].size() == 2; }));
  const json unpinnedPod = get(pods, "unpinned-train-pod");
  EXPECT_EQ(unpinnedPod["spec"]["nodeSelector"], flavorTemplate["nodeSelector"]);
  EXPECT_EQ(unpinnedPod["spec"]["tolerations"], json::array({gpuToleration}));
  EXPECT_EQ(unpinnedPod["metadata"]["annotations"]["kueue.x-k8s.io/workload"],
            (*workloadOf("unpinned"))["metadata"]["name"]);

  // Pinned elsewhere: Kueue's conflict, as for every kind. (Real Kueue matches flavors against
  // the pod set's node selector and would leave this one pending; the Kueue stand-in leaves that
  // out. The conflict is what an admission check's podSetUpdate meets.)
  pipelineRun("elsewhere", {{"nodeSelector", {{"example.com/accelerator", "t4"}}}});
  ASSERT_TRUE(test::eventually([&] { return !failedToStart("elsewhere").empty(); }));
  EXPECT_EQ(failedToStart("elsewhere"),
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for "
            "key=example.com/accelerator, value1=t4, value2=a100");
  EXPECT_EQ(get(pipelineRuns, "elsewhere")["spec"].value("status", ""), "PipelineRunPending");
  EXPECT_EQ(tekton.starts("team-a/elsewhere"), 0);
  EXPECT_EQ(cluster.api().list(pods, {})["items"].size(), 2u);

  // Evicted: stopped by spec.status alone (Tekton would refuse a restored spec), its labels kept,
  // the queue's among them. A stopped run ends, cancelled, and so does its Workload.
  kueue.evict("team-a", wl["metadata"].value("name", ""));
  ASSERT_TRUE(test::eventually([&] { return api::isFinished(*workloadOf("pinned")); })) << workloadOf("pinned")->dump();
  const json stopped = get(pipelineRuns, "pinned");
  EXPECT_EQ(stopped["spec"].value("status", ""), "StoppedRunFinally");
  EXPECT_EQ(specLessStatus(stopped), specLessStatus(created));
  EXPECT_EQ(stopped["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "gpu");
  EXPECT_EQ(stopped["metadata"]["labels"]["kueue.x-k8s.io/podset"], "pod-set-1");
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
  tekton.stop();
}

// Counts every reconcile (to await the one a change brings) and those that failed (and wait for
// a backoff on the test's clock).
class CountedReconciles final : public controller::ControllerObserver {
 public:
  void reconciled(const std::string&, const std::string& result, double) override {
    ++all;
    if (result == "error") ++errors;
  }
  void queueDepth(const std::string&, std::size_t) override {}
  std::atomic<int> all{0};
  std::atomic<int> errors{0};
};

// On a MultiKueue worker the Workload copy and the job copy arrive at nearly the same time. A
// job reconciled before its prebuilt Workload is there waits for a backoff on the clock; the
// Workload's arrival brings it back at once (the clock never moves in this test).
TEST_F(SingleCluster, AJobWhosePrebuiltWorkloadArrivesLaterIsAdoptedAtOnce) {
  CountedReconciles failed;
  auto integration = startIntegration({.controllerObserver = &failed});
  json copy = trainingRun("train");
  copy["metadata"]["annotations"] = {{"kueue.x-k8s.io/prebuilt-workload-name", "remote-wl"}};
  cluster.api().create(kJobs, copy);
  ASSERT_TRUE(test::eventually([&] { return failed.errors >= 1; })) << "prebuilt workload not found, retried later";

  const auto created = job();
  const auto podSets = podSetsFor(created, *trainingRuns().integration());
  ASSERT_FALSE(podSets.error);
  json workload = newWorkload(created, trainingRuns().gvk(), podSets.podSets, std::nullopt);
  workload["metadata"]["name"] = "remote-wl";
  workload["metadata"].erase("ownerReferences");
  workload["metadata"].erase("finalizers");
  cluster.api().create(kWorkloads, workload);

  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << workloads().at(0).dump();
  const auto adopted = workloads().at(0);
  EXPECT_EQ(adopted.at(json::json_pointer("/metadata/ownerReferences/0/uid")), created["metadata"]["uid"]);
  EXPECT_EQ(workloads().size(), 1u) << "none of its own";
}

// A pod template that is an object but not a PodTemplateSpec: the API server refuses the
// Workload (422). One Warning naming the job's field, one create; a change that leaves the
// Workload the same sends nothing; the fixed template is taken and the job runs.
TEST_F(SingleCluster, ARefusedPodTemplateWarnsOnceIsNotSentAgainAndRunsOnceFixed) {
  CountedReconciles reconciles;
  auto integration = startIntegration({.controllerObserver = &reconciles});
  json bad = trainingRun("train");
  bad["spec"]["template"]["spec"]["containers"][0].erase("name");
  cluster.api().create(kJobs, bad);
  const auto refusedCreates = [&] {
    const auto writes = cluster.invalidWrites();
    return std::count_if(writes.begin(), writes.end(), [](const std::string& write) {
      return write.starts_with("POST ") && write.find("/namespaces/team-a/workloads") != std::string::npos;
    });
  };
  const auto settled = [&] { return integration->idle() && kueue.idle(); };
  ASSERT_TRUE(test::eventually([&] { return trainEvents("InvalidWorkload") == 1 && settled(); }))
      << ::testing::PrintToString(eventsAbout("train"));
  EXPECT_EQ(eventsAbout("train"),
            std::vector<std::string>{"Warning InvalidWorkload: the API server refused the job's Workload: "
                                     "spec.template.spec.containers[0].name: Required value; correct the job (a pod "
                                     "template must be a valid PodTemplateSpec): it stays suspended without a "
                                     "Workload until it changes"});
  EXPECT_EQ(refusedCreates(), 1);

  const auto change = [&](const std::function<void(json&)>& edit) {
    const int before = reconciles.all;
    json stored = job();
    edit(stored);
    cluster.api().update({kJobs.group, kJobs.version, kJobs.plural, "team-a", "train", ""}, stored);
    ASSERT_TRUE(test::eventually([&] { return reconciles.all > before && settled(); }));
  };
  change([](json& j) { j["metadata"]["annotations"]["example.com/note"] = "looked at"; });
  EXPECT_EQ(refusedCreates(), 1) << "the same Workload is not sent again";
  EXPECT_EQ(trainEvents("InvalidWorkload"), 1);
  EXPECT_TRUE(workloads().empty());

  change([](json& j) { j["spec"]["template"]["spec"]["containers"][0]["name"] = "c"; });
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << job().dump();
  EXPECT_EQ(workloads().size(), 1u);
  EXPECT_EQ(refusedCreates(), 1);
  EXPECT_EQ(trainEvents("InvalidWorkload"), 1);
  EXPECT_EQ(trainEvents("CreatedWorkload"), 1);
}

// An admission names a flavor that is not there (deleted after Kueue admitted on it): as Kueue,
// the start is retried with backoff, a Warning naming the flavor, the Workload not finished;
// once the flavor is created the next retry starts the job with its node labels.
TEST_F(SingleCluster, AnAdmissionOnAMissingFlavorIsRetriedAndStartsOnceTheFlavorExists) {
  const sandbox::ResourceRef flavors{"kueue.x-k8s.io", "v1beta2", "resourceflavors", "", "", ""};
  auto onDemand = flavors;
  onDemand.name = "on-demand";
  const json flavor = cluster.api().get(onDemand);
  cluster.api().remove(onDemand);
  CountedReconciles reconciles;
  auto integration = startIntegration({.controllerObserver = &reconciles});
  createJob();

  ASSERT_TRUE(test::eventually([&] { return reconciles.errors >= 1 && trainEvents("ResourceFlavorNotFound") >= 1; }))
      << ::testing::PrintToString(eventsAbout("train"));
  const auto warnings = eventsAbout("train");
  EXPECT_NE(std::find_if(warnings.begin(), warnings.end(),
                         [](const std::string& e) {
                           return e.starts_with(
                               "Warning ResourceFlavorNotFound: ResourceFlavor \"on-demand\" of pod set main in the "
                               "admission of Workload team-a/trainingrun-train-");
                         }),
            warnings.end())
      << ::testing::PrintToString(warnings);
  // Each backoff on the clock brings another attempt; the job waits suspended, its Workload
  // admitted and not finished.
  const int failed = reconciles.errors;
  clock.advance(kube::ItemExponentialFailureRateLimiter::kDefaultMaxDelay);
  ASSERT_TRUE(test::eventually([&] { return reconciles.errors > failed; })) << "retried";
  EXPECT_TRUE(job()["spec"].value("suspend", false));
  ASSERT_EQ(workloads().size(), 1u);
  EXPECT_TRUE(api::isAdmitted(workloads()[0]));
  EXPECT_FALSE(api::isFinished(workloads()[0])) << workloads()[0].dump();

  json recreated = flavor;
  recreated["metadata"] = {{"name", "on-demand"}};
  cluster.api().create(flavors, recreated);
  clock.advance(kube::ItemExponentialFailureRateLimiter::kDefaultMaxDelay);
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << job().dump();
  EXPECT_EQ(job().at(json::json_pointer("/spec/template/spec/nodeSelector")),
            json({{"example.com/capacity", "on-demand"}}));
  EXPECT_TRUE(test::eventually([&] { return trainEvents("Started") == 1; }))
      << ::testing::PrintToString(eventsAbout("train"));
  EXPECT_EQ(runner.starts("team-a/train"), 1);
}

// Bad input on one job is that job's problem: a Warning naming the field, no Workload, the job
// left suspended; the jobs after it are queued and run as usual.
TEST_F(SingleCluster, BadInputWarnsNamesTheFieldAndOtherJobsGoOn) {
  standin::JobControllerStandIn argo(cluster.api(), clock, {.style = standin::JobControllerStandIn::Style::Argo});
  argo.start();
  auto integration = startIntegration();
  auto countNotInteger = trainingRun("count-not-integer");
  countNotInteger["spec"]["replicas"] = "four";
  auto noTemplate = trainingRun("no-template");
  noTemplate["spec"].erase("template");
  cluster.api().create(kJobs, countNotInteger);
  cluster.api().create(kJobs, noTemplate);
  const sandbox::ResourceRef workflows{"argoproj.io", "v1alpha1", "workflows", "team-a", "", ""};
  cluster.api().create(workflows, {{"apiVersion", "argoproj.io/v1alpha1"},
                                   {"kind", "Workflow"},
                                   {"metadata",
                                    {{"name", "bad-requests"},
                                     {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}},
                                     {"annotations", {{"multikueue-adapter.dev/pod-set-requests", "cpu=4"}}}}},
                                   {"spec",
                                    {{"suspend", true},
                                     {"entrypoint", "main"},
                                     {"templates", {{{"name", "main"}, {"container", {{"image", "busybox"}}}}}}}}});
  cluster.api().create(
      workflows, {{"apiVersion", "argoproj.io/v1alpha1"},
                  {"kind", "Workflow"},
                  {"metadata", {{"name", "bad-quantity"}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
                  {"spec",
                   {{"suspend", true},
                    {"entrypoint", "main"},
                    {"templates",
                     {{{"name", "main"},
                       {"container", {{"image", "busybox"}, {"resources", {{"requests", {{"cpu", "lots"}}}}}}}}}}}}});
  createJob();

  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << "the good job goes on";
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && api::isFinished(all[0]);
  })) << "one Workload, the good job's, finished";

  struct Case {
    std::string job;
    sandbox::ResourceRef resource;
    std::string warning;
  };
  const std::vector<Case> cases = {
      {"count-not-integer", kJobs,
       "Warning InvalidJob: spec.replicas: the pod set main's count must be a whole number from 0 to 2147483647, not "
       "\"four\"; the job stays suspended without a Workload until this is fixed"},
      {"no-template", kJobs,
       "Warning InvalidJob: spec.template: the pod set main's template is missing; the job stays suspended without a "
       "Workload until this is fixed"},
      {"bad-requests", workflows,
       "Warning InvalidJob: metadata.annotations[multikueue-adapter.dev/pod-set-requests]: must be a JSON object of "
       "resource names to quantities, such as {\"cpu\":\"4\"}, not 'cpu=4'; the job stays suspended without a "
       "Workload until this is fixed"},
      {"bad-quantity", workflows,
       "Warning InvalidJob: spec.templates[0].container.resources.requests.cpu: template \"main\" requests \"lots\" "
       "of cpu, which is not a quantity: write a non-negative quantity such as \"4\", \"500m\" or \"2Gi\" in the "
       "Workflow; the job stays suspended without a Workload until this is fixed"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.job);
    EXPECT_TRUE(test::eventually([&] { return eventsAbout(c.job) == std::vector<std::string>{c.warning}; }))
        << ::testing::PrintToString(eventsAbout(c.job));
    auto ref = c.resource;
    ref.name = c.job;
    EXPECT_TRUE(cluster.api().get(ref)["spec"].value("suspend", false)) << "stays suspended";
  }
  EXPECT_EQ(runner.starts("team-a/count-not-integer") + runner.starts("team-a/no-template"), 0);
  EXPECT_EQ(argo.starts("team-a/bad-requests") + argo.starts("team-a/bad-quantity"), 0);
  EXPECT_EQ(runner.starts("team-a/train"), 1);
  argo.stop();
}

}  // namespace
}  // namespace mka::integration
