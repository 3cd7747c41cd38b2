#include "mka/placement/workload_check_reconciler.h"

#include <vector>

#include "mka/api/kinds.h"
#include "mka/api/kueue.h"
#include "mka/api/views.h"
#include "mka/api/workload_status.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/controller/status_update.h"
#include "mka/placement/api.h"
#include "mka/placement/placement_check_reconciler.h"

namespace mka::placement {

using controller::Result;

using controller::Result;
using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> workloadLogger() {
  static const auto log = namedLogger("placement-workload");
  return log;
}

bool activeCheck(const json& check) {
  const auto* active = api::findCondition(check, api::condition::kActive);
  return active != nullptr && active->value("status", "") == "True";
}

}  // namespace

WorkloadCheckReconciler::WorkloadCheckReconciler(kube::Client& manager, const controller::ObjectReader& objects,
                                                 const Clock& clock)
    : manager_(manager), objects_(objects), clock_(clock) {}

Result WorkloadCheckReconciler::reconcile(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return Result::done();
  const auto workload = objects_.get(api::kWorkloadGvk, key.substr(0, slash), key.substr(slash + 1));
  if (!workload || api::isTerminating(*workload) || api::isFinished(*workload) || !api::hasQuotaReservation(*workload))
    return Result::done();

  // Our checks that are Pending on this Workload and Active, with the message each gets.
  std::vector<std::pair<std::string, std::string>> ready;
  for (const auto& state : api::WorkloadView(*workload).admissionChecks()) {
    if (json_fields::stringView(state, "state") != api::check_state::kPending) continue;
    const std::string name(json_fields::stringView(state, "name"));
    const auto check = objects_.get(api::kAdmissionCheckGvk, "", name);
    if (!check || !isPlacementCheck(*check) || !activeCheck(*check)) continue;
    ready.emplace_back(name, std::string(kWorkloadReadyPrefix) + placementOf(*check).name);
  }
  if (ready.empty()) return Result::done();

  const auto written = controller::updateStatus(manager_, *workload, [&](json& wl) {
    bool changed = false;
    for (const auto& [name, message] : ready) {
      const auto* state = api::findCheckState(wl, name);
      if (state == nullptr || state->value("state", "") != api::check_state::kPending) continue;
      changed = api::setCheckState(wl, name, api::check_state::kReady, message, clock_.now()) || changed;
    }
    return changed;
  });
  if (written)
    for (const auto& [name, message] : ready)
      log::info(*workloadLogger(), "placement check Ready", {{"workload", key}, {"admissionCheck", name}});
  return Result::done();
}

}  // namespace mka::placement
