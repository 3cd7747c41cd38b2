// Each fault-injection knob seen from a client over HTTPS: injected failures (with match and
// Retry-After), latency that holds a request until lifted, dropped watches, 410 on the next
// watch, and a cluster that becomes unreachable and comes back on the same port.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "mka/sandbox/sandbox.h"
#include "sandbox_http.h"

namespace mka::sandbox {
namespace {

using namespace std::chrono_literals;
using mka::test::eventually;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FaultHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions options;
    options.name = "worker2";
    cluster_ = &sandbox_.addCluster(options);
    client_ = test::clientFor(*cluster_);
  }

  int createConfigMap(httplib::SSLClient& client, const std::string& name) {
    json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
    auto res = client.Post("/api/v1/namespaces/default/configmaps", cm.dump(), "application/json");
    return res ? res->status : -1;
  }

  Sandbox sandbox_;
  Cluster* cluster_ = nullptr;
  std::unique_ptr<httplib::SSLClient> client_;
};

TEST_F(FaultHttpTest, FailNextAnswersTheCodeWithAStatusNamingTheFault) {
  cluster_->faults().failNext(2, 503);
  for (int i = 0; i < 2; ++i) {
    auto res = client_->Get("/api/v1/namespaces/default/configmaps");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503);
    const json status = test::bodyOf(res);
    EXPECT_EQ(status["kind"], "Status");
    EXPECT_EQ(status["reason"], "ServiceUnavailable");
    EXPECT_EQ(status["code"], 503);
    EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("injected fault"));
    EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("list configmaps"));
  }
  auto res = client_->Get("/api/v1/namespaces/default/configmaps");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(cluster_->faults().injectedFailures(), 2u);
}

TEST_F(FaultHttpTest, FailNextHitsOnlyMatchingRequests) {
  cluster_->faults().failNext(1, 500, FaultMatch{"create", "configmaps", ""});
  EXPECT_EQ(test::statusOf(client_->Get("/api/v1/namespaces/default/configmaps")), 200) << "a list is not a create";
  EXPECT_EQ(test::statusOf(client_->Get("/api")), 200) << "discovery is never failed";
  EXPECT_EQ(createConfigMap(*client_, "first"), 500);
  EXPECT_EQ(createConfigMap(*client_, "first"), 201) << "the failed create stored nothing";
}

TEST_F(FaultHttpTest, FailNextHitsOnlyTheClientWhoseUserAgentMatches) {
  cluster_->faults().failNext(1, 503, FaultMatch{.userAgent = "replica-a_"});
  const char* path = "/api/v1/namespaces/default/configmaps";
  auto other = test::clientFor(*cluster_);
  EXPECT_EQ(test::statusOf(other->Get(path, {{"User-Agent", "multikueue-adapter/v1 (linux/amd64) replica-b_q9z4"}})),
            200);
  EXPECT_EQ(test::statusOf(client_->Get(path, {{"User-Agent", "multikueue-adapter/v1 (linux/amd64) replica-a_x7k2"}})),
            503);
  EXPECT_EQ(cluster_->faults().injectedFailures(), 1u);
}

TEST_F(FaultHttpTest, StatusWritesCanBeTargeted) {
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
  })");
  ASSERT_EQ(test::statusOf(client_->Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.dump(),
                                         "application/json")),
            201);
  json widget = {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w"}}}};
  ASSERT_EQ(test::statusOf(
                client_->Post("/apis/example.com/v1/namespaces/default/widgets", widget.dump(), "application/json")),
            201);
  cluster_->faults().failNext(1, 409, FaultMatch{"patch", "widgets", "status"});
  const char* path = "/apis/example.com/v1/namespaces/default/widgets/w";
  EXPECT_EQ(
      test::statusOf(client_->Patch(path, R"({"metadata":{"labels":{"a":"b"}}})", "application/merge-patch+json")),
      200);
  auto res = client_->Patch((std::string(path) + "/status").c_str(), R"({"status":{"ok":true}})",
                            "application/merge-patch+json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 409);
  EXPECT_EQ(test::bodyOf(res)["reason"], "Conflict");
}

TEST_F(FaultHttpTest, TooManyRequestsCarriesRetryAfter) {
  cluster_->faults().failNext(1, 429, {}, 3);
  auto res = client_->Get("/api/v1/namespaces");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "3");
  const json status = test::bodyOf(res);
  EXPECT_EQ(status["reason"], "TooManyRequests");
  EXPECT_EQ(status["details"]["retryAfterSeconds"], 3);
}

TEST_F(FaultHttpTest, LatencyHoldsRequestsUntilLifted) {
  cluster_->faults().setLatency(1h);
  auto pending = std::async(std::launch::async, [this] {
    auto client = test::clientFor(*cluster_);
    auto res = client->Get("/api/v1/namespaces/default");
    return res ? res->status : -1;
  });
  ASSERT_TRUE(eventually([&] { return cluster_->faults().delayedRequests() == 1; }));
  EXPECT_EQ(pending.wait_for(0s), std::future_status::timeout);
  cluster_->faults().setLatency(0ms);
  ASSERT_EQ(pending.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(pending.get(), 200);
}

TEST_F(FaultHttpTest, DroppingAllWatchesEndsEveryStream) {
  test::WatchReader configMaps(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true");
  test::WatchReader namespaces(*cluster_, "/api/v1/namespaces?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 2; }));
  cluster_->store().closeAllWatches();
  EXPECT_TRUE(eventually([&] { return configMaps.ended() && namespaces.ended(); }));
  EXPECT_TRUE(eventually([&] { return cluster_->openWatches() == 0; }));
  // The cluster serves on; a new watch works.
  test::WatchReader again(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  ASSERT_EQ(createConfigMap(*client_, "after-drop"), 201);
  EXPECT_TRUE(eventually([&] { return again.saw("ADDED", "after-drop"); }));
}

TEST_F(FaultHttpTest, GoneOnNextWatchAnswersOneWatchWith410) {
  cluster_->faults().goneOnNextWatch();
  EXPECT_EQ(test::statusOf(client_->Get("/api/v1/namespaces/default/configmaps")), 200) << "lists are not affected";
  {
    test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1");
    ASSERT_TRUE(eventually([&] { return watch.ended(); }));
    EXPECT_EQ(watch.status(), 200);
    ASSERT_THAT(watch.types(), ElementsAre("ERROR"));
    const json status = watch.events()[0]["object"];
    EXPECT_EQ(status["code"], 410);
    EXPECT_EQ(status["reason"], "Expired");
    EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("too old resource version"));
    EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("injected fault"));
  }
  test::WatchReader next(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  EXPECT_FALSE(next.ended());
}

TEST_F(FaultHttpTest, UnreachableAndBackOnTheSamePort) {
  const int port = cluster_->port();
  ASSERT_EQ(createConfigMap(*client_, "kept"), 201);
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));

  cluster_->setUnreachable(true);
  EXPECT_TRUE(cluster_->unreachable());
  EXPECT_TRUE(eventually([&] { return watch.ended(); }));
  EXPECT_EQ(cluster_->openConnections(), 0u);
  auto fresh = test::clientFor(*cluster_);
  auto res = fresh->Get("/api/v1/namespaces");
  EXPECT_FALSE(res) << "connection refused while unreachable";
  EXPECT_EQ(res.error(), httplib::Error::Connection);

  cluster_->setUnreachable(false);
  EXPECT_EQ(cluster_->port(), port);
  res = fresh->Get("/api/v1/namespaces/default/configmaps/kept");  // same CA, same token, same data
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // A client whose keep-alive connection was dropped reconnects: httplib fails the request
  // that finds the connection closed (Go's transport retries it), the next one reconnects.
  res = client_->Get("/api/v1/namespaces/default/configmaps/kept");
  if (!res) res = client_->Get("/api/v1/namespaces/default/configmaps/kept");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(FaultHttpTest, UnreachableReleasesDelayedRequests) {
  cluster_->faults().setLatency(1h);
  auto pending = std::async(std::launch::async, [this] {
    auto client = test::clientFor(*cluster_);
    auto res = client->Get("/api/v1/namespaces");
    return res ? res->status : -1;
  });
  ASSERT_TRUE(eventually([&] { return cluster_->faults().delayedRequests() == 1; }));
  cluster_->setUnreachable(true);
  ASSERT_EQ(pending.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(pending.get(), 503);
  cluster_->faults().clear();
  cluster_->setUnreachable(false);
  EXPECT_EQ(test::statusOf(client_->Get("/api/v1/namespaces")), 200);
}

TEST_F(FaultHttpTest, ClearDisarmsEverything) {
  cluster_->faults().failNext(3, 500);
  cluster_->faults().goneOnNextWatch();
  cluster_->faults().clear();
  EXPECT_EQ(test::statusOf(client_->Get("/api/v1/namespaces")), 200);
  test::WatchReader watch(*cluster_, "/api/v1/namespaces?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  EXPECT_FALSE(watch.ended());
}

}  // namespace
}  // namespace mka::sandbox
