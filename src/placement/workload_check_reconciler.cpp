#include "mka/placement/workload_check_reconciler.h"

#include <vector>

#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/conditions.h"
#include "mka/multikueue/workload_status.h"
#include "mka/placement/api.h"
#include "mka/placement/placement_check_reconciler.h"

namespace mka::placement {

using multikueue::Result;
using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> workloadLogger() {
  static const auto log = namedLogger("placement-workload");
  return log;
}

bool activeCheck(const json& check) {
  const auto* active = multikueue::findCondition(check, multikueue::condition::kActive);
  return active != nullptr && active->value("status", "") == "True";
}

}  // namespace

WorkloadCheckReconciler::WorkloadCheckReconciler(kube::Client& manager, const multikueue::ObjectReader& objects,
                                                 const Clock& clock)
    : manager_(manager), objects_(objects), clock_(clock) {}

Result WorkloadCheckReconciler::reconcile(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return Result::done();
  const auto workload = objects_.get(multikueue::kWorkloadGvk, key.substr(0, slash), key.substr(slash + 1));
  if (!workload || multikueue::isTerminating(*workload) || multikueue::isFinished(*workload) ||
      !multikueue::hasQuotaReservation(*workload))
    return Result::done();

  // Our checks that are Pending on this Workload and Active, with the message each gets.
  std::vector<std::pair<std::string, std::string>> ready;
  for (const auto& state :
       json_fields::arrayMember(json_fields::objectMember(*workload, "status"), "admissionChecks")) {
    if (state.value("state", "") != multikueue::check_state::kPending) continue;
    const auto name = state.value("name", "");
    const auto check = objects_.get(multikueue::kAdmissionCheckGvk, "", name);
    if (!check || !isPlacementCheck(*check) || !activeCheck(*check)) continue;
    ready.emplace_back(name, std::string(kWorkloadReadyPrefix) + placementOf(*check).name);
  }
  if (ready.empty()) return Result::done();

  const auto written = multikueue::updateStatus(manager_, *workload, [&](json& wl) {
    bool changed = false;
    for (const auto& [name, message] : ready) {
      const auto* state = multikueue::findCheckState(wl, name);
      if (state == nullptr || state->value("state", "") != multikueue::check_state::kPending) continue;
      changed = multikueue::setCheckState(wl, name, multikueue::check_state::kReady, message, clock_.now()) || changed;
    }
    return changed;
  });
  if (written)
    for (const auto& [name, message] : ready)
      log::info(*workloadLogger(), "placement check Ready", {{"workload", key}, {"admissionCheck", name}});
  return Result::done();
}

}  // namespace mka::placement
