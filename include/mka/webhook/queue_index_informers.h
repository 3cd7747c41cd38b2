#pragma once
// Feeds an InMemoryQueueIndex from the manager cluster: informers on Kueue's LocalQueues,
// ClusterQueues and AdmissionChecks (v1beta2 when the cluster serves it, else v1beta1, read
// through discovery at start()), so the mutating webhook answers "is this queue MultiKueue?"
// from memory, never calling the API server inside an admission request.
//
// Threads: start()/stop() by the owner; the informers' threads write into the index.

#include <memory>
#include <string>

#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/webhook/queue_index.h"

namespace mka::webhook {

class QueueIndexInformers {
 public:
  QueueIndexInformers(kube::Client& client, InMemoryQueueIndex& index);
  ~QueueIndexInformers();

  // Throws kube::ApiError when the cluster serves neither Kueue version (the CRDs are missing)
  // or cannot be reached.
  void start();
  void stop();
  bool hasSynced() const;
  const std::string& kueueVersion() const { return version_; }

 private:
  kube::Client& client_;
  InMemoryQueueIndex& index_;
  std::string version_;
  std::unique_ptr<kube::Informer> localQueues_, clusterQueues_, admissionChecks_;
};

// The admission checks a ClusterQueue references: spec.admissionChecks (v1beta1) and
// spec.admissionChecksStrategy.admissionChecks[].name (both versions).
std::vector<std::string> clusterQueueAdmissionChecks(const nlohmann::json& clusterQueue);

}  // namespace mka::webhook
