#pragma once
// Open Cluster Management's protocol strings as the built-in placement admission check
// controller uses them (docs/placement.md): the check's controller name, the PlacementDecision
// labels (the kinds are in mka/api/kinds.h), the AdmissionCheck `Active` reasons and messages of OCM's
// kueue-addon controller, its finalizer, and the label that marks what this controller
// generated. Every use goes through these names.

#include <string_view>

namespace mka::placement {

// AdmissionCheck spec.controllerName of OCM's placement check (kueue-addon's
// AdmissionCheckControllerName).
inline constexpr std::string_view kControllerName = "open-cluster-management.io/placement";
// On every PlacementDecision: the name of the Placement it belongs to.
inline constexpr std::string_view kPlacementLabel = "cluster.open-cluster-management.io/placement";
inline constexpr std::string_view kDecisionGroupIndexLabel = "cluster.open-cluster-management.io/decision-group-index";
inline constexpr std::string_view kDecisionGroupNameLabel = "cluster.open-cluster-management.io/decision-group-name";

// kueue-addon's cleanup finalizer on the AdmissionCheck: the generated objects go before it.
inline constexpr std::string_view kFinalizer = "kueue-addon.open-cluster-management.io/admissioncheck-cleanup";

// What this controller generated (OCM marks nothing; the label lets it delete only its own
// objects and leave a MultiKueueCluster a user wrote alone). Value: the Placement's name.
inline constexpr std::string_view kGeneratedForLabel = "multikueue-adapter.dev/placement";
// The kubeconfig Secret of a decided cluster when ClusterProfiles are off: multikueue-<cluster>.
inline constexpr std::string_view kSecretPrefix = "multikueue-";

// AdmissionCheck `Active` reasons, as kueue-addon's controller writes them.
namespace reason {
inline constexpr std::string_view kActive = "Active";
inline constexpr std::string_view kPlacementNotFound = "PlacementNotFound";
inline constexpr std::string_view kPlacementError = "PlacementError";
inline constexpr std::string_view kPlacementDecisionError = "PlacementDecisionError";
inline constexpr std::string_view kMultiKueueClusterError = "MultiKueueClusterError";
inline constexpr std::string_view kCleanupError = "CleanupError";
inline constexpr std::string_view kMultiKueueConfigError = "MultiKueueConfigError";
inline constexpr std::string_view kMultiKueueConfigDeleteError = "MultiKueueConfigDeleteError";
inline constexpr std::string_view kNoClustersAvailable = "NoClustersAvailable";
}  // namespace reason

// The Workload admission check message when the placement check turns Ready.
inline constexpr std::string_view kWorkloadReadyPrefix = "The placement's clusters are in MultiKueueConfig ";

}  // namespace mka::placement
