// The Workload reconciler, step by step (KUEUE-MULTIKUEUE.md §2.1-§2.3), as Kueue's
// TestWlReconcile does it: each case builds a manager and two workers on the sandbox with the
// objects it names, reconciles the manager's Workload once and compares what is stored
// afterwards. No stand-in runs: nothing changes the objects but the reconciler.

#include "mka/multikueue/workload_reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mka/api/workload_status.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/generic_adapter.h"
#include "mka/sandbox/api_error.h"
#include "sandbox_fixture.h"
#include "support/recording_events.h"
#include "support/table_test.h"

namespace mka::multikueue {

using api::clusterName;
using api::findCheckState;
using api::findCondition;
using api::isFinished;
using api::nominatedClusters;
using controller::CacheReader;
using controller::ClientReader;
using controller::Result;
namespace {

using nlohmann::json;
using std::chrono::minutes;
using ::testing::HasSubstr;

constexpr const char* kCheck = "ac1";
constexpr const char* kKey = "default/wl";
const std::vector<std::string> kWorkers = {"worker1", "worker2"};

const sandbox::ResourceRef kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", "default", "", ""};
const sandbox::ResourceRef kPipelineRuns{"tekton.dev", "v1", "pipelineruns", "default", "", ""};
const sandbox::ResourceRef kQueues{"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""};
const sandbox::ResourceRef kLocalQueues{"kueue.x-k8s.io", "v1beta2", "localqueues", "default", "", ""};

// ---- objects ----------------------------------------------------------------------------

json condition(const std::string& type, bool status, const std::string& reason = "Reason",
               const std::string& at = "2026-11-26T10:00:00Z", const std::string& message = "") {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", at}};
}

json ownerReference(const std::string& apiVersion, const std::string& kind, const std::string& name) {
  return {{"apiVersion", apiVersion}, {"kind", kind}, {"name", name}, {"uid", "uid-" + name}, {"controller", true}};
}

// The manager's Workload "default/wl" of PipelineRun "job", with quota reserved and our check
// Pending unless a case changes it.
json managerWorkload() {
  return {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata",
       {{"name", "wl"},
        {"namespace", "default"},
        {"labels", {{std::string(api::kJobUidLabel), "uid-job"}}},
        {"ownerReferences", json::array({ownerReference("tekton.dev/v1", "PipelineRun", "job")})}}},
      {"spec",
       {{"queueName", "lq"},
        {"podSets",
         json::array(
             {{{"name", "main"},
               {"count", 1},
               {"template", {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}})}}},
      {"status",
       {{"conditions", json::array({condition("QuotaReserved", true, "QuotaReserved")})},
        {"admission", {{"clusterQueue", "cq"}, {"podSetAssignments", json::array({{{"name", "main"}, {"count", 1}}})}}},
        {"admissionChecks", json::array({{{"name", kCheck},
                                          {"state", "Pending"},
                                          {"message", ""},
                                          {"lastTransitionTime", "2026-11-26T10:00:00Z"}}})}}}};
}

json& checkEntry(json& workload) { return workload["status"]["admissionChecks"][0]; }

json withCheck(json workload, const std::string& state, const std::string& message = "") {
  checkEntry(workload)["state"] = state;
  checkEntry(workload)["message"] = message;
  return workload;
}

json withCondition(json object, const json& c) {
  object["status"]["conditions"].push_back(c);
  return object;
}

json withClusterName(json workload, const std::string& cluster) {
  workload["status"]["clusterName"] = cluster;
  return workload;
}

json withoutQuota(json workload) {
  workload["status"]["conditions"] = json::array({condition("QuotaReserved", false, "Pending")});
  return workload;
}

// The manager's PipelineRun "job", marked for MultiKueue.
json managerJob(const std::string& managedBy = std::string(api::kMultiKueueControllerName)) {
  json job = {
      {"apiVersion", "tekton.dev/v1"},
      {"kind", "PipelineRun"},
      {"metadata", {{"name", "job"}, {"namespace", "default"}, {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
      {"spec", {{"pipelineRef", {{"name", "build"}}}}}};
  if (!managedBy.empty()) job["spec"]["managedBy"] = managedBy;
  return job;
}

// `patches`: the kind's remoteCopy.patches; `sync`: its syncDependencies.
Adapters adapters(const json& patches = json::array(), bool sync = false) {
  if (patches.empty() && !sync) return fixture::pipelineRunAdapters();
  config::ExternalFramework f{"PipelineRun.v1.tekton.dev", fixture::kPipelineRun, config::ManagedByLocation{}, true};
  f.remoteCopy.patches = patches;
  f.syncDependencies = sync;
  return Adapters({std::make_shared<GenericAdapter>(jobkind::JobKind(std::move(f)))});
}

// The worker's copy of the manager's Workload, as the reconciler creates it, with `conditions`.
json remoteCopy(const json& conditions = json::array(), const json& local = managerWorkload()) {
  json copy = remoteWorkload(local, "multikueue");
  copy["status"] = {{"conditions", conditions}};
  return copy;
}

json admittedAt(const std::string& at) {
  return json::array(
      {condition("QuotaReserved", true, "QuotaReserved", at), condition("Admitted", true, "Admitted", at)});
}

// The worker's copy of the job, as the reconciler creates it, with `status`.
json remoteJobCopy(const json& status = nullptr) {
  json copy = remoteJob(managerJob(), adapters().all().front()->kind(), "wl", "multikueue");
  if (!status.is_null()) copy["status"] = status;
  return copy;
}

json tektonStatus(const std::string& state, const std::string& reason) {
  return {{"conditions", json::array({{{"type", "Succeeded"},
                                       {"status", state},
                                       {"reason", reason},
                                       {"lastTransitionTime", "2026-11-26T10:05:00Z"}}})}};
}

json admissionCheck(const std::string& name, const std::string& controller, const json& parameters) {
  json ac = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "AdmissionCheck"},
             {"metadata", {{"name", name}}},
             {"spec", {{"controllerName", controller}}}};
  if (!parameters.is_null()) ac["spec"]["parameters"] = parameters;
  return ac;
}

json configParameters() { return {{"apiGroup", "kueue.x-k8s.io"}, {"kind", "MultiKueueConfig"}, {"name", "config"}}; }

// ---- one case's world ---------------------------------------------------------------------

using test::RecordingEvents;

class CountingObserver final : public DispatchObserver {
 public:
  void workloadDispatched(const std::string& clusterQueue, const std::string& cluster) override {
    std::lock_guard lock(mutex_);
    dispatched_.push_back(clusterQueue + "/" + cluster);
  }
  void workloadAdmitted(const std::string& clusterQueue, const std::string& cluster) override {
    std::lock_guard lock(mutex_);
    admitted_.push_back(clusterQueue + "/" + cluster);
  }
  std::vector<std::string> dispatched() const {
    std::lock_guard lock(mutex_);
    return dispatched_;
  }
  std::vector<std::string> admitted() const {
    std::lock_guard lock(mutex_);
    return admitted_;
  }
  void oldestInCheckState(const std::string& state, std::optional<Clock::TimePoint> since) override {
    std::lock_guard lock(mutex_);
    oldest_[state] = since;
  }
  // The last oldest heard per state (nullopt: that none is in it); states never heard of are absent.
  std::map<std::string, std::optional<Clock::TimePoint>> oldest() const {
    std::lock_guard lock(mutex_);
    return oldest_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> dispatched_, admitted_;
  std::map<std::string, std::optional<Clock::TimePoint>> oldest_;
};

// What a case starts from.
struct Given {
  json workload = managerWorkload();    // null: none on the manager
  bool deletedBeforeReconcile = false;  // seen by the informer, then deleted (rememberDeleted)
  bool terminating = false;             // deleted while a finalizer holds it
  json job = managerJob();              // null: none
  json check = admissionCheck(kCheck, std::string(config::kDefaultDispatchControllerName), configParameters());
  json extraChecks = json::array();                     // more AdmissionChecks
  json clusters = json::array({"worker1", "worker2"});  // the MultiKueueConfig's spec.clusters
  bool config = true;                                   // whether the MultiKueueConfig exists
  std::vector<std::string> connected = kWorkers;
  std::map<std::string, std::string> aliases;   // another MultiKueueCluster name -> the worker it reaches
  std::map<std::string, json> remoteWorkloads;  // worker -> Workload copy
  std::map<std::string, json> remoteJobs;       // worker -> job copy
  std::string dispatcher = std::string(config::kDispatcherAllAtOnce);
  std::chrono::nanoseconds advance{0};  // the clock moves this far after the workers connect
  // Per worker, its ClusterQueues and LocalQueues: that worker then serves both kinds, and the
  // registry has read them before the reconcile (the quota-aware dispatcher's view).
  std::map<std::string, std::vector<json>> workerQueues;
  bool orchestratedPreemption = true;
  std::set<std::string> withoutJobKind;    // workers without the PipelineRun CRD
  json copyPatches = json::array();        // the kind's remoteCopy.patches
  bool syncDependencies = false;           // the kind's syncDependencies
  std::vector<json> managerObjects;        // Secrets and ServiceAccounts in the manager's default namespace
  std::set<std::string> withoutNamespace;  // workers whose namespace default is deleted before the reconcile
  std::map<std::string, std::vector<json>> workerObjects;  // worker -> Secrets and ServiceAccounts there
};

// What a case expects after one reconcile.
struct Expected {
  Result result = Result::done();
  std::string error;       // a substring of the error thrown; "" = none
  std::string checkState;  // "" = unchanged
  std::string checkMessage;
  std::string clusterName;  // "" = unset
  std::vector<std::string> nominated;
  std::string finishedReason;                   // "" = not Finished
  std::map<std::string, bool> remoteWorkloads;  // worker -> copy present (unlisted: not checked)
  std::map<std::string, bool> remoteJobs;
  std::vector<std::string> events;
  std::vector<std::string> eventKinds;    // the kind of object each event is about; empty: not checked
  std::optional<std::size_t> remembered;  // WorkloadReconciler::remembered() after the reconcile
  std::vector<std::string> dispatched;
  std::vector<std::string> admitted;
  json localJobStatus = nullptr;     // the manager's job status, when checked
  std::string deactivationTargetOn;  // a worker whose copy must be DeactivationTarget=True
  // Per worker: the copy's spec.preemptionGates, and when its kueue.x-k8s.io/multikueue gate in
  // status is Open (its lastTransitionTime; "" = not open).
  std::map<std::string, json> remoteSpecGates;
  std::map<std::string, std::string> gateOpenedAt;
  // Per worker, the dependency copies there ("Secret/name") and the owners each names.
  std::map<std::string, std::map<std::string, std::string>> dependencyOwners;
};

class World {
 public:
  explicit World(const Given& given) {
    using fixture::kCrds;
    auto crds = fixture::managerCrds();
    crds.push_back(kCrds / "kueue.x-k8s.io_workloads.yaml");
    crds.push_back(kCrds / "tekton.dev_pipelineruns.yaml");
    manager_ = &sandbox_.addCluster({.name = "manager", .crdFiles = crds});
    for (const auto& w : kWorkers) {
      auto workerCrds = given.withoutJobKind.contains(w)
                            ? std::vector<std::filesystem::path>{kCrds / "kueue.x-k8s.io_workloads.yaml"}
                            : fixture::workerCrds();
      if (given.workerQueues.contains(w)) {
        workerCrds.push_back(kCrds / "kueue.x-k8s.io_clusterqueues.yaml");
        workerCrds.push_back(kCrds / "kueue.x-k8s.io_localqueues.yaml");
      }
      workers_[w] = &sandbox_.addCluster({.name = w, .crdFiles = workerCrds});
    }
    manager_->api().create(fixture::kNamespaces, {{"metadata", {{"name", "kueue-system"}}}});
    for (const auto& w : given.withoutNamespace) {
      workers_.at(w)->api().remove(fixture::named(fixture::kNamespaces, "default"));
      EXPECT_TRUE(test::eventually([&] {
        return !getIfExists(*workers_.at(w), fixture::named(fixture::kNamespaces, "default"));
      })) << "namespace default not deleted on "
          << w;
    }
    const auto createCore = [](sandbox::Cluster& cluster, const json& object) {
      const std::string plural = object["kind"] == "Secret" ? "secrets" : "serviceaccounts";
      cluster.api().create({"", "v1", plural, "default", "", ""}, object);
    };
    for (const auto& object : given.managerObjects) createCore(*manager_, object);
    for (const auto& [w, objects] : given.workerObjects)
      for (const auto& object : objects) createCore(*workers_.at(w), object);
    managerClient_ = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(manager_->kubeconfig())), fastClient()));

    put(*manager_, fixture::kChecks, given.check);
    for (const auto& ac : given.extraChecks) put(*manager_, fixture::kChecks, ac);
    if (given.config)
      put(*manager_, fixture::kConfigs,
          {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
           {"kind", "MultiKueueConfig"},
           {"metadata", {{"name", "config"}}},
           {"spec", {{"clusters", given.clusters}}}});
    if (!given.job.is_null()) put(*manager_, kPipelineRuns, given.job);
    if (!given.workload.is_null()) {
      json workload = given.workload;
      if (given.terminating) workload["metadata"]["finalizers"] = json::array({"test.dev/hold"});
      put(*manager_, kWorkloads, workload);
      if (given.terminating) manager_->api().remove(fixture::named(kWorkloads, "wl"));
    }
    for (const auto& [w, object] : given.remoteWorkloads) put(*workers_.at(w), kWorkloads, object);
    for (const auto& [w, object] : given.remoteJobs) put(*workers_.at(w), kPipelineRuns, object);
    for (const auto& [w, objects] : given.workerQueues)
      for (const auto& object : objects)
        put(*workers_.at(w), object["kind"] == "ClusterQueue" ? kQueues : kLocalQueues, object);

    startCaches();
    startRegistry(given.connected, given.aliases);
    for (const auto& [w, objects] : given.workerQueues) {
      if (std::find(given.connected.begin(), given.connected.end(), w) == given.connected.end()) continue;
      const auto queues = static_cast<std::size_t>(
          std::count_if(objects.begin(), objects.end(), [](const json& o) { return o["kind"] == "ClusterQueue"; }));
      EXPECT_TRUE(test::eventually([&] {
        const auto remote = registry_->connected(w);
        const auto snapshot = remote ? remote->capacity() : nullptr;
        return snapshot && snapshot->clusterQueues().size() == queues;
      })) << w
          << ": queues not read";
    }
    clock_.advance(given.advance);

    WorkloadReconciler::Options options;
    options.adapters = adapters(given.copyPatches, given.syncDependencies);
    options.dispatcherName = given.dispatcher;
    options.incrementalStepSize = 1;
    options.orchestratedPreemption = given.orchestratedPreemption;
    events_ = std::make_unique<RecordingEvents>(*managerClient_, clock_, "kueue-workload-controller");
    reconciler_ = std::make_unique<WorkloadReconciler>(*managerClient_, caches_, *registry_, *events_, clock_, options,
                                                       &observer_);
    if (given.deletedBeforeReconcile) {
      reconciler_->rememberDeleted(*workloads_->get(kKey));
      manager_->api().remove(fixture::named(kWorkloads, "wl"));
      EXPECT_TRUE(test::eventually([&] { return !workloads_->get(kKey).has_value(); }));
    }
  }

  ~World() {
    if (registry_) registry_->stop();
    for (auto& informer : informers_) informer->stop();
  }

  WorkloadReconciler& reconciler() { return *reconciler_; }
  // Reconciles once the manager's cache shows the Workload as stored (a reconcile that finds the
  // cache behind its own last write waits for the informer's event, which a test calling the
  // reconciler directly does not deliver).
  Result reconcileWhenCached() {
    const auto stored = managerObject(kWorkloads, "wl");
    EXPECT_TRUE(test::eventually([&] {
      const auto cached = workloads_->get(kKey);
      return stored && cached && (*cached)["metadata"]["resourceVersion"] == (*stored)["metadata"]["resourceVersion"];
    }));
    return reconciler_->reconcile(kKey);
  }
  std::shared_ptr<RemoteCluster> remote(const std::string& worker) { return registry_->connected(worker); }
  void advance(std::chrono::nanoseconds by) { clock_.advance(by); }
  // Rewrites a worker ClusterQueue's reservation of its first flavor and waits until the
  // registry's view shows it.
  void setReserved(const std::string& worker, const std::string& clusterQueue, int gpus) {
    auto ref = fixture::named(kQueues, clusterQueue);
    auto cq = workers_.at(worker)->api().get(ref);
    cq["status"]["flavorsReservation"][0]["resources"][0]["total"] = std::to_string(gpus);
    ref.subresource = "status";
    workers_.at(worker)->api().update(ref, cq);
    EXPECT_TRUE(test::eventually([&] {
      const auto snapshot = remote(worker)->capacity();
      if (!snapshot) return false;
      const auto& queues = snapshot->clusterQueues();
      const auto it = queues.find(clusterQueue);
      return it != queues.end() && !it->second.quotas.empty() &&
             it->second.quotas.begin()->second.reserved == gpus * 1000;
    }));
  }
  const RecordingEvents& events() const { return *events_; }
  const CountingObserver& observer() const { return observer_; }

  std::optional<json> managerObject(const sandbox::ResourceRef& ref, const std::string& name) {
    return getIfExists(*manager_, fixture::named(ref, name));
  }
  // "Kind/name" -> owners annotation of every dependency copy on `worker`.
  std::map<std::string, std::string> dependencyCopies(const std::string& worker) {
    std::map<std::string, std::string> out;
    for (const auto* plural : {"secrets", "configmaps", "serviceaccounts"}) {
      const auto list = workers_.at(worker)->api().list(
          {"", "v1", plural, "default", "", ""}, {.labelSelector = "kueue.x-k8s.io/multikueue-origin=multikueue"});
      for (const auto& item : list.value("items", json::array()))
        out[item.value("kind", std::string(plural)) + "/" + item["metadata"].value("name", "")] =
            item["metadata"].value("annotations", json::object()).value(std::string(kDependencyOwnersAnnotation), "");
    }
    return out;
  }
  sandbox::Cluster& worker(const std::string& name) { return *workers_.at(name); }
  std::optional<json> workerObject(const std::string& worker, const sandbox::ResourceRef& ref) {
    const auto name = ref.plural == "workloads" ? "wl" : "job";
    return getIfExists(*workers_.at(worker), fixture::named(ref, name));
  }

 private:
  static kube::ClientOptions fastClient() { return fixture::fastClient(); }

  static std::optional<json> getIfExists(sandbox::Cluster& cluster, const sandbox::ResourceRef& ref) {
    try {
      return cluster.api().get(ref);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // Creates `object`, then writes its status through the status subresource (a create ignores
  // the status of kinds that have one, as kube-apiserver does).
  static void put(sandbox::Cluster& cluster, const sandbox::ResourceRef& ref, const json& object) {
    const auto name = object["metadata"]["name"].get<std::string>();
    auto stored = *cluster.api().create(ref, object);
    if (!object.contains("status")) return;
    stored["status"] = object["status"];
    auto status = fixture::named(ref, name);
    status.subresource = "status";
    try {
      cluster.api().update(status, stored);
    } catch (const sandbox::ApiError& e) {
      if (e.code() != 404) throw;
      cluster.api().update(fixture::named(ref, name), stored);  // a kind without a status subresource
    }
  }

  void startCaches() {
    const auto add = [&](const api::GroupVersionKind& gvk) {
      informers_.push_back(std::make_unique<kube::Informer>(*managerClient_, gvk));
      caches_.add(*informers_.back());
      return informers_.back().get();
    };
    workloads_ = add(api::kWorkloadGvk);
    add(api::kAdmissionCheckGvk);
    add(api::kMultiKueueConfigGvk);
    add(fixture::kPipelineRun);
    for (auto& informer : informers_) informer->start();
    for (auto& informer : informers_) EXPECT_TRUE(informer->waitForSync(std::chrono::seconds{30}));
  }

  void startRegistry(const std::vector<std::string>& connected, const std::map<std::string, std::string>& aliases) {
    ClusterRegistryOptions options;
    options.adapters = adapters();
    options.clientOptions = fastClient();
    options.informerInitialBackoff = std::chrono::milliseconds{10};
    options.informerMaxBackoff = std::chrono::milliseconds{50};
    objects_ = std::make_unique<ClientReader>(*managerClient_);
    registry_ = std::make_unique<ClusterRegistry>(*managerClient_, *objects_, clock_, options);
    std::vector<std::pair<std::string, std::string>> names;  // MultiKueueCluster -> worker
    for (const auto& w : connected) names.emplace_back(w, w);
    for (const auto& [alias, w] : aliases) names.emplace_back(alias, w);
    for (const auto& [w, worker] : names) {
      const json secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", w}, {"namespace", "kueue-system"}}},
                           {"data", {{"kubeconfig", base64Encode(workers_.at(worker)->kubeconfig())}}}};
      manager_->api().create(fixture::kSecrets, secret);
      manager_->api().create(fixture::kClusters, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                                  {"kind", "MultiKueueCluster"},
                                                  {"metadata", {{"name", w}}},
                                                  {"spec", {{"clusterSource", {{"kubeConfig", {{"location", w}}}}}}}});
      registry_->reconcile(w);
      EXPECT_TRUE(test::eventually([&] { return registry_->connected(w) != nullptr; })) << w << " did not connect";
    }
  }

  FakeClock clock_;
  sandbox::Sandbox sandbox_;
  sandbox::Cluster* manager_ = nullptr;
  std::map<std::string, sandbox::Cluster*> workers_;
  std::unique_ptr<kube::Client> managerClient_;
  std::unique_ptr<ClientReader> objects_;
  std::vector<std::unique_ptr<kube::Informer>> informers_;
  kube::Informer* workloads_ = nullptr;
  CacheReader caches_;
  std::unique_ptr<ClusterRegistry> registry_;
  std::unique_ptr<RecordingEvents> events_;
  CountingObserver observer_;
  std::unique_ptr<WorkloadReconciler> reconciler_;
};

struct Case {
  std::string name;
  Given given;
  Expected expected;
};

void verify(World& world, const Expected& want) {
  const auto workload = world.managerObject(kWorkloads, "wl");
  if (workload) {
    const auto* entry = findCheckState(*workload, kCheck);
    if (!want.checkState.empty()) {
      ASSERT_NE(entry, nullptr);
      EXPECT_EQ(entry->value("state", ""), want.checkState);
      EXPECT_EQ(entry->value("message", ""), want.checkMessage);
    }
    EXPECT_EQ(clusterName(*workload), want.clusterName);
    EXPECT_EQ(nominatedClusters(*workload), want.nominated);
    const auto* finished = findCondition(*workload, api::condition::kFinished);
    if (want.finishedReason.empty()) {
      EXPECT_FALSE(isFinished(*workload));
    } else {
      ASSERT_NE(finished, nullptr);
      EXPECT_TRUE(isFinished(*workload));
      EXPECT_EQ(finished->value("reason", ""), want.finishedReason);
    }
  }
  for (const auto& [worker, present] : want.remoteWorkloads)
    EXPECT_EQ(world.workerObject(worker, kWorkloads).has_value(), present) << "Workload copy on " << worker;
  for (const auto& [worker, present] : want.remoteJobs)
    EXPECT_EQ(world.workerObject(worker, kPipelineRuns).has_value(), present) << "job copy on " << worker;
  EXPECT_EQ(world.events().events(), want.events);
  if (want.remembered) {
    EXPECT_EQ(world.reconciler().remembered(), *want.remembered) << "kept after the Workload went";
  }
  if (!want.eventKinds.empty()) {
    EXPECT_EQ(world.events().kinds(), want.eventKinds);
  }
  EXPECT_EQ(world.observer().dispatched(), want.dispatched);
  EXPECT_EQ(world.observer().admitted(), want.admitted);
  if (!want.localJobStatus.is_null()) {
    const auto job = world.managerObject(kPipelineRuns, "job");
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->value("status", json()), want.localJobStatus);
  }
  for (const auto& [worker, gates] : want.remoteSpecGates) {
    const auto copy = world.workerObject(worker, kWorkloads);
    ASSERT_TRUE(copy.has_value()) << worker;
    EXPECT_EQ((*copy)["spec"].value("preemptionGates", json()), gates) << worker;
  }
  for (const auto& [worker, at] : want.gateOpenedAt) {
    const auto copy = world.workerObject(worker, kWorkloads);
    ASSERT_TRUE(copy.has_value()) << worker;
    std::string opened;
    for (const auto& g : (*copy)["status"].value("preemptionGates", json::array()))
      if (g.value("name", "") == "kueue.x-k8s.io/multikueue" && g.value("position", "") == "Open")
        opened = g.value("lastTransitionTime", "");
    EXPECT_EQ(opened, at) << worker;
  }
  for (const auto& [worker, copies] : want.dependencyOwners)
    EXPECT_EQ(world.dependencyCopies(worker), copies) << "dependency copies on " << worker;
  if (!want.deactivationTargetOn.empty()) {
    const auto copy = world.workerObject(want.deactivationTargetOn, kWorkloads);
    ASSERT_TRUE(copy.has_value());
    const auto* c = findCondition(*copy, api::condition::kDeactivationTarget);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->value("status", ""), "True");
    EXPECT_EQ(c->value("reason", ""), kReasonEvictedOnManagerCluster);
  }
}

void runCase(const Case& c) {
  World world(c.given);
  if (::testing::Test::HasFatalFailure()) return;
  std::optional<Result> result;
  std::string error;
  try {
    result = world.reconciler().reconcile(kKey);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (c.expected.error.empty()) {
    EXPECT_EQ(error, "");
    if (result) {
      EXPECT_EQ(result->requeueAfter.count(), c.expected.result.requeueAfter.count());
    }
  } else {
    EXPECT_THAT(error, HasSubstr(c.expected.error));
  }
  verify(world, c.expected);
}

const std::string kWhen = "2026-11-26T10:01:00Z";
const std::string kEarlier = "2026-11-26T10:00:30Z";
const std::string kAdmittedMessage = "The workload was admitted on \"worker1\"";

// ---- §2.1 and §2.2: which Workloads, which adapter, which owner ----------------------------

std::vector<Case> entryAndAdapterSelectionCases() {
  std::vector<Case> cases;
  {
    Case c{"no Workload, none remembered: nothing to do", {}, {}};
    c.given.workload = nullptr;
    cases.push_back(c);
  }
  {
    Case c{"a check of another controller: the Workload is not ours", {}, {}};
    c.given.check = admissionCheck(kCheck, "example.com/other", configParameters());
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"our check Rejected: left alone", {}, {}};
    c.given.workload = withCheck(managerWorkload(), "Rejected", "no");
    c.expected.checkState = "Rejected";
    c.expected.checkMessage = "no";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"no owner at all: Rejected, no adapter", {}, {}};
    c.given.workload = managerWorkload();
    c.given.workload["metadata"].erase("ownerReferences");
    c.expected.checkState = "Rejected";
    c.expected.checkMessage = "No multikueue adapter found, Previously: \"Pending\"";
    cases.push_back(c);
  }
  {
    Case c{"an owner of a kind not configured: Rejected, naming the kind", {}, {}};
    c.given.workload = managerWorkload();
    c.given.workload["metadata"]["ownerReferences"] = json::array({ownerReference("batch/v1", "Job", "job")});
    c.expected.checkState = "Rejected";
    c.expected.checkMessage =
        "No multikueue adapter found for owner kind \"batch/v1, Kind=Job\", Previously: \"Pending\"";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"job-owner annotations name a configured kind: it is the owner, before ownerReferences", {}, {}};
    c.given.workload = managerWorkload();
    c.given.workload["metadata"]["ownerReferences"] = json::array({ownerReference("batch/v1", "Job", "other")});
    c.given.workload["metadata"]["annotations"] = {{"kueue.x-k8s.io/job-owner-gvk", "tekton.dev/v1, Kind=PipelineRun"},
                                                   {"kueue.x-k8s.io/job-owner-name", "job"}};
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker1", "cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"the owner is not marked for MultiKueue: Rejected with Kueue's reason", {}, {}};
    c.given.job = managerJob("tekton.dev/pipeline");
    c.expected.checkState = "Rejected";
    c.expected.checkMessage =
        "The owner is not managed by Kueue: Expecting .spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not "
        "\"tekton.dev/pipeline\", Previously: \"Pending\"";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"the owner job does not exist: an error, retried", {}, {}};
    c.given.job = nullptr;
    c.expected.error = "not found";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"the check's MultiKueueConfig does not exist: an error naming it", {}, {}};
    c.given.config = false;
    c.expected.error = "MultiKueueConfig \"config\" not found";
    cases.push_back(c);
  }
  {
    Case c{"the check has no parameters: an error with Kueue's words", {}, {}};
    c.given.check = admissionCheck(kCheck, std::string(config::kDefaultDispatchControllerName), nullptr);
    c.expected.error = "cannot load its MultiKueueConfig: missing parameters reference";
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, EntryAndAdapterSelection, Case, entryAndAdapterSelectionCases()) {
  runCase(testCase());
}

// ---- §2.1 step 6 and §2.3 (2): nothing stays on the workers unless the Workload runs --------

std::vector<Case> cleanupWhenDeletedOrNotRunningCases() {
  std::vector<Case> cases;
  const auto withCopies = [](Case c) {
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}, {"worker2", remoteCopy()}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy()}};
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    c.expected.remoteJobs = {{"worker1", false}};
    return c;
  };
  {
    Case c{"deleted (remembered from the informer): every copy removed, nothing kept", {}, {}};
    c.given.deletedBeforeReconcile = true;
    c.expected.remembered = 0;
    cases.push_back(withCopies(c));
  }
  {
    Case c{"deleted with its owner job gone: every copy removed still", {}, {}};
    c.given.deletedBeforeReconcile = true;
    c.given.job = nullptr;
    c.expected.remembered = 0;
    cases.push_back(withCopies(c));
  }
  {
    Case c{"terminating: every copy removed", {}, {}};
    c.given.terminating = true;
    cases.push_back(withCopies(c));
  }
  {
    Case c{"quota no longer reserved: every copy removed", {}, {}};
    c.given.workload = withoutQuota(managerWorkload());
    cases.push_back(withCopies(c));
  }
  {
    Case c{"finished on the manager: every copy removed", {}, {}};
    c.given.workload = withCondition(managerWorkload(), condition("Finished", true, "Succeeded"));
    c.expected.finishedReason = "Succeeded";
    cases.push_back(withCopies(c));
  }
  {
    Case c{"not running, nothing on the workers, all reachable: done", {}, {}};
    c.given.workload = withoutQuota(managerWorkload());
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"not running and a worker unreachable: looked at again after workerLostTimeout", {}, {}};
    c.given.workload = withoutQuota(managerWorkload());
    c.given.connected = {"worker1"};
    c.expected.result = Result::after(minutes{15});
    cases.push_back(c);
  }
  {
    Case c{"not running, a copy on one worker, the other unreachable: removed, then after workerLostTimeout", {}, {}};
    c.given.workload = withoutQuota(managerWorkload());
    c.given.connected = {"worker1"};
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}};
    c.expected.remoteWorkloads = {{"worker1", false}};
    c.expected.result = Result::after(minutes{15});
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, CleanupWhenDeletedOrNotRunning, Case, cleanupWhenDeletedOrNotRunningCases()) {
  runCase(testCase());
}

// ---- §2.3 (3) and (4): a worker finished or evicted its copy --------------------------------

std::vector<Case> remoteFinishedOrEvictedCases() {
  std::vector<Case> cases;
  const auto running = withClusterName(withCheck(managerWorkload(), "Ready", kAdmittedMessage), "worker1");
  {
    Case c{"finished on the winner: final job status copied, Finished with the worker's reason", {}, {}};
    c.given.workload = running;
    c.given.remoteWorkloads = {
        {"worker1", remoteCopy(json::array({condition("Admitted", true, "Admitted"),
                                            condition("Finished", true, "Succeeded", kWhen, "done")}))}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy(tektonStatus("True", "Succeeded"))}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.finishedReason = "Succeeded";
    c.expected.localJobStatus = tektonStatus("True", "Succeeded");
    c.expected.remoteWorkloads = {{"worker1", true}};
    cases.push_back(c);
  }
  {
    Case c{"finished OutOfSync while Ready: Retry, re-dispatched, a Warning", {}, {}};
    c.given.workload = running;
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Finished", true, "OutOfSync")}))}};
    const std::string message =
        "Remote workload on worker cluster \"worker1\" is out of sync with its user job, resetting for re-dispatch, "
        "Previously: \"Ready\"";
    c.expected.checkState = "Retry";
    c.expected.checkMessage = message;
    c.expected.clusterName = "worker1";
    c.expected.events = {"Warning MultiKueue: " + message};
    cases.push_back(c);
  }
  {
    // kueue#14997 (pkg/controller/admissionchecks/multikueue/workload.go, reconcileGroup): the
    // worker's job went away under its Workload; not the job's end.
    Case c{"finished OwnerNotFound while Ready: Retry, re-dispatched, a Warning", {}, {}};
    c.given.workload = running;
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Finished", true, "OwnerNotFound")}))}};
    const std::string message =
        "Remote workload on worker cluster \"worker1\" lost its job there (OwnerNotFound), resetting for "
        "re-dispatch, Previously: \"Ready\"";
    c.expected.checkState = "Retry";
    c.expected.checkMessage = message;
    c.expected.clusterName = "worker1";
    c.expected.events = {"Warning MultiKueue: " + message};
    cases.push_back(c);
  }
  {
    Case c{"finished OutOfSync while Pending: nothing changes", {}, {}};
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Finished", true, "OutOfSync")}))}};
    c.expected.checkState = "Pending";
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"the earliest finish wins when two workers report one", {}, {}};
    c.given.workload = running;
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Finished", true, "Succeeded", kWhen)}))},
                               {"worker2", remoteCopy(json::array({condition("Finished", true, "Failed", kEarlier)}))}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.finishedReason = "Failed";
    cases.push_back(c);
  }
  {
    Case c{"evicted on the worker while Ready: Retry, re-admitted elsewhere, an Event", {}, {}};
    c.given.workload = running;
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Evicted", true, "Preempted")}))}};
    const std::string message =
        "Workload evicted on worker cluster: \"worker1\", resetting for re-admission. Previously: \"Ready\"";
    c.expected.checkState = "Retry";
    c.expected.checkMessage = message;
    c.expected.clusterName = "worker1";
    c.expected.events = {"Normal MultiKueue: " + message};
    cases.push_back(c);
  }
  {
    Case c{"evicted on the worker and on the manager: the job's status still copied, nothing else", {}, {}};
    c.given.workload = withCondition(running, condition("Evicted", true, "Preempted"));
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Evicted", true, "Preempted")}))}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy(tektonStatus("Unknown", "Stopping"))}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.localJobStatus = tektonStatus("Unknown", "Stopping");
    c.expected.remoteJobs = {{"worker1", true}};
    cases.push_back(c);
  }
  {
    Case c{"evicted on a worker while Pending: falls through, dispatched as usual", {}, {}};
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array({condition("Evicted", true, "Preempted")}))}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, RemoteFinishedOrEvicted, Case, remoteFinishedOrEvictedCases()) {
  runCase(testCase());
}

// ---- §2.3 (5) and (6): out-of-sync copies, the winner, lost winners --------------------------

std::vector<Case> outOfSyncCopiesAndTheWinnerCases() {
  std::vector<Case> cases;
  const auto ready = withClusterName(withCheck(managerWorkload(), "Ready", kAdmittedMessage), "worker1");
  {
    Case c{"a copy whose spec differs: deleted and created again from the manager's", {}, {}};
    json stale = managerWorkload();
    stale["spec"]["queueName"] = "old";
    c.given.remoteWorkloads = {{"worker1", remoteCopy(json::array(), stale)}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker1", "cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"the first worker admits: other copies go, job copy created, Ready with clusterName, an Event", {}, {}};
    c.given.workload = managerWorkload();
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker1", "worker2"});
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}, {"worker2", remoteCopy()}};
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.remoteJobs = {{"worker1", true}, {"worker2", false}};
    c.expected.events = {"Normal MultiKueue: " + kAdmittedMessage};
    c.expected.admitted = {"cq/worker1"};
    cases.push_back(c);
  }
  {
    Case c{"two workers admitted: the earlier admission wins", {}, {}};
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))},
                               {"worker2", remoteCopy(admittedAt(kEarlier))}};
    const std::string message = "The workload was admitted on \"worker2\"";
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = message;
    c.expected.clusterName = "worker2";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.remoteJobs = {{"worker1", false}, {"worker2", true}};
    c.expected.events = {"Normal " + std::string(kEventReason) + ": " + message};
    c.expected.admitted = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"a recorded winner stays the winner though another admitted earlier", {}, {}};
    c.given.workload = ready;
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))},
                               {"worker2", remoteCopy(admittedAt(kEarlier))}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy()}};
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"Ready and running: the job's new status copied back, no second Event", {}, {}};
    c.given.workload = ready;
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy(tektonStatus("Unknown", "Running"))}};
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.localJobStatus = tektonStatus("Unknown", "Running");
    cases.push_back(c);
  }
  {
    Case c{"evicted on the manager while running: the worker's copy is asked to deactivate", {}, {}};
    c.given.workload = withCondition(ready, condition("Evicted", true, "Preempted", kWhen, "preempted by wl2"));
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy()}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.deactivationTargetOn = "worker1";
    c.expected.remoteJobs = {{"worker1", true}};
    cases.push_back(c);
  }
  {
    Case c{"in Retry: the job is synced but the check is not set Ready again", {}, {}};
    c.given.workload = withCheck(managerWorkload(), "Retry", "again");
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}};
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Retry";
    c.expected.checkMessage = "again";
    c.expected.remoteJobs = {{"worker1", true}};
    cases.push_back(c);
  }
  {
    Case c{"a job of that name on the winner that is not ours: an error naming it, left untouched", {}, {}};
    json foreign = managerJob("");
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}};
    c.given.remoteJobs = {{"worker1", foreign}};
    c.expected.error = "remote object is not owned by MultiKueue";
    c.expected.checkState = "Pending";
    c.expected.remoteJobs = {{"worker1", true}};
    cases.push_back(c);
  }
  {
    Case c{"Ready with no cluster recorded: Retry, as Kueue reports it", {}, {}};
    c.given.workload = withCheck(managerWorkload(), "Ready", kAdmittedMessage);
    c.expected.checkState = "Retry";
    c.expected.checkMessage = std::string(message::kReadyWithoutCluster) + ", Previously: \"Ready\"";
    cases.push_back(c);
  }
  {
    Case c{"Ready, the winner unreachable within workerLostTimeout: looked at again when it ends", {}, {}};
    c.given.workload = ready;
    c.given.connected = {"worker2"};
    c.given.advance = minutes{5};
    c.expected.result = Result::after(minutes{10});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    cases.push_back(c);
  }
  {
    Case c{"Ready, the winner unreachable past workerLostTimeout: Retry, admitting remote lost", {}, {}};
    c.given.workload = ready;
    c.given.connected = {"worker2"};
    c.given.advance = minutes{16};
    c.expected.checkState = "Retry";
    c.expected.checkMessage = "Admitting remote lost, Previously: \"Ready\"";
    c.expected.clusterName = "worker1";
    cases.push_back(c);
  }
  {
    Case c{"Ready, the winner reachable but its copy gone: Retry at once", {}, {}};
    c.given.workload = ready;
    c.expected.checkState = "Retry";
    c.expected.checkMessage = "Admitting remote no longer exists, Previously: \"Ready\"";
    c.expected.clusterName = "worker1";
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, OutOfSyncCopiesAndTheWinner, Case, outOfSyncCopiesAndTheWinnerCases()) {
  runCase(testCase());
}

// ---- the MultiKueueConfig's workers change (docs/worker-sets.md) ----------------------------

std::vector<Case> workersTheConfigDroppedCases() {
  std::vector<Case> cases;
  const auto readyOn2 =
      withClusterName(withCheck(managerWorkload(), "Ready", "The workload was admitted on \"worker2\""), "worker2");
  {
    Case c{"pending: the copy on a dropped worker goes, only the current set is nominated", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker1", "worker2"});
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}, {"worker2", remoteCopy()}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"a dropped worker admitted before anyone recorded it: not the winner, removed with its job", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}, {"worker2", remoteCopy(admittedAt(kEarlier))}};
    c.given.remoteJobs = {{"worker2", remoteJobCopy()}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.remoteJobs = {{"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"the winner's worker dropped: the job runs on there, its status still copied back", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.workload = readyOn2;
    c.given.remoteWorkloads = {{"worker2", remoteCopy(admittedAt(kWhen))}};
    c.given.remoteJobs = {{"worker2", remoteJobCopy(tektonStatus("Unknown", "Running"))}};
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = "The workload was admitted on \"worker2\"";
    c.expected.clusterName = "worker2";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.remoteJobs = {{"worker2", true}};
    c.expected.localJobStatus = tektonStatus("Unknown", "Running");
    cases.push_back(c);
  }
  {
    Case c{"the winner's worker dropped and the job finished there: Finished, then its copies go", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.workload = readyOn2;
    c.given.remoteWorkloads = {
        {"worker2", remoteCopy(json::array({condition("QuotaReserved", true, "QuotaReserved", kWhen),
                                            condition("Admitted", true, "Admitted", kWhen),
                                            condition("Finished", true, "Succeeded", kWhen, "done")}))}};
    c.given.remoteJobs = {{"worker2", remoteJobCopy(tektonStatus("True", "Succeeded"))}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = "The workload was admitted on \"worker2\"";
    c.expected.clusterName = "worker2";
    c.expected.finishedReason = "Succeeded";
    c.expected.localJobStatus = tektonStatus("True", "Succeeded");
    cases.push_back(c);
  }
  {
    Case c{"finished: copies on the dropped winner's worker are removed", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.workload = withCondition(readyOn2, condition("Finished", true, "Succeeded"));
    c.given.remoteWorkloads = {{"worker2", remoteCopy(admittedAt(kWhen))}};
    c.given.remoteJobs = {{"worker2", remoteJobCopy()}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = "The workload was admitted on \"worker2\"";
    c.expected.clusterName = "worker2";
    c.expected.finishedReason = "Succeeded";
    c.expected.remoteWorkloads = {{"worker2", false}};
    c.expected.remoteJobs = {{"worker2", false}};
    cases.push_back(c);
  }
  {
    // Kueue's eviction clears clusterName; the job copy tells which worker ran it, and its
    // status is what releases the manager's quota (the kind's active rule).
    Case c{"evicted, still reserved, the job copy's worker dropped: kept, its job status still copied", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.workload = withCondition(withCheck(managerWorkload(), "Pending"), condition("Evicted", true, "Preempted"));
    c.given.remoteWorkloads = {{"worker2", remoteCopy(json::array({condition("Evicted", true, "Preempted")}))}};
    c.given.remoteJobs = {{"worker2", remoteJobCopy(tektonStatus("Unknown", "Stopping"))}};
    c.expected.checkState = "Pending";
    c.expected.remoteWorkloads = {{"worker2", true}};
    c.expected.remoteJobs = {{"worker2", true}};
    c.expected.localJobStatus = tektonStatus("Unknown", "Stopping");
    cases.push_back(c);
  }
  {
    Case c{"a worker the config lists under another name: its copy is the group's, kept", {}, {}};
    c.given.clusters = json::array({"alias1", "worker2"});
    c.given.aliases = {{"alias1", "worker1"}};
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}, {"worker2", remoteCopy()}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"alias1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", true}};
    cases.push_back(c);
  }
  {
    Case c{"deleted: copies on a dropped worker are removed too", {}, {}};
    c.given.clusters = json::array({"worker1"});
    c.given.deletedBeforeReconcile = true;
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}, {"worker2", remoteCopy()}};
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, WorkersTheConfigDropped, Case, workersTheConfigDroppedCases()) {
  runCase(testCase());
}

// ---- §2.3 (8), (9) and §2.14: nomination and copies ----------------------------------------

std::vector<Case> nominationAndDispatchCases() {
  std::vector<Case> cases;
  {
    Case c{"Pending, AllAtOnce: a copy on every reachable worker, all nominated", {}, {}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", true}};
    c.expected.remoteJobs = {{"worker1", false}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1", "cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"Pending, AllAtOnce, a worker unreachable: only the reachable one", {}, {}};
    c.given.connected = {"worker2"};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker2"};
    c.expected.remoteWorkloads = {{"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"Pending, copies already there: nothing created twice", {}, {}};
    c.given.workload = managerWorkload();
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker1", "worker2"});
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}, {"worker2", remoteCopy()}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", true}};
    cases.push_back(c);
  }
  {
    Case c{"a remoteCopy patch that fails on the job: no copy anywhere, a Warning on the job", {}, {}};
    c.given.copyPatches = json::parse(R"([{"op": "test", "path": "/spec/pipelineRef/name", "value": "other"}])");
    const std::string problem =
        "PipelineRun default/job: remoteCopy.patches[0] (test /spec/pipelineRef/name) of PipelineRun.v1.tekton.dev "
        "does not apply: [json.exception.other_error.501] unsuccessful: "
        "{\"op\":\"test\",\"path\":\"/spec/pipelineRef/name\",\"value\":\"other\"}; no worker gets a copy until "
        "the job or the patch changes";
    c.expected.error = problem;
    c.expected.checkState = "Pending";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    c.expected.events = {"Warning RemoteCopyFailed: " + problem};
    c.expected.eventKinds = {"PipelineRun"};
    cases.push_back(c);
  }
  {
    Case c{"another check not Ready yet: nothing dispatched", {}, {}};
    c.given.extraChecks = json::array({admissionCheck("provisioning", "example.com/provisioning", nullptr)});
    c.given.workload = managerWorkload();
    c.given.workload["status"]["admissionChecks"].push_back(
        {{"name", "provisioning"}, {"state", "Pending"}, {"message", ""}, {"lastTransitionTime", kWhen}});
    c.expected.checkState = "Pending";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"Pending with a cluster recorded: no new nomination", {}, {}};
    c.given.workload = withClusterName(managerWorkload(), "worker1");
    c.expected.checkState = "Pending";
    c.expected.clusterName = "worker1";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    // Kueue's eviction reset the check to Pending and cleared clusterName; the quota stays held
    // until the job has stopped. A copy sent now would only be deactivated where it is admitted.
    Case c{"evicted, still holding its quota, no copy anywhere: nothing dispatched", {}, {}};
    c.given.workload = withCondition(withCheck(managerWorkload(), "Pending"),
                                     condition("Evicted", true, "Deactivated", kWhen, "The workload is deactivated"));
    c.expected.checkState = "Pending";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    c.expected.remoteJobs = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c{"Incremental: the first round nominates the first step of workers", {}, {}};
    c.given.dispatcher = std::string(config::kDispatcherIncremental);
    c.expected.result = Result::after(kIncrementalRoundTimeout);
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  {
    Case c{"an external dispatcher's nomination: copies only there", {}, {}};
    c.given.dispatcher = "example.com/my-dispatcher";
    c.given.workload = managerWorkload();
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker2"});
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker2"};
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"an external dispatcher no longer nominates a worker: its copy goes", {}, {}};
    c.given.dispatcher = "example.com/my-dispatcher";
    c.given.workload = managerWorkload();
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker2"});
    c.given.remoteWorkloads = {{"worker1", remoteCopy()}};
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker2"};
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"an external dispatcher nominates an unreachable worker: an error, the others still served", {}, {}};
    c.given.dispatcher = "example.com/my-dispatcher";
    c.given.connected = {"worker1"};
    c.given.workload = managerWorkload();
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker1", "worker2"});
    c.expected.error = "cluster worker2: no remote client for nominated cluster";
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  return cases;
}
// A worker without the Workload's namespace.
std::vector<Case> namespaceMissingCases() {
  const std::string message =
      "Worker \"worker2\" has no namespace \"default\": it is skipped for this workload until the namespace exists "
      "there";
  std::vector<Case> cases;
  {
    Case c{"a worker refusing the copy for its missing namespace is named and left out", {}, {}};
    c.given.withoutNamespace = {"worker2"};
    c.expected.checkState = "Pending";
    c.expected.checkMessage = message;
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.events = {"Warning NamespaceMissingOnWorker: " + message};
    c.expected.eventKinds = {"Workload"};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  {
    Case c{"the incremental dispatcher leaves it out as well", {}, {}};
    c.given.dispatcher = std::string(config::kDispatcherIncremental);
    c.given.withoutNamespace = {"worker1", "worker2"};
    c.expected.result = Result::after(kIncrementalRoundTimeout);
    c.expected.checkState = "Pending";
    c.expected.checkMessage =
        "Worker \"worker1\" has no namespace \"default\": it is skipped for this workload "
        "until the namespace exists there";
    c.expected.nominated = {};
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    c.expected.events = {"Warning NamespaceMissingOnWorker: " + c.expected.checkMessage};
    cases.push_back(c);
  }
  return cases;
}

MKA_TABLE_TEST(WorkloadReconcilerTest, NamespaceMissing, Case, namespaceMissingCases()) { runCase(testCase()); }

// Once the worker's Namespace watch has listed them, the worker is skipped without a create (no
// retry, no second Event); when the namespace appears it gets its copy.
TEST(WorkloadReconcilerNamespaces, AWorkerIsSkippedUntilItsNamespaceAppears) {
  Given given;
  given.withoutNamespace = {"worker2"};
  World world(given);
  world.reconciler().reconcile(kKey);
  ASSERT_TRUE(test::eventually([&] { return world.remote("worker2")->lacksNamespace("default"); }));
  EXPECT_FALSE(world.remote("worker1")->lacksNamespace("default")) << "never watched there";
  world.reconcileWhenCached();
  EXPECT_EQ(world.events().events().size(), 1u) << "no second create, no second Event";
  EXPECT_FALSE(world.workerObject("worker2", kWorkloads));
  world.worker("worker2").api().create(fixture::kNamespaces, {{"metadata", {{"name", "default"}}}});
  ASSERT_TRUE(test::eventually([&] { return !world.remote("worker2")->lacksNamespace("default"); }));
  world.reconcileWhenCached();
  EXPECT_TRUE(world.workerObject("worker2", kWorkloads)) << "nominated again once it has the namespace";
}

json dependencySecret(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"data", {{"token", "dG9rZW4="}}}};
}

json jobNaming(const std::string& secret, const std::string& serviceAccount) {
  auto job = managerJob();
  job["spec"]["workspaces"] = json::array({{{"name", "git"}, {"secret", {{"secretName", secret}}}}});
  job["spec"]["taskRunTemplate"] = {{"serviceAccountName", serviceAccount}};
  return job;
}

// Dependent objects: the objects a job names travel before it, and leave with it.
std::vector<Case> dependencyCases() {
  std::vector<Case> cases;
  const std::string missing =
      "Secret \"default/git-auth\" (spec.workspaces[*].secret.secretName), named by PipelineRun default/job, is not on "
      "the manager: no worker gets the job until it is there; create it in namespace \"default\" or remove it from "
      "the job";
  const json serviceAccount = {
      {"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "builder"}, {"namespace", "default"}}}};
  {
    Case c{"a dependency missing on the manager: no copy anywhere, a Warning on the job, a look again soon", {}, {}};
    c.given.syncDependencies = true;
    c.given.job = jobNaming("git-auth", "builder");
    c.given.managerObjects = {serviceAccount};
    c.expected.result = Result::after(kDependencyRecheck);
    c.expected.checkState = "Pending";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    c.expected.events = {"Warning DependencyMissing: " + missing};
    c.expected.eventKinds = {"PipelineRun"};
    cases.push_back(c);
  }
  {
    Case c{"the winner gets the job's Secret and ServiceAccount with the job, the others nothing", {}, {}};
    c.given.syncDependencies = true;
    c.given.job = jobNaming("git-auth", "builder");
    c.given.managerObjects = {dependencySecret("git-auth"), serviceAccount};
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker1", "worker2"});
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}, {"worker2", remoteCopy()}};
    c.expected.result = Result::after(minutes{15});
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.remoteJobs = {{"worker1", true}, {"worker2", false}};
    c.expected.events = {"Normal MultiKueue: " + kAdmittedMessage};
    c.expected.admitted = {"cq/worker1"};
    c.expected.dependencyOwners = {{"worker1", {{"Secret/git-auth", "wl"}, {"ServiceAccount/builder", "wl"}}},
                                   {"worker2", {}}};
    cases.push_back(c);
  }
  {
    Case c{"finished: the copies go, and the dependencies only this Workload used with them", {}, {}};
    c.given.syncDependencies = true;
    c.given.job = jobNaming("git-auth", "builder");
    c.given.workload = withClusterName(withCondition(withCheck(managerWorkload(), "Ready", kAdmittedMessage),
                                                     condition("Finished", true, "Succeeded")),
                                       "worker1");
    c.given.remoteWorkloads = {{"worker1", remoteCopy(admittedAt(kWhen))}};
    c.given.remoteJobs = {{"worker1", remoteJobCopy()}};
    const auto ours = [](json object, const std::string& owners) {
      object["metadata"]["labels"] = {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}};
      object["metadata"]["annotations"] = {{std::string(kDependencyOwnersAnnotation), owners}};
      return object;
    };
    c.given.workerObjects = {{"worker1",
                              {ours(dependencySecret("git-auth"), "wl"), ours(serviceAccount, "wl"),
                               ours(dependencySecret("shared"), "other-wl,wl")}}};
    c.expected.checkState = "Ready";
    c.expected.checkMessage = kAdmittedMessage;
    c.expected.clusterName = "worker1";
    c.expected.finishedReason = "Succeeded";
    c.expected.remoteWorkloads = {{"worker1", false}};
    c.expected.remoteJobs = {{"worker1", false}};
    c.expected.dependencyOwners = {{"worker1", {{"Secret/shared", "other-wl"}}}};
    cases.push_back(c);
  }
  return cases;
}

MKA_TABLE_TEST(WorkloadReconcilerTest, Dependencies, Case, dependencyCases()) { runCase(testCase()); }

MKA_TABLE_TEST(WorkloadReconcilerTest, NominationAndDispatch, Case, nominationAndDispatchCases()) {
  runCase(testCase());
}

// ---- the quota-aware dispatcher: nominees by room (multikueue/capacity.h) --------------------

// A worker ClusterQueue "name" with one resource group for nvidia.com/gpu: per flavor, its
// nominal quota and reservation (status.flavorsReservation).
struct GpuFlavor {
  std::string name;
  int nominal = 0, reserved = 0;
  std::optional<int> borrowingLimit = std::nullopt;
};
json gpuQueue(const std::string& name, const std::vector<GpuFlavor>& flavors, const std::string& cohort = "",
              int pending = 0) {
  json specFlavors = json::array(), reservation = json::array();
  for (const auto& f : flavors) {
    json resource = {{"name", "nvidia.com/gpu"}, {"nominalQuota", std::to_string(f.nominal)}};
    if (f.borrowingLimit) resource["borrowingLimit"] = std::to_string(*f.borrowingLimit);
    specFlavors.push_back({{"name", f.name}, {"resources", json::array({resource})}});
    reservation.push_back(
        {{"name", f.name},
         {"resources",
          json::array({{{"name", "nvidia.com/gpu"}, {"total", std::to_string(f.reserved)}, {"borrowed", "0"}}})}});
  }
  json cq = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "ClusterQueue"},
             {"metadata", {{"name", name}}},
             {"spec",
              {{"resourceGroups",
                json::array({{{"coveredResources", json::array({"nvidia.com/gpu"})}, {"flavors", specFlavors}}})}}},
             {"status", {{"flavorsReservation", reservation}, {"pendingWorkloads", pending}}}};
  if (!cohort.empty()) cq["spec"]["cohortName"] = cohort;
  return cq;
}
json localQueue(const std::string& clusterQueue) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "LocalQueue"},
          {"metadata", {{"name", "lq"}, {"namespace", "default"}}},
          {"spec", {{"clusterQueue", clusterQueue}}}};
}
// The manager's Workload asking for `gpus` in its one pod.
json gpuWorkload(int gpus) {
  json wl = managerWorkload();
  wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {
      {"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
  return wl;
}

std::vector<Case> nominationByRoomCases() {
  const auto quotaAware = [](Case c) {
    c.given.dispatcher = std::string(config::kDispatcherQuotaAware);
    c.given.workload = gpuWorkload(4);
    c.expected.checkState = "Pending";
    c.expected.result = Result::after(minutes{5});
    return c;
  };
  std::vector<Case> cases;
  {
    Case c = quotaAware({"fits on one worker only: the other is skipped with its shortfall", {}, {}});
    c.given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 8, 6}}), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 0}}), localQueue("cq-gpu")}}};
    c.expected.nominated = {"worker2"};
    c.expected.checkMessage = "Nominated worker2; skipped worker1: cq-gpu has 2 nvidia.com/gpu free, needs 4";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c = quotaAware({"fits on both: the tighter fit first", {}, {}});
    c.given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 16, 0}}), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 3}}), localQueue("cq-gpu")}}};
    c.expected.nominated = {"worker2"};
    c.expected.checkMessage = "Nominated worker2";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c = quotaAware({"the first flavor full: the second flavor has room", {}, {}});
    c.given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 8, 8}, {"h100", 4, 0}}), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 8}}), localQueue("cq-gpu")}}};
    c.expected.nominated = {"worker1"};
    c.expected.checkMessage = "Nominated worker1; skipped worker2: cq-gpu has 0 nvidia.com/gpu free, needs 4";
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  {
    Case c = quotaAware({"room borrowed in the cohort; a worker without the LocalQueue skipped", {}, {}});
    c.given.workerQueues = {{"worker1",
                             {gpuQueue("cq-gpu", {{"a100", 2, 0}}, "research"),
                              gpuQueue("lender", {{"a100", 8, 0}}, "research"), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 0}})}}};
    c.expected.nominated = {"worker1"};
    c.expected.checkMessage = "Nominated worker1; skipped worker2: LocalQueue default/lq missing";
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  {
    Case c = quotaAware({"borrowingLimit caps the cohort: never enough, never nominated", {}, {}});
    c.given.workerQueues = {{"worker1",
                             {gpuQueue("cq-gpu", {{"a100", 2, 0, 1}}, "research"),
                              gpuQueue("lender", {{"a100", 8, 0}}, "research"), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 3, 0}}), localQueue("cq-gpu")}}};
    c.expected.nominated = {};
    c.expected.checkMessage =
        "No worker can hold this workload: worker1: cq-gpu has 3 nvidia.com/gpu in all, needs 4; worker2: cq-gpu "
        "has 3 nvidia.com/gpu in all, needs 4";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", false}};
    cases.push_back(c);
  }
  {
    Case c = quotaAware({"no room anywhere now: queued where it could run, behind the fewest", {}, {}});
    c.given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 8, 8}}, "", 5), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 6}}, "", 1), localQueue("cq-gpu")}}};
    c.expected.nominated = {"worker2"};
    c.expected.checkMessage =
        "No worker has room now; queued on worker2; worker1: cq-gpu has 0 nvidia.com/gpu free, needs 4; worker2: "
        "cq-gpu has 2 nvidia.com/gpu free, needs 4";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c = quotaAware({"a copy the worker has not reserved yet counts as used there", {}, {}});
    json other = remoteCopy();
    other["metadata"]["name"] = "other";
    other["spec"] = gpuWorkload(4)["spec"];
    c.given.remoteWorkloads = {{"worker2", other}};
    // Both have 8 free by their status; the copy waiting on worker2 leaves 4 there, the tighter fit.
    c.given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 16, 8}}), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 0}}), localQueue("cq-gpu")}}};
    c.expected.nominated = {"worker2"};
    c.expected.checkMessage = "Nominated worker2";
    c.expected.remoteWorkloads = {{"worker1", false}, {"worker2", true}};
    c.expected.dispatched = {"cq/worker2"};
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, QuotaAwareNomination, Case, nominationByRoomCases()) { runCase(testCase()); }

// ---- orchestrated preemption (KEP-8303; §2.3 step 7) -----------------------------------------

// RFC 3339 `d` before the World's clock reads (FakeClock's start).
std::string ago(std::chrono::nanoseconds d) {
  return toRfc3339(FakeClock().now() - std::chrono::duration_cast<Clock::TimePoint::duration>(d));
}
json gated(json copy, const std::string& position, const std::string& at) {
  copy["spec"]["preemptionGates"] = json::array({{{"name", "kueue.x-k8s.io/multikueue"}}});
  copy["status"]["preemptionGates"] =
      json::array({{{"name", "kueue.x-k8s.io/multikueue"}, {"position", position}, {"lastTransitionTime", at}}});
  return copy;
}
json blockedSince(const std::string& at) {
  return gated(remoteCopy(json::array({condition("QuotaReserved", false, "Pending", at),
                                       condition("BlockedOnPreemptionGates", true, "PreemptionGated", at)})),
               "Closed", at);
}

std::vector<Case> orchestratedPreemptionCases() {
  const json ours = json::array({{{"name", "kueue.x-k8s.io/multikueue"}}});
  std::vector<Case> cases;
  {
    Case c{"copies carry only our gate, never the manager's own", {}, {}};
    c.given.workload = managerWorkload();
    c.given.workload["spec"]["preemptionGates"] = json::array({{{"name", "example.com/manager-gate"}}});
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteSpecGates = {{"worker1", ours}, {"worker2", ours}};
    c.expected.dispatched = {"cq/worker1", "cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"turned off: copies keep the manager's spec as it is", {}, {}};
    c.given.orchestratedPreemption = false;
    c.given.workload = managerWorkload();
    c.given.workload["spec"]["preemptionGates"] = json::array({{{"name", "example.com/manager-gate"}}});
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteSpecGates = {{"worker1", c.given.workload["spec"]["preemptionGates"]}};
    c.expected.dispatched = {"cq/worker1", "cq/worker2"};
    cases.push_back(c);
  }
  {
    Case c{"two copies blocked: the gate opens on the one blocked longest", {}, {}};
    c.given.remoteWorkloads = {{"worker1", blockedSince(ago(minutes{1}))}, {"worker2", blockedSince(ago(minutes{3}))}};
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.gateOpenedAt = {{"worker1", ""}, {"worker2", ago({})}};
    c.expected.result = Result::after(minutes{5});
    cases.push_back(c);
  }
  {
    Case c{"a gate opened less than 5 minutes ago: no other opens, looked at again when it is up", {}, {}};
    c.given.remoteWorkloads = {{"worker1", gated(remoteCopy(), "Open", ago(minutes{2}))},
                               {"worker2", blockedSince(ago(minutes{3}))}};
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.gateOpenedAt = {{"worker1", ago(minutes{2})}, {"worker2", ""}};
    c.expected.result = Result::after(minutes{3});
    cases.push_back(c);
  }
  {
    Case c{"a gate opened 5 minutes ago: the next blocked copy opens", {}, {}};
    c.given.remoteWorkloads = {{"worker1", gated(remoteCopy(), "Open", ago(minutes{5}))},
                               {"worker2", blockedSince(ago(minutes{3}))}};
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.gateOpenedAt = {{"worker1", ago(minutes{5})}, {"worker2", ago({})}};
    c.expected.result = Result::after(minutes{5});
    cases.push_back(c);
  }
  {
    Case c{"a copy that needs no preemption is not opened", {}, {}};
    c.given.remoteWorkloads = {{"worker1", gated(remoteCopy(), "Open", ago(minutes{10}))},
                               {"worker2", gated(remoteCopy(), "Closed", ago(minutes{10}))}};
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.gateOpenedAt = {{"worker1", ago(minutes{10})}, {"worker2", ""}};
    cases.push_back(c);
  }
  return cases;
}
// ---- workers with different kinds (a worker without a kind's CRD serves the others) ---------

std::vector<Case> workersWithDifferentKindsCases() {
  std::vector<Case> cases;
  {
    Case c{"AllAtOnce: only the workers that serve the kind", {}, {}};
    c.given.withoutJobKind = {"worker2"};
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  {
    Case c{"Incremental: a worker without the kind is passed over", {}, {}};
    c.given.dispatcher = std::string(config::kDispatcherIncremental);
    c.given.clusters = json::array({"worker2", "worker1"});
    c.given.withoutJobKind = {"worker2"};
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    c.expected.result = Result::after(minutes{5});
    cases.push_back(c);
  }
  {
    Case c{"quota-aware: skipped, saying so", {}, {}};
    c.given.dispatcher = std::string(config::kDispatcherQuotaAware);
    c.given.workload = gpuWorkload(4);
    c.given.withoutJobKind = {"worker2"};
    c.given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 8, 0}}), localQueue("cq-gpu")}},
                            {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 0}}), localQueue("cq-gpu")}}};
    c.expected.checkState = "Pending";
    c.expected.checkMessage = "Nominated worker1; skipped worker2: does not serve PipelineRun.v1.tekton.dev";
    c.expected.nominated = {"worker1"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    c.expected.result = Result::after(minutes{5});
    cases.push_back(c);
  }
  {
    Case c{"an external dispatcher nominates a worker without the kind: an error naming it, no copy", {}, {}};
    c.given.dispatcher = "example.com/my-dispatcher";
    c.given.withoutJobKind = {"worker2"};
    c.given.workload = managerWorkload();
    c.given.workload["status"]["nominatedClusterNames"] = json::array({"worker1", "worker2"});
    c.expected.error = "cluster worker2: does not serve PipelineRun.v1.tekton.dev (no CRD there)";
    c.expected.checkState = "Pending";
    c.expected.nominated = {"worker1", "worker2"};
    c.expected.remoteWorkloads = {{"worker1", true}, {"worker2", false}};
    c.expected.dispatched = {"cq/worker1"};
    cases.push_back(c);
  }
  return cases;
}
MKA_TABLE_TEST(WorkloadReconcilerTest, WorkersWithDifferentKinds, Case, workersWithDifferentKindsCases()) {
  runCase(testCase());
}

MKA_TABLE_TEST(WorkloadReconcilerTest, OrchestratedPreemption, Case, orchestratedPreemptionCases()) {
  runCase(testCase());
}

Given waitingForRoom() {
  Given given;
  given.dispatcher = std::string(config::kDispatcherQuotaAware);
  given.workload = gpuWorkload(4);
  given.workerQueues = {{"worker1", {gpuQueue("cq-gpu", {{"a100", 8, 8}}), localQueue("cq-gpu")}},
                        {"worker2", {gpuQueue("cq-gpu", {{"a100", 8, 8}}, "", 3), localQueue("cq-gpu")}}};
  return given;
}

// The round waits for room where it could run; freed room elsewhere moves it there, but only
// once the registry says the room changed (an event, not a timer), or the round times out.
TEST(WorkloadReconcilerQuotaAware, FreedRoomElsewhereReNominatesOnTheCapacityEvent) {
  World world(waitingForRoom());
  world.reconcileWhenCached();
  EXPECT_EQ(nominatedClusters(*world.managerObject(kWorkloads, "wl")), std::vector<std::string>{"worker1"});
  EXPECT_EQ(world.reconciler().waitingForRoom(), std::vector<std::string>{kKey});

  world.setReserved("worker2", "cq-gpu", 0);
  world.reconcileWhenCached();
  EXPECT_EQ(nominatedClusters(*world.managerObject(kWorkloads, "wl")), std::vector<std::string>{"worker1"})
      << "no capacity event yet: the round goes on";

  world.reconciler().capacityChanged();
  world.reconcileWhenCached();
  const auto wl = world.managerObject(kWorkloads, "wl");
  EXPECT_EQ(nominatedClusters(*wl), std::vector<std::string>{"worker2"});
  EXPECT_EQ(findCheckState(*wl, kCheck)->value("message", ""),
            "Nominated worker2; skipped worker1: cq-gpu has 0 "
            "nvidia.com/gpu free, needs 4");
  EXPECT_FALSE(world.workerObject("worker1", kWorkloads).has_value()) << "the waiting copy goes";
  EXPECT_TRUE(world.workerObject("worker2", kWorkloads).has_value());
  EXPECT_TRUE(world.reconciler().waitingForRoom().empty());
}

TEST(WorkloadReconcilerQuotaAware, ARoundWaitingForRoomEndsAfterTheRoundTimeout) {
  World world(waitingForRoom());
  world.reconcileWhenCached();
  world.setReserved("worker2", "cq-gpu", 0);
  world.advance(minutes{4});
  world.reconcileWhenCached();
  EXPECT_EQ(nominatedClusters(*world.managerObject(kWorkloads, "wl")), std::vector<std::string>{"worker1"});
  world.advance(minutes{1});
  world.reconcileWhenCached();
  EXPECT_EQ(nominatedClusters(*world.managerObject(kWorkloads, "wl")), std::vector<std::string>{"worker2"});
}

TEST(WorkloadReconcilerQuotaAware, AWorkerWhoseQueuesCannotBeReadIsSkippedSayingWhy) {
  Given given = waitingForRoom();
  given.workerQueues.erase("worker2");  // no ClusterQueue kind there
  given.workerQueues["worker1"] = {gpuQueue("cq-gpu", {{"a100", 8, 0}}), localQueue("cq-gpu")};
  World world(given);
  ASSERT_TRUE(test::eventually([&] {
    std::string why;
    return world.remote("worker2")->capacity(&why) == nullptr && why.find("cannot be read") != std::string::npos;
  }));
  world.reconcileWhenCached();
  const auto wl = world.managerObject(kWorkloads, "wl");
  EXPECT_EQ(nominatedClusters(*wl), std::vector<std::string>{"worker1"});
  EXPECT_THAT(findCheckState(*wl, kCheck)->value("message", ""),
              ::testing::StartsWith("Nominated worker1; skipped worker2: room unknown, its ClusterQueues or "
                                    "LocalQueues cannot be read: "));
}

// The oldest running Workload per state of our check, for the stuck-Workloads alert.
TEST(WorkloadReconcilerCheckStates, ARunningWorkloadCountsFromTheLaterOfItsCheckStateAndItsQuota) {
  Given given;
  checkEntry(given.workload)["lastTransitionTime"] = "2026-11-26T10:05:00Z";  // quota reserved at 10:00
  World world(given);
  world.reconcileWhenCached();
  using Oldest = std::map<std::string, std::optional<Clock::TimePoint>>;
  EXPECT_EQ(world.observer().oldest(), (Oldest{{"Pending", parseRfc3339("2026-11-26T10:05:00Z")}}));
}

TEST(WorkloadReconcilerCheckStates, AWorkloadWithoutQuotaWaitsOnTheManagersQueueNotOnTheDispatchLoop) {
  Given given;
  given.workload = withoutQuota(managerWorkload());
  World world(given);
  world.reconcileWhenCached();
  EXPECT_TRUE(world.observer().oldest().empty());
}

TEST(WorkloadReconcilerCheckStates, AFinishedWorkloadWaitsOnNothing) {
  Given given;
  given.workload = withCondition(managerWorkload(), condition("Finished", true, "Succeeded"));
  World world(given);
  world.reconcileWhenCached();
  EXPECT_TRUE(world.observer().oldest().empty());
}

}  // namespace
}  // namespace mka::multikueue
