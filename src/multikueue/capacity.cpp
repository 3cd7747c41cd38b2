#include "mka/multikueue/capacity.h"

#include <algorithm>
#include <limits>

#include "mka/api/views.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/quantity.h"

namespace mka::multikueue::capacity {

using json_fields::arrayMember;
using json_fields::objectMember;
using json_fields::stringView;
using nlohmann::json;

namespace {

constexpr Milli kUnlimited = std::numeric_limits<Milli>::max() / 4;

std::optional<Milli> milliOf(const json& value) {
  if (value.is_string()) return quantity::parseMilli(value.get_ref<const std::string&>());
  if (value.is_number_integer()) return value.get<Milli>() * 1000;
  if (value.is_number()) return quantity::parseMilli(value.dump());
  return std::nullopt;
}

// One container's requests: a limit alone is the request (the API server defaults it so).
Resources containerRequests(const json& container, const std::string& where) {
  Resources out;
  const auto& resources = objectMember(container, "resources");
  for (const char* field : {"limits", "requests"}) {
    for (const auto& [name, value] : objectMember(resources, field).items()) {
      const auto milli = milliOf(value);
      if (!milli)
        throw Error(where + ": resources." + field + "." + name + " is not a quantity: " + value.dump() + " (" +
                    std::string(quantity::kSyntaxError) + ")");
      out[name] = *milli;  // requests, read last, win
    }
  }
  return out;
}

std::string format(Milli milli) { return quantity::formatMilli(milli); }

using Key = std::pair<std::string, std::string>;            // (flavor, resource)
using Usage = std::map<std::string, std::map<Key, Milli>>;  // ClusterQueue -> used

}  // namespace

std::vector<PodSetRequest> podSetRequests(const json& workload) {
  std::vector<PodSetRequest> out;
  for (const auto& podSet : api::WorkloadView(workload).podSets()) {
    PodSetRequest request;
    request.name = std::string(stringView(podSet, "name"));
    request.count = podSet.value("count", std::int64_t{1});
    const auto& spec = objectMember(objectMember(podSet, "template"), "spec");
    const std::string where = "pod set " + request.name;
    Resources pod;
    for (const auto& container : arrayMember(spec, "containers"))
      for (const auto& [name, milli] : containerRequests(container, where)) pod[name] += milli;
    for (const auto& container : arrayMember(spec, "initContainers"))
      for (const auto& [name, milli] : containerRequests(container, where)) pod[name] = std::max(pod[name], milli);
    for (const auto& [name, value] : objectMember(spec, "overhead").items())
      if (const auto milli = milliOf(value)) pod[name] += *milli;
    for (const auto& [name, milli] : pod)
      if (milli > 0) request.total[name] = milli * request.count;
    out.push_back(std::move(request));
  }
  return out;
}

ClusterQueue ClusterQueue::from(const json& object) {
  const api::ClusterQueueView view(object);
  ClusterQueue cq;
  cq.name = std::string(view.name());
  cq.cohort = std::string(view.cohort());
  cq.pendingWorkloads = view.pendingWorkloads();
  for (const auto& group : view.resourceGroups()) {
    ResourceGroup g;
    for (const auto& r : arrayMember(group, "coveredResources"))
      if (r.is_string()) g.resources.push_back(r.get<std::string>());
    for (const auto& flavor : arrayMember(group, "flavors")) {
      const std::string name(stringView(flavor, "name"));
      g.flavors.push_back(name);
      for (const auto& resource : arrayMember(flavor, "resources")) {
        auto& q = cq.quotas[{name, std::string(stringView(resource, "name"))}];
        if (auto it = resource.find("nominalQuota"); it != resource.end()) q.nominal = milliOf(*it).value_or(0);
        if (auto it = resource.find("borrowingLimit"); it != resource.end()) q.borrowingLimit = milliOf(*it);
        if (auto it = resource.find("lendingLimit"); it != resource.end()) q.lendingLimit = milliOf(*it);
      }
    }
    cq.groups.push_back(std::move(g));
  }
  for (const auto& flavor : view.flavorsReservation())
    for (const auto& resource : arrayMember(flavor, "resources")) {
      const Key key{std::string(stringView(flavor, "name")), std::string(stringView(resource, "name"))};
      if (auto it = resource.find("total"); it != resource.end()) cq.quotas[key].reserved = milliOf(*it).value_or(0);
    }
  return cq;
}

void Snapshot::addClusterQueue(ClusterQueue clusterQueue) {
  auto name = clusterQueue.name;
  clusterQueues_[std::move(name)] = std::move(clusterQueue);
}

void Snapshot::addLocalQueue(const json& localQueue) {
  const api::LocalQueueView view(localQueue);
  localQueues_[std::string(view.namespace_()) + "/" + std::string(view.name())] = std::string(view.clusterQueue());
}

void Snapshot::addPending(PendingCopy copy) { pending_.push_back(std::move(copy)); }

std::optional<std::string> Snapshot::clusterQueueOf(const std::string& localQueue) const {
  const auto it = localQueues_.find(localQueue);
  if (it == localQueues_.end()) return std::nullopt;
  return it->second;
}

namespace {

// Room and charges against one snapshot's ClusterQueues, with usage that grows as pod sets are
// placed. `empty`: no reservation anywhere (what could ever fit).
class Ledger {
 public:
  Ledger(const std::map<std::string, ClusterQueue>& queues, bool empty) : queues_(queues) {
    if (empty) return;
    for (const auto& [name, cq] : queues)
      for (const auto& [key, q] : cq.quotas) used_[name][key] = q.reserved;
  }

  Milli used(const std::string& cq, const Key& key) const {
    const auto it = used_.find(cq);
    if (it == used_.end()) return 0;
    const auto k = it->second.find(key);
    return k == it->second.end() ? 0 : k->second;
  }

  // What `cq` may still take of `key`: its guaranteed part (nominal less what it lends) unused,
  // plus the cohort's unused lendable quota, capped by nominal + borrowingLimit.
  Milli room(const ClusterQueue& cq, const Key& key) const {
    const auto q = quota(cq, key);
    const Milli u = used(cq.name, key);
    if (cq.cohort.empty()) return std::max<Milli>(0, q.nominal - u);
    Milli pool = 0;
    for (const auto& [name, member] : queues_) {
      if (member.cohort != cq.cohort) continue;
      const auto m = quota(member, key);
      const Milli lendable = m.lendingLimit ? std::min(*m.lendingLimit, m.nominal) : m.nominal;
      pool += lendable - std::max<Milli>(0, used(name, key) - (m.nominal - lendable));
    }
    const Milli lendable = q.lendingLimit ? std::min(*q.lendingLimit, q.nominal) : q.nominal;
    Milli room = std::max<Milli>(0, (q.nominal - lendable) - u) + std::max<Milli>(0, pool);
    if (q.borrowingLimit) room = std::min(room, q.nominal + *q.borrowingLimit - u);
    return std::max<Milli>(0, room);
  }

  void charge(const std::string& cq, const Key& key, Milli amount) { used_[cq][key] += amount; }

 private:
  static Quota quota(const ClusterQueue& cq, const Key& key) {
    const auto it = cq.quotas.find(key);
    return it == cq.quotas.end() ? Quota{} : it->second;
  }
  const std::map<std::string, ClusterQueue>& queues_;
  Usage used_;
};

struct Placement {
  bool ok = false;
  std::string why;
  double score = 0;  // share left free of the chosen quotas, averaged
};

// Places every pod set in `cq` on `ledger` (charging it when all fit; nothing when one does not).
Placement place(const ClusterQueue& cq, const std::vector<PodSetRequest>& podSets, Ledger& ledger, bool ever) {
  struct Charge {
    Key key;
    Milli amount;
    Milli room;
  };
  std::vector<Charge> charges;
  auto charged = [&](const Key& key) {
    Milli sum = 0;
    for (const auto& c : charges)
      if (c.key == key) sum += c.amount;
    return sum;
  };
  for (const auto& podSet : podSets) {
    // The pod set's resources per resource group covering them.
    std::vector<std::vector<std::pair<std::string, Milli>>> byGroup(cq.groups.size());
    for (const auto& [resource, amount] : podSet.total) {
      std::size_t g = 0;
      while (g < cq.groups.size() && std::find(cq.groups[g].resources.begin(), cq.groups[g].resources.end(),
                                               resource) == cq.groups[g].resources.end())
        ++g;
      if (g == cq.groups.size()) return {false, cq.name + " has no quota for " + resource, 0};
      byGroup[g].emplace_back(resource, amount);
    }
    for (std::size_t g = 0; g < cq.groups.size(); ++g) {
      if (byGroup[g].empty()) continue;
      bool placed = false;
      // The shortfall to report: the resource and flavor with the most room that was not enough.
      std::string shortResource;
      Milli shortRoom = -1, shortNeed = 0;
      for (const auto& flavor : cq.groups[g].flavors) {
        bool fits = true;
        for (const auto& [resource, amount] : byGroup[g]) {
          const Key key{flavor, resource};
          const Milli room = ledger.room(cq, key) - charged(key);
          if (amount > room) {
            fits = false;
            if (room > shortRoom) {
              shortRoom = std::max<Milli>(0, room);
              shortResource = resource;
              shortNeed = amount;
            }
          }
        }
        if (!fits) continue;
        for (const auto& [resource, amount] : byGroup[g]) {
          const Key key{flavor, resource};
          charges.push_back({key, amount, ledger.room(cq, key) - charged(key)});
        }
        placed = true;
        break;
      }
      if (!placed) {
        if (shortResource.empty()) return {false, cq.name + " has no flavor for " + byGroup[g].front().first, 0};
        return {false,
                cq.name + " has " + format(shortRoom) + " " + shortResource + (ever ? " in all" : " free") +
                    ", needs " + format(shortNeed),
                0};
      }
    }
  }
  double share = 0;
  for (const auto& c : charges) {
    ledger.charge(cq.name, c.key, c.amount);
    share += c.room > 0 ? static_cast<double>(c.room - c.amount) / static_cast<double>(c.room) : 0;
  }
  return {true, "", charges.empty() ? 1.0 : share / static_cast<double>(charges.size())};
}

}  // namespace

Fit Snapshot::fit(const std::string& localQueue, const std::vector<PodSetRequest>& podSets,
                  const std::string& workloadKey) const {
  Fit out;
  const auto cqName = clusterQueueOf(localQueue);
  if (!cqName) {
    out.why = "LocalQueue " + localQueue + " missing";
    return out;
  }
  const auto it = clusterQueues_.find(*cqName);
  if (it == clusterQueues_.end()) {
    out.why = "ClusterQueue " + *cqName + " of LocalQueue " + localQueue + " missing";
    return out;
  }
  const ClusterQueue& cq = it->second;
  out.clusterQueue = cq.name;
  out.pendingWorkloads = cq.pendingWorkloads;

  Ledger empty(clusterQueues_, true);
  const auto ever = place(cq, podSets, empty, true);
  out.ever = ever.ok;
  if (!ever.ok) {
    out.why = ever.why;
    return out;
  }

  Ledger now(clusterQueues_, false);
  std::int64_t ours = 0;  // our copies waiting in that ClusterQueue, which its status may not count yet
  for (const auto& copy : pending_) {
    if (copy.workloadKey == workloadKey) continue;
    const auto target = clusterQueueOf(copy.localQueue);
    if (!target) continue;
    const auto q = clusterQueues_.find(*target);
    if (q == clusterQueues_.end()) continue;
    if (q->second.name == cq.name) ++ours;
    place(q->second, copy.podSets, now, false);  // a copy that does not fit now takes nothing yet
  }
  out.pendingWorkloads = std::max(out.pendingWorkloads, ours);
  const auto placed = place(cq, podSets, now, false);
  out.now = placed.ok;
  out.score = placed.score;
  if (!placed.ok) out.why = placed.why;
  return out;
}

}  // namespace mka::multikueue::capacity
