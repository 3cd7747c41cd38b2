#pragma once
// The `serve` subcommand as an object: configuration, certificate reloader, webhook server,
// probe and metrics servers, config hot reload. Tests run it in-process on free ports.
//
// Threads: the owner calls start() and stop(); the servers and watchers run their own threads.

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mka/common/clock.h"
#include "mka/common/errors.h"
#include "mka/config/configuration.h"

namespace mka::config {
class ConfigStore;
class ConfigReloader;
}  // namespace mka::config
namespace mka::net {
class CertificateReloader;
class EventServer;
class HttpServer;
}  // namespace mka::net
namespace mka::observability {
class Health;
class Metrics;
}  // namespace mka::observability
namespace mka::webhook {
class AdmissionHandler;
class InMemoryQueueIndex;
class QueueIndexInformers;
}  // namespace mka::webhook
namespace mka::kube {
class Client;
}  // namespace mka::kube
namespace mka::controller {
class EventRecorder;
}  // namespace mka::controller

namespace mka::app {
class MetricsAccess;

class DispatchRunner;

// Command-line values; each one that is set overrides the configuration file
// (controller-runtime convention: flags win over the file).
struct ServeOptions {
  std::optional<std::filesystem::path> configFile;
  std::optional<std::string> kubeconfig;
  std::optional<std::string> healthProbeBindAddress;
  std::optional<std::string> metricsBindAddress;
  std::optional<bool> metricsSecure;          // --metrics-secure
  std::optional<std::string> metricsCertDir;  // --metrics-cert-dir
  std::optional<std::string> certDir;
  std::optional<std::string> webhookBindAddress;  // host:port; overrides webhook.host/port
  std::optional<std::size_t> webhookEventLoops;   // default: net::eventLoopsFor(the machine's CPUs)
  std::string version = "unknown";                // multikueue_adapter_build_info's version label
};

class Service {
 public:
  // Loads and validates the configuration; throws mka::ValidationError listing every problem.
  explicit Service(ServeOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Starts watchers and servers; throws mka::Error when a port cannot be bound.
  void start();
  // Marks the process not ready, then stops servers (in-flight requests finish) and watchers.
  void stop();

  int webhookPort() const;
  int probePort() const;    // -1 when disabled
  int metricsPort() const;  // -1 when disabled; same as probePort() when the addresses match
  std::shared_ptr<const config::Configuration> configuration() const;
  webhook::InMemoryQueueIndex& queueIndex();
  observability::Health& health();
  observability::Metrics& metrics();
  // The dispatch loop's runner when dispatch.enabled (null otherwise).
  DispatchRunner* dispatchRunner();
  // Kinds ("Kind.version.group") that hot reloads added since the process started: the webhook
  // configurations and RBAC rendered for its first configuration do not cover them, which each
  // reload says in a warning.
  std::vector<std::string> kindsAddedSinceStart() const;

 private:
  void warnAboutAddedKinds();  // on the reloader's thread
  // What `cfg` needs of the cluster that the file cannot say: in webhook-only mode, Kueue's own
  // MultiKueue copies each external framework's status through the status subresource, so a
  // CRD without one is refused. Empty without cluster access (nothing to ask).
  FieldErrors clusterProblems(const config::Configuration& cfg);
  // The HTTPS metrics server of metricsSecure (its certificate from metricsCertDir, or made).
  std::unique_ptr<net::HttpServer> makeSecureMetricsServer(const config::Configuration& cfg);
  // A refused hot reload as a Warning Event (ConfigReloadFailed) on this replica's Pod, named by
  // the downward API (POD_NAME, POD_NAMESPACE, POD_UID), so that `kubectl describe pod` shows it.
  void recordReloadRefused(const FieldErrors& errors);  // on the reloader's thread

  ServeOptions options_;
  std::unique_ptr<observability::Metrics> metrics_;
  std::unique_ptr<observability::Health> health_;
  std::unique_ptr<config::ConfigStore> store_;
  std::unique_ptr<config::ConfigReloader> reloader_;
  std::set<std::string> startupKinds_;  // set by the constructor, read-only after
  mutable std::mutex addedKindsMutex_;
  std::vector<std::string> addedKinds_;  // under addedKindsMutex_; the reloader's thread writes it
  std::unique_ptr<webhook::InMemoryQueueIndex> queues_;
  // This replica's name in the Lease and in the user agent of every call it makes, so that a
  // cluster's audit log tells the replicas apart.
  const std::string identity_;
  // The manager cluster, when the policy needs it (MultiKueueQueues) or --kubeconfig is given:
  // informers feed `queues_` from LocalQueues, ClusterQueues and AdmissionChecks.
  std::unique_ptr<kube::Client> kubeClient_;
  SystemClock clock_;
  std::unique_ptr<controller::EventRecorder> reloadEvents_;  // with kubeClient_, when the Pod is known
  std::string podName_, podNamespace_, podUid_;              // from the environment, set by the constructor
  std::unique_ptr<webhook::QueueIndexInformers> queueInformers_;
  std::unique_ptr<DispatchRunner> dispatchRunner_;  // dispatch.enabled: leader election + dispatch loop
  std::unique_ptr<webhook::AdmissionHandler> handler_;
  std::shared_ptr<net::CertificateReloader> certificates_;
  std::unique_ptr<net::EventServer> webhookServer_;
  std::unique_ptr<net::HttpServer> probeServer_;
  std::unique_ptr<net::HttpServer> metricsServer_;
  bool metricsOnProbeServer_ = false;                              // metrics and probes share one bind address
  std::shared_ptr<net::CertificateReloader> metricsCertificates_;  // metricsSecure
  std::filesystem::path metricsCertTempDir_;                       // the self-signed pair's, removed at the end
  std::unique_ptr<MetricsAccess> metricsAccess_;                   // metricsSecure; set by start()
  std::atomic<bool> stopping_{false};
};

// Runs the service until SIGTERM or SIGINT, then shuts down gracefully. Returns the exit code.
int serve(const ServeOptions& options);

}  // namespace mka::app
