#include "mka/observability/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace mka::observability {

namespace {

// A webhook answers in well under a millisecond from its caches; kube-apiserver's own
// histogram starts at 5 ms, too coarse to see that. Upper end: the default 10 s timeout.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets{
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

// Label values come from requests; whoever can reach the port could mint series without end.
constexpr std::size_t kMaxAdmissionSeries = 1000;
constexpr std::string_view kOther = "other";

prometheus::MetricFamily processFamily(std::string name, std::string help, prometheus::MetricType type, double value) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
  return family;
}

// What the Go and Python client libraries' process collectors export, from /proc/self (Linux
// only: elsewhere nothing, as those libraries do).
std::vector<prometheus::MetricFamily> processFamilies() {
  std::vector<prometheus::MetricFamily> out;
  std::ifstream statFile("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(statFile)), {});
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream fields(stat.substr(close + 2));  // from field 3 (state) on
  std::vector<std::string> f;
  for (std::string field; fields >> field;) f.push_back(field);
  // Fields 14 utime, 15 stime, 22 starttime (clock ticks since boot), 23 vsize, 24 rss (pages).
  if (f.size() < 22) return out;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double pageSize = static_cast<double>(::sysconf(_SC_PAGESIZE));
  const auto at = [&](int field) { return std::stod(f[static_cast<std::size_t>(field - 3)]); };
  double bootTime = 0;
  std::ifstream procStat("/proc/stat");
  for (std::string line; std::getline(procStat, line);)
    if (line.rfind("btime ", 0) == 0) bootTime = std::stod(line.substr(6));
  std::size_t openFds = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++openFds;
  rlimit limit{};
  const double maxFds = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? static_cast<double>(limit.rlim_cur) : 0;
  out.push_back(processFamily("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                              prometheus::MetricType::Counter, (at(14) + at(15)) / ticks));
  out.push_back(processFamily("process_resident_memory_bytes", "Resident memory size in bytes.",
                              prometheus::MetricType::Gauge, at(24) * pageSize));
  out.push_back(processFamily("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                              prometheus::MetricType::Gauge, at(23)));
  out.push_back(processFamily("process_open_fds", "Number of open file descriptors.", prometheus::MetricType::Gauge,
                              static_cast<double>(openFds)));
  out.push_back(processFamily("process_max_fds", "Maximum number of open file descriptors.",
                              prometheus::MetricType::Gauge, maxFds));
  out.push_back(processFamily("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                              prometheus::MetricType::Gauge, bootTime + at(22) / ticks));
  return out;
}

}  // namespace

struct Metrics::AdmissionSeries {
  prometheus::Counter* requests;
  prometheus::Histogram* latency;
};

namespace {
std::uint64_t nextMetricsId() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()), id_(nextMetricsId()) {
  admissionRequests_ = &prometheus::BuildCounter()
                            .Name("multikueue_adapter_webhook_requests_total")
                            .Help(
                                "Admission requests answered, by webhook, object kind, operation and result "
                                "(allowed, patched, denied, error).")
                            .Register(*registry_);
  admissionLatency_ = &prometheus::BuildHistogram()
                           .Name("multikueue_adapter_webhook_request_duration_seconds")
                           .Help(
                               "Time to answer an admission request, from the request read to the response "
                               "built, by webhook, object kind, operation and result.")
                           .Register(*registry_);
  configReloads_ = &prometheus::BuildCounter()
                        .Name("multikueue_adapter_config_reloads_total")
                        .Help("Configuration reloads, by result (success, failure).")
                        .Register(*registry_);
  configLastReloadOkFamily_ = &prometheus::BuildGauge()
                                   .Name("multikueue_adapter_config_last_reload_successful")
                                   .Help("1 if the last configuration (re)load succeeded, else 0.")
                                   .Register(*registry_);
  configLastReloadOk_ = &configLastReloadOkFamily_->Add({});
  certificateReloads_ = &prometheus::BuildCounter()
                             .Name("multikueue_adapter_certificate_reloads_total")
                             .Help("Serving certificate (re)loads, by result (success, failure).")
                             .Register(*registry_);
  certificateExpiry_ = &prometheus::BuildGauge()
                            .Name("multikueue_adapter_webhook_certificate_expiry_timestamp_seconds")
                            .Help("When the serving certificate in use expires (its notAfter), in unix seconds.")
                            .Register(*registry_);
  dispatched_ = &prometheus::BuildCounter()
                     .Name("multikueue_workloads_dispatched_total")
                     .Help("Remote Workload copies created on worker clusters, by ClusterQueue and worker.")
                     .Register(*registry_);
  admitted_ = &prometheus::BuildCounter()
                   .Name("multikueue_workloads_admitted_total")
                   .Help("Workloads whose MultiKueue admission check turned Ready, by ClusterQueue and worker.")
                   .Register(*registry_);
  clusterConnected_ = &prometheus::BuildGauge()
                           .Name("multikueue_adapter_cluster_connected")
                           .Help("1 when the worker cluster is connected (every watch established), else 0.")
                           .Register(*registry_);
  oldestInCheckState_ =
      &prometheus::BuildGauge()
           .Name("multikueue_adapter_admission_check_state_oldest_timestamp_seconds")
           .Help(
               "Per state of the dispatch loop's admission check, when the running Workload (quota reserved, "
               "not finished) longest in that state entered it, in unix seconds.")
           .Register(*registry_);
  workerNominal_ = &prometheus::BuildGauge()
                        .Name("multikueue_adapter_worker_cluster_queue_nominal_quota")
                        .Help("A worker ClusterQueue's nominal quota per flavor and resource, as the manager reads it.")
                        .Register(*registry_);
  workerReservation_ =
      &prometheus::BuildGauge()
           .Name("multikueue_adapter_worker_cluster_queue_resource_reservation")
           .Help("A worker ClusterQueue's reserved quota per flavor and resource (status.flavorsReservation).")
           .Register(*registry_);
  workerPending_ = &prometheus::BuildGauge()
                        .Name("multikueue_adapter_worker_cluster_queue_pending_workloads")
                        .Help("Workloads pending in a worker ClusterQueue (status.pendingWorkloads).")
                        .Register(*registry_);
  integrationCreated_ = &prometheus::BuildCounter()
                             .Name("multikueue_adapter_integration_workloads_created_total")
                             .Help("Workloads the job integration created, by job kind.")
                             .Register(*registry_);
  integrationResumed_ = &prometheus::BuildCounter()
                             .Name("multikueue_adapter_integration_jobs_resumed_total")
                             .Help("Jobs the job integration resumed once their Workload was admitted, by job kind.")
                             .Register(*registry_);
  integrationStopped_ = &prometheus::BuildCounter()
                             .Name("multikueue_adapter_integration_jobs_stopped_total")
                             .Help(
                                 "Running jobs the job integration stopped (evicted, not admitted, Workload gone), "
                                 "by job kind.")
                             .Register(*registry_);
  integrationFinished_ = &prometheus::BuildCounter()
                              .Name("multikueue_adapter_integration_workloads_finished_total")
                              .Help(
                                  "Workloads the job integration marked Finished, by job kind and result "
                                  "(Succeeded, Failed).")
                              .Register(*registry_);
  reconciles_ = &prometheus::BuildCounter()
                     .Name("controller_runtime_reconcile_total")
                     .Help("Reconciles per controller, by result (success, requeue, error).")
                     .Register(*registry_);
  reconcileTime_ = &prometheus::BuildHistogram()
                        .Name("controller_runtime_reconcile_time_seconds")
                        .Help("Time per reconcile, per controller.")
                        .Register(*registry_);
  queueDepth_ = &prometheus::BuildGauge()
                     .Name("workqueue_depth")
                     .Help("Keys waiting in a controller's work queue.")
                     .Register(*registry_);
  buildInfo_ = &prometheus::BuildGauge()
                    .Name("multikueue_adapter_build_info")
                    .Help("Always 1; the labels say which build of multikueue-adapter this is.")
                    .Register(*registry_);
  leaderStatus_ = &prometheus::BuildGauge()
                       .Name("leader_election_master_status")
                       .Help("1 while this replica holds the named Lease, else 0 (controller-runtime's gauge).")
                       .Register(*registry_);
}

std::string Metrics::replicaRole() const {
  std::lock_guard lock(roleMutex_);
  return role_;
}

void Metrics::recordConfigLoaded() { configLastReloadOk_->Set(1); }

void Metrics::setBuildInfo(std::string_view version) {
#if defined(__clang__)
  const std::string compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  const std::string compiler = "gcc " __VERSION__;
#else
  const std::string compiler = "unknown";
#endif
  buildInfo_->Add({{"version", std::string(version)}, {"compiler", compiler}}).Set(1);
}

void Metrics::setReplicaRole(std::string_view role, std::string_view leaseName) {
  {
    std::lock_guard lock(roleMutex_);
    role_ = std::string(role);
  }
  if (!leaseName.empty()) leaderStatus_->Add({{"name", std::string(leaseName)}}).Set(role == "leader" ? 1 : 0);
}

Metrics::~Metrics() = default;

void Metrics::recordWorkloadDispatched(std::string_view clusterQueue, std::string_view cluster) {
  dispatched_
      ->Add({{"cluster_queue", std::string(clusterQueue)},
             {"cluster", std::string(cluster)},
             {"replica_role", replicaRole()}})
      .Increment();
}

void Metrics::recordIntegrationWorkloadCreated(std::string_view kind) {
  integrationCreated_->Add({{"kind", std::string(kind)}}).Increment();
}

void Metrics::recordIntegrationJobResumed(std::string_view kind) {
  integrationResumed_->Add({{"kind", std::string(kind)}}).Increment();
}

void Metrics::recordIntegrationJobStopped(std::string_view kind) {
  integrationStopped_->Add({{"kind", std::string(kind)}}).Increment();
}

void Metrics::recordIntegrationWorkloadFinished(std::string_view kind, std::string_view result) {
  integrationFinished_->Add({{"kind", std::string(kind)}, {"result", std::string(result)}}).Increment();
}

void Metrics::recordWorkloadAdmitted(std::string_view clusterQueue, std::string_view cluster) {
  admitted_
      ->Add({{"cluster_queue", std::string(clusterQueue)},
             {"cluster", std::string(cluster)},
             {"replica_role", replicaRole()}})
      .Increment();
}

void Metrics::setClusterConnected(std::string_view cluster, bool connected) {
  clusterConnected_->Add({{"cluster", std::string(cluster)}}).Set(connected ? 1 : 0);
}

void Metrics::setOldestInCheckState(std::string_view state, std::optional<double> unixSeconds) {
  std::lock_guard lock(checkStateMutex_);
  auto it = checkStateSeries_.find(state);
  if (!unixSeconds) {
    if (it == checkStateSeries_.end()) return;
    oldestInCheckState_->Remove(it->second);
    checkStateSeries_.erase(it);
    return;
  }
  if (it == checkStateSeries_.end())
    it =
        checkStateSeries_.emplace(std::string(state), &oldestInCheckState_->Add({{"state", std::string(state)}})).first;
  it->second->Set(*unixSeconds);
}

void Metrics::clearOldestInCheckStates() {
  std::lock_guard lock(checkStateMutex_);
  for (const auto& [state, gauge] : checkStateSeries_) oldestInCheckState_->Remove(gauge);
  checkStateSeries_.clear();
}

void Metrics::removeCluster(std::string_view cluster) {
  // Add finds the series when it exists (and makes it when not: removed all the same).
  clusterConnected_->Remove(&clusterConnected_->Add({{"cluster", std::string(cluster)}}));
}

void Metrics::setWorkerClusterQueues(std::string_view cluster, const std::vector<WorkerClusterQueue>& queues) {
  std::lock_guard lock(workerMutex_);
  auto it = workerSeries_.find(cluster);
  if (it == workerSeries_.end()) it = workerSeries_.emplace(std::string(cluster), decltype(it->second){}).first;
  for (auto [family, gauge] : it->second) family->Remove(gauge);
  it->second.clear();
  const std::string name(cluster);
  for (const auto& q : queues) {
    auto& pending = workerPending_->Add({{"cluster", name}, {"cluster_queue", q.name}});
    pending.Set(q.pendingWorkloads);
    it->second.emplace_back(workerPending_, &pending);
    for (const auto& quota : q.quotas) {
      const std::map<std::string, std::string> labels{
          {"cluster", name}, {"cluster_queue", q.name}, {"flavor", quota.flavor}, {"resource", quota.resource}};
      auto& nominal = workerNominal_->Add(labels);
      nominal.Set(quota.nominal);
      it->second.emplace_back(workerNominal_, &nominal);
      auto& reservation = workerReservation_->Add(labels);
      reservation.Set(quota.reservation);
      it->second.emplace_back(workerReservation_, &reservation);
    }
  }
  if (queues.empty()) workerSeries_.erase(it);
}

void Metrics::observeReconcile(std::string_view controller, std::string_view result, double seconds) {
  reconciles_->Add({{"controller", std::string(controller)}, {"result", std::string(result)}}).Increment();
  reconcileTime_->Add({{"controller", std::string(controller)}}, kLatencyBuckets).Observe(seconds);
}

void Metrics::setQueueDepth(std::string_view controller, std::size_t depth) {
  queueDepth_->Add({{"name", std::string(controller)}}).Set(static_cast<double>(depth));
}

void Metrics::observeAdmission(std::string_view webhook, std::string_view kind, std::string_view operation,
                               std::string_view result, double seconds) {
  observe(admissionSeries(webhook, kind, operation, result), seconds);
}

Metrics::AdmissionSeries& Metrics::admissionSeries(std::string_view webhook, std::string_view kind,
                                                   std::string_view operation, std::string_view result) {
  // One map lookup keyed by the label values, no allocation once the key buffer grew.
  thread_local std::string key;
  const auto makeKey = [&](std::string_view k, std::string_view op) {
    key.clear();
    key.append(webhook).push_back('\0');
    key.append(k).push_back('\0');
    key.append(op).push_back('\0');
    key.append(result);
  };
  makeKey(kind, operation);
  std::lock_guard lock(cacheMutex_);
  auto it = cache_.find(key);
  if (it == cache_.end() && cache_.size() >= kMaxAdmissionSeries) {
    makeKey(kOther, kOther);
    it = cache_.find(key);
  }
  if (it == cache_.end()) {
    const bool folded = cache_.size() >= kMaxAdmissionSeries;
    const prometheus::Labels labels{{"webhook", std::string(webhook)},
                                    {"kind", std::string(folded ? kOther : kind)},
                                    {"operation", std::string(folded ? kOther : operation)},
                                    {"result", std::string(result)}};
    auto created = std::make_unique<AdmissionSeries>(
        AdmissionSeries{&admissionRequests_->Add(labels), &admissionLatency_->Add(labels, kLatencyBuckets)});
    it = cache_.emplace(key, std::move(created)).first;
  }
  return *it->second;
}

void Metrics::observe(AdmissionSeries& series, double seconds) {
  series.requests->Increment();
  series.latency->Observe(seconds);
}

void Metrics::recordConfigReload(bool success) {
  configReloads_->Add({{"result", success ? "success" : "failure"}}).Increment();
  configLastReloadOk_->Set(success ? 1 : 0);
}

void Metrics::recordCertificateReload(bool success) {
  certificateReloads_->Add({{"result", success ? "success" : "failure"}}).Increment();
}

void Metrics::setWebhookCertificateExpiry(double unixSeconds) { certificateExpiry_->Add({}).Set(unixSeconds); }

std::vector<std::string> Metrics::familyNames() const {
  // The families themselves: the registry collects only those with a sample.
  std::vector<std::string> names;
  const auto add = [&](const auto* family) { names.push_back(family->GetName()); };
  add(admissionRequests_);
  add(admissionLatency_);
  add(configReloads_);
  add(configLastReloadOkFamily_);
  add(certificateReloads_);
  add(certificateExpiry_);
  add(dispatched_);
  add(admitted_);
  add(clusterConnected_);
  add(oldestInCheckState_);
  add(workerNominal_);
  add(workerReservation_);
  add(workerPending_);
  add(integrationCreated_);
  add(integrationResumed_);
  add(integrationStopped_);
  add(integrationFinished_);
  add(reconciles_);
  add(reconcileTime_);
  add(queueDepth_);
  add(buildInfo_);
  add(leaderStatus_);
  for (const auto& family : processFamilies()) names.push_back(family.name);
  return names;
}

std::string Metrics::render() const {
  prometheus::TextSerializer serializer;
  auto families = registry_->Collect();
  for (auto& family : processFamilies()) families.push_back(std::move(family));
  return serializer.Serialize(families);
}

}  // namespace mka::observability
