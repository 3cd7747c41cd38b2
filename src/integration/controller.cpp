#include "mka/integration/controller.h"

#include "mka/api/kueue.h"
#include "mka/common/errors.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/kube/informer.h"
#include "mka/kube/informer_pool.h"
#include "mka/multikueue/events.h"

namespace mka::integration {

struct IntegrationController::Impl {
  struct Kind {
    explicit Kind(jobkind::JobKind kind) : kind(std::move(kind)) {}
    jobkind::JobKind kind;
    kube::Informer* jobs = nullptr;
    WorkloadOwners owners;
    PrebuiltNames prebuilt;
    std::unique_ptr<JobReconciler> reconciler;
    std::unique_ptr<multikueue::Controller> controller;
  };

  Impl(kube::Client& client, const Clock& clock, Options options)
      : client(client),
        clock(clock),
        options(std::move(options)),
        events(client, clock, this->options.eventComponent) {}

  kube::Client& client;
  const Clock& clock;
  Options options;
  multikueue::EventRecorder events;
  std::unique_ptr<kube::InformerPool> ownInformers;  // when options.informers is null
  kube::Informer* workloads = nullptr;
  kube::Informer* priorityClasses = nullptr;
  kube::Informer* namespaces = nullptr;
  std::vector<std::unique_ptr<Kind>> kinds;
  bool started = false;
  // Last, so destroyed first: shared informers never call into a controller being destroyed.
  kube::HandlerRegistrations handlers;

  std::vector<kube::Informer*> informers() const {
    std::vector<kube::Informer*> all{workloads, priorityClasses, namespaces};
    for (const auto& k : kinds) all.push_back(k->jobs);
    return all;
  }
};

IntegrationController::IntegrationController(kube::Client& client, const std::vector<jobkind::JobKind>& kinds,
                                             const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(client, clock, std::move(options))) {
  if (impl_->options.informers == nullptr) impl_->ownInformers = std::make_unique<kube::InformerPool>(client);
  auto& pool = impl_->options.informers != nullptr ? *impl_->options.informers : *impl_->ownInformers;
  const kube::InformerOptions informerOptions{.withoutManagedFields = true};
  impl_->workloads = &pool.informer(api::kWorkloadGvk, informerOptions);
  impl_->priorityClasses =
      &pool.informer(api::GroupVersionKind{"scheduling.k8s.io", "v1", "PriorityClass"}, informerOptions);
  impl_->namespaces = &pool.informer(api::GroupVersionKind{"", "v1", "Namespace"}, informerOptions);
  for (const auto& kind : kinds) {
    if (kind.integration() == nullptr) continue;
    auto k = std::make_unique<Impl::Kind>(kind);
    k->jobs = &pool.informer(kind.gvk(), informerOptions);
    k->reconciler = std::make_unique<JobReconciler>(
        client, k->kind, JobCaches{k->jobs, impl_->workloads, &k->owners, impl_->priorityClasses, impl_->namespaces},
        impl_->events, clock, impl_->options.integrationObserver);
    multikueue::Controller::Options controllerOptions;
    controllerOptions.name = "job-" + strings::toLower(kind.gvk().kind);
    controllerOptions.workers = impl_->options.workersPerKind;
    controllerOptions.observer = impl_->options.controllerObserver;
    auto* reconciler = k->reconciler.get();
    k->controller = std::make_unique<multikueue::Controller>(
        controllerOptions, [reconciler](const std::string& key) { return reconciler->reconcile(key); }, clock);
    auto* controller = k->controller.get();
    auto* prebuilt = &k->prebuilt;
    const auto followJob = [controller, prebuilt](const nlohmann::json& job) {
      prebuilt->set(job);
      controller->enqueue(kube::Informer::keyOf(job));
    };
    impl_->handlers.add(
        *k->jobs,
        {.onAdd = followJob, .onUpdateNew = followJob, .onDelete = [controller, prebuilt](const nlohmann::json& job) {
           prebuilt->remove(job);
           controller->enqueue(kube::Informer::keyOf(job));
         }});
    impl_->kinds.push_back(std::move(k));
  }
  // Each kind's owner index follows every Workload; an event on a Workload a job controls, or
  // names as its prebuilt one, brings that job back.
  auto* self = impl_.get();
  const auto wake = [self](const nlohmann::json& workload) {
    const std::string key = kube::Informer::keyOf(workload);
    for (auto& k : self->kinds) {
      if (auto owner = WorkloadOwners::controllerOf(workload, k->kind.gvk())) k->controller->enqueue(*owner);
      for (const auto& job : k->prebuilt.jobsNaming(key)) k->controller->enqueue(job);
    }
  };
  const auto follow = [self, wake](const nlohmann::json& workload) {
    for (auto& k : self->kinds) k->owners.set(workload, k->kind.gvk());
    wake(workload);
  };
  // A namespace's labels may bring its jobs into the namespace selector or out of it.
  impl_->handlers.add(*impl_->namespaces, {.onUpdateNew = [self](const nlohmann::json& ns) {
    const std::string name = ns.value(nlohmann::json::json_pointer("/metadata/name"), std::string());
    const std::string prefix = name + "/";
    for (auto& k : self->kinds) {
      auto* controller = k->controller.get();
      // Keys are "namespace/name": the namespace's jobs are enqueued by key, none decoded.
      k->jobs->forEach([](const nlohmann::json&) {},
                       [&](const std::string& key) {
                         if (key.starts_with(prefix)) controller->enqueue(key);
                         return false;
                       });
    }
  }});
  impl_->handlers.add(
      *impl_->workloads,
      {.onAdd = follow, .onUpdateNew = follow, .onDelete = [self, wake](const nlohmann::json& workload) {
         for (auto& k : self->kinds) k->owners.remove(workload);
         wake(workload);
       }});
}

IntegrationController::~IntegrationController() { stop(); }

void IntegrationController::start(std::chrono::milliseconds syncTimeout) {
  if (impl_->started) return;
  impl_->started = true;
  impl_->workloads->start();
  impl_->priorityClasses->start();
  impl_->namespaces->start();
  for (auto& k : impl_->kinds) k->jobs->start();
  std::vector<std::string> unsynced;
  if (!impl_->workloads->waitForSync(syncTimeout)) unsynced.push_back(api::kWorkloadGvk.goString());
  if (!impl_->priorityClasses->waitForSync(syncTimeout)) unsynced.push_back("PriorityClass.v1.scheduling.k8s.io");
  if (!impl_->namespaces->waitForSync(syncTimeout)) unsynced.push_back("Namespace.v1");
  for (auto& k : impl_->kinds)
    if (!k->jobs->waitForSync(syncTimeout)) unsynced.push_back(k->kind.gvk().goString());
  if (!unsynced.empty()) {
    stop();
    throw Error("job integration: caches did not sync for " + strings::join(unsynced, ", ") +
                ": are the CRDs installed and may the adapter's ServiceAccount list and watch them?");
  }
  for (auto& k : impl_->kinds) k->controller->start();
  log::info("job integration started", {{"kinds", impl_->kinds.size()}});
}

void IntegrationController::stop() {
  if (!impl_->started) return;
  impl_->started = false;
  for (auto& k : impl_->kinds) k->controller->stop();
  // Shared informers go on for the dispatch loop; their owner stops them.
  if (impl_->ownInformers) impl_->ownInformers->stop();
}

std::size_t IntegrationController::kinds() const { return impl_->kinds.size(); }

bool IntegrationController::idle() const {
  for (const auto& k : impl_->kinds)
    if (!k->controller->idle()) return false;
  return true;
}

}  // namespace mka::integration
