#include "mka/integration/controller.h"

#include "mka/api/kinds.h"
#include "mka/api/kueue.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/controller/event_recorder.h"
#include "mka/controller/manager.h"
#include "mka/kube/informer.h"
#include "mka/kube/informer_pool.h"

namespace mka::integration {

struct IntegrationController::Impl {
  struct Kind {
    explicit Kind(jobkind::JobKind kind) : kind(std::move(kind)) {}
    jobkind::JobKind kind;
    kube::Informer* jobs = nullptr;
    WorkloadOwners owners;
    PrebuiltNames prebuilt;
    std::unique_ptr<JobReconciler> reconciler;
    controller::Controller* controller = nullptr;
  };

  Impl(kube::Client& client, const Clock& clock, Options options)
      : client(client),
        clock(clock),
        options(std::move(options)),
        events(client, clock, this->options.eventComponent),
        runtime(client, clock, {"job integration", this->options.informers, this->options.controllerObserver}) {}
  ~Impl() { runtime.stop(); }

  kube::Client& client;
  const Clock& clock;
  Options options;
  controller::EventRecorder events;
  // Stopped by ~Impl before the kinds go: no handler or worker calls into a reconciler being
  // destroyed.
  controller::Manager runtime;
  kube::Informer* workloads = nullptr;
  std::vector<std::unique_ptr<Kind>> kinds;
};

IntegrationController::IntegrationController(kube::Client& client, const std::vector<jobkind::JobKind>& kinds,
                                             const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(client, clock, std::move(options))) {
  auto& runtime = impl_->runtime;
  const kube::InformerOptions informerOptions{.withoutManagedFields = true};
  impl_->workloads = &runtime.informer(api::kWorkloadGvk, informerOptions);
  // Read for each new Workload's priority and for the kinds' namespace selectors.
  runtime.informer(api::kPriorityClassGvk, informerOptions);
  auto& namespaces = runtime.informer(api::kNamespaceGvk, informerOptions);
  for (const auto& kind : kinds) {
    if (kind.integration() == nullptr) continue;
    auto k = std::make_unique<Impl::Kind>(kind);
    k->jobs = &runtime.informer(kind.gvk(), informerOptions);
    k->reconciler = std::make_unique<JobReconciler>(client, k->kind, runtime.reader(), k->owners, impl_->events, clock,
                                                    impl_->options.integrationObserver);
    controller::Controller::Options controllerOptions;
    controllerOptions.name = "job-" + strings::toLower(kind.gvk().kind);
    controllerOptions.workers = impl_->options.workersPerKind;
    auto* reconciler = k->reconciler.get();
    k->controller =
        &runtime.add(controllerOptions, [reconciler](const std::string& key) { return reconciler->reconcile(key); });
    auto* controller = k->controller;
    auto* prebuilt = &k->prebuilt;
    const auto followJob = [controller, prebuilt](const nlohmann::json& job) {
      prebuilt->set(job);
      controller->enqueue(kube::Informer::keyOf(job));
    };
    runtime.handle(
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
  runtime.handle(namespaces, {.onUpdateNew = [self](const nlohmann::json& ns) {
                   const std::string name = ns.value(nlohmann::json::json_pointer("/metadata/name"), std::string());
                   const std::string prefix = name + "/";
                   for (auto& k : self->kinds) {
                     auto* controller = k->controller;
                     // Keys are "namespace/name": the namespace's jobs are enqueued by key, none decoded.
                     k->jobs->forEach([](const nlohmann::json&) {},
                                      [&](const std::string& key) {
                                        if (key.starts_with(prefix)) controller->enqueue(key);
                                        return false;
                                      });
                   }
                 }});
  runtime.handle(*impl_->workloads,
                 {.onAdd = follow, .onUpdateNew = follow, .onDelete = [self, wake](const nlohmann::json& workload) {
                    for (auto& k : self->kinds) k->owners.remove(workload);
                    wake(workload);
                  }});
}

IntegrationController::~IntegrationController() { stop(); }

void IntegrationController::start(std::chrono::milliseconds syncTimeout, std::stop_token stopping) {
  if (impl_->runtime.started()) return;
  try {
    impl_->runtime.start(syncTimeout,
                         "are the CRDs installed and may the adapter's ServiceAccount list and watch them?", stopping);
  } catch (...) {
    stop();
    throw;
  }
  log::info("job integration started", {{"kinds", impl_->kinds.size()}});
}

void IntegrationController::stop() { impl_->runtime.stop(); }

std::size_t IntegrationController::kinds() const { return impl_->kinds.size(); }

bool IntegrationController::idle() const { return impl_->runtime.idle(); }

}  // namespace mka::integration
