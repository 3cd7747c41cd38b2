#pragma once
// The built-in placement admission check controller assembled (docs/placement.md): informers on
// the manager (AdmissionChecks, Placements and PlacementDecisions in the adapter's namespace,
// MultiKueueConfigs, MultiKueueClusters, Workloads), the check reconciler and the Workload
// check reconciler, and the event wiring between them. The owner runs it only while it holds
// the leader lease, beside the dispatch loop, and only when `placement.enabled` is set.
//
// Threads: start()/stop() from the owner; informers and the two controllers' workers run on
// their own threads. idle() from any thread.

#include <chrono>
#include <memory>
#include <stop_token>

#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/controller/controller.h"
#include "mka/kube/client.h"
#include "mka/kube/informer_pool.h"

namespace mka::placement {

class PlacementController {
 public:
  struct Options {
    std::string namespace_ = "kueue-system";  // the adapter's (Kueue's) namespace
    bool clusterProfiles = false;             // generated MultiKueueClusters reference ClusterProfiles
    // The manager's informers, shared with the dispatch loop (borrowed; its owner stops them).
    // Null: the controller keeps its own, stopped by stop().
    kube::InformerPool* informers = nullptr;
    // Reconciles and queue depths of its two controllers ("placement-check", "placement-wl"),
    // for the controller_runtime_* and workqueue_* series (borrowed, may be null).
    controller::ControllerObserver* controllerObserver = nullptr;

    // From the adapter's configuration: its namespace, and ClusterProfiles on when
    // multiKueue.clusterProfile names at least one provider.
    static Options from(const config::Configuration& config);
  };

  // `manager` and `clock` must outlive the controller.
  PlacementController(kube::Client& manager, const Clock& clock, Options options);
  ~PlacementController();  // stop()
  PlacementController(const PlacementController&) = delete;
  PlacementController& operator=(const PlacementController&) = delete;

  // Starts the informers, waits (up to `syncTimeout`) for their caches, then the controllers.
  // Throws mka::Error naming the kinds whose cache did not sync (a CRD not installed).
  // A stop requested on `stopping` (the owner stopping) ends the wait: it throws then too.
  void start(std::chrono::milliseconds syncTimeout = std::chrono::seconds{60}, std::stop_token stopping = {});
  void stop();
  bool idle() const;
  // After a test's FakeClock moved: requeues whose time has come run now.
  void recheckClock();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::placement
