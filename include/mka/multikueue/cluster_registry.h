#pragma once
// The worker clusters the dispatch loop talks to (KUEUE-MULTIKUEUE.md §3): for each
// MultiKueueCluster on the manager (read through an controller::ObjectReader: the dispatch loop's caches),
// its kubeconfig (Secret `<namespace>/<location>` key `kubeconfig`, or a file under the allowed
// `Path` prefix), checked by
// kube::validateKubeconfigSecurity, a client with the configured QPS/burst, and informers on
// the worker for Workloads and for every configured job kind, all filtered by our origin label.
// A worker is connected once its Workload informer and each job kind's informer has synced, or
// found the kind not served there (no CRD): such a worker stays connected and Active for the
// kinds it has, an Event on the MultiKueueCluster names the missing ones, and when the CRD
// appears the informer (which keeps retrying) lists it and the worker takes that kind too. Beside them, informers on
// the worker's ClusterQueues and LocalQueues (unfiltered) feed RemoteCluster::capacity(); they are not part of the
// connection: a worker whose queues cannot be read still takes copies from the dispatchers that do not look at room.
//
// Connection state (§3.5): a new client starts disconnected with disconnectedSince = its
// creation time; the first failure after a connection sets disconnectedSince, later failures
// keep it; a complete connection clears it. Failed attempts back off 5 s, 10 s, ... 320 s
// (§3.4); reconciles inside the window neither try nor count. A hung worker never blocks the
// others: connection attempts do not hold the caller's thread for longer than one request.
//
// Status (SPEC §2): the MultiKueueCluster's `Active` condition is computed as Kueue does, with
// its reasons and messages (§1.4), and published only when status, reason or message change.
// With Options::writeClusterStatus (mode 3, drop-in) it is written to the object's status,
// compared with what is stored (Kueue records no connection Events; neither do we). Otherwise
// (mode 2: Kueue's own controller may own that status) it is recorded as an Event on the
// MultiKueueCluster through the registry's controller::EventRecorder: Normal when Active, else Warning, with
// the condition's reason and message, compared with the last Event this registry recorded for
// the cluster (after a restart the current state is recorded once more). Always: logs and the
// onConnectionChange callback (metrics).
//
// Connection attempts never wait in reconcile(): it builds a client, starts the attempt's
// informers and returns controller::Result::after(<= 1 s); the informers' own threads decide the attempt
// (all synced -> connected; any failed list/watch request -> the attempt failed, counted and
// backed off; once connected, a failed request disconnects). Either outcome is reported
// through onConnectionChange, and the next reconcile writes the status and, past the
// establishment timeout, fails an attempt still in flight. Informers of failed attempts, lost
// connections and forgotten clusters are stopped by the registry's reaper thread, so that
// neither a reconcile nor an informer hook waits for a hung worker's request.
//
// Threads: reconcile() is called by the cluster controller's workers (one key at a time);
// connected()/disconnectedSince()/clusterNames() from any thread (the workload reconciler's
// workers); callbacks run on informer threads or the reconciling thread and must be quick
// (enqueue and return). Owns the reaper thread ("mkc-reaper"), per worker the informer
// threads, and per `Path` cluster a FileWatcher thread. stop() must not race reconcile(): the
// owner stops the workers that call reconcile() first. Internal state is guarded by one mutex, never held during I/O or
// a join.

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/api/kueue.h"
#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/controller/controller.h"
#include "mka/controller/event_recorder.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/kube/rest_client.h"
#include "mka/multikueue/adapter.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/capacity.h"

namespace mka::multikueue {

// A connected worker as the reconcilers see it. Reads come from the informer caches (objects
// with our origin label only); writes go through client(). Stays usable (stale) after a
// disconnect: holders must not assume it is still connected.
class RemoteCluster {
 public:
  virtual ~RemoteCluster() = default;
  virtual const std::string& name() const = 0;
  virtual kube::Client& client() = 0;
  // Workloads by "namespace/name".
  virtual std::optional<nlohmann::json> workload(const std::string& key) const = 0;
  // Every cached Workload, one at a time (never all decoded at once).
  virtual void forEachWorkload(const std::function<void(const nlohmann::json&)>& visit) const = 0;
  // Jobs of a configured kind by "namespace/name"; nullopt also for a kind not configured.
  virtual std::optional<nlohmann::json> job(const api::GroupVersionKind& gvk, const std::string& key) const = 0;
  virtual void forEachJob(const api::GroupVersionKind& gvk,
                          const std::function<void(const nlohmann::json&)>& visit) const = 0;
  // Whether the worker serves a configured kind (its CRD is there and its jobs are listed): a
  // worker without one kind's CRD stays connected for the others, and gets none of its Workloads.
  virtual bool serves(const api::GroupVersionKind& gvk) const = 0;
  // The worker's queues (every ClusterQueue and LocalQueue, not only ours) with our copies its
  // Kueue has not reserved yet; null until both kinds are listed, and then `why` (when given)
  // says what is missing. Rebuilt only after a change; shared, never modified.
  virtual std::shared_ptr<const capacity::Snapshot> capacity(std::string* why = nullptr) const = 0;
  // A copy the quota-aware dispatcher chose to create here: charged at once, before the
  // worker's informer shows it, so that the next decision does not count the same room.
  virtual void placed(capacity::PendingCopy copy) = 0;
  // Whether the worker is known to lack namespace `ns`: its Namespace watch (started by
  // namespaceMissing) has listed them and `ns` is not there. false while that is unknown.
  virtual bool lacksNamespace(const std::string& ns) const {
    (void)ns;
    return false;
  }
  // A create in `ns` was refused because the worker lacks it: watch the worker's Namespaces (the
  // first call starts the watch, which is not part of the connection) and report `workloadKey`
  // through onRemoteEvent when `ns` appears.
  virtual void namespaceMissing(const std::string& ns, const std::string& workloadKey) {
    (void)ns;
    (void)workloadKey;
  }
};

struct ClusterRegistryOptions {
  std::string namespace_ = "kueue-system";                // where kubeconfig Secrets live
  std::string origin = std::string(api::kDefaultOrigin);  // the origin label value the informers select
  // multiKueue.clusterProfile: the exec plugins for clusters that reference a ClusterProfile
  // (unset: such clusters stay inactive, "no access provider configured").
  std::optional<config::ClusterProfileAccess> clusterProfiles;
  Adapters adapters;  // the job kinds watched on every worker, and how their jobs map to Workloads
  // `Path` kubeconfigs must resolve under this directory (MultiKueueKubeConfigPathValidation).
  std::filesystem::path pathPrefix = std::string(kKubeconfigPathPrefix);
  kube::ClientOptions clientOptions;  // per worker: clientConnection.qps/burst
  bool writeClusterStatus = false;    // mode 3 (drop-in): we own MultiKueueCluster status
  // How long the informers of one attempt may take to sync (Kueue: 1m, 2m, 4m, 8m, then 10m
  // per failed attempt); the first attempt's value.
  std::chrono::milliseconds establishTimeout{std::chrono::minutes{1}};
  // Informer backoff bounds on the workers (tests shorten them).
  std::chrono::milliseconds informerInitialBackoff{100};
  std::chrono::milliseconds informerMaxBackoff{std::chrono::seconds{30}};
};

class ClusterRegistry {
 public:
  // `objects` reads MultiKueueClusters and kubeconfig Secrets (the dispatch loop's caches);
  // `manager` writes MultiKueueCluster status; `events` (null: none) records the connection
  // Events of mode 2. They and `clock` must outlive the registry.
  ClusterRegistry(kube::Client& manager, const controller::ObjectReader& objects, const Clock& clock,
                  ClusterRegistryOptions options, controller::EventRecorder* events = nullptr);
  ~ClusterRegistry();  // stop()
  ClusterRegistry(const ClusterRegistry&) = delete;
  ClusterRegistry& operator=(const ClusterRegistry&) = delete;

  // A remote Workload or job with our origin was added, changed or deleted on `cluster`;
  // `workloadKey` is "namespace/name" of the manager's Workload it maps to (§3.6).
  void onRemoteEvent(std::function<void(const std::string& cluster, const std::string& workloadKey)> callback);
  // `cluster` became connected (true) or disconnected (false). Also asks for a reconcile of the
  // cluster when a connection drops (Kueue's "watch ended" channel): the registry calls it, the
  // owner enqueues the cluster. `false` is reported again when a connection attempt fails (the
  // cluster stays disconnected; the reconcile writes the status and schedules the next attempt).
  void onConnectionChange(std::function<void(const std::string& cluster, bool connected)> callback);
  // The kubeconfig file of a `Path` cluster changed on disk (rewritten, replaced, a kubelet
  // symlink swap, created after a reconcile found it missing), as Kueue watches those files:
  // the owner enqueues the cluster, whose reconcile reconnects when the content differs. Also
  // called once when a file starts being watched, to close the window between the reconcile's
  // read and the watch's start.
  void onKubeconfigChange(std::function<void(const std::string& cluster)> callback);
  // A connected worker's ClusterQueues or LocalQueues changed, or became readable or not: what
  // it has room for may differ (the quota-aware dispatcher looks again, metrics follow).
  void onCapacityChange(std::function<void(const std::string& cluster)> callback);

  // The cluster controller's reconcile (§3.3) for MultiKueueCluster `name`: reads it and its
  // Secret from the manager; forgets a cluster that is gone or terminating; (re)connects when
  // the kubeconfig changed or the worker is disconnected and outside its backoff window.
  // Returns when to look again (backoff, connection in progress); throws on errors Kueue
  // returns as errors (e.g. `failed to load client config, reason: BadKubeConfig, error: ...`).
  controller::Result reconcile(const std::string& name);

  // The worker when connected, else null.
  std::shared_ptr<RemoteCluster> connected(const std::string& name) const;
  // When the worker was first lost (nullopt when connected). A cluster never seen counts as
  // lost since the registry was created.
  std::optional<Clock::TimePoint> disconnectedSince(const std::string& name) const;
  // Every cluster the registry knows, with the API server of the last client built for it (""
  // before the first), in one look: two MultiKueueClusters with one server are one worker
  // under two names.
  std::map<std::string, std::string> servers() const;
  // Every cluster the registry knows (connected or not), sorted.
  std::vector<std::string> clusterNames() const;
  // The MultiKueueClusters whose kubeconfig is the Secret `name` in Options::namespace_.
  std::vector<std::string> clustersUsingSecret(const std::string& name) const;
  // The MultiKueueClusters that reference the ClusterProfile `name` in Options::namespace_.
  std::vector<std::string> clustersUsingProfile(const std::string& name) const;
  // Failed connection attempts since the last success or config change (status messages, tests).
  int failedAttempts(const std::string& name) const;

  void stop();  // stops every worker's informers

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Kueue's reconnect backoff (§3.4): 0 for n = 0, else 5 s * 2^(min(n,7)-1).
std::chrono::seconds reconnectBackoff(int failedAttempts);

}  // namespace mka::multikueue
