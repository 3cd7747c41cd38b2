#pragma once
// MultiKueue's own protocol strings (KUEUE-MULTIKUEUE.md §1.3, §1.4): reasons, messages,
// field managers and timings; Kueue's API names are in mka/api/kueue.h. Users, Kueue and the
// workers read them, so they are part of the contract; every use goes through these names.

#include <chrono>
#include <cstddef>
#include <string_view>

#include "mka/api/kueue.h"

namespace mka::multikueue {

// The AdmissionCheck controller name of Kueue's MultiKueue, also the managedBy value on manager
// jobs and the SSA field owner of MultiKueue's admission-check state patches.
inline constexpr std::string_view kControllerName = api::kMultiKueueControllerName;

inline constexpr std::string_view kKubeconfigSecretKey = "kubeconfig";
inline constexpr std::string_view kKubeconfigPathPrefix = "/etc/multikueue/kubeconfigs";
// Field manager of admission-related Workload status writes (server-side apply).
inline constexpr std::string_view kAdmissionFieldManager = "kueue-admission";

// ---- Workload reconciler (KUEUE-MULTIKUEUE.md §2) ----

// Remote Workload condition reasons.
inline constexpr std::string_view kReasonOutOfSync = "OutOfSync";
// The worker's job went away under its Workload (deleted there, or a race in its controllers):
// not the job's end (kueue#14997).
inline constexpr std::string_view kReasonOwnerNotFound = "OwnerNotFound";
inline constexpr std::string_view kReasonEvictedOnManagerCluster = "EvictedOnManagerCluster";

// Workload events written by MultiKueue: reason and action.
inline constexpr std::string_view kEventReason = "MultiKueue";
// On the manager's job: no worker can get a copy of it (a remoteCopy patch fails on it).
inline constexpr std::string_view kEventRemoteCopyFailed = "RemoteCopyFailed";
// On the manager's job: a Secret, ConfigMap or ServiceAccount it names is not on the manager;
// no worker gets a copy until it is there.
inline constexpr std::string_view kEventDependencyMissing = "DependencyMissing";
// On the manager's job: one it names is not copied (a service-account token, over 1 MiB, in
// another namespace), or the worker holds its own of that name, used as it is.
inline constexpr std::string_view kEventDependencyNotCopied = "DependencyNotCopied";
// On the manager's Workload: a worker lacks the job's namespace, so it is skipped until it has it.
inline constexpr std::string_view kEventNamespaceMissing = "NamespaceMissingOnWorker";

// On a worker's copy of a dependency (with our origin label): the manager's Workloads in its
// namespace whose jobs name it there, comma-separated and sorted. The copy is deleted when none
// of them has a copy on that worker any longer; restart-safe, as it is read from the worker.
inline constexpr std::string_view kDependencyOwnersAnnotation = "multikueue-adapter.dev/dependency-of";
// A dependency larger than this (its JSON) is never copied: the API server's own object limit.
inline constexpr std::size_t kMaxDependencyBytes = 1024 * 1024;

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
// The quota-aware dispatcher's (ours): + ": <worker>: <why>; ..."
inline constexpr std::string_view kNoWorkerCanHold = "No worker can hold this workload";
// + "<nominees>; <worker>: <why>; ..."
inline constexpr std::string_view kWaitingForRoom = "No worker has room now; queued on ";
}  // namespace message

// Ours: how soon a job held by a Secret, ConfigMap or ServiceAccount missing on the manager
// looks again (syncDependencies).
inline constexpr std::chrono::seconds kDependencyRecheck{30};

// Timings Kueue hard-codes (§6).
inline constexpr std::chrono::seconds kSyncDeferredRequeue{2};
inline constexpr std::chrono::minutes kIncrementalRoundTimeout{5};
inline constexpr int kIncrementalStepSize = 3;
// Orchestrated preemption: after a gate opens, no other copy's gate opens for this long.
inline constexpr std::chrono::minutes kSingleClusterPreemptionTimeout{5};

// ---- Cluster connection and AdmissionCheck status (§1.4, §3, §4) --------------------------
// Used by the cluster registry and the AdmissionCheck reconciler.

// MultiKueueCluster `Active` condition: reasons and messages.
namespace cluster_reason {
inline constexpr std::string_view kActive = "Active";
inline constexpr std::string_view kBadKubeConfig = "BadKubeConfig";
inline constexpr std::string_view kInsecureKubeConfig = "InsecureKubeConfig";
inline constexpr std::string_view kBadClusterProfile = "BadClusterProfile";
inline constexpr std::string_view kBadRestConfig = "BadRestConfig";
inline constexpr std::string_view kClientConnectionFailed = "ClientConnectionFailed";
// Events on a MultiKueueCluster about the configured kinds its worker serves (ours).
inline constexpr std::string_view kKindsNotServed = "KindsNotServed";
inline constexpr std::string_view kKindsServed = "KindsServed";
}  // namespace cluster_reason
inline constexpr std::string_view kClusterConnectedMessage = "Connected";
inline constexpr std::string_view kLoadClientConfigFailedPrefix = "load client config failed: ";
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
