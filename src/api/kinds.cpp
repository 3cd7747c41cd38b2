// One translation unit constructs these at start-up, instead of each of the dozens that would
// include an inline definition.
#include "mka/api/kinds.h"

#include <string>

namespace mka::api {

const GroupVersionKind kEventGvk{"", "v1", "Event"};
const GroupVersionKind kSecretGvk{"", "v1", "Secret"};
const GroupVersionKind kConfigMapGvk{"", "v1", "ConfigMap"};
const GroupVersionKind kNamespaceGvk{"", "v1", "Namespace"};
const GroupVersionKind kServiceAccountGvk{"", "v1", "ServiceAccount"};
const GroupVersionKind kPriorityClassGvk{"scheduling.k8s.io", "v1", "PriorityClass"};
const GroupVersionKind kLeaseGvk{"coordination.k8s.io", "v1", "Lease"};
const GroupVersionKind kClusterRoleGvk{std::string(kRbacGroup), "v1", "ClusterRole"};
const GroupVersionKind kClusterRoleBindingGvk{std::string(kRbacGroup), "v1", "ClusterRoleBinding"};
const GroupVersionKind kClusterProfileGvk{"multicluster.x-k8s.io", "v1alpha1", "ClusterProfile"};
const GroupVersionKind kPlacementGvk{std::string(kOcmClusterGroup), "v1beta1", std::string(kPlacementKind)};
const GroupVersionKind kPlacementDecisionGvk{std::string(kOcmClusterGroup), "v1beta1", "PlacementDecision"};

}  // namespace mka::api
