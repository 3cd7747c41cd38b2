#include "mka/multikueue/api.h"

namespace mka::multikueue {

const api::GroupVersionKind kEventGvk{"", "v1", "Event"};
const api::GroupVersionKind kSecretGvk{"", "v1", "Secret"};
const api::GroupVersionKind kClusterProfileGvk{"multicluster.x-k8s.io", "v1alpha1", "ClusterProfile"};

}  // namespace mka::multikueue
