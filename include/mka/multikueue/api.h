#pragma once
// Kueue's MultiKueue protocol strings (KUEUE-MULTIKUEUE.md §1.3, §1.4): label and annotation
// keys, condition types, reasons and field managers. Users, Kueue and the workers read them,
// so they are part of the contract; every use goes through these names.

#include <string_view>

#include "mka/config/configuration.h"

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

}  // namespace mka::multikueue
