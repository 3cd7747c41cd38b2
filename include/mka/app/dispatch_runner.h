#pragma once
// Runs the leader's controllers in `serve` only while this replica leads (SPEC §5: every replica
// serves webhooks, only the leader reconciles), as controller-runtime's manager runs its
// leader-election runnables: the dispatch loop (multikueue::Dispatcher) when dispatch.enabled,
// and the job integration (integration::IntegrationController) when integrations.frameworks
// lists kinds, on the manager, a worker or a single cluster alike. A configuration reload that changes what the
// dispatcher depends on restarts it with the new configuration; a reload that does not is
// ignored. Metrics go to observability::Metrics.
//
// The leader-gated running is controller::LeaderRunner's; this class says what runs (three groups)
// and when a reload restarts them.
//
// Threads: start(), stop() from the owner's thread; configChanged() from the reloader's; the
// groups start and stop on the runner's thread; the accessors from any thread.

#include <memory>
#include <string>

#include "mka/config/store.h"
#include "mka/controller/leader_runner.h"
#include "mka/kube/client.h"
#include "mka/kube/informer_pool.h"
#include "mka/observability/metrics.h"

namespace mka::app {

// Whether a dispatcher built from `running` can go on under `next`: false when anything it was
// built from differs (namespace, dispatch settings, client rate limits, the multiKueue and
// integrations sections),
// and a reload then restarts it. Webhook, probe, metrics and leader-election settings do not
// count.
bool sameDispatchSettings(const config::Configuration& running, const config::Configuration& next);

class DispatchRunner {
 public:
  // All borrowed; must outlive the runner. `identity` is this replica's in the Lease
  // (kube::defaultLeaderIdentity(), also in `manager`'s user agent); the worker clients
  // introduce themselves with `manager`'s user agent too.
  DispatchRunner(kube::Client& manager, const config::ConfigStore& store, observability::Metrics& metrics,
                 std::string identity);
  ~DispatchRunner();  // stop()
  DispatchRunner(const DispatchRunner&) = delete;
  DispatchRunner& operator=(const DispatchRunner&) = delete;

  // Starts leader election (or leads at once when leaderElection.leaderElect is false).
  void start();
  // Stops dispatching, releases the lease, joins.
  void stop();
  // The configuration store changed (called by the reloader's callback).
  void configChanged();

  bool leading() const { return runner_.leading(); }
  bool dispatching() const { return runner_.running(kDispatchGroup); }
  bool integrating() const { return runner_.running(kIntegrationGroup); }

 private:
  static constexpr const char* kDispatchGroup = "dispatch loop";
  static constexpr const char* kIntegrationGroup = "job integration";
  static constexpr const char* kPlacementGroup = "placement controller";
  controller::LeaderRunner::Options runnerOptions();

  class Observer;
  kube::Client& manager_;
  const config::ConfigStore& store_;
  observability::Metrics& metrics_;
  const std::string identity_;
  std::unique_ptr<Observer> observer_;

  // Owned by the runner's thread (its group functions), from beforeStart to afterStop: the
  // configuration the groups were built from, and the manager's informers the dispatch loop and
  // the job integration share (each kind listed, watched and cached once).
  std::shared_ptr<const config::Configuration> running_;
  std::unique_ptr<kube::InformerPool> informers_;
  std::string leaseName_;  // "" without leader election

  controller::LeaderRunner runner_;  // last: stopped before what its groups use goes
};

}  // namespace mka::app
