// The job integration running as deployed on one cluster (SPEC §7.2, "Roles": no MultiKueue):
// an in-house kind queued by Kueue (its core played by the Kueue stand-in, which admits and
// evicts the Workload and never touches the job), run by its own controller (the generic job
// controller stand-in): restarted mid-flight, and evicted and readmitted with a flavor's node
// selector.
#include <algorithm>

#include <gtest/gtest.h>

#include "mka/integration/controller.h"
#include "mka/kube/kubeconfig.h"
#include "mka/multikueue/workload_status.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"
#include "mka/standin/job_controller_standin.h"
#include "mka/standin/kueue_standin.h"
#include "support/eventually.h"
#include "training_run.h"

namespace mka::integration {
namespace {

using nlohmann::json;
using namespace fixture;

class SingleCluster : public ::testing::Test {
 protected:
  SingleCluster()
      : cluster(sandbox.addCluster(
            {.name = "single",
             .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "kueue.x-k8s.io_resourceflavors.yaml",
                          kCrds / "kueue.x-k8s.io_clusterqueues.yaml", kCrds / "kueue.x-k8s.io_localqueues.yaml",
                          kCrds / "inhouse" / "ml.example.com_trainingruns.yaml"}})),
        kueue(
            cluster.api(), clock,
            {.role = standin::KueueStandIn::Role::Worker, .playsJobIntegration = false, .readmitDelay = kReadmitDelay}),
        runner(cluster.api(), clock, {.runTime = std::chrono::seconds{10}}) {
    cluster.api().create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "team-a"}}}});
    // One flavor for CPU, whose pods go to on-demand nodes.
    cluster.api().create({"kueue.x-k8s.io", "v1beta2", "resourceflavors", "", "", ""},
                         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                          {"kind", "ResourceFlavor"},
                          {"metadata", {{"name", "on-demand"}}},
                          {"spec", {{"nodeLabels", {{"example.com/capacity", "on-demand"}}}}}});
    cluster.api().create(
        {"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "ClusterQueue"},
         {"metadata", {{"name", "cq"}}},
         {"spec",
          {{"namespaceSelector", json::object()},
           {"resourceGroups",
            {{{"coveredResources", {"cpu"}},
              {"flavors", {{{"name", "on-demand"}, {"resources", {{{"name", "cpu"}, {"nominalQuota", "8"}}}}}}}}}}}}});
    cluster.api().create({"kueue.x-k8s.io", "v1beta2", "localqueues", "team-a", "", ""},
                         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                          {"kind", "LocalQueue"},
                          {"metadata", {{"name", "lq"}, {"namespace", "team-a"}}},
                          {"spec", {{"clusterQueue", "cq"}}}});
    kube::ClientOptions options;
    options.qps = 0;
    client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(cluster.kubeconfig())), options));
    kueue.start();
    runner.start();
  }

  std::unique_ptr<IntegrationController> startIntegration() {
    auto controller = std::make_unique<IntegrationController>(*client, std::vector<jobkind::JobKind>{trainingRuns()},
                                                              clock, IntegrationController::Options{});
    controller->start(std::chrono::seconds{30});
    return controller;
  }

  std::vector<json> workloads() { return cluster.api().list(kWorkloads, {})["items"].get<std::vector<json>>(); }
  json job() { return cluster.api().get({kJobs.group, kJobs.version, kJobs.plural, "team-a", "train", ""}); }
  void createJob() {
    cluster.api().create(
        kJobs,
        {{"apiVersion", "ml.example.com/v1"},
         {"kind", "TrainingRun"},
         {"metadata", {{"name", "train"}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
         {"spec",
          {{"suspend", true},
           {"replicas", 2},
           {"template",
            {{"spec",
              {{"containers",
                {{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}}}}}}});
  }
  // Reasons of the Events about the job, oldest first.
  std::vector<std::string> jobEvents() {
    std::vector<std::string> out;
    const auto events = cluster.api().list({"", "v1", "events", "team-a", "", ""}, {});
    for (const auto& event : events.at("items"))
      if (event["involvedObject"].value("kind", "") == "TrainingRun") out.push_back(event.value("reason", ""));
    return out;
  }

  static constexpr std::chrono::seconds kReadmitDelay{60};

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
  EXPECT_TRUE(multikueue::isAdmitted(workloads()[0]));

  // The adapter restarts while the job runs: its caches are rebuilt from scratch.
  integration->stop();
  integration = startIntegration();

  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && multikueue::isFinished(all[0]) && !all[0]["metadata"].contains("finalizers");
  })) << workloads().at(0).dump();
  const json workload = workloads().at(0);
  const auto* finished = multikueue::findCondition(workload, "Finished");
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
    return runner.running() == 0 && !multikueue::hasQuotaReservation(all.at(0));
  })) << workloads().at(0).dump();
  EXPECT_TRUE(job()["spec"].value("suspend", false));
  EXPECT_FALSE(job().contains(nodeSelector)) << "the pod template as the user wrote it: " << job().dump();
  const json evicted = workloads().at(0);
  EXPECT_FALSE(evicted["status"].contains("admission"));
  const auto* requeued = multikueue::findCondition(evicted, "Requeued");
  ASSERT_NE(requeued, nullptr) << evicted.dump();
  EXPECT_EQ(requeued->value("status", ""), "True");
  EXPECT_EQ(requeued->value("reason", ""), "Preempted");
  ASSERT_TRUE(test::eventually([&] {
    const auto reasons = jobEvents();
    return std::count(reasons.begin(), reasons.end(), "Stopped") == 1;
  })) << ::testing::PrintToString(jobEvents());

  // Readmitted after the backoff: resumed on the flavor again, run to the end, finished once.
  clock.advance(kReadmitDelay);
  kueue.poke();
  ASSERT_TRUE(test::eventually([&] { return runner.running() == 1; })) << workloads().at(0).dump();
  EXPECT_EQ(job().at(nodeSelector), json({{"example.com/capacity", "on-demand"}}));
  clock.advance(std::chrono::seconds{10});
  ASSERT_TRUE(test::eventually([&] {
    const auto all = workloads();
    return all.size() == 1 && multikueue::isFinished(all[0]) && !all[0]["metadata"].contains("finalizers");
  })) << workloads().at(0).dump();
  EXPECT_EQ(runner.starts("team-a/train"), 2) << "run, evicted, run again";
  EXPECT_EQ(workloads().size(), 1u) << "one Workload throughout";
  const auto reasons = jobEvents();
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "Started"), 2) << ::testing::PrintToString(reasons);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "CreatedWorkload"), 1) << ::testing::PrintToString(reasons);
  EXPECT_EQ(cluster.invalidWrites(), std::vector<std::string>{});
}

}  // namespace
}  // namespace mka::integration
