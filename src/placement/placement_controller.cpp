#include "mka/placement/placement_controller.h"

#include <set>
#include <utility>

#include "mka/api/kinds.h"
#include "mka/api/kueue.h"
#include "mka/api/views.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/controller/controller.h"
#include "mka/controller/manager.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/informer.h"
#include "mka/placement/api.h"
#include "mka/placement/placement_check_reconciler.h"
#include "mka/placement/workload_check_reconciler.h"

namespace mka::placement {

using controller::Controller;
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
      : manager(manager),
        clock(clock),
        options(std::move(options)),
        runtime(manager, clock, {"placement controller", this->options.informers, this->options.controllerObserver}) {
    // The dispatch loop asks the shared pool for the same kinds with these options.
    const kube::InformerOptions lean{.withoutManagedFields = true};
    auto rare = lean;
    rare.threadCache = false;
    auto inNamespace = rare;
    inNamespace.namespace_ = this->options.namespace_;
    workloads = &runtime.informer(api::kWorkloadGvk, lean);
    checks = &runtime.informer(api::kAdmissionCheckGvk, rare);
    configs = &runtime.informer(api::kMultiKueueConfigGvk, rare);
    clusters = &runtime.informer(api::kMultiKueueClusterGvk, rare);
    placements = &runtime.informer(api::kPlacementGvk, inNamespace);
    decisions = &runtime.informer(api::kPlacementDecisionGvk, inNamespace);
    checkReconciler = std::make_unique<PlacementCheckReconciler>(
        manager, runtime.reader(), clock,
        PlacementCheckReconciler::Options{this->options.namespace_, this->options.clusterProfiles});
    workloadReconciler = std::make_unique<WorkloadCheckReconciler>(manager, runtime.reader(), clock);
    checkController = &runtime.add({"placement-check", 1, nullptr, {}, false},
                                   [this](const std::string& key) { return checkReconciler->reconcile(key); });
    workloadController = &runtime.add({"placement-wl", 1, nullptr, {}, false},
                                      [this](const std::string& key) { return workloadReconciler->reconcile(key); });
    wire();
  }
  ~Impl() { runtime.stop(); }

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
    for (const auto& state : api::WorkloadView(workload).admissionChecks()) {
      const auto check = checks->get(std::string(json_fields::stringView(state, "name")));
      if (check && isPlacementCheck(*check)) return true;
    }
    return false;
  }
  // The Workloads waiting on `check`: it just turned Active.
  void enqueueWorkloadsOf(const std::string& check) {
    for (const auto& wl : workloads->list())
      for (const auto& state : api::WorkloadView(wl).admissionChecks())
        if (json_fields::stringView(state, "name") == check) workloadController->enqueue(kube::Informer::keyOf(wl));
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
    runtime.handle(*workloads, {.onAdd = workloadChanged, .onUpdateNew = workloadChanged, .onDelete = workloadGone});
    auto checkChanged = [this](const json& ac) {
      if (!isPlacementCheck(ac)) return;
      checkController->enqueue(checkName(ac));
      enqueueWorkloadsOf(checkName(ac));
    };
    runtime.handle(*checks, {.onAdd = checkChanged, .onUpdateNew = checkChanged});
    auto placementChanged = [this](const json& p) { enqueueChecksOf(checkName(p)); };
    runtime.handle(*placements,
                   {.onAdd = placementChanged, .onUpdateNew = placementChanged, .onDelete = placementChanged});
    auto decisionChanged = [this](const json& d) { enqueueChecksOf(labelValue(d, kPlacementLabel)); };
    runtime.handle(*decisions, {.onAdd = decisionChanged, .onUpdateNew = decisionChanged, .onDelete = decisionChanged});
    // A generated object changed or deleted by someone else is put back; a user's object of a
    // generated name (without our label) made the check refuse, and its deletion lets it go on
    // at once rather than at the error's next retry.
    for (const auto& [kind, informer] :
         {std::pair{&api::kMultiKueueConfigGvk, configs}, std::pair{&api::kMultiKueueClusterGvk, clusters}}) {
      auto named = [this, kind](const json& o) {
        enqueueChecksOf(labelValue(o, kGeneratedForLabel));
        for (const auto& placement : placementsNaming(*kind, checkName(o))) enqueueChecksOf(placement);
      };
      runtime.handle(*informer, {.onAdd = named, .onUpdateNew = named, .onDelete = named});
    }
  }

  // The Placements (in the cache) that generate, or would, an object of `kind` named `name`.
  std::vector<std::string> placementsNaming(const api::GroupVersionKind& kind, const std::string& name) const {
    std::vector<std::string> out;
    // Only the keys are read: a Placement's name is its key's.
    placements->forEach([](const json&) {},
                        [&](const std::string& key) {
                          const std::string placement(kube::Informer::splitKey(key).second);
                          if (wouldGenerate(placement, kind, name)) out.push_back(placement);
                          return false;
                        });
    return out;
  }

  kube::Client& manager;
  const Clock& clock;
  Options options;
  // Constructed first and stopped by ~Impl before anything below goes: no handler or worker
  // calls into a reconciler being destroyed.
  controller::Manager runtime;
  kube::Informer *workloads = nullptr, *checks = nullptr, *configs = nullptr, *clusters = nullptr,
                 *placements = nullptr, *decisions = nullptr;
  std::unique_ptr<PlacementCheckReconciler> checkReconciler;
  std::unique_ptr<WorkloadCheckReconciler> workloadReconciler;
  Controller *checkController = nullptr, *workloadController = nullptr;
};

PlacementController::PlacementController(kube::Client& manager, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(manager, clock, std::move(options))) {}

PlacementController::~PlacementController() { stop(); }

void PlacementController::start(std::chrono::milliseconds syncTimeout, std::stop_token stopping) {
  if (impl_->runtime.started()) return;
  impl_->runtime.start(syncTimeout,
                       "install OCM's Placement and PlacementDecision CRDs on the manager, check that the adapter's "
                       "RBAC allows list/watch, or set placement.enabled to false",
                       stopping);
  log::info("placement controller started",
            {{"namespace", impl_->options.namespace_}, {"clusterProfiles", impl_->options.clusterProfiles}});
}

void PlacementController::stop() {
  if (!impl_ || !impl_->runtime.started()) return;
  impl_->runtime.stop();
  log::info("placement controller stopped");
}

void PlacementController::recheckClock() { impl_->runtime.recheckClock(); }

bool PlacementController::idle() const { return impl_->runtime.idle(); }

}  // namespace mka::placement
