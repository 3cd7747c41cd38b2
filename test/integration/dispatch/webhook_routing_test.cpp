// Which jobs kube-apiserver sends to the webhooks `manifests` renders. The rendered
// configurations are registered on a sandbox cluster (which matches rules, namespaceSelector and
// objectSelector, and evaluates matchConditions, as kube-apiserver does) with their Service left
// unreachable: under failurePolicy Fail every request that is sent fails, naming the webhook, and
// every request that is not sent goes through. So an adapter outage refuses only jobs meant for
// Kueue, and of their updates only those that change what /validate checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <memory>
#include <sstream>

#include "mka/api/kueue.h"
#include "mka/config/loader.h"
#include "mka/deploy/manifests.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"
#include "support/table_test.h"

namespace mka::e2e {
namespace {

using nlohmann::json;

const sandbox::ResourceRef kWorkflows{"argoproj.io", "v1alpha1", "workflows", "", "", ""};
const sandbox::ResourceRef kNamespaces{"", "v1", "namespaces", "", "", ""};
constexpr const char* kOptedIn = "team-default-queue";

json workflow(const std::string& ns, const std::string& name, const json& labels) {
  json meta = {{"name", name}, {"namespace", ns}};
  if (!labels.empty()) meta["labels"] = labels;
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Workflow"},
          {"metadata", meta},
          {"spec", {{"entrypoint", "main"}, {"templates", json::array({{{"name", "main"}}})}}}};
}

// One cluster per table, set up once: a case creates a Workflow of its own name, or updates one
// of the two set up here in a way no other case depends on.
class WebhookRouting : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sandbox_ = std::make_unique<sandbox::Sandbox>();
    sandbox::ClusterOptions options;
    options.name = "manager";
    options.crdFiles = {std::string(MKA_FIXTURES_DIR) + "/crds/argoproj.io_workflows.minimal.yaml"};
    cluster_ = &sandbox_->addCluster(options);
    api().create(kNamespaces,
                 {{"metadata", {{"name", kOptedIn}, {"labels", {{deploy::kDefaultQueueNamespaceLabel, "true"}}}}}});
    // Jobs that exist before the webhooks: their updates are what the UPDATE cases look at.
    api().create(ref("default"), workflow("default", "queued", {{api::kQueueNameLabel, "user-queue"}}));
    api().create(ref("default"), workflow("default", "plain", json::object()));

    std::ifstream in(std::string(MKA_SOURCE_DIR) + "/manifests/base/config.yaml");
    std::stringstream text;
    text << in.rdbuf();
    auto loaded = config::parseConfiguration(text.str());
    if (!loaded.ok()) throw std::runtime_error("manifests/base/config.yaml does not load");
    for (const auto& manifest : deploy::renderManifests(*loaded.config, text.str())) {
      const std::string kind = manifest.object.value("kind", "");
      if (kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration") continue;
      api().create(
          {"admissionregistration.k8s.io", "v1",
           kind == "MutatingWebhookConfiguration" ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations",
           "", "", ""},
          json::parse(manifest.object.dump()));
    }
    ready_ = true;
  }
  static void TearDownTestSuite() {
    ready_ = false;
    cluster_ = nullptr;
    sandbox_.reset();
  }
  void SetUp() override { ASSERT_TRUE(ready_) << "the cluster was not set up (SetUpTestSuite failed)"; }

  static sandbox::ClusterApi& api() { return cluster_->api(); }
  static sandbox::ResourceRef ref(const std::string& ns, const std::string& name = "") {
    auto r = kWorkflows;
    r.namespace_ = ns;
    r.name = name;
    return r;
  }
  // "" when the write went through, else the name of the webhook whose call failed.
  static std::string failedWebhook(const std::function<void()>& write) {
    try {
      write();
      return "";
    } catch (const sandbox::ApiError& e) {
      const std::string message = e.what();
      const std::string prefix = "failed calling webhook \"";
      const auto at = message.find(prefix);
      if (at == std::string::npos) return "other error: " + message;
      const auto start = at + prefix.size();
      return message.substr(start, message.find('"', start) - start);
    }
  }

  inline static std::unique_ptr<sandbox::Sandbox> sandbox_;
  inline static sandbox::Cluster* cluster_ = nullptr;
  inline static bool ready_ = false;
};

// A Workflow name of the case's own, from its name.
std::string workflowNameOf(const std::string& caseName) {
  std::string name = "created-";
  for (const char ch : test::caseName(caseName))
    name += ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

struct RoutingCreateCase {
  std::string name;
  std::string namespace_;
  json labels;
  std::string wantWebhook;  // "" = never sent
};
std::vector<RoutingCreateCase> routingCreateCases() {
  return {
      {"a Workflow without Kueue labels", "default", json::object(), ""},
      {"a queued Workflow", "default", {{api::kQueueNameLabel, "user-queue"}}, "mutate.multikueue-adapter.dev"},
      {"a Workflow naming only its prebuilt Workload",
       "default",
       {{api::kPrebuiltWorkloadNameKey, "wl"}},
       "mutate-prebuilt.multikueue-adapter.dev"},
      {"a Workflow without Kueue labels where the namespace opts in to its default LocalQueue", kOptedIn,
       json::object(), "mutate-default-queue.multikueue-adapter.dev"},
      {"a Workflow with other labels", "default", {{"app", "etl"}}, ""},
  };
}

MKA_TABLE_TEST_F(WebhookRouting, OnlyJobsMeantForKueueAreSentToTheWebhooks, RoutingCreateCase, routingCreateCases()) {
  const auto& c = testCase();
  const std::string name = workflowNameOf(c.name);
  EXPECT_EQ(failedWebhook([&] { api().create(ref(c.namespace_), workflow(c.namespace_, name, c.labels)); }),
            c.wantWebhook);
}

struct RoutingUpdateCase {
  std::string name;
  std::string job;
  std::function<void(json&)> change;
  std::string wantWebhook;
};
std::vector<RoutingUpdateCase> routingUpdateCases() {
  return {
      {"an unlabelled Workflow's status (Argo writes it through the object)", "plain",
       [](json& wf) {
         wf["status"] = {{"phase", "Running"}};
       },
       ""},
      // The validating webhooks' matchConditions send an UPDATE only when it changes what
      // /validate checks (webhook_outage_test.cpp has the rest).
      {"a queued Workflow's status", "queued",
       [](json& wf) {
         wf["status"] = {{"phase", "Running"}};
       },
       ""},
      {"a queued Workflow's queue-name label changed", "queued",
       [](json& wf) { wf["metadata"]["labels"][std::string(api::kQueueNameLabel)] = "other-queue"; },
       "validate.multikueue-adapter.dev"},
      {"the queue-name label added", "plain",
       [](json& wf) {
         wf["metadata"]["labels"] = {{api::kQueueNameLabel, "user-queue"}};
       },
       "validate.multikueue-adapter.dev"},
      {"the queue-name label removed", "queued",
       [](json& wf) { wf["metadata"]["labels"].erase(std::string(api::kQueueNameLabel)); },
       "validate.multikueue-adapter.dev"},
  };
}

MKA_TABLE_TEST_F(WebhookRouting, UpdatesAreSentWhenAKueueLabelIsCarriedAndChanged, RoutingUpdateCase,
                 routingUpdateCases()) {
  const auto& c = testCase();
  json job = api().get(ref("default", c.job));
  c.change(job);
  EXPECT_EQ(failedWebhook([&] { api().update(ref("default", c.job), job); }), c.wantWebhook);
}

}  // namespace
}  // namespace mka::e2e
