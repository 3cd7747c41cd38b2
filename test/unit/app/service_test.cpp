// The `serve` service in-process: wiring of config, certificates, webhook, probes and metrics.
#include "mka/app/service.h"
#include "app_test_util.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/net/event_server.h"
#include "mka/observability/health.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"
#include "support/ports.h"
#include "support/table_test.h"
#include "support/temp_dir.h"
#include "support/threads.h"
#include "support/tls.h"

namespace mka::app {
namespace {

using test_util::pipelineRunReview;

using nlohmann::json;
using test::eventually;

constexpr const char* kQueueLabeledConfig = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: QueueLabeled
dispatch: {enabled: false}  # webhook-only: these tests have no cluster
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)";

ServeOptions optionsFor(const test::TempDir& dir) {
  ServeOptions o;
  o.configFile = dir / "config.yaml";
  o.certDir = (dir / "certs").string();
  o.webhookBindAddress = "127.0.0.1:0";
  o.healthProbeBindAddress = "127.0.0.1:0";
  o.metricsBindAddress = "127.0.0.1:0";
  return o;
}

// optionsFor(dir) for a Service that talks to `cluster`: its kubeconfig and a serving
// certificate of `ca` written into `dir` (and into `*files` when given).
ServeOptions optionsWithCluster(const test::TempDir& dir, const sandbox::Cluster& cluster, const test::TestCa& ca,
                                test::ServingFiles* files = nullptr) {
  dir.write("manager.kubeconfig", cluster.kubeconfig());
  const auto written = test::writeServingFiles(dir / "certs", ca, ca.issue());
  if (files) *files = written;
  auto options = optionsFor(dir);
  options.kubeconfig = (dir / "manager.kubeconfig").string();
  return options;
}

std::unique_ptr<httplib::SSLClient> webhookClient(const Service& service, const std::filesystem::path& caFile) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", service.webhookPort());
  client->set_ca_cert_path(caFile.string().c_str());
  client->enable_server_certificate_verification(true);
  client->set_keep_alive(true);
  return client;
}

std::optional<json> mutate(httplib::SSLClient& client, const json& review) {
  auto res = client.Post("/mutate", review.dump(), "application/json");
  if (!res) {
    ADD_FAILURE() << "POST /mutate failed: " << httplib::to_string(res.error())
                  << " verify=" << client.get_openssl_verify_result();
    return std::nullopt;
  }
  if (res->status != 200) {
    ADD_FAILURE() << "POST /mutate answered " << res->status << ": " << res->body;
    return std::nullopt;
  }
  return json::parse(res->body);
}

int probe(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get(path.c_str());
  return res ? res->status : -1;
}

std::string get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get(path.c_str());
  return res ? res->body : "";
}

TEST(ServiceTest, ServesMutateOverTlsAndIsReadyOnceTheCertificateIsLoaded) {
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  test::TestCa ca;
  auto files = test::writeServingFiles(dir / "certs", ca, ca.issue());

  Service service(optionsFor(dir));
  service.start();
  EXPECT_EQ(probe(service.probePort(), "/healthz"), 200);
  ASSERT_TRUE(eventually([&] { return probe(service.probePort(), "/readyz") == 200; }));
  // Equal bind addresses share one server, as in controller-runtime.
  EXPECT_EQ(service.metricsPort(), service.probePort());

  auto client = webhookClient(service, files.ca);
  auto answer = mutate(*client, pipelineRunReview());
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ((*answer)["response"]["uid"], "uid-1");
  EXPECT_EQ((*answer)["response"]["patchType"], "JSONPatch");

  // Go clients ask for gzip; a 300-byte review is answered uncompressed (cheaper than gzip).
  httplib::Headers gzip = {{"Accept-Encoding", "gzip"}};
  auto raw = client->Post("/mutate", gzip, pipelineRunReview("uid-gzip").dump(), "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 200);
  EXPECT_FALSE(raw->has_header("Content-Encoding")) << raw->get_header_value("Content-Encoding");
  EXPECT_EQ(raw->get_header_value("Content-Type"), "application/json; charset=utf-8");

  auto metrics = get(service.metricsPort(), "/metrics");
  EXPECT_NE(metrics.find("multikueue_adapter_webhook_requests_total{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("result=\"patched\""), std::string::npos) << metrics;
  // A healthy replica's alerts stay quiet: the configuration it started with counts as loaded.
  EXPECT_NE(metrics.find("\nmultikueue_adapter_config_last_reload_successful 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("multikueue_adapter_build_info{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nprocess_resident_memory_bytes "), std::string::npos) << metrics;
  service.stop();
}

TEST(ServiceTest, NotReadyWithoutCertificateUntilTheFilesAppear) {
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  std::filesystem::create_directories(dir / "certs");

  Service service(optionsFor(dir));
  service.start();
  EXPECT_EQ(probe(service.probePort(), "/healthz"), 200);
  EXPECT_EQ(probe(service.probePort(), "/readyz"), 500);
  auto verbose = get(service.probePort(), "/readyz?verbose");
  EXPECT_NE(verbose.find("[-]certificate"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("[+]config"), std::string::npos) << verbose;

  test::TestCa ca;
  test::writeServingFiles(dir / "certs", ca, ca.issue());
  EXPECT_TRUE(eventually([&] { return probe(service.probePort(), "/readyz") == 200; }));
}

// The gauge's value in a scrape, or nullopt when the scrape has no such series.
std::optional<double> certificateExpiry(const std::string& metrics) {
  const std::string name = "\nmultikueue_adapter_webhook_certificate_expiry_timestamp_seconds ";
  const auto at = metrics.find(name);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(metrics.substr(at + name.size()));
}

TEST(ServiceTest, ExportsTheServingCertificatesExpiryOnceLoadedAndOnEachRenewal) {
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  std::filesystem::create_directories(dir / "certs");
  Service service(optionsFor(dir));
  service.start();
  EXPECT_FALSE(certificateExpiry(get(service.metricsPort(), "/metrics")).has_value()) << "no certificate yet";

  test::TestCa ca;
  for (const auto validity : {std::chrono::hours{24 * 5}, std::chrono::hours{24 * 90}}) {
    // The CA sets notAfter to the second it signs plus the validity, read with time(), which the
    // C library may serve from a coarse clock a few milliseconds behind system_clock: near a
    // second's start it can still say the previous one.
    const auto earliest =
        std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) - std::chrono::seconds{1} + validity;
    const auto leaf = ca.issue({.validity = validity});
    const auto latest = std::chrono::system_clock::now() + validity;
    test::writeServingFiles(dir / "certs", ca, leaf);
    const auto seconds = [](auto t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); };
    EXPECT_TRUE(eventually([&] {
      const auto expiry = certificateExpiry(get(service.metricsPort(), "/metrics"));
      return expiry && *expiry >= seconds(earliest) && *expiry <= seconds(latest);
    })) << validity.count()
        << "h: " << get(service.metricsPort(), "/metrics");
  }
  service.stop();
}

// The series the stuck-Workloads alert reads: published while the dispatch loop runs, gone when
// it stops (a replica that no longer dispatches has nothing waiting on it).
TEST(ServiceTest, TheOldestWorkloadInACheckStateIsPublishedWhileTheDispatchLoopRuns) {
  sandbox::Sandbox sandbox;
  const std::filesystem::path crds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
  sandbox::ClusterOptions clusterOptions{.name = "manager"};
  for (const auto& entry : std::filesystem::directory_iterator(crds))
    if (entry.path().filename().string().starts_with("kueue.x-k8s.io_") ||
        entry.path().filename().string().starts_with("tekton.dev_"))
      clusterOptions.crdFiles.push_back(entry.path());
  auto& manager = sandbox.addCluster(clusterOptions);
  auto& api = manager.api();
  api.create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "kueue-system"}}}});
  // Our check, its MultiKueueConfig naming a worker that does not exist (the check stays
  // Pending), and a PipelineRun for MultiKueue that owns the Workload.
  api.create({"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", "", ""},
             {{"metadata", {{"name", "mk"}}},
              {"spec",
               {{"controllerName", "multikueue-adapter.dev/dispatcher"},
                {"parameters", {{"apiGroup", "kueue.x-k8s.io"}, {"kind", "MultiKueueConfig"}, {"name", "mk"}}}}}});
  api.create({"kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "", "", ""},
             {{"metadata", {{"name", "mk"}}}, {"spec", {{"clusters", json::array({"worker1"})}}}});
  api.create({"tekton.dev", "v1", "pipelineruns", "default", "", ""},
             {{"metadata", {{"name", "job"}, {"namespace", "default"}}},
              {"spec", {{"pipelineRef", {{"name", "build"}}}, {"managedBy", "kueue.x-k8s.io/multikueue"}}}});
  const sandbox::ResourceRef workloads{"kueue.x-k8s.io", "v1beta2", "workloads", "default", "", ""};
  auto workload = *api.create(
      workloads,
      {{"metadata",
        {{"name", "wl"},
         {"namespace", "default"},
         {"ownerReferences", json::array({{{"apiVersion", "tekton.dev/v1"},
                                           {"kind", "PipelineRun"},
                                           {"name", "job"},
                                           {"uid", "uid-job"},
                                           {"controller", true}}})}}},
       {"spec",
        {{"queueName", "q"},
         {"podSets",
          json::array({{{"name", "main"},
                        {"count", 1},
                        {"template",
                         {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}})}}}});
  workload["status"] = {
      {"conditions", json::array({{{"type", "QuotaReserved"},
                                   {"status", "True"},
                                   {"reason", "QuotaReserved"},
                                   {"message", ""},
                                   {"lastTransitionTime", "2026-11-26T10:00:00Z"}}})},
      {"admissionChecks",
       json::array(
           {{{"name", "mk"}, {"state", "Pending"}, {"message", ""}, {"lastTransitionTime", "2026-11-26T10:05:00Z"}}})}};
  api.update({"kueue.x-k8s.io", "v1beta2", "workloads", "default", "wl", "status"}, workload);

  test::TempDir dir;
  dir.write("config.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
leaderElection: {leaderElect: false}
dispatch: {enabled: true}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)");
  test::TestCa ca;
  Service service(optionsWithCluster(dir, manager, ca));
  service.start();
  const std::string pending =
      R"(multikueue_adapter_admission_check_state_oldest_timestamp_seconds{state="Pending"} )" +
      std::to_string(std::chrono::system_clock::to_time_t(*parseRfc3339("2026-11-26T10:05:00Z")));
  EXPECT_TRUE(eventually([&] { return service.metrics().render().find(pending) != std::string::npos; },
                         std::chrono::seconds{60}))
      << service.metrics().render();
  service.stop();
  EXPECT_EQ(service.metrics().render().find("multikueue_adapter_admission_check_state_oldest_timestamp_seconds{"),
            std::string::npos)
      << service.metrics().render();
}

TEST(ServiceTest, InvalidConfigurationRefusesToStartWithEveryError) {
  test::TempDir dir;
  dir.write("config.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: Sometimes
multiKueue:
  gcInterval: -1m
)");
  try {
    Service service(optionsFor(dir));
    FAIL() << "an invalid configuration was accepted";
  } catch (const ValidationError& e) {
    ASSERT_EQ(e.errors().size(), 2u) << e.what();
    EXPECT_EQ(e.errors()[0].path, "managedByDefaulting");
    EXPECT_EQ(e.errors()[1].path, "multiKueue.gcInterval");
  }
}

TEST(ServiceTest, FlagsOverrideTheFile) {
  test::TempDir dir;
  dir.write("config.yaml", std::string(kQueueLabeledConfig) + "webhook: {port: 9443, certDir: /nonexistent}\n");
  auto options = optionsFor(dir);
  Service service(options);
  auto cfg = service.configuration();
  EXPECT_EQ(cfg->webhook.certDir, (dir / "certs").string());
  EXPECT_EQ(cfg->webhook.host, "127.0.0.1");
  EXPECT_EQ(cfg->webhook.port, 0);
  EXPECT_EQ(cfg->healthProbeBindAddress, "127.0.0.1:0");
}

// The threads of this process whose name starts with `prefix`.
int threadsNamed(std::string_view prefix) {
  const auto names = test::threadNames();
  return static_cast<int>(
      std::count_if(names.begin(), names.end(), [&](const auto& n) { return n.starts_with(prefix); }));
}

struct EventLoopsFlag {
  std::optional<std::size_t> flag;
  int loops;
  std::string name = flag ? std::to_string(*flag) : "default";
};

std::vector<EventLoopsFlag> eventLoopsFlags() {
  return {{3, 3}, {1, 1}, {std::nullopt, static_cast<int>(net::eventLoopsFor(std::thread::hardware_concurrency()))}};
}

MKA_TABLE_TEST(ServiceTest, TheWebhookRunsTheEventLoopsTheFlagAsksFor, EventLoopsFlag, eventLoopsFlags()) {
  const EventLoopsFlag& c = testCase();
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  test::TestCa ca;
  test::writeServingFiles(dir / "certs", ca, ca.issue());
  const int before = threadsNamed("webhook-loop");
  auto options = optionsFor(dir);
  options.webhookEventLoops = c.flag;
  Service service(options);
  service.start();
  // Each loop names its thread once it runs, which may be after start() returns.
  EXPECT_TRUE(eventually([&] { return threadsNamed("webhook-loop") - before == c.loops; }))
      << threadsNamed("webhook-loop") - before << " loop threads";
  service.stop();
}

TEST(ServiceTest, HotReloadAppliesAGoodFileAndKeepsTheLastGoodOneOnABadFile) {
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  test::TestCa ca;
  auto files = test::writeServingFiles(dir / "certs", ca, ca.issue());
  Service service(optionsFor(dir));
  service.start();
  auto client = webhookClient(service, files.ca);

  test::writeFileAtomically(dir / "config.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: Never
dispatch: {enabled: false}
webhook: {port: 9999}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)");
  ASSERT_TRUE(
      eventually([&] { return service.configuration()->managedByDefaulting == config::ManagedByDefaulting::Never; }));
  auto answer = mutate(*client, pipelineRunReview("uid-2"));
  ASSERT_TRUE(answer.has_value());
  EXPECT_FALSE((*answer)["response"].contains("patch")) << answer->dump();
  // Command-line overrides survive the reload, and a listener setting needs a restart.
  EXPECT_EQ(service.configuration()->healthProbeBindAddress, "127.0.0.1:0");
  EXPECT_EQ(service.configuration()->webhook.certDir, (dir / "certs").string());
  EXPECT_EQ(service.configuration()->webhook.port, 0);

  test::writeFileAtomically(dir / "config.yaml", "apiVersion: nope\n");
  ASSERT_TRUE(eventually([&] {
    auto metrics = get(service.metricsPort(), "/metrics");
    return metrics.find("multikueue_adapter_config_last_reload_successful 0") != std::string::npos;
  })) << get(service.metricsPort(), "/metrics");
  EXPECT_EQ(service.configuration()->managedByDefaulting, config::ManagedByDefaulting::Never);
  EXPECT_EQ(probe(service.probePort(), "/readyz"), 200);
}

// The webhook configurations and RBAC were rendered for the kinds the process started with: a
// reload that adds one says that they must be rendered again.
TEST(ServiceTest, AReloadThatAddsAKindSaysTheManifestsDoNotCoverIt) {
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  test::TestCa ca;
  test::writeServingFiles(dir / "certs", ca, ca.issue());
  Service service(optionsFor(dir));
  service.start();
  EXPECT_TRUE(service.kindsAddedSinceStart().empty());

  test::writeFileAtomically(dir / "config.yaml",
                            std::string(kQueueLabeledConfig) + "  - name: MPIJob.v2beta1.kubeflow.org\n");
  ASSERT_TRUE(eventually([&] {
    return service.kindsAddedSinceStart() == std::vector<std::string>{"MPIJob.v2beta1.kubeflow.org"};
  })) << service.configuration()->multiKueue.externalFrameworks.size();

  test::writeFileAtomically(dir / "config.yaml", kQueueLabeledConfig);  // back to what was deployed
  EXPECT_TRUE(eventually([&] { return service.kindsAddedSinceStart().empty(); }));
  service.stop();
}

TEST(ServiceTest, StopMarksTheProcessNotReady) {
  test::TempDir dir;
  dir.write("config.yaml", kQueueLabeledConfig);
  test::TestCa ca;
  test::writeServingFiles(dir / "certs", ca, ca.issue());
  Service service(optionsFor(dir));
  service.start();
  ASSERT_TRUE(service.health().ready(false).ok);
  service.stop();
  auto report = service.health().ready(true);
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.body.find("shutting down"), std::string::npos) << report.body;
}

TEST(ServiceTest, MultiKueueQueuesFollowsTheManagerClusterAndIsReadyOnceSynced) {
  sandbox::Sandbox sandbox;
  const std::filesystem::path crds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
  auto& manager = sandbox.addCluster(
      {.name = "manager",
       .crdFiles = {crds / "kueue.x-k8s.io_localqueues.yaml", crds / "kueue.x-k8s.io_clusterqueues.yaml",
                    crds / "kueue.x-k8s.io_admissionchecks.yaml"}});
  test::TempDir dir;
  dir.write("config.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: MultiKueueQueues
dispatch: {enabled: false}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)");
  test::TestCa ca;
  test::ServingFiles files;
  auto options = optionsWithCluster(dir, manager, ca, &files);

  manager.setUnreachable(true);  // the caches cannot sync yet
  Service service(options);
  service.start();
  ASSERT_TRUE(eventually(
      [&] { return get(service.probePort(), "/readyz?verbose").find("[+]certificate") != std::string::npos; }));
  auto verbose = get(service.probePort(), "/readyz?verbose");
  EXPECT_NE(verbose.find("[-]queue-index"), std::string::npos) << verbose;
  manager.setUnreachable(false);
  ASSERT_TRUE(eventually([&] { return probe(service.probePort(), "/readyz") == 200; }));

  auto& api = manager.api();
  auto create = [&](const std::string& plural, const std::string& ns, json object) {
    api.create({"kueue.x-k8s.io", "v1beta2", plural, ns, "", ""}, std::move(object));
  };
  create("admissionchecks", "",
         {{"metadata", {{"name", "mk"}}}, {"spec", {{"controllerName", "kueue.x-k8s.io/multikueue"}}}});
  create("clusterqueues", "",
         {{"metadata", {{"name", "cq-mk"}}},
          {"spec", {{"admissionChecksStrategy", {{"admissionChecks", json::array({{{"name", "mk"}}})}}}}}});
  create("clusterqueues", "", {{"metadata", {{"name", "cq-local"}}}, {"spec", json::object()}});
  api.create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "ci"}}}});
  create("localqueues", "ci", {{"metadata", {{"name", "q"}}}, {"spec", {{"clusterQueue", "cq-mk"}}}});
  create("localqueues", "ci", {{"metadata", {{"name", "local"}}}, {"spec", {{"clusterQueue", "cq-local"}}}});

  auto client = webhookClient(service, files.ca);
  auto patchType = [&](const std::string& queue) {
    auto review = pipelineRunReview();
    review["request"]["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue;
    auto answer = mutate(*client, review);
    return answer ? (*answer)["response"].value("patchType", "") : "no answer";
  };
  EXPECT_TRUE(eventually([&] { return patchType("q") == "JSONPatch"; })) << "a MultiKueue-backed queue is defaulted";
  EXPECT_EQ(patchType("local"), "") << "a queue without a MultiKueue check is left alone";
  service.stop();
}

// The Kueue CRDs the queue index follows, in a sandbox manager.
sandbox::ClusterOptions managerWithQueueCrds() {
  const std::filesystem::path crds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
  return {.name = "manager",
          .crdFiles = {crds / "kueue.x-k8s.io_localqueues.yaml", crds / "kueue.x-k8s.io_clusterqueues.yaml",
                       crds / "kueue.x-k8s.io_admissionchecks.yaml"}};
}

constexpr const char* kMultiKueueQueuesConfig = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: MultiKueueQueues
dispatch: {enabled: false}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)";

// A replica the Service names ready gets webhook traffic: it must never say so before its queue
// caches synced, not even while it starts its servers. /readyz is polled from before start().
TEST(ServiceTest, NeverReadyBeforeTheQueueCachesSynced) {
  sandbox::Sandbox sandbox;
  auto& manager = sandbox.addCluster(managerWithQueueCrds());
  test::TempDir dir;
  dir.write("config.yaml", kMultiKueueQueuesConfig);
  test::TestCa ca;
  auto options = optionsWithCluster(dir, manager, ca);
  const int port = test::freeLoopbackPort();
  options.healthProbeBindAddress = "127.0.0.1:" + std::to_string(port);

  manager.setUnreachable(true);  // the caches cannot sync
  std::atomic<bool> polling{true};
  std::atomic<int> answers{0}, ready{0};
  std::thread poller([&] {
    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(true);
    while (polling) {
      if (auto res = client.Get("/readyz")) {
        ++answers;
        if (res->status == 200) ++ready;
      }
    }
  });
  Service service(options);
  service.start();
  EXPECT_TRUE(eventually(
      [&] { return answers.load() > 10 && get(port, "/readyz?verbose").find("[+]certificate") != std::string::npos; }));
  polling = false;
  poller.join();
  EXPECT_EQ(ready.load(), 0) << "ready before the LocalQueue, ClusterQueue and AdmissionCheck caches synced";
  manager.setUnreachable(false);
  EXPECT_TRUE(eventually([&] { return probe(port, "/readyz") == 200; }));
  service.stop();
}

// Replicas share a ServiceAccount: the user agent of their calls is what tells them apart in an
// audit log. It names the build and the replica's identity in the Lease (the pod's name first).
TEST(ServiceTest, ItsCallsNameTheReplicaInTheirUserAgent) {
  sandbox::Sandbox sandbox;
  auto& manager = sandbox.addCluster(managerWithQueueCrds());
  test::TempDir dir;
  dir.write("config.yaml", kMultiKueueQueuesConfig);
  test::TestCa ca;
  auto options = optionsWithCluster(dir, manager, ca);
  options.version = "v9.9.9";

  manager.recordRequests(true);
  ::setenv("POD_NAME", "adapter-7d9f5-x2k4q", 1);
  Service service(options);
  ::unsetenv("POD_NAME");
  service.start();
  ASSERT_TRUE(eventually([&] { return probe(service.probePort(), "/readyz") == 200; }));
  std::set<std::string> agents;
  for (const auto& r : manager.recordedRequests()) agents.insert(r.userAgent);
  ASSERT_EQ(agents.size(), 1u) << "one replica, one identity";
  EXPECT_THAT(
      *agents.begin(),
      ::testing::MatchesRegex(R"(multikueue-adapter/v9\.9\.9 \(linux/[a-z0-9]+\) adapter-7d9f5-x2k4q_[a-z0-9]{8})"));
  service.stop();
}

}  // namespace
}  // namespace mka::app

namespace mka::app {
namespace {

// The leader's controllers need the cluster: without any kubeconfig the error says what is
// missing, why it is needed (dispatch.enabled, the default; or the integration of a worker's or
// a single cluster's adapter) and how to run webhook-only.
struct ClusterlessConfig {
  std::string name;
  std::string config;
  std::vector<std::string> says;
};

std::vector<ClusterlessConfig> clusterlessConfigs() {
  const std::string head = "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n";
  return {
      {"dispatch",
       head + "managedByDefaulting: QueueLabeled\nmultiKueue:\n  externalFrameworks:\n  - name: "
              "PipelineRun.v1.tekton.dev\n",
       {"dispatch.enabled is true (the default)", "set dispatch.enabled: false for webhook-only mode"}},
      {"integration",
       head + "managedByDefaulting: Never\ndispatch:\n  enabled: false\nintegrations:\n  frameworks:\n"
              "  - name: Workflow.v1alpha1.argoproj.io\n",
       {"integrations.frameworks lists kinds, so the adapter needs its cluster"}},
  };
}

MKA_TABLE_TEST(ServiceDispatchTest, ControllersWithoutAClusterAreAClearError, ClusterlessConfig, clusterlessConfigs()) {
  const ClusterlessConfig& c = testCase();
  test::TempDir dir;
  dir.write("config.yaml", c.config);
  test::TestCa ca;
  test::writeServingFiles(dir / "certs", ca, ca.issue());
  auto options = optionsFor(dir);
  // A port taken by nobody: the refusal comes before any port is bound, so it stays free.
  const int port = test::freeLoopbackPort();
  options.webhookBindAddress = "127.0.0.1:" + std::to_string(port);
  setenv("KUBECONFIG", (dir / "absent.kubeconfig").c_str(), 1);
  Service service(options);
  try {
    service.start();
    ADD_FAILURE() << "start() succeeded without a cluster";
  } catch (const Error& e) {
    for (const auto& piece : c.says) EXPECT_THAT(e.what(), ::testing::HasSubstr(piece));
  }
  unsetenv("KUBECONFIG");
  EXPECT_TRUE(test::canBindLoopback(port)) << "the webhook port was bound before the prerequisites were checked";
  service.stop();
}

}  // namespace
}  // namespace mka::app

namespace mka::app {
namespace {

// Webhook-only mode: Kueue's own MultiKueue dispatches the external frameworks and copies the
// workers' status through the status subresource, so a kind whose CRD has none is refused at
// start (before any port is bound) and on a hot reload, naming the entry and the fix.
TEST(ServiceTest, WebhookOnlyRefusesAKindWithoutAStatusSubresourceAtStartAndOnReload) {
  const auto crd = [](const std::string& kind, const std::string& plural, bool status) {
    return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + plural +
           ".example.com}\nspec:\n  group: example.com\n  names: {kind: " + kind + ", plural: " + plural +
           ", singular: " + plural.substr(0, plural.size() - 1) + ", listKind: " + kind +
           "List}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" +
           (status ? "    subresources: {status: {}}\n" : "") +
           "    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n";
  };
  test::TempDir dir;
  sandbox::Sandbox sandbox;
  auto& manager = sandbox.addCluster({.name = "manager",
                                      .crdFiles = {dir.write("runs.yaml", crd("Run", "runs", false)),
                                                   dir.write("tasks.yaml", crd("Task", "tasks", true))}});
  test::TestCa ca;
  auto options = optionsWithCluster(dir, manager, ca);
  const std::string header = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: QueueLabeled
dispatch: {enabled: false}
multiKueue:
  externalFrameworks:
  - name: Task.v1.example.com
)";

  dir.write("config.yaml", header + "  - name: Run.v1.example.com\n");
  try {
    Service service(options);
    service.start();
    FAIL() << "started with a kind Kueue cannot copy status for";
  } catch (const ValidationError& e) {
    ASSERT_EQ(e.errors().size(), 1u) << e.what();
    EXPECT_EQ(e.errors()[0].path, "multiKueue.externalFrameworks[1].name");
    EXPECT_THAT(e.errors()[0].problem, ::testing::HasSubstr("serves runs.example.com without a status"));
    EXPECT_THAT(e.errors()[0].fix, ::testing::HasSubstr("set dispatch.enabled: true"));
  }

  dir.write("config.yaml", header);
  Service service(options);
  service.start();
  test::writeFileAtomically(dir / "config.yaml", header + "  - name: Run.v1.example.com\n");
  EXPECT_TRUE(eventually([&] {
    return get(service.metricsPort(), "/metrics").find("multikueue_adapter_config_last_reload_successful 0") !=
           std::string::npos;
  })) << get(service.metricsPort(), "/metrics");
  EXPECT_EQ(service.configuration()->multiKueue.externalFrameworks.size(), 1u) << "the refused file was applied";
  service.stop();
}

}  // namespace
}  // namespace mka::app

namespace mka::app {
namespace {

// metricsSecure: /metrics over HTTPS (a self-signed certificate), each bearer token reviewed by
// the cluster (TokenReview) and its access to GET /metrics (SubjectAccessReview); the answers are
// kept, so a scraper does not cost two reviews per scrape.
TEST(ServiceTest, SecureMetricsAnswerOnlyTokensAllowedToGetThem) {
  sandbox::Sandbox sandbox;
  auto& manager = sandbox.addCluster({.name = "manager"});
  test::TempDir dir;
  dir.write("config.yaml", std::string(kQueueLabeledConfig) + "metricsSecure: true\n");
  test::TestCa ca;
  auto options = optionsWithCluster(dir, manager, ca);
  options.healthProbeBindAddress = "0";  // its own address: probes stay plain HTTP

  auto& api = manager.api();
  api.create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "monitoring"}}}});
  const auto tokenOf = [&](const std::string& account) {
    api.create({"", "v1", "serviceaccounts", "monitoring", "", ""}, {{"metadata", {{"name", account}}}});
    api.create({"", "v1", "secrets", "monitoring", "", ""},
               {{"metadata",
                 {{"name", account + "-token"}, {"annotations", {{"kubernetes.io/service-account.name", account}}}}},
                {"type", "kubernetes.io/service-account-token"}});
    std::string token;
    EXPECT_TRUE(eventually([&] {
      const auto secret = api.get({"", "v1", "secrets", "monitoring", account + "-token", ""});
      if (!secret.contains("data") || !secret["data"].contains("token")) return false;
      token = base64Decode(secret["data"]["token"].get<std::string>()).value_or("");
      return true;
    }));
    return token;
  };
  const auto prometheus = tokenOf("prometheus"), nobody = tokenOf("nobody");
  api.create({"rbac.authorization.k8s.io", "v1", "clusterroles", "", "", ""},
             {{"metadata", {{"name", "multikueue-adapter-metrics-reader"}}},
              {"rules", json::array({{{"nonResourceURLs", {"/metrics"}}, {"verbs", {"get"}}}})}});
  api.create(
      {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "", "", ""},
      {{"metadata", {{"name", "prometheus-metrics"}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"},
         {"kind", "ClusterRole"},
         {"name", "multikueue-adapter-metrics-reader"}}},
       {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "prometheus"}, {"namespace", "monitoring"}}})}});

  Service service(options);
  service.start();
  const auto scrape = [&](const std::string& token) {
    httplib::SSLClient client("127.0.0.1", service.metricsPort());
    client.enable_server_certificate_verification(false);  // self-signed, as controller-runtime's
    if (!token.empty()) client.set_bearer_token_auth(token);
    auto res = client.Get("/metrics");
    return res ? std::pair{res->status, res->body} : std::pair{-1, std::string(httplib::to_string(res.error()))};
  };
  EXPECT_EQ(scrape("").first, 401);
  EXPECT_EQ(scrape("not-a-token").first, 401);
  const auto forbidden = scrape(nobody);
  EXPECT_EQ(forbidden.first, 403);
  EXPECT_THAT(forbidden.second, ::testing::HasSubstr("system:serviceaccount:monitoring:nobody"));
  manager.recordRequests(true);
  const auto allowed = scrape(prometheus);
  EXPECT_EQ(allowed.first, 200) << allowed.second;
  EXPECT_THAT(allowed.second, ::testing::HasSubstr("multikueue_adapter_build_info"));
  EXPECT_EQ(scrape(prometheus).first, 200);
  std::size_t reviews = 0;
  for (const auto& r : manager.recordedRequests())
    if (r.resource == "tokenreviews" || r.resource == "subjectaccessreviews") ++reviews;
  EXPECT_EQ(reviews, 2u) << "one TokenReview and one SubjectAccessReview, then the kept answer";

  httplib::Client plain("127.0.0.1", service.metricsPort());
  const auto res = plain.Get("/metrics");
  EXPECT_FALSE(res && res->status == 200) << "served over plain HTTP";
  service.stop();
}

}  // namespace
}  // namespace mka::app
