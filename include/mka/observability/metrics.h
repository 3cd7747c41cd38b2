#pragma once
// Prometheus metrics of the process (prometheus-cpp core; served as text by our own server).
//
// Threads: every method is safe to call from any thread.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
template <typename T> class Family;
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

  // One admission request. webhook: mutate|validate|validate-config; kind: the object's Kind
  // ("" when the request could not be decoded); operation: CREATE|UPDATE|...; result:
  // allowed|patched|denied|error.
  // Series: multikueue_adapter_webhook_requests_total{webhook,kind,operation,result} and
  // multikueue_adapter_webhook_request_duration_seconds{webhook,kind,operation,result}.
  void observeAdmission(std::string_view webhook, std::string_view kind, std::string_view operation,
                        std::string_view result, double seconds);
  // multikueue_adapter_config_reloads_total{result=success|failure} and
  // multikueue_adapter_config_last_reload_successful (gauge 1/0).
  void recordConfigReload(bool success);
  // multikueue_adapter_certificate_reloads_total{result}.
  void recordCertificateReload(bool success);

  // Prometheus text exposition format 0.0.4.
  std::string render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* admissionRequests_;
  prometheus::Family<prometheus::Histogram>* admissionLatency_;
  prometheus::Family<prometheus::Counter>* configReloads_;
  prometheus::Gauge* configLastReloadOk_;
  prometheus::Family<prometheus::Counter>* certificateReloads_;
  struct Series;
  mutable std::mutex cacheMutex_;
  std::map<std::string, std::unique_ptr<Series>, std::less<>> cache_;  // label-set -> metrics
};

}  // namespace mka::observability
