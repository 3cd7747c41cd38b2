#include "mka/standin/ocm_standin.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "log.h"
#include "mka/common/json_fields.h"
#include "mka/common/thread_name.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"

namespace mka::standin {
namespace {

using nlohmann::json;
using sandbox::ResourceRef;

// OCM's own strings, kept apart from the product's (a second reading of the protocol).
constexpr const char* kGroup = "cluster.open-cluster-management.io";
constexpr const char* kPlacementLabel = "cluster.open-cluster-management.io/placement";
constexpr const char* kGroupIndexLabel = "cluster.open-cluster-management.io/decision-group-index";
constexpr const char* kGroupNameLabel = "cluster.open-cluster-management.io/decision-group-name";
constexpr std::size_t kMaxDecisionsPerObject = 100;

ResourceRef ref(const std::string& plural, const std::string& ns, const std::string& name = "",
                const std::string& subresource = "") {
  return {kGroup, "v1beta1", plural, ns, name, subresource};
}

bool matchesExpression(const std::map<std::string, std::string>& labels, const json& e) {
  const auto key = e.value("key", "");
  const auto op = e.value("operator", "");
  const auto it = labels.find(key);
  std::set<std::string> values;
  for (const auto& v : e.value("values", json::array()))
    if (v.is_string()) values.insert(v.get<std::string>());
  if (op == "In") return it != labels.end() && values.contains(it->second);
  if (op == "NotIn") return it == labels.end() || !values.contains(it->second);
  if (op == "Exists") return it != labels.end();
  if (op == "DoesNotExist") return it == labels.end();
  return false;
}

bool matchesSelector(const std::map<std::string, std::string>& labels, const json& selector) {
  const auto matchLabels = selector.value("matchLabels", json::object());
  for (const auto& [k, v] : matchLabels.items()) {
    const auto it = labels.find(k);
    if (it == labels.end() || !v.is_string() || it->second != v.get<std::string>()) return false;
  }
  for (const auto& e : selector.value("matchExpressions", json::array()))
    if (!matchesExpression(labels, e)) return false;
  return true;
}

json condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message, const json& previous, const std::string& now, std::int64_t generation) {
  std::string since = now;
  for (const auto& c : previous)
    if (c.value("type", "") == type && c.value("status", "") == status) since = c.value("lastTransitionTime", now);
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", since},
          {"observedGeneration", generation}};
}

}  // namespace

struct OcmStandIn::Impl {
  sandbox::ClusterApi& hub;
  Options options;
  std::mutex mutex;  // clusters, stopping, loggedIgnored
  std::vector<ManagedClusterInput> clusters;
  std::set<std::string> loggedIgnored;  // "<placement>@<generation>"
  std::mutex passMutex;                 // one scheduling pass at a time
  std::condition_variable wake;
  bool stopping = false;
  std::thread worker;

  Impl(sandbox::ClusterApi& hub, std::vector<ManagedClusterInput> clusters, Options options)
      : hub(hub), options(std::move(options)), clusters(std::move(clusters)) {}

  void logIgnored(const json& placement) {
    const auto& spec = json_fields::objectMember(placement, "spec");
    const auto name = json_fields::metadataString(placement, "name");
    const auto key =
        name + "@" + std::to_string(json_fields::objectMember(placement, "metadata").value("generation", 0));
    {
      std::lock_guard lock(mutex);
      if (!loggedIgnored.insert(key).second) return;
    }
    std::vector<std::string> ignored;
    for (const auto* field : {"clusterSets", "tolerations", "prioritizerPolicy", "decisionStrategy", "spreadPolicy"})
      if (spec.contains(field)) ignored.emplace_back(field);
    for (const auto& p : json_fields::arrayMember(spec, "predicates")) {
      const auto& required = json_fields::objectMember(p, "requiredClusterSelector");
      for (const auto* field : {"claimSelector", "celSelector"})
        if (required.contains(field)) ignored.push_back(std::string("predicates[].requiredClusterSelector.") + field);
    }
    if (ignored.empty()) return;
    std::string fields;
    for (const auto& f : ignored) fields += (fields.empty() ? "" : ", ") + f;
    log::info(logger(), "ocm-standin ignores Placement fields it does not model",
              {{"placement", options.namespace_ + "/" + name}, {"fields", fields}});
  }

  // The clusters OCM's scheduler would decide for `placement`, sorted, and how many it wanted.
  std::vector<std::string> decide(const json& placement, std::size_t& feasibleCount, std::int64_t& wanted) {
    const auto& spec = json_fields::objectMember(placement, "spec");
    const auto& predicates = json_fields::arrayMember(spec, "predicates");
    std::vector<std::string> feasible;
    {
      std::lock_guard lock(mutex);
      for (const auto& c : clusters) {
        bool selected = predicates.empty();
        for (const auto& p : predicates) {
          const auto& selector =
              json_fields::objectMember(json_fields::objectMember(p, "requiredClusterSelector"), "labelSelector");
          if (matchesSelector(c.labels, selector)) selected = true;
        }
        if (selected) feasible.push_back(c.name);
      }
    }
    std::sort(feasible.begin(), feasible.end());
    feasibleCount = feasible.size();
    wanted = spec.contains("numberOfClusters") && spec["numberOfClusters"].is_number_integer()
                 ? spec["numberOfClusters"].get<std::int64_t>()
                 : -1;
    if (wanted >= 0 && feasible.size() > static_cast<std::size_t>(wanted)) feasible.resize(wanted);
    return feasible;
  }

  void schedule(const json& placement) {
    const auto name = json_fields::metadataString(placement, "name");
    const auto uid = json_fields::metadataString(placement, "uid");
    const auto generation = json_fields::objectMember(placement, "metadata").value("generation", std::int64_t{0});
    logIgnored(placement);
    std::size_t feasible = 0;
    std::int64_t wanted = -1;
    const auto decided = decide(placement, feasible, wanted);

    // The decision objects: chunks of at most 100, at least one.
    std::vector<std::vector<std::string>> chunks;
    for (std::size_t i = 0; i < decided.size(); i += kMaxDecisionsPerObject)
      chunks.emplace_back(decided.begin() + i, decided.begin() + std::min(decided.size(), i + kMaxDecisionsPerObject));
    if (chunks.empty()) chunks.emplace_back();
    std::vector<std::string> decisionNames;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const auto decisionName = name + "-decision-" + std::to_string(i + 1);
      decisionNames.push_back(decisionName);
      json decisions = json::array();
      for (const auto& c : chunks[i]) decisions.push_back({{"clusterName", c}, {"reason", ""}});
      writeDecision(name, uid, decisionName, decisions);
    }
    // Surplus decision objects of this Placement go.
    const auto list = hub.list(ref("placementdecisions", options.namespace_),
                               {.labelSelector = std::string(kPlacementLabel) + "=" + name});
    for (const auto& d : list.value("items", json::array())) {
      const auto n = json_fields::metadataString(d, "name");
      if (std::find(decisionNames.begin(), decisionNames.end(), n) == decisionNames.end()) {
        hub.remove(ref("placementdecisions", options.namespace_, n));
        log::info(logger(), "ocm-standin deleted a surplus PlacementDecision", {{"decision", n}});
      }
    }
    writePlacementStatus(placement, decided, decisionNames, feasible, wanted, generation);
  }

  void writeDecision(const std::string& placement, const std::string& uid, const std::string& name,
                     const json& decisions) {
    const auto at = ref("placementdecisions", options.namespace_, name);
    json object;
    try {
      object = hub.get(at);
    } catch (const sandbox::ApiError& e) {
      if (e.code() != 404) throw;
      object =
          *hub.create(ref("placementdecisions", options.namespace_),
                      {{"apiVersion", std::string(kGroup) + "/v1beta1"},
                       {"kind", "PlacementDecision"},
                       {"metadata",
                        {{"name", name},
                         {"namespace", options.namespace_},
                         {"labels", {{kPlacementLabel, placement}, {kGroupIndexLabel, "0"}, {kGroupNameLabel, ""}}},
                         {"ownerReferences",
                          {{{"apiVersion", std::string(kGroup) + "/v1beta1"},
                            {"kind", "Placement"},
                            {"name", placement},
                            {"uid", uid},
                            {"controller", true},
                            {"blockOwnerDeletion", true}}}}}}});
    }
    if (json_fields::objectMember(object, "status").value("decisions", json()) == decisions) return;
    object["status"] = {{"decisions", decisions}};
    auto statusRef = at;
    statusRef.subresource = "status";
    hub.update(statusRef, object);
    log::info(logger(), "ocm-standin decided", {{"decision", name}, {"clusters", decisions.size()}});
  }

  void writePlacementStatus(const json& placement, const std::vector<std::string>& decided,
                            const std::vector<std::string>& decisionNames, std::size_t feasible, std::int64_t wanted,
                            std::int64_t generation) {
    const auto now = hub.now();
    const auto& previous = json_fields::arrayMember(json_fields::objectMember(placement, "status"), "conditions");
    json satisfied;
    if (feasible == 0) {
      satisfied = condition("PlacementSatisfied", "False", "NoManagedClusterMatched",
                            "No ManagedCluster matches any of the cluster predicate", previous, now, generation);
    } else if (wanted >= 0 && decided.size() < static_cast<std::size_t>(wanted)) {
      satisfied = condition(
          "PlacementSatisfied", "False", "NotAllDecisionsScheduled",
          std::to_string(wanted - static_cast<std::int64_t>(decided.size())) + " cluster decisions unscheduled",
          previous, now, generation);
    } else {
      satisfied = condition("PlacementSatisfied", "True", "AllDecisionsScheduled", "All cluster decisions scheduled",
                            previous, now, generation);
    }
    json status = {{"numberOfSelectedClusters", decided.size()},
                   {"decisionGroups",
                    {{{"decisionGroupIndex", 0},
                      {"decisionGroupName", ""},
                      {"decisions", decisionNames},
                      {"clusterCount", decided.size()}}}},
                   {"conditions",
                    {condition("PlacementMisconfigured", "False", "Succeedconfigured",
                               "Placement configurations check pass", previous, now, generation),
                     satisfied}}};
    if (placement.value("status", json::object()) == status) return;
    json updated = placement;
    updated["status"] = status;
    hub.update(ref("placements", options.namespace_, json_fields::metadataString(placement, "name"), "status"),
               updated);
  }

  void pass() {
    std::lock_guard passLock(passMutex);
    json list;
    try {
      list = hub.list(ref("placements", options.namespace_), {});
    } catch (const std::exception& e) {
      log::debug(logger(), "ocm-standin cannot list Placements", {{"error", e.what()}});
      return;
    }
    for (const auto& p : list.value("items", json::array())) {
      if (json_fields::objectMember(p, "metadata").contains("deletionTimestamp")) continue;
      try {
        schedule(p);
      } catch (const std::exception& e) {  // a conflict with a concurrent write: the next pass retries
        log::debug(logger(), "ocm-standin pass failed",
                   {{"placement", json_fields::metadataString(p, "name")}, {"error", e.what()}});
      }
    }
  }
};

OcmStandIn::OcmStandIn(sandbox::ClusterApi& hub, std::vector<ManagedClusterInput> clusters, Options options)
    : impl_(std::make_unique<Impl>(hub, std::move(clusters), std::move(options))) {}

OcmStandIn::~OcmStandIn() { stop(); }

void OcmStandIn::start() {
  if (impl_->worker.joinable()) return;
  impl_->stopping = false;
  impl_->worker = std::thread([this] {
    nameThisThread("ocm-standin");
    while (true) {
      impl_->pass();
      std::unique_lock lock(impl_->mutex);
      impl_->wake.wait_for(lock, impl_->options.pollInterval, [this] { return impl_->stopping; });
      if (impl_->stopping) return;
    }
  });
}

void OcmStandIn::stop() {
  if (!impl_ || !impl_->worker.joinable()) return;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->worker.join();
}

void OcmStandIn::setClusters(std::vector<ManagedClusterInput> clusters) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->clusters = std::move(clusters);
  }
  impl_->wake.notify_all();
}

void OcmStandIn::sync() { impl_->pass(); }

}  // namespace mka::standin
