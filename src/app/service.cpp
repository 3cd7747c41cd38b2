#include "mka/app/service.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "mka/app/dispatch_runner.h"
#include "mka/config/loader.h"
#include "mka/config/store.h"
#include "mka/deploy/manifests.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/leader_election.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "mka/observability/health.h"
#include "mka/observability/metrics.h"
#include "mka/webhook/admission_handler.h"
#include "mka/webhook/queue_index.h"
#include "mka/webhook/queue_index_informers.h"

namespace mka::app {
namespace {

// Flags win over the file, as in controller-runtime managers.
void applyFlags(const ServeOptions& options, config::Configuration& cfg) {
  if (options.healthProbeBindAddress) cfg.healthProbeBindAddress = *options.healthProbeBindAddress;
  if (options.metricsBindAddress) cfg.metricsBindAddress = *options.metricsBindAddress;
  if (options.certDir) cfg.webhook.certDir = *options.certDir;
  if (options.webhookBindAddress) {
    auto bind = net::parseBindAddress(*options.webhookBindAddress);
    cfg.webhook.host = bind.host;
    cfg.webhook.port = bind.port;
  }
}

config::Configuration loadConfiguration(const ServeOptions& options) {
  config::Configuration cfg;
  if (options.configFile) {
    auto result = config::loadConfigurationFile(*options.configFile);
    if (!result.ok()) throw ValidationError(std::move(result.errors));
    cfg = std::move(*result.config);
  }
  applyFlags(options, cfg);
  return cfg;
}

// Settings bound at start-up (listeners, certificate files, namespaces, leader election)
// cannot change in a running process: a reload keeps the running values and says so.
void keepStartupSettings(const config::Configuration& running, config::Configuration& next) {
  auto keep = [](auto& field, const auto& value, std::string_view name) {
    if (field == value) return;
    spdlog::warn("config reload: {} changed but only takes effect after a restart; keeping the running value", name);
    field = value;
  };
  keep(next.webhook.host, running.webhook.host, "webhook.host");
  keep(next.webhook.port, running.webhook.port, "webhook.port");
  keep(next.webhook.certDir, running.webhook.certDir, "webhook.certDir");
  keep(next.webhook.certName, running.webhook.certName, "webhook.certName");
  keep(next.webhook.keyName, running.webhook.keyName, "webhook.keyName");
  keep(next.healthProbeBindAddress, running.healthProbeBindAddress, "healthProbeBindAddress");
  keep(next.metricsBindAddress, running.metricsBindAddress, "metricsBindAddress");
  keep(next.namespace_, running.namespace_, "namespace");
  keep(next.leaderElection.leaderElect, running.leaderElection.leaderElect, "leaderElection.leaderElect");
  keep(next.leaderElection.resourceName, running.leaderElection.resourceName, "leaderElection.resourceName");
  keep(next.leaderElection.resourceNamespace, running.leaderElection.resourceNamespace,
       "leaderElection.resourceNamespace");
  keep(next.dispatch.enabled, running.dispatch.enabled, "dispatch.enabled");
  // The leader's controllers run only in a process started with dispatch or the integration on.
  if (!running.dispatch.enabled && running.integrations.frameworks.empty())
    keep(next.integrations.frameworks, running.integrations.frameworks, "integrations.frameworks");
}

// Routes every method and path to the admission handler, which owns routing decisions
// (404/405 included) so that they are unit-tested without a socket.
void routeAdmission(net::HttpServer& server, const webhook::AdmissionHandler& handler) {
  auto serve = [&handler](const httplib::Request& req, httplib::Response& res) {
    const std::string contentType = req.get_header_value("Content-Type");  // HttpRequest only borrows it
    webhook::HttpRequest in{req.method, req.path, contentType, req.body};
    auto out = handler.handle(in);
    res.status = out.status;
    if (out.status == 405) res.set_header("Allow", "POST");
    res.set_content(std::move(out.body), out.contentType.c_str());
  };
  const std::string any = ".*";
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}) server.route(method, any, serve);
  // httplib answers some errors itself (413 for oversized bodies, 400 for unparsable
  // requests); give those a metav1.Status body and a log line like ours.
  server.setErrorHandler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = res.status == 413
                              ? "request body is larger than " + std::to_string(webhook::kMaxRequestBytes) +
                                    " bytes: kube-apiserver never sends objects that large; check the caller"
                              : "request rejected with HTTP status " + std::to_string(res.status);
    spdlog::warn("webhook request rejected path={} status={} reason=\"{}\"", req.path, res.status, message);
    nlohmann::json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
                             {"status", "Failure"}, {"message", message}, {"code", res.status}};
    res.set_content(status.dump(), "application/json");
  });
}

std::unique_ptr<net::HttpServer> makePlainServer(const std::string& name, const std::string& address) {
  auto bind = net::parseBindAddress(address);
  if (bind.port < 0) return nullptr;
  net::ServerOptions o;
  o.name = name;
  o.host = bind.host.empty() ? "0.0.0.0" : bind.host;
  o.port = bind.port;
  o.maxThreads = 16;  // kubelet and Prometheus: a few connections at most
  return std::make_unique<net::HttpServer>(o);
}

}  // namespace

Service::Service(ServeOptions options)
    : options_(std::move(options)),
      metrics_(std::make_unique<observability::Metrics>()),
      health_(std::make_unique<observability::Health>()),
      store_(std::make_unique<config::ConfigStore>(loadConfiguration(options_))),
      queues_(std::make_unique<webhook::InMemoryQueueIndex>()),
      identity_(kube::defaultLeaderIdentity()) {
  metrics_->recordConfigLoaded();
  metrics_->setBuildInfo(options_.version);
  auto cfg = store_->get();
  handler_ = std::make_unique<webhook::AdmissionHandler>(*store_, *queues_, metrics_.get());

  const std::filesystem::path certDir = cfg->webhook.certDir;
  certificates_ =
      std::make_shared<net::CertificateReloader>(certDir / cfg->webhook.certName, certDir / cfg->webhook.keyName);
  certificates_->setReloadListener([this](bool success) { metrics_->recordCertificateReload(success); });
  net::ServerOptions wo;
  wo.name = "webhook";
  wo.host = cfg->webhook.host.empty() ? "0.0.0.0" : cfg->webhook.host;
  wo.port = cfg->webhook.port;
  wo.payloadMaxLength = webhook::kMaxRequestBytes;
  webhookServer_ = std::make_unique<net::HttpServer>(wo, certificates_);
  routeAdmission(*webhookServer_, *handler_);

  probeServer_ = makePlainServer("probes", cfg->healthProbeBindAddress);
  if (cfg->metricsBindAddress != cfg->healthProbeBindAddress) {
    metricsServer_ = makePlainServer("metrics", cfg->metricsBindAddress);
  }

  health_->addLivenessCheck("ping", [] { return std::nullopt; });
  health_->addReadinessCheck("shutdown", [this]() -> std::optional<std::string> {
    if (stopping_) return "shutting down";
    return std::nullopt;
  });
  health_->addReadinessCheck("certificate", [this]() -> std::optional<std::string> {
    if (certificates_->loaded()) return std::nullopt;
    auto error = certificates_->lastError();
    return error.empty() ? std::string("serving certificate not loaded yet") : error;
  });
  // A bad hot reload keeps the last good configuration in force, so the process stays ready;
  // the failure is reported by log line and multikueue_adapter_config_last_reload_successful.
  health_->addReadinessCheck("config", [this]() -> std::optional<std::string> {
    if (store_->get()) return std::nullopt;
    return std::string("no valid configuration loaded");
  });
  health_->addReadinessCheck("queue-index", [this]() -> std::optional<std::string> {
    if (queueInformers_ ? queueInformers_->hasSynced() : queues_->hasSynced()) return std::nullopt;
    return std::string("LocalQueue/ClusterQueue/AdmissionCheck caches not synced yet");
  });

  if (probeServer_) {
    observability::installProbeRoutes(*probeServer_, *health_);
    metricsOnProbeServer_ = !metricsServer_ && cfg->metricsBindAddress == cfg->healthProbeBindAddress;
    if (metricsOnProbeServer_) observability::installMetricsRoute(*probeServer_, *metrics_);
  }
  if (metricsServer_) observability::installMetricsRoute(*metricsServer_, *metrics_);

  for (const auto& kind : deploy::configuredKinds(*cfg)) startupKinds_.insert(kind.dotted());
  if (options_.configFile) {
    reloader_ = std::make_unique<config::ConfigReloader>(
        *options_.configFile, *store_,
        [this](const FieldErrors& errors) {
          metrics_->recordConfigReload(errors.empty());
          if (!errors.empty()) return;
          warnAboutAddedKinds();
          if (dispatchRunner_) dispatchRunner_->configChanged();
        },
        FileWatcher::Options{},
        [this](config::Configuration& next) {
          applyFlags(options_, next);
          keepStartupSettings(*store_->get(), next);
        });
  }
}

Service::~Service() { stop(); }

void Service::warnAboutAddedKinds() {
  std::vector<std::string> added;
  for (const auto& kind : deploy::configuredKinds(*store_->get()))
    if (startupKinds_.count(kind.dotted()) == 0) added.push_back(kind.dotted());
  for (const auto& kind : added)
    spdlog::warn(
        "config reload: {} was added after the process started; the webhook configurations and RBAC deployed for "
        "the first configuration do not cover it: render them again (multikueue-adapter manifests --config FILE | "
        "kubectl apply -f -)",
        kind);
  std::lock_guard lock(addedKindsMutex_);
  addedKinds_ = std::move(added);
}

std::vector<std::string> Service::kindsAddedSinceStart() const {
  std::lock_guard lock(addedKindsMutex_);
  return addedKinds_;
}

void Service::start() {
  auto cfg = store_->get();
  // Prerequisites first: a process that cannot reach its cluster says so before it binds a port.
  // Only MultiKueueQueues looks queues up; QueueLabeled and Disabled need no cluster access.
  const bool needQueues =
      options_.kubeconfig || cfg->managedByDefaulting == config::ManagedByDefaulting::MultiKueueQueues;
  // The dispatch loop and the job integration both run on the leader, against this cluster.
  const bool leaderControllers = cfg->dispatch.enabled || !cfg->integrations.frameworks.empty();
  if (needQueues || leaderControllers) {
    kube::RestConfig rest;
    try {
      rest = kube::loadRestConfig(kube::LoadingRules::fromEnvironment(options_.kubeconfig.value_or("")));
    } catch (const std::exception& e) {
      if (needQueues) throw;
      throw Error(std::string(cfg->dispatch.enabled
                                  ? "dispatch.enabled is true (the default), so the adapter needs the manager cluster"
                                  : "integrations.frameworks lists kinds, so the adapter needs its cluster") +
                  ", but " + e.what() +
                  "; or set dispatch.enabled: false for webhook-only mode (with no integrations.frameworks)");
    }
    spdlog::info("manager cluster server={} context={}", rest.host, rest.context);
    kube::ClientOptions clientOptions;
    clientOptions.qps = cfg->clientConnection.qps;
    clientOptions.burst = cfg->clientConnection.burst;
    clientOptions.userAgent = kube::userAgentFor(options_.version, identity_);
    kubeClient_ = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(std::move(rest), clientOptions));
  }
  // Before any server starts: /readyz reads the index's informers from the probe server's
  // threads, and until they exist it would answer from the empty index, which counts as synced.
  if (needQueues) queueInformers_ = std::make_unique<webhook::QueueIndexInformers>(*kubeClient_, *queues_);
  certificates_->start();
  if (!certificates_->loaded()) {
    spdlog::warn("serving certificate not loaded yet; /readyz stays false until it is error=\"{}\"",
                 certificates_->lastError());
  }
  if (reloader_) reloader_->start();
  if (probeServer_) probeServer_->start();
  if (metricsServer_) metricsServer_->start();
  webhookServer_->start();
  if (queueInformers_) queueInformers_->start();
  if (leaderControllers) {
    dispatchRunner_ = std::make_unique<DispatchRunner>(*kubeClient_, *store_, *metrics_, identity_);
    dispatchRunner_->start();
  }
  spdlog::info(
      "multikueue-adapter serving webhookPort={} probePort={} metricsPort={} frameworks={} integrated={} policy={}",
      webhookPort(), probePort(), metricsPort(), cfg->multiKueue.externalFrameworks.size(),
      cfg->integrations.frameworks.size(), config::toString(cfg->managedByDefaulting));
}

void Service::stop() {
  if (stopping_.exchange(true)) return;
  spdlog::info("shutting down: draining in-flight webhook requests");
  if (webhookServer_) webhookServer_->stop();
  if (dispatchRunner_) dispatchRunner_->stop();
  if (queueInformers_) queueInformers_->stop();
  if (reloader_) reloader_->stop();
  if (certificates_) certificates_->stop();
  if (metricsServer_) metricsServer_->stop();
  if (probeServer_) probeServer_->stop();
  spdlog::info("shutdown complete");
}

int Service::webhookPort() const { return webhookServer_->port(); }
int Service::probePort() const { return probeServer_ ? probeServer_->port() : -1; }
int Service::metricsPort() const {
  if (metricsServer_) return metricsServer_->port();
  return metricsOnProbeServer_ ? probePort() : -1;
}
std::shared_ptr<const config::Configuration> Service::configuration() const { return store_->get(); }
webhook::InMemoryQueueIndex& Service::queueIndex() { return *queues_; }
observability::Health& Service::health() { return *health_; }
observability::Metrics& Service::metrics() { return *metrics_; }
DispatchRunner* Service::dispatchRunner() { return dispatchRunner_.get(); }

}  // namespace mka::app
