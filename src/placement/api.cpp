#include "mka/placement/api.h"

namespace mka::placement {

const api::GroupVersionKind kPlacementGvk{std::string(kClusterGroup), "v1beta1", std::string(kPlacementKind)};
const api::GroupVersionKind kPlacementDecisionGvk{std::string(kClusterGroup), "v1beta1", "PlacementDecision"};

}  // namespace mka::placement
