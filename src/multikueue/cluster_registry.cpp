#include "mka/multikueue/cluster_registry.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "mka/api/kinds.h"
#include "mka/api/views.h"
#include "mka/common/clock.h"
#include "mka/common/errors.h"
#include "mka/common/file_watcher.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"
#include "mka/controller/status_update.h"
#include "mka/kube/api_error.h"
#include "mka/kube/exec_credential.h"
#include "mka/kube/informer.h"
#include "mka/kube/kubeconfig.h"
#include "mka/multikueue/cluster_source.h"

namespace mka::multikueue {

using api::Condition;
using controller::EventRecorder;
using controller::ObjectReader;
using controller::Result;
using controller::writeCondition;

using nlohmann::json;

namespace {

// How soon a reconcile looks again while a connection attempt is in flight. The informer hooks
// usually decide sooner (and say so through onConnectionChange); this bounds the wait when the
// owner does not enqueue on `true`, and is how the establishment timeout is noticed.
constexpr std::chrono::seconds kConnectingRecheck{1};

// How long a copy the dispatcher chose for a worker is charged there before the worker's
// informer shows it (a create that failed, or was never sent, stops counting after this).
constexpr std::chrono::seconds kPlacementHold{30};

// Decoded objects each worker informer keeps beside its encoded cache (InformerOptions).
constexpr std::size_t kWorkerRecentObjects = 4;

std::shared_ptr<spdlog::logger> registryLogger() {
  static const auto log = namedLogger("multikueue-cluster");
  return log;
}

// Kueue's watch-establishment timeout (§3.4): 1m, 2m, 4m, 8m, then 10m for the first value 1m.
std::chrono::milliseconds establishTimeout(std::chrono::milliseconds first, int failedAttempts) {
  const int factor = failedAttempts >= 4 ? 10 : (1 << std::max(0, failedAttempts));
  return first * factor;
}

// One connection attempt to a worker: its client and informers. Shared by the registry and
// whoever holds it from connected(); the registry's reaper thread stops its informers.
class Remote final : public RemoteCluster {
 public:
  Remote(std::string name, std::unique_ptr<kube::Client> client) : name_(std::move(name)), client_(std::move(client)) {}
  ~Remote() override { stop(); }

  const std::string& name() const override { return name_; }
  kube::Client& client() override { return *client_; }
  std::optional<json> workload(const std::string& key) const override { return workloads_->get(key); }
  void forEachWorkload(const std::function<void(const json&)>& visit) const override { workloads_->forEach(visit); }
  std::optional<json> job(const api::GroupVersionKind& gvk, const std::string& key) const override {
    auto it = jobs_.find(gvk);
    if (it == jobs_.end()) return std::nullopt;
    return it->second->get(key);
  }
  void forEachJob(const api::GroupVersionKind& gvk, const std::function<void(const json&)>& visit) const override {
    if (auto it = jobs_.find(gvk); it != jobs_.end()) it->second->forEach(visit);
  }

  std::shared_ptr<const capacity::Snapshot> capacity(std::string* why) const override {
    std::lock_guard lock(capacityMutex_);
    const bool listed = clusterQueues_ && clusterQueues_->hasSynced() && localQueues_ && localQueues_->hasSynced();
    if (!listed) {
      if (why) *why = capacityError_.empty() ? "its ClusterQueues and LocalQueues are not listed yet" : capacityError_;
      return nullptr;
    }
    const auto now = std::chrono::steady_clock::now();
    for (auto it = placed_.begin(); it != placed_.end();) {
      if (now - it->second.at < kPlacementHold) {
        ++it;
        continue;
      }
      it = placed_.erase(it);  // never created (the reconcile failed before): not charged any longer
      capacityDirty_ = true;
    }
    if (!snapshot_ || capacityDirty_) {
      auto next = std::make_shared<capacity::Snapshot>();
      clusterQueues_->forEach([&](const json& cq) { next->addClusterQueue(capacity::ClusterQueue::from(cq)); });
      localQueues_->forEach([&](const json& lq) { next->addLocalQueue(lq); });
      for (const auto& [key, copy] : pending_) next->addPending(copy);
      for (const auto& [key, copy] : reserved_) next->addPending(copy);
      for (const auto& [key, placed] : placed_)
        if (!pending_.contains(key) && !reserved_.contains(key)) next->addPending(placed.copy);
      snapshot_ = std::move(next);
      capacityDirty_ = false;
    }
    return snapshot_;
  }

  void placed(capacity::PendingCopy copy) override {
    std::lock_guard lock(capacityMutex_);
    auto key = copy.workloadKey;
    placed_[std::move(key)] = {std::move(copy), std::chrono::steady_clock::now()};
    capacityDirty_ = true;
  }

  bool lacksNamespace(const std::string& ns) const override {
    const kube::Informer* namespaces = nullptr;
    {
      // The informer is made once and lives as long as this object; its cache is read outside
      // the lock, which its handler takes.
      std::lock_guard lock(namespacesMutex_);
      namespaces = namespaces_.get();
    }
    if (namespaces == nullptr || !namespaces->hasSynced()) return false;
    return !namespaces->get(ns).has_value();
  }

  void namespaceMissing(const std::string& ns, const std::string& workloadKey) override {
    {
      std::lock_guard lock(namespacesMutex_);
      waitingForNamespace_[ns].insert(workloadKey);
    }
    const auto [namespaces, started] = namespaceWatch();
    // A watch started now lists every namespace to its handler. An older one's add event may
    // have come between the caller's lacksNamespace() and the insert above, finding no one.
    if (!started && namespaces != nullptr && namespaces->hasSynced() && namespaces->get(ns)) namespaceAdded(ns);
  }

  // The Namespace watch, started on first use: {the informer (null when stopped), whether this
  // call started it}. namespacesMutex_ is never held around the informer's calls: its thread
  // calls namespaceAdded, which takes it, while holding the informer's dispatch lock.
  // namespacesStartMutex_ makes the start and stop() one after the other.
  std::pair<const kube::Informer*, bool> namespaceWatch() {
    std::lock_guard start(namespacesStartMutex_);
    {
      std::lock_guard lock(namespacesMutex_);
      if (namespaces_ || stopped_ || !namespaceAppeared_) return {namespaces_.get(), false};
    }
    auto informer = std::make_unique<kube::Informer>(*client_, api::kNamespaceGvk, namespaceOptions_);
    informer->addHandlers(
        {.onAdd = [this](const json& object) { namespaceAdded(json_fields::metadataString(object, "name")); }});
    informer->start();
    std::lock_guard lock(namespacesMutex_);
    namespaces_ = std::move(informer);
    return {namespaces_.get(), true};
  }

  // Tells the Workloads waiting for `ns` that it is there.
  void namespaceAdded(const std::string& ns) {
    std::set<std::string> keys;
    {
      std::lock_guard lock(namespacesMutex_);
      auto it = waitingForNamespace_.find(ns);
      if (it == waitingForNamespace_.end()) return;
      keys = std::move(it->second);
      waitingForNamespace_.erase(it);
    }
    for (const auto& key : keys) namespaceAppeared_(key);
  }

  // How the Namespace watch is built and whom it tells (before start() only).
  void watchNamespacesWith(kube::InformerOptions options, std::function<void(const std::string&)> appeared) {
    namespaceOptions_ = std::move(options);
    namespaceAppeared_ = std::move(appeared);
  }

  // Before start() only.
  kube::Informer& addWorkloads(kube::InformerOptions options) {
    workloads_ = std::make_unique<kube::Informer>(*client_, api::kWorkloadGvk, std::move(options));
    return *workloads_;
  }
  kube::Informer& addJobs(const api::GroupVersionKind& gvk, kube::InformerOptions options) {
    auto& slot = jobs_[gvk];
    slot = std::make_unique<kube::Informer>(*client_, gvk, std::move(options));
    return *slot;
  }

  // The capacity informers (before start() only); `onChange` runs after each of their events.
  void addCapacity(const kube::InformerOptions& base, std::function<void()> onChange) {
    auto options = base;
    options.onSynced = [this, onChange] {
      capacityChanged(std::nullopt, false);
      onChange();
    };
    options.onError = [this, onChange](const std::exception& e) {
      capacityChanged(std::string("its ClusterQueues or LocalQueues cannot be read: ") + e.what(), false);
      onChange();
    };
    // A ClusterQueue's new status counts the reservations made before it was written.
    const auto changed = [this, onChange](bool clusterQueue) {
      return [this, onChange, clusterQueue](const json&) {
        capacityChanged(std::nullopt, clusterQueue);
        onChange();
      };
    };
    clusterQueues_ = std::make_unique<kube::Informer>(*client_, api::kClusterQueueGvk, options);
    clusterQueues_->addHandlers({.onAdd = changed(true), .onUpdateNew = changed(true), .onDelete = changed(true)});
    localQueues_ = std::make_unique<kube::Informer>(*client_, api::kLocalQueueGvk, options);
    localQueues_->addHandlers({.onAdd = changed(false), .onUpdateNew = changed(false), .onDelete = changed(false)});
  }

  // A copy of ours on the worker changed: waiting for its Kueue (charged) or not.
  void copyChanged(const json& workload, bool deleted) {
    const api::WorkloadView view(workload);
    const auto key = kube::Informer::keyOf(workload);
    const bool waiting = !deleted && !view.quotaReserved() && !view.finished() && !view.terminating();
    std::lock_guard lock(capacityMutex_);
    if (deleted) {
      const bool charged = pending_.erase(key) + reserved_.erase(key) + placed_.erase(key) > 0;
      capacityDirty_ = charged || capacityDirty_;
      return;
    }
    if (!waiting) {
      // Reserved: charged until its ClusterQueue's status, written after, counts it.
      if (auto it = pending_.find(key); it != pending_.end()) {
        if (view.quotaReserved() && !view.finished()) reserved_.insert(*it);
        pending_.erase(it);
        capacityDirty_ = true;
      }
      capacityDirty_ = placed_.erase(key) > 0 || capacityDirty_;
      return;
    }
    if (pending_.contains(key)) return;
    capacity::PendingCopy copy{key, std::string(view.namespace_()) + "/" + std::string(view.queueName()), {}};
    try {
      copy.podSets = capacity::podSetRequests(workload);
    } catch (const std::exception&) {
      return;  // the worker's Kueue refuses it as well: it takes no quota
    }
    pending_.emplace(key, std::move(copy));
    placed_.erase(key);
    capacityDirty_ = true;
  }

  void start() {
    workloads_->start();
    for (auto& [gvk, informer] : jobs_) informer->start();
    if (clusterQueues_) clusterQueues_->start();
    if (localQueues_) localQueues_->start();
  }
  // Joins the informer threads (at most one request long): never from one of them.
  void stop() {
    if (workloads_) workloads_->stop();
    for (auto& [gvk, informer] : jobs_) informer->stop();
    if (clusterQueues_) clusterQueues_->stop();
    if (localQueues_) localQueues_->stop();
    std::lock_guard start(namespacesStartMutex_);
    kube::Informer* namespaces = nullptr;
    {
      std::lock_guard lock(namespacesMutex_);
      stopped_ = true;
      namespaces = namespaces_.get();
    }
    if (namespaces) namespaces->stop();  // not under namespacesMutex_: its handler takes it
  }
  // Connected once the Workloads are listed and each configured kind is listed or known not
  // served there (its CRD missing): a worker serves the kinds it has.
  bool synced() const {
    if (!workloads_ || !workloads_->hasSynced()) return false;
    std::lock_guard lock(kindsMutex_);
    return std::all_of(jobs_.begin(), jobs_.end(),
                       [&](const auto& j) { return j.second->hasSynced() || missing_.contains(j.first); });
  }
  bool serves(const api::GroupVersionKind& gvk) const override {
    const auto it = jobs_.find(gvk);
    if (it == jobs_.end() || !it->second->hasSynced()) return false;
    std::lock_guard lock(kindsMutex_);
    return !missing_.contains(gvk);
  }
  std::vector<api::GroupVersionKind> missingKinds() const {
    std::lock_guard lock(kindsMutex_);
    return {missing_.begin(), missing_.end()};
  }
  // Whether the kind's state changed.
  bool setMissing(const api::GroupVersionKind& gvk, bool missing) {
    std::lock_guard lock(kindsMutex_);
    return missing ? missing_.insert(gvk).second : missing_.erase(gvk) > 0;
  }

 private:
  std::string name_;
  std::unique_ptr<kube::Client> client_;  // declared first: the informers use it until they stop
  std::unique_ptr<kube::Informer> workloads_;
  std::map<api::GroupVersionKind, std::unique_ptr<kube::Informer>> jobs_;
  std::unique_ptr<kube::Informer> clusterQueues_, localQueues_;
  // The worker's Namespaces, watched from the first create refused for a missing one.
  mutable std::mutex namespacesMutex_;
  std::mutex namespacesStartMutex_;  // namespaceWatch() and stop(), one after the other
  std::unique_ptr<kube::Informer> namespaces_;
  bool stopped_ = false;
  std::map<std::string, std::set<std::string>> waitingForNamespace_;  // namespace -> Workload keys
  kube::InformerOptions namespaceOptions_;
  std::function<void(const std::string&)> namespaceAppeared_;
  mutable std::mutex kindsMutex_;
  std::set<api::GroupVersionKind> missing_;  // configured kinds whose CRD the worker lacks

  void capacityChanged(std::optional<std::string> error, bool clusterQueue) {
    std::lock_guard lock(capacityMutex_);
    capacityDirty_ = true;
    if (clusterQueue) reserved_.clear();
    if (error) {
      capacityError_ = std::move(*error);
    } else {
      capacityError_.clear();
    }
  }
  mutable std::mutex capacityMutex_;
  mutable std::shared_ptr<const capacity::Snapshot> snapshot_;
  mutable bool capacityDirty_ = true;
  std::string capacityError_;
  std::map<std::string, capacity::PendingCopy> pending_;  // our copies the worker has not reserved
  // Reserved since the last ClusterQueue event: its status may not count them yet.
  std::map<std::string, capacity::PendingCopy> reserved_;
  // Chosen by the dispatcher and not yet seen on the worker; forgotten after kPlacementHold.
  struct Placed {
    capacity::PendingCopy copy;
    std::chrono::steady_clock::time_point at;
  };
  mutable std::map<std::string, Placed> placed_;
};

}  // namespace

std::chrono::seconds reconnectBackoff(int failedAttempts) {
  if (failedAttempts <= 0) return std::chrono::seconds{0};
  return std::chrono::seconds{5} * (1 << (std::min(failedAttempts, 7) - 1));
}

// Design: reconcile() never waits for a worker. It starts an attempt (a fresh client and its
// informers) and returns "look again soon"; the informers' hooks, on their own threads, decide
// the attempt: every informer synced -> connected, any failed request -> the attempt failed
// (counted, backed off). Once connected, a failed request of any informer disconnects the
// worker. Both report through onConnectionChange (false also after a failed attempt, so the
// owner reconciles: status, next attempt). Informers are stopped by a reaper thread, since a
// hook cannot join its own thread and a stop may wait for one request of a hung worker.
struct ClusterRegistry::Impl {
  using RemoteEvent = std::function<void(const std::string&, const std::string&)>;
  using ConnectionChange = std::function<void(const std::string&, bool)>;
  using KubeconfigChange = std::function<void(const std::string&)>;

  struct Entry {
    std::string secretName;                    // spec location when the kubeconfig is a Secret
    std::string profileName;                   // spec clusterProfileRef.name when the source is a ClusterProfile
    std::string path;                          // spec location when the kubeconfig is a file
    std::shared_ptr<FileWatcher> pathWatcher;  // watches `path`; started and stopped outside `mutex`
    std::string identity;                      // what the current client is built from ("" none yet)
    std::string server;                        // the API server of the last client built ("" none yet)
    std::shared_ptr<Remote> remote;            // the attempt in flight or the connection; null otherwise
    std::uint64_t attempt = 0;                 // `remote`'s attempt id (0: none); hooks of others are stale
    bool connecting = false;
    Clock::TimePoint attemptDeadline{};
    bool connected = false;
    std::optional<Clock::TimePoint> disconnectedSince;
    int failedAttempts = 0;
    Clock::TimePoint lastFailure{};
    std::string error;                  // why the last attempt failed or the connection was lost ("" none)
    std::optional<Condition> recorded;  // mode 2: the condition last recorded as an Event
  };

  Impl(kube::Client& manager, const ObjectReader& objects, const Clock& clock, ClusterRegistryOptions options,
       EventRecorder* events)
      : manager(manager),
        objects(objects),
        clock(clock),
        options(std::move(options)),
        events(events),
        createdAt(clock.now()) {
    reaper = std::thread([this] {
      nameThisThread("mkc-reaper");
      disableThreadCache();
      reap();
    });
  }

  kube::Client& manager;        // MultiKueueCluster status writes
  const ObjectReader& objects;  // MultiKueueClusters and kubeconfig Secrets
  const Clock& clock;
  const ClusterRegistryOptions options;
  EventRecorder* const events;  // null: none
  const Clock::TimePoint createdAt;

  mutable std::mutex mutex;  // everything below; never held during I/O or a join
  std::map<std::string, Entry> entries;
  std::shared_ptr<const RemoteEvent> remoteEvent;
  std::shared_ptr<const ConnectionChange> connectionChange;
  std::shared_ptr<const KubeconfigChange> kubeconfigChange;
  std::shared_ptr<const KubeconfigChange> capacityChange;  // the same shape: a cluster name
  std::uint64_t lastAttempt = 0;
  bool stopped = false;
  std::deque<std::shared_ptr<Remote>> retired;  // for the reaper to stop
  std::condition_variable retiredChanged;
  std::thread reaper;

  // --- under `mutex` ---------------------------------------------------------------------

  Entry& entryFor(const std::string& name) {
    auto [it, created] = entries.try_emplace(name);
    if (created) it->second.disconnectedSince = clock.now();  // a new client starts disconnected
    return it->second;
  }

  // Hands the entry's client and informers to the reaper.
  void retire(Entry& e) {
    e.connecting = false;
    e.attempt = 0;
    if (!e.remote) return;
    retired.push_back(std::move(e.remote));
    e.remote = nullptr;
    retiredChanged.notify_all();
  }

  // §3.5: returns whether it was connected; disconnectedSince keeps the first loss.
  static bool markDisconnected(Entry& e, Clock::TimePoint now) {
    const bool was = e.connected;
    e.connected = false;
    if (!e.disconnectedSince) e.disconnectedSince = now;
    return was;
  }

  void failAttempt(const std::string& name, Entry& e, Clock::TimePoint now, const std::string& error) {
    retire(e);
    ++e.failedAttempts;
    e.lastFailure = now;
    e.error = error;
    log::warn(*registryLogger(), "cluster connection attempt failed",
              {{"cluster", name},
               {"attempts", e.failedAttempts},
               {"nextAttempt", toRfc3339(now + reconnectBackoff(e.failedAttempts))},
               {"error", error}});
  }

  std::optional<Condition> desiredStatus(const Entry& e) const {
    if (e.connected)
      return Condition{std::string(api::condition::kActive), "True", std::string(cluster_reason::kActive),
                       std::string(kClusterConnectedMessage)};
    if (e.error.empty()) return std::nullopt;  // the first attempt is still running
    auto message = e.error;
    if (e.failedAttempts > 0)
      message += "; connection attempts: " + std::to_string(e.failedAttempts) +
                 ", next connection attempt: " + toRfc3339(e.lastFailure + reconnectBackoff(e.failedAttempts));
    return Condition{std::string(api::condition::kActive), "False",
                     std::string(cluster_reason::kClientConnectionFailed), std::move(message)};
  }

  // --- without `mutex` -------------------------------------------------------------------

  void emitConnectionChange(const std::string& name, bool connected) {
    std::shared_ptr<const ConnectionChange> callback;
    {
      std::lock_guard lock(mutex);
      callback = connectionChange;
    }
    if (callback && *callback) (*callback)(name, connected);
  }

  void emitCapacityChange(const std::string& cluster, std::uint64_t attempt) {
    std::shared_ptr<const KubeconfigChange> callback;
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(cluster);
      if (it == entries.end() || it->second.attempt != attempt) return;
      callback = capacityChange;
    }
    if (callback && *callback) (*callback)(cluster);
  }

  void emitRemoteEvent(const std::string& cluster, const std::string& workloadKey) {
    std::shared_ptr<const RemoteEvent> callback;
    {
      std::lock_guard lock(mutex);
      callback = remoteEvent;
    }
    if (!callback || !*callback) return;
    try {
      (*callback)(cluster, workloadKey);
    } catch (const std::exception& e) {
      // Not the worker's fault: the informer must not take it for a failed request.
      log::error(*registryLogger(), "remote event callback failed",
                 {{"cluster", cluster}, {"workload", workloadKey}, {"error", e.what()}});
    }
  }

  void emitKubeconfigChange(const std::string& name) {
    std::shared_ptr<const KubeconfigChange> callback;
    {
      std::lock_guard lock(mutex);
      callback = kubeconfigChange;
    }
    if (callback && *callback) (*callback)(name);
  }

  // Makes `e` watch `path` ("" none). Returns the watcher to stop (after the lock is released)
  // and the one to start, if any. Under `mutex`.
  std::pair<std::shared_ptr<FileWatcher>, std::shared_ptr<FileWatcher>> watchPath(const std::string& name, Entry& e,
                                                                                  const std::string& path) {
    if (e.path == path && (path.empty() || e.pathWatcher)) return {};
    auto old = std::move(e.pathWatcher);
    e.path = path;
    if (!path.empty() && !stopped)
      e.pathWatcher = std::make_shared<FileWatcher>(std::vector<std::filesystem::path>{path},
                                                    [this, name] { emitKubeconfigChange(name); });
    return {std::move(old), e.pathWatcher};
  }

  void reap() {
    std::unique_lock lock(mutex);
    while (true) {
      retiredChanged.wait(lock, [&] { return !retired.empty() || stopped; });
      if (retired.empty()) return;  // stopped, and everything retired is stopped
      auto remote = std::move(retired.front());
      retired.pop_front();
      lock.unlock();
      remote->stop();
      remote.reset();  // may be the last reference: destroyed outside the lock
      lock.lock();
    }
  }

  void forget(const std::string& name, std::string_view why) {
    bool wasConnected = false;
    std::shared_ptr<FileWatcher> watcher;
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(name);
      if (it == entries.end()) return;
      wasConnected = it->second.connected;
      retire(it->second);
      watcher = std::move(it->second.pathWatcher);
      entries.erase(it);
    }
    if (watcher) watcher->stop();
    log::info(*registryLogger(), "cluster forgotten", {{"cluster", name}, {"why", why}});
    if (wasConnected) emitConnectionChange(name, false);
  }

  // Informer hook: one informer of `attempt` has a complete list.
  void informerSynced(const std::string& name, std::uint64_t attempt) {
    std::shared_ptr<Remote> remote;
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(name);
      if (it == entries.end()) return;
      auto& e = it->second;
      if (e.attempt != attempt || !e.connecting || !e.remote || !e.remote->synced()) return;
      e.connecting = false;
      e.connected = true;
      e.disconnectedSince.reset();
      e.failedAttempts = 0;
      e.error.clear();
      remote = e.remote;
    }
    log::info(*registryLogger(), "cluster connected", {{"cluster", name}});
    if (!remote->missingKinds().empty()) recordKinds(name, *remote);
    emitConnectionChange(name, true);
  }

  // A job informer's hook: its kind is served (listed) or not (no CRD) on the worker. Neither
  // fails the connection; a change on a connected worker is reported as a connection change
  // (the dispatch loop looks at its Workloads again) and recorded as an Event.
  void kindServed(const std::string& name, std::uint64_t attempt, const api::GroupVersionKind& gvk, bool served,
                  const std::string& error = "") {
    std::shared_ptr<Remote> remote;
    bool changed = false, connected = false;
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(name);
      if (it == entries.end() || it->second.attempt != attempt || !it->second.remote) return;
      remote = it->second.remote;
      changed = remote->setMissing(gvk, !served);
      connected = it->second.connected;
    }
    if (!served) {
      if (changed)
        log::warn(*registryLogger(), "kind not served by the worker: its Workloads go to other workers",
                  {{"cluster", name}, {"kind", gvk.goString()}, {"error", error}});
      informerSynced(name, attempt);  // the attempt may be complete without this kind
    }
    if (!changed || !connected) return;
    recordKinds(name, *remote);
    emitConnectionChange(name, true);
  }

  // A Warning Event on the MultiKueueCluster naming the kinds the worker does not serve, or a
  // Normal one when it serves them all again.
  void recordKinds(const std::string& name, const Remote& remote) {
    if (events == nullptr) return;
    std::optional<json> cluster;
    try {
      cluster = objects.get(api::kMultiKueueClusterGvk, "", name);
    } catch (const std::exception&) {
      return;  // the Event is informative; the log line says the same
    }
    if (!cluster) return;
    const auto missing = remote.missingKinds();
    if (missing.empty()) {
      events->record(*cluster, "Normal", std::string(cluster_reason::kKindsServed),
                     "Worker " + name + " serves every configured kind");
      return;
    }
    std::vector<std::string> kinds;
    for (const auto& gvk : missing) kinds.push_back(gvk.dotted());
    events->record(*cluster, "Warning", std::string(cluster_reason::kKindsNotServed),
                   "Worker " + name + " does not serve " + strings::join(kinds, ", ") +
                       " (no CRD there): their Workloads go to other workers; install the CRD on " + name +
                       " to send them there too");
  }

  // Informer hook: a list or watch request of `attempt` failed.
  void informerFailed(const std::string& name, std::uint64_t attempt, const std::string& error) {
    const auto now = clock.now();
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(name);
      if (it == entries.end()) return;
      auto& e = it->second;
      if (e.attempt != attempt) return;
      if (e.connecting) {
        failAttempt(name, e, now, error);
      } else if (e.connected) {
        markDisconnected(e, now);
        e.error = error;
        retire(e);
        log::warn(*registryLogger(), "cluster disconnected", {{"cluster", name}, {"error", error}});
      } else {
        return;
      }
    }
    emitConnectionChange(name, false);
  }

  std::shared_ptr<Remote> buildRemote(const std::string& name, const ClusterSource& source, std::uint64_t attempt) {
    auto rest = std::make_shared<kube::RestClient>(restConfigOf(name, source, clock), options.clientOptions);
    auto remote = std::make_shared<Remote>(name, std::make_unique<kube::Client>(std::move(rest)));

    kube::InformerOptions base;
    base.labelSelector = std::string(api::kOriginLabel) + "=" + options.origin;
    base.initialBackoff = options.informerInitialBackoff;
    base.maxBackoff = options.informerMaxBackoff;
    base.withoutManagedFields = true;
    // Each worker sees only its share of the jobs: its informers keep no allocator thread cache
    // and few decoded objects, which at 20 workers held 3 MiB of the adapter's peak RSS for
    // little CPU (bench/README.md, dispatch_bench).
    base.recentObjects = kWorkerRecentObjects;
    base.threadCache = false;
    base.onSynced = [this, name, attempt] { informerSynced(name, attempt); };
    base.onError = [this, name, attempt](const std::exception& e) { informerFailed(name, attempt, e.what()); };

    // §3.6: a remote Workload maps to the manager's Workload of the same key.
    auto* r = remote.get();  // the handlers live in its informers
    auto onWorkload = [this, name, r](const json& object) {
      r->copyChanged(object, false);
      emitRemoteEvent(name, kube::Informer::keyOf(object));
    };
    auto onWorkloadDeleted = [this, name, r](const json& object) {
      r->copyChanged(object, true);
      emitRemoteEvent(name, kube::Informer::keyOf(object));
    };
    remote->addWorkloads(base).addHandlers(
        {.onAdd = onWorkload, .onUpdateNew = onWorkload, .onDelete = onWorkloadDeleted});
    // The worker's queues, all of them (quota is shared with its other tenants); their own
    // hooks, not the connection's.
    kube::InformerOptions queues;
    queues.initialBackoff = options.informerInitialBackoff;
    queues.maxBackoff = options.informerMaxBackoff;
    queues.withoutManagedFields = true;
    queues.threadCache = false;
    queues.recentObjects = kWorkerRecentObjects;
    remote->addCapacity(queues, [this, name, attempt] { emitCapacityChange(name, attempt); });
    // Namespaces: watched only once a create meets a missing one; not part of the connection.
    remote->watchNamespacesWith(queues, [this, name](const std::string& key) { emitRemoteEvent(name, key); });
    // A remote job maps through its adapter (the generic adapter: its prebuilt-workload link).
    for (const auto& adapter : options.adapters.all()) {
      auto onJob = [this, name, adapter](const json& object) {
        auto workload = adapter->workloadKeyFor(object);
        if (!workload) {
          log::debug(*registryLogger(), "remote job without a prebuilt-workload link skipped",
                     {{"cluster", name}, {"kind", adapter->gvk().goString()}, {"job", kube::Informer::keyOf(object)}});
          return;
        }
        emitRemoteEvent(name, *workload);
      };
      auto jobs = base;
      const auto gvk = adapter->gvk();
      jobs.onSynced = [this, name, attempt, gvk] {
        kindServed(name, attempt, gvk, true);
        informerSynced(name, attempt);
      };
      jobs.onError = [this, name, attempt, gvk](const std::exception& e) {
        if (kube::isKindNotServed(e)) {
          kindServed(name, attempt, gvk, false, e.what());
        } else {
          informerFailed(name, attempt, e.what());
        }
      };
      remote->addJobs(gvk, jobs).addHandlers({.onAdd = onJob, .onUpdateNew = onJob, .onDelete = onJob});
    }
    return remote;
  }

  // §3.3 step 4: (re)connects when the config changed or the worker is disconnected and
  // outside its backoff window.
  Result connect(const std::string& name, const ClusterSource& source) {
    const auto identity = source.identity();
    const auto now = clock.now();
    bool lost = false;
    std::uint64_t attempt = 0;
    std::optional<Result> decided;
    {
      std::lock_guard lock(mutex);
      auto& e = entryFor(name);
      if (e.identity != identity) {
        if (!e.identity.empty())
          log::info(
              *registryLogger(),
              source.profile ? "cluster profile changed, reconnecting" : "cluster kubeconfig changed, reconnecting",
              {{"cluster", name}});
        lost = markDisconnected(e, now);
        retire(e);
        e.identity = identity;
        e.failedAttempts = 0;
        e.error.clear();
      }
      if (e.connected) {
        decided = Result::done();
      } else if (e.connecting) {
        if (now < e.attemptDeadline) {
          decided = Result::after(std::min<std::chrono::nanoseconds>(e.attemptDeadline - now, kConnectingRecheck));
        } else {
          failAttempt(name, e, now, std::string(kWatchEstablishmentTimedOut));
          decided = Result::after(reconnectBackoff(e.failedAttempts));
        }
      } else if (e.failedAttempts > 0 && now < e.lastFailure + reconnectBackoff(e.failedAttempts)) {
        // Inside the backoff window: no attempt, nothing counted.
        decided = Result::after(e.lastFailure + reconnectBackoff(e.failedAttempts) - now);
      } else {
        attempt = ++lastAttempt;
      }
    }
    if (lost) emitConnectionChange(name, false);
    if (decided) return *decided;

    // Parsing, TLS setup and, for a ClusterProfile, one run of its exec plugin; no request:
    // outside the lock.
    std::shared_ptr<Remote> remote;
    std::string buildError;
    try {
      remote = buildRemote(name, source, attempt);
    } catch (const std::exception& e) {
      buildError = e.what();
    }
    std::chrono::nanoseconds wait{0};
    {
      std::lock_guard lock(mutex);
      auto& e = entryFor(name);
      if (!remote) {
        failAttempt(name, e, now, buildError);
        return Result::after(reconnectBackoff(e.failedAttempts));
      }
      if (stopped) return Result::done();  // `remote` was never started: nothing to join
      e.remote = remote;
      e.server = remote->client().rest().config().host;
      e.attempt = attempt;
      e.connecting = true;
      const auto timeout = establishTimeout(options.establishTimeout, e.failedAttempts);
      e.attemptDeadline = now + timeout;
      wait = std::min<std::chrono::nanoseconds>(timeout, kConnectingRecheck);
    }
    log::info(*registryLogger(), "cluster connecting",
              {{"cluster", name}, {"attempt", attempt}, {"server", remote->client().rest().config().host}});
    remote->start();
    return Result::after(wait);
  }

  // SPEC §2: the `Active` condition goes out only when it changes: in mode 3 to the status
  // (compared with what is stored), in mode 2 as an Event (compared with the last one recorded).
  void publish(const std::string& name, const json& cluster, const Condition& condition) {
    if (options.writeClusterStatus) {
      if (writeCondition(manager, cluster, condition, clock))
        log::info(*registryLogger(), "cluster status written",
                  {{"cluster", name},
                   {"active", condition.status},
                   {"reason", condition.reason},
                   {"message", condition.message}});
      return;
    }
    if (!events) return;
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(name);
      if (it == entries.end() || it->second.recorded == condition) return;
      it->second.recorded = condition;
    }
    // Best effort: a failed write is logged by the recorder and never fails the reconcile.
    events->record(cluster, condition.status == "True" ? "Normal" : "Warning", condition.reason, condition.message);
    log::info(*registryLogger(), "cluster event recorded",
              {{"cluster", name},
               {"active", condition.status},
               {"reason", condition.reason},
               {"message", condition.message}});
  }

  Result reconcile(const std::string& name) {
    const auto found = objects.get(api::kMultiKueueClusterGvk, "", name);
    if (!found) {
      forget(name, "deleted");
      return Result::done();
    }
    const json& cluster = *found;
    const auto meta = cluster.value("metadata", json::object());
    if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) {
      forget(name, "terminating");
      return Result::done();
    }

    const auto source = loadClusterSource(objects, cluster, options.namespace_, options.pathPrefix,
                                          options.clusterProfiles ? &*options.clusterProfiles : nullptr);
    bool lost = false;
    std::pair<std::shared_ptr<FileWatcher>, std::shared_ptr<FileWatcher>> watchers;  // {stop, start}
    {
      std::lock_guard lock(mutex);
      auto& e = entryFor(name);
      e.secretName = source.secretName;
      e.profileName = source.profileName;
      watchers = watchPath(name, e, source.path);
      if (!source.ok()) {
        // §3.3 step 2: disconnected and its informers stopped, but kept.
        lost = markDisconnected(e, clock.now());
        retire(e);
      }
    }
    if (watchers.first) watchers.first->stop();
    if (watchers.second) {
      // The file may have changed between the read above and the watch's baseline: look again.
      watchers.second->start();
      log::info(*registryLogger(), "watching kubeconfig file", {{"cluster", name}, {"path", source.path}});
      emitKubeconfigChange(name);
    }
    if (!source.ok()) {
      if (lost) emitConnectionChange(name, false);
      log::warn(*registryLogger(), "cluster kubeconfig not loaded",
                {{"cluster", name}, {"reason", source.reason}, {"error", source.error}});
      publish(name, cluster,
              {std::string(api::condition::kActive), "False", source.reason,
               std::string(kLoadClientConfigFailedPrefix) + source.error});
      if (source.notFound) return Result::done();  // the Secret's own event brings it back
      throw Error("failed to load client config, reason: " + source.reason + ", error: " + source.error);
    }

    const auto result = connect(name, source);
    std::optional<Condition> status;
    {
      std::lock_guard lock(mutex);
      if (auto it = entries.find(name); it != entries.end()) status = desiredStatus(it->second);
    }
    if (status) publish(name, cluster, *status);
    return result;
  }

  // The clusters whose `field` (a Secret's or a ClusterProfile's name) is `name`.
  std::vector<std::string> clustersWhere(std::string Entry::*field, const std::string& name) const {
    std::lock_guard lock(mutex);
    std::vector<std::string> names;
    for (const auto& [cluster, e] : entries)
      if (!(e.*field).empty() && e.*field == name) names.push_back(cluster);
    return names;
  }

  void stop() {
    std::vector<std::shared_ptr<FileWatcher>> watchers;
    {
      std::lock_guard lock(mutex);
      stopped = true;
      for (auto& [name, e] : entries) {
        e.connected = false;
        retire(e);
        if (e.pathWatcher) watchers.push_back(std::move(e.pathWatcher));
      }
      retiredChanged.notify_all();
    }
    for (auto& w : watchers) w->stop();
    if (reaper.joinable()) reaper.join();
  }
};

ClusterRegistry::ClusterRegistry(kube::Client& manager, const ObjectReader& objects, const Clock& clock,
                                 ClusterRegistryOptions options, EventRecorder* events)
    : impl_(std::make_unique<Impl>(manager, objects, clock, std::move(options), events)) {}

ClusterRegistry::~ClusterRegistry() { stop(); }

void ClusterRegistry::onRemoteEvent(std::function<void(const std::string&, const std::string&)> callback) {
  auto shared = std::make_shared<const Impl::RemoteEvent>(std::move(callback));
  std::lock_guard lock(impl_->mutex);
  impl_->remoteEvent = std::move(shared);
}

void ClusterRegistry::onConnectionChange(std::function<void(const std::string&, bool)> callback) {
  auto shared = std::make_shared<const Impl::ConnectionChange>(std::move(callback));
  std::lock_guard lock(impl_->mutex);
  impl_->connectionChange = std::move(shared);
}

void ClusterRegistry::onCapacityChange(std::function<void(const std::string&)> callback) {
  auto shared = std::make_shared<const Impl::KubeconfigChange>(std::move(callback));
  std::lock_guard lock(impl_->mutex);
  impl_->capacityChange = std::move(shared);
}

void ClusterRegistry::onKubeconfigChange(std::function<void(const std::string&)> callback) {
  auto shared = std::make_shared<const Impl::KubeconfigChange>(std::move(callback));
  std::lock_guard lock(impl_->mutex);
  impl_->kubeconfigChange = std::move(shared);
}

Result ClusterRegistry::reconcile(const std::string& name) { return impl_->reconcile(name); }

std::shared_ptr<RemoteCluster> ClusterRegistry::connected(const std::string& name) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->entries.find(name);
  if (it == impl_->entries.end() || !it->second.connected) return nullptr;
  return it->second.remote;
}

std::optional<Clock::TimePoint> ClusterRegistry::disconnectedSince(const std::string& name) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->entries.find(name);
  if (it == impl_->entries.end()) return impl_->createdAt;
  if (it->second.connected) return std::nullopt;
  return it->second.disconnectedSince;
}

std::vector<std::string> ClusterRegistry::clusterNames() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> names;
  for (const auto& [name, e] : impl_->entries) names.push_back(name);
  return names;
}

std::map<std::string, std::string> ClusterRegistry::servers() const {
  std::lock_guard lock(impl_->mutex);
  std::map<std::string, std::string> out;
  for (const auto& [name, e] : impl_->entries) out.emplace(name, e.server);
  return out;
}

std::vector<std::string> ClusterRegistry::clustersUsingSecret(const std::string& name) const {
  return impl_->clustersWhere(&Impl::Entry::secretName, name);
}

std::vector<std::string> ClusterRegistry::clustersUsingProfile(const std::string& name) const {
  return impl_->clustersWhere(&Impl::Entry::profileName, name);
}

int ClusterRegistry::failedAttempts(const std::string& name) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->entries.find(name);
  return it == impl_->entries.end() ? 0 : it->second.failedAttempts;
}

void ClusterRegistry::stop() { impl_->stop(); }

}  // namespace mka::multikueue
