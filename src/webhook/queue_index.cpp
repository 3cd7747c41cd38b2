#include "mka/webhook/queue_index.h"

#include <algorithm>
#include <mutex>

#include "mka/api/kueue.h"

namespace mka::webhook {

bool QueueIndex::hasDefaultLocalQueue(std::string_view ns) const {
  return lookup(ns, api::kDefaultLocalQueue, {}).result != QueueLookup::Result::LocalQueueNotFound;
}

QueueLookup InMemoryQueueIndex::lookup(std::string_view ns, std::string_view localQueue,
                                       std::span<const std::string> controllerNames) const {
  std::shared_lock lock(mutex_);
  QueueLookup out;
  auto lq = localQueues_.find(std::pair<std::string, std::string>(ns, localQueue));
  if (lq == localQueues_.end()) return out;  // LocalQueueNotFound

  out.clusterQueue = lq->second;
  auto cq = clusterQueues_.find(out.clusterQueue);
  if (cq == clusterQueues_.end()) {
    out.result = QueueLookup::Result::ClusterQueueNotFound;
    return out;
  }
  // Like Kueue (KUEUE-MULTIKUEUE.md §5.1 step 5) the check counts whether active or not: the
  // marker must be set at creation, possibly before the check becomes active.
  for (const auto& check : cq->second) {
    auto ac = admissionChecks_.find(check);
    if (ac == admissionChecks_.end()) continue;
    if (std::find(controllerNames.begin(), controllerNames.end(), ac->second) != controllerNames.end()) {
      out.result = QueueLookup::Result::MultiKueue;
      out.admissionCheck = check;
      return out;
    }
  }
  out.result = QueueLookup::Result::NotMultiKueue;
  return out;
}

bool InMemoryQueueIndex::hasSynced() const {
  std::shared_lock lock(mutex_);
  return synced_;
}

void InMemoryQueueIndex::upsertLocalQueue(std::string ns, std::string name, std::string clusterQueue) {
  std::unique_lock lock(mutex_);
  localQueues_.insert_or_assign({std::move(ns), std::move(name)}, std::move(clusterQueue));
}

void InMemoryQueueIndex::removeLocalQueue(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mutex_);
  localQueues_.erase(std::pair(ns, name));
}

void InMemoryQueueIndex::upsertClusterQueue(std::string name, std::vector<std::string> admissionChecks) {
  std::unique_lock lock(mutex_);
  clusterQueues_.insert_or_assign(std::move(name), std::move(admissionChecks));
}

void InMemoryQueueIndex::removeClusterQueue(const std::string& name) {
  std::unique_lock lock(mutex_);
  clusterQueues_.erase(name);
}

void InMemoryQueueIndex::upsertAdmissionCheck(std::string name, std::string controllerName) {
  std::unique_lock lock(mutex_);
  admissionChecks_.insert_or_assign(std::move(name), std::move(controllerName));
}

void InMemoryQueueIndex::removeAdmissionCheck(const std::string& name) {
  std::unique_lock lock(mutex_);
  admissionChecks_.erase(name);
}

void InMemoryQueueIndex::setSynced(bool synced) {
  std::unique_lock lock(mutex_);
  synced_ = synced;
}

}  // namespace mka::webhook
