#pragma once
// Answers "is this LocalQueue backed by a MultiKueue admission check?" for the mutating webhook.
// The webhook never calls the API server: the index is fed by QueueIndexInformers (LocalQueue,
// ClusterQueue and AdmissionCheck informers on the manager) or, in tests, by hand.

#include <map>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mka::webhook {

struct QueueLookup {
  enum class Result {
    LocalQueueNotFound,    // no such LocalQueue (yet): no defaulting, warn the user
    ClusterQueueNotFound,  // the LocalQueue names a ClusterQueue the index has not seen
    NotMultiKueue,         // the ClusterQueue has no admission check with a MultiKueue controller
    MultiKueue,            // some admission check of the ClusterQueue is MultiKueue's (active or not)
  };
  Result result = Result::LocalQueueNotFound;
  std::string clusterQueue;    // set unless LocalQueueNotFound
  std::string admissionCheck;  // the matching check when MultiKueue
};

class QueueIndex {
 public:
  virtual ~QueueIndex() = default;
  // `controllerNames`: AdmissionCheck controller names that count as MultiKueue.
  virtual QueueLookup lookup(std::string_view ns, std::string_view localQueue,
                             std::span<const std::string> controllerNames) const = 0;
  // Whether the namespace has a LocalQueue named "default" (Kueue's LocalQueueDefaulting).
  bool hasDefaultLocalQueue(std::string_view ns) const;
  // true once the index reflects the cluster (informer caches synced); /readyz waits for it.
  virtual bool hasSynced() const = 0;
};

// Threads: written by the informer threads of QueueIndexInformers (one per kind) or a test,
// read concurrently by webhook threads. A reader/writer lock suits this read-mostly map better than a queue: lookups
// must answer synchronously inside an admission request.
class InMemoryQueueIndex final : public QueueIndex {
 public:
  QueueLookup lookup(std::string_view ns, std::string_view localQueue,
                     std::span<const std::string> controllerNames) const override;
  bool hasSynced() const override;

  void upsertLocalQueue(std::string ns, std::string name, std::string clusterQueue);
  void removeLocalQueue(const std::string& ns, const std::string& name);
  // `admissionChecks`: every check the ClusterQueue references, from spec.admissionChecks or
  // spec.admissionChecksStrategy.admissionChecks[].name.
  void upsertClusterQueue(std::string name, std::vector<std::string> admissionChecks);
  void removeClusterQueue(const std::string& name);
  void upsertAdmissionCheck(std::string name, std::string controllerName);
  void removeAdmissionCheck(const std::string& name);
  void setSynced(bool synced);

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::string, std::less<>> localQueues_;
  std::map<std::string, std::vector<std::string>, std::less<>> clusterQueues_;
  std::map<std::string, std::string, std::less<>> admissionChecks_;
  bool synced_ = true;
};

}  // namespace mka::webhook
