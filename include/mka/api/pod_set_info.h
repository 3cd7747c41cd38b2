#pragma once
// What an admitted Workload gives the pods of each of its pod sets (Kueue's podset.PodSetInfo,
// KUEUE-JOBFRAMEWORK.md §4.3): its flavors' node labels and tolerations, Kueue's pod labels and
// annotation, and its admission checks' podSetUpdates, merged as Kueue merges them. The job
// integration starts a job with them (integration/job_rules.h); the /mutate-children webhook
// gives them to the objects a started job's controller creates (webhook/child_mutator.h).
//
// Threads: pure functions.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::api {

// What one admitted pod set adds to its pod template (Kueue's podset.PodSetInfo).
struct PodSetInfo {
  std::string name;
  std::int64_t count = 0;
  nlohmann::json labels = nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::object();
  nlohmann::json nodeSelector = nlohmann::json::object();
  nlohmann::json tolerations = nlohmann::json::array();
  bool operator==(const PodSetInfo&) const = default;
};

// A ResourceFlavor by name (the caller's cache or GET), nullopt when it is not there; a failed
// read throws.
using FlavorLookup = std::function<std::optional<nlohmann::json>(const std::string& name)>;

// A flavor an admission names that is not there (Kueue's FromAssignment answered NotFound): not
// permanent, Kueue retries the start with backoff until the flavor is created.
struct FlavorNotFound {
  std::string name;
  std::string podSet;  // the assignment's pod set
  bool operator==(const FlavorNotFound&) const = default;
};

// The infos of an admitted Workload (Kueue's getPodSetsInfoFromStatus): per pod set
// assignment, its count (the spec's when absent), the union of its distinct flavors' node
// labels and tolerations, the `kueue.x-k8s.io/podset` label, then each admission check's
// podSetUpdates in status order. A FlavorNotFound is the first flavor that is not there; a
// string is a conflicting podSetUpdate (permanent: Kueue's ErrInvalidPodSetUpdate), worded as
// Kueue words it.
std::variant<std::vector<PodSetInfo>, std::string, FlavorNotFound> podSetInfos(const nlohmann::json& workload,
                                                                               const FlavorLookup& flavor);

// Adds `from`'s keys to the map `into` (made an object when it is not one). A key `into` holds
// with another value is Kueue's conflict error, "conflict for <what>: conflict for key=<key>,
// value1=<into's>, value2=<from's>"; `into` then holds the keys merged before it.
std::optional<std::string> mergeMap(nlohmann::json& into, const nlohmann::json& from, std::string_view what);

// Appends each toleration of `from` that the list `into` (made an array when it is not one)
// does not hold yet.
void appendTolerations(nlohmann::json& into, const nlohmann::json& from);

}  // namespace mka::api
