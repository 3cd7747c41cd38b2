#pragma once
// Kueue's label and annotation keys that the webhook reads (KUEUE-MULTIKUEUE.md §1.3), kept in
// one place so that a typo cannot hide in a string literal somewhere else.

#include <string_view>

namespace mka::webhook {

// The LocalQueue a job is submitted to.
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
// Links a job to a prebuilt Workload. Kueue uses the same key as a label and as an annotation.
inline constexpr std::string_view kPrebuiltWorkloadNameKey = "kueue.x-k8s.io/prebuilt-workload-name";

}  // namespace mka::webhook
