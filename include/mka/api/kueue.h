#pragma once
// Kueue's API as users, Kueue and the workers read it (KUEUE-MULTIKUEUE.md §1.3): the Kueue
// kinds, label and annotation keys, condition types and admission-check states. The webhook,
// the configuration and the dispatch loop all name them through this header.

#include <cstddef>
#include <string_view>

#include "mka/api/gvk.h"

namespace mka::api {

inline constexpr std::string_view kKueueGroup = "kueue.x-k8s.io";

// The AdmissionCheck controller name of Kueue's MultiKueue; also the managedBy value Kueue's
// MultiKueue expects on a manager's job (path locations).
inline constexpr std::string_view kMultiKueueControllerName = "kueue.x-k8s.io/multikueue";

// Labels and annotations.
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
// A LocalQueue of this name queues the namespace's jobs that name none (Kueue's
// LocalQueueDefaulting).
inline constexpr std::string_view kDefaultLocalQueue = "default";
inline constexpr std::string_view kOriginLabel = "kueue.x-k8s.io/multikueue-origin";
// The origin label's value when multiKueue.origin is not set (Kueue's default).
inline constexpr std::string_view kDefaultOrigin = "multikueue";
// The same key serves as a label and as an annotation (Kueue >= 0.18 writes the annotation).
inline constexpr std::string_view kPrebuiltWorkloadNameKey = "kueue.x-k8s.io/prebuilt-workload-name";
inline constexpr std::string_view kJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr std::string_view kResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use";
inline constexpr std::string_view kPreemptionGate = "kueue.x-k8s.io/multikueue";
inline constexpr std::string_view kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr std::string_view kMaxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds";
// What Kueue's jobframework writes on a started job's pod templates (KUEUE-JOBFRAMEWORK.md §1.2).
inline constexpr std::string_view kPodSetLabel = "kueue.x-k8s.io/podset";
inline constexpr std::string_view kLocalQueueNameLabel = "kueue.x-k8s.io/local-queue-name";
inline constexpr std::string_view kClusterQueueNameLabel = "kueue.x-k8s.io/cluster-queue-name";
inline constexpr std::string_view kWorkerWorkloadPodLabel = "kueue.x-k8s.io/multikueue-worker-workload-pod";
inline constexpr std::string_view kWorkloadAnnotation = "kueue.x-k8s.io/workload";

// Label values are at most 63 characters (validation.LabelValue).
inline constexpr std::size_t kMaxLabelValueLength = 63;
// A Workload holds at most this many pod sets (its CRD's spec.podSets maxItems).
inline constexpr std::size_t kMaxPodSets = 18;

// Workload condition types.
namespace condition {
inline constexpr std::string_view kQuotaReserved = "QuotaReserved";
inline constexpr std::string_view kAdmitted = "Admitted";
inline constexpr std::string_view kEvicted = "Evicted";
inline constexpr std::string_view kFinished = "Finished";
inline constexpr std::string_view kDeactivationTarget = "DeactivationTarget";
inline constexpr std::string_view kActive = "Active";
inline constexpr std::string_view kRequeued = "Requeued";
// True on a Workload that needs to preempt and whose preemption gates are not all open.
inline constexpr std::string_view kBlockedOnPreemptionGates = "BlockedOnPreemptionGates";
// Written by a job integration while waitForPodsReady is on (KUEUE-JOBFRAMEWORK.md §1.3).
inline constexpr std::string_view kPodsReady = "PodsReady";
}  // namespace condition

// The PodsReady condition's reasons and messages (Kueue's jobframework).
namespace pods_ready {
inline constexpr std::string_view kWaitForStart = "WaitForStart";
inline constexpr std::string_view kStarted = "Started";
inline constexpr std::string_view kWaitForRecovery = "WaitForRecovery";
inline constexpr std::string_view kRecovered = "Recovered";
inline constexpr std::string_view kNotReadyMessage = "Not all pods are ready or succeeded";
inline constexpr std::string_view kWaitingForRecoveryMessage = "At least one pod has failed, waiting for recovery";
inline constexpr std::string_view kReadyMessage = "All pods reached readiness and the workload is running";
}  // namespace pods_ready

// status.preemptionGates[].position.
inline constexpr std::string_view kGateOpen = "Open";

// Reasons of a Workload's Evicted condition that the job integration tells apart.
namespace evicted_reason {
inline constexpr std::string_view kPreempted = "Preempted";
inline constexpr std::string_view kNodeFailures = "NodeFailures";
// Kueue's deactivation reasons: DeactivatedDueToAdmissionCheck, ...RequeuingLimitExceeded, ...
inline constexpr std::string_view kDeactivatedPrefix = "DeactivatedDueTo";
// An admission check in Retry (MultiKueue's: the worker evicted its copy, or was lost), and one
// Rejected.
inline constexpr std::string_view kAdmissionCheck = "AdmissionCheck";
inline constexpr std::string_view kDeactivatedDueToAdmissionCheck = "DeactivatedDueToAdmissionCheck";
}  // namespace evicted_reason

// AdmissionCheck states of a Workload's status.admissionChecks[].
namespace check_state {
inline constexpr std::string_view kPending = "Pending";
inline constexpr std::string_view kReady = "Ready";
inline constexpr std::string_view kRetry = "Retry";
inline constexpr std::string_view kRejected = "Rejected";
}  // namespace check_state

// Kueue kinds (kueue.x-k8s.io/v1beta2, the storage version). Defined in src/api/kueue.cpp rather
// than inline here, so that one translation unit constructs them at start-up instead of each of
// the dozens that include this header.
extern const api::GroupVersionKind kWorkloadGvk;
extern const api::GroupVersionKind kAdmissionCheckGvk;
extern const api::GroupVersionKind kMultiKueueConfigGvk;
extern const api::GroupVersionKind kMultiKueueClusterGvk;
extern const api::GroupVersionKind kResourceFlavorGvk;
extern const api::GroupVersionKind kClusterQueueGvk;
extern const api::GroupVersionKind kLocalQueueGvk;
extern const api::GroupVersionKind kWorkloadPriorityClassGvk;

// MultiKueueCluster spec.clusterSource.kubeConfig.locationType.
inline constexpr std::string_view kLocationTypeSecret = "Secret";
inline constexpr std::string_view kLocationTypePath = "Path";

// Multi-owner workloads name their adapter in annotations, read before ownerReferences (§2.2).
inline constexpr std::string_view kJobOwnerGvkAnnotation = "kueue.x-k8s.io/job-owner-gvk";
inline constexpr std::string_view kJobOwnerNameAnnotation = "kueue.x-k8s.io/job-owner-name";

}  // namespace mka::api
