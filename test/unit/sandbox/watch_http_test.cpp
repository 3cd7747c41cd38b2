// Watches over real HTTPS: the event stream, bookmarks, 410 after history trimming,
// timeoutSeconds, clients that leave, gzip-accepting clients, and a hundred open watches that
// must not starve ordinary requests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "mka/sandbox/sandbox.h"
#include "sandbox_http.h"
#include "support/sanitizers.h"
#include "support/tls_record_proxy.h"

namespace mka::sandbox {
namespace {

using namespace std::chrono_literals;
using mka::test::eventually;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class WatchHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions options;
    options.name = "manager";
    options.bookmarkInterval = 100ms;
    options.crdFiles = {std::string(MKA_FIXTURES_DIR) + "/crds/tekton.dev_pipelineruns.yaml"};
    cluster_ = &sandbox_.addCluster(options);
    client_ = test::clientFor(*cluster_);
  }

  json create(const std::string& name, json labels = json::object()) {
    json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}, {"labels", labels}}}};
    auto res = client_->Post("/api/v1/namespaces/default/configmaps", cm.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 201);
    return res ? test::bodyOf(res) : json();
  }
  std::string currentRv() {
    auto res = client_->Get("/api/v1/namespaces/default/configmaps");
    return test::bodyOf(res)["metadata"]["resourceVersion"];
  }

  Sandbox sandbox_;
  Cluster* cluster_ = nullptr;
  std::unique_ptr<httplib::SSLClient> client_;
};

TEST_F(WatchHttpTest, StreamsAddedModifiedDeleted) {
  const std::string rv = currentRv();
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv);
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));

  create("a");
  auto res = client_->Patch("/api/v1/namespaces/default/configmaps/a", R"({"data":{"k":"v"}})",
                            "application/merge-patch+json");
  ASSERT_EQ(res->status, 200);
  ASSERT_EQ(test::statusOf(client_->Delete("/api/v1/namespaces/default/configmaps/a")), 200);

  ASSERT_TRUE(eventually([&] { return watch.saw("DELETED", "a"); }));
  EXPECT_THAT(watch.types(), ElementsAre("ADDED", "MODIFIED", "DELETED"));
  EXPECT_EQ(watch.status(), 200);
  EXPECT_THAT(watch.contentType(), HasSubstr("application/json"));
  const auto events = watch.events();
  EXPECT_EQ(events[0]["object"]["kind"], "ConfigMap");
  EXPECT_EQ(events[0]["object"]["apiVersion"], "v1");
  EXPECT_EQ(events[1]["object"]["data"]["k"], "v");
  EXPECT_FALSE(watch.ended());
}

TEST_F(WatchHttpTest, WithoutAResourceVersionExistingObjectsComeFirst) {
  create("before");
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=1");
  ASSERT_TRUE(eventually([&] { return watch.saw("ADDED", "before"); }));
  create("after");
  ASSERT_TRUE(eventually([&] { return watch.saw("ADDED", "after"); }));
}

TEST_F(WatchHttpTest, SelectorsAndLegacyWatchPaths) {
  const std::string rv = currentRv();
  test::WatchReader selected(*cluster_,
                             "/api/v1/watch/namespaces/default/configmaps?labelSelector=team%3Dblue&"
                             "resourceVersion=" +
                                 rv);
  test::WatchReader named(*cluster_, "/api/v1/namespaces/default/configmaps/two?watch=true&resourceVersion=" + rv);
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 2; }));
  create("one", {{"team", "blue"}});
  create("two", {{"team", "red"}});
  create("three", {{"team", "blue"}});
  ASSERT_TRUE(eventually([&] { return selected.saw("ADDED", "three") && named.saw("ADDED", "two"); }));
  EXPECT_THAT(selected.types(), ElementsAre("ADDED", "ADDED"));
  EXPECT_FALSE(selected.saw("ADDED", "two"));
  EXPECT_EQ(named.events().size(), 1u);
}

TEST_F(WatchHttpTest, BookmarksWhenAllowed) {
  const std::string rv = currentRv();
  test::WatchReader watch(*cluster_,
                          "/apis/tekton.dev/v1/namespaces/default/pipelineruns?watch=true&allowWatchBookmarks=true&"
                          "resourceVersion=" +
                              rv);
  ASSERT_TRUE(eventually([&] { return watch.saw("BOOKMARK"); }));
  for (const auto& e : watch.events()) {
    if (e["type"] != "BOOKMARK") continue;
    EXPECT_EQ(e["object"]["kind"], "PipelineRun");
    EXPECT_EQ(e["object"]["apiVersion"], "tekton.dev/v1");
    EXPECT_FALSE(e["object"]["metadata"]["resourceVersion"].get<std::string>().empty());
  }
}

// kube-apiserver's watch cache sends a bookmark 2 s before a watch's deadline, however long the
// periodic interval, so the client resumes from a recent revision.
TEST(WatchDeadline, ABookmarkArrivesBeforeTheWatchEnds) {
  Sandbox sandbox;
  ClusterOptions options;
  options.name = "c";
  options.bookmarkInterval = std::chrono::minutes{10};
  Cluster& cluster = sandbox.addCluster(options);
  test::WatchReader watch(cluster,
                          "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=3");
  ASSERT_TRUE(eventually([&] { return watch.ended(); }));
  EXPECT_THAT(watch.types(), ElementsAre("BOOKMARK"));
}

TEST_F(WatchHttpTest, NoBookmarksUnlessAsked) {
  const std::string rv = currentRv();
  test::WatchReader plain(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv);
  test::WatchReader bookmarked(
      *cluster_, "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=" + rv);
  // Once the second watch has had a few bookmarks, the first had the same time to get one.
  ASSERT_TRUE(eventually([&] {
    const auto types = bookmarked.types();
    return std::count(types.begin(), types.end(), "BOOKMARK") >= 3;
  }));
  create("x");
  ASSERT_TRUE(eventually([&] { return plain.saw("ADDED", "x"); }));
  EXPECT_THAT(plain.types(), ElementsAre("ADDED"));
}

TEST_F(WatchHttpTest, SendInitialEventsEndsWithAnAnnotatedBookmark) {
  create("a");
  create("b");
  test::WatchReader watch(*cluster_,
                          "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&"
                          "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true");
  ASSERT_TRUE(eventually([&] { return watch.events().size() >= 3; }));
  const auto events = watch.events();
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "a");
  EXPECT_EQ(events[1]["object"]["metadata"]["name"], "b");
  EXPECT_EQ(events[2]["type"], "BOOKMARK");
  EXPECT_EQ(events[2]["object"]["kind"], "ConfigMap");
  EXPECT_EQ(events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  EXPECT_EQ(events[2]["object"]["metadata"]["resourceVersion"], currentRv());
  create("c");
  EXPECT_TRUE(eventually([&] { return watch.saw("ADDED", "c"); }));
}

TEST_F(WatchHttpTest, SendInitialEventsNeedsNotOlderThanAndBookmarks) {
  auto res = client_->Get("/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 422);
  const json status = test::bodyOf(res);
  EXPECT_EQ(status["reason"], "Invalid");
  EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("resourceVersionMatch: Forbidden"));
  EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("allowWatchBookmarks: Forbidden"));
}

TEST_F(WatchHttpTest, TooOldResourceVersionAfterCompactionIsA410ErrorEvent) {
  const json first = create("first");
  create("second");
  cluster_->store().compact();
  const std::string old = first["metadata"]["resourceVersion"];
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + old);
  ASSERT_TRUE(eventually([&] { return watch.ended(); }));
  EXPECT_EQ(watch.status(), 200);  // as kube-apiserver: the error is an event
  ASSERT_THAT(watch.types(), ElementsAre("ERROR"));
  const json status = watch.events()[0]["object"];
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["code"], 410);
  EXPECT_EQ(status["reason"], "Expired");
  EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("too old resource version: " + old));
  EXPECT_TRUE(eventually([&] { return cluster_->openWatches() == 0; }));
}

TEST_F(WatchHttpTest, TimeoutSecondsEndsTheStream) {
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1");
  ASSERT_TRUE(eventually([&] { return watch.ended(); }));
  EXPECT_EQ(watch.status(), 200);
  EXPECT_TRUE(eventually([&] { return cluster_->openWatches() == 0; }));
}

TEST_F(WatchHttpTest, AClientThatLeavesEndsItsWatch) {
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  watch.cancel();
  EXPECT_TRUE(eventually([&] { return cluster_->openWatches() == 0; }));
}

// Events already waiting for a watch leave together in one chunk (one write, one TLS record)
// rather than one write each: under load the server and its clients make fewer writes, reads
// and wake-ups. Here 20 events wait in the history when the watch starts.
TEST_F(WatchHttpTest, EventsAlreadyWaitingLeaveTogetherInOneChunk) {
  const std::string rv = currentRv();
  for (int i = 0; i < 20; ++i) create("waiting-" + std::to_string(i));
  mka::test::TlsRecordProxy proxy(cluster_->port());
  httplib::SSLClient client("127.0.0.1", proxy.port());
  client.set_ca_cert_store(net::certificateStore(cluster_->caPem()).release());
  client.enable_server_certificate_verification(true);
  client.set_keep_alive(true);
  client.set_bearer_token_auth(cluster_->token());
  ASSERT_EQ(test::statusOf(client.Get("/api/v1/namespaces/default/configmaps")), 200);  // handshake and tickets

  const auto before = proxy.recordsToClient();
  std::string received;
  int events = 0;
  client.Get("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv,
             [&](const char* data, std::size_t size) {
               received.append(data, size);
               events = static_cast<int>(std::count(received.begin(), received.end(), '\n'));
               return events < 20;
             });
  ASSERT_EQ(events, 20);
  // The answer's headers, then the 20 events (1 chunk; they were 20).
  EXPECT_LE(proxy.recordsToClient() - before, 2u);
  EXPECT_THAT(received, HasSubstr("waiting-19"));
}

TEST_F(WatchHttpTest, EventsReachGzipAcceptingClientsAtOnce) {
  // Go clients send Accept-Encoding: gzip; a compressed stream would hold events back.
  const std::string rv = currentRv();
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv,
                          {{"Accept-Encoding", "gzip, deflate"}});
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  create("zipped");
  ASSERT_TRUE(eventually([&] { return watch.saw("ADDED", "zipped"); }));
  EXPECT_EQ(watch.contentEncoding(), "");
  EXPECT_FALSE(watch.ended());
}

TEST_F(WatchHttpTest, WatchTablesForKubectlGetW) {
  const std::string rv = currentRv();
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv,
                          {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  create("tabled");
  ASSERT_TRUE(eventually([&] { return !watch.events().empty(); }));
  const json event = watch.events()[0];
  EXPECT_EQ(event["type"], "ADDED");
  EXPECT_EQ(event["object"]["kind"], "Table");
  EXPECT_EQ(event["object"]["rows"][0]["cells"][0], "tabled");
}

TEST_F(WatchHttpTest, MetadataOnlyWatchesSendPartialObjectMetadata) {
  const std::string rv = currentRv();
  test::WatchReader watch(
      *cluster_, "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=" + rv,
      {{"Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"}});
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  create("slim");
  ASSERT_TRUE(eventually([&] { return watch.saw("ADDED", "slim"); }));
  const json event = watch.events()[0];
  EXPECT_EQ(event["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(event["object"]["apiVersion"], "meta.k8s.io/v1");
  EXPECT_FALSE(event["object"].contains("data"));
  EXPECT_FALSE(event["object"]["metadata"]["resourceVersion"].get<std::string>().empty());
  // Bookmarks are of the events' kind.
  ASSERT_TRUE(eventually([&] { return watch.saw("BOOKMARK"); }));
  for (const auto& e : watch.events()) {
    if (e["type"] == "BOOKMARK") {
      EXPECT_EQ(e["object"]["kind"], "PartialObjectMetadata");
    }
  }

  // Initial events too, and their closing bookmark.
  test::WatchReader initial(*cluster_,
                            "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&"
                            "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
                            {{"Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"}});
  ASSERT_TRUE(eventually([&] { return initial.events().size() >= 2; }));
  const auto events = initial.events();
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "slim");
  EXPECT_EQ(events[1]["type"], "BOOKMARK");
  EXPECT_EQ(events[1]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");

  // Not a watch of lists.
  auto res = client_->Get("/api/v1/namespaces/default/configmaps?watch=true",
                          {{"Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 406);
}

TEST_F(WatchHttpTest, AHundredOpenWatchesDoNotStarveOrdinaryRequests) {
  if (mka::test::kUnderThreadSanitizer)
    GTEST_SKIP() << "a hundred watches: minutes under TSan, and the threads of one watch, which the other tests run";
  std::vector<std::unique_ptr<test::WatchReader>> watches;
  for (int i = 0; i < 100; ++i) {
    watches.push_back(
        std::make_unique<test::WatchReader>(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true"));
  }
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 100; }, 60s));
  auto res = client_->Get("/api/v1/namespaces/default/configmaps");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  create("seen-by-all");
  EXPECT_TRUE(eventually(
      [&] {
        return std::all_of(watches.begin(), watches.end(),
                           [](const auto& w) { return w->saw("ADDED", "seen-by-all"); });
      },
      60s));
  sandbox_.stop();  // ends every stream, so the readers finish
  EXPECT_TRUE(eventually(
      [&] { return std::all_of(watches.begin(), watches.end(), [](const auto& w) { return w->ended(); }); }));
}

TEST_F(WatchHttpTest, StoppingTheClusterEndsOpenWatches) {
  test::WatchReader watch(*cluster_, "/api/v1/namespaces/default/configmaps?watch=true");
  ASSERT_TRUE(eventually([&] { return cluster_->openWatches() == 1; }));
  sandbox_.stop();
  EXPECT_TRUE(eventually([&] { return watch.ended(); }));
}

}  // namespace
}  // namespace mka::sandbox
