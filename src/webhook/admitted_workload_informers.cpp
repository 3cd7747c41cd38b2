#include "mka/webhook/admitted_workload_informers.h"

#include <string>

#include "mka/api/kueue.h"

namespace mka::webhook {

void dropPodSetTemplates(nlohmann::json& workload) {
  auto spec = workload.find("spec");
  if (spec == workload.end() || !spec->is_object()) return;
  auto podSets = spec->find("podSets");
  if (podSets == spec->end() || !podSets->is_array()) return;
  for (auto& podSet : *podSets)
    if (podSet.is_object()) podSet.erase("template");
}

AdmittedWorkloadInformers::~AdmittedWorkloadInformers() { stop(); }

void AdmittedWorkloadInformers::start(kube::Client& client) {
  std::lock_guard lock(mutex_);
  if (workloads_) return;
  workloads_ = std::make_unique<kube::Informer>(
      client, api::kWorkloadGvk, kube::InformerOptions{.transform = dropPodSetTemplates, .withoutManagedFields = true});
  // Flavors change rarely: their reflector keeps no allocator thread cache.
  flavors_ = std::make_unique<kube::Informer>(
      client, api::kResourceFlavorGvk, kube::InformerOptions{.withoutManagedFields = true, .threadCache = false});
  workloads_->start();
  flavors_->start();
}

void AdmittedWorkloadInformers::stop() {
  kube::Informer* workloads = nullptr;
  kube::Informer* flavors = nullptr;
  {
    std::lock_guard lock(mutex_);
    workloads = workloads_.get();
    flavors = flavors_.get();
  }
  // Outside the lock: a stop joins the informers' threads, and the webhook's readers need not
  // wait for that.
  for (auto* informer : {workloads, flavors})
    if (informer) informer->stop();
}

std::optional<nlohmann::json> AdmittedWorkloadInformers::workload(std::string_view ns, std::string_view name) const {
  const kube::Informer* informer = nullptr;
  {
    std::lock_guard lock(mutex_);
    informer = workloads_.get();
  }
  if (informer == nullptr) return std::nullopt;
  return informer->get(std::string(ns) + "/" + std::string(name));
}

std::optional<nlohmann::json> AdmittedWorkloadInformers::flavor(std::string_view name) const {
  const kube::Informer* informer = nullptr;
  {
    std::lock_guard lock(mutex_);
    informer = flavors_.get();
  }
  if (informer == nullptr) return std::nullopt;
  return informer->get(std::string(name));
}

bool AdmittedWorkloadInformers::hasSynced() const {
  std::lock_guard lock(mutex_);
  return workloads_ && flavors_ && workloads_->hasSynced() && flavors_->hasSynced();
}

}  // namespace mka::webhook
