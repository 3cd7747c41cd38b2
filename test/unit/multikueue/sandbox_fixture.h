#pragma once
// Sandbox clusters for the MultiKueue tests that talk to a manager and workers (never a mock of
// the client): the manager serves Kueue's MultiKueue kinds and the kueue-system namespace,
// workers serve Workloads and PipelineRuns; kubeconfig Secrets, MultiKueueClusters and a
// recorder of what the registry's callbacks reported.

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/base64.h"
#include "mka/controller/event_recorder.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/multikueue/cluster_registry.h"
#include "mka/multikueue/generic_adapter.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"

namespace mka::multikueue::fixture {

using controller::ClientReader;
using controller::EventRecorder;
using controller::Result;

using nlohmann::json;

inline const std::filesystem::path kCrds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
inline const api::GroupVersionKind kPipelineRun{"tekton.dev", "v1", "PipelineRun"};

// The generic adapter for PipelineRuns, marked by spec.managedBy as Kueue's MultiKueue expects.
inline Adapters pipelineRunAdapters() {
  return Adapters({std::make_shared<GenericAdapter>(
      jobkind::JobKind({"PipelineRun.v1.tekton.dev", kPipelineRun, config::ManagedByLocation{}, true}))});
}
inline const sandbox::ResourceRef kNamespaces{"", "v1", "namespaces", "", "", ""};
inline const sandbox::ResourceRef kSecrets{"", "v1", "secrets", "kueue-system", "", ""};
inline const sandbox::ResourceRef kClusters{"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "", ""};
inline const sandbox::ResourceRef kConfigs{"kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "", "", ""};
inline const sandbox::ResourceRef kChecks{"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", "", ""};
inline const sandbox::ResourceRef kEvents{"", "v1", "events", "default", "", ""};
inline const sandbox::ResourceRef kProfiles{"multicluster.x-k8s.io", "v1alpha1", "clusterprofiles",
                                            "kueue-system",          "",         ""};

inline sandbox::ResourceRef named(sandbox::ResourceRef ref, const std::string& name) {
  ref.name = name;
  return ref;
}

inline std::vector<std::filesystem::path> managerCrds() {
  return {kCrds / "kueue.x-k8s.io_multikueueclusters.yaml", kCrds / "kueue.x-k8s.io_multikueueconfigs.yaml",
          kCrds / "kueue.x-k8s.io_admissionchecks.yaml", kCrds / "multicluster.x-k8s.io_clusterprofiles.yaml"};
}
inline std::vector<std::filesystem::path> workerCrds() {
  return {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "tekton.dev_pipelineruns.yaml"};
}

// Clients for tests: no rate limit, no retries, short backoff.
inline kube::ClientOptions fastClient() {
  kube::ClientOptions o;
  o.qps = 0;
  o.maxRetries = 0;
  o.retryBackoff = std::chrono::milliseconds{10};
  return o;
}

// A kubeconfig for `server`, with extra lines under the cluster and the user entries (for
// insecure variants).
inline std::string kubeconfigFor(const std::string& server, const std::string& caPem, const std::string& token,
                                 const std::string& clusterExtra = "", const std::string& userExtra = "") {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: worker\n  cluster:\n    server: " + server +
         "\n    certificate-authority-data: " + base64Encode(caPem) + "\n" + clusterExtra +
         "users:\n- name: user\n  user:\n    token: " + token + "\n" + userExtra +
         "contexts:\n- name: worker\n  context:\n    cluster: worker\n    user: user\ncurrent-context: worker\n";
}

// What the registry's callbacks reported, from its threads.
class Recorder {
 public:
  void connection(const std::string& cluster, bool connected) {
    std::lock_guard lock(mutex_);
    connections_.emplace_back(cluster, connected);
  }
  void event(const std::string& cluster, const std::string& key) {
    std::lock_guard lock(mutex_);
    events_.emplace_back(cluster, key);
  }
  std::vector<std::pair<std::string, bool>> connections() const {
    std::lock_guard lock(mutex_);
    return connections_;
  }
  // The last connection change reported for `cluster`, if any.
  std::optional<bool> last(const std::string& cluster) const {
    std::lock_guard lock(mutex_);
    for (auto it = connections_.rbegin(); it != connections_.rend(); ++it)
      if (it->first == cluster) return it->second;
    return std::nullopt;
  }
  int events(const std::string& cluster, const std::string& key) const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& e : events_) n += e == std::pair{cluster, key};
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, bool>> connections_;
  std::vector<std::pair<std::string, std::string>> events_;
};

class MultiKueueSandbox : public ::testing::Test {
 protected:
  MultiKueueSandbox()
      : manager(sandbox.addCluster({.name = "manager", .crdFiles = managerCrds()})),
        worker1(sandbox.addCluster({.name = "worker1", .crdFiles = workerCrds()})) {
    manager.api().create(kNamespaces, {{"metadata", {{"name", "kueue-system"}}}});
    managerClient = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(manager.kubeconfig())), fastClient()));
  }
  ~MultiKueueSandbox() override {
    // Hung requests of a test's faults are released before the informers are joined.
    for (const auto& name : sandbox.clusterNames()) sandbox.cluster(name).faults().clear();
    if (registry) registry->stop();
  }

  static kube::ClientOptions fastClient() { return fixture::fastClient(); }
  ClusterRegistryOptions registryOptions() {
    ClusterRegistryOptions o;
    o.adapters = pipelineRunAdapters();
    o.clientOptions = fastClient();
    o.writeClusterStatus = true;
    o.informerInitialBackoff = std::chrono::milliseconds{10};
    o.informerMaxBackoff = std::chrono::milliseconds{50};
    return o;
  }
  ClusterRegistry& startRegistry(ClusterRegistryOptions options) {
    clusterEvents = std::make_unique<EventRecorder>(*managerClient, clock, std::string(kClusterEventComponent));
    objects = std::make_unique<ClientReader>(*managerClient);
    registry =
        std::make_unique<ClusterRegistry>(*managerClient, *objects, clock, std::move(options), clusterEvents.get());
    registry->onConnectionChange([this](const std::string& c, bool connected) { recorder.connection(c, connected); });
    registry->onRemoteEvent([this](const std::string& c, const std::string& key) { recorder.event(c, key); });
    return *registry;
  }

  void putSecret(const std::string& name, const std::string& kubeconfig) {
    const json secret = {{"apiVersion", "v1"},
                         {"kind", "Secret"},
                         {"metadata", {{"name", name}, {"namespace", "kueue-system"}}},
                         {"data", {{"kubeconfig", base64Encode(kubeconfig)}}}};
    try {
      manager.api().create(kSecrets, secret);
    } catch (const std::exception&) {
      manager.api().update(named(kSecrets, name), secret);  // no resourceVersion: unconditional
    }
  }
  void createCluster(const std::string& name, const json& clusterSource, const json& metadata = json::object()) {
    json object = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                   {"kind", "MultiKueueCluster"},
                   {"metadata", metadata},
                   {"spec", {{"clusterSource", clusterSource}}}};
    object["metadata"]["name"] = name;
    manager.api().create(kClusters, object);
  }
  // A MultiKueueCluster whose kubeconfig is the Secret of the same name.
  void createSecretCluster(const std::string& name, const std::string& kubeconfig) {
    putSecret(name, kubeconfig);
    createCluster(name, {{"kubeConfig", {{"location", name}}}});
  }
  // The ClusterProfile `name` with `accessProviders` in its status (created, or replaced).
  void putProfile(const std::string& name, const json& accessProviders) {
    json profile = {{"apiVersion", "multicluster.x-k8s.io/v1alpha1"},
                    {"kind", "ClusterProfile"},
                    {"metadata", {{"name", name}, {"namespace", "kueue-system"}}},
                    {"spec", {{"clusterManager", {{"name", "test"}}}}}};
    try {
      profile = *manager.api().create(kProfiles, profile);
    } catch (const std::exception&) {
      profile = manager.api().get(named(kProfiles, name));
    }
    profile["status"] = {{"accessProviders", accessProviders}};
    auto status = named(kProfiles, name);
    status.subresource = "status";
    manager.api().update(status, profile);
  }
  json clusterObject(const std::string& name) { return manager.api().get(named(kClusters, name)); }
  // The Events about the MultiKueueCluster `name` on the manager, in no particular order.
  std::vector<json> clusterEventsAbout(const std::string& name) {
    const auto list = manager.api().list(kEvents, {.fieldSelector = "involvedObject.name=" + name});
    return list["items"].get<std::vector<json>>();
  }
  // The MultiKueueCluster's Active condition, or null.
  json clusterActive(const std::string& name) {
    for (const auto& c : clusterObject(name).value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Active") return c;
    return nullptr;
  }
  // Reconciles until the worker is connected, then once more (the status write).
  ::testing::AssertionResult connect(const std::string& name) {
    registry->reconcile(name);
    // The callback runs on the informer thread after the state changed: await both.
    if (!mka::test::eventually(
            [&] { return registry->connected(name) != nullptr && recorder.last(name) == std::optional<bool>{true}; }))
      return ::testing::AssertionFailure()
             << name << " did not connect, failed attempts " << registry->failedAttempts(name);
    if (auto r = registry->reconcile(name); r != Result::done())
      return ::testing::AssertionFailure() << name << " connected but reconcile asks to come back";
    return ::testing::AssertionSuccess();
  }

  FakeClock clock;
  sandbox::Sandbox sandbox;
  sandbox::Cluster& manager;
  sandbox::Cluster& worker1;
  std::unique_ptr<kube::Client> managerClient;
  std::unique_ptr<ClientReader> objects;         // the reconcilers read the API directly: no caches to await
  Recorder recorder;                             // before the registry: its threads report here
  std::unique_ptr<EventRecorder> clusterEvents;  // before the registry, which records through it
  std::unique_ptr<ClusterRegistry> registry;     // stopped before the clusters go
};

}  // namespace mka::multikueue::fixture
