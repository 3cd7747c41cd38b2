#pragma once
// Runs the leader's controllers in `serve` only while this replica leads (SPEC §5: every replica
// serves webhooks, only the leader reconciles), as controller-runtime's manager runs its
// leader-election runnables: the dispatch loop (multikueue::Dispatcher) when dispatch.enabled,
// and the job integration (integration::IntegrationController) when integrations.frameworks
// lists kinds, on the manager, a worker or a single cluster alike. A configuration reload that changes what the
// dispatcher depends on restarts it with the new configuration; a reload that does not is
// ignored. Metrics go to observability::Metrics.
//
// Threads: owns one thread ("dispatch") that starts and stops the Dispatcher in answer to
// messages (leadership gained or lost, configuration changed, stop) posted by the leader
// elector's thread, the config reloader's thread or the owner; the Dispatcher's start() waits
// for caches, so it never runs on the elector's thread (that would delay lease renewals).

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "mka/config/store.h"
#include "mka/integration/controller.h"
#include "mka/kube/client.h"
#include "mka/kube/leader_election.h"
#include "mka/multikueue/dispatcher.h"
#include "mka/observability/metrics.h"
#include "mka/placement/placement_controller.h"

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

  bool leading() const;
  bool dispatching() const;
  bool integrating() const;

 private:
  enum class Message { Lead, Follow, Reconfigure, Stop };
  void post(Message message);
  void run();
  void startDispatcher();
  void stopDispatcher();

  class Observer;
  kube::Client& manager_;
  const config::ConfigStore& store_;
  observability::Metrics& metrics_;
  const std::string identity_;
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<kube::LeaderElector> elector_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Message> messages_;
  bool leading_ = false;
  bool dispatching_ = false;
  bool integrating_ = false;

  // Owned by the "dispatch" thread.
  // The manager's informers, shared by the dispatch loop and the job integration (each kind
  // listed, watched and cached once); made with the first of them, stopped after the last.
  std::unique_ptr<kube::InformerPool> informers_;
  std::string leaseName_;  // "" without leader election; set by start()
  std::unique_ptr<multikueue::Dispatcher> dispatcher_;
  std::unique_ptr<integration::IntegrationController> integration_;
  // The built-in placement admission check controller (placement.enabled), beside the dispatch loop.
  std::unique_ptr<placement::PlacementController> placement_;
  std::shared_ptr<const config::Configuration> running_;
  std::thread thread_;
};

}  // namespace mka::app
