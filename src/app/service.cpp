#include "mka/app/service.h"

#include <httplib.h>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "mka/app/dispatch_runner.h"
#include "mka/app/metrics_access.h"
#include "mka/common/log.h"
#include "mka/config/loader.h"
#include "mka/config/store.h"
#include "mka/controller/event_recorder.h"
#include "mka/deploy/manifests.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/leader_election.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/event_server.h"
#include "mka/net/http_server.h"
#include "mka/net/pki.h"
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
  if (options.metricsSecure) cfg.metricsSecure = *options.metricsSecure;
  if (options.metricsCertDir) cfg.metricsCertDir = *options.metricsCertDir;
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
  // A flag can change how the metrics are served: the rules joining those settings hold for the
  // result (the flags' addresses may use port 0, which a file may not).
  if (auto errors = config::validateMetricsServing(cfg); !errors.empty()) throw ValidationError(std::move(errors));
  return cfg;
}

// Settings bound at start-up (listeners, certificate files, namespaces, leader election)
// cannot change in a running process: a reload keeps the running values and says so.
void keepStartupSettings(const config::Configuration& running, config::Configuration& next) {
  auto keep = [](auto& field, const auto& value, std::string_view name) {
    if (field == value) return;
    log::warn("config reload: a setting changed that only takes effect after a restart; keeping the running value",
              {{"setting", name}});
    field = value;
  };
  keep(next.webhook.host, running.webhook.host, "webhook.host");
  keep(next.webhook.port, running.webhook.port, "webhook.port");
  keep(next.webhook.certDir, running.webhook.certDir, "webhook.certDir");
  keep(next.webhook.certName, running.webhook.certName, "webhook.certName");
  keep(next.webhook.keyName, running.webhook.keyName, "webhook.keyName");
  keep(next.healthProbeBindAddress, running.healthProbeBindAddress, "healthProbeBindAddress");
  keep(next.metricsBindAddress, running.metricsBindAddress, "metricsBindAddress");
  keep(next.metricsSecure, running.metricsSecure, "metricsSecure");
  keep(next.metricsCertDir, running.metricsCertDir, "metricsCertDir");
  keep(next.namespace_, running.namespace_, "namespace");
  keep(next.leaderElection.leaderElect, running.leaderElection.leaderElect, "leaderElection.leaderElect");
  keep(next.leaderElection.resourceName, running.leaderElection.resourceName, "leaderElection.resourceName");
  keep(next.leaderElection.resourceNamespace, running.leaderElection.resourceNamespace,
       "leaderElection.resourceNamespace");
  keep(next.dispatch.enabled, running.dispatch.enabled, "dispatch.enabled");
  // The leader's controllers run only in a process started with dispatch or the integration on.
  if (!running.dispatch.enabled && running.integrations.frameworks.empty() && !running.placement.enabled) {
    keep(next.integrations.frameworks, running.integrations.frameworks, "integrations.frameworks");
    keep(next.placement.enabled, running.placement.enabled, "placement.enabled");
  }
}

// Every method and path goes to the admission handler, which owns routing decisions (404/405
// included) so that they are unit-tested without a socket.
net::EventServer::Handler admissionRoute(const webhook::AdmissionHandler& handler) {
  return [&handler](const net::ServerRequest& req, net::ServerResponse& res) {
    auto out = handler.handle({req.method, req.path, req.contentType, req.body});
    res.status = out.status;
    if (out.status == 405) res.headers.emplace_back("Allow", "POST");
    res.contentType = std::move(out.contentType);
    res.body = std::move(out.body);
  };
}

// The server's own refusals (413 oversized, 411 framing, 400 malformed, ...) as the
// metav1.Status kube-apiserver shows when a webhook call fails, with a log line like ours.
void renderAdmissionRefusal(int status, std::string_view message, net::ServerResponse& res) {
  std::string text = status == 413 ? "request body is larger than " + std::to_string(webhook::kMaxRequestBytes) +
                                         " bytes: kube-apiserver never sends objects that large; check the caller"
                                   : std::string(message);
  nlohmann::json body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
                         {"status", "Failure"}, {"message", text},    {"code", status}};
  res.contentType = "application/json";
  res.body = body.dump();
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
  for (auto [name, value] :
       {std::pair{"POD_NAME", &podName_}, std::pair{"POD_NAMESPACE", &podNamespace_}, std::pair{"POD_UID", &podUid_}})
    if (const char* text = std::getenv(name)) *value = text;
  auto cfg = store_->get();
  handler_ = std::make_unique<webhook::AdmissionHandler>(*store_, *queues_, metrics_.get());

  const std::filesystem::path certDir = cfg->webhook.certDir;
  certificates_ =
      std::make_shared<net::CertificateReloader>(certDir / cfg->webhook.certName, certDir / cfg->webhook.keyName);
  certificates_->setReloadListener([this](bool success) {
    metrics_->recordCertificateReload(success);
    if (const auto expiry = certificates_->notAfter())
      metrics_->setWebhookCertificateExpiry(std::chrono::duration<double>(expiry->time_since_epoch()).count());
  });
  net::EventServerOptions wo;
  wo.name = "webhook";
  wo.host = cfg->webhook.host.empty() ? "0.0.0.0" : cfg->webhook.host;
  wo.port = cfg->webhook.port;
  wo.maxBodyBytes = webhook::kMaxRequestBytes;
  wo.threads = options_.webhookEventLoops.value_or(net::eventLoopsFor(std::thread::hardware_concurrency()));
  webhookServer_ = std::make_unique<net::EventServer>(wo, certificates_, admissionRoute(*handler_));
  webhookServer_->setErrorRenderer(renderAdmissionRefusal);

  probeServer_ = makePlainServer("probes", cfg->healthProbeBindAddress);
  if (cfg->metricsSecure) {
    metricsServer_ = makeSecureMetricsServer(*cfg);
  } else if (cfg->metricsBindAddress != cfg->healthProbeBindAddress) {
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
  if (metricsServer_ && cfg->metricsSecure) {
    observability::installMetricsRoute(*metricsServer_, *metrics_,
                                       [this](std::string_view authorization, const std::string& path) {
                                         // Set by start(), before the server is.
                                         const auto d = metricsAccess_->check(authorization, path);
                                         return std::pair{d.status, d.message};
                                       });
  } else if (metricsServer_) {
    observability::installMetricsRoute(*metricsServer_, *metrics_);
  }

  for (const auto& kind : deploy::configuredKinds(*cfg)) startupKinds_.insert(kind.dotted());
  if (options_.configFile) {
    reloader_ = std::make_unique<config::ConfigReloader>(
        *options_.configFile, *store_,
        [this](const FieldErrors& errors) {
          metrics_->recordConfigReload(errors.empty());
          if (!errors.empty()) {
            recordReloadRefused(errors);
            return;
          }
          warnAboutAddedKinds();
          if (dispatchRunner_) dispatchRunner_->configChanged();
        },
        FileWatcher::Options{},
        [this](config::Configuration& next) {
          applyFlags(options_, next);
          keepStartupSettings(*store_->get(), next);
        },
        [this](const config::Configuration& next) { return clusterProblems(next); });
  }
}

Service::~Service() {
  stop();
  if (!metricsCertTempDir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(metricsCertTempDir_, ignored);
  }
}

std::unique_ptr<net::HttpServer> Service::makeSecureMetricsServer(const config::Configuration& cfg) {
  auto bind = net::parseBindAddress(cfg.metricsBindAddress);
  if (bind.port < 0) return nullptr;
  std::filesystem::path dir = cfg.metricsCertDir;
  if (dir.empty()) {
    // As controller-runtime does without a certificate: a self-signed one, made at start. Its key
    // goes to a directory only this process's user can read.
    std::string pattern = (std::filesystem::temp_directory_path() / "multikueue-adapter-metrics-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw Error("cannot make a directory for the metrics certificate: " + pattern);
    metricsCertTempDir_ = dir = pattern;
    net::CertificateAuthority ca("multikueue-adapter metrics");
    const auto pair = ca.issue({.validity = std::chrono::hours{24 * 365}});
    for (const auto& [name, text] : {std::pair{"tls.crt", pair.certPem}, std::pair{"tls.key", pair.keyPem}}) {
      std::ofstream out(dir / name);
      out << text;
      if (!out) throw Error("cannot write " + (dir / name).string());
    }
  }
  metricsCertificates_ = std::make_shared<net::CertificateReloader>(dir / "tls.crt", dir / "tls.key");
  net::ServerOptions o;
  o.name = "metrics";
  o.host = bind.host.empty() ? "0.0.0.0" : bind.host;
  o.port = bind.port;
  o.maxThreads = 16;
  return std::make_unique<net::HttpServer>(o, metricsCertificates_);
}

void Service::warnAboutAddedKinds() {
  std::vector<std::string> added;
  for (const auto& kind : deploy::configuredKinds(*store_->get()))
    if (startupKinds_.count(kind.dotted()) == 0) added.push_back(kind.dotted());
  for (const auto& kind : added)
    log::warn(
        "config reload: a kind was added after the process started; the webhook configurations and RBAC deployed for "
        "the first configuration do not cover it: render them again (multikueue-adapter manifests --config FILE | "
        "kubectl apply -f -)",
        {{"kind", kind}});
  std::lock_guard lock(addedKindsMutex_);
  addedKinds_ = std::move(added);
}

std::vector<std::string> Service::kindsAddedSinceStart() const {
  std::lock_guard lock(addedKindsMutex_);
  return addedKinds_;
}

void Service::recordReloadRefused(const FieldErrors& errors) {
  if (!reloadEvents_ || errors.empty()) return;
  nlohmann::json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", podName_}, {"namespace", podNamespace_}}}};
  if (!podUid_.empty()) pod["metadata"]["uid"] = podUid_;
  std::string message =
      "the configuration file was not applied, the running configuration stays in force: " + errors.front().toString();
  if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more errors in the log)";
  reloadEvents_->record(pod, "Warning", "ConfigReloadFailed", message);
}

FieldErrors Service::clusterProblems(const config::Configuration& cfg) {
  FieldErrors errors;
  if (!kubeClient_ || cfg.dispatch.enabled) return errors;
  for (std::size_t i = 0; i < cfg.multiKueue.externalFrameworks.size(); ++i) {
    const auto& f = cfg.multiKueue.externalFrameworks[i];
    kube::ResourceInfo resource;
    try {
      resource = kubeClient_->discovery().resourceFor(f.gvk);
    } catch (const std::exception& e) {
      // Not served yet (its CRD installed later) or not reachable now: Kueue's dispatching waits
      // for it as well; nothing here to refuse.
      log::warn("cannot check an external framework's status subresource", {{"kind", f.name}, {"error", e.what()}});
      continue;
    }
    if (resource.hasStatus) continue;
    errors.push_back(FieldError{
        "multiKueue.externalFrameworks[" + std::to_string(i) + "].name",
        "the cluster serves " + resource.plural + "." + f.gvk.group +
            " without a status subresource, but with dispatch.enabled false Kueue's own MultiKueue dispatches " +
            f.gvk.kind +
            " and copies the workers' status through that subresource: the jobs' status would never "
            "reach this cluster",
        "set dispatch.enabled: true, so that the adapter dispatches the kind (it copies status without the "
        "subresource), or add subresources: {status: {}} to the CRD's served version"});
  }
  return errors;
}

void Service::start() {
  auto cfg = store_->get();
  // Prerequisites first: a process that cannot reach its cluster says so before it binds a port.
  // Only MultiKueueQueues looks queues up; QueueLabeled and Disabled need no cluster access.
  const bool needQueues =
      options_.kubeconfig || cfg->managedByDefaulting == config::ManagedByDefaulting::MultiKueueQueues;
  // The dispatch loop and the job integration both run on the leader, against this cluster.
  const bool leaderControllers =
      cfg->dispatch.enabled || !cfg->integrations.frameworks.empty() || cfg->placement.enabled;
  if (needQueues || leaderControllers || cfg->metricsSecure) {
    kube::RestConfig rest;
    try {
      rest = kube::loadRestConfig(kube::LoadingRules::fromEnvironment(options_.kubeconfig.value_or("")));
    } catch (const std::exception& e) {
      if (needQueues) throw;
      if (!leaderControllers)
        throw Error(std::string("metricsSecure is true, so the adapter needs its cluster to review the scrapers' "
                                "tokens, but ") +
                    e.what() + "; or serve metrics over plain HTTP (metricsSecure: false)");
      throw Error(std::string(cfg->dispatch.enabled
                                  ? "dispatch.enabled is true (the default), so the adapter needs the manager cluster"
                                  : "integrations.frameworks lists kinds, so the adapter needs its cluster") +
                  ", but " + e.what() +
                  "; or set dispatch.enabled: false for webhook-only mode (with no integrations.frameworks)");
    }
    log::info("manager cluster", {{"server", rest.host}, {"context", rest.context}});
    kube::ClientOptions clientOptions;
    clientOptions.qps = cfg->clientConnection.qps;
    clientOptions.burst = cfg->clientConnection.burst;
    clientOptions.userAgent = kube::userAgentFor(options_.version, identity_);
    kubeClient_ = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(std::move(rest), clientOptions));
    if (auto errors = clusterProblems(*cfg); !errors.empty()) throw ValidationError(std::move(errors));
  }
  if (cfg->metricsSecure) {
    metricsAccess_ = std::make_unique<MetricsAccess>(*kubeClient_, clock_);
    metricsCertificates_->start();
  }
  if (kubeClient_ && !podName_.empty() && !podNamespace_.empty())
    reloadEvents_ = std::make_unique<controller::EventRecorder>(*kubeClient_, clock_, "multikueue-adapter");
  // Before any server starts: /readyz reads the index's informers from the probe server's
  // threads, and until they exist it would answer from the empty index, which counts as synced.
  if (needQueues) queueInformers_ = std::make_unique<webhook::QueueIndexInformers>(*kubeClient_, *queues_);
  certificates_->start();
  if (!certificates_->loaded()) {
    log::warn("serving certificate not loaded yet; /readyz stays false until it is",
              {{"error", certificates_->lastError()}});
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
  log::info("multikueue-adapter serving", {{"webhookPort", webhookPort()},
                                           {"probePort", probePort()},
                                           {"metricsPort", metricsPort()},
                                           {"frameworks", cfg->multiKueue.externalFrameworks.size()},
                                           {"integrated", cfg->integrations.frameworks.size()},
                                           {"policy", config::toString(cfg->managedByDefaulting)}});
}

void Service::stop() {
  if (stopping_.exchange(true)) return;
  log::info("shutting down: draining in-flight webhook requests");
  if (webhookServer_) webhookServer_->stop();
  if (dispatchRunner_) dispatchRunner_->stop();
  if (queueInformers_) queueInformers_->stop();
  if (reloader_) reloader_->stop();
  if (certificates_) certificates_->stop();
  if (metricsServer_) metricsServer_->stop();
  if (probeServer_) probeServer_->stop();
  log::info("shutdown complete");
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
