#pragma once
// Feeds an InMemoryQueueIndex from the manager cluster: informers on Kueue's LocalQueues,
// ClusterQueues and AdmissionChecks (v1beta2 when the cluster serves it, else v1beta1, read
// through discovery at start()), so the mutating webhook answers "is this queue MultiKueue?"
// from memory, never calling the API server inside an admission request.
//
// Threads: start()/stop() by the owner; a starter thread finds the Kueue version (retrying
// with backoff while the cluster cannot be reached; stop() ends its request and its backoff),
// then the informers' threads write into the index.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/webhook/queue_index.h"

namespace mka::webhook {

class QueueIndexInformers {
 public:
  QueueIndexInformers(kube::Client& client, InMemoryQueueIndex& index);
  ~QueueIndexInformers();

  // Returns at once; hasSynced() stays false until the cluster answered and the caches are
  // filled. A cluster that serves no Kueue version is logged (install Kueue's CRDs) and
  // retried.
  void start();
  void stop();
  bool hasSynced() const;
  std::string kueueVersion() const;

 private:
  void startInformers(const std::string& version);

  kube::Client& client_;
  InMemoryQueueIndex& index_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::stop_source stop_;  // the starter's discovery requests, requested by stop()
  std::string version_;
  std::unique_ptr<kube::Informer> localQueues_, clusterQueues_, admissionChecks_;
  std::thread starter_;
};

// The admission checks a ClusterQueue references: spec.admissionChecks (v1beta1) and
// spec.admissionChecksStrategy.admissionChecks[].name (both versions).
std::vector<std::string> clusterQueueAdmissionChecks(const nlohmann::json& clusterQueue);

}  // namespace mka::webhook
