#include "conditions.h"

#include "mka/common/rfc3339.h"
#include "mka/kube/api_error.h"

namespace mka::multikueue {

using nlohmann::json;

const json* findCondition(const json& object, std::string_view type) {
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return nullptr;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return nullptr;
  for (const auto& c : *conditions)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

bool setCondition(json& object, const Condition& condition, Clock::TimePoint now) {
  if (const auto* existing = findCondition(object, condition.type);
      existing && existing->value("status", "") == condition.status &&
      existing->value("reason", "") == condition.reason && existing->value("message", "") == condition.message) {
    return false;
  }
  if (!object.contains("status") || !object["status"].is_object()) object["status"] = json::object();
  auto& conditions = object["status"]["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  json* slot = nullptr;
  for (auto& c : conditions)
    if (c.is_object() && c.value("type", "") == condition.type) slot = &c;
  if (!slot) {
    conditions.push_back(json{{"type", condition.type}});
    slot = &conditions.back();
  }
  if (slot->value("status", "") != condition.status || !slot->contains("lastTransitionTime"))
    (*slot)["lastTransitionTime"] = formatRfc3339(now);
  (*slot)["status"] = condition.status;
  (*slot)["reason"] = condition.reason;
  (*slot)["message"] = condition.message;
  (*slot)["observedGeneration"] = object.value("metadata", json::object()).value("generation", std::int64_t{0});
  return true;
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
      client.update(object, {.subresource = "status"});
      return true;
    });
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return false;
    throw;
  }
}

}  // namespace mka::multikueue
