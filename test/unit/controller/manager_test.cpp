// controller::Manager against a sandbox cluster: caches before controllers, a start that cannot
// sync, and a stop after which the group's handlers are never called again.
#include "mka/controller/manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "mka/api/kinds.h"
#include "mka/common/errors.h"
#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"

namespace mka::controller {
namespace {

using nlohmann::json;

const sandbox::ResourceRef kNamespaces{"", "v1", "namespaces", "", "", ""};

json namespaceNamed(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

class ManagerTest : public ::testing::Test {
 protected:
  ManagerTest() : cluster(sandbox.addCluster({.name = "manager"})) {
    kube::ClientOptions options;
    options.qps = 0;
    options.maxRetries = 0;
    client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(cluster.kubeconfig())), options));
  }
  std::vector<std::string> steps() {
    std::lock_guard lock(mutex);
    return steps_;
  }
  void step(const std::string& s) {
    std::lock_guard lock(mutex);
    steps_.push_back(s);
  }

  FakeClock clock;
  sandbox::Sandbox sandbox{clock};
  sandbox::Cluster& cluster;
  std::unique_ptr<kube::Client> client;
  std::mutex mutex;
  std::vector<std::string> steps_;
};

// A controller starts only once the caches synced: its first reconcile already reads the object
// that existed before start(), through the manager's reader.
TEST_F(ManagerTest, ControllersStartAfterTheCachesAndReadThroughTheReader) {
  cluster.api().create(kNamespaces, namespaceNamed("team-a"));
  Manager manager(*client, clock, {"test"});
  auto& namespaces = manager.informer(api::kNamespaceGvk, {});
  std::atomic<bool> sawTeamA{false};
  auto& controller = manager.add({"ns", 1}, [&](const std::string& key) {
    if (manager.reader().get(api::kNamespaceGvk, "", key)) sawTeamA = sawTeamA || key == "team-a";
    return Result::done();
  });
  manager.handle(namespaces, {.onAdd = [&](const json& ns) { controller.enqueue(kube::Informer::keyOf(ns)); }});
  manager.add([&] { step("runnable started"); }, [&] { step("runnable stopped"); });
  EXPECT_FALSE(manager.started());
  manager.start(std::chrono::seconds{30}, "hint");
  EXPECT_TRUE(manager.started());
  EXPECT_TRUE(namespaces.hasSynced());
  EXPECT_TRUE(test::eventually([&] { return sawTeamA.load(); }));
  EXPECT_TRUE(test::eventually([&] { return manager.idle(); }));
  manager.stop();
  EXPECT_FALSE(manager.started());
  EXPECT_EQ(steps(), (std::vector<std::string>{"runnable started", "runnable stopped"}));
}

// What was added starts in order and stops in reverse; a second stop does nothing.
TEST_F(ManagerTest, RunnablesStartInOrderAndStopInReverse) {
  Manager manager(*client, clock, {"test"});
  manager.informer(api::kNamespaceGvk, {});
  manager.add([&] { step("start a"); }, [&] { step("stop a"); });
  manager.add({"between", 1}, [](const std::string&) { return Result::done(); });
  manager.add([&] { step("start b"); }, [&] { step("stop b"); });
  manager.add(nullptr, [&] { step("stop c"); });
  manager.start(std::chrono::seconds{30}, "hint");
  manager.stop();
  manager.stop();
  EXPECT_EQ(steps(), (std::vector<std::string>{"start a", "start b", "stop c", "stop b", "stop a"}));
}

// Caches that cannot sync: the error names the group, the kind and the hint, and nothing that
// was added starts (nor stops).
TEST_F(ManagerTest, CachesThatDoNotSyncNameTheKindAndStartNothing) {
  Manager manager(*client, clock, {"job integration"});
  manager.informer({"example.com", "v1", "Missing"}, {});
  bool reconciled = false;
  manager.add({"never", 1}, [&](const std::string&) {
    reconciled = true;
    return Result::done();
  });
  manager.add([&] { step("started"); }, [&] { step("stopped"); });
  try {
    manager.start(std::chrono::milliseconds{300}, "install the CRD");
    FAIL() << "start() returned";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("job integration: the caches did not sync within 300 ms for: "), std::string::npos)
        << message;
    EXPECT_NE(message.find("Missing"), std::string::npos) << message;
    EXPECT_NE(message.find("; install the CRD"), std::string::npos) << message;
  }
  manager.stop();
  EXPECT_TRUE(steps().empty());
  EXPECT_FALSE(reconciled);
}

// After stop() the group's handlers are gone, while a shared pool's informer goes on for others.
TEST_F(ManagerTest, AStoppedGroupIsNotCalledAgainAndASharedPoolGoesOn) {
  kube::InformerPool pool(*client);
  std::atomic<int> calls{0};
  {
    Manager manager(*client, clock, {"first", &pool});
    auto& namespaces = manager.informer(api::kNamespaceGvk, {});
    manager.handle(namespaces, {.onAdd = [&](const json&) { ++calls; }});
    manager.start(std::chrono::seconds{30}, "hint");
    cluster.api().create(kNamespaces, namespaceNamed("before-stop"));
    EXPECT_TRUE(test::eventually([&] { return calls.load() >= 1; }));
    manager.stop();
  }
  const int afterStop = calls.load();
  auto& shared = pool.informer(api::kNamespaceGvk, {});
  cluster.api().create(kNamespaces, namespaceNamed("after-stop"));
  EXPECT_TRUE(test::eventually([&] { return shared.get("after-stop").has_value(); }))
      << "the shared informer was stopped with the group";
  EXPECT_EQ(calls.load(), afterStop);
  pool.stop();
}

}  // namespace
}  // namespace mka::controller
