#pragma once
// The garbage collector of orphans (KUEUE-MULTIKUEUE.md §2.12, SPEC §5): on every connected
// worker, remote Workloads and jobs carrying our origin label whose manager Workload is gone or
// terminating are deleted, the job first, then the Workload. Objects with another origin are
// never touched (several managers can share workers). A job copy whose Workload copy is gone
// already is collected too (Kueue leaves it; a job left behind would keep running). With
// syncDependencies, dependency copies whose owners (dependencies.h) have no live Workload copy
// on that worker are deleted as well.
//
// Threads: collect() on the caller's thread; start() runs it every `interval` on a thread of
// its own ("mk-gc"), in real time (0 disables it, as Kueue does); tests call collect().

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "mka/api/kueue.h"
#include "mka/common/clock.h"
#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/multikueue/adapter.h"
#include "mka/multikueue/cluster_registry.h"

namespace mka::multikueue {

class OrphanCollector {
 public:
  struct Options {
    std::string origin = std::string(api::kDefaultOrigin);
    Adapters adapters;  // one per configured job kind
    std::chrono::nanoseconds interval{std::chrono::minutes{1}};
  };
  struct Stats {
    std::size_t workloadsDeleted = 0;
    std::size_t jobsDeleted = 0;
    std::size_t dependenciesDeleted = 0;  // Secrets, ConfigMaps, ServiceAccounts (syncDependencies)
  };

  // All borrowed. `workloads` is the manager's Workload informer (a miss is confirmed with a GET
  // before anything is deleted).
  OrphanCollector(kube::Client& manager, kube::Informer& workloads, const ClusterRegistry& clusters, Options options);
  ~OrphanCollector();

  // One pass over every connected worker; errors on one object are logged and skipped.
  Stats collect();
  void start();
  void stop();

 private:
  bool liveLocally(const std::string& key);
  bool syncsDependencies() const;

  kube::Client& manager_;
  kube::Informer& workloads_;
  const ClusterRegistry& clusters_;
  Options options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mka::multikueue
