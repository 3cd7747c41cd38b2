#pragma once
// Kueue's own job integrations (its Configuration's integrations.frameworks) and which of them
// Kueue's MultiKueue dispatches, for the drop-in mode: there the adapter takes over Kueue's
// MultiKueue admission check controller name (kueue.x-k8s.io/multikueue, Kueue's MultiKueue gate
// off on the manager) and dispatches only the configured kinds, so a job of one of these kinds on
// a MultiKueue ClusterQueue would have its check Rejected ("No multikueue adapter found for owner
// kind ..."), where Kueue would have dispatched it.
//
// Threads: pure functions over a constant table.

#include <string>
#include <string_view>
#include <vector>

#include "mka/config/configuration.h"

namespace mka::config {

// Kueue's integrations.frameworks names whose integration has a MultiKueue adapter (Kueue's
// pkg/controller/jobs/*/..._multikueue_adapter.go), in Kueue's spelling ("batch/job").
const std::vector<std::string_view>& kueueMultiKueueFrameworks();

// Kueue's default when integrations.frameworks is absent or empty.
inline constexpr std::string_view kKueueDefaultFramework = "batch/job";

// The frameworks of `kueueFrameworks` (as listed in Kueue's Configuration; the default when
// empty) that Kueue's MultiKueue dispatches, in their order.
std::vector<std::string> multiKueueDispatchedFrameworks(const std::vector<std::string>& kueueFrameworks);

// True when `configuration` serves Kueue's own MultiKueue controller name (drop-in mode).
bool isDropIn(const Configuration& configuration);

}  // namespace mka::config
