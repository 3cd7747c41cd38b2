#pragma once
// What controller-runtime's manager does for a group of controllers, in small: it owns (or
// borrows) the informer pool the group reads, the handlers the group adds to those informers,
// the controllers and whatever else runs beside them. start() starts the informers, waits for
// their caches and only then the controllers, so no reconcile reads a cache still listing;
// stop() undoes it in reverse. The dispatch loop, the job integration and the placement check
// each assemble themselves on one; the owner (app::DispatchRunner) runs them while the replica
// leads.
//
// Reconcilers read the caches through reader(), an ObjectReader over every informer asked for.
//
// Threads: the registration calls, start() and stop() from the owner's thread, before start()
// for the registrations; informers and controllers run on their own threads; idle() and
// reader() from any thread.

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "mka/api/gvk.h"
#include "mka/common/clock.h"
#include "mka/controller/controller.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/kube/informer.h"
#include "mka/kube/informer_pool.h"

namespace mka::controller {

class Manager {
 public:
  struct Options {
    // Names the group in logs and in the error of a start whose caches did not sync.
    std::string name;
    // The cluster's informers, shared with other groups (borrowed; its owner stops them). Null:
    // the manager keeps its own, stopped by stop().
    kube::InformerPool* informers = nullptr;
    // Given to every controller that names none (reconciles and queue depths for /metrics).
    ControllerObserver* observer = nullptr;
  };

  // `client` and `clock` must outlive the manager.
  Manager(kube::Client& client, const Clock& clock, Options options);
  ~Manager();  // stop()
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // The informer of `gvk` (from the pool: one per kind and options), started and awaited by
  // start(), readable through reader().
  kube::Informer& informer(const api::GroupVersionKind& gvk, const kube::InformerOptions& options);
  // Every informer asked for, through one reader.
  const ObjectReader& reader() const { return reader_; }
  // Handlers on one of the informers, removed by stop(): a stopped group is never called again
  // while shared informers go on for others.
  void handle(kube::Informer& informer, kube::InformerHandlers handlers);
  // A controller, started once the caches synced (in the order added) and stopped by stop().
  Controller& add(Controller::Options options, Controller::Reconcile reconcile);
  // Something else that runs with the controllers (a periodic collector; a registry whose
  // connections must close after the controllers that use them stopped): started after the
  // controllers added before it, stopped before them. Either function may be empty.
  void add(std::function<void()> start, std::function<void()> stop);

  // Starts the informers, waits up to `syncTimeout` for their caches, then starts what was
  // added, in order. Throws mka::Error naming the kinds whose cache did not sync, followed by
  // `hint` (what the user should check), or saying that the start was given up when stop was
  // requested on `stopping` during the wait (the owner is stopping); the owner then discards
  // the manager. Idempotent.
  void start(std::chrono::milliseconds syncTimeout, std::string_view hint, std::stop_token stopping = {});
  // Removes the handlers, stops what was added in reverse order, then the informers the manager
  // owns. Final: a stopped manager is not started again. Idempotent.
  void stop();

  // Between start() and stop().
  bool started() const { return started_ && !stopped_; }
  // Every controller quiet: nothing queued, nothing in progress (tests await it).
  bool idle() const;
  // After a test's FakeClock moved: requeues whose time has come run now.
  void recheckClock();
  const std::string& name() const { return options_.name; }

 private:
  struct Runnable {
    Controller* controller = nullptr;  // or:
    std::function<void()> start, stop;
  };

  kube::Client& client_;
  const Clock& clock_;
  Options options_;
  std::unique_ptr<kube::InformerPool> ownInformers_;  // when options.informers is null
  std::vector<kube::Informer*> informers_;
  CacheReader reader_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  std::vector<Runnable> runnables_;
  std::size_t running_ = 0;  // runnables_[0, running_) were started
  bool started_ = false;
  bool stopped_ = false;
  kube::HandlerRegistrations handlers_;
};

}  // namespace mka::controller
