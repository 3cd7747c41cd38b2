// The job integration running as deployed on one cluster (SPEC §7.2, "Roles": no MultiKueue):
// an in-house kind queued by Kueue (its core played by the Kueue stand-in, which admits the
// Workload and never touches the job), run by its own controller (the generic job controller
// stand-in), with the integration restarted mid-flight.
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
                          kCrds / "inhouse" / "ml.example.com_trainingruns.yaml"}})),
        kueue(cluster.api(), clock,
              {.role = standin::KueueStandIn::Role::Worker, .playsJobIntegration = false, .requireQueues = false}),
        runner(cluster.api(), clock, {.runTime = std::chrono::seconds{10}}) {
    cluster.api().create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "team-a"}}}});
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

  FakeClock clock;
  sandbox::Sandbox sandbox{clock};
  sandbox::Cluster& cluster;
  standin::KueueStandIn kueue;
  standin::JobControllerStandIn runner;
  std::unique_ptr<kube::Client> client;
};

TEST_F(SingleCluster, AnInHouseJobIsQueuedResumedOnceAndFinishedOnceAcrossARestart) {
  auto integration = startIntegration();
  cluster.api().create(kJobs,
                       {{"apiVersion", "ml.example.com/v1"},
                        {"kind", "TrainingRun"},
                        {"metadata", {{"name", "train"}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
                        {"spec",
                         {{"suspend", true},
                          {"replicas", 2},
                          {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}});

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

}  // namespace
}  // namespace mka::integration
