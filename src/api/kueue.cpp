#include "mka/api/kueue.h"

namespace mka::api {

const GroupVersionKind kWorkloadGvk{"kueue.x-k8s.io", "v1beta2", "Workload"};
const GroupVersionKind kAdmissionCheckGvk{"kueue.x-k8s.io", "v1beta2", "AdmissionCheck"};
const GroupVersionKind kMultiKueueConfigGvk{"kueue.x-k8s.io", "v1beta2", "MultiKueueConfig"};
const GroupVersionKind kMultiKueueClusterGvk{"kueue.x-k8s.io", "v1beta2", "MultiKueueCluster"};
const GroupVersionKind kResourceFlavorGvk{"kueue.x-k8s.io", "v1beta2", "ResourceFlavor"};
const GroupVersionKind kClusterQueueGvk{"kueue.x-k8s.io", "v1beta2", "ClusterQueue"};
const GroupVersionKind kLocalQueueGvk{"kueue.x-k8s.io", "v1beta2", "LocalQueue"};
const GroupVersionKind kWorkloadPriorityClassGvk{"kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass"};

}  // namespace mka::api
