#pragma once
// `multikueue-adapter manifests`: everything a cluster needs to run the adapter, rendered from
// its configuration file, so that what is deployed follows the configuration: the webhooks'
// rules name exactly the configured kinds, the RBAC grants exactly what the configured
// components call (rbac.h), the Deployment's ports and certificate folder are the file's, and the
// ConfigMap holds the file itself. manifests/base is this output for manifests/base/config.yaml
// (a test keeps them equal).
//
// Threads: pure functions.

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"
#include "mka/deploy/rbac.h"

namespace mka::deploy {

// The names the objects share (the Deployment, ServiceAccount, ClusterRole, ... are all
// kName).
inline constexpr std::string_view kName = "multikueue-adapter";
inline constexpr std::string_view kNamespace = "multikueue-adapter-system";
inline constexpr std::string_view kConfigMapName = "multikueue-adapter-config";
inline constexpr std::string_view kConfigKey = "config.yaml";
inline constexpr std::string_view kConfigDir = "/etc/multikueue-adapter";
inline constexpr std::string_view kWebhookService = "multikueue-adapter-webhook";
inline constexpr std::string_view kMetricsService = "multikueue-adapter-metrics";
inline constexpr std::string_view kCertSecret = "multikueue-adapter-webhook-cert";
inline constexpr std::string_view kKubeconfigsRole = "multikueue-adapter-kubeconfigs";
inline constexpr std::string_view kEventsRole = "multikueue-adapter-events";
// With metricsSecure: what a scraper's ServiceAccount is bound to (get on /metrics).
inline constexpr std::string_view kMetricsReaderRole = "multikueue-adapter-metrics-reader";
inline constexpr std::string_view kCertificate = "multikueue-adapter-serving-cert";
inline constexpr std::string_view kIssuer = "multikueue-adapter-selfsigned";
inline constexpr std::string_view kInjectCaAnnotation = "cert-manager.io/inject-ca-from";
inline constexpr std::string_view kDefaultImage = "multikueue-adapter:latest";
// A namespace labelled so lets /mutate see its integrated jobs that carry no Kueue label, to
// queue them in its "default" LocalQueue (Kueue's LocalQueueDefaulting). Elsewhere the job
// webhooks see only jobs with Kueue's queue-name or prebuilt-workload label.
inline constexpr std::string_view kDefaultQueueNamespaceLabel = "multikueue-adapter.dev/default-local-queue";
// The job webhooks' timeout: the answer's p99 at full load on 2 cores is under 8 ms
// (bench/README.md), so 3 s is hundreds of times that, and a user's request waits at most 3 s
// for an unreachable adapter instead of kube-apiserver's default 10 s.
inline constexpr int kWebhookTimeoutSeconds = 3;

struct ManifestOptions {
  Role role = Role::Manager;
  bool certManager = false;  // a self-signed cert-manager Issuer and Certificate, and CA injection
  std::string image = std::string(kDefaultImage);
};

// The labels every object carries.
nlohmann::ordered_json commonLabels();

// Every configured kind once (dispatched first, then integrated): what the webhook rules and
// RBAC of a configuration name.
std::vector<api::GroupVersionKind> configuredKinds(const config::Configuration& configuration);

// One object and why it is there (written as a comment above it).
struct Manifest {
  nlohmann::ordered_json object;
  std::string comment;  // one or more lines, without "# "
};

// The objects in the order `kubectl apply` needs them (the Namespace first). `configText` is the
// configuration file's content, which the ConfigMap holds as it is; `configuration` is what it
// parses to.
std::vector<Manifest> renderManifests(const config::Configuration& configuration, std::string_view configText,
                                      const ManifestOptions& options = {});

// A multi-document YAML stream ("---" between documents), each object after its comment;
// multi-line strings (the configuration) as literal blocks.
std::string toYamlStream(const std::vector<Manifest>& manifests);

// The configuration in `configFile`, or nullopt after writing each problem and their count to
// `err` as validate-config does: what every rendering command reads first.
std::optional<config::Configuration> loadConfigurationOrReport(const std::filesystem::path& configFile,
                                                               std::ostream& err);

// The `manifests` subcommand: reads and validates `configFile` (a configuration validate-config
// refuses is refused with the same messages on `err`), checks it suits the role, and writes the
// stream to `out`. Returns 0, or 1 with the reasons on `err`.
int manifestsCommand(const std::filesystem::path& configFile, const ManifestOptions& options, std::ostream& out,
                     std::ostream& err);

}  // namespace mka::deploy
