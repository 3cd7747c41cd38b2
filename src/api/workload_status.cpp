#include "mka/api/workload_status.h"

#include <algorithm>

#include "mka/api/conditions.h"
#include "mka/api/kueue.h"
#include "mka/api/views.h"
#include "mka/common/json_fields.h"

namespace mka::api {

using nlohmann::json;

bool isFinished(const json& workload) { return WorkloadView(workload).finished(); }
bool hasQuotaReservation(const json& workload) { return WorkloadView(workload).quotaReserved(); }
bool isAdmitted(const json& workload) { return WorkloadView(workload).admitted(); }
bool isEvicted(const json& workload) { return WorkloadView(workload).evicted(); }

const json* findCheckState(const json& workload, std::string_view check) {
  return WorkloadView(workload).admissionCheck(check);
}

bool setCheckState(json& workload, std::string_view check, std::string_view state, std::string_view message,
                   Clock::TimePoint now) {
  auto& checks = json_fields::statusList(workload, "admissionChecks");
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

std::string clusterName(const json& workload) { return std::string(WorkloadView(workload).clusterName()); }

std::vector<std::string> nominatedClusters(const json& workload) {
  return WorkloadView(workload).nominatedClusterNames();
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

}  // namespace mka::api
