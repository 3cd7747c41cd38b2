#include "mka/multikueue/workload_status.h"

#include <algorithm>

#include "mka/common/json_fields.h"
#include "mka/multikueue/api.h"

namespace mka::multikueue {

using nlohmann::json;

namespace {

const json* findIn(const json& list, std::string_view key, std::string_view value) {
  if (!list.is_array()) return nullptr;
  for (const auto& item : list)
    if (item.is_object() && item.value(std::string(key), "") == value) return &item;
  return nullptr;
}

// status.<list>[<key> == value], or nullptr.
const json* findInStatus(const json& object, const char* list, std::string_view key, std::string_view value) {
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return nullptr;
  auto items = status->find(list);
  if (items == status->end()) return nullptr;
  return findIn(*items, key, value);
}

json& arrayAt(json& object, const char* a, const char* b) {
  auto& parent = object[a];
  if (!parent.is_object()) parent = json::object();
  auto& list = parent[b];
  if (!list.is_array()) list = json::array();
  return list;
}

}  // namespace

const json* findCondition(const json& object, std::string_view type) {
  return findInStatus(object, "conditions", "type", type);
}

bool conditionIsTrue(const json& object, std::string_view type) {
  const auto* c = findCondition(object, type);
  return c != nullptr && c->value("status", "") == "True";
}

bool setCondition(json& object, std::string_view type, bool status, std::string_view reason, std::string_view message,
                  Clock::TimePoint now) {
  auto& conditions = arrayAt(object, "status", "conditions");
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

bool isFinished(const json& workload) { return conditionIsTrue(workload, condition::kFinished); }
bool hasQuotaReservation(const json& workload) { return conditionIsTrue(workload, condition::kQuotaReserved); }
bool isAdmitted(const json& workload) { return conditionIsTrue(workload, condition::kAdmitted); }
bool isEvicted(const json& workload) { return conditionIsTrue(workload, condition::kEvicted); }

bool isTerminating(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return false;
  const auto ts = meta->find("deletionTimestamp");
  return ts != meta->end() && !ts->is_null();
}

const json* findCheckState(const json& workload, std::string_view check) {
  return findInStatus(workload, "admissionChecks", "name", check);
}

bool setCheckState(json& workload, std::string_view check, std::string_view state, std::string_view message,
                   Clock::TimePoint now) {
  auto& checks = arrayAt(workload, "status", "admissionChecks");
  const auto text = truncateMessage(message, kMaxConditionMessage);
  for (auto& entry : checks) {
    if (!entry.is_object() || entry.value("name", "") != check) continue;
    bool changed = false;
    if (entry.value("state", "") != state) {
      entry["state"] = state;
      entry["lastTransitionTime"] = toRfc3339(now);
      changed = true;
    }
    if (entry.value("message", "") != text) {
      entry["message"] = text;
      changed = true;
    }
    return changed;
  }
  checks.push_back({{"name", check}, {"state", state}, {"message", text}, {"lastTransitionTime", toRfc3339(now)}});
  return true;
}

std::string withPreviousState(std::string_view message, std::string_view oldState) {
  return std::string(message) + ", Previously: \"" + std::string(oldState) + "\"";
}

// Both specs are maps ordered by key: walked side by side, compared in place.
bool sameSpecAsCopy(const json& local, const json& remote) {
  const auto& a = json_fields::objectMember(local, "spec");
  const auto& b = json_fields::objectMember(remote, "spec");
  const auto skipIgnored = [](json::const_iterator it, json::const_iterator end) {
    while (it != end && (it.key() == "preemptionGates" || it.key() == "active")) ++it;
    return it;
  };
  auto i = skipIgnored(a.begin(), a.end());
  auto j = skipIgnored(b.begin(), b.end());
  while (i != a.end() && j != b.end()) {
    if (i.key() != j.key() || *i != *j) return false;
    i = skipIgnored(std::next(i), a.end());
    j = skipIgnored(std::next(j), b.end());
  }
  return i == a.end() && j == b.end();
}

std::string clusterName(const json& workload) {
  return json_fields::stringMember(json_fields::objectMember(workload, "status"), "clusterName");
}

std::vector<std::string> nominatedClusters(const json& workload) {
  std::vector<std::string> out;
  for (const auto& name :
       json_fields::arrayMember(json_fields::objectMember(workload, "status"), "nominatedClusterNames"))
    if (name.is_string()) out.push_back(name.get<std::string>());
  return out;
}

bool setNominatedClusters(json& workload, const std::vector<std::string>& clusters) {
  if (nominatedClusters(workload) == clusters) return false;
  auto& status = workload["status"];
  if (!status.is_object()) status = json::object();
  if (clusters.empty()) {
    status.erase("nominatedClusterNames");
  } else {
    status["nominatedClusterNames"] = clusters;
  }
  return true;
}

std::string truncateMessage(std::string_view message, std::size_t limit) {
  if (message.size() <= limit) return std::string(message);
  return std::string(message.substr(0, limit - 4)) + " ...";
}

}  // namespace mka::multikueue
