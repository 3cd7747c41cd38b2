#include "mka/multikueue/dispatcher.h"

#include <set>

#include "mka/api/kinds.h"
#include "mka/api/workload_status.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/controller/event_recorder.h"
#include "mka/controller/manager.h"
#include "mka/kube/informer.h"
#include "mka/multikueue/admission_check_reconciler.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/garbage_collector.h"
#include "mka/multikueue/generic_adapter.h"

namespace mka::multikueue {

using api::findCondition;
using api::isTerminating;
using controller::Controller;
using controller::EventRecorder;

using nlohmann::json;

namespace {

// While a backlog of Workloads (the initial list) waits, an event-driven Workload waits this
// long for the rest of its burst: the copies' creation, each worker's reservation and the
// loser copies' deletion come close together, but on a busy manager they spread over hundreds
// of milliseconds, and one reconcile for all of them costs a fraction of one per event (a much
// shorter hold splits the burst and reconciles more often than no hold at all). Nothing waits
// for it without a backlog.
constexpr std::chrono::milliseconds kWorkloadEventHold{1000};

std::string objectName(const json& object) { return json_fields::metadataString(object, "name"); }

std::int64_t generationOf(const json& object) {
  return json_fields::objectMember(object, "metadata").value("generation", std::int64_t{0});
}

}  // namespace

struct Dispatcher::Impl {
  Impl(kube::Client& manager, const Clock& clock, Options options)
      : manager(manager),
        clock(clock),
        options(std::move(options)),
        runtime(manager, clock, {"dispatcher", this->options.informers, this->options.controllerObserver}) {
    const auto& cfg = this->options.config;
    auto registryOptions = this->options.registry;
    registryOptions.namespace_ = cfg.namespace_;
    registryOptions.origin = cfg.multiKueue.origin;
    registryOptions.clusterProfiles = cfg.multiKueue.clusterProfile;
    const auto adapters = genericAdapters(cfg, this->options.prebuiltLink);
    registryOptions.adapters = adapters;
    registryOptions.clientOptions.qps = cfg.clientConnection.qps;
    registryOptions.clientOptions.burst = cfg.clientConnection.burst;
    registryOptions.writeClusterStatus = cfg.dispatch.admissionCheckControllerName == api::kMultiKueueControllerName;

    // Every cache drops managedFields: nothing here reads them, and they are a large part of
    // each object kube-apiserver returns.
    const kube::InformerOptions lean{.withoutManagedFields = true};
    workloadsInformer = &runtime.informer(api::kWorkloadGvk, lean);
    // Configuration kinds change rarely: their reflectors keep no allocator thread cache.
    auto config = lean;
    config.threadCache = false;
    checksInformer = &runtime.informer(api::kAdmissionCheckGvk, config);
    configsInformer = &runtime.informer(api::kMultiKueueConfigGvk, config);
    clustersInformer = &runtime.informer(api::kMultiKueueClusterGvk, config);
    auto secrets = config;
    secrets.namespace_ = cfg.namespace_;
    secretsInformer = &runtime.informer(api::kSecretGvk, secrets);
    // ClusterProfiles are read only with multiKueue.clusterProfile configured, as Kueue reads
    // them only with its MultiKueueClusterProfile gate: without it the CRD need not exist.
    if (cfg.multiKueue.clusterProfile) profilesInformer = &runtime.informer(api::kClusterProfileGvk, secrets);
    // Job informers have no handlers: a job matters to its Workload only through the
    // Workload's own events (its owner reference); the reconciler reads them.
    for (const auto& adapter : adapters.all()) runtime.informer(adapter->gvk(), lean);

    clusterEvents = std::make_unique<EventRecorder>(manager, clock, std::string(kClusterEventComponent));
    registry =
        std::make_unique<ClusterRegistry>(manager, runtime.reader(), clock, registryOptions, clusterEvents.get());
    workloadEvents = std::make_unique<EventRecorder>(manager, clock, "kueue-workload-controller");
    WorkloadReconciler::Options wo;
    wo.controllerName = cfg.dispatch.admissionCheckControllerName;
    wo.origin = cfg.multiKueue.origin;
    wo.adapters = adapters;
    wo.workerLostTimeout = cfg.multiKueue.workerLostTimeout;
    wo.dispatcherName = cfg.multiKueue.dispatcherName;
    wo.incrementalStepSize = cfg.multiKueue.stepSize.value_or(kIncrementalStepSize);
    wo.orchestratedPreemption = cfg.multiKueue.orchestratedPreemption;
    workloadReconciler = std::make_unique<WorkloadReconciler>(manager, runtime.reader(), *registry, *workloadEvents,
                                                              clock, std::move(wo), this->options.dispatchObserver);
    checkReconciler = std::make_unique<AdmissionCheckReconciler>(
        manager, runtime.reader(), *registry, clock,
        AdmissionCheckReconciler::Options{cfg.dispatch.admissionCheckControllerName});
    collector = std::make_unique<OrphanCollector>(
        manager, *workloadsInformer, *registry,
        OrphanCollector::Options{cfg.multiKueue.origin, adapters, cfg.multiKueue.gcInterval});

    // Started in this order, stopped in the reverse: the registry's connections close after the
    // controllers that use them, and the collector stops first.
    runtime.add(nullptr, [this] { registry->stop(); });
    clusterController = &runtime.add({"mk-cluster", 2, nullptr, {}, false},
                                     [this](const std::string& key) { return registry->reconcile(key); });
    checkController = &runtime.add({"mk-check", 1, nullptr, {}, false},
                                   [this](const std::string& key) { return checkReconciler->reconcile(key); });
    const auto workers = static_cast<std::size_t>(cfg.dispatch.workloadConcurrency);
    workloadController = &runtime.add({"mk-workload", workers, nullptr, kWorkloadEventHold},
                                      [this](const std::string& key) { return workloadReconciler->reconcile(key); });
    capacityController = &runtime.add({"mk-capacity", 1, nullptr, {}, false},
                                      [this](const std::string& cluster) { return capacityChanged(cluster); });
    runtime.add([this] { collector->start(); }, [this] { collector->stop(); });
    wire();
  }
  ~Impl() { runtime.stop(); }

  // Every Workload with a state for one of our checks (a worker came or went, a config
  // changed), at Low priority like an initial list: a re-evaluation in bulk must not push back
  // the Workloads whose own events are waiting; it raises none of them and lowers none either.
  // Keys already queued will be reconciled after this change anyway, so their Workloads are
  // not even decoded: at start-up the initial list has queued them all when the workers
  // connect, and each connection would otherwise decode every cached Workload.
  void enqueueWorkloadsOfChecks(const std::vector<std::string>& checks) {
    const auto queued = [this](const std::string& key) { return workloadController->queued(key); };
    for (const auto& key : workloadReconciler->workloadsUsingChecks(checks, queued))
      workloadController->enqueue(key, kube::WorkQueue::Priority::Low);
  }

  controller::Result capacityChanged(const std::string& cluster) {
    for (const auto& key : workloadReconciler->waitingForRoom()) workloadController->enqueue(key);
    if (options.dispatchObserver) {
      const auto remote = registry->connected(cluster);
      options.dispatchObserver->workerCapacity(cluster, remote ? remote->capacity() : nullptr);
    }
    return controller::Result::done();
  }

  std::vector<std::string> ourChecksUsingConfig(const std::string& configName) const {
    std::vector<std::string> out;
    for (const auto& ac : checksInformer->list()) {
      if (!isOurCheck(ac, options.config.dispatch.admissionCheckControllerName)) continue;
      if (multiKueueConfigOf(ac).name == configName) out.push_back(objectName(ac));
    }
    return out;
  }

  std::vector<std::string> ourChecksUsingCluster(const std::string& cluster) const {
    std::vector<std::string> out;
    for (const auto& config : configsInformer->list()) {
      const auto clusters = clustersOf(config);
      if (std::find(clusters.begin(), clusters.end(), cluster) == clusters.end()) continue;
      for (auto& check : ourChecksUsingConfig(objectName(config))) out.push_back(std::move(check));
    }
    return out;
  }

  void wire() {
    auto enqueueWorkload = [this](const json& wl,
                                  kube::WorkQueue::Priority priority = kube::WorkQueue::Priority::Normal) {
      workloadController->enqueue(kube::Informer::keyOf(wl), priority);
    };
    runtime.handle(*workloadsInformer,
                   {// The initial list goes behind every event (controller-runtime's priority queue): on a
                    // backlog, Workloads already dispatched are finished before new ones are opened.
                    .onAdd =
                        [this, enqueueWorkload](const json& wl) {
                          enqueueWorkload(wl, workloadsInformer->hasSynced() ? kube::WorkQueue::Priority::Normal
                                                                             : kube::WorkQueue::Priority::Low);
                        },
                    .onUpdateNew = [enqueueWorkload](const json& wl) { enqueueWorkload(wl); },
                    .onDelete =
                        [this, enqueueWorkload](const json& wl) {
                          workloadReconciler->rememberDeleted(wl);
                          enqueueWorkload(wl);
                        }});
    auto checkChanged = [this](const json* before, const json& after) {
      checkController->enqueue(objectName(after));
      if (!isOurCheck(after, options.config.dispatch.admissionCheckControllerName)) return;
      if (before == nullptr || multiKueueConfigOf(*before).name != multiKueueConfigOf(after).name)
        enqueueWorkloadsOfChecks({objectName(after)});
    };
    runtime.handle(*checksInformer, {.onAdd = [checkChanged](const json& ac) { checkChanged(nullptr, ac); },
                                     .onUpdate = [checkChanged](const json& a, const json& b) { checkChanged(&a, b); },
                                     .onDelete = [this](const json& ac) { checkController->enqueue(objectName(ac)); }});

    auto configChanged = [this](const json* before, const json& after) {
      const auto checks = ourChecksUsingConfig(objectName(after));
      for (const auto& check : checks) checkController->enqueue(check);
      if (before == nullptr || clustersOf(*before) != clustersOf(after)) enqueueWorkloadsOfChecks(checks);
    };
    runtime.handle(*configsInformer,
                   {.onAdd = [configChanged](const json& c) { configChanged(nullptr, c); },
                    .onUpdate = [configChanged](const json& a, const json& b) { configChanged(&a, b); },
                    .onDelete = [configChanged](const json& c) { configChanged(nullptr, c); }});

    auto clusterChanged = [this](const json& cluster) {
      clusterController->enqueue(objectName(cluster));
      for (const auto& check : ourChecksUsingCluster(objectName(cluster))) checkController->enqueue(check);
    };
    runtime.handle(
        *clustersInformer,
        {.onAdd = clusterChanged,
         .onUpdate =
             [this, clusterChanged](const json& before, const json& after) {
               // Status-only updates (ours included) are not a reason to reconnect (§3.3).
               if (generationOf(before) != generationOf(after) || isTerminating(before) != isTerminating(after))
                 clusterController->enqueue(objectName(after));
               if (findCondition(before, api::condition::kActive) == nullptr ||
                   findCondition(after, api::condition::kActive) == nullptr ||
                   *findCondition(before, api::condition::kActive) != *findCondition(after, api::condition::kActive))
                 for (const auto& check : ourChecksUsingCluster(objectName(after))) checkController->enqueue(check);
             },
         .onDelete = clusterChanged});

    auto secretChanged = [this](const json& secret) {
      for (const auto& cluster : registry->clustersUsingSecret(objectName(secret))) clusterController->enqueue(cluster);
    };
    runtime.handle(*secretsInformer, {.onAdd = secretChanged, .onUpdateNew = secretChanged, .onDelete = secretChanged});
    if (profilesInformer) {
      auto profileChanged = [this](const json& profile) {
        for (const auto& cluster : registry->clustersUsingProfile(objectName(profile)))
          clusterController->enqueue(cluster);
      };
      runtime.handle(*profilesInformer,
                     {.onAdd = profileChanged, .onUpdateNew = profileChanged, .onDelete = profileChanged});
    }

    registry->onRemoteEvent([this](const std::string&, const std::string& workloadKey) {
      // Only Workloads the manager still has (or just deleted) have anything to do.
      workloadController->enqueue(workloadKey);
    });
    registry->onKubeconfigChange([this](const std::string& cluster) { clusterController->enqueue(cluster); });
    // A worker's room changed: the Workloads waiting for room look again and the metrics follow.
    // A burst (each reservation there rewrites a ClusterQueue's status) is one reconcile while
    // its key waits in the queue.
    registry->onCapacityChange([this](const std::string& cluster) {
      workloadReconciler->capacityChanged();
      capacityController->enqueue(cluster);
    });
    registry->onConnectionChange([this](const std::string& cluster, bool connected) {
      // The reconcile publishes the new Active condition at once (and, when lost, backs off).
      clusterController->enqueue(cluster);
      const auto checks = ourChecksUsingCluster(cluster);
      for (const auto& check : checks) checkController->enqueue(check);
      enqueueWorkloadsOfChecks(checks);
      capacityController->enqueue(cluster);  // metrics: the worker's queues, or none
      if (options.onClusterConnection) {
        const auto object = connected ? std::nullopt : clustersInformer->get(cluster);
        const bool gone = !connected && (!object || isTerminating(*object));
        options.onClusterConnection(cluster, gone ? std::nullopt : std::optional(connected));
      }
    });
  }

  kube::Client& manager;
  const Clock& clock;
  Options options;
  // Constructed first and stopped by ~Impl before anything below goes: no handler or worker
  // calls into a reconciler being destroyed.
  controller::Manager runtime;
  kube::Informer *workloadsInformer = nullptr, *checksInformer = nullptr, *configsInformer = nullptr,
                 *clustersInformer = nullptr, *secretsInformer = nullptr;
  kube::Informer* profilesInformer = nullptr;    // null without multiKueue.clusterProfile
  std::unique_ptr<EventRecorder> clusterEvents;  // before the registry, which uses it
  std::unique_ptr<ClusterRegistry> registry;
  std::unique_ptr<EventRecorder> workloadEvents;
  std::unique_ptr<WorkloadReconciler> workloadReconciler;
  std::unique_ptr<AdmissionCheckReconciler> checkReconciler;
  std::unique_ptr<OrphanCollector> collector;
  Controller *workloadController = nullptr, *clusterController = nullptr, *checkController = nullptr,
             *capacityController = nullptr;
};

Dispatcher::Dispatcher(kube::Client& manager, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(manager, clock, std::move(options))) {}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::start(std::chrono::milliseconds syncTimeout, std::stop_token stopping) {
  if (impl_->runtime.started()) return;
  impl_->runtime.start(syncTimeout,
                       "check that the CRDs are installed on the manager and that the adapter's RBAC allows list/watch",
                       stopping);
  log::info("dispatcher started", {{"controller", impl_->options.config.dispatch.admissionCheckControllerName},
                                   {"origin", impl_->options.config.multiKueue.origin},
                                   {"frameworks", impl_->options.config.multiKueue.externalFrameworks.size()},
                                   {"dispatcher", impl_->options.config.multiKueue.dispatcherName}});
}

void Dispatcher::stop() {
  if (!impl_ || !impl_->runtime.started()) return;
  impl_->runtime.stop();
  log::info("dispatcher stopped");
}

bool Dispatcher::idle() const { return impl_->runtime.idle(); }

ClusterRegistry& Dispatcher::registry() { return *impl_->registry; }
OrphanCollector& Dispatcher::collector() { return *impl_->collector; }
WorkloadReconciler& Dispatcher::workloads() { return *impl_->workloadReconciler; }

void Dispatcher::recheckClock() { impl_->runtime.recheckClock(); }

}  // namespace mka::multikueue
