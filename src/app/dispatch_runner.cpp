#include "mka/app/dispatch_runner.h"

#include <tuple>

#include "mka/common/log.h"
#include "mka/integration/controller.h"
#include "mka/kube/rate_limiter.h"
#include "mka/multikueue/dispatcher.h"
#include "mka/placement/placement_controller.h"

namespace mka::app {
namespace {

// How long a group waits for the manager's caches before its start counts as failed (and is
// retried); a stop ends the wait sooner.
constexpr std::chrono::seconds kCacheSyncTimeout{60};

}  // namespace

bool sameDispatchSettings(const config::Configuration& a, const config::Configuration& b) {
  auto frameworks = [](const config::Configuration& c) {
    using Rules = std::tuple<std::string, config::ManagedByLocation, config::RemoteCopy, std::vector<std::string>, bool,
                             std::vector<config::DependencyPath>>;
    std::vector<Rules> out;
    for (const auto& f : c.multiKueue.externalFrameworks)
      out.emplace_back(f.name, f.managedBy, f.remoteCopy, f.statusExclude, f.syncDependencies, f.dependencies);
    return out;
  };
  return a.namespace_ == b.namespace_ && a.dispatch.enabled == b.dispatch.enabled &&
         a.dispatch.admissionCheckControllerName == b.dispatch.admissionCheckControllerName &&
         a.dispatch.workloadConcurrency == b.dispatch.workloadConcurrency &&
         a.clientConnection.qps == b.clientConnection.qps && a.clientConnection.burst == b.clientConnection.burst &&
         frameworks(a) == frameworks(b) && a.multiKueue.gcInterval == b.multiKueue.gcInterval &&
         a.multiKueue.origin == b.multiKueue.origin &&
         a.multiKueue.workerLostTimeout == b.multiKueue.workerLostTimeout &&
         a.multiKueue.dispatcherName == b.multiKueue.dispatcherName && a.multiKueue.stepSize == b.multiKueue.stepSize &&
         a.multiKueue.orchestratedPreemption == b.multiKueue.orchestratedPreemption &&
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
  void workerCapacity(const std::string& cluster,
                      std::shared_ptr<const multikueue::capacity::Snapshot> snapshot) override {
    std::vector<observability::Metrics::WorkerClusterQueue> queues;
    if (snapshot) {
      for (const auto& [name, cq] : snapshot->clusterQueues()) {
        observability::Metrics::WorkerClusterQueue q{name, static_cast<double>(cq.pendingWorkloads), {}};
        for (const auto& [key, quota] : cq.quotas)
          q.quotas.push_back({key.first, key.second, static_cast<double>(quota.nominal) / 1000.0,
                              static_cast<double>(quota.reserved) / 1000.0});
        queues.push_back(std::move(q));
      }
    }
    metrics_.setWorkerClusterQueues(cluster, queues);
  }
  void oldestInCheckState(const std::string& state, std::optional<Clock::TimePoint> since) override {
    metrics_.setOldestInCheckState(
        state, since ? std::optional(std::chrono::duration<double>(since->time_since_epoch()).count()) : std::nullopt);
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
      observer_(std::make_unique<Observer>(metrics)),
      runner_(manager, runnerOptions()) {}

DispatchRunner::~DispatchRunner() { stop(); }

controller::LeaderRunner::Options DispatchRunner::runnerOptions() {
  controller::LeaderRunner::Options options;
  const auto cfg = store_.get();
  if (cfg->leaderElection.leaderElect) {
    leaseName_ = cfg->leaderElection.resourceName;
    kube::LeaderElectionConfig le;
    le.namespace_ = cfg->leaderElection.resourceNamespace;
    le.name = cfg->leaderElection.resourceName;
    le.identity = identity_;
    le.leaseDuration = std::chrono::duration_cast<std::chrono::milliseconds>(cfg->leaderElection.leaseDuration);
    le.renewDeadline = std::chrono::duration_cast<std::chrono::milliseconds>(cfg->leaderElection.renewDeadline);
    le.retryPeriod = std::chrono::duration_cast<std::chrono::milliseconds>(cfg->leaderElection.retryPeriod);
    options.election = le;
    options.onLeading = [this](bool leading) { metrics_.setReplicaRole(leading ? "leader" : "follower", leaseName_); };
  }
  options.beforeStart = [this] {
    running_ = store_.get();
    informers_ = std::make_unique<kube::InformerPool>(manager_);
  };
  options.afterStop = [this] {
    informers_.reset();  // stops them: nothing follows them now
    running_.reset();
  };
  // The integration first: on a worker it creates the Workloads the dispatch loop's peer on the
  // manager waits for; the groups are independent otherwise.
  options.groups.push_back(
      {kIntegrationGroup, [this](std::stop_token stopping) -> std::optional<controller::LeaderRunner::Stop> {
         if (running_->integrations.frameworks.empty()) return std::nullopt;
         integration::IntegrationController::Options o;
         o.informers = informers_.get();
         o.controllerObserver = observer_.get();
         o.integrationObserver = observer_.get();
         auto integration = std::make_shared<integration::IntegrationController>(
             manager_, jobkind::integratedKindsOf(*running_), kube::systemClock(), o);
         integration->start(kCacheSyncTimeout, stopping);
         return [integration] { integration->stop(); };
       }});
  options.groups.push_back(
      {kPlacementGroup, [this](std::stop_token stopping) -> std::optional<controller::LeaderRunner::Stop> {
         if (!running_->placement.enabled) return std::nullopt;
         auto o = placement::PlacementController::Options::from(*running_);
         o.informers = informers_.get();
         o.controllerObserver = observer_.get();
         auto placement = std::make_shared<placement::PlacementController>(manager_, kube::systemClock(), o);
         placement->start(kCacheSyncTimeout, stopping);
         return [placement] { placement->stop(); };
       }});
  options.groups.push_back(
      {kDispatchGroup, [this](std::stop_token stopping) -> std::optional<controller::LeaderRunner::Stop> {
         if (!running_->dispatch.enabled) return std::nullopt;
         multikueue::Dispatcher::Options o;
         o.config = *running_;
         // Each worker's audit log names the replica that wrote there, as the manager's does.
         o.registry.clientOptions.userAgent = manager_.rest().options().userAgent;
         o.informers = informers_.get();
         o.controllerObserver = observer_.get();
         o.dispatchObserver = observer_.get();
         o.onClusterConnection = [this](const std::string& cluster, std::optional<bool> connected) {
           if (connected) {
             metrics_.setClusterConnected(cluster, *connected);
           } else {
             metrics_.removeCluster(cluster);
           }
         };
         auto dispatcher = std::make_shared<multikueue::Dispatcher>(manager_, kube::systemClock(), o);
         dispatcher->start(kCacheSyncTimeout, stopping);
         // A replica that stops dispatching (lost the lease, restarts the loop) publishes no
         // Workload as waiting on it: the next loop's reconciles publish their own.
         return [this, dispatcher] {
           dispatcher->stop();
           metrics_.clearOldestInCheckStates();
         };
       }});
  return options;
}

void DispatchRunner::start() {
  if (leaseName_.empty()) {
    log::info("leader election disabled: this replica dispatches");
    metrics_.setReplicaRole("standalone");
  } else {
    metrics_.setReplicaRole("follower", leaseName_);
  }
  runner_.start();
}

void DispatchRunner::stop() { runner_.stop(); }

void DispatchRunner::configChanged() {
  runner_.restartIf([this] { return running_ && !sameDispatchSettings(*running_, *store_.get()); });
}

}  // namespace mka::app
