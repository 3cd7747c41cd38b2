#pragma once
// Typed read-only views over the Kubernetes and Kueue objects the controllers read, as the
// caches hold them (JSON): one named accessor per field the code reads, so a misspelled field
// does not compile, and no copy of the object or of its strings. A missing field, or one of
// another type, reads as empty ("", false, 0, an empty list) like the tolerant readers of
// mka/common/json_fields.h: the CRDs' schemas keep the types, and code that must refuse bad
// input validates it first. A view borrows its object and must not outlive it.
//
// Threads: views are values over a const object; any thread may read one.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::api {

// metadata and status.conditions, which every kind has.
class ObjectView {
 public:
  explicit ObjectView(const nlohmann::json& object) : object_(object) {}
  const nlohmann::json& json() const { return object_; }

  std::string_view name() const;
  std::string_view namespace_() const;
  std::string_view uid() const;
  std::string_view resourceVersion() const;
  std::int64_t generation() const;
  bool terminating() const;  // metadata.deletionTimestamp set
  std::string_view label(std::string_view key) const;
  std::string_view annotation(std::string_view key) const;
  const nlohmann::json& ownerReferences() const;  // an array
  const nlohmann::json& finalizers() const;       // an array

  // status.conditions[type], or nullptr.
  const nlohmann::json* condition(std::string_view type) const;
  bool conditionIsTrue(std::string_view type) const;

 protected:
  const nlohmann::json& metadata() const;
  const nlohmann::json& spec() const;
  const nlohmann::json& status() const;

 private:
  const nlohmann::json& object_;
};

// kueue.x-k8s.io Workload.
class WorkloadView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  std::string_view queueName() const;  // spec.queueName
  bool active() const;                 // spec.active, true when unset
  const nlohmann::json& podSets() const;
  // status.admission.clusterQueue: where quota is reserved, "" before.
  std::string_view admittedClusterQueue() const;
  const nlohmann::json& podSetAssignments() const;  // status.admission.podSetAssignments
  std::string_view clusterName() const;             // status.clusterName
  std::vector<std::string> nominatedClusterNames() const;
  // status.admissionChecks (an array), and the entry of one check or nullptr.
  const nlohmann::json& admissionChecks() const;
  const nlohmann::json* admissionCheck(std::string_view check) const;

  bool finished() const;       // Finished=True
  bool quotaReserved() const;  // QuotaReserved=True
  bool admitted() const;       // Admitted=True
  bool evicted() const;        // Evicted=True
};

// kueue.x-k8s.io AdmissionCheck.
class AdmissionCheckView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  std::string_view controllerName() const;  // spec.controllerName
  // spec.parameters (an object): what the check's controller reads its parameters from.
  bool hasParameters() const;
  std::string_view parametersApiGroup() const;
  std::string_view parametersKind() const;
  std::string_view parametersName() const;
};

// kueue.x-k8s.io MultiKueueConfig.
class MultiKueueConfigView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  std::vector<std::string> clusters() const;  // spec.clusters, the strings among them
};

// kueue.x-k8s.io MultiKueueCluster: where its worker's credentials come from.
class MultiKueueClusterView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  bool hasClusterProfileRef() const;
  std::string_view clusterProfileName() const;  // spec.clusterSource.clusterProfileRef.name
  bool hasKubeConfig() const;                   // spec.clusterSource.kubeConfig is an object
  std::string_view kubeConfigLocation() const;  // spec.clusterSource.kubeConfig.location
  // spec.clusterSource.kubeConfig.locationType; "" when unset (Kueue defaults it to Secret).
  std::string_view kubeConfigLocationType() const;
};

// kueue.x-k8s.io ClusterQueue: its quota and what is reserved of it.
class ClusterQueueView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  std::string_view cohort() const;                   // spec.cohortName
  const nlohmann::json& resourceGroups() const;      // spec.resourceGroups (an array)
  const nlohmann::json& flavorsReservation() const;  // status.flavorsReservation (an array)
  std::int64_t pendingWorkloads() const;             // status.pendingWorkloads
};

class LocalQueueView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  std::string_view clusterQueue() const;  // spec.clusterQueue
};

// cluster.open-cluster-management.io PlacementDecision.
class PlacementDecisionView : public ObjectView {
 public:
  using ObjectView::ObjectView;

  std::vector<std::string> clusterNames() const;  // status.decisions[].clusterName, the non-empty ones
};

}  // namespace mka::api
