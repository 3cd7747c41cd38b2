#include "kueue_quota.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "mka/common/json_fields.h"
#include "mka/common/quantity.h"

namespace mka::standin::kueue_quota {
namespace {

using nlohmann::json;

// QuotaReserved=False reasons of an assignment that does not fit (Kueue's
// WorkloadQuotaReservedReason*), and their order in resolveNoFitReason: the most severe wins
// across resource groups and pod sets, the least severe across the flavors of one group.
constexpr const char* kNoMatchingFlavor = "NoMatchingFlavor";
constexpr const char* kExceedsMaxQuota = "ExceedsMaxQuota";
constexpr const char* kWaitingForQuota = "WaitingForQuota";

int severity(const std::string& reason) {
  if (reason == kNoMatchingFlavor) return 3;
  if (reason == kExceedsMaxQuota) return 2;
  if (reason == kWaitingForQuota) return 1;
  return 0;
}
std::string mostSevere(const std::string& a, const std::string& b) { return severity(a) >= severity(b) ? a : b; }

std::optional<Milli> quantityOf(const json& value) {
  if (value.is_string()) return quantity::parseMilli(value.get<std::string>());
  if (value.is_number()) return quantity::parseMilli(value.dump());
  return std::nullopt;
}

// Kubernetes' canonical DecimalSI spelling of milli/1000 (Quantity.String: trailing zeros
// removed, the exponent brought down to a multiple of 3, then its SI suffix).
std::string decimalCanonical(Milli milli) {
  if (milli == 0) return "0";
  const bool negative = milli < 0;
  std::uint64_t mantissa = negative ? 0 - static_cast<std::uint64_t>(milli) : static_cast<std::uint64_t>(milli);
  int exponent = -3;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  while (((exponent % 3) + 3) % 3 != 0) {
    mantissa *= 10;
    --exponent;
  }
  static const std::map<int, const char*> kSuffixes = {{-3, "m"}, {0, ""},   {3, "k"},  {6, "M"},
                                                       {9, "G"},  {12, "T"}, {15, "P"}, {18, "E"}};
  const auto suffix = kSuffixes.find(exponent);
  return (negative ? "-" : "") + std::to_string(mantissa) +
         (suffix != kSuffixes.end() ? suffix->second : "e" + std::to_string(exponent));
}

// Whole units, rounded up as Kubernetes' Quantity.Value rounds.
Milli wholeUnits(Milli milli) { return milli >= 0 ? (milli + 999) / 1000 : -((-milli) / 1000); }

// BinarySI as Kueue's newCanonicalQuantity leaves it: a whole multiple of 1Ki gets its binary
// suffix; anything else is printed as a plain number and read back as DecimalSI.
std::string binaryCanonical(Milli milli) {
  auto units = wholeUnits(milli);
  if (units == 0 || std::llabs(units) < 1024 || units % 1024 != 0) return decimalCanonical(units * 1000);
  static constexpr const char* kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int exponent = 0;
  while (units % 1024 == 0 && exponent < 6) {
    units /= 1024;
    ++exponent;
  }
  return std::to_string(units) + kSuffixes[exponent];
}

// How one flavor, or one resource in it, fits: better ones compare greater (Kueue's
// preemptionMode without reclaim: noFit < noPreemptionCandidates < preempt < fit).
enum class FlavorMode { NoFit, NoCandidates, Preempt, Fit };

Mode toMode(FlavorMode mode) {
  switch (mode) {
    case FlavorMode::Fit: return Mode::Fit;
    case FlavorMode::NoFit: return Mode::NoFit;
    default: return Mode::Preempt;  // Kueue's flavorAssignmentMode: preemption decides later
  }
}

Mode worse(Mode a, Mode b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

// One resource group's flavor for one pod set (findFlavorForPodSets).
struct GroupResult {
  FlavorMode mode = FlavorMode::NoFit;
  std::string flavor;
  std::map<std::string, FlavorMode> resourceModes;
  std::vector<std::string> reasons;  // none when it fits
  std::string noFitReason;
};

GroupResult findFlavor(const Snapshot& snapshot, const ClusterQueue& queue, const ResourceGroup& group,
                       const std::map<std::string, Milli>& requests, const Amounts& assigned,
                       const PreemptionOracle& mayPreempt) {
  GroupResult best;
  std::vector<std::string> reasons;
  std::string groupNoFitReason;
  bool anyNoFitFlavor = false;
  for (const auto& flavor : group.flavors) {
    FlavorMode flavorMode = FlavorMode::Fit;
    std::string flavorNoFitReason;
    std::map<std::string, FlavorMode> modes;
    for (const auto& [resource, amount] : requests) {
      const FlavorResource fr{flavor, resource};
      const auto previous = assigned.count(fr) != 0 ? assigned.at(fr) : 0;
      const Milli value = previous + amount;
      FlavorMode mode = FlavorMode::Fit;
      std::string noFitReason;
      const auto maxCapacity = snapshot.potentialAvailable(queue, fr);
      if (value > maxCapacity) {
        reasons.push_back("insufficient quota for " + resource + " in flavor " + flavor +
                          ", previously considered podsets requests (" + formatQuantity(resource, previous) +
                          ") + current podset request (" + formatQuantity(resource, amount) + ") > maximum capacity (" +
                          formatQuantity(resource, maxCapacity) + ")");
        mode = FlavorMode::NoFit;
        noFitReason = kExceedsMaxQuota;
      } else if (const auto available = snapshot.available(queue, fr); value > available) {
        reasons.push_back("insufficient unused quota for " + resource + " in flavor " + flavor + ", " +
                          formatQuantity(resource, value - available) + " more needed");
        const auto quota = queue.quotas.find(fr);
        if (quota != queue.quotas.end() && quota->second.nominal >= value) {
          mode = mayPreempt && mayPreempt(fr, value) ? FlavorMode::Preempt : FlavorMode::NoCandidates;
        } else {
          mode = FlavorMode::NoFit;
          noFitReason = kWaitingForQuota;
        }
      }
      modes[resource] = mode;
      flavorMode = std::min(flavorMode, mode);
      flavorNoFitReason = mostSevere(flavorNoFitReason, noFitReason);
    }
    if (flavorMode == FlavorMode::Fit) return {FlavorMode::Fit, flavor, modes, {}, ""};
    if (flavorMode > best.mode) best = {flavorMode, flavor, modes, {}, ""};
    if (flavorMode == FlavorMode::NoFit) {
      // Across the flavors of one group, the least severe reason: another flavor could do.
      groupNoFitReason = !anyNoFitFlavor || severity(flavorNoFitReason) < severity(groupNoFitReason) ? flavorNoFitReason
                                                                                                     : groupNoFitReason;
      anyNoFitFlavor = true;
    }
  }
  best.reasons = std::move(reasons);
  if (best.mode == FlavorMode::NoFit) best.noFitReason = groupNoFitReason;
  return best;
}

std::string joined(std::vector<std::string> reasons) {
  std::sort(reasons.begin(), reasons.end());
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : ", ") + r;
  return out;
}

}  // namespace

std::string formatQuantity(const std::string& resource, Milli milli) {
  if (resource == "cpu") return decimalCanonical(milli);
  if (resource == "memory" || resource == "ephemeral-storage" || resource.rfind("hugepages-", 0) == 0)
    return binaryCanonical(milli);
  return decimalCanonical(wholeUnits(milli) * 1000);
}

std::vector<PodSetRequests> podSetRequests(const json& workload) {
  std::vector<PodSetRequests> out;
  for (const auto& podSet : json_fields::arrayMember(json_fields::objectMember(workload, "spec"), "podSets")) {
    PodSetRequests requests;
    requests.name = podSet.value("name", "main");
    const auto& count = podSet.contains("count") ? podSet["count"] : json(1);
    requests.count = count.is_number_integer() ? count.get<std::int64_t>() : 1;
    std::map<std::string, Milli> perPod;
    const auto& podSpec = json_fields::objectMember(json_fields::objectMember(podSet, "template"), "spec");
    for (const auto& container : json_fields::arrayMember(podSpec, "containers")) {
      const auto& resources = json_fields::objectMember(container, "resources");
      json values = json_fields::objectMember(resources, "limits");  // a limit alone is the request
      values.update(json_fields::objectMember(resources, "requests"));
      for (const auto& [resource, value] : values.items())
        if (const auto milli = quantityOf(value)) perPod[resource] += *milli;
    }
    for (const auto& [resource, milli] : perPod) requests.total[resource] = milli * requests.count;
    out.push_back(std::move(requests));
  }
  return out;
}

Amounts admittedUsage(const json& workload) {
  Amounts out;
  const auto* assignments = json_fields::fieldAt(workload, "status.admission.podSetAssignments");
  if (assignments == nullptr || !assignments->is_array()) return out;
  for (const auto& assignment : *assignments) {
    const auto& flavors = json_fields::objectMember(assignment, "flavors");
    for (const auto& [resource, value] : json_fields::objectMember(assignment, "resourceUsage").items()) {
      const auto flavor = json_fields::stringMember(flavors, resource);
      const auto milli = quantityOf(value);
      if (!flavor.empty() && milli) out[{flavor, resource}] += *milli;
    }
  }
  return out;
}

ClusterQueue ClusterQueue::from(const json& object) {
  ClusterQueue queue;
  queue.name = json_fields::metadataString(object, "name");
  const auto& spec = json_fields::objectMember(object, "spec");
  queue.cohort = json_fields::stringMember(spec, "cohortName");
  queue.withinClusterQueue =
      json_fields::stringMember(json_fields::objectMember(spec, "preemption"), "withinClusterQueue", "Never");
  for (const auto& group : json_fields::arrayMember(spec, "resourceGroups")) {
    ResourceGroup out;
    for (const auto& resource : json_fields::arrayMember(group, "coveredResources"))
      if (resource.is_string()) out.coveredResources.push_back(resource.get<std::string>());
    for (const auto& flavor : json_fields::arrayMember(group, "flavors")) {
      const auto name = json_fields::stringMember(flavor, "name");
      out.flavors.push_back(name);
      for (const auto& resource : json_fields::arrayMember(flavor, "resources")) {
        ResourceQuota quota;
        quota.nominal = resource.contains("nominalQuota") ? quantityOf(resource["nominalQuota"]).value_or(0) : 0;
        if (resource.contains("borrowingLimit")) quota.borrowingLimit = quantityOf(resource["borrowingLimit"]);
        if (resource.contains("lendingLimit")) quota.lendingLimit = quantityOf(resource["lendingLimit"]);
        queue.quotas[{name, json_fields::stringMember(resource, "name")}] = quota;
      }
    }
    queue.resourceGroups.push_back(std::move(out));
  }
  return queue;
}

const ResourceGroup* ClusterQueue::groupCovering(const std::string& resource) const {
  for (const auto& group : resourceGroups)
    if (std::find(group.coveredResources.begin(), group.coveredResources.end(), resource) !=
        group.coveredResources.end())
      return &group;
  return nullptr;
}

std::string ClusterQueue::path() const { return cohort.empty() ? "/" + name : "/" + cohort + "/" + name; }

void Snapshot::addQueue(ClusterQueue queue) {
  auto name = queue.name;
  queues_[name] = std::move(queue);
}

const ClusterQueue* Snapshot::queue(const std::string& name) const {
  auto it = queues_.find(name);
  return it == queues_.end() ? nullptr : &it->second;
}

void Snapshot::add(const std::string& queue, const Amounts& usage) {
  auto& mine = usage_[queue];
  for (const auto& [fr, amount] : usage) mine[fr] += amount;
}

void Snapshot::remove(const std::string& queue, const Amounts& usage) {
  auto& mine = usage_[queue];
  for (const auto& [fr, amount] : usage) mine[fr] -= amount;
}

Milli Snapshot::usage(const std::string& queue, const FlavorResource& fr) const {
  auto it = usage_.find(queue);
  if (it == usage_.end()) return 0;
  auto used = it->second.find(fr);
  return used == it->second.end() ? 0 : used->second;
}

const Amounts& Snapshot::usage(const std::string& queue) const {
  static const Amounts kNone;
  auto it = usage_.find(queue);
  return it == usage_.end() ? kNone : it->second;
}

// resourceNode.localQuota: what a ClusterQueue keeps for itself and never lends.
Milli Snapshot::localQuota(const ClusterQueue& queue, const FlavorResource& fr) const {
  auto quota = queue.quotas.find(fr);
  if (quota == queue.quotas.end() || !quota->second.lendingLimit) return 0;
  return std::max<Milli>(0, quota->second.nominal - *quota->second.lendingLimit);
}

// The cohort's SubtreeQuota: what its ClusterQueues lend.
Milli Snapshot::cohortSubtreeQuota(const std::string& cohort, const FlavorResource& fr) const {
  Milli total = 0;
  for (const auto& [name, member] : queues_) {
    if (member.cohort != cohort) continue;
    auto quota = member.quotas.find(fr);
    if (quota != member.quotas.end()) total += quota->second.nominal - localQuota(member, fr);
  }
  return total;
}

// The cohort's Usage: what its ClusterQueues use beyond what they keep for themselves.
Milli Snapshot::cohortUsage(const std::string& cohort, const FlavorResource& fr) const {
  Milli total = 0;
  for (const auto& [name, member] : queues_)
    if (member.cohort == cohort) total += std::max<Milli>(0, usage(name, fr) - localQuota(member, fr));
  return total;
}

Milli Snapshot::available(const ClusterQueue& queue, const FlavorResource& fr) const {
  auto quota = queue.quotas.find(fr);
  const Milli nominal = quota == queue.quotas.end() ? 0 : quota->second.nominal;
  const Milli used = usage(queue.name, fr);
  if (queue.cohort.empty()) return nominal - used;
  Milli parentAvailable = cohortSubtreeQuota(queue.cohort, fr) - cohortUsage(queue.cohort, fr);
  const Milli local = localQuota(queue, fr);
  if (quota != queue.quotas.end() && quota->second.borrowingLimit) {
    const Milli storedInParent = nominal - local;
    const Milli usedInParent = std::max<Milli>(0, used - local);
    parentAvailable = std::min(parentAvailable, storedInParent - usedInParent + *quota->second.borrowingLimit);
  }
  return std::max<Milli>(0, local - used) + parentAvailable;
}

Milli Snapshot::potentialAvailable(const ClusterQueue& queue, const FlavorResource& fr) const {
  auto quota = queue.quotas.find(fr);
  const Milli nominal = quota == queue.quotas.end() ? 0 : quota->second.nominal;
  if (queue.cohort.empty()) return nominal;
  Milli most = localQuota(queue, fr) + cohortSubtreeQuota(queue.cohort, fr);
  if (quota != queue.quotas.end() && quota->second.borrowingLimit)
    most = std::min(most, nominal + *quota->second.borrowingLimit);
  return most;
}

Assignment assignFlavors(const Snapshot& snapshot, const ClusterQueue& queue,
                         const std::vector<PodSetRequests>& requests, const PreemptionOracle& mayPreempt) {
  Assignment out;
  std::vector<std::string> messages;
  for (const auto& podSet : requests) {
    PodSetAssignment assignment{podSet.name, podSet.count, {}, podSet.total};
    if (queue.groupCovering("pods") != nullptr) assignment.usage["pods"] = podSet.count * 1000;
    std::vector<std::string> reasons;
    Mode mode = Mode::Fit;
    bool failed = false;
    std::set<const ResourceGroup*> done;
    for (const auto& [resource, amount] : assignment.usage) {
      const auto* group = queue.groupCovering(resource);
      if (group == nullptr) {
        if (amount == 0) continue;  // a zero request of an undeclared resource is ignored
        reasons = {"resource " + resource + " unavailable in ClusterQueue"};
        out.noFitReason = kNoMatchingFlavor;
        failed = true;
        break;
      }
      if (!done.insert(group).second) continue;
      std::map<std::string, Milli> groupRequests;
      for (const auto& covered : group->coveredResources)
        if (auto it = assignment.usage.find(covered); it != assignment.usage.end()) groupRequests[covered] = it->second;
      auto result = findFlavor(snapshot, queue, *group, groupRequests, out.usage, mayPreempt);
      if (result.mode == FlavorMode::NoFit) {
        reasons = std::move(result.reasons);  // the failing group's reasons alone
        out.noFitReason = result.noFitReason;
        failed = true;
        break;
      }
      reasons.insert(reasons.end(), result.reasons.begin(), result.reasons.end());
      mode = worse(mode, toMode(result.mode));
      for (const auto& [resource, groupAmount] : groupRequests) {
        assignment.flavors[resource] = result.flavor;
        out.usage[{result.flavor, resource}] += groupAmount;
        if (result.resourceModes[resource] != FlavorMode::Fit) out.needPreemption.insert({result.flavor, resource});
      }
    }
    if (!reasons.empty())
      messages.push_back("couldn't assign flavors to pod set " + podSet.name + ": " + joined(reasons));
    out.mode = worse(out.mode, failed ? Mode::NoFit : mode);
    out.podSets.push_back(std::move(assignment));
    if (failed) break;
  }
  out.message = std::accumulate(messages.begin(), messages.end(), std::string(),
                                [](std::string a, const std::string& b) { return a.empty() ? b : a + "; " + b; });
  if (out.mode != Mode::NoFit) out.noFitReason.clear();
  return out;
}

bool fits(const Snapshot& snapshot, const ClusterQueue& queue, const Amounts& need) {
  for (const auto& [fr, amount] : need)
    if (amount > snapshot.available(queue, fr)) return false;
  return true;
}

std::vector<std::size_t> preemptionTargets(Snapshot snapshot, const ClusterQueue& queue, const Amounts& need,
                                           const std::vector<Candidate>& candidates) {
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = candidates[a];
    const auto& y = candidates[b];
    if (x.evicted != y.evicted) return x.evicted;
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.reservedAt != y.reservedAt) return x.reservedAt > y.reservedAt;
    return x.key < y.key;
  });
  std::vector<std::size_t> targets;
  for (const auto index : order) {
    snapshot.remove(queue.name, candidates[index].usage);
    targets.push_back(index);
    if (!fits(snapshot, queue, need)) continue;
    // fillBackWorkloads: in reverse, put back each one the Workload still fits without.
    for (auto i = static_cast<std::ptrdiff_t>(targets.size()) - 2; i >= 0; --i) {
      snapshot.add(queue.name, candidates[targets[i]].usage);
      if (fits(snapshot, queue, need)) {
        targets[i] = targets.back();
        targets.pop_back();
      } else {
        snapshot.remove(queue.name, candidates[targets[i]].usage);
      }
    }
    return targets;
  }
  return {};
}

}  // namespace mka::standin::kueue_quota
