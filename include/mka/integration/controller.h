#pragma once
// The job integration of one cluster (SPEC §7), assembled: a Workload informer shared by the
// integrated kinds, and per kind a job informer, the owner index, a controller and its
// JobReconciler, with the event wiring of KUEUE-JOBFRAMEWORK.md §4.1 (job events; Workload
// events mapped to the job that controls them). The owner runs it only while it holds the
// leader lease, on the manager, on every worker and on a single cluster alike.
//
// Threads: start()/stop() from the owner; informers and controller workers run on their own
// threads. idle() from any thread.

#include <chrono>
#include <memory>
#include <stop_token>
#include <vector>

#include "mka/common/clock.h"
#include "mka/controller/controller.h"
#include "mka/integration/job_reconciler.h"
#include "mka/jobkind/job_kind.h"
#include "mka/kube/client.h"
#include "mka/kube/informer_pool.h"

namespace mka::integration {

class IntegrationController {
 public:
  struct Options {
    std::size_t workersPerKind = 2;
    controller::ControllerObserver* controllerObserver = nullptr;  // borrowed, may be null
    IntegrationObserver* integrationObserver = nullptr;            // borrowed, may be null
    // The Events' source component (kubectl describe shows it).
    std::string eventComponent = "multikueue-adapter-integration";
    // The cluster's informers, shared with the dispatch loop on a manager (borrowed; its owner
    // stops them). Null: the controller keeps its own, stopped by stop().
    kube::InformerPool* informers = nullptr;
  };

  // `kinds`: those with integration rules are run; the others are skipped. `client` and `clock`
  // must outlive the controller.
  IntegrationController(kube::Client& client, const std::vector<jobkind::JobKind>& kinds, const Clock& clock,
                        Options options);
  ~IntegrationController();  // stop()
  IntegrationController(const IntegrationController&) = delete;
  IntegrationController& operator=(const IntegrationController&) = delete;

  // Starts the informers, waits (up to `syncTimeout`) for their caches, then the controllers.
  // Throws mka::Error naming the kinds whose cache did not sync (CRD or RBAC missing).
  // A stop requested on `stopping` (the owner stopping) ends the wait: it throws then too.
  void start(std::chrono::milliseconds syncTimeout = std::chrono::seconds{60}, std::stop_token stopping = {});
  void stop();

  std::size_t kinds() const;
  // Every controller quiet (tests await it after a change).
  bool idle() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::integration
