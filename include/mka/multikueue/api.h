#pragma once
// Kueue's MultiKueue protocol strings (KUEUE-MULTIKUEUE.md §1.3, §1.4): label and annotation
// keys, condition types, reasons and field managers. Users, Kueue and the workers read them,
// so they are part of the contract; every use goes through these names.

#include <chrono>
#include <string_view>

#include "mka/config/configuration.h"
#include "mka/kube/gvk.h"

namespace mka::multikueue {

// The AdmissionCheck controller name of Kueue's MultiKueue, also the managedBy value on manager
// jobs and the SSA field owner of MultiKueue's admission-check state patches.
inline constexpr std::string_view kControllerName = config::kMultiKueueControllerName;

// Labels and annotations.
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kOriginLabel = "kueue.x-k8s.io/multikueue-origin";
// The same key serves as a label and as an annotation (Kueue >= 0.18 writes the annotation).
inline constexpr std::string_view kPrebuiltWorkloadNameKey = "kueue.x-k8s.io/prebuilt-workload-name";
inline constexpr std::string_view kJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr std::string_view kResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use";
inline constexpr std::string_view kPreemptionGate = "kueue.x-k8s.io/multikueue";
inline constexpr std::string_view kKubeconfigSecretKey = "kubeconfig";
inline constexpr std::string_view kKubeconfigPathPrefix = "/etc/multikueue/kubeconfigs";

// Field manager of admission-related Workload status writes (server-side apply).
inline constexpr std::string_view kAdmissionFieldManager = "kueue-admission";

// Label values are at most 63 characters (validation.LabelValue).
inline constexpr std::size_t kMaxLabelValueLength = 63;

// Workload condition types.
namespace condition {
inline constexpr std::string_view kQuotaReserved = "QuotaReserved";
inline constexpr std::string_view kAdmitted = "Admitted";
inline constexpr std::string_view kEvicted = "Evicted";
inline constexpr std::string_view kFinished = "Finished";
inline constexpr std::string_view kDeactivationTarget = "DeactivationTarget";
inline constexpr std::string_view kActive = "Active";
}  // namespace condition

// AdmissionCheck states of a Workload's status.admissionChecks[].
namespace check_state {
inline constexpr std::string_view kPending = "Pending";
inline constexpr std::string_view kReady = "Ready";
inline constexpr std::string_view kRetry = "Retry";
inline constexpr std::string_view kRejected = "Rejected";
}  // namespace check_state


// ---- Workload reconciler (KUEUE-MULTIKUEUE.md §2) ----

// Kinds on the manager and the workers (kueue.x-k8s.io/v1beta2, the storage version).
inline const kube::GroupVersionKind kWorkloadGvk{"kueue.x-k8s.io", "v1beta2", "Workload"};
inline const kube::GroupVersionKind kAdmissionCheckGvk{"kueue.x-k8s.io", "v1beta2", "AdmissionCheck"};
inline const kube::GroupVersionKind kMultiKueueConfigGvk{"kueue.x-k8s.io", "v1beta2", "MultiKueueConfig"};
inline const kube::GroupVersionKind kMultiKueueClusterGvk{"kueue.x-k8s.io", "v1beta2", "MultiKueueCluster"};
inline const kube::GroupVersionKind kEventGvk{"", "v1", "Event"};
// Kubeconfig Secrets of MultiKueueClusters (§3.1), on the manager.
inline const kube::GroupVersionKind kSecretGvk{"", "v1", "Secret"};

// Multi-owner workloads name their adapter in annotations, read before ownerReferences (§2.2).
inline constexpr std::string_view kJobOwnerGvkAnnotation = "kueue.x-k8s.io/job-owner-gvk";
inline constexpr std::string_view kJobOwnerNameAnnotation = "kueue.x-k8s.io/job-owner-name";

// Remote Workload condition reasons.
inline constexpr std::string_view kReasonOutOfSync = "OutOfSync";
inline constexpr std::string_view kReasonEvictedOnManagerCluster = "EvictedOnManagerCluster";

// Workload events written by MultiKueue: reason and action.
inline constexpr std::string_view kEventReason = "MultiKueue";

// Admission check messages (§2.8). The `, Previously: "<old>"` suffix is added by
// checkMessageWithPrevious() for the transitions Kueue writes through its helper.
namespace message {
inline constexpr std::string_view kNoAdapter = "No multikueue adapter found";
// + ` for owner kind "<gvk string>"`
inline constexpr std::string_view kNoAdapterForKindPrefix = "No multikueue adapter found for owner kind ";
inline constexpr std::string_view kOwnerNotManagedPrefix = "The owner is not managed by Kueue: ";
inline constexpr std::string_view kAdmittingRemoteLost = "Admitting remote lost";
inline constexpr std::string_view kAdmittingRemoteGone = "Admitting remote no longer exists";
inline constexpr std::string_view kReadyWithoutCluster =
    "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it";
inline constexpr std::string_view kNoMoreWorkers = "no more workers to nominate";
}  // namespace message

// Timings Kueue hard-codes (§6).
inline constexpr std::chrono::seconds kSyncDeferredRequeue{2};
inline constexpr std::chrono::minutes kIncrementalRoundTimeout{5};
inline constexpr int kIncrementalStepSize = 3;
// Condition and admission-check messages are cut to 32 KiB, the last 4 bytes becoming " ...".
inline constexpr std::size_t kMaxConditionMessage = 32 * 1024;

// ---- Cluster connection and AdmissionCheck status (§1.4, §3, §4) --------------------------
// Used by the cluster registry and the AdmissionCheck reconciler.

inline constexpr std::string_view kKueueGroup = "kueue.x-k8s.io";

// MultiKueueCluster spec.clusterSource.kubeConfig.locationType.
inline constexpr std::string_view kLocationTypeSecret = "Secret";
inline constexpr std::string_view kLocationTypePath = "Path";

// MultiKueueCluster `Active` condition: reasons and messages.
namespace cluster_reason {
inline constexpr std::string_view kActive = "Active";
inline constexpr std::string_view kBadKubeConfig = "BadKubeConfig";
inline constexpr std::string_view kInsecureKubeConfig = "InsecureKubeConfig";
inline constexpr std::string_view kBadClusterProfile = "BadClusterProfile";
inline constexpr std::string_view kBadRestConfig = "BadRestConfig";
inline constexpr std::string_view kClusterProfileFeatureDisabled = "MultiKueueClusterProfileFeatureDisabled";
inline constexpr std::string_view kClientConnectionFailed = "ClientConnectionFailed";
}  // namespace cluster_reason
inline constexpr std::string_view kClusterConnectedMessage = "Connected";
inline constexpr std::string_view kLoadClientConfigFailedPrefix = "load client config failed: ";
inline constexpr std::string_view kClusterProfileDisabledMessage = "MultiKueueClusterProfile feature gate is disabled";
inline constexpr std::string_view kWatchEstablishmentTimedOut = "watch establishment timed out";
// The source (component) of Events about MultiKueueClusters, as Kueue names its recorder.
inline constexpr std::string_view kClusterEventComponent = "multikueue-cluster";

// AdmissionCheck `Active` condition: reasons and messages.
namespace check_reason {
inline constexpr std::string_view kActive = "Active";
inline constexpr std::string_view kBadConfig = "BadConfig";
inline constexpr std::string_view kSomeActiveClusters = "SomeActiveClusters";
inline constexpr std::string_view kNoUsableClusters = "NoUsableClusters";
}  // namespace check_reason
inline constexpr std::string_view kCheckActiveMessage = "The admission check is active";
inline constexpr std::string_view kCannotLoadParametersPrefix = "Cannot load the AdmissionChecks parameters: ";
inline constexpr std::string_view kMissingClustersPrefix = "Missing clusters: ";
inline constexpr std::string_view kInactiveClustersPrefix = "Inactive clusters: ";
// AdmissionCheck spec.parameters errors.
inline constexpr std::string_view kMultiKueueConfigKind = "MultiKueueConfig";
inline constexpr std::string_view kMissingParametersReference = "missing parameters reference";
inline constexpr std::string_view kBadParametersReference = "bad parameters reference";


}  // namespace mka::multikueue
