#include "conditions.h"

#include "mka/common/clock.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/workload_status.h"

namespace mka::multikueue {

using nlohmann::json;

bool setCondition(json& object, const Condition& condition, Clock::TimePoint now) {
  // Kueue rewrites a condition only when status, reason or message change (§1.4).
  if (const auto* existing = findCondition(object, condition.type);
      existing && existing->value("status", "") == condition.status &&
      existing->value("reason", "") == condition.reason && existing->value("message", "") == condition.message) {
    return false;
  }
  return setCondition(object, condition.type, condition.status == "True", condition.reason, condition.message, now);
}

std::string apiErrorMessage(const kube::ApiError& error) {
  const auto& status = error.status();
  if (status.is_object() && status.contains("message") && status["message"].is_string())
    return status["message"].get<std::string>();
  return error.what();
}

bool writeCondition(kube::Client& client, const kube::GroupVersionKind& gvk, const std::string& name,
                    const json& current, const Condition& condition, const Clock& clock) {
  bool first = true;
  try {
    return kube::retryOnConflict([&] {
      json object = first ? current : client.get(gvk, "", name);
      first = false;
      if (!setCondition(object, condition, clock.now())) return false;
      client.update(object, {.subresource = "status", .answer = kube::WriteOptions::Answer::None});
      return true;
    });
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return false;
    throw;
  }
}

}  // namespace mka::multikueue
