#pragma once
// Kueue's quota arithmetic, for the Kueue stand-in (kueue_standin.cpp): what a Workload
// requests, what a ClusterQueue and its cohort have left, which flavor each pod set gets, and
// which lower-priority Workloads a preemption within the ClusterQueue evicts. Read from Kueue's
// scheduler at the commit docs/design/KUEUE-JOBFRAMEWORK.md pins (ff69552e):
// pkg/scheduler/flavorassigner/flavorassigner.go (assignFlavors, findFlavorForPodSets,
// fitsResourceQuota, Assignment.Message, resolveNoFitReason), pkg/cache/scheduler/
// resource_node.go (available, potentialAvailable), pkg/scheduler/preemption/preemption.go
// (classicalPreemptions, fillBackWorkloads) and pkg/resources/resource_formatter.go. Like the
// stand-in, it shares no code with the adapter's own reading of Kueue.
//
// Amounts are thousandths of a resource's unit (quantity::parseMilli), for every resource:
// Kueue counts CPU in thousandths and the rest in whole units, which only differs for
// fractional requests of the latter.
//
// Threads: pure functions and plain values.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::standin::kueue_quota {

using Milli = std::int64_t;

struct FlavorResource {
  std::string flavor;
  std::string resource;
  auto operator<=>(const FlavorResource&) const = default;
};
using Amounts = std::map<FlavorResource, Milli>;

// Kueue's spelling of an amount of `resource` (ResourceFormatter.ResourceQuantity), in
// Kubernetes' canonical form: CPU from its thousandths in DecimalSI ("1500m", "2"); memory,
// ephemeral-storage and hugepages-* in BinarySI when a whole multiple of 1Ki ("3Gi"), else
// DecimalSI; anything else in DecimalSI of whole units, rounded up ("4", "2k").
std::string formatQuantity(const std::string& resource, Milli milli);

// What one pod set of a Workload asks for: every container's requests (a limit alone counting
// as the request) times the pod count.
struct PodSetRequests {
  std::string name;
  std::int64_t count = 1;
  std::map<std::string, Milli> total;  // resource -> amount for the whole pod set
};
std::vector<PodSetRequests> podSetRequests(const nlohmann::json& workload);

// What a Workload holding quota counts against its ClusterQueue: status.admission's
// podSetAssignments, each resource's resourceUsage in the flavor assigned to it.
Amounts admittedUsage(const nlohmann::json& workload);

struct ResourceQuota {
  Milli nominal = 0;
  std::optional<Milli> borrowingLimit;
  std::optional<Milli> lendingLimit;
};
struct ResourceGroup {
  std::vector<std::string> coveredResources;
  std::vector<std::string> flavors;
};

// A ClusterQueue's spec as the scheduler reads it.
struct ClusterQueue {
  std::string name;
  std::string cohort;  // spec.cohortName
  std::vector<ResourceGroup> resourceGroups;
  std::map<FlavorResource, ResourceQuota> quotas;
  std::string withinClusterQueue = "Never";  // spec.preemption.withinClusterQueue

  static ClusterQueue from(const nlohmann::json& object);
  const ResourceGroup* groupCovering(const std::string& resource) const;
  // Kueue's preemption path in messages: "/<cohort>/<name>", or "/<name>" without a cohort.
  std::string path() const;
};

// Every ClusterQueue of a cluster and the quota its Workloads hold, as Kueue's scheduler cache
// keeps them. A cohort is the set of ClusterQueues naming it (no Cohort objects, no hierarchy).
class Snapshot {
 public:
  void addQueue(ClusterQueue queue);
  const ClusterQueue* queue(const std::string& name) const;
  const std::map<std::string, ClusterQueue>& queues() const { return queues_; }

  void add(const std::string& queue, const Amounts& usage);
  void remove(const std::string& queue, const Amounts& usage);
  Milli usage(const std::string& queue, const FlavorResource& fr) const;
  const Amounts& usage(const std::string& queue) const;

  // What the ClusterQueue may still take of `fr`: its unused nominal quota, plus (in a cohort)
  // what the cohort has unused, capped by its borrowingLimit; a lender keeps nominal minus
  // lendingLimit to itself.
  Milli available(const ClusterQueue& queue, const FlavorResource& fr) const;
  // The most it could ever take (available with nothing used anywhere).
  Milli potentialAvailable(const ClusterQueue& queue, const FlavorResource& fr) const;

 private:
  Milli localQuota(const ClusterQueue& queue, const FlavorResource& fr) const;
  Milli cohortSubtreeQuota(const std::string& cohort, const FlavorResource& fr) const;
  Milli cohortUsage(const std::string& cohort, const FlavorResource& fr) const;

  std::map<std::string, ClusterQueue> queues_;
  std::map<std::string, Amounts> usage_;
};

// How a Workload fits its ClusterQueue, worst last: Fit now; Preempt (only by evicting other
// Workloads, if any may be); NoFit.
enum class Mode { Fit, Preempt, NoFit };

struct PodSetAssignment {
  std::string name;
  std::int64_t count = 1;
  std::map<std::string, std::string> flavors;  // resource -> flavor
  std::map<std::string, Milli> usage;          // resource -> amount
};

struct Assignment {
  Mode mode = Mode::Fit;
  std::vector<PodSetAssignment> podSets;
  Amounts usage;                            // the whole Workload's, by flavor and resource
  std::set<FlavorResource> needPreemption;  // where it fits only by preempting
  std::string message;                      // "couldn't assign flavors to pod set main: ..."
  std::string noFitReason;                  // QuotaReserved=False reason when NoFit
};

// Whether evicting every Workload the ClusterQueue's preemption policy lets the pending one
// evict would leave `amount` of `fr` available to it.
using PreemptionOracle = std::function<bool(const FlavorResource& fr, Milli amount)>;

// Kueue's flavor assignment with its default flavorFungibility (whenCanBorrow MayStopSearch,
// whenCanPreempt TryNextFlavor): per pod set and resource group, the group's flavors in order,
// the first where every requested resource of the group fits (borrowing included) wins; else
// the first where preemption could make room; else the pod set, and so the Workload, does not
// fit. A pod set's requests count on top of the earlier pod sets' in the same flavor.
Assignment assignFlavors(const Snapshot& snapshot, const ClusterQueue& queue,
                         const std::vector<PodSetRequests>& requests, const PreemptionOracle& mayPreempt);

// A Workload holding quota that a preemption may evict.
struct Candidate {
  std::string key;  // namespace/name
  Amounts usage;
  bool evicted = false;  // being evicted already (counted, not evicted again)
  std::int64_t priority = 0;
  std::string reservedAt;  // QuotaReserved's lastTransitionTime
};

// Kueue's classical preemption within one ClusterQueue: the candidates in Kueue's order (being
// evicted first, then lowest priority, then most recently reserved, then key) are removed one by
// one until `need` fits; then, in reverse order, each one whose return still leaves room is put
// back. The indices into `candidates` of those to evict; empty when removing all does not make
// room.
std::vector<std::size_t> preemptionTargets(Snapshot snapshot, const ClusterQueue& queue, const Amounts& need,
                                           const std::vector<Candidate>& candidates);

// Whether `need` fits what the ClusterQueue has available in `snapshot`.
bool fits(const Snapshot& snapshot, const ClusterQueue& queue, const Amounts& need);

}  // namespace mka::standin::kueue_quota
