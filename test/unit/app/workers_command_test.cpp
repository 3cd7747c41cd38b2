// `workers` against sandbox clusters: a manager with three MultiKueueClusters, worker1 with
// Kueue's queues and both configured kinds, worker2 without the Workflow CRD, worker3
// unreachable, and a fourth whose Secret is missing.
#include "mka/app/workers_command.h"
#include "app_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "mka/sandbox/sandbox.h"
#include "support/temp_dir.h"

namespace mka::app {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::filesystem::path kCrds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
const sandbox::ResourceRef kClusters{"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "", ""};
const sandbox::ResourceRef kQueues{"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""};
const sandbox::ResourceRef kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", "default", "", ""};
const sandbox::ResourceRef kNamespaces{"", "v1", "namespaces", "", "", ""};

config::Configuration configuration() {
  config::Configuration cfg;
  cfg.multiKueue.externalFrameworks = {
      {"PipelineRun.v1.tekton.dev", {"tekton.dev", "v1", "PipelineRun"}, {}, false},
      {"Workflow.v1alpha1.argoproj.io", {"argoproj.io", "v1alpha1", "Workflow"}, {}, false}};
  return cfg;
}

json workload(const std::string& name, bool reserved, const std::string& origin = "multikueue") {
  json wl = {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", origin}}}}},
      {"spec",
       {{"queueName", "lq"},
        {"podSets", json::array({{{"name", "main"},
                                  {"count", 1},
                                  {"template",
                                   {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "i"}}})}}}}}}})}}}};
  if (reserved)
    wl["status"] = {{"conditions", json::array({{{"type", "QuotaReserved"},
                                                 {"status", "True"},
                                                 {"reason", "QuotaReserved"},
                                                 {"message", ""},
                                                 {"lastTransitionTime", "2026-12-07T10:00:00Z"}}})}};
  return wl;
}

class WorkersCommand : public ::testing::Test {
 protected:
  WorkersCommand()
      : manager(
            sandbox.addCluster({.name = "manager", .crdFiles = {kCrds / "kueue.x-k8s.io_multikueueclusters.yaml"}})),
        worker1(sandbox.addCluster(
            {.name = "worker1",
             .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "kueue.x-k8s.io_clusterqueues.yaml",
                          kCrds / "tekton.dev_pipelineruns.yaml", kCrds / "argoproj.io_workflows.minimal.yaml"}})),
        worker2(sandbox.addCluster(
            {.name = "worker2",
             .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "tekton.dev_pipelineruns.yaml"}})),
        worker3(sandbox.addCluster({.name = "worker3", .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml"}})) {
    manager.api().create(kNamespaces, {{"metadata", {{"name", "kueue-system"}}}});
    for (auto* w : {&worker1, &worker2, &worker3}) addCluster(w->name(), w->kubeconfig());
    manager.api().create(kClusters, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                     {"kind", "MultiKueueCluster"},
                                     {"metadata", {{"name", "worker4"}}},
                                     {"spec", {{"clusterSource", {{"kubeConfig", {{"location", "worker4"}}}}}}}});
    json cq = {
        {"apiVersion", "kueue.x-k8s.io/v1beta2"},
        {"kind", "ClusterQueue"},
        {"metadata", {{"name", "cq-gpu"}}},
        {"spec",
         {{"resourceGroups",
           json::array({{{"coveredResources", json::array({"nvidia.com/gpu"})},
                         {"flavors", json::array({{{"name", "a100"},
                                                   {"resources", json::array({{{"name", "nvidia.com/gpu"},
                                                                               {"nominalQuota", "8"}}})}}})}}})}}}};
    auto stored = *worker1.api().create(kQueues, cq);
    stored["status"] = {{"flavorsReservation",
                         json::array({{{"name", "a100"},
                                       {"resources", json::array({{{"name", "nvidia.com/gpu"}, {"total", "6"}}})}}})}};
    auto status = kQueues;
    status.name = "cq-gpu";
    status.subresource = "status";
    worker1.api().update(status, stored);
    // A create ignores the status (as kube-apiserver does for a kind with a status subresource).
    auto running = *worker1.api().create(kWorkloads, workload("running", false));
    running["status"] = workload("running", true)["status"];
    auto runningStatus = kWorkloads;
    runningStatus.name = "running";
    runningStatus.subresource = "status";
    worker1.api().update(runningStatus, running);
    worker1.api().create(kWorkloads, workload("waiting", false));
    worker1.api().create(kWorkloads, workload("another-managers", false, "elsewhere"));
    worker3.setUnreachable(true);
  }

  void addCluster(const std::string& name, const std::string& kubeconfig) {
    test_util::addSecretCluster(manager, name, kubeconfig);
  }

  std::vector<WorkerRow> rows() {
    kube::ClientOptions options;
    options.qps = 0;
    options.maxRetries = 0;
    kube::Client client(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(manager.kubeconfig())), options));
    return readWorkers(client, configuration(), std::chrono::seconds{2});
  }

  sandbox::Sandbox sandbox;
  sandbox::Cluster &manager, &worker1, &worker2, &worker3;
};

TEST_F(WorkersCommand, OneRowPerClusterWithWhatItServesItsRoomAndThisManagersWorkloads) {
  const auto all = rows();
  ASSERT_EQ(all.size(), 4u);
  const auto& w1 = all[0];
  EXPECT_EQ(w1.name, "worker1");
  EXPECT_TRUE(w1.connected) << w1.error;
  EXPECT_EQ(w1.error, "");
  EXPECT_EQ(w1.kindsServed, (std::vector<std::string>{"PipelineRun.v1.tekton.dev", "Workflow.v1alpha1.argoproj.io"}));
  EXPECT_TRUE(w1.kindsMissing.empty());
  ASSERT_EQ(w1.quotas.size(), 1u);
  EXPECT_EQ(w1.quotas[0].clusterQueue, "cq-gpu");
  EXPECT_EQ(w1.quotas[0].flavor, "a100");
  EXPECT_EQ(w1.quotas[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(w1.quotas[0].nominal, 8000);
  EXPECT_EQ(w1.quotas[0].reserved, 6000);
  EXPECT_EQ(w1.quotas[0].free, 2000);
  EXPECT_EQ(w1.pending, 1) << "another manager's copy is not counted";
  EXPECT_EQ(w1.admitted, 1);

  const auto& w2 = all[1];
  EXPECT_TRUE(w2.connected);
  EXPECT_EQ(w2.kindsServed, std::vector<std::string>{"PipelineRun.v1.tekton.dev"});
  EXPECT_EQ(w2.kindsMissing, std::vector<std::string>{"Workflow.v1alpha1.argoproj.io"});
  EXPECT_THAT(w2.error, HasSubstr("cannot list its ClusterQueues"));

  const auto& w3 = all[2];
  EXPECT_FALSE(w3.connected);
  EXPECT_THAT(w3.error, HasSubstr("cannot list its Workloads"));

  const auto& w4 = all[3];
  EXPECT_FALSE(w4.connected);
  EXPECT_EQ(w4.error, "BadKubeConfig: secrets \"worker4\" not found");
}

TEST_F(WorkersCommand, PrintsATableAWideTableAndJson) {
  test::TempDir dir;
  const auto kubeconfig = dir.write("manager.kubeconfig", manager.kubeconfig());
  WorkersCommandOptions options;
  options.managerKubeconfig = kubeconfig.string();
  options.timeout = std::chrono::seconds{2};
  std::ostringstream out, err;
  ASSERT_EQ(workersCommand(options, out, err), 0) << err.str();
  const auto table = out.str();
  EXPECT_THAT(table, HasSubstr("NAME"));
  EXPECT_THAT(table, HasSubstr("QUEUES (FREE/NOMINAL)"));
  EXPECT_THAT(table, HasSubstr("cq-gpu/a100/nvidia.com/gpu 2/8"));
  EXPECT_THAT(table, HasSubstr("secrets \"worker4\" not found"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5) << table;

  options.output = "wide";
  std::ostringstream wide;
  ASSERT_EQ(workersCommand(options, wide, err), 0);
  EXPECT_THAT(wide.str(), HasSubstr("ACTIVE"));

  options.output = "json";
  std::ostringstream js;
  ASSERT_EQ(workersCommand(options, js, err), 0);
  const auto parsed = json::parse(js.str());
  ASSERT_EQ(parsed["workers"].size(), 4u);
  EXPECT_EQ(parsed["workers"][0]["quotas"][0]["free"], "2");
  EXPECT_EQ(parsed["workers"][0]["workloads"]["pending"], 1);
  EXPECT_EQ(parsed["workers"][2]["connected"], false);

  options.output = "yaml";
  std::ostringstream bad, badErr;
  EXPECT_EQ(workersCommand(options, bad, badErr), 2);
  EXPECT_THAT(badErr.str(), HasSubstr("unknown output format: use wide or json"));
}

}  // namespace
}  // namespace mka::app
