#include "mka/observability/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace mka::observability {

namespace {

// A webhook answers in well under a millisecond from its caches; kube-apiserver's own
// histogram starts at 5 ms, too coarse to see that. Upper end: the default 10 s timeout.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets{
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

// Label values come from requests; whoever can reach the port could mint series without end.
constexpr std::size_t kMaxAdmissionSeries = 1000;
constexpr std::string_view kOther = "other";

}  // namespace

struct Metrics::Series {
  prometheus::Counter* requests;
  prometheus::Histogram* latency;
};

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
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
  configLastReloadOk_ = &prometheus::BuildGauge()
                             .Name("multikueue_adapter_config_last_reload_successful")
                             .Help("1 if the last configuration (re)load succeeded, else 0.")
                             .Register(*registry_)
                             .Add({});
  certificateReloads_ = &prometheus::BuildCounter()
                             .Name("multikueue_adapter_certificate_reloads_total")
                             .Help("Serving certificate (re)loads, by result (success, failure).")
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
}

Metrics::~Metrics() = default;

void Metrics::recordWorkloadDispatched(std::string_view clusterQueue, std::string_view cluster) {
  dispatched_
      ->Add(
          {{"cluster_queue", std::string(clusterQueue)}, {"cluster", std::string(cluster)}, {"replica_role", "leader"}})
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
      ->Add(
          {{"cluster_queue", std::string(clusterQueue)}, {"cluster", std::string(cluster)}, {"replica_role", "leader"}})
      .Increment();
}

void Metrics::setClusterConnected(std::string_view cluster, bool connected) {
  clusterConnected_->Add({{"cluster", std::string(cluster)}}).Set(connected ? 1 : 0);
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
  // Hot path: one map lookup keyed by the label values, no allocation once the key buffer grew.
  thread_local std::string key;
  const auto makeKey = [&](std::string_view k, std::string_view op) {
    key.clear();
    key.append(webhook).push_back('\0');
    key.append(k).push_back('\0');
    key.append(op).push_back('\0');
    key.append(result);
  };
  makeKey(kind, operation);
  Series* series = nullptr;
  {
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
      auto created = std::make_unique<Series>(
          Series{&admissionRequests_->Add(labels), &admissionLatency_->Add(labels, kLatencyBuckets)});
      it = cache_.emplace(key, std::move(created)).first;
    }
    series = it->second.get();
  }
  series->requests->Increment();
  series->latency->Observe(seconds);
}

void Metrics::recordConfigReload(bool success) {
  configReloads_->Add({{"result", success ? "success" : "failure"}}).Increment();
  configLastReloadOk_->Set(success ? 1 : 0);
}

void Metrics::recordCertificateReload(bool success) {
  certificateReloads_->Add({{"result", success ? "success" : "failure"}}).Increment();
}

std::string Metrics::render() const {
  prometheus::TextSerializer serializer;
  return serializer.Serialize(registry_->Collect());
}

}  // namespace mka::observability
