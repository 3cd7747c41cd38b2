#pragma once
// AdmittedWorkloads over informers on the cluster's Kueue Workloads (every namespace) and
// ResourceFlavors (kueue.x-k8s.io/v1beta2, as the job integration reads them), so that the
// /mutate-children webhook answers from memory, never calling the API server inside an
// admission request. The cached Workloads leave out their pod sets' templates, which the
// webhook never reads and which make up most of a Workload.
//
// Threads: start()/stop() by the owner; each informer's thread (inf-Workload,
// inf-ResourceFlavor) fills its cache, which the webhook's threads read through the interface.
// An informer whose kind is not served yet (Kueue's CRDs installed later) retries with backoff;
// stop() ends its requests and backoff at once.

#include <memory>
#include <mutex>

#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/webhook/admitted_workloads.h"

namespace mka::webhook {

class AdmittedWorkloadInformers final : public AdmittedWorkloads {
 public:
  AdmittedWorkloadInformers() = default;
  ~AdmittedWorkloadInformers() override;
  AdmittedWorkloadInformers(const AdmittedWorkloadInformers&) = delete;
  AdmittedWorkloadInformers& operator=(const AdmittedWorkloadInformers&) = delete;

  // Returns at once; hasSynced() stays false until both caches are filled. The client is given
  // here, not at construction: the service builds its admission handler, which holds this
  // cache, before it connects to the cluster. A second call does nothing.
  void start(kube::Client& client);
  void stop();

  std::optional<nlohmann::json> workload(std::string_view ns, std::string_view name) const override;
  std::optional<nlohmann::json> flavor(std::string_view name) const override;
  bool hasSynced() const override;

 private:
  // Set once by start(), under mutex_; never reset until destruction, so a reader may use the
  // informer it read outside the lock.
  mutable std::mutex mutex_;
  std::unique_ptr<kube::Informer> workloads_, flavors_;
};

// `workload` as the cache keeps it: without spec.podSets[].template.
void dropPodSetTemplates(nlohmann::json& workload);

}  // namespace mka::webhook
