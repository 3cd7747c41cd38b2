#pragma once
// What a worker's Kueue has room for, read from its ClusterQueues and LocalQueues as the
// dispatch loop's worker caches hold them, and whether a Workload fits there: the quota-aware
// dispatcher's view of the fleet (multiKueue.dispatcherName multikueue-adapter.dev/quota-aware)
// and the source of the worker_cluster_queue_* metrics.
//
// A manager's Workload runs on a worker in that worker's LocalQueue of the same namespace and
// name, hence in the ClusterQueue that LocalQueue points to. A Workload fits there when every
// pod set gets, in each resource group covering what it requests, one flavor with room for all
// of that group's resources (flavors tried in the group's order, as Kueue's default
// flavorFungibility does). Room for a flavor and resource is the ClusterQueue's nominal quota
// less its reservation (status.flavorsReservation), plus what it may borrow in its cohort: the
// other members' unused lendable quota (lendingLimit, else nominal) less what they borrow
// themselves, capped by its borrowingLimit. Cohorts are flat (a cohort's own parent and quota,
// the Cohort kind, are not read), and preemption is not counted as room: a Workload that fits
// only by preempting does not fit now. What a Workload "could ever" hold is the same with no
// reservation anywhere.
//
// Reservations lag: a ClusterQueue's status is written after Kueue reserves, so copies the
// dispatch loop placed and the worker has not yet reserved are charged on top (Snapshot::pending).
//
// Threads: values; a Snapshot is immutable once built and shared between threads.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::multikueue::capacity {

using Milli = std::int64_t;                      // thousandths of a resource's unit
using Resources = std::map<std::string, Milli>;  // resource name -> amount

// A pod set's total requests: count x one pod's (containers summed, each resource at least the
// largest init container's, plus spec.overhead; a limit without a request is the request, as
// Kubernetes defaults it).
struct PodSetRequest {
  std::string name;
  std::int64_t count = 1;
  Resources total;
};
// A Workload's spec.podSets as requests. Quantities that do not parse are an error (Kueue's
// webhook refuses such a Workload): thrown as mka::Error naming the pod set and resource.
std::vector<PodSetRequest> podSetRequests(const nlohmann::json& workload);

struct Quota {
  Milli nominal = 0;
  std::optional<Milli> borrowingLimit;
  std::optional<Milli> lendingLimit;
  Milli reserved = 0;  // status.flavorsReservation total
};

struct ResourceGroup {
  std::vector<std::string> resources;  // coveredResources
  std::vector<std::string> flavors;    // in the order Kueue tries them
};

struct ClusterQueue {
  std::string name;
  std::string cohort;
  std::vector<ResourceGroup> groups;
  std::map<std::pair<std::string, std::string>, Quota> quotas;  // (flavor, resource)
  std::int64_t pendingWorkloads = 0;                            // status.pendingWorkloads

  // From a ClusterQueue object; unparseable quantities count as 0.
  static ClusterQueue from(const nlohmann::json& clusterQueue);
};

// A copy placed on the worker that its Kueue has not reserved yet.
struct PendingCopy {
  std::string workloadKey;  // "namespace/name", the manager's key too
  std::string localQueue;   // "namespace/queue"
  std::vector<PodSetRequest> podSets;
};

// The verdict for one Workload on one worker.
struct Fit {
  bool now = false;          // room now, reservations and pending copies counted
  bool ever = false;         // room on an empty worker
  double score = 0;          // when `now`: the share of the chosen quotas left free after it (lower fits tighter)
  std::string clusterQueue;  // "" when the LocalQueue is missing
  std::string why;           // when not `now`: the reason, naming the ClusterQueue and the resource
  std::int64_t pendingWorkloads = 0;  // in that ClusterQueue, with our pending copies
};

// One worker's queues.
class Snapshot {
 public:
  void addClusterQueue(ClusterQueue clusterQueue);
  // A LocalQueue object: "namespace/name" -> its spec.clusterQueue.
  void addLocalQueue(const nlohmann::json& localQueue);
  void addPending(PendingCopy copy);

  const std::map<std::string, ClusterQueue>& clusterQueues() const { return clusterQueues_; }
  const std::vector<PendingCopy>& pending() const { return pending_; }
  // The ClusterQueue name a LocalQueue "namespace/name" points to, or nullopt.
  std::optional<std::string> clusterQueueOf(const std::string& localQueue) const;

  // Whether `podSets`, queued in `localQueue` ("namespace/name"), fit; the pending copy of
  // `workloadKey` itself is not charged.
  Fit fit(const std::string& localQueue, const std::vector<PodSetRequest>& podSets,
          const std::string& workloadKey = "") const;

 private:
  std::map<std::string, ClusterQueue> clusterQueues_;
  std::map<std::string, std::string> localQueues_;
  std::vector<PendingCopy> pending_;
};

}  // namespace mka::multikueue::capacity
