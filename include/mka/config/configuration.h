#pragma once
// The adapter's configuration (SPEC §3): our own AdapterConfiguration kind, or the subset of
// Kueue's Configuration that we read. Plain values with defaults; config/loader.h fills and
// validates them. An instance is immutable once published through ConfigStore.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/exec_config.h"
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
// Ours: nominates only workers whose ClusterQueue has room for the Workload now (multikueue/capacity.h).
inline constexpr std::string_view kDispatcherQuotaAware = "multikueue-adapter.dev/quota-aware";
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

// What a worker's copy of a job leaves out or changes (externalFrameworks[].remoteCopy): applied
// to the clone after the marker is removed, before the origin label and the prebuilt-workload
// link are set (those stay the dispatch loop's).
struct RemoteCopy {
  // JSON pointers removed when present: the built-in profile's first (a Workflow's
  // /spec/ttlStrategy), then those written.
  std::vector<std::string> removeFields;
  nlohmann::json patches = nlohmann::json::array();  // RFC 6902 operations, validated at load
  bool operator==(const RemoteCopy&) const = default;
};

// Where a job names an object the worker's copy needs (externalFrameworks[].dependencies): a
// Secret, ConfigMap or ServiceAccount of the job's namespace, by name.
struct DependencyPath {
  std::string kind;  // "Secret", "ConfigMap" or "ServiceAccount"
  std::string path;  // dotted, [*] for each item of a list: "spec.workspaces[*].secret.secretName"
  bool operator==(const DependencyPath&) const = default;
};
// The kinds a dependency may be.
inline constexpr std::string_view kDependencyKinds[] = {"Secret", "ConfigMap", "ServiceAccount"};

struct ExternalFramework {
  std::string name;  // as written, "PipelineRun.v1.tekton.dev"
  api::GroupVersionKind gvk;
  ManagedByLocation managedBy;
  bool managedByFromProfile = false;  // true when no managedBy was written and a built-in profile chose it
  RemoteCopy remoteCopy;
  // remoteStatus.exclude: JSON pointers under the worker job's status that are not copied back
  // (a Workflow's multi-megabyte /nodes).
  std::vector<std::string> statusExclude;
  // syncDependencies: the Secrets, ConfigMaps and ServiceAccounts its jobs name are created on
  // the winning worker before the job's copy (off unless written).
  bool syncDependencies = false;
  // dependencies: where its jobs name them, beside the built-in profile's paths.
  std::vector<DependencyPath> dependencies;
  // The kind's resource (its CRD's spec.names.plural) for what is rendered without a cluster
  // (`manifests`' RBAC and webhook rules, `add-worker`'s ClusterRole); "" = kube-apiserver's
  // guess (api::guessResource). The running adapter asks discovery instead.
  std::string resource;
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

// multiKueue.clusterProfile (Kueue's MultiKueueClusterProfile): how a MultiKueueCluster that
// references a ClusterProfile gets its credentials. The profile's status names the access
// providers its cluster offers; the first provider of this list it offers supplies the exec
// plugin. The command always comes from here, never from the profile.
struct ClusterProfileAccessProvider {
  std::string name;
  api::ExecConfig execConfig;
  bool operator==(const ClusterProfileAccessProvider&) const = default;
};
struct ClusterProfileAccess {
  std::vector<ClusterProfileAccessProvider> accessProviders;
  // The deprecated key, used when accessProviders is empty (Kueue refuses both together).
  std::vector<ClusterProfileAccessProvider> credentialsProviders;
  const std::vector<ClusterProfileAccessProvider>& providers() const {
    return accessProviders.empty() ? credentialsProviders : accessProviders;
  }
  bool operator==(const ClusterProfileAccess&) const = default;
};

struct MultiKueue {
  std::vector<ExternalFramework> externalFrameworks;
  // Unset: a MultiKueueCluster with a clusterProfileRef stays inactive ("no access provider
  // configured"), as in Kueue without the section.
  std::optional<ClusterProfileAccess> clusterProfile;
  Duration gcInterval = std::chrono::minutes{1};
  std::string origin = std::string(api::kDefaultOrigin);
  Duration workerLostTimeout = std::chrono::minutes{15};
  std::string dispatcherName = std::string(kDispatcherAllAtOnce);
  // incrementalDispatcherConfig.stepSize (Kueue's shape): workers nominated per round by the
  // incremental and the quota-aware dispatchers. Unset: 3, Kueue's default.
  std::optional<int> stepSize;
  // Kueue 0.20's MultiKueueOrchestratedPreemption (on by default): remote copies carry the
  // preemption gate kueue.x-k8s.io/multikueue, opened on one worker at a time.
  bool orchestratedPreemption = true;
};

// The job integration (SPEC §7): for each kind Kueue does not integrate, the rules by which our
// integration controller queues it as Kueue's jobframework queues a built-in kind.

// A field the integration writes (suspend, stop): a dotted path below the object root and the
// value that means "suspended" or "stopped"; resuming removes the field.
struct FieldValue {
  std::string path;
  nlohmann::json value;  // a YAML scalar as JSON: true, "PipelineRunPending"
  bool operator==(const FieldValue&) const = default;
};

// A pod set's count: read from `path` (`defaultValue` when the field is absent), or fixed.
struct PodSetCount {
  std::string path;
  std::int64_t defaultValue = 1;
  std::optional<std::int64_t> value;
  bool operator==(const PodSetCount&) const = default;
};

// A metav1.LabelSelector: every matchLabels pair and every expression must hold; an empty one
// selects everything.
struct LabelSelector {
  struct Expression {
    enum class Operator { In, NotIn, Exists, DoesNotExist };
    std::string key;
    Operator op = Operator::Exists;
    std::vector<std::string> values;
    bool operator==(const Expression&) const = default;
  };
  std::map<std::string, std::string> matchLabels;
  std::vector<Expression> matchExpressions;

  // `labels`: an object of strings, or null.
  bool matches(const nlohmann::json& labels) const;
  bool operator==(const LabelSelector&) const = default;
};

// Where a job keeps what admission adds to its pods (a flavor's node labels and tolerations,
// admission checks' podSetUpdates), each a dotted path.
struct PodFieldPaths {
  std::string labels, annotations, nodeSelector, tolerations;
  // The kind's API refuses any change to a job's spec but its suspend and stop fields (Tekton's
  // PipelineRun webhook), so a start writes no path below spec: the job must hold there already
  // what the admission adds, or it is not started; unless the kind's children take the node
  // selector and tolerations (IntegratedFramework::children), then the job must only hold no
  // value that conflicts. A stop gives nothing back (see stopped()).
  bool specImmutable = false;
  bool empty() const { return labels.empty() && annotations.empty() && nodeSelector.empty() && tolerations.empty(); }
  bool operator==(const PodFieldPaths&) const = default;
};

struct PodSetRule {
  std::string name;
  PodSetCount count;
  std::string templatePath;  // a PodTemplateSpec; empty for profiles that compute the template
  // A profile whose pod set is computed: the job's own fields its pods take these from (Argo:
  // spec.podMetadata, spec.nodeSelector, spec.tolerations; Tekton: the run's metadata and
  // spec.taskRunTemplate.podTemplate). Unset for a template path.
  std::optional<PodFieldPaths> podFields;
  bool operator==(const PodSetRule&) const = default;

  // podFields, or the template's metadata.labels, metadata.annotations, spec.nodeSelector and
  // spec.tolerations; empty when the pod set has neither.
  PodFieldPaths podFieldPaths() const;
};

// When a job is finished, and whether it succeeded.
struct FinishedRule {
  enum class Type { Condition, Phase };
  Type type = Type::Condition;
  std::string conditionType;                   // Condition: True = succeeded, False = failed
  std::string phasePath;                       // Phase
  std::vector<std::string> succeeded, failed;  // Phase values
  std::string messagePath;                     // Phase: where the Finished message comes from
  bool operator==(const FinishedRule&) const = default;
};

// When a job may still have pods running (Kueue's IsActive): while it does, an evicted or
// deactivated job's Workload keeps its quota reservation (the job is stopped at once). The
// podsReady rule takes the same shapes, its `running` values then meaning "started".
struct ActiveRule {
  enum class Type { Condition, Phase, Pods };
  Type type = Type::Condition;
  // Condition: the condition of this type has this status, and its reason is none of these
  // (Tekton's Succeeded Unknown, except PipelineRunPending: a pending run has no pods).
  std::string conditionType;
  std::string conditionStatus = "True";
  std::vector<std::string> exceptReasons;
  // Phase: the dotted path of the phase field. Pods: the dotted path, within each item, of its
  // state field.
  std::string path;
  std::vector<std::string> running;  // Phase, Pods: the values that count as running
  // Pods: a JSON pointer to a list or a map of items (a map's values are its items: Argo's
  // status.nodes is keyed by node id), and an optional item field (dotted path) == value.
  std::string items;
  std::optional<FieldValue> filter;
  // Condition: when set, the condition's reason is one of these (Tekton's Succeeded Unknown with
  // reason Running: the run's TaskRuns have started).
  std::vector<std::string> reasons;
  bool operator==(const ActiveRule&) const = default;
};

// Where a kind's pod sets come from: the rules, or what a built-in profile computes.
enum class PodSetsFrom {
  Rules,
  ArgoTemplates,      // one pod set: the element-wise maximum over the Workflow's pod templates
  TektonAnnotations,  // one pod set as tekton-kueue builds it from its annotations
};

// The objects a job's controller creates to run its pods, each carrying the pod template they
// run with (Tekton's TaskRuns, spec.podTemplate, which the PipelineRun's
// spec.taskRunTemplate.podTemplate only seeds). Where a job's own fields cannot take an
// admission's node selector and tolerations (PodFieldPaths::specImmutable), the start writes
// them into the job's metadata as the annotation kChildPlacementAnnotation, which the job's
// controller copies to each child (Tekton: a run's annotations to its TaskRuns), and the
// /mutate-children webhook gives them to each child as it is created, from that annotation alone.
struct ChildRule {
  api::GroupVersionKind gvk;
  std::string resource;      // its plural, for the webhook's rule ("taskruns")
  std::string nodeSelector;  // dotted paths in the child; "" = not given
  std::string tolerations;
  bool operator==(const ChildRule&) const = default;
};

// The admission's node selector and tolerations for a job's children, as JSON
// ({"nodeSelector": {...}, "tolerations": [...]}, each only when the admission adds some).
inline constexpr std::string_view kChildPlacementAnnotation = "multikueue-adapter.dev/pod-placement";

struct IntegratedFramework {
  std::string name;  // as written, "Workflow.v1alpha1.argoproj.io"
  api::GroupVersionKind gvk;
  std::optional<FieldValue> suspend;
  std::optional<FieldValue> stop;  // absent: stop as suspend
  std::vector<PodSetRule> podSets;
  PodSetsFrom podSetsFrom = PodSetsFrom::Rules;
  std::optional<FinishedRule> finished;
  std::optional<ActiveRule> active;  // absent: active while neither suspended, stopped nor finished
  bool profile = false;              // a built-in profile gave the defaults the rules override
  // integrations.labelKeysToCopy (Kueue's setting of that name): the job's labels a new
  // Workload carries too. The same list for every kind.
  std::vector<std::string> labelKeysToCopy;
  // integrations.objectRetentionPolicies.workloads.afterDeactivatedByKueue (Kueue's setting of
  // that name): how long a job whose Workload Kueue deactivated (requeuing limit, maximum
  // execution time) is kept before it is deleted; unset: kept.
  std::optional<Duration> deleteAfterDeactivatedByKueue;
  // integrations.managedJobsNamespaceSelector (Kueue's managedJobsNamespaceSelector): jobs in
  // namespaces it does not select are left alone, queue name or not. The same for every kind.
  LabelSelector namespaceSelector;
  std::string resource;  // as ExternalFramework::resource
  // When the job's pods have started (Kueue's PodsReady for the kind), in the active rule's
  // shapes; a finished job counts as started too. Absent: the kind cannot be integrated while
  // waitForPodsReady is on.
  std::optional<ActiveRule> podsReady;
  // waitForPodsReady.enable (Kueue's setting of that name, which Kueue's Configuration and the
  // AdapterConfiguration both hold): the integration keeps each Workload's PodsReady condition,
  // which Kueue's workload controller times out. The same for every kind.
  bool waitForPodsReady = false;
  // The children that take the admission's node selector and tolerations in the job's place;
  // from the built-in profile only (Tekton's TaskRuns). Unset: the job's fields take them.
  std::optional<ChildRule> children;

  const FieldValue& stopRule() const { return stop ? *stop : *suspend; }
  bool operator==(const IntegratedFramework&) const = default;
};

struct Integrations {
  std::vector<IntegratedFramework> frameworks;
  const IntegratedFramework* find(const api::GroupVersionKind& gvk) const;
};

// The built-in integration profiles (SPEC §7.1): Workflow.*.argoproj.io and
// PipelineRun.*.tekton.dev (tekton-kueue compatible); nullopt for any other kind.
std::optional<IntegratedFramework> integrationProfile(const api::GroupVersionKind& gvk);
// The group and Kind of each built-in profile, for suggestions ("pipelinerun" -> "PipelineRun").
const std::vector<std::pair<std::string, std::string>>& integrationProfileKinds();

// placement (AdapterConfiguration only; Kueue's Configuration has no such key): the built-in
// OCM placement admission check controller (docs/placement.md), off unless enabled.
struct Placement {
  bool enabled = false;
  bool operator==(const Placement&) const = default;
};

struct Configuration {
  enum class Source { Defaults, AdapterConfiguration, KueueConfiguration };
  Source source = Source::Defaults;

  std::string namespace_ = "kueue-system";
  WebhookSettings webhook;
  std::string healthProbeBindAddress = ":8081";
  std::string metricsBindAddress = ":8080";
  // /metrics over HTTPS, each request's bearer token checked by TokenReview and its access to
  // /metrics by SubjectAccessReview, as controller-runtime's secure metrics serving does.
  bool metricsSecure = false;
  // tls.crt and tls.key for secure metrics; "" = a self-signed certificate made at start.
  std::string metricsCertDir;
  LeaderElection leaderElection;
  ClientConnection clientConnection;
  ManagedByDefaulting managedByDefaulting = ManagedByDefaulting::MultiKueueQueues;
  Dispatch dispatch;
  MultiKueue multiKueue;
  Integrations integrations;  // AdapterConfiguration only
  Placement placement;        // AdapterConfiguration only

  // The configured framework for an object's kind, or nullptr.
  const ExternalFramework* findFramework(const api::GroupVersionKind& gvk) const;
  // The resource (plural) of `gvk` for rendering: a framework's `resource` (either list),
  // else kube-apiserver's guess.
  std::string resourceOf(const api::GroupVersionKind& gvk) const;
  // AdmissionCheck controller names that mean "this queue is dispatched by MultiKueue":
  // ours and Kueue's own.
  std::vector<std::string> multiKueueControllerNames() const;
};

// The managedBy location of the built-in profiles (SPEC §3), or nullopt when `gvk` matches
// none: PipelineRun.*.tekton.dev -> spec.managedBy;
// Workflow.*.argoproj.io -> label workflows.argoproj.io/controller-instanceid=multikueue.
std::optional<ManagedByLocation> builtinProfile(const api::GroupVersionKind& gvk);
// The fields the built-in profile of `gvk` removes from a worker's copy: a field that deletes
// the finished copy before its final status reaches the manager (Argo's spec.ttlStrategy) would
// have the job dispatched again.
std::vector<std::string> builtinRemoteCopyRemovals(const api::GroupVersionKind& gvk);
// Where the built-in profile of `gvk` finds the objects a job needs on a worker (a PipelineRun's
// workspaces and service accounts, a Workflow's service account, pull secrets and volumes).
std::vector<DependencyPath> builtinDependencies(const api::GroupVersionKind& gvk);

}  // namespace mka::config
