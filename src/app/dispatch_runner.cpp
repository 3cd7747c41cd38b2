#include "mka/app/dispatch_runner.h"

#include "mka/common/log.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"
#include "mka/kube/rate_limiter.h"

namespace mka::app {

bool sameDispatchSettings(const config::Configuration& a, const config::Configuration& b) {
  auto frameworks = [](const config::Configuration& c) {
    std::vector<std::pair<std::string, config::ManagedByLocation>> out;
    for (const auto& f : c.multiKueue.externalFrameworks) out.emplace_back(f.name, f.managedBy);
    return out;
  };
  return a.namespace_ == b.namespace_ && a.dispatch.enabled == b.dispatch.enabled &&
         a.dispatch.admissionCheckControllerName == b.dispatch.admissionCheckControllerName &&
         a.dispatch.workloadConcurrency == b.dispatch.workloadConcurrency &&
         a.clientConnection.qps == b.clientConnection.qps && a.clientConnection.burst == b.clientConnection.burst &&
         frameworks(a) == frameworks(b) && a.multiKueue.gcInterval == b.multiKueue.gcInterval &&
         a.multiKueue.origin == b.multiKueue.origin &&
         a.multiKueue.workerLostTimeout == b.multiKueue.workerLostTimeout &&
         a.multiKueue.dispatcherName == b.multiKueue.dispatcherName &&
         a.integrations.frameworks == b.integrations.frameworks && a.placement == b.placement &&
         a.multiKueue.clusterProfile == b.multiKueue.clusterProfile;
}

// Forwards the dispatch loop's and the integration's observations to the Prometheus registry.
class DispatchRunner::Observer : public controller::ControllerObserver,
                                 public multikueue::DispatchObserver,
                                 public integration::IntegrationObserver {
 public:
  explicit Observer(observability::Metrics& metrics) : metrics_(metrics) {}
  void reconciled(const std::string& controller, const std::string& result, double seconds) override {
    metrics_.observeReconcile(controller, result, seconds);
  }
  void queueDepth(const std::string& controller, std::size_t depth) override {
    metrics_.setQueueDepth(controller, depth);
  }
  void workloadDispatched(const std::string& clusterQueue, const std::string& cluster) override {
    metrics_.recordWorkloadDispatched(clusterQueue, cluster);
  }
  void workloadAdmitted(const std::string& clusterQueue, const std::string& cluster) override {
    metrics_.recordWorkloadAdmitted(clusterQueue, cluster);
  }
  void workloadCreated(const std::string& kind) override { metrics_.recordIntegrationWorkloadCreated(kind); }
  void jobResumed(const std::string& kind) override { metrics_.recordIntegrationJobResumed(kind); }
  void jobStopped(const std::string& kind) override { metrics_.recordIntegrationJobStopped(kind); }
  void workloadFinished(const std::string& kind, const std::string& result) override {
    metrics_.recordIntegrationWorkloadFinished(kind, result);
  }

 private:
  observability::Metrics& metrics_;
};

DispatchRunner::DispatchRunner(kube::Client& manager, const config::ConfigStore& store, observability::Metrics& metrics,
                               std::string identity)
    : manager_(manager),
      store_(store),
      metrics_(metrics),
      identity_(std::move(identity)),
      observer_(std::make_unique<Observer>(metrics)) {}

DispatchRunner::~DispatchRunner() { stop(); }

void DispatchRunner::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    nameThisThread("dispatch");
    disableThreadCache();  // leader election: a lease renewal every few seconds
    run();
  });
  const auto cfg = store_.get();
  if (!cfg->leaderElection.leaderElect) {
    log::info("leader election disabled: this replica dispatches");
    metrics_.setReplicaRole("standalone");
    post(Message::Lead);
    return;
  }
  leaseName_ = cfg->leaderElection.resourceName;
  metrics_.setReplicaRole("follower", leaseName_);
  kube::LeaderElectionConfig le;
  le.namespace_ = cfg->leaderElection.resourceNamespace;
  le.name = cfg->leaderElection.resourceName;
  le.identity = identity_;
  le.leaseDuration = std::chrono::duration_cast<std::chrono::milliseconds>(cfg->leaderElection.leaseDuration);
  le.renewDeadline = std::chrono::duration_cast<std::chrono::milliseconds>(cfg->leaderElection.renewDeadline);
  le.retryPeriod = std::chrono::duration_cast<std::chrono::milliseconds>(cfg->leaderElection.retryPeriod);
  le.onStartedLeading = [this] { post(Message::Lead); };
  le.onStoppedLeading = [this] { post(Message::Follow); };
  le.onNewLeader = [](const std::string& identity) { log::info("leader observed", {{"identity", identity}}); };
  elector_ = std::make_unique<kube::LeaderElector>(manager_, le);
  log::info("leader election started", {{"lease", le.namespace_ + "/" + le.name}, {"identity", le.identity}});
  elector_->start();
}

void DispatchRunner::stop() {
  if (elector_) elector_->stop();  // may post Follow
  post(Message::Stop);
  if (thread_.joinable()) thread_.join();
  elector_.reset();
}

void DispatchRunner::configChanged() { post(Message::Reconfigure); }

bool DispatchRunner::leading() const {
  std::lock_guard lock(mutex_);
  return leading_;
}

bool DispatchRunner::dispatching() const {
  std::lock_guard lock(mutex_);
  return dispatching_;
}

bool DispatchRunner::integrating() const {
  std::lock_guard lock(mutex_);
  return integrating_;
}

void DispatchRunner::post(Message message) {
  {
    std::lock_guard lock(mutex_);
    messages_.push_back(message);
  }
  wake_.notify_all();
}

void DispatchRunner::run() {
  while (true) {
    Message message;
    {
      std::unique_lock lock(mutex_);
      // A controller that could not start (caches not synced: CRDs or RBAC missing) is retried.
      const bool retry = leading_ && running_ &&
                         ((running_->dispatch.enabled && !dispatcher_) ||
                          (!running_->integrations.frameworks.empty() && !integration_) ||
                          (running_->placement.enabled && !placement_));
      if (!wake_.wait_for(lock, retry ? std::chrono::seconds{30} : std::chrono::hours{24},
                          [&] { return !messages_.empty(); })) {
        if (retry) {
          lock.unlock();
          startDispatcher();
        }
        continue;
      }
      message = messages_.front();
      messages_.pop_front();
      if (message == Message::Lead) leading_ = true;
      if (message == Message::Follow || message == Message::Stop) leading_ = false;
    }
    if (!leaseName_.empty() && (message == Message::Lead || message == Message::Follow))
      metrics_.setReplicaRole(message == Message::Lead ? "leader" : "follower", leaseName_);
    switch (message) {
      case Message::Lead: startDispatcher(); break;
      case Message::Follow:
        log::info("leadership lost: dispatching stops");
        stopDispatcher();
        break;
      case Message::Reconfigure:
        if ((dispatcher_ || integration_) && running_ && !sameDispatchSettings(*running_, *store_.get())) {
          log::info("dispatch settings changed: restarting the dispatch loop with the new configuration");
          stopDispatcher();
          startDispatcher();
        }
        break;
      case Message::Stop: stopDispatcher(); return;
    }
  }
}

void DispatchRunner::startDispatcher() {
  running_ = store_.get();
  if (!informers_) informers_ = std::make_unique<kube::InformerPool>(manager_);
  if (!integration_ && !running_->integrations.frameworks.empty()) {
    integration::IntegrationController::Options options;
    options.informers = informers_.get();
    options.controllerObserver = observer_.get();
    options.integrationObserver = observer_.get();
    auto integration = std::make_unique<integration::IntegrationController>(
        manager_, jobkind::integratedKindsOf(*running_), kube::systemClock(), options);
    try {
      integration->start();
      integration_ = std::move(integration);
      std::lock_guard lock(mutex_);
      integrating_ = true;
    } catch (const std::exception& e) {
      log::error("job integration not started", {{"error", e.what()}});
    }
  }
  if (!placement_ && running_->placement.enabled) {
    auto options = placement::PlacementController::Options::from(*running_);
    options.informers = informers_.get();
    options.controllerObserver = observer_.get();
    auto controller = std::make_unique<placement::PlacementController>(manager_, kube::systemClock(), options);
    try {
      controller->start();
      placement_ = std::move(controller);
    } catch (const std::exception& e) {
      log::error("placement controller not started", {{"error", e.what()}});
    }
  }
  if (dispatcher_ || !running_->dispatch.enabled) return;
  multikueue::Dispatcher::Options options;
  options.config = *running_;
  // Each worker's audit log names the replica that wrote there, as the manager's does.
  options.registry.clientOptions.userAgent = manager_.rest().options().userAgent;
  options.informers = informers_.get();
  options.controllerObserver = observer_.get();
  options.dispatchObserver = observer_.get();
  options.onClusterConnection = [this](const std::string& cluster, bool connected) {
    metrics_.setClusterConnected(cluster, connected);
  };
  auto dispatcher = std::make_unique<multikueue::Dispatcher>(manager_, kube::systemClock(), options);
  try {
    dispatcher->start();
  } catch (const std::exception& e) {
    // The caches cannot sync (CRDs missing, RBAC): stay up for the webhooks, say why, retry on
    // the next leadership change or config reload.
    log::error("dispatch loop not started", {{"error", e.what()}});
    return;
  }
  dispatcher_ = std::move(dispatcher);
  std::lock_guard lock(mutex_);
  dispatching_ = true;
}

void DispatchRunner::stopDispatcher() {
  if (placement_) {
    placement_->stop();
    placement_.reset();
  }
  if (integration_) {
    integration_->stop();
    integration_.reset();
    std::lock_guard lock(mutex_);
    integrating_ = false;
  }
  if (dispatcher_) {
    dispatcher_->stop();
    dispatcher_.reset();
    std::lock_guard lock(mutex_);
    dispatching_ = false;
  }
  informers_.reset();  // stops them: nothing follows them now
}

}  // namespace mka::app
