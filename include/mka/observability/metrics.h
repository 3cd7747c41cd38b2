#pragma once
// Prometheus metrics of the process (prometheus-cpp core; served as text by our own server).
//
// Threads: every method is safe to call from any thread.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Histogram;
class Gauge;
}  // namespace prometheus

namespace mka::observability {

class Metrics {
 public:
  Metrics();
  ~Metrics();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // One admission request. webhook: mutate|mutate-children|validate|validate-config; kind: the
  // object's Kind ("" when the request could not be decoded); operation: CREATE|UPDATE|...;
  // result: allowed|patched|denied|error.
  // Series: multikueue_adapter_webhook_requests_total{webhook,kind,operation,result} and
  // multikueue_adapter_webhook_request_duration_seconds{webhook,kind,operation,result}.
  void observeAdmission(std::string_view webhook, std::string_view kind, std::string_view operation,
                        std::string_view result, double seconds);
  // observeAdmission in two steps, for a caller that keeps the series of the label sets it
  // meets: the lookup (under a lock), then a record that looks nothing up. A series lives as
  // long as this Metrics; id() tells one Metrics from a later one at the same address.
  struct AdmissionSeries;
  AdmissionSeries& admissionSeries(std::string_view webhook, std::string_view kind, std::string_view operation,
                                   std::string_view result);
  static void observe(AdmissionSeries& series, double seconds);
  std::uint64_t id() const { return id_; }
  // multikueue_adapter_config_reloads_total{result=success|failure} and
  // multikueue_adapter_config_last_reload_successful (gauge 1/0).
  void recordConfigReload(bool success);
  // The configuration the process started with loaded: the gauge reads 1 (a process whose
  // configuration does not load never serves), and no reload is counted.
  void recordConfigLoaded();
  // multikueue_adapter_build_info{version,compiler} 1, as Prometheus client libraries and
  // Kueue export build information.
  void setBuildInfo(std::string_view version);
  // What this replica is, as Kueue's replica_role label says it: "leader", "follower", or
  // "standalone" without leader election; labels the dispatch series from then on. With leader
  // election, also controller-runtime's leader_election_master_status{name=<lease>} (1 leading).
  void setReplicaRole(std::string_view role, std::string_view leaseName = "");
  // multikueue_adapter_certificate_reloads_total{result}.
  void recordCertificateReload(bool success);
  // multikueue_adapter_webhook_certificate_expiry_timestamp_seconds: the serving certificate's
  // notAfter in unix seconds, set on every load, so that an alert sees a renewal that never came.
  // No series before the first load: an alert must not read a missing certificate as expired.
  void setWebhookCertificateExpiry(double unixSeconds);

  // The dispatch loop. Kueue's series, so its dashboards work unchanged:
  // multikueue_workloads_dispatched_total{cluster_queue,cluster,replica_role} (remote Workloads
  // created) and multikueue_workloads_admitted_total{...} (checks turned Ready); ours:
  // multikueue_adapter_cluster_connected{cluster} (1 connected, 0 not).
  void recordWorkloadDispatched(std::string_view clusterQueue, std::string_view cluster);
  void recordWorkloadAdmitted(std::string_view clusterQueue, std::string_view cluster);
  void setClusterConnected(std::string_view cluster, bool connected);
  // The worker's MultiKueueCluster is gone: its multikueue_adapter_cluster_connected series goes
  // too (a 0 left behind would read as a worker still disconnected).
  void removeCluster(std::string_view cluster);
  // multikueue_adapter_admission_check_state_oldest_timestamp_seconds{state}: when the running
  // Workload longest in this state of the dispatch loop's check entered it (unix seconds);
  // nullopt removes the series (no Workload in that state).
  void setOldestInCheckState(std::string_view state, std::optional<double> unixSeconds);
  // Removes every state's series: the dispatch loop stopped, nothing waits on it here.
  void clearOldestInCheckStates();
  // A worker's ClusterQueues as the dispatch loop reads them, named after Kueue's own series:
  // multikueue_adapter_worker_cluster_queue_nominal_quota{cluster,cluster_queue,flavor,resource},
  // ..._resource_reservation{...} (in the resource's unit) and
  // ..._pending_workloads{cluster,cluster_queue}. Replaces the cluster's earlier series (queues
  // gone from it go); an empty list removes them all (the worker went).
  struct WorkerQuota {
    std::string flavor, resource;
    double nominal = 0, reservation = 0;
  };
  struct WorkerClusterQueue {
    std::string name;
    double pendingWorkloads = 0;
    std::vector<WorkerQuota> quotas;
  };
  void setWorkerClusterQueues(std::string_view cluster, const std::vector<WorkerClusterQueue>& queues);
  // The job integration (SPEC §7.2): multikueue_adapter_integration_workloads_created_total{kind},
  // ..._jobs_resumed_total{kind}, ..._jobs_stopped_total{kind} and
  // ..._workloads_finished_total{kind,result} (result: Succeeded or Failed).
  void recordIntegrationWorkloadCreated(std::string_view kind);
  void recordIntegrationJobResumed(std::string_view kind);
  void recordIntegrationJobStopped(std::string_view kind);
  void recordIntegrationWorkloadFinished(std::string_view kind, std::string_view result);
  // controller-runtime's series: controller_runtime_reconcile_total{controller,result},
  // controller_runtime_reconcile_time_seconds{controller} and workqueue_depth{name}.
  void observeReconcile(std::string_view controller, std::string_view result, double seconds);
  void setQueueDepth(std::string_view controller, std::size_t depth);

  // Prometheus text exposition format 0.0.4, with the process_* series Prometheus client
  // libraries export (CPU seconds, resident and virtual memory, open and maximum file
  // descriptors, start time), read from /proc/self when rendered.
  std::string render() const;
  // The name of every family render() can show, whether or not it has a sample yet (histograms
  // by their base name, without _bucket, _sum and _count): what an alert rule may name.
  std::vector<std::string> familyNames() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* admissionRequests_;
  prometheus::Family<prometheus::Histogram>* admissionLatency_;
  prometheus::Family<prometheus::Counter>* configReloads_;
  prometheus::Family<prometheus::Gauge>* configLastReloadOkFamily_;
  prometheus::Gauge* configLastReloadOk_;
  prometheus::Family<prometheus::Counter>* certificateReloads_;
  prometheus::Family<prometheus::Gauge>* certificateExpiry_;  // no series before a certificate loads
  prometheus::Family<prometheus::Counter>* dispatched_;
  prometheus::Family<prometheus::Counter>* admitted_;
  prometheus::Family<prometheus::Gauge>* clusterConnected_;
  prometheus::Family<prometheus::Gauge>* oldestInCheckState_;
  mutable std::mutex checkStateMutex_;
  std::map<std::string, prometheus::Gauge*, std::less<>> checkStateSeries_;  // state -> its series
  prometheus::Family<prometheus::Gauge>* workerNominal_;
  prometheus::Family<prometheus::Gauge>* workerReservation_;
  prometheus::Family<prometheus::Gauge>* workerPending_;
  mutable std::mutex workerMutex_;
  // cluster -> its gauges, with the family of each
  std::map<std::string, std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>>, std::less<>>
      workerSeries_;
  prometheus::Family<prometheus::Counter>* integrationCreated_;
  prometheus::Family<prometheus::Counter>* integrationResumed_;
  prometheus::Family<prometheus::Counter>* integrationStopped_;
  prometheus::Family<prometheus::Counter>* integrationFinished_;
  prometheus::Family<prometheus::Counter>* reconciles_;
  prometheus::Family<prometheus::Histogram>* reconcileTime_;
  prometheus::Family<prometheus::Gauge>* queueDepth_;
  prometheus::Family<prometheus::Gauge>* buildInfo_;
  prometheus::Family<prometheus::Gauge>* leaderStatus_;
  std::string replicaRole() const;
  mutable std::mutex roleMutex_;
  std::string role_ = "standalone";  // under roleMutex_
  const std::uint64_t id_;
  mutable std::mutex cacheMutex_;
  std::map<std::string, std::unique_ptr<AdmissionSeries>, std::less<>> cache_;  // label-set -> metrics
};

}  // namespace mka::observability
