// `multikueue-adapter serve` as deployed, a process of its own against a sandbox manager: what
// its /metrics shows once it leads, reconciles and answers a webhook request passes
// `promtool check metrics` (the exposition format and Prometheus's naming lints) without a remark.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app_test_util.h"
#include "mka/sandbox/sandbox.h"
#include "support/child_process.h"
#include "support/eventually.h"
#include "support/ports.h"
#include "support/promtool.h"
#include "support/temp_dir.h"
#include "support/tls.h"

// Its own namespace: the app tests share a unity build.
namespace mka::app::metrics_promtool {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A process started on a busy machine takes a while before it serves, leads and reconciles.
constexpr std::chrono::milliseconds kStartTimeout = 60s;

constexpr std::string_view kConfiguration = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
leaderElection: {leaderElect: true, resourceName: multikueue-adapter, resourceNamespace: kueue-system}
managedByDefaulting: QueueLabeled
dispatch: {enabled: true}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)";

std::string scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  const auto res = client.Get("/metrics");
  return res && res->status == 200 ? res->body : std::string();
}

TEST(MetricsPromtoolTest, WhatServeExportsPassesPromtoolCheckMetrics) {
  const auto promtool = test::findPromtool();
  ASSERT_TRUE(promtool) << test::kPromtoolMissing;

  sandbox::Sandbox sandbox;
  auto& manager = sandbox.addCluster(test_util::managerWithKueueAndTekton());
  manager.api().create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "kueue-system"}}}});
  // A worker whose kubeconfig Secret is missing: the cluster controller reconciles it.
  manager.api().create(
      {"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "", ""},
      {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
       {"kind", "MultiKueueCluster"},
       {"metadata", {{"name", "worker1"}}},
       {"spec", {{"clusterSource", {{"kubeConfig", {{"locationType", "Secret"}, {"location", "worker1-secret"}}}}}}}});
  test::TempDir dir;
  dir.write("config.yaml", kConfiguration);
  dir.write("manager.kubeconfig", manager.kubeconfig());
  test::TestCa ca;
  const auto files = test::writeServingFiles(dir / "certs", ca, ca.issue());
  const int metricsPort = test::freeLoopbackPort();
  const int webhookPort = test::freeLoopbackPort();
  const auto log = dir / "serve.log";
  test::ChildProcess serve(
      MKA_BINARY,
      {"serve", "--config", (dir / "config.yaml").string(), "--kubeconfig", (dir / "manager.kubeconfig").string(),
       "--cert-dir", (dir / "certs").string(), "--webhook-bind-address", "127.0.0.1:" + std::to_string(webhookPort),
       "--health-probe-bind-address", "127.0.0.1:0", "--metrics-bind-address",
       "127.0.0.1:" + std::to_string(metricsPort)},
      log, log);
  ASSERT_TRUE(serve.started());

  // Leading, the cluster controller's queue seen, the certificate loaded.
  ASSERT_TRUE(test::eventually(
      [&] {
        const auto text = scrape(metricsPort);
        return text.find("leader_election_master_status{name=\"multikueue-adapter\"} 1") != std::string::npos &&
               text.find("workqueue_depth{name=\"mk-cluster\"}") != std::string::npos &&
               text.find("controller_runtime_reconcile_total{") != std::string::npos &&
               text.find("multikueue_adapter_webhook_certificate_expiry_timestamp_seconds ") != std::string::npos;
      },
      kStartTimeout))
      << scrape(metricsPort) << test::readFile(log);
  httplib::SSLClient webhook("127.0.0.1", webhookPort);
  webhook.set_ca_cert_path(files.ca.string().c_str());
  webhook.enable_server_certificate_verification(true);
  const auto answer = webhook.Post("/mutate", test_util::pipelineRunReview().dump(), "application/json");
  ASSERT_TRUE(answer && answer->status == 200) << test::readFile(log);

  const auto text = scrape(metricsPort);
  ASSERT_THAT(text, ::testing::HasSubstr("multikueue_adapter_webhook_request_duration_seconds_bucket{"));
  const auto exposition = dir.write("metrics.txt", text);
  const auto run = test::runTool(*promtool, {"check", "metrics"}, exposition);
  EXPECT_EQ(run.exitCode, 0) << run.output << "\n" << text;
  EXPECT_EQ(run.output, "") << "promtool's lints:\n" << run.output << "\n" << text;
}

}  // namespace
}  // namespace mka::app::metrics_promtool
