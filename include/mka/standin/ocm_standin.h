#pragma once
// An Open Cluster Management placement scheduler stand-in for one sandbox hub: it reads the
// Placements of one namespace and writes what OCM's scheduler writes for them, and nothing else
// (docs/placement.md, "The OCM stand-in"):
// - PlacementDecisions `<placement>-decision-<n>` (n from 1), at most 100 decisions each, labels
//   cluster.open-cluster-management.io/placement=<placement>,
//   cluster.open-cluster-management.io/decision-group-index=0 and decision-group-name="",
//   owned by the Placement (controller), status.decisions [{clusterName, reason: ""}] sorted by
//   name; one empty decision object when nothing is selected; surplus ones deleted;
// - the Placement's status: numberOfSelectedClusters, decisionGroups, and the conditions
//   PlacementMisconfigured (False, Succeedconfigured) and PlacementSatisfied
//   (AllDecisionsScheduled / NoManagedClusterMatched / NotAllDecisionsScheduled).
// Inputs: the managed clusters are a list the test gives ({name, labels}, changed with
// setClusters), not ManagedCluster objects: the sandbox serves no ManagedCluster CRD, and
// keeping the inventory in the test keeps this stand-in a writer of decisions only.
// Supported Placement subset: spec.predicates[].requiredClusterSelector.labelSelector
// (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist; a cluster is feasible when any
// predicate selects it, every cluster when there is none) and spec.numberOfClusters (the first
// N feasible clusters by name). Logged once per Placement generation and otherwise ignored:
// clusterSets (every cluster is in one bound set), claimSelector and celSelector (the inputs
// have no claims), tolerations (no taints), prioritizerPolicy (no scores), decisionStrategy
// (one decision group), spreadPolicy.
//
// Threads: owns one worker thread that looks at the hub every Options::pollInterval and writes
// differences; setClusters() and sync() from any thread (sync() runs one pass on the caller's).

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mka::sandbox {
class ClusterApi;
}  // namespace mka::sandbox

namespace mka::standin {

struct ManagedClusterInput {
  std::string name;
  std::map<std::string, std::string> labels;
};

class OcmStandIn {
 public:
  struct Options {
    std::string namespace_ = "kueue-system";  // where Placements are read and decisions written
    std::chrono::milliseconds pollInterval{20};
  };

  OcmStandIn(sandbox::ClusterApi& hub, std::vector<ManagedClusterInput> clusters, Options options);
  ~OcmStandIn();
  OcmStandIn(const OcmStandIn&) = delete;
  OcmStandIn& operator=(const OcmStandIn&) = delete;

  void start();
  void stop();
  // Replaces the managed clusters (a relabelled worker, a new one); the next pass decides again.
  void setClusters(std::vector<ManagedClusterInput> clusters);
  // One scheduling pass over every Placement now.
  void sync();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::standin
