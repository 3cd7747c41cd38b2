// The Sandbox: several clusters, each with its own port, CA and token, kubeconfigs written for
// them, CRDs seeded from files, and the errors a caller can make.
#include "mka/sandbox/sandbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <set>

#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "sandbox_http.h"
#include "support/temp_dir.h"
#include "support/tls.h"
#include "support/yaml_file.h"

namespace mka::sandbox {
namespace {

using mka::test::readYamlFile;
using nlohmann::json;
using ::testing::HasSubstr;

ClusterOptions named(const std::string& name, std::vector<std::filesystem::path> crdFiles = {}, int port = 0) {
  ClusterOptions options;
  options.name = name;
  options.crdFiles = std::move(crdFiles);
  options.port = port;
  return options;
}

std::string decodeBase64(const std::string& text) {
  std::string out(text.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return {};
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '\0') out.pop_back();  // padding
  return out;
}

TEST(SandboxTest, ClustersHaveTheirOwnPortCaAndToken) {
  Sandbox sandbox;
  for (const char* name : {"manager", "worker1", "worker2"}) sandbox.addCluster(named(name));
  EXPECT_EQ(sandbox.clusterNames(), (std::vector<std::string>{"manager", "worker1", "worker2"}));
  std::set<int> ports;
  std::set<std::string> cas, tokens;
  for (const auto& name : sandbox.clusterNames()) {
    Cluster& c = sandbox.cluster(name);
    ports.insert(c.port());
    cas.insert(c.caPem());
    tokens.insert(c.token());
    EXPECT_EQ(c.server(), "https://127.0.0.1:" + std::to_string(c.port()));
    EXPECT_GE(c.token().size(), 32u);
    auto res = test::clientFor(c)->Get("/api/v1/namespaces/default");
    ASSERT_TRUE(res) << name;
    EXPECT_EQ(res->status, 200) << name;
  }
  EXPECT_EQ(ports.size(), 3u);
  EXPECT_EQ(cas.size(), 3u);
  EXPECT_EQ(tokens.size(), 3u);
}

TEST(SandboxTest, ClustersKeepTheirOwnObjects) {
  Sandbox sandbox;
  Cluster& a = sandbox.addCluster(named("a"));
  Cluster& b = sandbox.addCluster(named("b"));
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "only-in-a"}}}};
  ASSERT_EQ(
      test::statusOf(test::clientFor(a)->Post("/api/v1/namespaces/default/configmaps", cm.dump(), "application/json")),
      201);
  EXPECT_EQ(test::statusOf(test::clientFor(b)->Get("/api/v1/namespaces/default/configmaps/only-in-a")), 404);
}

// The end-to-end, chaos and demo runs fail on any write a cluster refused as invalid: the
// record they read holds the request and kube's message, and only 422s.
TEST(SandboxTest, WritesRefusedAsInvalidAreRecorded) {
  Sandbox sandbox;
  Cluster& c = sandbox.addCluster(named("a"));
  auto client = test::clientFor(c);
  json bad = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "Not_A_Label"}}}};
  ASSERT_EQ(test::statusOf(client->Post("/api/v1/namespaces", bad.dump(), "application/json")), 422);
  ASSERT_EQ(test::statusOf(client->Get("/api/v1/namespaces/missing")), 404);
  const auto refused = c.invalidWrites();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], ::testing::StartsWith("POST /api/v1/namespaces: Namespace \"Not_A_Label\" is invalid: "
                                                "metadata.name: Invalid value: \"Not_A_Label\""));
}

// Two clients sharing a token are told apart by their user agent; a create names the object it
// made (as the audit log's objectRef does), though RBAC sees no name for it.
TEST(SandboxTest, RecordedRequestsNameTheClientAndTheObjectCreated) {
  Sandbox sandbox;
  Cluster& c = sandbox.addCluster(named("a"));
  auto client = test::clientFor(c);
  c.recordRequests(true);
  const httplib::Headers replicaA = {{"User-Agent", "multikueue-adapter/v1 (linux/amd64) replica-a_x7k2"}};
  for (const char* name : {"first", "second"}) {
    json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
    ASSERT_EQ(
        test::statusOf(client->Post("/api/v1/namespaces/default/configmaps", replicaA, cm.dump(), "application/json")),
        201);
  }
  ASSERT_EQ(test::statusOf(client->Get("/api/v1/namespaces/default/configmaps/first", replicaA)), 200);
  ASSERT_EQ(
      test::statusOf(client->Post("/api/v1/namespaces/default/configmaps", replicaA, "not json", "application/json")),
      400);
  const RecordedRequest create{"", replicaA.begin()->second, "create", "", "configmaps", "", "default", "", ""};
  auto with = [](RecordedRequest r, std::string name, std::string createdName) {
    r.name = std::move(name);
    r.createdName = std::move(createdName);
    return r;
  };
  auto get = with(create, "first", "");
  get.verb = "get";
  EXPECT_THAT(c.recordedRequests(),
              ::testing::ElementsAre(create, with(create, "", "first"), with(create, "", "second"), get));
}

TEST(SandboxTest, RejectsDuplicateAndMalformedNames) {
  Sandbox sandbox;
  sandbox.addCluster(named("manager"));
  try {
    sandbox.addCluster(named("manager"));
    FAIL() << "a second cluster with the same name was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("exists already"));
  }
  EXPECT_THROW(sandbox.addCluster(named("Worker_1")), Error);
  EXPECT_THROW(sandbox.addCluster(named("")), Error);
  try {
    sandbox.cluster("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("clusters: manager"));
  }
}

TEST(SandboxTest, ABadCrdFileIsNamedInTheError) {
  mka::test::TempDir dir;
  const auto bad = dir.write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n");
  Sandbox sandbox;
  try {
    sandbox.addCluster(named("manager", {bad}));
    FAIL() << "a ConfigMap was accepted as a CRD";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(bad.string()));
  }
}

TEST(SandboxTest, ACrdInTwoFilesIsCreatedOnce) {
  const std::string crds = std::string(MKA_FIXTURES_DIR) + "/crds/";
  Sandbox sandbox;
  Cluster& c = sandbox.addCluster(
      named("manager", {crds + "tekton.dev_pipelineruns.yaml", crds + "tekton.dev_pipelineruns.yaml"}));
  auto res = test::clientFor(c)->Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
  ASSERT_TRUE(res);
  EXPECT_EQ(test::bodyOf(res)["items"].size(), 1u);
}

TEST(SandboxTest, PortCanBeChosen) {
  Sandbox sandbox;
  Cluster& first = sandbox.addCluster(named("first"));
  const int taken = first.port();
  // Binding a port that is in use fails loudly, naming the address.
  try {
    sandbox.addCluster(named("second", {}, taken));
    FAIL() << "two clusters bound the same port";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(taken)));
  }
}

TEST(SandboxTest, KubeconfigsNameTheClusterAndCarryCaAndToken) {
  mka::test::TempDir dir;
  Sandbox sandbox;
  sandbox.addCluster(named("manager"));
  sandbox.addCluster(named("worker1"));
  const auto files = sandbox.writeKubeconfigs(dir / "kube");
  ASSERT_EQ(files.size(), 2u);
  for (const auto& [name, file] : files) {
    EXPECT_EQ(file, dir / "kube" / (name + ".kubeconfig"));
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;

    const Cluster& cluster = sandbox.cluster(name);
    auto config = readYamlFile(file);
    EXPECT_EQ(config["apiVersion"].get<std::string>(), "v1");
    EXPECT_EQ(config["kind"].get<std::string>(), "Config");
    EXPECT_EQ(config["current-context"].get<std::string>(), name);
    ASSERT_EQ(config["clusters"].size(), 1u);
    EXPECT_EQ(config["clusters"][0]["name"].get<std::string>(), name);
    EXPECT_EQ(config["clusters"][0]["cluster"]["server"].get<std::string>(), cluster.server());
    EXPECT_EQ(decodeBase64(config["clusters"][0]["cluster"]["certificate-authority-data"].get<std::string>()),
              cluster.caPem());
    EXPECT_EQ(config["contexts"][0]["name"].get<std::string>(), name);
    EXPECT_EQ(config["contexts"][0]["context"]["cluster"].get<std::string>(), name);
    EXPECT_EQ(config["contexts"][0]["context"]["user"].get<std::string>(), name);
    EXPECT_EQ(config["users"][0]["name"].get<std::string>(), name);
    EXPECT_EQ(config["users"][0]["user"]["token"].get<std::string>(), cluster.token());
  }
}

TEST(SandboxTest, KubeconfigsReplaceOldFilesAndKeepThemPrivate) {
  mka::test::TempDir dir;
  const auto old = dir.write("manager.kubeconfig", "stale");
  ::chmod(old.c_str(), 0644);
  Sandbox sandbox;
  sandbox.addCluster(named("manager"));
  sandbox.writeKubeconfigs(dir.path());
  struct stat st {};
  ASSERT_EQ(::stat(old.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(mka::test::readFile(old), HasSubstr("current-context: manager"));
}

TEST(SandboxTest, KubeconfigDirectoryErrorsNameThePath) {
  mka::test::TempDir dir;
  const auto file = dir.write("not-a-dir", "x");
  Sandbox sandbox;
  sandbox.addCluster(named("manager"));
  try {
    sandbox.writeKubeconfigs(file / "sub");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(file.string()));
  }
}

TEST(SandboxTest, WritesGoThroughTheClustersWebhooksReachedByService) {
  // A webhook server that denies every ConfigMap, exposed as the Service webhooks/denier:443.
  mka::test::TempDir dir;
  mka::test::TestCa webhookCa;
  net::IssueOptions issue;
  issue.dnsNames = {"denier.webhooks.svc"};  // what kube-apiserver verifies for a service webhook
  const auto files = mka::test::writeServingFiles(dir.path(), webhookCa, webhookCa.issue(issue));
  auto certificates = std::make_shared<net::CertificateReloader>(files.cert, files.key);
  ASSERT_EQ(certificates->reload(), "");
  net::ServerOptions serverOptions;
  serverOptions.name = "denier";
  serverOptions.host = "127.0.0.1";
  net::HttpServer webhook(serverOptions, certificates);
  webhook.route("POST", "/deny", [](const httplib::Request& req, httplib::Response& res) {
    const json review = json::parse(req.body);
    json response = {{"uid", review["request"]["uid"]},
                     {"allowed", false},
                     {"status", {{"code", 403}, {"message", "no ConfigMaps here"}}}};
    res.set_content(
        json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}}.dump(),
        "application/json; charset=utf-8");
  });
  const int port = webhook.start();

  Sandbox sandbox;
  sandbox.services().expose("webhooks", "denier", 443, "127.0.0.1", port);
  Cluster& cluster = sandbox.addCluster(named("manager"));
  auto client = test::clientFor(cluster);
  json configuration = {
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingWebhookConfiguration"},
      {"metadata", {{"name", "denier"}}},
      {"webhooks", json::array({{{"name", "deny.example.com"},
                                 {"admissionReviewVersions", {"v1"}},
                                 {"sideEffects", "None"},
                                 {"clientConfig",
                                  {{"service", {{"namespace", "webhooks"}, {"name", "denier"}, {"path", "/deny"}}},
                                   {"caBundle", base64Encode(webhookCa.certPem())}}},
                                 {"rules", json::array({{{"operations", {"CREATE"}},
                                                         {"apiGroups", {""}},
                                                         {"apiVersions", {"v1"}},
                                                         {"resources", {"configmaps"}}}})}}})}};
  ASSERT_EQ(test::statusOf(client->Post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                                        configuration.dump(), "application/json")),
            201);
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "x"}}}};
  auto res = client->Post("/api/v1/namespaces/default/configmaps", cm.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403) << res->body;
  EXPECT_THAT(test::bodyOf(res)["message"].get<std::string>(),
              HasSubstr("admission webhook \"deny.example.com\" denied the request: no ConfigMaps here"));
  webhook.stop();
}

TEST(SandboxTest, StopIsIdempotent) {
  Sandbox sandbox;
  sandbox.addCluster(named("manager"));
  sandbox.stop();
  sandbox.stop();
}

}  // namespace
}  // namespace mka::sandbox
