#pragma once
// The adapter's configuration (SPEC §3): our own AdapterConfiguration kind, or the subset of
// Kueue's Configuration that we read. Plain values with defaults; config/loader.h fills and
// validates them. An instance is immutable once published through ConfigStore.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mka/api/gvk.h"
#include "mka/api/kueue.h"
#include "mka/common/duration.h"

namespace mka::config {

inline constexpr std::string_view kAdapterApiVersion = "config.multikueue-adapter.dev/v1alpha1";
inline constexpr std::string_view kAdapterKind = "AdapterConfiguration";
inline constexpr std::string_view kKueueConfigGroup = "config.kueue.x-k8s.io";  // v1beta1 | v1beta2
inline constexpr std::string_view kKueueKind = "Configuration";

inline constexpr std::string_view kDefaultDispatchControllerName = "multikueue-adapter.dev/dispatcher";
inline constexpr std::string_view kDispatcherAllAtOnce = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
inline constexpr std::string_view kDispatcherIncremental = "kueue.x-k8s.io/multikueue-dispatcher-incremental";
// The Argo Workflow profile's marker: a workflow controller without an instanceID ignores
// Workflows carrying this label, so the manager's copy stays idle.
inline constexpr std::string_view kArgoInstanceIdLabel = "workflows.argoproj.io/controller-instanceid";
inline constexpr std::string_view kArgoInstanceIdValue = "multikueue";
// Label that marks ConfigMaps holding our configuration (validated by /validate-config).
inline constexpr std::string_view kConfigMapLabel = "multikueue-adapter.dev/config";

// Where a job kind keeps its "managed by MultiKueue" marker.
struct ManagedByLocation {
  enum class Type { Path, Label };
  Type type = Type::Path;
  // Type::Path: dotted field path below the object root, e.g. "spec.managedBy" or
  // "spec.runPolicy.managedBy". Type::Label: the label key.
  std::string path = "spec.managedBy";
  std::string labelKey;
  // The marker value: api::kMultiKueueControllerName for paths; for labels the configured value
  // (label values cannot hold '/').
  std::string value = std::string(api::kMultiKueueControllerName);

  // Field path as users read it in messages: "spec.managedBy" or "metadata.labels[<key>]".
  std::string fieldPath() const;
  bool operator==(const ManagedByLocation&) const = default;
};

struct ExternalFramework {
  std::string name;  // as written, "PipelineRun.v1.tekton.dev"
  api::GroupVersionKind gvk;
  ManagedByLocation managedBy;
  bool managedByFromProfile = false;  // true when no managedBy was written and a built-in profile chose it
};

enum class ManagedByDefaulting { MultiKueueQueues, QueueLabeled, Never };
std::string_view toString(ManagedByDefaulting policy);
// Exact spelling only ("MultiKueueQueues", "QueueLabeled", "Never"); nullopt otherwise.
std::optional<ManagedByDefaulting> parseManagedByDefaulting(std::string_view text);

struct WebhookSettings {
  std::string host;  // bind address; empty = all interfaces
  int port = 9443;
  std::string certDir = "/tmp/k8s-webhook-server/serving-certs";
  std::string certName = "tls.crt";
  std::string keyName = "tls.key";
};

struct LeaderElection {
  bool leaderElect = true;
  std::string resourceName = "multikueue-adapter";
  std::string resourceNamespace = "kueue-system";
  Duration leaseDuration = std::chrono::seconds{15};
  Duration renewDeadline = std::chrono::seconds{10};
  Duration retryPeriod = std::chrono::seconds{2};
};

struct ClientConnection {
  double qps = 50;
  int burst = 100;
};

// The Kueue Configuration key for the workload controller's concurrency (controller-runtime's
// groupKindConcurrency is keyed by Kind.group).
inline constexpr std::string_view kWorkloadGroupKind = "Workload.kueue.x-k8s.io";

struct Dispatch {
  bool enabled = true;
  std::string admissionCheckControllerName = std::string(kDefaultDispatchControllerName);
  // Workloads reconciled at once (controller-runtime's MaxConcurrentReconciles). Reconciles
  // mostly wait on round trips to the manager and the workers, so 8 keep up with a large
  // backlog on 2 cores; more would only cost memory. In a Kueue Configuration:
  // controller.groupKindConcurrency["Workload.kueue.x-k8s.io"].
  int workloadConcurrency = 8;
};

struct MultiKueue {
  std::vector<ExternalFramework> externalFrameworks;
  Duration gcInterval = std::chrono::minutes{1};
  std::string origin = "multikueue";
  Duration workerLostTimeout = std::chrono::minutes{15};
  std::string dispatcherName = std::string(kDispatcherAllAtOnce);
};

struct Configuration {
  enum class Source { Defaults, AdapterConfiguration, KueueConfiguration };
  Source source = Source::Defaults;

  std::string namespace_ = "kueue-system";
  WebhookSettings webhook;
  std::string healthProbeBindAddress = ":8081";
  std::string metricsBindAddress = ":8080";
  LeaderElection leaderElection;
  ClientConnection clientConnection;
  ManagedByDefaulting managedByDefaulting = ManagedByDefaulting::MultiKueueQueues;
  Dispatch dispatch;
  MultiKueue multiKueue;

  // The configured framework for an object's kind, or nullptr.
  const ExternalFramework* findFramework(const api::GroupVersionKind& gvk) const;
  // AdmissionCheck controller names that mean "this queue is dispatched by MultiKueue":
  // ours and Kueue's own.
  std::vector<std::string> multiKueueControllerNames() const;
};

// The managedBy location of the built-in profiles (SPEC §3), or nullopt when `gvk` matches
// none: PipelineRun.*.tekton.dev -> spec.managedBy;
// Workflow.*.argoproj.io -> label workflows.argoproj.io/controller-instanceid=multikueue.
std::optional<ManagedByLocation> builtinProfile(const api::GroupVersionKind& gvk);

}  // namespace mka::config
