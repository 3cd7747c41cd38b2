// What an adapter outage blocks. The configurations `manifests` renders for manifests/base are
// registered on a sandbox cluster, which evaluates their matchConditions as kube-apiserver does;
// their Service resolves to a replica of the adapter's webhook server (the product's
// AdmissionHandler behind TLS) or, with every replica down, to a port nothing listens on. Under
// failurePolicy Fail a request that is sent then fails, naming the webhook: a running job's own
// writes (Argo's whole-object status writes, Tekton's metadata updates) are not sent and go
// through; a change of what /validate checks (the marker, the queue name) is sent, refused while
// the replicas are down and answered by /validate once one is up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "mka/api/kueue.h"
#include "mka/common/base64.h"
#include "mka/config/loader.h"
#include "mka/config/store.h"
#include "mka/deploy/manifests.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"
#include "mka/webhook/admission_handler.h"
#include "mka/webhook/queue_index.h"
#include "support/ports.h"
#include "support/table_test.h"
#include "support/temp_dir.h"
#include "support/tls.h"

namespace mka::e2e::webhook_outage {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const sandbox::ResourceRef kWorkflows{"argoproj.io", "v1alpha1", "workflows", "default", "", ""};
const sandbox::ResourceRef kPipelineRuns{"tekton.dev", "v1", "pipelineruns", "default", "", ""};
const std::string kArgoMarker = "workflows.argoproj.io/controller-instanceid";
const std::string kValidate = "validate.multikueue-adapter.dev";

std::string readText(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A running job as the manager holds it: queued, admitted and resumed, marked for MultiKueue.
json runningWorkflow(const std::string& name) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Workflow"},
          {"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"labels", {{api::kQueueNameLabel, "user-queue"}, {kArgoMarker, "multikueue"}}}}},
          {"spec", {{"entrypoint", "main"}, {"templates", json::array({{{"name", "main"}}})}}},
          {"status", {{"phase", "Running"}}}};
}
json runningPipelineRun(const std::string& name) {
  return {{"apiVersion", "tekton.dev/v1"},
          {"kind", "PipelineRun"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", {{api::kQueueNameLabel, "user-queue"}}}}},
          {"spec", {{"pipelineRef", {{"name", "build"}}}, {"managedBy", std::string(api::kMultiKueueControllerName)}}}};
}

// One replica of the adapter's webhook server: TLS with a certificate for the webhook Service's
// name, every POST answered by the AdmissionHandler with the base configuration.
// Threads: started and stopped by the test thread; the server's threads call the handler.
class Replica {
 public:
  Replica(const test::TestCa& ca, const test::TempDir& dir, const config::Configuration& cfg)
      : store_(cfg), handler_(store_, queues_, nullptr) {
    const std::string host = std::string(deploy::kWebhookService) + "." + std::string(deploy::kNamespace) + ".svc";
    const auto files = test::writeServingFiles(dir / "replica", ca, ca.issue({.commonName = host, .dnsNames = {host}}));
    certificates_ = std::make_shared<net::CertificateReloader>(files.cert, files.key);
    certificates_->start();
    net::ServerOptions options;
    options.name = "webhook-outage-replica";
    options.host = "127.0.0.1";
    server_ = std::make_unique<net::HttpServer>(options, certificates_);
    server_->route("POST", "/.*", [this](const httplib::Request& req, httplib::Response& res) {
      const auto out = handler_.handle({req.method, req.path, req.get_header_value("Content-Type"), req.body});
      res.status = out.status;
      res.set_content(out.body, out.contentType);
    });
    port_ = server_->start();
  }
  ~Replica() {
    server_->stop();
    certificates_->stop();
  }
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;
  int port() const { return port_; }

 private:
  config::ConfigStore store_;
  webhook::InMemoryQueueIndex queues_;
  webhook::AdmissionHandler handler_;
  std::shared_ptr<net::CertificateReloader> certificates_;
  std::unique_ptr<net::HttpServer> server_;
  int port_ = 0;
};

class WebhookOutage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string text = readText(std::string(MKA_SOURCE_DIR) + "/manifests/base/config.yaml");
    auto loaded = config::parseConfiguration(text);
    if (!loaded.ok()) throw std::runtime_error("manifests/base/config.yaml does not load");
    config_ = std::make_unique<config::Configuration>(*loaded.config);
    ca_ = std::make_unique<test::TestCa>("webhook-outage-ca");
    sandbox_ = std::make_unique<sandbox::Sandbox>();
    sandbox::ClusterOptions options;
    options.name = "manager";
    options.crdFiles = {std::string(MKA_FIXTURES_DIR) + "/crds/argoproj.io_workflows.minimal.yaml",
                        std::string(MKA_FIXTURES_DIR) + "/crds/tekton.dev_pipelineruns.yaml"};
    cluster_ = &sandbox_->addCluster(options);
    for (const auto& manifest : deploy::renderManifests(*config_, text)) {
      const std::string kind = manifest.object.value("kind", "");
      if (kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration") continue;
      json configuration = json::parse(manifest.object.dump());
      for (auto& hook : configuration["webhooks"]) hook["clientConfig"]["caBundle"] = base64Encode(ca_->certPem());
      cluster_->api().create(
          {"admissionregistration.k8s.io", "v1",
           kind == "MutatingWebhookConfiguration" ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations",
           "", "", ""},
          configuration);
    }
    ready_ = true;
  }
  static void TearDownTestSuite() {
    ready_ = false;
    cluster_ = nullptr;
    sandbox_.reset();
    config_.reset();
    ca_.reset();
  }
  void SetUp() override {
    ASSERT_TRUE(ready_) << "the cluster was not set up (SetUpTestSuite failed)";
    down();
  }
  void TearDown() override { replica_.reset(); }

  // Every replica down: the Service's address refuses connections.
  void down() {
    replica_.reset();
    sandbox_->services().expose(std::string(deploy::kNamespace), std::string(deploy::kWebhookService), 443, "127.0.0.1",
                                test::freeLoopbackPort());
  }
  void up() {
    replica_ = std::make_unique<Replica>(*ca_, dir_, *config_);
    sandbox_->services().expose(std::string(deploy::kNamespace), std::string(deploy::kWebhookService), 443, "127.0.0.1",
                                replica_->port());
  }

  static sandbox::ClusterApi& api() { return cluster_->api(); }
  static sandbox::ResourceRef named(sandbox::ResourceRef ref, const std::string& name) {
    ref.name = name;
    return ref;
  }
  // Creates `object` while a replica is up (the CREATE is sent, as every CREATE is, and /mutate
  // suspends an integrated kind), then resumes it as the integration does once it is admitted:
  // with every replica down, which the resume does not need.
  json created(const sandbox::ResourceRef& ref, const json& object) {
    up();
    api().create(ref, object);
    down();
    const auto at = named(ref, object["metadata"]["name"]);
    json stored = api().get(at);
    if (stored.contains("spec") && stored["spec"].value("suspend", false)) {
      stored["spec"]["suspend"] = false;
      stored = *api().update(at, stored);
    }
    return stored;
  }

  // "" when the write went through, else the error's message.
  static std::string refusal(const std::function<void()>& write) {
    try {
      write();
      return "";
    } catch (const sandbox::ApiError& e) {
      return e.what();
    }
  }

  test::TempDir dir_;
  std::unique_ptr<Replica> replica_;
  inline static std::unique_ptr<test::TestCa> ca_;
  inline static std::unique_ptr<config::Configuration> config_;
  inline static std::unique_ptr<sandbox::Sandbox> sandbox_;
  inline static sandbox::Cluster* cluster_ = nullptr;
  inline static bool ready_ = false;
};

// A running job's own writes change nothing /validate checks: with every replica down they go
// through, the webhook never called.
TEST_F(WebhookOutage, RunningJobsWritesGoThroughWithEveryReplicaDown) {
  json workflow = created(kWorkflows, runningWorkflow("argo-status"));
  json pipelineRun = created(kPipelineRuns, runningPipelineRun("tekton-metadata"));

  // Argo's controller writes the status through the object itself (Workflows have no status
  // subresource), with its own labels and annotations.
  workflow["status"] = {{"phase", "Running"}, {"nodes", {{"argo-status", {{"phase", "Running"}, {"type", "Pod"}}}}}};
  workflow["metadata"]["labels"]["workflows.argoproj.io/phase"] = "Running";
  workflow["metadata"]["annotations"] = {{"workflows.argoproj.io/pod-name-format", "v2"}};
  EXPECT_EQ(refusal([&] { api().update(named(kWorkflows, "argo-status"), workflow); }), "");

  // Tekton's controller updates a PipelineRun's metadata (its status goes through /status).
  pipelineRun["metadata"]["labels"]["tekton.dev/pipeline"] = "build";
  pipelineRun["metadata"]["annotations"] = {{"chains.tekton.dev/signed", "true"}};
  pipelineRun["metadata"]["finalizers"] = {"chains.tekton.dev/pipelinerun"};
  EXPECT_EQ(refusal([&] { api().update(named(kPipelineRuns, "tekton-metadata"), pipelineRun); }), "");
}

struct CheckedChangeCase {
  std::string name;
  std::string job;  // the job's name, the case's own
  sandbox::ResourceRef resource;
  std::function<json(const std::string& name)> running;
  std::function<void(json&)> change;
  std::string answer;  // what /validate answers, in its denial
};

std::vector<CheckedChangeCase> checkedChangeCases() {
  return {
      {"a Workflow's marker label changed", "marker-label", kWorkflows, runningWorkflow,
       [](json& o) { o["metadata"]["labels"][kArgoMarker] = "other"; },
       "metadata.labels[" + kArgoMarker + "]: field is immutable"},
      {"a PipelineRun's spec.managedBy removed", "marker-field", kPipelineRuns, runningPipelineRun,
       [](json& o) { o["spec"].erase("managedBy"); }, "spec.managedBy: field is immutable"},
      {"a running Workflow's queue name changed", "queue-name", kWorkflows, runningWorkflow,
       [](json& o) { o["metadata"]["labels"][std::string(api::kQueueNameLabel)] = "other-queue"; },
       "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other-queue\": field is immutable while the job "
       "is not suspended"},
  };
}

// A change of what /validate checks is still sent: refused while every replica is down (the
// webhook named), answered by /validate once one is up.
MKA_TABLE_TEST_F(WebhookOutage, CheckedChangesAreRefusedWhileDownAndAnsweredWhileUp, CheckedChangeCase,
                 checkedChangeCases()) {
  const auto& c = testCase();
  const std::string& name = c.job;
  json job = created(c.resource, c.running(name));
  c.change(job);

  const std::string whileDown = refusal([&] { api().update(named(c.resource, name), job); });
  EXPECT_THAT(whileDown, HasSubstr("failed calling webhook \"" + kValidate + "\""));
  EXPECT_THAT(whileDown, HasSubstr("connect: connection refused"));

  up();
  const std::string whileUp = refusal([&] { api().update(named(c.resource, name), job); });
  EXPECT_THAT(whileUp, HasSubstr("admission webhook \"" + kValidate + "\" denied the request: "));
  EXPECT_THAT(whileUp, HasSubstr(c.answer));
}

}  // namespace
}  // namespace mka::e2e::webhook_outage
