#include "mka/observability/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/promtool.h"
#include "support/table_test.h"
#include "support/temp_dir.h"

namespace mka::observability {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MetricsTest, CountsAdmissionsPerLabelSet) {
  Metrics metrics;
  metrics.observeAdmission("mutate", "PipelineRun", "CREATE", "patched", 0.0002);
  metrics.observeAdmission("mutate", "PipelineRun", "CREATE", "patched", 0.0003);
  metrics.observeAdmission("validate", "PipelineRun", "UPDATE", "denied", 0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, "# TYPE multikueue_adapter_webhook_requests_total counter")) << text;
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_webhook_requests_total{kind="PipelineRun",operation="CREATE",result="patched",webhook="mutate"} 2)"))
      << text;
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_webhook_requests_total{kind="PipelineRun",operation="UPDATE",result="denied",webhook="validate"} 1)"))
      << text;
}

TEST(MetricsTest, LatencyHistogramResolvesSubMillisecondAnswers) {
  Metrics metrics;
  metrics.observeAdmission("mutate", "Job", "CREATE", "allowed", 0.00005);
  metrics.observeAdmission("mutate", "Job", "CREATE", "allowed", 0.0004);
  metrics.observeAdmission("mutate", "Job", "CREATE", "allowed", 3.0);
  const std::string text = metrics.render();
  const std::string series =
      R"(multikueue_adapter_webhook_request_duration_seconds_bucket{kind="Job",operation="CREATE",result="allowed",webhook="mutate",)";
  EXPECT_TRUE(contains(text, series + R"(le="0.0001"} 1)")) << text;
  EXPECT_TRUE(contains(text, series + R"(le="0.0005"} 2)")) << text;
  EXPECT_TRUE(contains(text, series + R"(le="2.5"} 2)")) << text;
  EXPECT_TRUE(contains(text, series + R"(le="+Inf"} 3)")) << text;
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_webhook_request_duration_seconds_count{kind="Job",operation="CREATE",result="allowed",webhook="mutate"} 3)"))
      << text;
}

TEST(MetricsTest, EmptyKindIsItsOwnSeries) {
  Metrics metrics;
  metrics.observeAdmission("validate", "", "", "error", 0.0001);
  EXPECT_TRUE(contains(
      metrics.render(),
      R"(multikueue_adapter_webhook_requests_total{kind="",operation="",result="error",webhook="validate"} 1)"));
}

TEST(MetricsTest, LabelValuesWithSeparatorsDoNotCollide) {
  Metrics metrics;
  metrics.observeAdmission("a", "b c", "d", "e", 0.0001);
  metrics.observeAdmission("a b", "c", "d", "e", 0.0001);
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, R"({kind="b c",operation="d",result="e",webhook="a"} 1)")) << text;
  EXPECT_TRUE(contains(text, R"({kind="c",operation="d",result="e",webhook="a b"} 1)")) << text;
}

TEST(MetricsTest, UnboundedKindsFoldIntoOther) {
  Metrics metrics;
  for (int i = 0; i < 1100; ++i)
    metrics.observeAdmission("mutate", "Kind" + std::to_string(i), "CREATE", "allowed", 0.0001);
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, R"({kind="Kind999",operation="CREATE",result="allowed",webhook="mutate"} 1)"))
      << "first kinds kept";
  EXPECT_FALSE(contains(text, R"(kind="Kind1000")"));
  EXPECT_TRUE(contains(text, R"({kind="other",operation="other",result="allowed",webhook="mutate"} 100)")) << text;
}

TEST(MetricsTest, ConcurrentObservationsAreAllCounted) {
  Metrics metrics;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < 1000; ++i) {
        metrics.observeAdmission("mutate", t % 2 == 0 ? "Job" : "PipelineRun", "CREATE", "allowed", 0.0001);
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, R"({kind="Job",operation="CREATE",result="allowed",webhook="mutate"} 4000)")) << text;
  EXPECT_TRUE(contains(text, R"({kind="PipelineRun",operation="CREATE",result="allowed",webhook="mutate"} 4000)"));
}

TEST(MetricsTest, ConfigReloadsCountAndTheGaugeFollowsTheLastOne) {
  Metrics metrics;
  metrics.recordConfigReload(true);
  EXPECT_TRUE(contains(metrics.render(), "multikueue_adapter_config_last_reload_successful 1"));
  metrics.recordConfigReload(false);
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, "multikueue_adapter_config_last_reload_successful 0")) << text;
  EXPECT_TRUE(contains(text, R"(multikueue_adapter_config_reloads_total{result="success"} 1)")) << text;
  EXPECT_TRUE(contains(text, R"(multikueue_adapter_config_reloads_total{result="failure"} 1)")) << text;
}

TEST(MetricsTest, TheInitialLoadSetsTheGaugeWithoutCountingAReload) {
  Metrics metrics;
  metrics.recordConfigLoaded();
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, "multikueue_adapter_config_last_reload_successful 1")) << text;
  EXPECT_FALSE(contains(text, "multikueue_adapter_config_reloads_total{")) << text;
}

TEST(MetricsTest, WorkerClusterQueuesReplaceTheClustersSeriesAndGoWithIt) {
  Metrics metrics;
  metrics.setWorkerClusterQueues(
      "worker1", {{"cq-gpu", 3, {{"a100", "nvidia.com/gpu", 8, 6}}}, {"cq-cpu", 0, {{"default", "cpu", 64, 1.5}}}});
  metrics.setWorkerClusterQueues("worker2", {{"cq-gpu", 1, {{"a100", "nvidia.com/gpu", 4, 0}}}});
  auto text = metrics.render();
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_worker_cluster_queue_nominal_quota{cluster="worker1",cluster_queue="cq-gpu",flavor="a100",resource="nvidia.com/gpu"} 8)"))
      << text;
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_worker_cluster_queue_resource_reservation{cluster="worker1",cluster_queue="cq-cpu",flavor="default",resource="cpu"} 1.5)"))
      << text;
  EXPECT_TRUE(contains(
      text, R"(multikueue_adapter_worker_cluster_queue_pending_workloads{cluster="worker1",cluster_queue="cq-gpu"} 3)"))
      << text;

  // worker1 now has one queue: the other's series go; worker2's stay.
  metrics.setWorkerClusterQueues("worker1", {{"cq-gpu", 0, {{"a100", "nvidia.com/gpu", 8, 8}}}});
  text = metrics.render();
  EXPECT_FALSE(contains(text, R"(cluster="worker1",cluster_queue="cq-cpu")")) << text;
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_worker_cluster_queue_resource_reservation{cluster="worker1",cluster_queue="cq-gpu",flavor="a100",resource="nvidia.com/gpu"} 8)"))
      << text;
  metrics.setWorkerClusterQueues("worker1", {});
  text = metrics.render();
  EXPECT_FALSE(contains(text, R"(cluster="worker1")")) << text;
  EXPECT_TRUE(contains(text, R"(cluster="worker2",cluster_queue="cq-gpu")")) << text;
}

TEST(MetricsTest, BuildInfoSaysTheVersion) {
  Metrics metrics;
  metrics.setBuildInfo("v1.2.3-4-gabcdef");
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, R"(multikueue_adapter_build_info{compiler=")")) << text;
  EXPECT_TRUE(contains(text, R"(version="v1.2.3-4-gabcdef"} 1)")) << text;
}

struct TheReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCase {
  std::string name;
  std::string role;
  std::string lease;
  std::string wantSeries;
  std::string wantGauge;  // "" = no leader_election_master_status series
};

std::vector<TheReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCase>
theReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCases() {
  const std::vector<TheReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCase> cases = {
      {"without leader election", "standalone", "", R"(replica_role="standalone"} 1)", ""},
      {"leading", "leader", "multikueue-adapter", R"(replica_role="leader"} 1)",
       R"(leader_election_master_status{name="multikueue-adapter"} 1)"},
      {"following", "follower", "multikueue-adapter", R"(replica_role="follower"} 1)",
       R"(leader_election_master_status{name="multikueue-adapter"} 0)"},
  };
  return cases;
}

MKA_TABLE_TEST(MetricsTest, TheReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsIt,
               TheReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCase,
               theReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCases()) {
  const TheReplicaRoleLabelsDispatchSeriesAndTheLeaderGaugeFollowsItCase& c = testCase();
  Metrics metrics;
  metrics.setReplicaRole(c.role, c.lease);
  metrics.recordWorkloadDispatched("cq", "worker1");
  metrics.recordWorkloadAdmitted("cq", "worker1");
  const std::string text = metrics.render();
  EXPECT_TRUE(
      contains(text, "multikueue_workloads_dispatched_total{cluster=\"worker1\",cluster_queue=\"cq\"," + c.wantSeries))
      << text;
  EXPECT_TRUE(
      contains(text, "multikueue_workloads_admitted_total{cluster=\"worker1\",cluster_queue=\"cq\"," + c.wantSeries))
      << text;
  if (c.wantGauge.empty()) {
    EXPECT_FALSE(contains(text, "leader_election_master_status{")) << text;
  } else {
    EXPECT_TRUE(contains(text, c.wantGauge)) << text;
  }
}

TEST(MetricsTest, ProcessSeriesAreThoseOfThisProcess) {
  // Spend some CPU first, so that its counter has something to show whatever ran before.
  volatile double sink = 0;
  while (std::clock() < CLOCKS_PER_SEC / 20) sink = sink + 1;
  Metrics metrics;
  const std::string text = metrics.render();
  const auto valueOf = [&](const std::string& name) {
    const auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1.0;
    return std::stod(text.substr(at + name.size() + 2));
  };
  EXPECT_GE(valueOf("process_cpu_seconds_total"), 0.02) << text;
  EXPECT_GT(valueOf("process_resident_memory_bytes"), 1024.0 * 1024.0) << text;
  EXPECT_GE(valueOf("process_virtual_memory_bytes"), valueOf("process_resident_memory_bytes"));
  EXPECT_GE(valueOf("process_open_fds"), 3.0) << "stdin, stdout, stderr at least";
  EXPECT_GE(valueOf("process_max_fds"), valueOf("process_open_fds"));
  const double start = valueOf("process_start_time_seconds");
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(start, now - 24 * 3600.0) << "started within a day: the test process did";
  EXPECT_LE(start, now + 1.0);
  EXPECT_TRUE(contains(text, "# TYPE process_cpu_seconds_total counter")) << text;
}

TEST(MetricsTest, CertificateReloadsCount) {
  Metrics metrics;
  metrics.recordCertificateReload(true);
  metrics.recordCertificateReload(true);
  metrics.recordCertificateReload(false);
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(text, R"(multikueue_adapter_certificate_reloads_total{result="success"} 2)")) << text;
  EXPECT_TRUE(contains(text, R"(multikueue_adapter_certificate_reloads_total{result="failure"} 1)")) << text;
}

TEST(MetricsTest, TheIntegrationCountsPerKind) {
  Metrics metrics;
  metrics.recordIntegrationWorkloadCreated("Workflow.v1alpha1.argoproj.io");
  metrics.recordIntegrationJobResumed("Workflow.v1alpha1.argoproj.io");
  metrics.recordIntegrationJobResumed("Workflow.v1alpha1.argoproj.io");
  metrics.recordIntegrationJobStopped("TrainingRun.v1.ml.example.com");
  metrics.recordIntegrationWorkloadFinished("Workflow.v1alpha1.argoproj.io", "Failed");
  const std::string text = metrics.render();
  EXPECT_TRUE(contains(
      text, R"(multikueue_adapter_integration_workloads_created_total{kind="Workflow.v1alpha1.argoproj.io"} 1)"))
      << text;
  EXPECT_TRUE(
      contains(text, R"(multikueue_adapter_integration_jobs_resumed_total{kind="Workflow.v1alpha1.argoproj.io"} 2)"));
  EXPECT_TRUE(
      contains(text, R"(multikueue_adapter_integration_jobs_stopped_total{kind="TrainingRun.v1.ml.example.com"} 1)"));
  EXPECT_TRUE(contains(
      text,
      R"(multikueue_adapter_integration_workloads_finished_total{kind="Workflow.v1alpha1.argoproj.io",result="Failed"} 1)"));
}

TEST(MetricsTest, EveryFamilyHasHelp) {
  Metrics metrics;
  metrics.observeAdmission("mutate", "Job", "CREATE", "allowed", 0.0001);
  metrics.recordCertificateReload(true);
  metrics.recordConfigReload(true);
  const std::string text = metrics.render();
  for (const char* name :
       {"multikueue_adapter_webhook_requests_total", "multikueue_adapter_webhook_request_duration_seconds",
        "multikueue_adapter_config_reloads_total", "multikueue_adapter_config_last_reload_successful",
        "multikueue_adapter_certificate_reloads_total"}) {
    EXPECT_TRUE(contains(text, std::string("# HELP ") + name + " ")) << name;
  }
}

TEST(MetricsTest, TheCertificateExpiryAppearsOnceSetAndFollowsEachLoad) {
  Metrics metrics;
  // No certificate loaded: no series, which an expiry alert would read as long expired.
  EXPECT_FALSE(contains(metrics.render(), "\nmultikueue_adapter_webhook_certificate_expiry_timestamp_seconds "));
  metrics.setWebhookCertificateExpiry(1800000000);
  EXPECT_TRUE(
      contains(metrics.render(), "\nmultikueue_adapter_webhook_certificate_expiry_timestamp_seconds 1800000000\n"))
      << metrics.render();
  metrics.setWebhookCertificateExpiry(1807776000);
  EXPECT_TRUE(
      contains(metrics.render(), "\nmultikueue_adapter_webhook_certificate_expiry_timestamp_seconds 1807776000\n"))
      << metrics.render();
}

TEST(MetricsTest, ARemovedClusterTakesItsConnectedSeriesWithIt) {
  Metrics metrics;
  metrics.setClusterConnected("worker1", false);
  metrics.setClusterConnected("worker2", true);
  metrics.removeCluster("worker1");
  metrics.removeCluster("worker3");  // never seen
  const auto text = metrics.render();
  EXPECT_FALSE(contains(text, R"(cluster="worker1")")) << text;
  EXPECT_FALSE(contains(text, R"(cluster="worker3")")) << text;
  EXPECT_TRUE(contains(text, R"(multikueue_adapter_cluster_connected{cluster="worker2"} 1)")) << text;
}

TEST(MetricsTest, TheOldestInACheckStateIsASeriesPerStateThatGoesWithTheLastWorkload) {
  Metrics metrics;
  metrics.setOldestInCheckState("Pending", 1800000000);
  metrics.setOldestInCheckState("Retry", 1800000600);
  metrics.setOldestInCheckState("Pending", 1800000300);
  std::string text = metrics.render();
  EXPECT_TRUE(contains(
      text, R"(multikueue_adapter_admission_check_state_oldest_timestamp_seconds{state="Pending"} 1800000300)"))
      << text;
  EXPECT_TRUE(
      contains(text, R"(multikueue_adapter_admission_check_state_oldest_timestamp_seconds{state="Retry"} 1800000600)"))
      << text;
  metrics.setOldestInCheckState("Pending", std::nullopt);
  metrics.setOldestInCheckState("Ready", std::nullopt);  // never set: nothing to remove
  text = metrics.render();
  EXPECT_FALSE(contains(text, R"(state="Pending")")) << text;
  EXPECT_TRUE(contains(text, R"(state="Retry")")) << text;
  metrics.setOldestInCheckState("Ready", 1800000900);
  metrics.clearOldestInCheckStates();
  text = metrics.render();
  EXPECT_FALSE(contains(text, "multikueue_adapter_admission_check_state_oldest_timestamp_seconds{")) << text;
  metrics.setOldestInCheckState("Retry", 1800001200);  // a series again after the clear
  EXPECT_TRUE(
      contains(metrics.render(),
               R"(multikueue_adapter_admission_check_state_oldest_timestamp_seconds{state="Retry"} 1800001200)"));
}

// Every series of every family, so that a scrape shows them all.
void populateEveryFamily(Metrics& metrics) {
  metrics.observeAdmission("mutate", "PipelineRun", "CREATE", "patched", 0.0002);
  metrics.recordConfigReload(false);
  metrics.recordCertificateReload(true);
  metrics.setWebhookCertificateExpiry(1800000000);
  metrics.setBuildInfo("v1.2.3");
  metrics.setReplicaRole("leader", "multikueue-adapter");
  metrics.recordWorkloadDispatched("cq", "worker1");
  metrics.recordWorkloadAdmitted("cq", "worker1");
  metrics.setClusterConnected("worker1", true);
  metrics.setOldestInCheckState("Pending", 1800000000);
  metrics.setWorkerClusterQueues("worker1", {{"cq", 2, {{"default", "cpu", 8, 2}}}});
  metrics.recordIntegrationWorkloadCreated("PipelineRun.v1.tekton.dev");
  metrics.recordIntegrationJobResumed("PipelineRun.v1.tekton.dev");
  metrics.recordIntegrationJobStopped("PipelineRun.v1.tekton.dev");
  metrics.recordIntegrationWorkloadFinished("PipelineRun.v1.tekton.dev", "Succeeded");
  metrics.observeReconcile("mk-workload", "success", 0.001);
  metrics.setQueueDepth("mk-workload", 3);
}

TEST(MetricsTest, FamilyNamesListEveryFamilyAScrapeShows) {
  Metrics metrics;
  const auto before = metrics.familyNames();  // with no sample yet
  populateEveryFamily(metrics);
  const auto names = metrics.familyNames();
  EXPECT_EQ(names, before);
  std::istringstream lines(metrics.render());
  int families = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("# TYPE ")) continue;
    ++families;
    const auto name = line.substr(7, line.find(' ', 7) - 7);
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << " is missing from familyNames()";
  }
  EXPECT_EQ(families, static_cast<int>(names.size())) << metrics.render();
}

TEST(MetricsTest, EveryFamilyPassesPromtoolCheckMetrics) {
  const auto promtool = test::findPromtool();
  ASSERT_TRUE(promtool) << test::kPromtoolMissing;
  Metrics metrics;
  populateEveryFamily(metrics);
  test::TempDir dir;
  const auto exposition = dir.write("metrics.txt", metrics.render());
  const auto run = test::runTool(*promtool, {"check", "metrics"}, exposition);
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_EQ(run.output, "") << "promtool's lints:\n" << run.output << "\n" << metrics.render();
}

}  // namespace
}  // namespace mka::observability
