#pragma once
// The dispatch loop of one manager (SPEC §5), assembled: informers on the manager (Workloads,
// AdmissionChecks, MultiKueueConfigs, MultiKueueClusters, kubeconfig Secrets, the configured
// job kinds), the cluster registry and its controller, the AdmissionCheck controller, the
// Workload controller and the orphan collector, with the event wiring between them (§2.1,
// §3.3, §4 triggers). The owner runs it only while it holds the leader lease.
//
// Threads: start()/stop() from the owner; the pieces run on their own threads (informers,
// controller workers, GC). idle()/synced() from any thread.

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/controller/controller.h"
#include "mka/kube/client.h"
#include "mka/kube/informer_pool.h"
#include "mka/multikueue/cluster_registry.h"
#include "mka/multikueue/garbage_collector.h"
#include "mka/multikueue/generic_adapter.h"
#include "mka/multikueue/workload_reconciler.h"

namespace mka::multikueue {

class Dispatcher {
 public:
  struct Options {
    config::Configuration config;  // config.dispatch.workloadConcurrency: the workload controller's workers
    // Worker connections (path prefix, timeouts); namespace_, origin, adapters, clientOptions
    // and writeClusterStatus are filled from `config`.
    ClusterRegistryOptions registry;
    PrebuiltLink prebuiltLink = PrebuiltLink::AnnotationAndLabel;  // how the adapters link job copies
    controller::ControllerObserver* controllerObserver = nullptr;  // borrowed, may be null
    DispatchObserver* dispatchObserver = nullptr;                  // borrowed, may be null
    // Called when a worker's connection changes (the per-cluster gauge), with nullopt when it
    // ends because its MultiKueueCluster is gone (deleted or being deleted): nothing is to
    // connect any more, and the gauge goes with it.
    std::function<void(const std::string& cluster, std::optional<bool> connected)> onClusterConnection;
    // The manager's informers, shared with the job integration (borrowed; its owner stops
    // them). Null: the dispatcher keeps its own, stopped by stop().
    kube::InformerPool* informers = nullptr;
  };

  // `manager` and `clock` must outlive the dispatcher.
  Dispatcher(kube::Client& manager, const Clock& clock, Options options);
  ~Dispatcher();  // stop()
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Starts the informers, waits (up to `syncTimeout`) for the manager caches, then starts the
  // controllers and the GC. Throws mka::Error naming the kinds whose cache did not sync.
  // A stop requested on `stopping` (the owner stopping) ends the wait: it throws then too.
  void start(std::chrono::milliseconds syncTimeout = std::chrono::seconds{60}, std::stop_token stopping = {});
  void stop();

  // Every controller quiet (tests await it after a change, together with the stand-ins).
  bool idle() const;
  // For tests and the demo.
  ClusterRegistry& registry();
  OrphanCollector& collector();
  WorkloadReconciler& workloads();
  // Re-checks delayed keys after a FakeClock advanced (tests).
  void recheckClock();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::multikueue
