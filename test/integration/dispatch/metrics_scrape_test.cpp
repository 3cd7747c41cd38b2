// The metrics an operator alerts on, scraped from /metrics of the whole `serve` process (in
// process, real clock) while it runs as deployed on a manager with two workers: every series the
// README lists for the manager moves as the README says. The stand-ins play Kueue's core and the
// framework controllers; the workers run the environment's own job integration.
#include <httplib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/workload_status.h"
#include "mka/app/dispatch_runner.h"
#include "mka/app/service.h"
#include "mka/common/base64.h"
#include "mka/common/clock.h"
#include "mka/demo/environment.h"
#include "mka/integration/workload_builder.h"
#include "mka/kube/api_error.h"
#include "mka/kube/client.h"
#include "mka/multikueue/api.h"
#include "mka/observability/health.h"
#include "mka/version.h"
#include "mka/yaml/json.h"
#include "support/eventually.h"
#include "support/temp_dir.h"
#include "support/tls.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

// The integration's series name a kind as its configuration does.
constexpr const char* kFramework = "PipelineRun.v1.tekton.dev";

constexpr const char* kConfig = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
leaderElection: {leaderElect: true, resourceName: multikueue-adapter, resourceNamespace: kueue-system}
managedByDefaulting: MultiKueueQueues
dispatch: {enabled: true, admissionCheckControllerName: multikueue-adapter.dev/dispatcher}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  origin: multikueue
integrations:
  frameworks:
  - name: PipelineRun.v1.tekton.dev
)";

// One scrape: every sample of the Prometheus text format as name, labels and value.
class Scrape {
 public:
  explicit Scrape(const std::string& text) : text_(text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line.front() == '#') continue;
      Sample sample;
      std::size_t pos = line.find_first_of("{ ");
      sample.name = line.substr(0, pos);
      if (pos != std::string::npos && line[pos] == '{') {
        const auto close = line.find("} ", pos);
        std::string labels = line.substr(pos + 1, close - pos - 1);
        // Label values here never hold '"' or ','.
        std::istringstream pairs(labels);
        for (std::string pair; std::getline(pairs, pair, ',');) {
          const auto eq = pair.find('=');
          sample.labels[pair.substr(0, eq)] = pair.substr(eq + 2, pair.size() - eq - 3);
        }
        pos = close + 1;
      }
      sample.value = std::stod(line.substr(pos + 1));
      samples_.push_back(std::move(sample));
    }
  }

  // The sum over the series of `name` that carry every label in `labels`; nullopt when none does.
  std::optional<double> sum(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    std::optional<double> total;
    for (const auto& s : samples_) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) match = match && s.labels.count(k) && s.labels.at(k) == v;
      if (match) total = total.value_or(0) + s.value;
    }
    return total;
  }
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    return sum(name, labels).value_or(-1);
  }
  const std::string& text() const { return text_; }

 private:
  struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
  };
  std::string text_;
  std::vector<Sample> samples_;
};

class MetricsScrape : public ::testing::Test {
 protected:
  void TearDown() override {
    if (service_) service_->stop();
    service_.reset();
    env_.reset();
  }

  // The environment (`eo` plus the checked-in CRDs and samples) and `serve` against `cluster`
  // with the configuration `text`; returns once the adapter leads.
  void start(demo::Environment::Options eo, const std::string& cluster, const std::string& text) {
    eo.crdDirectory = std::string(MKA_FIXTURES_DIR) + "/crds";
    eo.samplesDirectory = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
    env_ = std::make_unique<demo::Environment>(eo);
    kubeconfigs_ = env_->sandbox().writeKubeconfigs(dir_ / "kubeconfigs");
    configFile_ = dir_.write("config.yaml", text);
    files_ = test::writeServingFiles(dir_ / "certs", ca_, ca_.issue());
    cluster_ = cluster;
    // The leader election Lease lives where Kueue runs (the single-cluster samples leave that
    // namespace to Kueue's install).
    try {
      env_->create(cluster, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "kueue-system"}}}});
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::AlreadyExists) throw;
    }

    app::ServeOptions so;
    so.configFile = configFile_;
    so.kubeconfig = kubeconfigs_.at(cluster).string();
    so.certDir = (dir_ / "certs").string();
    so.webhookBindAddress = "127.0.0.1:0";
    so.healthProbeBindAddress = "127.0.0.1:0";
    so.metricsBindAddress = "127.0.0.1:0";
    so.version = MKA_VERSION;  // as the command line passes it
    const bool dispatch = text.find("dispatch: {enabled: true") != std::string::npos;
    service_ = std::make_unique<app::Service>(so);
    service_->start();
    ASSERT_TRUE(eventually([&] {
      auto* runner = service_->dispatchRunner();
      return service_->health().ready(false).ok && runner && (!dispatch || runner->dispatching()) &&
             runner->integrating();
    })) << "the adapter never led";
  }

  Scrape scrape() {
    httplib::Client client("127.0.0.1", service_->metricsPort());
    auto res = client.Get("/metrics");
    EXPECT_TRUE(res && res->status == 200) << "GET /metrics failed";
    return Scrape(res ? res->body : "");
  }

  // The job of the sample manifest `sample` (under manifests/samples), named `name`, as a user
  // submits it: through our /mutate as kube-apiserver would call it, the answer's JSON patch
  // applied, then created on the adapter's cluster.
  json submit(const std::string& sample, const std::string& name) {
    std::ifstream in(std::string(MKA_SOURCE_DIR) + "/manifests/samples/" + sample);
    std::stringstream text;
    text << in.rdbuf();
    json job = yaml::parseJson(text.str(), yaml::Limits::forManifests()).at(0);
    job["metadata"]["name"] = name;
    const std::string apiVersion = job.at("apiVersion");
    const std::string kind = job.at("kind");
    const auto slash = apiVersion.find('/');
    const std::string group = apiVersion.substr(0, slash), version = apiVersion.substr(slash + 1);
    std::string plural = kind + "s";
    std::transform(plural.begin(), plural.end(), plural.begin(), [](unsigned char c) { return std::tolower(c); });
    const json review = {{"apiVersion", "admission.k8s.io/v1"},
                         {"kind", "AdmissionReview"},
                         {"request",
                          {{"uid", "uid-" + name},
                           {"kind", {{"group", group}, {"version", version}, {"kind", kind}}},
                           {"resource", {{"group", group}, {"version", version}, {"resource", plural}}},
                           {"name", name},
                           {"namespace", "default"},
                           {"operation", "CREATE"},
                           {"object", job}}}};
    httplib::SSLClient client("127.0.0.1", service_->webhookPort());
    client.set_ca_cert_path(files_.ca.string().c_str());
    client.enable_server_certificate_verification(true);
    auto res = client.Post("/mutate", review.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 200) << "POST /mutate failed";
    if (!res) return {};
    const auto response = json::parse(res->body).at("response");
    EXPECT_EQ(response.value("patchType", ""), "JSONPatch") << res->body;
    if (response.contains("patch"))
      job = job.patch(json::parse(base64Decode(response.at("patch").get<std::string>()).value_or("[]")));
    return env_->create(cluster_, job);
  }

  FakeClock clock_;  // for the tests that give it to the environment
  test::TempDir dir_;
  test::TestCa ca_;
  test::ServingFiles files_;
  std::filesystem::path configFile_;
  std::string cluster_;
  std::unique_ptr<demo::Environment> env_;
  std::map<std::string, std::filesystem::path> kubeconfigs_;
  std::unique_ptr<app::Service> service_;
};

TEST_F(MetricsScrape, EveryListedManagerMetricMovesAsDocumented) {
  demo::Environment::Options eo;
  eo.runTime = std::chrono::milliseconds{300};
  start(eo, "manager", kConfig);

  // What a healthy leader reads at once.
  auto s = scrape();
  EXPECT_EQ(s.value("multikueue_adapter_config_last_reload_successful"), 1) << "1 once the start configuration loaded";
  EXPECT_EQ(s.sum("multikueue_adapter_config_reloads_total").value_or(0), 0) << "the start is not a reload";
  EXPECT_EQ(s.value("multikueue_adapter_build_info"), 1);
  EXPECT_EQ(s.sum("multikueue_adapter_build_info", {{"version", MKA_VERSION}}), 1) << s.text();
  EXPECT_EQ(s.value("leader_election_master_status", {{"name", "multikueue-adapter"}}), 1);
  EXPECT_EQ(s.value("multikueue_adapter_certificate_reloads_total", {{"result", "success"}}), 1);
  EXPECT_GT(s.value("process_cpu_seconds_total"), 0);
  EXPECT_GT(s.value("process_resident_memory_bytes"), 0);
  EXPECT_GT(s.value("process_virtual_memory_bytes"), 0);
  EXPECT_GT(s.value("process_open_fds"), 0);
  EXPECT_GT(s.value("process_max_fds"), 0);
  EXPECT_GT(s.value("process_start_time_seconds"), 1.7e9);
  EXPECT_TRUE(eventually([&] {
    s = scrape();
    return s.value("multikueue_adapter_cluster_connected", {{"cluster", "worker1"}}) == 1 &&
           s.value("multikueue_adapter_cluster_connected", {{"cluster", "worker2"}}) == 1;
  })) << s.text();

  // A job from /mutate to Finished.
  const auto before = scrape();
  const auto job = submit("jobs/pipelinerun-hello.yaml", "scraped");
  const auto workload =
      integration::workloadName({"tekton.dev", "v1", "PipelineRun"}, "scraped", job.at("metadata").value("uid", ""));
  const std::map<std::string, std::string> mutated = {
      {"webhook", "mutate"}, {"kind", "PipelineRun"}, {"operation", "CREATE"}, {"result", "patched"}};
  ASSERT_TRUE(eventually([&] {
    try {
      return api::isFinished(env_->client("manager").get(api::kWorkloadGvk, "default", workload));
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::NotFound) throw;
      return false;  // not made yet
    }
  })) << "the job never finished";
  s = scrape();
  EXPECT_EQ(s.value("multikueue_adapter_webhook_requests_total", mutated) -
                before.sum("multikueue_adapter_webhook_requests_total", mutated).value_or(0),
            1);
  EXPECT_EQ(s.value("multikueue_adapter_webhook_request_duration_seconds_count", mutated) -
                before.sum("multikueue_adapter_webhook_request_duration_seconds_count", mutated).value_or(0),
            1);
  EXPECT_EQ(s.value("multikueue_adapter_integration_workloads_created_total", {{"kind", kFramework}}), 1);
  // The dispatch loop copies the worker's Finished condition and the integration finishes the
  // Workload from the job's copied status: whichever writes first, the other finds it done.
  EXPECT_LE(s.sum("multikueue_adapter_integration_workloads_finished_total", {{"kind", kFramework}}).value_or(0), 1);
  EXPECT_GE(s.value("multikueue_workloads_dispatched_total", {{"replica_role", "leader"}}), 1) << s.text();
  EXPECT_EQ(s.value("multikueue_workloads_admitted_total", {{"replica_role", "leader"}}), 1) << s.text();
  EXPECT_EQ(s.sum("multikueue_workloads_admitted_total", {{"replica_role", "standalone"}}), std::nullopt);
  // On a manager the job runs on a worker: the manager's integration neither resumes nor stops it.
  EXPECT_EQ(s.sum("multikueue_adapter_integration_jobs_resumed_total", {{"kind", kFramework}}).value_or(0), 0);
  EXPECT_GT(s.value("controller_runtime_reconcile_total", {{"result", "success"}}), 0) << s.text();
  EXPECT_GT(s.value("controller_runtime_reconcile_time_seconds_count"), 0);
  EXPECT_TRUE(s.sum("workqueue_depth").has_value()) << s.text();

  // A worker lost and found again.
  env_->cluster("worker2").setUnreachable(true);
  EXPECT_TRUE(eventually([&] {
    return scrape().value("multikueue_adapter_cluster_connected", {{"cluster", "worker2"}}) == 0;
  })) << scrape().text();
  env_->cluster("worker2").setUnreachable(false);
  EXPECT_TRUE(eventually(
      [&] {
        return scrape().value("multikueue_adapter_cluster_connected", {{"cluster", "worker2"}}) == 1;
      },
      std::chrono::seconds{60}))
      << scrape().text();

  // Once the job finished, no running Workload waits in a state of the check.
  EXPECT_TRUE(eventually([&] {
    return !scrape().sum("multikueue_adapter_admission_check_state_oldest_timestamp_seconds").has_value();
  })) << scrape().text();
  // The serving certificate's expiry, from its first load on (writeServingFiles: 24 h).
  EXPECT_GT(s.value("multikueue_adapter_webhook_certificate_expiry_timestamp_seconds"), 1.7e9) << s.text();

  // A worker removed: its series goes rather than reading as disconnected for ever.
  env_->client("manager").remove(api::kMultiKueueClusterGvk, "", "worker2");
  EXPECT_TRUE(eventually([&] {
    return !scrape().sum("multikueue_adapter_cluster_connected", {{"cluster", "worker2"}}).has_value();
  })) << scrape().text();
  EXPECT_EQ(scrape().value("multikueue_adapter_cluster_connected", {{"cluster", "worker1"}}), 1);

  // Hot reloads: a bad file is refused (the alert fires), the good one back clears it.
  std::ofstream(configFile_) << "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                                "dispatch: {enabled: maybe}\n";
  EXPECT_TRUE(eventually([&] {
    s = scrape();
    return s.value("multikueue_adapter_config_reloads_total", {{"result", "failure"}}) == 1 &&
           s.value("multikueue_adapter_config_last_reload_successful") == 0;
  })) << s.text();
  std::ofstream(configFile_) << kConfig;
  EXPECT_TRUE(eventually([&] {
    s = scrape();
    return s.value("multikueue_adapter_config_reloads_total", {{"result", "success"}}) == 1 &&
           s.value("multikueue_adapter_config_last_reload_successful") == 1;
  })) << s.text();
}

}  // namespace
}  // namespace mka::e2e

namespace mka::e2e {
namespace {

// On a single cluster the adapter's integration runs the job itself: it resumes an admitted job,
// stops an evicted one and finishes its Workload. The framework controllers run on a fake clock,
// so that a job runs until the test lets it end.
TEST_F(MetricsScrape, TheIntegrationSeriesMoveOnASingleCluster) {
  demo::Environment::Options eo;
  eo.managers = {};
  eo.workers = {"cluster"};
  eo.workerSamplesDirectory = std::string(MKA_SOURCE_DIR) + "/manifests/samples/single-cluster/cluster";
  eo.workerIntegrations = false;  // the adapter under test is the cluster's integration
  eo.clock = &clock_;
  eo.runTime = std::chrono::minutes{1};
  std::ifstream in(std::string(MKA_SOURCE_DIR) + "/manifests/samples/single-cluster/adapter-config.yaml");
  std::stringstream config;
  config << in.rdbuf();
  start(eo, "cluster", config.str());
  const std::map<std::string, std::string> workflow = {{"kind", "Workflow.v1alpha1.argoproj.io"}};

  submit("single-cluster/jobs/workflow-etl.yaml", "evicted");
  Scrape s = scrape();
  ASSERT_TRUE(eventually([&] {
    s = scrape();
    return s.value("multikueue_adapter_integration_jobs_resumed_total", workflow) == 1;
  })) << s.text();
  EXPECT_EQ(s.value("multikueue_adapter_integration_workloads_created_total", workflow), 1);
  EXPECT_EQ(s.sum("multikueue_adapter_integration_jobs_stopped_total", workflow).value_or(0), 0);
  EXPECT_EQ(s.sum("multikueue_workloads_dispatched_total").value_or(0), 0) << "no dispatch on a single cluster";

  // Deactivated as a user would: Kueue evicts it, the integration stops the job.
  const auto job = env_->client("cluster").get({"argoproj.io", "v1alpha1", "Workflow"}, "default", "evicted");
  const auto workload = integration::workloadName({"argoproj.io", "v1alpha1", "Workflow"}, "evicted",
                                                  job.at("metadata").value("uid", ""));
  env_->client("cluster").patch(api::kWorkloadGvk, "default", workload, kube::PatchType::Merge,
                                {{"spec", {{"active", false}}}});
  EXPECT_TRUE(eventually([&] {
    s = scrape();
    return s.value("multikueue_adapter_integration_jobs_stopped_total", workflow) == 1;
  })) << s.text();

  submit("single-cluster/jobs/workflow-etl.yaml", "finished");
  ASSERT_TRUE(
      eventually([&] { return scrape().value("multikueue_adapter_integration_jobs_resumed_total", workflow) == 2; }));
  clock_.advance(std::chrono::minutes{2});  // the Argo stand-in's run ends
  EXPECT_TRUE(eventually([&] {
    s = scrape();
    return s.value("multikueue_adapter_integration_workloads_finished_total",
                   {{"kind", "Workflow.v1alpha1.argoproj.io"}, {"result", "Succeeded"}}) == 1;
  })) << s.text();
  EXPECT_EQ(s.value("multikueue_adapter_integration_workloads_created_total", workflow), 2);
}

}  // namespace
}  // namespace mka::e2e
