#include "mka/api/conditions.h"

#include "mka/common/json_fields.h"

namespace mka::api {

using nlohmann::json;

const json* findCondition(const json& object, std::string_view type) {
  return json_fields::findInStatusList(object, "conditions", "type", type);
}

bool conditionIsTrue(const json& object, std::string_view type) {
  const auto* c = findCondition(object, type);
  return c != nullptr && c->value("status", "") == "True";
}

bool setCondition(json& object, std::string_view type, bool status, std::string_view reason, std::string_view message,
                  Clock::TimePoint now) {
  auto& conditions = json_fields::statusList(object, "conditions");
  const std::string statusText = status ? "True" : "False";
  const auto text = truncateMessage(message, kMaxConditionMessage);
  json* existing = nullptr;
  for (auto& c : conditions)
    if (c.is_object() && c.value("type", "") == type) existing = &c;
  const auto generation = json_fields::objectMember(object, "metadata").value("generation", 0);
  if (existing == nullptr) {
    conditions.push_back({{"type", type},
                          {"status", statusText},
                          {"reason", reason},
                          {"message", text},
                          {"lastTransitionTime", toRfc3339(now)},
                          {"observedGeneration", generation}});
    return true;
  }
  bool changed = false;
  auto assign = [&](const char* field, const json& value) {
    if (!existing->contains(field) || (*existing)[field] != value) {
      (*existing)[field] = value;
      changed = true;
    }
  };
  if (existing->value("status", "") != statusText) {
    (*existing)["lastTransitionTime"] = toRfc3339(now);
    changed = true;
  }
  assign("status", statusText);
  assign("reason", reason);
  assign("message", text);
  assign("observedGeneration", generation);
  return changed;
}

Clock::TimePoint transitionTime(const json& condition) {
  if (const auto t = parseRfc3339(condition.value("lastTransitionTime", ""))) return *t;
  return Clock::TimePoint{};
}

bool setCondition(json& object, const Condition& condition, Clock::TimePoint now) {
  // Kueue rewrites a condition only when status, reason or message change (§1.4).
  if (const auto* existing = findCondition(object, condition.type);
      existing && existing->value("status", "") == condition.status &&
      existing->value("reason", "") == condition.reason && existing->value("message", "") == condition.message) {
    return false;
  }
  return setCondition(object, condition.type, condition.status == "True", condition.reason, condition.message, now);
}

bool isTerminating(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return false;
  const auto ts = meta->find("deletionTimestamp");
  return ts != meta->end() && !ts->is_null();
}

std::string truncateMessage(std::string_view message, std::size_t limit) {
  if (message.size() <= limit) return std::string(message);
  return std::string(message.substr(0, limit - 4)) + " ...";
}

}  // namespace mka::api
