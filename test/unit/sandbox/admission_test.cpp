// The admission webhook chain against a real TLS webhook server on 127.0.0.1, with a CA made in
// the test: what is sent, what comes back, which webhooks are called, and how failures surface.
#include "mka/sandbox/admission.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "mka/sandbox/api_error.h"
#include "support/temp_dir.h"
#include "support/thrown.h"
#include "support/tls.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

json configMap(const std::string& ns, const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", std::move(labels)}}},
          {"data", {{"k", "v"}}}};
}

json rule(std::vector<std::string> operations, std::vector<std::string> groups, std::vector<std::string> versions,
          std::vector<std::string> resources, const std::string& scope = "*") {
  return {{"operations", operations},
          {"apiGroups", groups},
          {"apiVersions", versions},
          {"resources", resources},
          {"scope", scope}};
}

json configMapRule() { return rule({"CREATE", "UPDATE", "DELETE"}, {""}, {"v1"}, {"configmaps"}); }

// A JSONPatch answer.
json patchResponse(const json& operations) {
  return {{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", base64(operations.dump())}};
}

json allow() { return {{"allowed", true}}; }

json setLabel(const std::string& key, const std::string& value) {
  return json::array({{{"op", "add"}, {"path", "/metadata/labels/" + key}, {"value", value}}});
}

std::string labelOf(const json& object, const std::string& key) {
  return object.at("metadata").value("labels", json::object()).value(key, "");
}

// A TCP port bound but not listening, so connecting to it is refused; held for the test's life
// so that no other server takes it meanwhile.
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("could not reserve a loopback port");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~ClosedPort() { ::close(fd_); }
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Threads: the test thread drives the chain; handlers run on the webhook server's threads, so
// everything they share with the test is under mutex_.
class AdmissionTest : public ::testing::Test {
 protected:
  // Gets .request, returns .response (its uid is filled in when absent).
  using Handler = std::function<json(const json& request)>;
  // Writes the whole HTTP answer itself.
  using RawHandler = std::function<void(httplib::Response&)>;

  struct Call {
    std::string path;
    std::string timeout;  // the ?timeout= query
    json request;
  };

  void SetUp() override {
    const auto leaf = ca_.issue(
        {.commonName = "hooks", .dnsNames = {"localhost", "hooks.webhooks.svc"}, .ipAddresses = {"127.0.0.1"}});
    const auto files = mka::test::writeServingFiles(dir_ / "serving", ca_, leaf);
    certificates_ = std::make_shared<net::CertificateReloader>(files.cert, files.key);
    certificates_->start();
    ASSERT_TRUE(certificates_->loaded()) << certificates_->lastError();

    net::ServerOptions options;
    options.name = "admission-test-webhooks";
    options.host = "127.0.0.1";
    server_ = std::make_unique<net::HttpServer>(options, certificates_);
    server_->route("POST", R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) { serve(req, res); });
    port_ = server_->start();

    for (const auto& [name, team] : {std::pair{"team-a", "a"}, std::pair{"team-b", "b"}}) {
      store_.create(
          {"", "namespaces", "", name},
          {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"labels", {{"team", team}}}}}});
    }
  }

  void TearDown() override {
    {
      std::lock_guard lock(mutex_);
      released_ = true;  // handlers holding a request until the end (timeouts) return now
    }
    released_cv_.notify_all();
    server_->stop();
    certificates_->stop();
  }

  void serve(const httplib::Request& req, httplib::Response& res) {
    const json review = json::parse(req.body, nullptr, false);
    Handler handler;
    RawHandler raw;
    {
      std::lock_guard lock(mutex_);
      calls_.push_back({req.path, req.get_param_value("timeout"), review.value("request", json(nullptr))});
      if (handlers_.contains(req.path)) handler = handlers_[req.path];
      if (raw_.contains(req.path)) raw = raw_[req.path];
    }
    if (raw) return raw(res);
    if (!handler || !review.is_object()) {
      res.status = 404;
      return;
    }
    json response = handler(review["request"]);
    if (!response.contains("uid")) response["uid"] = review["request"]["uid"];
    const json answer = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
    res.set_content(answer.dump(), "application/json");
  }

  void on(const std::string& path, Handler handler) {
    std::lock_guard lock(mutex_);
    handlers_[path] = std::move(handler);
  }
  void onRaw(const std::string& path, RawHandler handler) {
    std::lock_guard lock(mutex_);
    raw_[path] = std::move(handler);
  }
  // Holds the request until the test ends, as a hung webhook would.
  void hang(const std::string& path) {
    on(path, [this](const json&) {
      std::unique_lock lock(mutex_);
      released_cv_.wait(lock, [this] { return released_; });
      return allow();
    });
  }

  std::vector<Call> calls(const std::string& path) const {
    std::lock_guard lock(mutex_);
    std::vector<Call> out;
    for (const auto& c : calls_) {
      if (c.path == path) out.push_back(c);
    }
    return out;
  }
  std::set<std::string> calledPaths() const {
    std::lock_guard lock(mutex_);
    std::set<std::string> out;
    for (const auto& c : calls_) out.insert(c.path);
    return out;
  }
  void forgetCalls() {
    std::lock_guard lock(mutex_);
    calls_.clear();
  }

  std::string url(const std::string& path, int port = 0) const {
    return "https://127.0.0.1:" + std::to_string(port == 0 ? port_ : port) + path;
  }

  // A webhook on `path` of the test server, trusting the test CA, with `extra` merged in.
  json hook(const std::string& name, const std::string& path, json rules = json::array({configMapRule()}),
            const json& extra = json::object()) const {
    json h = {{"name", name},
              {"clientConfig", {{"url", url(path)}, {"caBundle", base64(ca_.certPem())}}},
              {"rules", std::move(rules)},
              {"sideEffects", "None"},
              {"admissionReviewVersions", {"v1", "v1beta1"}}};
    h.merge_patch(extra);
    return h;
  }

  void putConfig(const std::string& plural, const std::string& kind, const std::string& name,
                 const std::vector<json>& hooks) {
    const ObjectKey key{"admissionregistration.k8s.io", plural, "", name};
    json object = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", kind},
                   {"metadata", {{"name", name}}},
                   {"webhooks", hooks}};
    if (store_.get(key)) {
      store_.update(key, std::move(object));
    } else {
      store_.create(key, std::move(object));
    }
  }
  void mutating(const std::string& name, const std::vector<json>& hooks) {
    putConfig("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", name, hooks);
  }
  void validating(const std::string& name, const std::vector<json>& hooks) {
    putConfig("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", name, hooks);
  }

  AdmissionAttributes attributes(const std::string& operation, const std::string& ns, json object,
                                 json oldObject = nullptr, const std::string& subresource = "") const {
    AdmissionAttributes a;
    a.operation = operation;
    a.type = configMaps_.get();
    a.version = "v1";
    const json& named = object.is_null() ? oldObject : object;
    a.ref = {
        "",         "v1", "configmaps", ns, operation == "CREATE" ? "" : named["metadata"]["name"].get<std::string>(),
        subresource};
    a.object = std::move(object);
    a.oldObject = std::move(oldObject);
    return a;
  }
  AdmissionAttributes create(const std::string& ns, json object) const {
    return attributes("CREATE", ns, std::move(object));
  }

  mka::test::TempDir dir_;
  mka::test::TestCa ca_{"admission-test-ca"};
  std::shared_ptr<net::CertificateReloader> certificates_;
  std::unique_ptr<net::HttpServer> server_;
  int port_ = 0;

  ResourceRegistry registry_;
  ResourceTypePtr configMaps_ = registry_.find("", "v1", "configmaps");
  ObjectStore store_;
  ServiceResolver resolver_;
  AdmissionChain chain_{store_, resolver_};

  mutable std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
  std::map<std::string, Handler> handlers_;
  std::map<std::string, RawHandler> raw_;
  std::vector<Call> calls_;
};

TEST_F(AdmissionTest, HasWebhooksOnceAnyMutatingOrValidatingConfigurationExists) {
  EXPECT_FALSE(chain_.hasWebhooks());
  validating("checker", {hook("check.example.com", "/check")});
  EXPECT_TRUE(chain_.hasWebhooks());
  store_.remove({"admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "checker"});
  EXPECT_FALSE(chain_.hasWebhooks());
  mutating("labeller", {hook("label.example.com", "/label")});
  EXPECT_TRUE(chain_.hasWebhooks());
}

TEST_F(AdmissionTest, MutatingWebhookPatchIsAppliedAndTheReviewCarriesTheRequest) {
  on("/label", [](const json&) { return patchResponse(setLabel("mutated", "yes")); });
  mutating("labeller", {hook("label.example.com", "/label")});

  const json input = configMap("team-a", "cm-1", {{"app", "web"}});
  const json out = chain_.admit(create("team-a", input));

  EXPECT_EQ(labelOf(out, "mutated"), "yes");
  EXPECT_EQ(labelOf(out, "app"), "web");
  const auto seen = calls("/label");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].timeout, "10s");
  const json& r = seen[0].request;
  EXPECT_EQ(r["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(r["kind"], json({{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}}));
  EXPECT_EQ(r["resource"], json({{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}}));
  EXPECT_EQ(r["requestKind"], r["kind"]);
  EXPECT_EQ(r["requestResource"], r["resource"]);
  EXPECT_FALSE(r.contains("subResource"));
  EXPECT_EQ(r["operation"], "CREATE");
  EXPECT_EQ(r["namespace"], "team-a");
  EXPECT_EQ(r["name"], "cm-1");
  EXPECT_EQ(r["userInfo"]["username"], "system:admin");
  EXPECT_EQ(r["userInfo"]["groups"], json({"system:masters", "system:authenticated"}));
  EXPECT_EQ(r["object"], input);
  EXPECT_TRUE(r["oldObject"].is_null());
  EXPECT_EQ(r["dryRun"], false);
  EXPECT_EQ(r["options"], json({{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}}));
}

TEST_F(AdmissionTest, MutatingWebhooksRunInConfigurationNameOrderEachSeeingThePreviousPatch) {
  // Each appends its digit to the label "order".
  for (const std::string digit : {"1", "2", "3"}) {
    on("/append-" + digit, [digit](const json& request) {
      return patchResponse(setLabel("order", labelOf(request["object"], "order") + digit));
    });
  }
  // Created out of order: configurations run sorted by name, webhooks in their listed order.
  mutating("b-last", {hook("three.example.com", "/append-3")});
  mutating("a-first", {hook("one.example.com", "/append-1"), hook("two.example.com", "/append-2")});

  const json out = chain_.admit(create("team-a", configMap("team-a", "cm")));

  EXPECT_EQ(labelOf(out, "order"), "123");
  ASSERT_EQ(calls("/append-3").size(), 1u);
  EXPECT_EQ(labelOf(calls("/append-3")[0].request["object"], "order"), "12");
}

TEST_F(AdmissionTest, ValidatingDenialBecomesTheWebhooksStatus) {
  on("/deny", [](const json&) {
    return json{{"allowed", false},
                {"status", {{"code", 403}, {"reason", "Forbidden"}, {"message", "configmaps need a team label"}}}};
  });
  validating("policy", {hook("deny.example.com", "/deny")});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 403);
  EXPECT_EQ(e.reason(), "Forbidden");
  EXPECT_STREQ(e.what(), "admission webhook \"deny.example.com\" denied the request: configmaps need a team label");
}

TEST_F(AdmissionTest, DenialWithoutStatusIsABadRequestWithoutExplanation) {
  // kube-apiserver (webhookerrors.ToStatusErr) raises a code below 400 to 400 and keeps the
  // webhook's (empty) reason.
  on("/deny", [](const json&) { return json{{"allowed", false}}; });
  mutating("policy", {hook("deny.example.com", "/deny")});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 400);
  EXPECT_EQ(e.reason(), "");
  EXPECT_STREQ(e.what(), "admission webhook \"deny.example.com\" denied the request without explanation");
}

TEST_F(AdmissionTest, ValidatingWebhooksSeeTheMutatedObjectAndWarningsAreCollected) {
  on("/label", [](const json&) { return patchResponse(setLabel("team", "a")); });
  on("/check", [](const json& request) {
    return json{{"allowed", labelOf(request["object"], "team") == "a"}, {"warnings", {"field x is deprecated"}}};
  });
  validating("check", {hook("check.example.com", "/check")});
  mutating("label", {hook("label.example.com", "/label")});

  std::vector<std::string> warnings;
  const json out = chain_.admit(create("team-a", configMap("team-a", "cm")), &warnings);

  EXPECT_EQ(labelOf(out, "team"), "a");
  ASSERT_EQ(calls("/check").size(), 1u);
  EXPECT_EQ(labelOf(calls("/check")[0].request["object"], "team"), "a");
  EXPECT_EQ(warnings, std::vector<std::string>{"field x is deprecated"});
}

TEST_F(AdmissionTest, ValidatingWebhookMayNotPatch) {
  on("/patching", [](const json&) { return patchResponse(setLabel("x", "y")); });
  validating("v", {hook("patching.example.com", "/patching")});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 500);
  EXPECT_STREQ(e.what(),
               "Internal error occurred: failed calling webhook \"patching.example.com\": received invalid webhook "
               "response: validating webhook may not return response.patch");
}

TEST_F(AdmissionTest, OnlyWebhooksWhoseRulesMatchAreCalled) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"/update-only", rule({"UPDATE"}, {""}, {"v1"}, {"configmaps"})},
      {"/other-group", rule({"*"}, {"apps"}, {"v1"}, {"configmaps"})},
      {"/other-resource", rule({"*"}, {""}, {"v1"}, {"secrets"})},
      {"/cluster-scope", rule({"*"}, {""}, {"v1"}, {"configmaps"}, "Cluster")},
      {"/namespaced-scope", rule({"*"}, {""}, {"v1"}, {"configmaps"}, "Namespaced")},
      {"/status-only", rule({"*"}, {""}, {"v1"}, {"configmaps/status"})},
      {"/any-subresource", rule({"*"}, {""}, {"v1"}, {"configmaps/*"})},
      {"/star", rule({"*"}, {"*"}, {"*"}, {"*"})},
      {"/star-star", rule({"*"}, {"*"}, {"*"}, {"*/*"})},
  };
  std::vector<json> hooks;
  for (const auto& [path, r] : cases) {
    on(path, [](const json&) { return allow(); });
    hooks.push_back(hook(path.substr(1) + ".example.com", path, json::array({r})));
  }
  validating("rules", hooks);

  // "<plural>/*" takes the resource itself as well as each subresource.
  chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(calledPaths(), (std::set<std::string>{"/namespaced-scope", "/any-subresource", "/star", "/star-star"}));

  forgetCalls();
  const json cm = configMap("team-a", "cm");
  chain_.admit(attributes("UPDATE", "team-a", cm, cm, "status"));
  EXPECT_EQ(calledPaths(), (std::set<std::string>{"/status-only", "/any-subresource", "/star-star"}));
}

TEST_F(AdmissionTest, ScopeTellsClusterObjectsAndNamespacesFromNamespacedOnes) {
  on("/cluster", [](const json&) { return allow(); });
  on("/namespaced", [](const json&) { return allow(); });
  validating(
      "scopes",
      {hook("cluster.example.com", "/cluster", json::array({rule({"*"}, {"*"}, {"*"}, {"*"}, "Cluster")})),
       hook("namespaced.example.com", "/namespaced", json::array({rule({"*"}, {"*"}, {"*"}, {"*"}, "Namespaced")}))});

  AdmissionAttributes ns;
  ns.operation = "CREATE";
  const auto namespaces = registry_.find("", "v1", "namespaces");
  ns.type = namespaces.get();
  ns.version = "v1";
  ns.ref = {"", "v1", "namespaces", "", "", ""};
  ns.object = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-c"}}}};
  chain_.admit(ns);
  EXPECT_EQ(calledPaths(), std::set<std::string>{"/cluster"});

  forgetCalls();
  chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(calledPaths(), std::set<std::string>{"/namespaced"});
}

TEST_F(AdmissionTest, NamespaceSelectorReadsTheNamespacesLabels) {
  on("/team-a", [](const json&) { return allow(); });
  on("/by-name", [](const json&) { return allow(); });
  validating("ns",
             {hook("team-a.example.com", "/team-a", json::array({rule({"*"}, {"*"}, {"*"}, {"*"})}),
                   {{"namespaceSelector", {{"matchLabels", {{"team", "a"}}}}}}),
              hook("by-name.example.com", "/by-name", json::array({rule({"*"}, {"*"}, {"*"}, {"*"})}),
                   {{"namespaceSelector",
                     {{"matchExpressions",
                       {{{"key", "kubernetes.io/metadata.name"}, {"operator", "In"}, {"values", {"team-b"}}}}}}}})});

  chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(calledPaths(), std::set<std::string>{"/team-a"});

  forgetCalls();
  chain_.admit(create("team-b", configMap("team-b", "cm")));
  EXPECT_EQ(calledPaths(), std::set<std::string>{"/by-name"});

  // A namespace being created is matched by its own new labels.
  forgetCalls();
  const auto namespaces = registry_.find("", "v1", "namespaces");
  AdmissionAttributes ns;
  ns.operation = "CREATE";
  ns.type = namespaces.get();
  ns.version = "v1";
  ns.ref = {"", "v1", "namespaces", "", "", ""};
  ns.object = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "new"}, {"labels", {{"team", "a"}}}}}};
  chain_.admit(ns);
  EXPECT_EQ(calledPaths(), std::set<std::string>{"/team-a"});

  // Cluster-scoped objects are never exempted by a namespaceSelector.
  forgetCalls();
  const auto crds = registry_.find("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  AdmissionAttributes crd;
  crd.operation = "CREATE";
  crd.type = crds.get();
  crd.version = "v1";
  crd.ref = {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""};
  crd.object = {{"apiVersion", "apiextensions.k8s.io/v1"},
                {"kind", "CustomResourceDefinition"},
                {"metadata", {{"name", "widgets.example.com"}}}};
  chain_.admit(crd);
  EXPECT_EQ(calledPaths(), (std::set<std::string>{"/team-a", "/by-name"}));

  // A namespace that does not exist: kube-apiserver answers 404 for it.
  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("ghost", configMap("ghost", "cm"))); });
  EXPECT_EQ(e.code(), 404);
  EXPECT_STREQ(e.what(), "namespaces \"ghost\" not found");
}

TEST_F(AdmissionTest, ObjectSelectorMatchesTheNewOrTheOldObject) {
  on("/web", [](const json&) { return allow(); });
  validating("obj", {hook("web.example.com", "/web", json::array({configMapRule()}),
                          {{"objectSelector", {{"matchLabels", {{"app", "web"}}}}}})});

  chain_.admit(create("team-a", configMap("team-a", "db", {{"app", "db"}})));
  EXPECT_TRUE(calls("/web").empty());

  chain_.admit(create("team-a", configMap("team-a", "web", {{"app", "web"}})));
  EXPECT_EQ(calls("/web").size(), 1u);

  // The label is removed by the update: the old object still matches.
  chain_.admit(attributes("UPDATE", "team-a", configMap("team-a", "web", {{"app", "db"}}),
                          configMap("team-a", "web", {{"app", "web"}})));
  EXPECT_EQ(calls("/web").size(), 2u);

  chain_.admit(attributes("DELETE", "team-a", nullptr, configMap("team-a", "web", {{"app", "web"}})));
  EXPECT_EQ(calls("/web").size(), 3u);
}

TEST_F(AdmissionTest, WebhookDownFailsTheRequestUnderFailAndIsSkippedUnderIgnore) {
  const ClosedPort down;
  const std::string downUrl = url("/mutate", down.port());
  on("/label", [](const json&) { return patchResponse(setLabel("after", "ran")); });
  // failurePolicy unset: Fail, the default of admissionregistration.k8s.io/v1.
  mutating("a-down", {hook("down.example.com", "/mutate", json::array({configMapRule()}),
                           {{"clientConfig", {{"url", downUrl}}}})});
  mutating("b-after", {hook("after.example.com", "/label")});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 500);
  EXPECT_EQ(e.reason(), "InternalError");
  const std::string port = std::to_string(down.port());
  const std::string expected =
      "failed calling webhook \"down.example.com\": failed to call webhook: Post "
      "\"https://127.0.0.1:" +
      port + "/mutate?timeout=10s\": dial tcp 127.0.0.1:" + port + ": connect: connection refused";
  EXPECT_EQ(std::string(e.what()), "Internal error occurred: " + expected);
  EXPECT_EQ(e.status()["details"]["causes"][0]["message"], expected);
  EXPECT_TRUE(calls("/label").empty()) << "the chain stops at the failed webhook";

  mutating("a-down", {hook("down.example.com", "/mutate", json::array({configMapRule()}),
                           {{"clientConfig", {{"url", downUrl}}}, {"failurePolicy", "Ignore"}})});
  const json out = chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(labelOf(out, "after"), "ran") << "the next webhook still runs";
}

TEST_F(AdmissionTest, CertificateNotSignedByTheCaBundleFailsTheCall) {
  const mka::test::TestCa stranger{"stranger-ca"};
  on("/label", [](const json&) { return patchResponse(setLabel("x", "y")); });
  mutating("m", {hook("label.example.com", "/label", json::array({configMapRule()}),
                      {{"clientConfig", {{"caBundle", base64(stranger.certPem())}}}})});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 500);
  EXPECT_EQ(std::string(e.what()),
            "Internal error occurred: failed calling webhook \"label.example.com\": failed to "
            "call webhook: Post \"" +
                url("/label?timeout=10s") +
                "\": tls: failed to verify certificate: x509: certificate signed by unknown "
                "authority");
  EXPECT_TRUE(calls("/label").empty());

  mutating("m", {hook("label.example.com", "/label", json::array({configMapRule()}),
                      {{"clientConfig", {{"caBundle", base64("not a certificate")}}}})});
  const auto bad = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_NE(std::string(bad.what()).find("could not get REST client: unable to load root certificates"),
            std::string::npos)
      << bad.what();

  mutating("m", {hook("label.example.com", "/label", json::array({configMapRule()}),
                      {{"clientConfig", {{"caBundle", base64(stranger.certPem())}}}, {"failurePolicy", "Ignore"}})});
  const json out = chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(labelOf(out, "x"), "");
}

TEST_F(AdmissionTest, WebhookSlowerThanTimeoutSecondsFailsTheCall) {
  hang("/slow");
  mutating("slow", {hook("slow.example.com", "/slow", json::array({configMapRule()}), {{"timeoutSeconds", 1}})});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 500);
  EXPECT_EQ(std::string(e.what()),
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to "
            "call webhook: Post \"" +
                url("/slow?timeout=1s") + "\": context deadline exceeded");
  ASSERT_EQ(calls("/slow").size(), 1u);
  EXPECT_EQ(calls("/slow")[0].timeout, "1s");

  mutating("slow", {hook("slow.example.com", "/slow", json::array({configMapRule()}),
                         {{"timeoutSeconds", 1}, {"failurePolicy", "Ignore"}})});
  const json input = configMap("team-a", "cm");
  EXPECT_EQ(chain_.admit(create("team-a", input)), input);
}

TEST_F(AdmissionTest, ServiceReferenceGoesThroughTheResolverAndTheServiceNameIsVerified) {
  on("/label", [](const json&) { return patchResponse(setLabel("via", "service")); });
  const auto serviceHook = [&](const std::string& name, json port) {
    json service = {{"namespace", "webhooks"}, {"name", name}, {"path", "/label"}};
    if (!port.is_null()) service["port"] = port;
    json h = hook("svc.example.com", "/label");
    h["clientConfig"] = {{"service", service}, {"caBundle", base64(ca_.certPem())}};
    return h;
  };

  // Not exposed: the Service is not found.
  mutating("svc", {serviceHook("hooks", nullptr)});
  auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(std::string(e.what()),
            "Internal error occurred: failed calling webhook \"svc.example.com\": failed to "
            "call webhook: Post \"https://hooks.webhooks.svc:443/label?timeout=10s\": service "
            "\"hooks\" not found");

  // Exposed on the default port 443: called, its certificate valid for hooks.webhooks.svc.
  resolver_.expose("webhooks", "hooks", 443, "127.0.0.1", port_);
  EXPECT_EQ(labelOf(chain_.admit(create("team-a", configMap("team-a", "cm"))), "via"), "service");

  // Another port of the service is another endpoint.
  mutating("svc", {serviceHook("hooks", 8443)});
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); }).code(),
            500);
  resolver_.expose("webhooks", "hooks", 8443, "127.0.0.1", port_);
  EXPECT_EQ(labelOf(chain_.admit(create("team-a", configMap("team-a", "cm"))), "via"), "service");

  // The same server behind a service name its certificate does not carry: refused.
  resolver_.expose("webhooks", "impostor", 443, "127.0.0.1", port_);
  mutating("svc", {serviceHook("impostor", nullptr)});
  forgetCalls();
  e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(std::string(e.what()),
            "Internal error occurred: failed calling webhook \"svc.example.com\": failed to "
            "call webhook: Post \"https://impostor.webhooks.svc:443/label?timeout=10s\": tls: "
            "failed to verify certificate: x509: certificate is not valid for "
            "impostor.webhooks.svc");
  EXPECT_TRUE(calls("/label").empty());
}

TEST_F(AdmissionTest, DryRunCallsOnlyWebhooksWithoutSideEffects) {
  for (const std::string path : {"/none", "/none-on-dry-run", "/some", "/unset"}) {
    on(path, [](const json&) { return allow(); });
  }
  mutating("a", {hook("none.example.com", "/none"),
                 hook("none-on-dry-run.example.com", "/none-on-dry-run", json::array({configMapRule()}),
                      {{"sideEffects", "NoneOnDryRun"}})});
  auto dryRun = create("team-a", configMap("team-a", "cm"));
  dryRun.dryRun = true;
  chain_.admit(dryRun);
  EXPECT_EQ(calledPaths(), (std::set<std::string>{"/none", "/none-on-dry-run"}));
  for (const auto& c : calls("/none-on-dry-run")) {
    EXPECT_EQ(c.request["dryRun"], true);
    EXPECT_EQ(c.request["options"]["dryRun"], json::array({"All"}));
  }

  // A webhook with side effects refuses a dry run whatever its failurePolicy.
  validating("b", {hook("some.example.com", "/some", json::array({configMapRule()}),
                        {{"sideEffects", "Some"}, {"failurePolicy", "Ignore"}})});
  forgetCalls();
  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(dryRun); });
  EXPECT_EQ(e.code(), 400);
  EXPECT_EQ(e.reason(), "BadRequest");
  EXPECT_STREQ(e.what(), "admission webhook \"some.example.com\" does not support dry run");
  EXPECT_TRUE(calls("/some").empty());

  // ...and is called as usual when the request is not a dry run.
  chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(calls("/some").size(), 1u);

  // No sideEffects at all is a failed call, which failurePolicy governs.
  json unset = hook("unset.example.com", "/unset");
  unset.erase("sideEffects");
  validating("b", {unset});
  const auto nil = mka::test::thrownBy<ApiError>([&] { chain_.admit(dryRun); });
  EXPECT_STREQ(nil.what(),
               "Internal error occurred: failed calling webhook \"unset.example.com\": Webhook "
               "SideEffects is nil");
  unset["failurePolicy"] = "Ignore";
  validating("b", {unset});
  EXPECT_NO_THROW(chain_.admit(dryRun));
  EXPECT_TRUE(calls("/unset").empty());
}

TEST_F(AdmissionTest, MalformedAnswersAreFailedCalls) {
  on("/wrong-uid", [](const json&) { return json{{"uid", "not-the-request-uid"}, {"allowed", true}}; });
  onRaw("/boom", [](httplib::Response& res) {
    res.status = 500;
    res.set_content("boom", "text/plain");
  });
  onRaw("/not-json", [](httplib::Response& res) { res.set_content("{\"apiVersion\":", "application/json"); });

  const auto failure = [&](const std::string& path) {
    validating("bad", {hook("bad.example.com", path)});
    return std::string(
        mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); }).what());
  };
  const std::string prefix = "Internal error occurred: failed calling webhook \"bad.example.com\": ";

  const std::string wrongUid = failure("/wrong-uid");
  ASSERT_EQ(calls("/wrong-uid").size(), 1u);
  EXPECT_EQ(wrongUid, prefix + "received invalid webhook response: expected response.uid=\"" +
                          calls("/wrong-uid")[0].request["uid"].get<std::string>() + "\", got \"not-the-request-uid\"");
  EXPECT_EQ(failure("/boom"),
            prefix +
                "failed to call webhook: an error on the server (\"boom\") has prevented the request from "
                "succeeding");
  EXPECT_EQ(failure("/unknown-path"),
            prefix + "failed to call webhook: the server could not find the requested resource");
  EXPECT_EQ(failure("/not-json").rfind(prefix + "failed to call webhook: the webhook's answer is not a JSON object", 0),
            0u);
}

TEST_F(AdmissionTest, WebhookMustAcceptAdmissionReviewV1) {
  on("/old", [](const json&) { return allow(); });
  validating("old", {hook("old.example.com", "/old", json::array({configMapRule()}),
                          {{"admissionReviewVersions", {"v1beta1"}}})});

  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); });
  EXPECT_EQ(e.code(), 500);
  EXPECT_NE(std::string(e.what()).find("failed calling webhook \"old.example.com\": could not create admission "
                                       "objects: webhook does not accept known AdmissionReview versions"),
            std::string::npos)
      << e.what();
  EXPECT_TRUE(calls("/old").empty());
}

TEST_F(AdmissionTest, MatchPolicyEquivalentCallsWithAnotherServedVersionExactDoesNot) {
  ResourceType widgets;
  widgets.group = "example.com";
  widgets.kind = "Widget";
  widgets.plural = "widgets";
  for (const std::string version : {"v1", "v1beta1"}) {
    ResourceVersionInfo info;
    info.name = version;
    info.storage = version == "v1";
    widgets.versions.push_back(info);
  }
  on("/beta", [](const json& request) {
    EXPECT_EQ(request["object"]["apiVersion"], "example.com/v1beta1");
    return patchResponse(setLabel("seen", request["kind"]["version"].get<std::string>()));
  });
  const json betaRule = json::array({rule({"CREATE"}, {"example.com"}, {"v1beta1"}, {"widgets"})});
  mutating("beta", {hook("beta.example.com", "/beta", betaRule, {{"matchPolicy", "Exact"}})});

  AdmissionAttributes a;
  a.operation = "CREATE";
  a.type = &widgets;
  a.version = "v1";
  a.ref = {"example.com", "v1", "widgets", "team-a", "", ""};
  a.object = {{"apiVersion", "example.com/v1"},
              {"kind", "Widget"},
              {"metadata", {{"name", "w"}, {"namespace", "team-a"}, {"labels", json::object()}}}};
  EXPECT_EQ(chain_.admit(a), a.object);
  EXPECT_TRUE(calls("/beta").empty());

  mutating("beta", {hook("beta.example.com", "/beta", betaRule)});  // matchPolicy unset: Equivalent
  const json out = chain_.admit(a);
  const auto seen = calls("/beta");
  ASSERT_EQ(seen.size(), 1u);
  const json& r = seen[0].request;
  EXPECT_EQ(r["kind"], json({{"group", "example.com"}, {"version", "v1beta1"}, {"kind", "Widget"}}));
  EXPECT_EQ(r["resource"], json({{"group", "example.com"}, {"version", "v1beta1"}, {"resource", "widgets"}}));
  EXPECT_EQ(r["requestKind"], json({{"group", "example.com"}, {"version", "v1"}, {"kind", "Widget"}}));
  EXPECT_EQ(labelOf(out, "seen"), "v1beta1");
  EXPECT_EQ(out["apiVersion"], "example.com/v1") << "the patched object comes back at the request's version";
}

TEST_F(AdmissionTest, IfNeededWebhookIsReinvokedWhenALaterWebhookChangedTheObject) {
  on("/first", [](const json&) { return patchResponse(setLabel("first", "done")); });
  on("/second", [](const json&) { return patchResponse(setLabel("second", "done")); });
  const auto configure = [&](const std::string& policy) {
    mutating("a",
             {hook("first.example.com", "/first", json::array({configMapRule()}), {{"reinvocationPolicy", policy}})});
    mutating("b", {hook("second.example.com", "/second")});
  };

  configure("IfNeeded");
  const json out = chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(labelOf(out, "second"), "done");
  const auto first = calls("/first");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(labelOf(first[1].request["object"], "second"), "done");
  EXPECT_EQ(calls("/second").size(), 1u);

  forgetCalls();
  configure("Never");
  chain_.admit(create("team-a", configMap("team-a", "cm")));
  EXPECT_EQ(calls("/first").size(), 1u);
}

TEST_F(AdmissionTest, DeleteSendsTheOldObjectAndMayNotBePatched) {
  on("/record", [](const json&) { return allow(); });
  on("/patch", [](const json&) { return patchResponse(setLabel("x", "y")); });
  const json deleteRule = json::array({rule({"DELETE"}, {""}, {"v1"}, {"configmaps"})});
  validating("record", {hook("record.example.com", "/record", deleteRule)});

  const json old = configMap("team-a", "cm");
  EXPECT_TRUE(chain_.admit(attributes("DELETE", "team-a", nullptr, old)).is_null());
  const auto seen = calls("/record");
  ASSERT_EQ(seen.size(), 1u);
  const json& r = seen[0].request;
  EXPECT_EQ(r["operation"], "DELETE");
  EXPECT_EQ(r["name"], "cm");
  EXPECT_TRUE(r["object"].is_null());
  EXPECT_EQ(r["oldObject"], old);
  EXPECT_EQ(r["options"]["kind"], "DeleteOptions");

  mutating("patch", {hook("patch.example.com", "/patch", deleteRule, {{"failurePolicy", "Ignore"}})});
  const auto e = mka::test::thrownBy<ApiError>([&] { chain_.admit(attributes("DELETE", "team-a", nullptr, old)); });
  EXPECT_EQ(e.code(), 500);
  EXPECT_STREQ(e.what(),
               "Internal error occurred: admission webhook \"patch.example.com\" attempted to modify the "
               "object, which is not supported for this operation");
}

// matchConditions, as kube-apiserver evaluates them after the selectors: every condition true
// calls the webhook, any false one skips it; object, oldObject (null on CREATE) and request are
// the variables.
TEST_F(AdmissionTest, MatchConditionsDecideWhetherTheWebhookIsCalled) {
  on("/check", [](const json&) { return allow(); });
  const auto withConditions = [&](const json& conditions) {
    validating("checker", {hook("check.example.com", "/check", json::array({configMapRule()}),
                                {{"matchConditions", conditions}})});
  };
  withConditions(json::array(
      {{{"name", "labelled"}, {"expression", "has(object.metadata.labels) && 'app' in object.metadata.labels"}},
       {{"name", "not-dry-run"}, {"expression", "!request.dryRun"}}}));
  chain_.admit(create("team-a", configMap("team-a", "plain")));
  EXPECT_TRUE(calls("/check").empty()) << "the first condition is false";
  chain_.admit(create("team-a", configMap("team-a", "web", {{"app", "web"}})));
  EXPECT_EQ(calls("/check").size(), 1u) << "both conditions are true";

  // An update that leaves the label as it was is not sent; one that changes it is.
  forgetCalls();
  withConditions(json::array(
      {{{"name", "app-changed"},
        {"expression", "request.operation != 'UPDATE' || object.metadata.labels.app != oldObject.metadata.labels.app"}},
       // "namespace" is a reserved word the sandbox's CEL does not select with a dot.
       {{"name", "this-namespace"},
        {"expression", "request['namespace'] == 'team-a' && request.kind.kind == 'ConfigMap'"}},
       {{"name", "old-object-on-update-only"},
        {"expression", "(request.operation == 'CREATE') == (oldObject == null)"}}}));
  chain_.admit(attributes("UPDATE", "team-a", configMap("team-a", "web", {{"app", "web"}, {"x", "1"}}),
                          configMap("team-a", "web", {{"app", "web"}})));
  EXPECT_TRUE(calls("/check").empty());
  chain_.admit(attributes("UPDATE", "team-a", configMap("team-a", "web", {{"app", "db"}}),
                          configMap("team-a", "web", {{"app", "web"}})));
  EXPECT_EQ(calls("/check").size(), 1u);
  chain_.admit(create("team-a", configMap("team-a", "new", {{"app", "web"}})));
  EXPECT_EQ(calls("/check").size(), 2u) << "a CREATE has no old object";
  chain_.admit(create("team-b", configMap("team-b", "other", {{"app", "web"}})));
  EXPECT_EQ(calls("/check").size(), 2u) << "request.namespace is the request's";
}

// A condition that fails to evaluate (and none false): failurePolicy Fail refuses the request
// with kube-apiserver's 403, Ignore skips the webhook; the webhook is never called.
TEST_F(AdmissionTest, AMatchConditionThatFailsToEvaluateIsDecidedByFailurePolicy) {
  on("/check", [](const json&) { return allow(); });
  const std::string failing = "object.metadata.labels.missing == 'x'";
  const auto withConditions = [&](const json& conditions, const std::string& failurePolicy) {
    validating("checker", {hook("check.example.com", "/check", json::array({configMapRule()}),
                                {{"matchConditions", conditions}, {"failurePolicy", failurePolicy}})});
  };
  withConditions(
      json::array({{{"name", "true"}, {"expression", "true"}}, {{"name", "failing"}, {"expression", failing}}}),
      "Fail");
  const auto e = mka::test::thrownBy<ApiError>([&] {
    chain_.admit(create("team-a", configMap("team-a", "cm", {{"app", "web"}})));
  });
  EXPECT_EQ(e.code(), 403);
  EXPECT_EQ(e.reason(), "Forbidden");
  EXPECT_EQ(std::string(e.what()),
            "configmaps \"cm\" is forbidden: expression '" + failing + "' resulted in error: no such key: missing");
  EXPECT_EQ(e.status()["details"], json({{"name", "cm"}, {"kind", "configmaps"}}));

  withConditions(
      json::array({{{"name", "failing"}, {"expression", failing}}, {{"name", "false"}, {"expression", "false"}}}),
      "Fail");
  EXPECT_NO_THROW(chain_.admit(create("team-a", configMap("team-a", "cm", {{"app", "web"}}))))
      << "a false condition skips the webhook whatever the others do";

  withConditions(json::array({{{"name", "failing"}, {"expression", failing}}}), "Ignore");
  EXPECT_NO_THROW(chain_.admit(create("team-a", configMap("team-a", "cm", {{"app", "web"}}))));
  EXPECT_TRUE(calls("/check").empty());
}

TEST_F(AdmissionTest, WebhookConfigurationsAreNeverSentToWebhooks) {
  on("/all", [](const json&) { return json{{"allowed", false}}; });
  validating("all", {hook("all.example.com", "/all", json::array({rule({"*"}, {"*"}, {"*"}, {"*/*"})}))});

  const auto types = registry_.find("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations");
  AdmissionAttributes a;
  a.operation = "UPDATE";
  a.type = types.get();
  a.version = "v1";
  a.ref = {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "all", ""};
  a.object = *store_.get({"admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "all"});
  a.oldObject = a.object;
  EXPECT_NO_THROW(chain_.admit(a));
  EXPECT_TRUE(calls("/all").empty());

  // The same webhook does deny other objects.
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { chain_.admit(create("team-a", configMap("team-a", "cm"))); }).code(),
            400);
}

}  // namespace
}  // namespace mka::sandbox
