// The cluster registry against sandbox clusters (KUEUE-MULTIKUEUE.md §3, scenarios 77-100).
// Time, backoff windows and establishment timeouts run on a FakeClock; what happens on the
// informer threads is awaited with eventually().
#include "mka/multikueue/cluster_registry.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/common/errors.h"
#include "mka/sandbox/api_error.h"
#include "sandbox_fixture.h"
#include "support/eventually.h"
#include "support/table_test.h"
#include "support/temp_dir.h"
#include "support/thrown.h"
#include "support/yaml_file.h"

namespace mka::multikueue {

using controller::Result;
namespace {

namespace fs = std::filesystem;
using fixture::kPipelineRun;
using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ClusterRegistryTest : public fixture::MultiKueueSandbox {
 protected:
  // The message of the error reconcile() throws ("" when it does not throw).
  std::string reconcileError(const std::string& name) {
    return mka::test::messageOf<Error>([&] { registry->reconcile(name); });
  }
  std::string suffix(int attempts, Clock::TimePoint next) {
    return "; connection attempts: " + std::to_string(attempts) + ", next connection attempt: " + toRfc3339(next);
  }
  // A kubeconfig whose client cannot be built (plain http), different per `port`.
  std::string unbuildable(int port = 1) {
    return fixture::kubeconfigFor("http://127.0.0.1:" + std::to_string(port), worker1.caPem(), worker1.token());
  }
  void createPipelineRun(sandbox::Cluster& cluster, const std::string& name, const json& labels,
                         const json& annotations = json::object()) {
    cluster.api().create({"tekton.dev", "v1", "pipelineruns", "team", "", ""},
                         {{"apiVersion", "tekton.dev/v1"},
                          {"kind", "PipelineRun"},
                          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
                          {"spec", json::object()}});
  }
  void createWorkload(sandbox::Cluster& cluster, const std::string& name, const json& labels) {
    cluster.api().create(
        {"kueue.x-k8s.io", "v1beta2", "workloads", "team", "", ""},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "Workload"},
         {"metadata", {{"name", name}, {"labels", labels}}},
         {"spec",
          {{"podSets",
            {{{"name", "main"}, {"count", 1}, {"template", {{"spec", {{"containers", json::array()}}}}}}}}}}});
  }

  // Mode 2 (dispatcher): MultiKueueCluster status is not ours; connection state goes to Events.
  ClusterRegistryOptions dispatcherMode() {
    auto o = registryOptions();
    o.writeClusterStatus = false;
    return o;
  }

  test::TempDir dir{"mka-registry"};
};

TEST(ReconnectBackoff, DoublesFromFiveSecondsAndSaturatesAfterTheSeventhFailure) {
  const std::vector<int> expected = {0, 5, 10, 20, 40, 80, 160, 320, 320, 320};
  for (int n = 0; n < static_cast<int>(expected.size()); ++n) {
    SCOPED_TRACE(n);
    EXPECT_EQ(reconnectBackoff(n), seconds{expected[n]});
  }
  EXPECT_EQ(reconnectBackoff(-1), seconds{0});
}

// Scenario 77.
TEST_F(ClusterRegistryTest, ConnectsWithASecretKubeconfigAndReportsActive) {
  createSecretCluster("worker1", worker1.kubeconfig());
  auto& r = startRegistry(registryOptions());
  EXPECT_EQ(r.disconnectedSince("worker1"), clock.now()) << "never seen: lost since the registry was created";

  const auto first = r.reconcile("worker1");
  EXPECT_GT(first.requeueAfter, seconds{0}) << "an attempt in flight is looked at again";
  EXPECT_LE(first.requeueAfter, seconds{1});
  ASSERT_TRUE(test::eventually([&] { return r.connected("worker1") != nullptr && recorder.last("worker1") == true; }));
  EXPECT_EQ(r.reconcile("worker1"), Result::done());

  const auto active = clusterActive("worker1");
  EXPECT_EQ(active["status"], "True");
  EXPECT_EQ(active["reason"], "Active");
  EXPECT_EQ(active["message"], "Connected");
  EXPECT_EQ(active["observedGeneration"], 1);
  EXPECT_EQ(active["lastTransitionTime"], toRfc3339(clock.now()));
  EXPECT_EQ(recorder.connections(), (std::vector<std::pair<std::string, bool>>{{"worker1", true}}));
  EXPECT_EQ(r.clusterNames(), std::vector<std::string>{"worker1"});
  EXPECT_EQ(r.clustersUsingSecret("worker1"), std::vector<std::string>{"worker1"});
  EXPECT_TRUE(r.clustersUsingSecret("other").empty());
  EXPECT_EQ(r.disconnectedSince("worker1"), std::nullopt);
  EXPECT_EQ(r.failedAttempts("worker1"), 0);
  EXPECT_EQ(r.connected("worker1")->name(), "worker1");

  // Nothing changed: nothing written.
  const auto version = clusterObject("worker1")["metadata"]["resourceVersion"];
  clock.advance(minutes{1});
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  EXPECT_EQ(clusterObject("worker1")["metadata"]["resourceVersion"], version);
}

// A namespace a create found missing is watched, not retried; the Workloads
// waiting for it come back through onRemoteEvent when it appears, each once.
TEST_F(ClusterRegistryTest, AMissingNamespaceIsWatchedAndItsWorkloadsComeBackWhenItAppears) {
  createSecretCluster("worker1", worker1.kubeconfig());
  auto& r = startRegistry(registryOptions());
  r.reconcile("worker1");
  ASSERT_TRUE(test::eventually([&] { return r.connected("worker1") != nullptr; }));
  const auto remote = r.connected("worker1");
  EXPECT_FALSE(remote->lacksNamespace("team-x")) << "unknown until the watch has listed the namespaces";
  remote->namespaceMissing("team-x", "team-x/wl-1");
  remote->namespaceMissing("team-x", "team-x/wl-2");
  ASSERT_TRUE(test::eventually([&] { return remote->lacksNamespace("team-x"); }));
  EXPECT_FALSE(remote->lacksNamespace("default"));
  EXPECT_EQ(recorder.events("worker1", "team-x/wl-1"), 0);

  worker1.api().create(fixture::kNamespaces, {{"metadata", {{"name", "team-x"}}}});
  ASSERT_TRUE(test::eventually([&] {
    return recorder.events("worker1", "team-x/wl-1") == 1 && recorder.events("worker1", "team-x/wl-2") == 1;
  }));
  EXPECT_FALSE(remote->lacksNamespace("team-x"));
  // Asked about once it is there (the caller read lacksNamespace before it appeared): told at once.
  remote->namespaceMissing("team-x", "team-x/wl-3");
  EXPECT_EQ(recorder.events("worker1", "team-x/wl-3"), 1);
  EXPECT_EQ(recorder.events("worker1", "team-x/wl-1"), 1) << "each waiter is told once";
}

// Scenarios 79, 82, 89 and 92: a client that cannot be built; backoff windows.
TEST_F(ClusterRegistryTest, FailedAttemptsBackOffAndReconcilesInsideTheWindowNeitherTryNorCount) {
  createSecretCluster("worker1", unbuildable());
  auto& r = startRegistry(registryOptions());
  const auto start = clock.now();

  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{5}));
  EXPECT_EQ(r.failedAttempts("worker1"), 1);
  auto active = clusterActive("worker1");
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], "ClientConnectionFailed");
  const std::string message = active["message"];
  EXPECT_THAT(message, HasSubstr("is not an https:// URL"));
  const auto error = message.substr(0, message.find("; connection attempts"));
  EXPECT_EQ(message, error + suffix(1, start + seconds{5}));

  // Inside the window: no attempt, nothing counted.
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{5}));
  clock.advance(seconds{2});
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{3}));
  EXPECT_EQ(r.failedAttempts("worker1"), 1);
  clock.advance(seconds{3});
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{10}));
  EXPECT_EQ(r.failedAttempts("worker1"), 2);
  clock.advance(seconds{10});
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{20}));
  EXPECT_EQ(r.failedAttempts("worker1"), 3);
  EXPECT_EQ(clusterActive("worker1")["message"], error + suffix(3, clock.now() + seconds{20}));

  // The steps saturate at 320 s after the 7th failure.
  for (int n = 4; n <= 9; ++n) {
    clock.advance(reconnectBackoff(n - 1));
    EXPECT_EQ(r.reconcile("worker1"), Result::after(reconnectBackoff(n)));
  }
  EXPECT_EQ(r.failedAttempts("worker1"), 9);
  EXPECT_EQ(reconnectBackoff(9), seconds{320});
  EXPECT_EQ(r.connected("worker1"), nullptr);
}

// Scenario 79 with a kubeconfig that passes the security checks but makes no client; one that
// does not parse is refused by the checks (§3.2 rule 1).
TEST_F(ClusterRegistryTest, AKubeconfigThatMakesNoClientIsAConnectionFailure) {
  createSecretCluster("bad-ca", fixture::kubeconfigFor(worker1.server(), "not a certificate", worker1.token()));
  createSecretCluster("not-yaml", "clusters: [");
  auto& r = startRegistry(registryOptions());
  EXPECT_EQ(r.reconcile("bad-ca"), Result::after(seconds{5}));
  auto active = clusterActive("bad-ca");
  EXPECT_EQ(active["reason"], "ClientConnectionFailed");
  EXPECT_THAT(active["message"].get<std::string>(), HasSubstr("certificate-authority-data holds no PEM certificate"));
  EXPECT_THAT(active["message"].get<std::string>(), ::testing::EndsWith(suffix(1, clock.now() + seconds{5})));

  EXPECT_THAT(
      reconcileError("not-yaml"),
      StartsWith(
          "failed to load client config, reason: InsecureKubeConfig, error: failed to parse kubeconfig(apiconfig): "));
  active = clusterActive("not-yaml");
  EXPECT_EQ(active["reason"], "InsecureKubeConfig");
  EXPECT_THAT(active["message"].get<std::string>(),
              StartsWith("load client config failed: failed to parse kubeconfig(apiconfig): "));
}

// Kueue refuses a worker that lacks one configured kind's CRD for every kind (kueue#15157); the
// registry keeps it for the kinds it serves, says which it lacks, and takes the kind when its
// CRD appears, on the same connection.
TEST_F(ClusterRegistryTest, AWorkerWithoutAKindsCrdServesTheOthersAndTakesItWhenItAppears) {
  auto& noTekton =
      sandbox.addCluster({.name = "no-tekton", .crdFiles = {fixture::kCrds / "kueue.x-k8s.io_workloads.yaml"}});
  createSecretCluster("no-tekton", noTekton.kubeconfig());
  auto& r = startRegistry(registryOptions());
  ASSERT_TRUE(connect("no-tekton"));
  const auto remote = r.connected("no-tekton");
  EXPECT_FALSE(remote->serves(fixture::kPipelineRun));
  EXPECT_EQ(clusterActive("no-tekton")["status"], "True");
  const auto eventWith = [&](const std::string& reason) -> std::string {
    for (const auto& e : clusterEventsAbout("no-tekton"))
      if (e.value("reason", "") == reason) return e.value("type", "") + ": " + e.value("message", "");
    return "";
  };
  ASSERT_TRUE(test::eventually([&] { return !eventWith("KindsNotServed").empty(); }));
  EXPECT_EQ(eventWith("KindsNotServed"),
            "Warning: Worker no-tekton does not serve PipelineRun.v1.tekton.dev (no CRD there): their Workloads go "
            "to other workers; install the CRD on no-tekton to send them there too");

  noTekton.api().create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
                        test::readYamlFile(fixture::kCrds / "tekton.dev_pipelineruns.yaml"));
  ASSERT_TRUE(test::eventually([&] { return remote->serves(fixture::kPipelineRun); }));
  EXPECT_EQ(r.connected("no-tekton"), remote) << "the same connection: no restart";
  ASSERT_TRUE(test::eventually([&] { return !eventWith("KindsServed").empty(); }));
  EXPECT_EQ(eventWith("KindsServed"), "Normal: Worker no-tekton serves every configured kind");
}

TEST_F(ClusterRegistryTest, AHungWorkerTimesOutWithoutBlockingOthers) {
  auto& hung = sandbox.addCluster({.name = "hung", .crdFiles = fixture::workerCrds()});
  createSecretCluster("hung", hung.kubeconfig());
  createSecretCluster("worker1", worker1.kubeconfig());
  auto options = registryOptions();
  options.clientOptions.timeout = minutes{10};  // the establishment timeout decides, not the request's
  auto& r = startRegistry(options);
  hung.faults().setLatency(std::chrono::hours{1});

  EXPECT_EQ(r.reconcile("hung"), Result::after(seconds{1}));
  EXPECT_TRUE(connect("worker1"));
  EXPECT_EQ(r.connected("hung"), nullptr);

  clock.advance(seconds{59});
  EXPECT_EQ(r.reconcile("hung"), Result::after(seconds{1}));
  clock.advance(seconds{1});
  EXPECT_EQ(r.reconcile("hung"), Result::after(seconds{5}));
  EXPECT_EQ(r.failedAttempts("hung"), 1);
  EXPECT_EQ(clusterActive("hung")["message"], "watch establishment timed out" + suffix(1, clock.now() + seconds{5}));

  // The second attempt may take 2 minutes.
  clock.advance(seconds{5});
  EXPECT_EQ(r.reconcile("hung"), Result::after(seconds{1}));
  clock.advance(minutes{1});
  EXPECT_EQ(r.reconcile("hung"), Result::after(seconds{1}));
  clock.advance(minutes{1});
  EXPECT_EQ(r.reconcile("hung"), Result::after(seconds{10}));
  EXPECT_EQ(r.failedAttempts("hung"), 2);

  // Once it answers again, the next attempt connects.
  hung.faults().setLatency(std::chrono::milliseconds{0});
  clock.advance(seconds{10});
  EXPECT_TRUE(connect("hung"));
  EXPECT_EQ(r.failedAttempts("hung"), 0);
}

// Scenarios 90 and 91: lost connection, failed reconnects, back.
TEST_F(ClusterRegistryTest, AnUnreachableWorkerIsDisconnectedUntilItAnswersAgain) {
  createSecretCluster("worker1", worker1.kubeconfig());
  auto& r = startRegistry(registryOptions());
  ASSERT_TRUE(connect("worker1"));
  const auto stale = r.connected("worker1");

  clock.advance(minutes{1});
  const auto lostAt = clock.now();
  worker1.setUnreachable(true);
  ASSERT_TRUE(test::eventually([&] { return r.connected("worker1") == nullptr && recorder.last("worker1") == false; }));
  EXPECT_EQ(r.disconnectedSince("worker1"), lostAt);
  EXPECT_EQ(recorder.connections(), (std::vector<std::pair<std::string, bool>>{{"worker1", true}, {"worker1", false}}));
  EXPECT_EQ(stale->name(), "worker1") << "holders keep a usable (stale) worker";

  // No failure counted yet: the reconnect is tried at once, and fails.
  clock.advance(seconds{1});
  r.reconcile("worker1");
  EXPECT_EQ(clusterActive("worker1")["reason"], "ClientConnectionFailed");
  EXPECT_EQ(clusterActive("worker1")["status"], "False");
  ASSERT_TRUE(test::eventually([&] { return r.failedAttempts("worker1") == 1; }));
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{5}));
  EXPECT_THAT(clusterActive("worker1")["message"].get<std::string>(),
              ::testing::EndsWith(suffix(1, clock.now() + seconds{5})));
  EXPECT_EQ(r.disconnectedSince("worker1"), lostAt);

  clock.advance(seconds{5});
  r.reconcile("worker1");
  ASSERT_TRUE(test::eventually([&] { return r.failedAttempts("worker1") == 2; }));
  EXPECT_EQ(r.disconnectedSince("worker1"), lostAt) << "a repeated disconnect keeps the first time";

  worker1.setUnreachable(false);
  clock.advance(seconds{10});
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(r.disconnectedSince("worker1"), std::nullopt);
  EXPECT_EQ(r.failedAttempts("worker1"), 0);
  const auto active = clusterActive("worker1");
  EXPECT_EQ(active["status"], "True");
  EXPECT_EQ(active["message"], "Connected");
  EXPECT_EQ(active["lastTransitionTime"], toRfc3339(clock.now()));
  EXPECT_EQ(recorder.connections().back(), (std::pair<std::string, bool>{"worker1", true}));
}

// §3.6: remote Workloads map to their own key, remote jobs through the prebuilt-workload link.
TEST_F(ClusterRegistryTest, RemoteEventsMapToTheManagersWorkloads) {
  createSecretCluster("worker1", worker1.kubeconfig());
  auto& r = startRegistry(registryOptions());
  ASSERT_TRUE(connect("worker1"));
  worker1.api().create(fixture::kNamespaces, {{"metadata", {{"name", "team"}}}});
  const json ours = {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}};

  createWorkload(worker1, "foreign", {{"kueue.x-k8s.io/multikueue-origin", "elsewhere"}});
  createPipelineRun(worker1, "unlinked", ours);
  createPipelineRun(worker1, "job1", ours, {{"kueue.x-k8s.io/prebuilt-workload-name", "wl-job1"}});
  createWorkload(worker1, "wl1", ours);
  ASSERT_TRUE(test::eventually(
      [&] { return recorder.events("worker1", "team/wl1") == 1 && recorder.events("worker1", "team/wl-job1") == 1; }));
  // Each informer reports in event order: "unlinked" came before "job1", "foreign" is not selected.
  EXPECT_EQ(recorder.events("worker1", "team/unlinked"), 0);
  EXPECT_EQ(recorder.events("worker1", "team/foreign"), 0);

  auto remote = r.connected("worker1");
  ASSERT_NE(remote, nullptr);
  EXPECT_TRUE(remote->workload("team/wl1").has_value());
  EXPECT_FALSE(remote->workload("team/foreign").has_value());
  auto namesOf = [&](auto forEach) {
    std::vector<std::string> names;
    forEach([&](const nlohmann::json& o) { names.push_back(o["metadata"]["name"].get<std::string>()); });
    return names;
  };
  EXPECT_EQ(namesOf([&](auto v) { remote->forEachWorkload(v); }), std::vector<std::string>{"wl1"});
  EXPECT_EQ(namesOf([&](auto v) { remote->forEachJob(kPipelineRun, v); }),
            (std::vector<std::string>{"job1", "unlinked"}));
  EXPECT_TRUE(remote->job(kPipelineRun, "team/job1").has_value());
  EXPECT_FALSE(remote->job({"batch", "v1", "Job"}, "team/job1").has_value()) << "not a configured kind";
  EXPECT_TRUE(namesOf([&](auto v) { remote->forEachJob({"batch", "v1", "Job"}, v); }).empty());

  // Writes go through the worker's client; deletions are events too.
  remote->client().remove(api::kWorkloadGvk, "team", "wl1");
  EXPECT_TRUE(test::eventually([&] { return recorder.events("worker1", "team/wl1") == 2; }));
}

TEST_F(ClusterRegistryTest, WritesNoStatusUnlessAskedTo) {
  createSecretCluster("worker1", worker1.kubeconfig());
  createCluster("missing-secret", {{"kubeConfig", {{"location", "nope"}}}});
  auto options = registryOptions();
  options.writeClusterStatus = false;
  auto& r = startRegistry(options);
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(r.reconcile("missing-secret"), Result::done());
  EXPECT_TRUE(clusterActive("worker1").is_null());
  EXPECT_TRUE(clusterActive("missing-secret").is_null());
  EXPECT_EQ(recorder.connections(), (std::vector<std::pair<std::string, bool>>{{"worker1", true}}));
}

// SPEC §2, mode 2: connection state is recorded as Events on the MultiKueueCluster, with the
// reason and message its Active condition would carry, only when they change.
TEST_F(ClusterRegistryTest, InModeTwoAConnectionIsOneNormalEventOnTheCluster) {
  createSecretCluster("worker1", worker1.kubeconfig());
  auto& r = startRegistry(dispatcherMode());
  ASSERT_TRUE(connect("worker1"));
  clock.advance(minutes{1});
  EXPECT_EQ(r.reconcile("worker1"), Result::done());

  const auto events = clusterEventsAbout("worker1");
  ASSERT_EQ(events.size(), 1u);
  const auto& event = events[0];
  EXPECT_EQ(event["type"], "Normal");
  EXPECT_EQ(event["reason"], "Active");
  EXPECT_EQ(event["message"], "Connected");
  EXPECT_EQ(event["source"]["component"], "multikueue-cluster");
  EXPECT_EQ(event["metadata"]["namespace"], "default") << "cluster-scoped: the default namespace";
  const json involved = event["involvedObject"];
  EXPECT_EQ(involved["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(involved["kind"], "MultiKueueCluster");
  EXPECT_EQ(involved["name"], "worker1");
  EXPECT_EQ(involved["namespace"], "");
  EXPECT_EQ(involved["uid"], clusterObject("worker1")["metadata"]["uid"]);
  EXPECT_TRUE(clusterActive("worker1").is_null()) << "no status in mode 2";
}

TEST_F(ClusterRegistryTest, InModeTwoAMissingSecretIsOneWarningEventUntilTheProblemChanges) {
  createCluster("worker1", {{"kubeConfig", {{"location", "creds"}, {"locationType", "Secret"}}}});
  auto& r = startRegistry(dispatcherMode());
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  auto events = clusterEventsAbout("worker1");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "BadKubeConfig");
  EXPECT_EQ(events[0]["message"], "load client config failed: secrets \"creds\" not found");

  // The same problem again (a resync, a retry): no second Event.
  clock.advance(minutes{10});
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  EXPECT_EQ(clusterEventsAbout("worker1").size(), 1u);

  // Another problem is another Event; repeating it is not.
  manager.api().create(fixture::kSecrets, {{"metadata", {{"name", "creds"}}}, {"data", {{"other", "eA=="}}}});
  EXPECT_THAT(reconcileError("worker1"), HasSubstr("key \"kubeconfig\" not found in secret \"creds\""));
  EXPECT_THAT(reconcileError("worker1"), HasSubstr("key \"kubeconfig\" not found in secret \"creds\""));
  events = clusterEventsAbout("worker1");
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_EQ(e["type"], "Warning");
    EXPECT_EQ(e["reason"], "BadKubeConfig");
  }
}

TEST_F(ClusterRegistryTest, InModeTwoFailureThenConnectedThenLostAreOneEventEach) {
  createSecretCluster("worker1", unbuildable());
  auto& r = startRegistry(dispatcherMode());
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{5}));
  auto events = clusterEventsAbout("worker1");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "ClientConnectionFailed");
  const std::string message = events[0]["message"];
  EXPECT_THAT(message, HasSubstr("is not an https:// URL"));
  EXPECT_THAT(message, ::testing::EndsWith(suffix(1, clock.now() + seconds{5})));

  // Inside the backoff window nothing is tried and nothing is recorded.
  clock.advance(seconds{2});
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{3}));
  EXPECT_EQ(clusterEventsAbout("worker1").size(), 1u);

  putSecret("worker1", worker1.kubeconfig());
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  events = clusterEventsAbout("worker1");
  ASSERT_EQ(events.size(), 2u);
  std::vector<std::string> reasons;
  for (const auto& e : events) reasons.push_back(e["type"].get<std::string>() + "/" + e["reason"].get<std::string>());
  EXPECT_THAT(reasons, ::testing::UnorderedElementsAre("Warning/ClientConnectionFailed", "Normal/Active"));

  // Lost: the reconcile the disconnect asks for records it.
  worker1.setUnreachable(true);
  ASSERT_TRUE(test::eventually([&] { return r.connected("worker1") == nullptr && recorder.last("worker1") == false; }));
  r.reconcile("worker1");
  events = clusterEventsAbout("worker1");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(std::count_if(events.begin(), events.end(), [](const json& e) { return e["type"] == "Warning"; }), 2);
}

TEST_F(ClusterRegistryTest, InModeThreeTheStatusIsTheRecordAndNoEventIsRecorded) {
  // Kueue's MultiKueueCluster controller records no connection Events (only DeprecatedPathUsage).
  createSecretCluster("worker1", worker1.kubeconfig());
  createCluster("missing-secret", {{"kubeConfig", {{"location", "nope"}}}});
  auto& r = startRegistry(registryOptions());
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(r.reconcile("missing-secret"), Result::done());
  EXPECT_EQ(clusterActive("worker1")["reason"], "Active");
  EXPECT_EQ(clusterActive("missing-secret")["reason"], "BadKubeConfig");
  EXPECT_TRUE(clusterEventsAbout("worker1").empty());
  EXPECT_TRUE(clusterEventsAbout("missing-secret").empty());
}

TEST_F(ClusterRegistryTest, InModeTwoAFailedEventWriteDoesNotFailTheReconcile) {
  createCluster("worker1", {{"kubeConfig", {{"location", "creds"}}}});
  auto& r = startRegistry(dispatcherMode());
  manager.faults().failNext(1, 500, {.verb = "create", .resource = "events"});
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  EXPECT_EQ(manager.faults().injectedFailures(), 1u);
  EXPECT_TRUE(clusterEventsAbout("worker1").empty());

  // Best effort: the lost Event is not retried, the next change is recorded.
  manager.api().create(fixture::kSecrets, {{"metadata", {{"name", "creds"}}}, {"data", {{"other", "eA=="}}}});
  EXPECT_THAT(reconcileError("worker1"), HasSubstr("not found in secret"));
  EXPECT_EQ(clusterEventsAbout("worker1").size(), 1u);
}

// §3.1: Path kubeconfigs (MultiKueueKubeConfigPathValidation on).
TEST_F(ClusterRegistryTest, PathKubeconfigsUnderThePrefixConnect) {
  const auto file = dir.write("kubeconfigs/worker1", worker1.kubeconfig());
  createCluster("worker1", {{"kubeConfig", {{"location", file.string()}, {"locationType", "Path"}}}});
  auto options = registryOptions();
  options.pathPrefix = dir / "kubeconfigs";
  auto& r = startRegistry(options);
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(clusterActive("worker1")["reason"], "Active");
  EXPECT_TRUE(r.clustersUsingSecret("worker1").empty());
}

// Kueue watches Path kubeconfigs: a change on disk brings a reconcile (through the owner) without
// waiting for any event on the manager, and the reconcile reconnects with the new file.
TEST_F(ClusterRegistryTest, PathKubeconfigChangedOnDiskAsksForAReconcileThatReconnects) {
  const auto file = dir.write("kubeconfigs/worker1", worker1.kubeconfig());
  createCluster("worker1", {{"kubeConfig", {{"location", file.string()}, {"locationType", "Path"}}}});
  auto options = registryOptions();
  options.pathPrefix = dir / "kubeconfigs";
  auto& r = startRegistry(options);
  std::mutex mutex;
  int changes = 0;
  r.onKubeconfigChange([&](const std::string& cluster) {
    std::lock_guard lock(mutex);
    if (cluster == "worker1") ++changes;
  });
  ASSERT_TRUE(connect("worker1"));
  const auto before = r.connected("worker1");
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(changes, 1);  // the look-again when the watch started
    changes = 0;
  }

  dir.write("kubeconfigs/worker1", worker1.kubeconfig() + "# rotated\n");
  ASSERT_TRUE(mka::test::eventually([&] {
    std::lock_guard lock(mutex);
    return changes > 0;
  }));
  ASSERT_TRUE(connect("worker1"));
  EXPECT_NE(r.connected("worker1"), before);  // a new client, built from the new file
  EXPECT_EQ(clusterActive("worker1")["reason"], "Active");
}

// Scenarios 80 and 99. What a case's path points at: a kubeconfig under the prefix
// (kubeconfigs/worker1), one outside it, a link under the prefix to the outside one, and one in
// a sibling directory whose name starts with the prefix's (kubeconfigs-other).
struct PrefixLayout {
  fs::path prefix, outside, sibling;
};
const std::string kNotUnder = "kubeconfig path is not under the allowed prefix: ";
// The error for a path that resolves to `file`, outside the prefix.
std::string outsideThePrefixError(const fs::path& file, const PrefixLayout& l) {
  return kNotUnder + "\"" + fs::canonical(file).string() + "\" is not under \"" + fs::canonical(l.prefix).string() +
         "\"";
}

struct PathKubeconfigCase {
  std::string name;
  std::function<std::string(const PrefixLayout&)> path, error;
  bool watched = false;  // only a file that may be loaded is watched (the watcher reads it)
};
std::vector<PathKubeconfigCase> pathKubeconfigCases() {
  return {
      {"dotdot", [](const PrefixLayout& l) { return (l.prefix / ".." / "outside.kubeconfig").string(); },
       [](const PrefixLayout&) { return kNotUnder + "path contains \"..\""; }},
      {"relative", [](const PrefixLayout&) { return std::string("kubeconfigs/worker1"); },
       [](const PrefixLayout&) { return kNotUnder + "path must be absolute"; }},
      {"outside", [](const PrefixLayout& l) { return l.outside.string(); },
       [](const PrefixLayout& l) { return outsideThePrefixError(l.outside, l); }},
      {"symlink-escape", [](const PrefixLayout& l) { return (l.prefix / "link").string(); },
       [](const PrefixLayout& l) { return outsideThePrefixError(l.outside, l); }},
      {"sibling-prefix", [](const PrefixLayout& l) { return l.sibling.string(); },
       [](const PrefixLayout& l) { return outsideThePrefixError(l.sibling, l); }},
      // Under the prefix: watched, its creation must be noticed.
      {"missing", [](const PrefixLayout& l) { return (l.prefix / "missing").string(); },
       [](const PrefixLayout&) {
         return std::string("cannot resolve kubeconfig path symlinks: No such file or directory");
       },
       true},
  };
}

MKA_TABLE_TEST_F(ClusterRegistryTest, PathKubeconfigsOutsideThePrefixAreRefused, PathKubeconfigCase,
                 pathKubeconfigCases()) {
  const auto& c = testCase();
  const PrefixLayout layout{dir / "kubeconfigs", dir / "outside.kubeconfig", dir / "kubeconfigs-other/worker1"};
  dir.write("kubeconfigs/worker1", worker1.kubeconfig());
  dir.write("outside.kubeconfig", worker1.kubeconfig());
  dir.write("kubeconfigs-other/worker1", worker1.kubeconfig());
  fs::create_symlink(layout.outside, layout.prefix / "link");
  auto options = registryOptions();
  options.pathPrefix = layout.prefix;
  auto& r = startRegistry(options);
  std::mutex mutex;
  std::set<std::string> watched;  // a watch starting asks for one reconcile, synchronously
  r.onKubeconfigChange([&](const std::string& cluster) {
    std::lock_guard lock(mutex);
    watched.insert(cluster);
  });
  const std::string error = c.error(layout);
  createCluster(c.name, {{"kubeConfig", {{"location", c.path(layout)}, {"locationType", "Path"}}}});
  EXPECT_EQ(reconcileError(c.name), "failed to load client config, reason: BadKubeConfig, error: " + error);
  const auto active = clusterActive(c.name);
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], "BadKubeConfig");
  EXPECT_EQ(active["message"], "load client config failed: " + error);
  EXPECT_EQ(r.connected(c.name), nullptr);
  std::lock_guard lock(mutex);
  EXPECT_EQ(watched, c.watched ? std::set<std::string>{c.name} : std::set<std::string>{});
}

// An empty path is refused by kube-apiserver already (the CRD's minLength on location).
TEST_F(ClusterRegistryTest, AnEmptyKubeconfigPathIsRefusedByTheCrd) {
  EXPECT_THAT(test::messageOf<sandbox::ApiError>([&] {
                createCluster("empty", {{"kubeConfig", {{"location", ""}, {"locationType", "Path"}}}});
              }),
              HasSubstr("spec.clusterSource.kubeConfig.location in body should be at least 1 chars long"));
}

// Scenarios 84 and 94.
struct InsecureKubeconfigCase {
  std::string name;
  std::string clusterExtra, userExtra;  // kubeconfigFor()'s extra lines
  std::string error;
};
std::vector<InsecureKubeconfigCase> insecureKubeconfigCases() {
  return {
      {"token-file", "", "    tokenFile: /var/run/token\n", "tokenFile is not allowed"},
      {"insecure-tls", "    insecure-skip-tls-verify: true\n", "",
       "insecure TLS verification is not allowed for cluster worker"},
      {"ca-file", "    certificate-authority: /etc/ca.crt\n", "",
       "certificate-authority file paths are not allowed, use certificate-authority-data for cluster worker"},
  };
}

MKA_TABLE_TEST_F(ClusterRegistryTest, InsecureKubeconfigsAreRefused, InsecureKubeconfigCase,
                 insecureKubeconfigCases()) {
  const auto& c = testCase();
  startRegistry(registryOptions());
  createSecretCluster(c.name,
                      fixture::kubeconfigFor(worker1.server(), worker1.caPem(), "t", c.clusterExtra, c.userExtra));
  EXPECT_EQ(reconcileError(c.name), "failed to load client config, reason: InsecureKubeConfig, error: " + c.error);
  const auto active = clusterActive(c.name);
  EXPECT_EQ(active["reason"], "InsecureKubeConfig");
  EXPECT_EQ(active["message"], "load client config failed: " + c.error);
}

// A connected worker whose Secret turns insecure is disconnected, but kept.
TEST_F(ClusterRegistryTest, AnInsecureKubeconfigDisconnectsAnExistingClient) {
  auto& r = startRegistry(registryOptions());
  createSecretCluster("worker1", worker1.kubeconfig());
  ASSERT_TRUE(connect("worker1"));
  clock.advance(seconds{30});
  putSecret("worker1",
            fixture::kubeconfigFor(worker1.server(), worker1.caPem(), "t", "", "    tokenFile: /var/run/token\n"));
  EXPECT_THAT(reconcileError("worker1"), HasSubstr("reason: InsecureKubeConfig"));
  EXPECT_EQ(r.connected("worker1"), nullptr);
  EXPECT_EQ(r.disconnectedSince("worker1"), clock.now());
  EXPECT_THAT(r.clusterNames(), ::testing::Contains("worker1"));
  EXPECT_EQ(recorder.connections().back(), (std::pair<std::string, bool>{"worker1", false}));
  ASSERT_TRUE(test::eventually([&] { return worker1.openWatches() == 0; })) << "its informers are stopped";

  // Fixed: the same kubeconfig as before connects again.
  putSecret("worker1", worker1.kubeconfig());
  ASSERT_TRUE(connect("worker1"));
}

TEST_F(ClusterRegistryTest, AMissingSecretWaitsForItsEventAndAMissingKeyIsAnError) {
  createCluster("worker1", {{"kubeConfig", {{"location", "creds"}, {"locationType", "Secret"}}}});
  auto& r = startRegistry(registryOptions());
  EXPECT_EQ(r.reconcile("worker1"), Result::done()) << "no error: the Secret's event brings the cluster back";
  auto active = clusterActive("worker1");
  EXPECT_EQ(active["reason"], "BadKubeConfig");
  EXPECT_EQ(active["message"], "load client config failed: secrets \"creds\" not found");
  EXPECT_EQ(r.clustersUsingSecret("creds"), std::vector<std::string>{"worker1"});
  EXPECT_EQ(r.clusterNames(), std::vector<std::string>{"worker1"});

  manager.api().create(fixture::kSecrets, {{"metadata", {{"name", "creds"}}}, {"data", {{"other", "eA=="}}}});
  EXPECT_EQ(
      reconcileError("worker1"),
      "failed to load client config, reason: BadKubeConfig, error: key \"kubeconfig\" not found in secret \"creds\"");
  EXPECT_EQ(clusterActive("worker1")["message"],
            "load client config failed: key \"kubeconfig\" not found in secret \"creds\"");

  putSecret("creds", worker1.kubeconfig());
  EXPECT_TRUE(connect("worker1"));
}

// --- ClusterProfile credentials (multiKueue.clusterProfile) ----------------------------------

class ClusterProfileTest : public ClusterRegistryTest {
 protected:
  // A plugin that records each run's KUBERNETES_EXEC_INFO and prints the file `credential`
  // (a failing plugin when it holds "fail").
  std::string plugin() {
    const auto path = dir.write("cp-creds", R"sh(#!/bin/sh
printf '%s\n' "$KUBERNETES_EXEC_INFO" >> "$OUT/runs"
if [ "$(cat "$OUT/credential")" = fail ]; then
  echo 'token service unreachable' >&2; exit 3
fi
cat "$OUT/credential"
)sh");
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
  void pluginPrints(const std::string& token, std::optional<Clock::TimePoint> expiry = std::nullopt) {
    json status = {{"token", token}};
    if (expiry) status["expirationTimestamp"] = toRfc3339(*expiry);
    test::writeFile(
        dir / "credential",
        json{{"apiVersion", "client.authentication.k8s.io/v1"}, {"kind", "ExecCredential"}, {"status", status}}.dump());
  }
  void pluginFails() { test::writeFile(dir / "credential", "fail"); }
  // The KUBERNETES_EXEC_INFO of every run so far.
  std::vector<json> runs() {
    std::vector<json> out;
    if (!fs::exists(dir / "runs")) return out;
    std::istringstream lines(test::readFile(dir / "runs"));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) out.push_back(json::parse(line));
    return out;
  }
  ClusterRegistryOptions withProviders(std::vector<std::string> names = {"token-provider"}) {
    auto o = registryOptions();
    config::ClusterProfileAccess access;
    for (auto& name : names) {
      api::ExecConfig exec;
      exec.command = plugin();
      exec.apiVersion = "client.authentication.k8s.io/v1";
      exec.interactiveMode = "Never";
      exec.provideClusterInfo = true;
      exec.env = {{"OUT", dir.path().string()}};
      access.accessProviders.push_back({std::move(name), std::move(exec)});
    }
    o.clusterProfiles = std::move(access);
    return o;
  }
  // worker1 as an access provider `name` offers it.
  json provider(const std::string& name = "token-provider", const json& extra = json::object()) {
    json cluster = {{"server", worker1.server()}, {"certificate-authority-data", base64Encode(worker1.caPem())}};
    cluster.update(extra);
    return {{"name", name}, {"cluster", cluster}};
  }
  void createProfileCluster(const std::string& name, const std::string& profile) {
    createCluster(name, {{"clusterProfileRef", {{"name", profile}}}});
  }
};

TEST_F(ClusterProfileTest, ConnectsWithTheExecPluginOfTheFirstConfiguredProviderTheProfileOffers) {
  pluginPrints(worker1.token());
  putProfile("w1", json::array({provider("other-provider"),
                                provider("token-provider", {{"extensions",
                                                             {{{"name", "client.authentication.k8s.io/exec"},
                                                               {"extension", {{"clusterName", "w1"}}}}}}})}));
  createProfileCluster("worker1", "w1");
  auto& r = startRegistry(withProviders({"token-provider", "other-provider"}));
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(clusterActive("worker1")["status"], "True");
  EXPECT_EQ(r.clustersUsingProfile("w1"), std::vector<std::string>{"worker1"});
  EXPECT_TRUE(r.clustersUsingSecret("w1").empty());

  // Requests to the worker carry the plugin's token; the plugin was told which cluster.
  ASSERT_EQ(runs().size(), 1u) << "one run for the connection, its informers and requests";
  const auto info = runs()[0];
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], worker1.server());
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], base64Encode(worker1.caPem()));
  EXPECT_EQ(info["spec"]["cluster"]["config"], (json{{"clusterName", "w1"}}));
}

TEST_F(ClusterProfileTest, TheTokenIsRefreshedBeforeItExpires) {
  pluginPrints(worker1.token(), clock.now() + minutes{10});
  putProfile("w1", json::array({provider()}));
  createProfileCluster("worker1", "w1");
  auto& r = startRegistry(withProviders());
  ASSERT_TRUE(connect("worker1"));
  auto remote = r.connected("worker1");
  ASSERT_NE(remote, nullptr);
  const auto list = [&] { return remote->client().rest().request("GET", "/api/v1/namespaces").status; };
  EXPECT_EQ(list(), 200);
  EXPECT_EQ(runs().size(), 1u);

  clock.advance(minutes{8} + seconds{59});  // more than a minute left: the token is kept
  EXPECT_EQ(list(), 200);
  EXPECT_EQ(runs().size(), 1u);
  clock.advance(seconds{1});  // a minute left: refreshed before the request goes out
  pluginPrints(worker1.token(), clock.now() + minutes{10});
  EXPECT_EQ(list(), 200);
  EXPECT_EQ(runs().size(), 2u);
  EXPECT_NE(r.connected("worker1"), nullptr) << "a refresh is not a reconnection";
}

TEST_F(ClusterProfileTest, APluginFailureLeavesTheClusterInactiveSayingWhatFailed) {
  pluginFails();
  putProfile("w1", json::array({provider()}));
  createProfileCluster("worker1", "w1");
  auto& r = startRegistry(withProviders());
  r.reconcile("worker1");
  EXPECT_EQ(r.failedAttempts("worker1"), 1) << "the plugin runs before any informer starts";
  const auto active = clusterActive("worker1");
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], "ClientConnectionFailed");
  EXPECT_THAT(active["message"].get<std::string>(),
              StartsWith("getting credentials from access provider token-provider of ClusterProfile w1: exec: "
                         "executable " +
                         (dir / "cp-creds").string() + " failed with exit code 3: token service unreachable"));
  EXPECT_EQ(r.connected("worker1"), nullptr);

  // Mended: the next attempt, after the backoff, connects.
  pluginPrints(worker1.token());
  clock.advance(reconnectBackoff(1));
  EXPECT_TRUE(connect("worker1"));
}

struct UnusableProfileCase {
  std::string name;
  std::optional<std::vector<std::string>> configured;  // nullopt: no multiKueue.clusterProfile
  // The profile's access providers, each provider(name, extra cluster fields); nullopt: no profile.
  std::optional<std::vector<std::pair<std::string, json>>> providers;
  std::string reason;
  std::string message;  // after "load client config failed: "
  bool thrown = true;   // false: a missing profile waits for its own event
};
std::vector<UnusableProfileCase> unusableProfileCases() {
  using Providers = std::vector<std::pair<std::string, json>>;
  return {
      {"no providers configured", std::nullopt, Providers{{"token-provider", json::object()}}, "BadClusterProfile",
       "no access provider configured (list the providers the ClusterProfiles offer, with their exec plugins, in the "
       "adapter's multiKueue.clusterProfile.accessProviders)"},
      {"no such profile", std::vector<std::string>{"token-provider"}, std::nullopt, "BadClusterProfile",
       "clusterprofiles.multicluster.x-k8s.io \"w1\" not found in namespace kueue-system", false},
      {"none of the profile's providers is configured", std::vector<std::string>{"token-provider", "vault"},
       Providers{{"ocm", json::object()}, {"gke", json::object()}}, "BadClusterProfile",
       "no matching cluster accessor found for cluster profile \"w1\": it offers [ocm, gke] (status.accessProviders) "
       "and the adapter is configured for [token-provider, vault] (multiKueue.clusterProfile.accessProviders); add one "
       "of the profile's providers to the configuration, or have the cluster manager publish one of the configured "
       "ones"},
      {"an untrusted server", std::vector<std::string>{"token-provider"},
       Providers{{"token-provider", {{"server", "https://bad_host:6443"}}}}, "BadRestConfig",
       "untrusted server endpoint"},
      {"a proxy", std::vector<std::string>{"token-provider"},
       Providers{{"token-provider", {{"proxy-url", "http://proxy:3128"}}}}, "BadRestConfig",
       "proxy-url \"http://proxy:3128\" is not supported: the adapter connects to workers directly; publish a server "
       "the manager reaches without a proxy"},
  };
}

MKA_TABLE_TEST_F(ClusterProfileTest, ProfilesThatCannotBeUsedAreRefusedWithKueuesReasons, UnusableProfileCase,
                 unusableProfileCases()) {
  const auto& c = testCase();
  pluginPrints(worker1.token());
  const std::string cluster = "c";
  if (c.providers) {
    json providers = json::array();
    for (const auto& [name, extra] : *c.providers) providers.push_back(provider(name, extra));
    putProfile("w1", providers);
  }
  createProfileCluster(cluster, "w1");
  auto options = c.configured ? withProviders(*c.configured) : registryOptions();
  auto& r = startRegistry(std::move(options));
  const auto error = reconcileError(cluster);
  if (c.thrown) {
    EXPECT_EQ(error, "failed to load client config, reason: " + c.reason + ", error: " + c.message);
  } else {
    EXPECT_EQ(error, "") << "no error: the profile's event brings the cluster back";
  }
  const auto active = clusterActive(cluster);
  EXPECT_EQ(active["status"], "False");
  EXPECT_EQ(active["reason"], c.reason);
  EXPECT_EQ(active["message"], "load client config failed: " + c.message);
  EXPECT_EQ(r.connected(cluster), nullptr);
  EXPECT_EQ(r.clustersUsingProfile("w1"), std::vector<std::string>{cluster});
  EXPECT_TRUE(runs().empty()) << "no plugin runs for a profile that cannot be used";
}

TEST_F(ClusterProfileTest, AChangedProfileReconnects) {
  pluginPrints(worker1.token());
  putProfile("w1", json::array({provider()}));
  createProfileCluster("worker1", "w1");
  auto& r = startRegistry(withProviders());
  ASSERT_TRUE(connect("worker1"));
  // The same profile written again: nothing to do.
  putProfile("w1", json::array({provider()}));
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  EXPECT_EQ(runs().size(), 1u);

  // New data for the plugin: a new connection, whose plugin run gets it.
  putProfile(
      "w1",
      json::array({provider(
          "token-provider",
          {{"extensions", {{{"name", "client.authentication.k8s.io/exec"}, {"extension", {{"region", "eu"}}}}}}})}));
  EXPECT_TRUE(connect("worker1"));
  EXPECT_EQ(recorder.connections(),
            (std::vector<std::pair<std::string, bool>>{{"worker1", true}, {"worker1", false}, {"worker1", true}}));
  ASSERT_EQ(runs().size(), 2u);
  EXPECT_EQ(runs()[1]["spec"]["cluster"]["config"], (json{{"region", "eu"}}));
}

// Scenario 81.
TEST_F(ClusterRegistryTest, AClusterThatIsGoneOrTerminatingIsForgotten) {
  createSecretCluster("worker1", worker1.kubeconfig());
  putSecret("keeper", worker1.kubeconfig());
  createCluster("keeper", {{"kubeConfig", {{"location", "keeper"}}}}, {{"finalizers", {"test.dev/keep"}}});
  auto& r = startRegistry(registryOptions());
  ASSERT_TRUE(connect("worker1"));
  ASSERT_TRUE(connect("keeper"));
  ASSERT_TRUE(test::eventually([&] { return worker1.openWatches() == 4; }));

  manager.api().remove(fixture::named(fixture::kClusters, "worker1"));
  EXPECT_EQ(r.reconcile("worker1"), Result::done());
  manager.api().remove(fixture::named(fixture::kClusters, "keeper"));
  ASSERT_TRUE(clusterObject("keeper")["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(r.reconcile("keeper"), Result::done());

  EXPECT_TRUE(r.clusterNames().empty());
  EXPECT_EQ(r.connected("worker1"), nullptr);
  EXPECT_EQ(r.connected("keeper"), nullptr);
  EXPECT_TRUE(r.clustersUsingSecret("worker1").empty());
  const auto changes = recorder.connections();
  EXPECT_EQ(std::count(changes.begin(), changes.end(), std::pair<std::string, bool>{"worker1", false}), 1);
  EXPECT_EQ(std::count(changes.begin(), changes.end(), std::pair<std::string, bool>{"keeper", false}), 1);
  EXPECT_TRUE(test::eventually([&] { return worker1.openWatches() == 0; })) << "informers stopped";
}

// Scenarios 78 and 83.
TEST_F(ClusterRegistryTest, AChangedKubeconfigResetsTheFailureCountAndReconnects) {
  auto& worker2 = sandbox.addCluster({.name = "worker2", .crdFiles = fixture::workerCrds()});
  createSecretCluster("worker1", unbuildable(1));
  auto& r = startRegistry(registryOptions());
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{5}));
  clock.advance(seconds{5});
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{10}));
  EXPECT_EQ(r.failedAttempts("worker1"), 2);

  // Inside the window, but the config changed: reset and try at once.
  putSecret("worker1", worker1.kubeconfig());
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(r.failedAttempts("worker1"), 0);
  EXPECT_EQ(r.connected("worker1")->client().rest().config().host, worker1.server());

  // Connected, then pointed at another server: rebuilt.
  putSecret("worker1", worker2.kubeconfig());
  ASSERT_TRUE(connect("worker1"));
  EXPECT_EQ(r.connected("worker1")->client().rest().config().host, worker2.server());
  EXPECT_EQ(recorder.connections(),
            (std::vector<std::pair<std::string, bool>>{{"worker1", true}, {"worker1", false}, {"worker1", true}}));
  EXPECT_TRUE(test::eventually([&] { return worker1.openWatches() == 0; })) << "the old informers are stopped";

  // The next failure after a change counts from 1.
  putSecret("worker1", unbuildable(2));
  EXPECT_EQ(r.reconcile("worker1"), Result::after(seconds{5}));
  EXPECT_EQ(r.failedAttempts("worker1"), 1);
  EXPECT_EQ(r.connected("worker1"), nullptr);
}

}  // namespace
}  // namespace mka::multikueue
