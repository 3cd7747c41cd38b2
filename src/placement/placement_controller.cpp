#include "mka/placement/placement_controller.h"

#include <set>

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/kube/informer.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/controller.h"
#include "mka/multikueue/object_reader.h"
#include "mka/placement/api.h"
#include "mka/placement/placement_check_reconciler.h"
#include "mka/placement/workload_check_reconciler.h"

namespace mka::placement {

using multikueue::Controller;
using nlohmann::json;

namespace {
std::string checkName(const json& object) { return json_fields::metadataString(object, "name"); }
}  // namespace

PlacementController::Options PlacementController::Options::from(const config::Configuration& config) {
  Options o;
  o.namespace_ = config.namespace_;
  o.clusterProfiles = config.multiKueue.clusterProfile && !config.multiKueue.clusterProfile->providers().empty();
  return o;
}

struct PlacementController::Impl {
  Impl(kube::Client& manager, const Clock& clock, Options options)
      : manager(manager), clock(clock), options(std::move(options)) {
    if (this->options.informers == nullptr) ownInformers = std::make_unique<kube::InformerPool>(manager);
    auto& pool = this->options.informers != nullptr ? *this->options.informers : *ownInformers;
    // The dispatch loop asks the shared pool for the same kinds with these options.
    const kube::InformerOptions lean{.withoutManagedFields = true};
    auto rare = lean;
    rare.threadCache = false;
    auto inNamespace = rare;
    inNamespace.namespace_ = this->options.namespace_;
    workloads = &pool.informer(multikueue::kWorkloadGvk, lean);
    checks = &pool.informer(multikueue::kAdmissionCheckGvk, rare);
    configs = &pool.informer(multikueue::kMultiKueueConfigGvk, rare);
    clusters = &pool.informer(multikueue::kMultiKueueClusterGvk, rare);
    placements = &pool.informer(kPlacementGvk, inNamespace);
    decisions = &pool.informer(kPlacementDecisionGvk, inNamespace);
    for (auto* i : informers()) caches.add(*i);

    checkReconciler = std::make_unique<PlacementCheckReconciler>(
        manager, caches, clock,
        PlacementCheckReconciler::Options{this->options.namespace_, this->options.clusterProfiles});
    workloadReconciler = std::make_unique<WorkloadCheckReconciler>(manager, caches, clock);
    checkController = std::make_unique<Controller>(
        Controller::Options{"placement-check", 1, this->options.controllerObserver, {}, false},
        [this](const std::string& key) { return checkReconciler->reconcile(key); }, clock);
    workloadController = std::make_unique<Controller>(
        Controller::Options{"placement-wl", 1, this->options.controllerObserver, {}, false},
        [this](const std::string& key) { return workloadReconciler->reconcile(key); }, clock);
    wire();
  }

  std::vector<kube::Informer*> informers() { return {workloads, checks, configs, clusters, placements, decisions}; }

  // The placement checks whose parameters name `placement`.
  std::vector<std::string> checksOf(const std::string& placement) const {
    std::vector<std::string> out;
    for (const auto& ac : checks->list())
      if (isPlacementCheck(ac) && placementOf(ac).name == placement) out.push_back(checkName(ac));
    return out;
  }
  void enqueueChecksOf(const std::string& placement) {
    if (placement.empty()) return;
    for (const auto& c : checksOf(placement)) checkController->enqueue(c);
  }
  bool usesPlacementCheck(const json& workload) const {
    for (const auto& state :
         json_fields::arrayMember(json_fields::objectMember(workload, "status"), "admissionChecks")) {
      const auto check = checks->get(state.value("name", ""));
      if (check && isPlacementCheck(*check)) return true;
    }
    return false;
  }
  // The Workloads waiting on `check`: it just turned Active.
  void enqueueWorkloadsOf(const std::string& check) {
    for (const auto& wl : workloads->list())
      for (const auto& state : json_fields::arrayMember(json_fields::objectMember(wl, "status"), "admissionChecks"))
        if (state.value("name", "") == check) workloadController->enqueue(kube::Informer::keyOf(wl));
  }

  void wire() {
    auto workloadChanged = [this](const json& wl) {
      if (usesPlacementCheck(wl)) workloadController->enqueue(kube::Informer::keyOf(wl));
      // A Workload that keeps an undecided worker's MultiKueueCluster finished or went.
      for (const auto& placement : checkReconciler->placementsKeepingFor(wl)) enqueueChecksOf(placement);
    };
    auto workloadGone = [this](const json& wl) {
      for (const auto& placement : checkReconciler->placementsKeepingFor(wl)) enqueueChecksOf(placement);
    };
    handlers.add(*workloads, {.onAdd = workloadChanged, .onUpdateNew = workloadChanged, .onDelete = workloadGone});
    auto checkChanged = [this](const json& ac) {
      if (!isPlacementCheck(ac)) return;
      checkController->enqueue(checkName(ac));
      enqueueWorkloadsOf(checkName(ac));
    };
    handlers.add(*checks, {.onAdd = checkChanged, .onUpdateNew = checkChanged});
    auto placementChanged = [this](const json& p) { enqueueChecksOf(checkName(p)); };
    handlers.add(*placements,
                 {.onAdd = placementChanged, .onUpdateNew = placementChanged, .onDelete = placementChanged});
    auto decisionChanged = [this](const json& d) { enqueueChecksOf(labelValue(d, kPlacementLabel)); };
    handlers.add(*decisions, {.onAdd = decisionChanged, .onUpdateNew = decisionChanged, .onDelete = decisionChanged});
    // A generated object changed or deleted by someone else is put back.
    auto generatedChanged = [this](const json& o) { enqueueChecksOf(labelValue(o, kGeneratedForLabel)); };
    for (auto* i : {configs, clusters})
      handlers.add(*i, {.onUpdateNew = generatedChanged, .onDelete = generatedChanged});
  }

  kube::Client& manager;
  const Clock& clock;
  Options options;
  std::unique_ptr<kube::InformerPool> ownInformers;
  kube::Informer *workloads = nullptr, *checks = nullptr, *configs = nullptr, *clusters = nullptr,
                 *placements = nullptr, *decisions = nullptr;
  multikueue::CacheReader caches;
  std::unique_ptr<PlacementCheckReconciler> checkReconciler;
  std::unique_ptr<WorkloadCheckReconciler> workloadReconciler;
  std::unique_ptr<Controller> checkController, workloadController;
  bool started = false;
  // Last, so destroyed first: shared informers never call into a controller being destroyed.
  kube::HandlerRegistrations handlers;
};

PlacementController::PlacementController(kube::Client& manager, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(manager, clock, std::move(options))) {}

PlacementController::~PlacementController() { stop(); }

void PlacementController::start(std::chrono::milliseconds syncTimeout) {
  if (impl_->started) return;
  impl_->started = true;
  const auto missing = kube::startAndWaitForSync(impl_->informers(), syncTimeout);
  if (!missing.empty())
    throw Error("placement controller: the manager's caches did not sync within " +
                std::to_string(syncTimeout.count()) + " ms for: " + missing +
                "; install OCM's Placement and PlacementDecision CRDs on the manager, check that the adapter's RBAC "
                "allows list/watch, or set placement.enabled to false");
  impl_->checkController->start();
  impl_->workloadController->start();
  log::info("placement controller started",
            {{"namespace", impl_->options.namespace_}, {"clusterProfiles", impl_->options.clusterProfiles}});
}

void PlacementController::stop() {
  if (!impl_ || !impl_->started) return;
  impl_->started = false;
  impl_->workloadController->stop();
  impl_->checkController->stop();
  if (impl_->ownInformers) impl_->ownInformers->stop();
  log::info("placement controller stopped");
}

void PlacementController::recheckClock() {
  impl_->checkController->recheckClock();
  impl_->workloadController->recheckClock();
}

bool PlacementController::idle() const { return impl_->checkController->idle() && impl_->workloadController->idle(); }

}  // namespace mka::placement
