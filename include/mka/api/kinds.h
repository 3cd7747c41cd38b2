#pragma once
// The Kubernetes kinds outside Kueue's that the product reads or writes: core, scheduling,
// coordination and RBAC kinds, the cluster inventory's ClusterProfile and Open Cluster
// Management's Placement API. Kueue's own kinds are in mka/api/kueue.h. Defined in
// src/api/kinds.cpp, for the reason given there.

#include <string_view>

#include "mka/api/gvk.h"

namespace mka::api {

extern const GroupVersionKind kEventGvk;
extern const GroupVersionKind kSecretGvk;
extern const GroupVersionKind kConfigMapGvk;
extern const GroupVersionKind kNamespaceGvk;
extern const GroupVersionKind kServiceAccountGvk;
extern const GroupVersionKind kPriorityClassGvk;  // scheduling.k8s.io
extern const GroupVersionKind kLeaseGvk;          // coordination.k8s.io
inline constexpr std::string_view kRbacGroup = "rbac.authorization.k8s.io";
extern const GroupVersionKind kClusterRoleGvk;
extern const GroupVersionKind kClusterRoleBindingGvk;

// sigs.k8s.io/cluster-inventory-api.
extern const GroupVersionKind kClusterProfileGvk;

// Open Cluster Management's Placement API.
inline constexpr std::string_view kOcmClusterGroup = "cluster.open-cluster-management.io";
inline constexpr std::string_view kPlacementKind = "Placement";
extern const GroupVersionKind kPlacementGvk;
extern const GroupVersionKind kPlacementDecisionGvk;

}  // namespace mka::api
