// The client against the sandbox: never against a mock of itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include <httplib.h>
#include <malloc.h>
#include <unistd.h>

#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/kube/informer_pool.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/leader_election.h"
#include "mka/net/pki.h"
#include "mka/sandbox/crd_loader.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"
#include "support/temp_dir.h"
#include "support/threads.h"
#include "support/thrown.h"
#include "support/tls.h"
#include "support/tls_record_proxy.h"

namespace mka::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const api::GroupVersionKind kConfigMap{"", "v1", "ConfigMap"};
const api::GroupVersionKind kWorkload{"kueue.x-k8s.io", "v1beta1", "Workload"};

class ClientTest : public ::testing::Test {
 public:  // the sandbox and its clients, for the fixture's helpers below the class too
  ClientTest()
      : cluster(sandbox.addCluster(
            {.name = "manager",
             .crdFiles = {std::filesystem::path(MKA_FIXTURES_DIR) / "crds/kueue.x-k8s.io_workloads.yaml"}})) {}

  RestConfig restConfig() { return restConfigFor(Kubeconfig::parse(cluster.kubeconfig(), "sandbox")); }
  std::unique_ptr<Client> newClient(ClientOptions options = fastOptions()) {
    return std::make_unique<Client>(std::make_shared<RestClient>(restConfig(), options));
  }
  static ClientOptions fastOptions() {
    ClientOptions o;
    o.qps = 0;  // no client-side throttling in tests that are not about it
    o.retryBackoff = std::chrono::milliseconds{10};
    return o;
  }
  static json configMap(const std::string& name, const json& labels = json::object()) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", labels}}},
            {"data", {{"k", name}}}};
  }
  template <typename F>
  static ApiError errorOf(F&& f) {
    return mka::test::thrownBy<ApiError>(std::forward<F>(f));
  }

  sandbox::Sandbox sandbox;
  sandbox::Cluster& cluster;
};

TEST_F(ClientTest, CrudWithTypedErrors) {
  auto client = newClient();
  auto created = client->create(configMap("a", {{"team", "x"}}));
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(client->get(kConfigMap, "default", "a")["data"]["k"], "a");
  EXPECT_EQ(errorOf([&] { client->create(configMap("a")); }).reason(), Reason::AlreadyExists);

  auto stale = created;
  created["data"]["k"] = "changed";
  auto updated = client->update(created);
  EXPECT_EQ(updated["data"]["k"], "changed");
  stale["data"]["k"] = "lost update";
  auto conflict = errorOf([&] { client->update(stale); });
  EXPECT_EQ(conflict.reason(), Reason::Conflict);
  EXPECT_EQ(conflict.code(), 409);
  EXPECT_TRUE(isConflict(conflict));

  auto merged = client->patch(kConfigMap, "default", "a", PatchType::Merge, {{"data", {{"m", "1"}}}});
  EXPECT_EQ(merged["data"]["m"], "1");
  auto jsonPatched = client->patch(kConfigMap, "default", "a", PatchType::Json,
                                   json::array({{{"op", "remove"}, {"path", "/data/m"}}}));
  EXPECT_FALSE(jsonPatched["data"].contains("m"));

  client->create(configMap("b", {{"team", "y"}}));
  auto selected = client->listAll(kConfigMap, "default", {.labelSelector = "team in (x)"});
  ASSERT_EQ(selected.size(), 1u);
  EXPECT_EQ(selected[0]["metadata"]["name"], "a");

  auto precondition = errorOf([&] { client->remove(kConfigMap, "default", "a", {.uid = std::string("wrong")}); });
  EXPECT_EQ(precondition.reason(), Reason::Conflict);
  client->remove(kConfigMap, "default", "a");
  EXPECT_TRUE(isNotFound(errorOf([&] { client->get(kConfigMap, "default", "a"); })));
  EXPECT_EQ(errorOf([&] { client->get({"example.com", "v1", "Nothing"}, "default", "x"); }).reason(), Reason::NotFound);
}

// httplib's own client sends a request's headers and body as two TLS records, and the server
// answered with two as well; each is one now (and the answer is read through a buffer).
TEST_F(ClientTest, ARequestAndItsAnswerEachLeaveAsOneTlsRecord) {
  auto config = restConfig();
  const auto colon = config.host.rfind(':');
  test::TlsRecordProxy proxy(std::stoi(config.host.substr(colon + 1)));
  config.host = config.host.substr(0, colon + 1) + std::to_string(proxy.port());
  Client client(std::make_shared<RestClient>(config, fastOptions()));
  client.create(configMap("first"));  // the handshake, discovery, and the server's session tickets

  const auto records = [&] { return std::pair{proxy.recordsToServer(), proxy.recordsToClient()}; };
  auto before = records();
  auto created = client.create(configMap("second"));  // headers and a body, on the kept-alive connection
  EXPECT_EQ(records().first - before.first, 1u);
  EXPECT_EQ(records().second - before.second, 1u);
  EXPECT_EQ(created["data"]["k"], "second");

  before = records();
  EXPECT_EQ(client.get(kConfigMap, "default", "second")["metadata"]["uid"], created["metadata"]["uid"]);
  EXPECT_EQ(records().first - before.first, 1u);
  EXPECT_EQ(records().second - before.second, 1u);

  before = records();
  EXPECT_TRUE(isNotFound(errorOf([&] { client.get(kConfigMap, "default", "absent"); })));
  EXPECT_EQ(records().first - before.first, 1u);
  EXPECT_EQ(records().second - before.second, 1u);
}

TEST_F(ClientTest, WritesAnswerTheObjectItsMetadataOrNothingAsAsked) {
  auto client = newClient();
  auto object = configMap("meta", {{"team", "x"}});
  object["metadata"]["annotations"] = {{"note", "kept"}};
  object["data"]["nested"] = "{\"a\": [1, 2]}";
  const WriteOptions metadata{.fieldManager = "tester", .answer = WriteOptions::Answer::Metadata};
  auto created = client->create(object, metadata);
  // The server was asked for the metadata only, and answered so.
  EXPECT_EQ(created["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(created["kind"], "PartialObjectMetadata");
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(created["metadata"]["labels"]["team"], "x");
  EXPECT_EQ(created["metadata"]["annotations"]["note"], "kept");
  EXPECT_FALSE(created["metadata"].contains("managedFields"));
  EXPECT_FALSE(created.contains("data"));
  // The object is whole on the server: a plain read returns all of it.
  auto full = client->get(kConfigMap, "default", "meta");
  EXPECT_TRUE(full["metadata"].contains("managedFields"));
  EXPECT_EQ(full["data"]["nested"], object["data"]["nested"]);

  full["data"]["k"] = "changed";
  auto updated = client->update(full, metadata);
  EXPECT_NE(updated["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
  EXPECT_EQ(updated.size(), 3u) << updated.dump();

  const WriteOptions none{.answer = WriteOptions::Answer::None};
  EXPECT_TRUE(client->patch(kConfigMap, "default", "meta", PatchType::Merge, {{"data", {{"m", "1"}}}}, none).is_null());
  EXPECT_EQ(client->get(kConfigMap, "default", "meta")["data"]["m"], "1");
  EXPECT_TRUE(client->create(configMap("other"), none).is_null());
  EXPECT_EQ(client->get(kConfigMap, "default", "other")["data"]["k"], "other");
  // Errors are errors whatever the answer asked for.
  EXPECT_EQ(errorOf([&] { client->create(configMap("other"), none); }).reason(), Reason::AlreadyExists);
  EXPECT_EQ(errorOf([&] { client->update(full, metadata); }).reason(), Reason::Conflict);
}

TEST_F(ClientTest, WatchEventsComeWithoutManagedFieldsWhenAsked) {
  auto client = newClient();
  const auto start = client->list(kConfigMap, "default").at("metadata").value("resourceVersion", "");
  client->create(configMap("a"));
  for (const bool without : {false, true}) {
    WatchOptions options;
    options.resourceVersion = start;
    options.timeoutSeconds = 10;
    options.withoutManagedFields = without;
    std::optional<WatchEvent> first;
    client->watch(kConfigMap, "default", options, [&](WatchEvent& event) {
      first = std::move(event);
      return false;  // one event is enough
    });
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->type, "ADDED");
    EXPECT_EQ(first->object.at("metadata").at("name"), "a");
    EXPECT_EQ(first->object.at("metadata").contains("managedFields"), !without) << first->object.dump();
  }
}

TEST_F(ClientTest, RetryOnConflictRereadsAndSucceeds) {
  auto client = newClient();
  auto other = newClient();
  client->create(configMap("counter"));
  int attempts = 0;
  auto result = retryOnConflict([&] {
    auto current = client->get(kConfigMap, "default", "counter");
    if (++attempts == 1) other->patch(kConfigMap, "default", "counter", PatchType::Merge, {{"data", {{"other", "1"}}}});
    current["data"]["mine"] = "1";
    return client->update(current);
  });
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(result["data"]["other"], "1") << "the second attempt read the other writer's change";
  EXPECT_EQ(result["data"]["mine"], "1");

  int calls = 0;
  EXPECT_THROW(retryOnConflict(
                   [&]() -> json {
                     ++calls;
                     throw ApiError(Reason::Conflict, 409, "always");
                   },
                   3),
               ApiError);
  EXPECT_EQ(calls, 3);
}

TEST_F(ClientTest, PaginationFollowsContinueTokens) {
  auto client = newClient();
  for (int i = 0; i < 7; ++i) client->create(configMap("cm-" + std::to_string(i)));
  const auto before = client->rest().requestsSent();
  std::string rv;
  auto all = client->listAll(kConfigMap, "default", {.limit = 3}, &rv);
  EXPECT_EQ(all.size(), 7u);
  EXPECT_EQ(client->rest().requestsSent() - before, 3u) << "three pages of at most 3";
  EXPECT_FALSE(rv.empty());
  EXPECT_EQ(all[0]["kind"], "ConfigMap");
}

TEST_F(ClientTest, ServerSideApplyOnAStatusListMap) {
  auto client = newClient();
  json wl = {
      {"apiVersion", "kueue.x-k8s.io/v1beta1"},
      {"kind", "Workload"},
      {"metadata", {{"name", "wl"}, {"namespace", "default"}}},
      {"spec",
       {{"queueName", "q"},
        {"podSets",
         json::array({{{"name", "main"}, {"count", 1}, {"template", {{"spec", {{"containers", json::array()}}}}}}})}}}};
  client->apply(wl, {.fieldManager = "kueue"});
  auto status = [](const std::string& check) {
    return json{{"apiVersion", "kueue.x-k8s.io/v1beta1"},
                {"kind", "Workload"},
                {"metadata", {{"name", "wl"}, {"namespace", "default"}}},
                {"status",
                 {{"admissionChecks", json::array({{{"name", check},
                                                    {"state", "Pending"},
                                                    {"message", ""},
                                                    {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}}}};
  };
  client->apply(status("multikueue"), {.fieldManager = "a", .subresource = "status"});
  auto both = client->apply(status("provisioning"), {.fieldManager = "b", .subresource = "status"});
  ASSERT_EQ(both["status"]["admissionChecks"].size(), 2u);
  EXPECT_EQ(both["status"]["admissionChecks"][1]["name"], "provisioning");
}

TEST_F(ClientTest, AuthenticationAndServerVerification) {
  auto config = restConfig();
  config.bearerToken = "not-the-token";
  Client wrongToken(std::make_shared<RestClient>(config, fastOptions()));
  EXPECT_EQ(errorOf([&] { wrongToken.get(kConfigMap, "default", "x"); }).reason(), Reason::Unauthorized);

  net::CertificateAuthority otherCa;
  config = restConfig();
  config.caPem = otherCa.certPem();
  Client wrongCa(std::make_shared<RestClient>(config, fastOptions()));
  auto refused = errorOf([&] { wrongCa.get(kConfigMap, "default", "x"); });
  EXPECT_EQ(refused.reason(), Reason::Unavailable);
  EXPECT_THAT(refused.what(), HasSubstr("not signed by the kubeconfig's CA"));
  EXPECT_THAT(refused.what(), HasSubstr("unable to get local issuer certificate"));  // OpenSSL's reason

  // x509 authentication: a client certificate from the cluster's CA instead of the token.
  auto cert = cluster.clientCertificate("adapter");
  config = restConfig();
  config.bearerToken.clear();
  config.clientCertificatePem = cert.certPem;
  config.clientKeyPem = cert.keyPem;
  Client withCert(std::make_shared<RestClient>(config, fastOptions()));
  EXPECT_EQ(withCert.list(kConfigMap, "default")["kind"], "ConfigMapList");
  net::CertificateAuthority strangerCa;
  auto stranger = strangerCa.issue({.commonName = "intruder", .clientAuth = true});
  config.clientCertificatePem = stranger.certPem;
  config.clientKeyPem = stranger.keyPem;
  Client wrongCert(std::make_shared<RestClient>(config, fastOptions()));
  EXPECT_EQ(errorOf([&] { wrongCert.list(kConfigMap, "default"); }).reason(), Reason::Unauthorized);

  config = restConfig();
  config.host = "http://127.0.0.1:1";
  EXPECT_THROW(RestClient(config, fastOptions()), Error);

  // A client key that is not PEM is refused when the client is built, not at its first request.
  config = restConfig();
  config.bearerToken.clear();
  config.clientCertificatePem = cert.certPem;
  config.clientKeyPem = "not a key";
  try {
    RestClient unusable(config, fastOptions());
    ADD_FAILURE() << "a client key that is not PEM was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("client-certificate-data or client-key-data is not PEM"));
  }
}

TEST_F(ClientTest, TlsServerNameIsVerifiedInsteadOfTheHost) {
  auto config = restConfig();
  config.tlsServerName = "localhost";  // in the serving certificate; the socket still goes to 127.0.0.1
  Client named(std::make_shared<RestClient>(config, fastOptions()));
  EXPECT_EQ(named.list(kConfigMap, "default")["kind"], "ConfigMapList");
  config.tlsServerName = "not-the-server.example";
  Client misnamed(std::make_shared<RestClient>(config, fastOptions()));
  auto refused = errorOf([&] { misnamed.list(kConfigMap, "default"); });
  EXPECT_EQ(refused.reason(), Reason::Unavailable);
  EXPECT_THAT(refused.what(), HasSubstr("hostname mismatch"));
}

// Without certificate-authority-data the system's CAs vouch for the server, as in client-go:
// the sandbox's private CA is not one of them. insecure-skip-tls-verify checks nothing.
TEST_F(ClientTest, WithoutACaTheSystemsCasDecideAndInsecureSkipsTheCheck) {
  auto config = restConfig();
  config.caPem.clear();
  Client systemCas(std::make_shared<RestClient>(config, fastOptions()));
  auto refused = errorOf([&] { systemCas.list(kConfigMap, "default"); });
  EXPECT_EQ(refused.reason(), Reason::Unavailable);
  EXPECT_THAT(refused.what(), HasSubstr("unable to get local issuer certificate"));
  config.insecureSkipTlsVerify = true;
  Client insecure(std::make_shared<RestClient>(config, fastOptions()));
  EXPECT_EQ(insecure.list(kConfigMap, "default")["kind"], "ConfigMapList");
}

TEST_F(ClientTest, DiscoveryRefreshesOnAMissForANewlyInstalledCrd) {
  auto client = newClient();
  const api::GroupVersionKind pipelineRun{"tekton.dev", "v1", "PipelineRun"};
  EXPECT_EQ(errorOf([&] { client->list(pipelineRun, "default"); }).reason(), Reason::NotFound);
  cluster.api().create(
      {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
      sandbox::loadCrdFile(std::filesystem::path(MKA_FIXTURES_DIR) / "crds/tekton.dev_pipelineruns.yaml").at(0));
  EXPECT_EQ(client->list(pipelineRun, "default")["kind"], "PipelineRunList");
  auto info = client->discovery().resourceFor(pipelineRun);
  EXPECT_EQ(info.plural, "pipelineruns");
  EXPECT_TRUE(info.namespaced);
  EXPECT_TRUE(info.hasStatus);
  EXPECT_FALSE(client->discovery().resourceFor({"", "v1", "Namespace"}).namespaced);
}

TEST_F(ClientTest, ARequestWithoutAnswerTimesOut) {
  auto options = fastOptions();
  options.timeout = std::chrono::milliseconds{300};
  options.maxRetries = 0;
  auto client = newClient(options);
  client->create(configMap("slow"));
  cluster.faults().setLatency(std::chrono::seconds{30});
  auto e = errorOf([&] { client->get(kConfigMap, "default", "slow"); });
  cluster.faults().setLatency(std::chrono::milliseconds{0});
  EXPECT_EQ(e.reason(), Reason::Timeout) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("ClientOptions.timeout"));
}

TEST_F(ClientTest, RetriesTooManyRequestsHonouringRetryAfter) {
  auto client = newClient();
  client->create(configMap("a"));
  cluster.faults().failNext(2, 429, {"get", "configmaps", ""}, 1);
  const auto before = client->rest().requestsSent();
  EXPECT_EQ(client->get(kConfigMap, "default", "a")["metadata"]["name"], "a");
  EXPECT_EQ(client->rest().requestsSent() - before, 3u);

  auto options = fastOptions();
  options.maxRetries = 1;
  auto impatient = newClient(options);
  cluster.faults().failNext(5, 503, {"get", "configmaps", ""}, 0);
  auto e = errorOf([&] { impatient->get(kConfigMap, "default", "a"); });
  EXPECT_EQ(e.reason(), Reason::Unavailable);
  EXPECT_EQ(e.code(), 503);
  // A create is not retried on a 500: it may have been applied.
  cluster.faults().failNext(1, 500, {"create", "configmaps", ""}, 0);
  EXPECT_EQ(errorOf([&] { client->create(configMap("b")); }).reason(), Reason::Internal);
}

TEST_F(ClientTest, ClientSideRateLimitSpacesRequests) {
  ClientOptions options = fastOptions();
  options.qps = 50;
  options.burst = 2;
  auto client = newClient(options);
  // The bucket holds at most `burst` tokens however long it waited, so from here 7 requests
  // need at least 5 refills of 20 ms: a lower bound on waiting (the limiter's contract),
  // never an upper bound on speed.
  const auto start = std::chrono::steady_clock::now();
  client->create(configMap("a"));
  for (int i = 0; i < 6; ++i) client->get(kConfigMap, "default", "a");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds{90});
}

// httplib closes the connection itself, and frees its TLS state, inside a request once the
// answer says "Connection: close" (as kube-apiserver's answers may when it sheds connections).
// The client's stream used that TLS state after the request: a use-after-free inside OpenSSL,
// seen as a rare crash in SSL_pending when a sandbox worker went unreachable. OpenSSL is not
// instrumented, so ASan sees such a read only as the crash it causes on memory filled at free
// (scripts/test.sh sets max_free_fill_size; glibc's malloc does it with M_PERTURB, below).
TEST(RestClientTest, AnAnswerThatClosesTheConnectionIsReadAndTheNextRequestConnectsAgain) {
  struct Perturb {
    Perturb() { mallopt(M_PERTURB, 0x55); }
    ~Perturb() { mallopt(M_PERTURB, 0); }
  } perturb;
  mka::test::TestCa ca;
  mka::test::TempDir dir;
  const auto files = mka::test::writeServingFiles(dir.path(), ca, ca.issue({}));
  httplib::SSLServer server(files.cert.c_str(), files.key.c_str());
  ASSERT_TRUE(server.is_valid());
  std::atomic<int> answered{0};
  server.Get("/api/v1/namespaces/default/configmaps/a", [&](const httplib::Request&, httplib::Response& res) {
    ++answered;
    res.set_header("Connection", "close");
    res.set_content(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}})",
                    "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });

  RestConfig config;
  config.host = "https://127.0.0.1:" + std::to_string(port);
  config.caPem = ca.certPem();
  ClientOptions options;
  options.qps = 0;
  options.maxRetries = 0;
  RestClient client(config, options);
  for (int i = 0; i < 3; ++i) {
    const auto answer = client.request("GET", "/api/v1/namespaces/default/configmaps/a");
    EXPECT_EQ(json::parse(answer.body)["metadata"]["name"], "a");
  }
  EXPECT_EQ(answered.load(), 3);
  server.stop();
  serving.join();
}

class InformerTest : public ClientTest {};

TEST_F(InformerTest, ResumesAfterADroppedWatchWithoutMissingOrRepeating) {
  auto client = newClient();
  client->create(configMap("before"));
  // Declared before the informer: its thread calls the handlers until informer.stop().
  std::mutex mutex;
  std::vector<std::string> adds;
  Informer informer(*client, kConfigMap, {.namespace_ = "default"});
  informer.addHandlers({.onAdd = [&](const json& o) {
    std::lock_guard lock(mutex);
    adds.push_back(o["metadata"]["name"]);
  }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  ASSERT_TRUE(test::eventually([&] { return cluster.openWatches() == 1; }));

  for (int round = 0; round < 3; ++round) {
    // Each round drops a watch that is really open: the server has registered this round's
    // watch and let go of the last one (the informer counts a watch before the server has it).
    ASSERT_TRUE(test::eventually([&] {
      return cluster.watchesStarted() == static_cast<std::uint64_t>(round) + 1 && cluster.openWatches() == 1;
    })) << "round "
        << round << ": informer watches " << informer.watches() << ", server watches started "
        << cluster.watchesStarted() << ", open " << cluster.openWatches();
    client->create(configMap("r" + std::to_string(round) + "-a"));
    cluster.store().closeAllWatches();  // the stream drops
    client->create(configMap("r" + std::to_string(round) + "-b"));
  }
  // Handlers run after the cache is updated: await what they saw.
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return adds.size() >= 7;
  })) << informer.list().size();
  std::vector<std::string> listed;
  for (const auto& o : informer.list()) listed.push_back(o["metadata"]["name"]);
  EXPECT_EQ(listed, (std::vector<std::string>{"before", "r0-a", "r0-b", "r1-a", "r1-b", "r2-a", "r2-b"}))
      << "list() is in key order, as a list from the server";
  {
    std::lock_guard lock(mutex);
    std::multiset<std::string> seen(adds.begin(), adds.end());
    EXPECT_EQ(seen.size(), 7u) << "every object added exactly once";
    EXPECT_EQ(std::set<std::string>(adds.begin(), adds.end()).size(), 7u);
  }
  EXPECT_EQ(informer.lists(), 1u) << "a dropped stream resumes; it does not relist";
  EXPECT_GE(informer.watches(), 4u);
  informer.stop();
}

// A controller that joins an informer already running (shared with another) hears of every
// cached object first, then of each later change, in order; one that leaves is not called again.
TEST_F(InformerTest, ALateHandlerGetsTheCacheFirstAndARemovedOneNothingMore) {
  auto client = newClient();
  client->create(configMap("a"));
  client->create(configMap("b"));
  std::mutex mutex;
  std::vector<std::string> late, early;
  const auto record = [&](std::vector<std::string>& into, const std::string& what) {
    return [&into, &mutex, what](const json& o) {
      std::lock_guard lock(mutex);
      into.push_back(what + " " + o["metadata"]["name"].get<std::string>());
    };
  };
  Informer informer(*client, kConfigMap, {.namespace_ = "default"});
  const auto earlyId = informer.addHandlers({.onAdd = record(early, "add"), .onUpdateNew = record(early, "update")});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));

  informer.addHandlers({.onAdd = record(late, "add"), .onUpdateNew = record(late, "update")});
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(late, (std::vector<std::string>{"add a", "add b"})) << "the cache, replayed before addHandlers returns";
  }
  informer.removeHandlers(earlyId);
  auto a = client->get(kConfigMap, "default", "a");
  a["data"]["k"] = "changed";
  client->update(a);
  client->create(configMap("c"));
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return late.size() == 4;
  }));
  std::lock_guard lock(mutex);
  EXPECT_EQ(late, (std::vector<std::string>{"add a", "add b", "update a", "add c"}));
  EXPECT_EQ(early, (std::vector<std::string>{"add a", "add b"})) << "removed before the changes";
  informer.stop();
}

TEST_F(InformerTest, APoolHasOneInformerPerKindNamespaceAndSelectorsForEveryController) {
  auto client = newClient();
  InformerPool pool(*client);
  auto& first = pool.informer(kConfigMap, {.namespace_ = "default", .withoutManagedFields = true});
  auto& again = pool.informer(kConfigMap, {.namespace_ = "default", .withoutManagedFields = true});
  auto& other = pool.informer(kConfigMap, {.namespace_ = "kube-system", .withoutManagedFields = true});
  EXPECT_EQ(&first, &again);
  EXPECT_NE(&first, &other);
  EXPECT_THROW(pool.informer(kConfigMap, {.namespace_ = "default"}), std::logic_error)
      << "readers of one informer must see the same objects";
  EXPECT_THROW(pool.informer(kConfigMap, {.namespace_ = "x", .transform = [](json&) {}}), std::logic_error);

  // Two controllers following the kind share one list and one watch.
  client->create(configMap("a"));
  std::atomic<int> adds{0};
  HandlerRegistrations one, two;
  one.add(first, {.onAdd = [&](const json&) { ++adds; }});
  first.start();
  ASSERT_TRUE(first.waitForSync(std::chrono::seconds{10}));
  two.add(again, {.onAdd = [&](const json&) { ++adds; }});
  again.start();
  EXPECT_EQ(adds.load(), 2);
  EXPECT_EQ(first.lists(), 1u);
  one.clear();
  client->create(configMap("b"));
  ASSERT_TRUE(test::eventually([&] { return adds.load() == 3; })) << "only the registration left hears of b";
  pool.stop();
}

TEST_F(InformerTest, RelistsAfterGoneAndReportsTheDifferences) {
  auto client = newClient();
  client->create(configMap("stays"));
  client->create(configMap("goes"));
  // Declared before the informer: its thread calls the handlers until informer.stop().
  std::mutex mutex;
  std::vector<std::string> events;
  Informer informer(*client, kConfigMap, {.namespace_ = "default"});
  informer.addHandlers({.onAdd =
                            [&](const json& o) {
                              std::lock_guard lock(mutex);
                              events.push_back("add " + o["metadata"]["name"].get<std::string>());
                            },
                        .onUpdate =
                            [&](const json&, const json& o) {
                              std::lock_guard lock(mutex);
                              events.push_back("update " + o["metadata"]["name"].get<std::string>());
                            },
                        .onDelete =
                            [&](const json& o) {
                              std::lock_guard lock(mutex);
                              events.push_back("delete " + o["metadata"]["name"].get<std::string>());
                            }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  ASSERT_TRUE(test::eventually([&] { return cluster.openWatches() == 1; }));

  // While the informer is cut off, the history it would resume from is compacted away.
  cluster.setUnreachable(true);
  cluster.api().remove({"", "v1", "configmaps", "default", "goes", ""});  // in-process, behind its back
  cluster.store().compact();
  cluster.setUnreachable(false);
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return events.size() >= 3;
  }));
  EXPECT_EQ(informer.lists(), 2u);
  EXPECT_FALSE(informer.get("default/goes").has_value());
  EXPECT_TRUE(informer.get("default/stays").has_value());
  informer.stop();
  std::lock_guard lock(mutex);
  EXPECT_EQ(events, (std::vector<std::string>{"add goes", "add stays", "delete goes"}));
}

// forEach takes the keys at the call and each object when its turn comes: one deleted during
// the walk is not visited (a snapshot of every blob used to be copied up front).
TEST_F(InformerTest, ForEachSkipsAnObjectDeletedDuringTheWalk) {
  auto client = newClient();
  for (const auto* name : {"a", "b", "c"}) client->create(configMap(name));
  Informer informer(*client, kConfigMap, {.namespace_ = "default"});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  std::vector<std::string> seen;
  informer.forEach([&](const json& o) {
    seen.push_back(o["metadata"]["name"]);
    if (seen.back() != "a") return;
    client->remove(kConfigMap, "default", "b");
    ASSERT_TRUE(test::eventually([&] { return !informer.get("default/b").has_value(); }));
  });
  informer.stop();
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "c"}));
}

// A list naming a key twice (here a transform folds names together): the later item wins, at
// the first one's place in the order the handlers hear, and it is heard once.
TEST_F(InformerTest, AKeyListedTwiceKeepsTheLaterItemAtTheFirstPlace) {
  auto client = newClient();
  for (const auto* name : {"a-1", "a-2", "b-1"}) client->create(configMap(name));
  std::mutex mutex;
  std::vector<std::string> adds;
  Informer informer(*client, kConfigMap, {.namespace_ = "default", .transform = [](json& o) {
                                            auto& name = o["metadata"]["name"];
                                            name = name.get<std::string>().substr(0, 1);  // a-1, a-2 -> a
                                          }});
  informer.addHandlers({.onAdd = [&](const json& o) {
    std::lock_guard lock(mutex);
    adds.push_back(o["metadata"]["name"].get<std::string>() + "=" + o["data"]["k"].get<std::string>());
  }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  informer.stop();
  EXPECT_EQ(informer.get("default/a").value()["data"]["k"], "a-2");
  std::lock_guard lock(mutex);
  EXPECT_EQ(adds, (std::vector<std::string>{"a=a-2", "b=b-1"}));
}

// The informer's codec changes its dictionary after kRetrainAt encodes: objects cached before
// and listed again after it have different blobs, yet a relist must not call them updated.
TEST_F(InformerTest, RelistAcrossADictionaryChangeReportsNoSpuriousUpdates) {
  const int count = static_cast<int>(ObjectCodec::kRetrainAt) + 20;
  for (int i = 0; i < count; ++i)
    cluster.api().create({"", "v1", "configmaps", "default", "", ""}, configMap("cm-" + std::to_string(i)));
  auto client = newClient();
  std::atomic<int> updates{0}, deletes{0}, syncs{0};  // declared before the informer: its thread writes them
  InformerOptions options{.namespace_ = "default"};
  options.onSynced = [&] { ++syncs; };  // after the handlers have seen the list
  Informer informer(*client, kConfigMap, options);
  informer.addHandlers(
      {.onUpdate = [&](const json&, const json&) { ++updates; }, .onDelete = [&](const json&) { ++deletes; }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{30}));
  ASSERT_TRUE(test::eventually([&] { return cluster.openWatches() == 1; }));

  cluster.setUnreachable(true);
  cluster.api().remove({"", "v1", "configmaps", "default", "cm-0", ""});
  cluster.store().compact();
  cluster.setUnreachable(false);
  ASSERT_TRUE(test::eventually([&] { return syncs.load() == 2; }));
  EXPECT_EQ(deletes.load(), 1);
  EXPECT_EQ(updates.load(), 0) << "objects cached under the first dictionary were reported as changed";
  EXPECT_EQ(informer.list().size(), static_cast<std::size_t>(count - 1));
  informer.stop();
}

// Handlers that read only the new object of an update (onUpdateNew) and deletions cost no
// decoding of the cached object; an onUpdate handler does.
TEST_F(InformerTest, OldObjectsAreDecodedOnlyForHandlersThatReadThem) {
  auto client = newClient();
  for (const auto* name : {"a", "b"}) client->create(configMap(name));
  auto setValue = [&](const std::string& name, const std::string& value) {
    client->patch(kConfigMap, "default", name, PatchType::Merge, {{"data", {{"v", value}}}});
  };
  std::mutex mutex;
  std::vector<std::string> seen;  // declared before the informers: their threads write it
  auto record = [&](const std::string& what) {
    std::lock_guard lock(mutex);
    seen.push_back(what);
  };
  auto seenCount = [&] {
    std::lock_guard lock(mutex);
    return seen.size();
  };
  InformerOptions options{.namespace_ = "default"};
  options.recentObjects = 0;  // every old object would have to be decoded
  Informer newOnly(*client, kConfigMap, options);
  newOnly.addHandlers(
      {.onUpdateNew = [&](const json& o) { record("new " + o["data"].value("v", "-")); },
       .onDelete = [&](const json& o) { record("delete " + o["metadata"]["name"].get<std::string>()); }});
  Informer both(*client, kConfigMap, options);
  both.addHandlers({.onUpdate =
                        [&](const json& before, const json& after) {
                          record("old " + before["data"].value("v", "-") + "->" + after["data"].value("v", "-"));
                        },
                    .onUpdateNew = [&](const json& o) { record("both " + o["data"].value("v", "-")); }});
  newOnly.start();
  both.start();
  ASSERT_TRUE(newOnly.waitForSync(std::chrono::seconds{10}));
  ASSERT_TRUE(both.waitForSync(std::chrono::seconds{10}));
  ASSERT_TRUE(test::eventually([&] { return cluster.openWatches() == 2; }));
  const auto newOnlyBefore = newOnly.decodes(), bothBefore = both.decodes();

  setValue("a", "1");
  setValue("a", "2");
  client->remove(kConfigMap, "default", "b");
  ASSERT_TRUE(test::eventually([&] { return seenCount() == 7; }));
  EXPECT_EQ(newOnly.decodes(), newOnlyBefore) << "no handler read an old object";
  EXPECT_EQ(both.decodes(), bothBefore + 2) << "the onUpdate handler reads each update's old object";
  newOnly.stop();
  both.stop();
  std::lock_guard lock(mutex);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"both 1", "both 2", "delete b", "new 1", "new 2", "old -->1", "old 1->2"}));
}

// The informer keeps the last objects stored or read decoded: reading them costs no decoding,
// and what they return is always the current object, whatever was evicted or replaced.
TEST_F(InformerTest, RecentObjectsAreReadWithoutDecodingAndAreAlwaysCurrent) {
  auto client = newClient();
  for (const auto* name : {"a", "b", "c"}) client->create(configMap(name));
  auto setValue = [&](const std::string& name, const std::string& value) {
    client->patch(kConfigMap, "default", name, PatchType::Merge, {{"data", {{"v", value}}}});
  };
  std::mutex mutex;
  std::vector<std::string> updates;  // declared before the informer: its thread writes it
  std::atomic<int> deletes{0};
  InformerOptions options{.namespace_ = "default"};
  options.recentObjects = 2;
  Informer informer(*client, kConfigMap, options);
  informer.addHandlers({.onUpdate =
                            [&](const json& before, const json& after) {
                              std::lock_guard lock(mutex);
                              updates.push_back(after["metadata"]["name"].get<std::string>() + " " +
                                                before["data"].value("v", "-") + "->" + after["data"].value("v", "-"));
                            },
                        .onDelete = [&](const json&) { ++deletes; }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  auto awaitUpdates = [&](std::size_t n) {
    return test::eventually([&] {
      std::lock_guard lock(mutex);
      return updates.size() >= n;
    });
  };
  auto valueOf = [&](const std::string& name) {
    const auto object = informer.get("default/" + name);
    return object ? object->at("data").value("v", "-") : "gone";
  };

  const auto listed = informer.decodes();  // the handlers saw the list
  setValue("a", "1");
  ASSERT_TRUE(awaitUpdates(1));
  auto decodes = informer.decodes();
  EXPECT_EQ(decodes, listed + 1) << "only the old object of the update, which came from the list";
  EXPECT_EQ(valueOf("a"), "1");
  EXPECT_EQ(informer.decodes(), decodes) << "the object just stored is read without decoding";
  EXPECT_EQ(valueOf("b"), "-");
  EXPECT_EQ(informer.decodes(), decodes + 1) << "an object only listed is decoded";

  setValue("b", "1");
  setValue("c", "1");  // recent: c, b; a is evicted
  ASSERT_TRUE(awaitUpdates(3));
  decodes = informer.decodes();
  EXPECT_EQ(valueOf("a"), "1") << "an evicted object is decoded from the cache";
  EXPECT_EQ(informer.decodes(), decodes + 1);
  EXPECT_EQ(valueOf("b"), "1");
  EXPECT_EQ(valueOf("c"), "1");
  EXPECT_EQ(informer.decodes(), decodes + 1);
  setValue("c", "2");
  ASSERT_TRUE(awaitUpdates(4));
  EXPECT_EQ(valueOf("c"), "2") << "a recent object is replaced with the update";
  EXPECT_EQ(informer.decodes(), decodes + 1) << "the old object of the update was recent";

  client->remove(kConfigMap, "default", "c");
  ASSERT_TRUE(test::eventually([&] { return deletes.load() == 1; }));
  EXPECT_EQ(valueOf("c"), "gone") << "a recent object is dropped with the delete";
  informer.stop();
  std::lock_guard lock(mutex);
  EXPECT_EQ(updates, (std::vector<std::string>{"a -->1", "b -->1", "c -->1", "c 1->2"}));
}

TEST_F(InformerTest, ForEachSkipsTheKeysNotWantedWithoutDecodingThem) {
  auto client = newClient();
  for (const auto* name : {"a", "b", "c", "d"}) client->create(configMap(name));
  InformerOptions options{.namespace_ = "default"};
  options.recentObjects = 0;
  Informer informer(*client, kConfigMap, options);
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  const auto before = informer.decodes();
  std::vector<std::string> asked, visited;
  informer.forEach([&](const json& object) { visited.push_back(object["metadata"]["name"].get<std::string>()); },
                   [&](const std::string& key) {
                     asked.push_back(key);
                     return key == "default/b" || key == "default/d";
                   });
  EXPECT_EQ(asked, (std::vector<std::string>{"default/a", "default/b", "default/c", "default/d"}));
  EXPECT_EQ(visited, (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(informer.decodes(), before + 2) << "the declined objects are not decoded";
  informer.stop();
}

TEST_F(InformerTest, TransformShapesWhatIsCachedAndHandedToHandlers) {
  auto client = newClient();
  client->create(configMap("listed"));
  std::mutex mutex;
  std::vector<nlohmann::json> seen;  // declared before the informer: its thread writes it
  InformerOptions options{.namespace_ = "default"};
  options.transform = [](nlohmann::json& object) {
    dropManagedFields(object);
    object["metadata"]["labels"]["transformed"] = "yes";
  };
  Informer informer(*client, kConfigMap, options);
  informer.addHandlers({.onAdd = [&](const nlohmann::json& o) {
    std::lock_guard lock(mutex);
    seen.push_back(o);
  }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  client->create(configMap("watched"));
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return seen.size() == 2;
  }));
  for (const auto* name : {"default/listed", "default/watched"}) {
    const auto cached = informer.get(name);
    ASSERT_TRUE(cached.has_value()) << name;
    EXPECT_EQ(cached->at("metadata").at("labels").value("transformed", ""), "yes") << name;
    EXPECT_FALSE(cached->at("metadata").contains("managedFields")) << name;
  }
  informer.stop();
  std::lock_guard lock(mutex);
  for (const auto& o : seen) EXPECT_EQ(o.at("metadata").at("labels").value("transformed", ""), "yes");
}

// The cache keeps objects without the name and namespace their key holds, and puts them back
// on every read: listed or watched, namespaced or cluster-scoped.
TEST_F(InformerTest, CachedObjectsLeaveTheirNameToTheKeyAndGetItBack) {
  auto client = newClient();
  std::string longName = "z";
  std::mt19937 random(3);
  for (int i = 0; i < 199; ++i) longName += "abcdefghijklmnopqrstuvwxyz0123456789"[random() % 36];
  for (const auto& name : {std::string("a"), longName}) {
    auto object = configMap(name);
    object["data"]["k"] = "same";  // the name only in metadata
    client->create(object);
  }
  InformerOptions options{.namespace_ = "default"};
  options.recentObjects = 0;
  options.withoutManagedFields = true;  // every read decodes the cached blob
  Informer informer(*client, kConfigMap, options);
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  // Two objects that differ by their name only: 200 random characters would cost well over
  // 100 bytes of blob if the cache kept them.
  EXPECT_LT(informer.cachedBytes(), 100u);
  const auto served = [&](const api::GroupVersionKind& kind, const std::string& ns, const std::string& name) {
    auto object = client->get(kind, ns, name);
    object["metadata"].erase("managedFields");
    return object;
  };
  for (const auto& name : {std::string("a"), longName}) {
    const auto cached = informer.get("default/" + name);
    ASSERT_TRUE(cached.has_value()) << name;
    EXPECT_EQ(*cached, served(kConfigMap, "default", name)) << name;
  }
  auto watched = client->create(configMap("watched"));
  ASSERT_TRUE(test::eventually([&] { return informer.get("default/watched").has_value(); }));
  EXPECT_EQ(*informer.get("default/watched"), served(kConfigMap, "default", "watched"));
  EXPECT_EQ(informer.list().size(), 3u);
  informer.stop();

  const api::GroupVersionKind namespaceKind{"", "v1", "Namespace"};
  client->create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-a"}}}});
  InformerOptions clusterScoped;
  clusterScoped.recentObjects = 0;
  clusterScoped.withoutManagedFields = true;
  Informer namespaces(*client, namespaceKind, clusterScoped);
  namespaces.start();
  ASSERT_TRUE(namespaces.waitForSync(std::chrono::seconds{10}));
  const auto cached = namespaces.get("team-a");
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(*cached, served(namespaceKind, "", "team-a"));
  EXPECT_FALSE(cached->at("metadata").contains("namespace"));
  namespaces.stop();
}

TEST_F(InformerTest, WithoutManagedFieldsListsAndWatchesObjectsWithoutThem) {
  auto client = newClient();
  client->create(configMap("listed"));
  // The server does send them, so the informer is what drops them.
  const auto plain = client->list(kConfigMap, "default");
  ASSERT_TRUE(plain.at("items").at(0).at("metadata").contains("managedFields"));
  ListOptions lean;
  lean.withoutManagedFields = true;
  const auto page = client->list(kConfigMap, "default", lean);
  ASSERT_EQ(page.at("items").size(), 1u);
  EXPECT_FALSE(page.at("items").at(0).at("metadata").contains("managedFields"));
  EXPECT_EQ(page.at("items").at(0).at("metadata").at("name"), "listed");

  std::mutex mutex;
  std::vector<nlohmann::json> seen;  // declared before the informer: its thread writes it
  InformerOptions options{.namespace_ = "default"};
  options.withoutManagedFields = true;
  Informer informer(*client, kConfigMap, options);
  informer.addHandlers({.onAdd =
                            [&](const nlohmann::json& o) {
                              std::lock_guard lock(mutex);
                              seen.push_back(o);
                            },
                        .onUpdate =
                            [&](const nlohmann::json&, const nlohmann::json& o) {
                              std::lock_guard lock(mutex);
                              seen.push_back(o);
                            }});
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds{10}));
  auto watched = client->create(configMap("watched"));
  watched["data"]["changed"] = "yes";
  client->update(watched);
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return seen.size() == 3;
  }));
  for (const auto* name : {"default/listed", "default/watched"}) {
    const auto cached = informer.get(name);
    ASSERT_TRUE(cached.has_value()) << name;
    EXPECT_FALSE(cached->at("metadata").contains("managedFields")) << name;
    EXPECT_FALSE(cached->at("metadata").value("resourceVersion", "").empty()) << name;
  }
  EXPECT_EQ(informer.get("default/watched")->at("data").value("changed", ""), "yes");
  informer.stop();
  std::lock_guard lock(mutex);
  for (const auto& o : seen) EXPECT_FALSE(o.at("metadata").contains("managedFields")) << o.dump();
}

TEST_F(InformerTest, ItsThreadIsNamedAfterTheKind) {
  auto client = newClient();
  auto informerThreads = [] {
    const auto names = test::threadNames();
    return std::count(names.begin(), names.end(), "inf-ConfigMap");
  };
  const auto before = informerThreads();
  Informer informer(*client, kConfigMap, {.namespace_ = "default"});
  informer.start();
  ASSERT_TRUE(test::eventually([&] { return informerThreads() == before + 1; }));
  informer.stop();
  EXPECT_EQ(informerThreads(), before);
}

TEST_F(InformerTest, HooksReportSyncedListsAndFailedRequestsButNotEndedStreams) {
  auto client = newClient();
  client->create(configMap("a"));
  // Declared before the informer: its thread calls the hooks until informer.stop().
  std::mutex mutex;
  std::vector<std::string> errors;
  std::atomic<int> synced{0};
  InformerOptions options{.namespace_ = "default", .initialBackoff = std::chrono::milliseconds{10}};
  options.onSynced = [&] { ++synced; };
  options.onError = [&](const std::exception& e) {
    std::lock_guard lock(mutex);
    errors.emplace_back(e.what());
  };
  Informer informer(*client, kConfigMap, options);
  informer.start();
  ASSERT_TRUE(test::eventually([&] { return synced == 1 && cluster.openWatches() == 1; }));

  // A watch that ends is resumed, not reported. (Each wait is for the server to have registered
  // the new watch and let go of the old one: the informer counts a watch before the server
  // has it, and closing all watches in between would close only the old one.)
  cluster.store().closeAllWatches();
  ASSERT_TRUE(test::eventually(
      [&] { return informer.watches() == 2 && cluster.watchesStarted() == 2 && cluster.openWatches() == 1; }));
  // A watch request that fails is reported once, then the reflector backs off and resumes (the
  // failed request never became a watch on the server).
  cluster.faults().failNext(1, 500, {"watch", "configmaps", ""}, 0);
  cluster.store().closeAllWatches();
  ASSERT_TRUE(test::eventually([&] {
    return informer.watches() == 4 && cluster.watchesStarted() == 3 && cluster.openWatches() == 1;
  })) << "informer watches "
      << informer.watches() << ", server watches started " << cluster.watchesStarted();
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THAT(errors[0], HasSubstr("(Internal, 500)"));
  }
  // A relist after 410 Gone is not a failure; its complete list is reported again.
  cluster.faults().goneOnNextWatch();
  cluster.store().closeAllWatches();
  ASSERT_TRUE(test::eventually([&] { return synced == 2 && informer.lists() == 2; }));
  informer.stop();
  std::lock_guard lock(mutex);
  EXPECT_EQ(errors.size(), 1u);
}

TEST_F(InformerTest, AKindTheServerDoesNotServeNeverSyncsAndReportsEveryFailedList) {
  auto client = newClient();
  std::atomic<int> failures{0};
  std::atomic<bool> notFound{false};
  InformerOptions options{.initialBackoff = std::chrono::milliseconds{10}, .maxBackoff = std::chrono::milliseconds{20}};
  options.onError = [&](const std::exception& e) {
    notFound = isNotFound(e);
    ++failures;
  };
  Informer informer(*client, {"tekton.dev", "v1", "PipelineRun"}, options);
  informer.start();
  ASSERT_TRUE(test::eventually([&] { return failures >= 3; }));
  EXPECT_TRUE(notFound);
  EXPECT_FALSE(informer.hasSynced());
  informer.stop();
}

TEST_F(ClientTest, LeaderHandOverOnRelease) {
  auto clientA = newClient();
  auto clientB = newClient();
  LeaderElectionConfig base{.namespace_ = "default",
                            .name = "adapter",
                            .leaseDuration = std::chrono::milliseconds{3000},
                            .renewDeadline = std::chrono::milliseconds{2000},
                            .retryPeriod = std::chrono::milliseconds{100}};
  auto configA = base;
  configA.identity = "a";
  auto configB = base;
  configB.identity = "b";
  LeaderElector a(*clientA, configA);
  a.start();
  ASSERT_TRUE(test::eventually([&] { return a.isLeader(); }));
  LeaderElector b(*clientB, configB);
  b.start();
  ASSERT_TRUE(test::eventually([&] { return b.leader() == "a"; }));
  EXPECT_FALSE(b.isLeader());

  a.stop();  // releases the lease
  EXPECT_FALSE(a.isLeader());
  ASSERT_TRUE(test::eventually([&] { return b.isLeader(); }, base.leaseDuration))
      << "the successor takes over within one lease duration";
  auto lease = clientB->get({"coordination.k8s.io", "v1", "Lease"}, "default", "adapter");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1) << "created by a (0), taken over by b (+1)";
}

TEST_F(ClientTest, ACrashedLeadersLeaseIsTakenOverOnlyOnceItExpires) {
  auto clientA = newClient();
  auto clientB = newClient();
  LeaderElectionConfig base{.namespace_ = "default",
                            .name = "crash",
                            .leaseDuration = std::chrono::milliseconds{2000},  // whole seconds in the Lease
                            .renewDeadline = std::chrono::milliseconds{1500},
                            .retryPeriod = std::chrono::milliseconds{100},
                            .releaseOnCancel = false};  // a crash: nobody releases
  auto configA = base;
  configA.identity = "a";
  auto configB = base;
  configB.identity = "b";
  LeaderElector a(*clientA, configA);
  a.start();
  ASSERT_TRUE(test::eventually([&] { return a.isLeader(); }));
  LeaderElector b(*clientB, configB);
  b.start();
  ASSERT_TRUE(test::eventually([&] { return b.leader() == "a"; }));
  a.stop();
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(test::eventually([&] { return b.isLeader(); }));
  // b may only take over once the lease has expired on b's clock, counted from when b saw a's
  // last renewal (at most one retryPeriod before the crash). A takeover by release would come
  // within about one retryPeriod; expiry takes about 2 s. The bound sits well between the two.
  EXPECT_GE(std::chrono::steady_clock::now() - stopped, base.leaseDuration - 5 * base.retryPeriod);
}

// Two electors told apart by their user agents (replica-a_, replica-b_): a leads and b has
// seen it. The callbacks number their events, so a test reads the order they came in.
struct ElectorPair {
  std::atomic<int> events{0}, aStarted{0}, aStopped{0}, bStarted{0};
  std::unique_ptr<Client> clientA, clientB;
  std::unique_ptr<LeaderElector> a, b;
};

std::unique_ptr<ElectorPair> leadingPair(ClientTest& t, ClientOptions optionsA, LeaderElectionConfig configA,
                                         LeaderElectionConfig configB) {
  auto p = std::make_unique<ElectorPair>();
  auto optionsB = optionsA;
  optionsA.userAgent = "test/1 (linux/amd64) replica-a_x7k2";
  optionsB.userAgent = "test/1 (linux/amd64) replica-b_q9z4";
  optionsB.retryBackoff = ClientTest::fastOptions().retryBackoff;
  p->clientA = t.newClient(optionsA);
  p->clientB = t.newClient(optionsB);
  auto* pair = p.get();
  configA.identity = "a";
  configA.onStartedLeading = [pair] { pair->aStarted = ++pair->events; };
  configA.onStoppedLeading = [pair] { pair->aStopped = ++pair->events; };
  configB.identity = "b";
  configB.onStartedLeading = [pair] { pair->bStarted = ++pair->events; };
  p->a = std::make_unique<LeaderElector>(*p->clientA, configA);
  p->a->start();
  EXPECT_TRUE(test::eventually([&] { return p->a->isLeader(); }));
  p->b = std::make_unique<LeaderElector>(*p->clientB, configB);
  p->b->start();
  EXPECT_TRUE(test::eventually([&] { return p->b->leader() == "a"; }));
  return p;
}

// The safety of leader election rests on this order: a leader that cannot renew stops leading
// before anyone else may take the lease over (renewDeadline < leaseDuration). A 503 is what an
// overloaded API server answers; retried inside the attempt, it would outlast the deadline.
TEST_F(ClientTest, ALeaderThatCannotRenewStepsDownBeforeTheLeaseIsTakenOverAndStandsAgain) {
  auto optionsA = fastOptions();
  optionsA.retryBackoff = ClientOptions{}.retryBackoff;  // a's client would retry a 503 for 6 s
  const LeaderElectionConfig base{.namespace_ = "default",
                                  .name = "renew",
                                  .leaseDuration = std::chrono::milliseconds{2000},
                                  .renewDeadline = std::chrono::milliseconds{1500},
                                  .retryPeriod = std::chrono::milliseconds{100}};
  auto p = leadingPair(*this, optionsA, base, base);
  ASSERT_FALSE(HasFailure());

  cluster.faults().failNext(1'000'000, 503, {.resource = "leases", .userAgent = "replica-a_"});
  // isLeader() turns true just before onStartedLeading runs: await the callback itself.
  ASSERT_TRUE(test::eventually([&] { return p->bStarted.load() > 0; }, std::chrono::seconds{30}));
  EXPECT_FALSE(p->a->isLeader());
  EXPECT_GT(p->aStopped.load(), 0) << "a never stopped leading";
  EXPECT_LT(p->aStopped.load(), p->bStarted.load()) << "b led while a still did";

  // a stands again: once its requests are answered and b lets go, it leads.
  cluster.faults().clear();
  const int before = p->events.load();
  p->b->stop();
  EXPECT_TRUE(test::eventually([&] { return p->aStarted.load() > before; }, std::chrono::seconds{30}));
  EXPECT_TRUE(p->a->isLeader());
}

// The same order when the API server hangs instead of failing: each renewal attempt gets what
// is left of the renew deadline, so a leader whose requests never come back still steps down
// before the lease can be taken over (a request waiting its full timeout, twice, would not).
TEST_F(ClientTest, ALeaderWhoseRenewalsHangStepsDownBeforeTheLeaseIsTakenOver) {
  // a renews rarely, b looks often: a request of a's waiting its whole timeout after a's last
  // wait would end past the lease's expiry on b's clock (1.5 s + 1.9 s > 2.4 s).
  const LeaderElectionConfig base{.namespace_ = "default",
                                  .name = "hang",
                                  .leaseDuration = std::chrono::milliseconds{2400},
                                  .renewDeadline = std::chrono::milliseconds{1900},
                                  .retryPeriod = std::chrono::milliseconds{1500}};
  auto configB = base;
  configB.retryPeriod = std::chrono::milliseconds{100};
  auto p = leadingPair(*this, fastOptions(), base, configB);
  ASSERT_FALSE(HasFailure());

  cluster.faults().hang({.resource = "leases", .userAgent = "replica-a_"});
  // isLeader() turns true just before onStartedLeading runs: await the callback itself.
  ASSERT_TRUE(test::eventually([&] { return p->bStarted.load() > 0; }, std::chrono::seconds{30}));
  EXPECT_GT(p->aStopped.load(), 0) << "a never stopped leading";
  EXPECT_LT(p->aStopped.load(), p->bStarted.load()) << "b led while a still did";
  cluster.faults().clear();  // the held requests end
}

TEST(LeaderIdentityTest, NamesThePodWhenPodNameIsSet) {
  ::setenv("POD_NAME", "multikueue-adapter-7d9f5-x2k4q", 1);
  const auto identity = defaultLeaderIdentity();
  ::unsetenv("POD_NAME");
  EXPECT_THAT(identity, ::testing::MatchesRegex("multikueue-adapter-7d9f5-x2k4q_[a-z0-9]{8}"));
  EXPECT_NE(defaultLeaderIdentity(), defaultLeaderIdentity()) << "two processes of one pod differ";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(defaultLeaderIdentity().rfind(std::string(host) + "_", 0), 0u) << "without POD_NAME: the hostname";
}

TEST(UserAgentTest, NamesBinaryVersionPlatformAndIdentityAsClientGoDoes) {
  EXPECT_THAT(userAgentFor("v0.3.0-4-gabc", "adapter-7d9f5-x2k4q_bc4d2fgh"),
              ::testing::MatchesRegex(
                  R"(multikueue-adapter/v0\.3\.0-4-gabc \(linux/[a-z0-9]+\) adapter-7d9f5-x2k4q_bc4d2fgh)"));
  // Whatever a hostname or version holds, the header stays one line of tokens.
  const auto odd = userAgentFor("1.0 dirty", "host name\r\nX-Injected: 1");
  EXPECT_EQ(odd.find_first_of("\r\n"), std::string::npos) << odd;
  EXPECT_THAT(odd, ::testing::StartsWith("multikueue-adapter/1.0-dirty ("));
  EXPECT_THAT(odd, ::testing::EndsWith(") host-name--X-Injected--1")) << "':' is not a token character either";
}

TEST_F(ClientTest, LeaderElectionRefusesBadDurations) {
  auto client = newClient();
  EXPECT_THROW(LeaderElector(*client, {.namespace_ = "default",
                                       .name = "x",
                                       .leaseDuration = std::chrono::seconds{5},
                                       .renewDeadline = std::chrono::seconds{10}}),
               Error);
}

}  // namespace
}  // namespace mka::kube
