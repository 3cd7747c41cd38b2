#include "mka/api/views.h"

#include "mka/api/conditions.h"
#include "mka/api/kueue.h"
#include "mka/common/json_fields.h"

namespace mka::api {

using json_fields::arrayMember;
using json_fields::objectMember;
using json_fields::stringView;
using nlohmann::json;

namespace {

// The strings of a list, the other items passed over.
std::vector<std::string> stringsOf(const json& list) {
  std::vector<std::string> out;
  for (const auto& item : list)
    if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}

}  // namespace

const json& ObjectView::metadata() const { return objectMember(object_, "metadata"); }
const json& ObjectView::spec() const { return objectMember(object_, "spec"); }
const json& ObjectView::status() const { return objectMember(object_, "status"); }

std::string_view ObjectView::name() const { return stringView(metadata(), "name"); }
std::string_view ObjectView::namespace_() const { return stringView(metadata(), "namespace"); }
std::string_view ObjectView::uid() const { return stringView(metadata(), "uid"); }
std::string_view ObjectView::resourceVersion() const { return stringView(metadata(), "resourceVersion"); }

std::int64_t ObjectView::generation() const {
  const auto it = metadata().find("generation");
  return it != metadata().end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

bool ObjectView::terminating() const { return isTerminating(object_); }

std::string_view ObjectView::label(std::string_view key) const {
  return stringView(objectMember(metadata(), "labels"), key);
}

std::string_view ObjectView::annotation(std::string_view key) const {
  return stringView(objectMember(metadata(), "annotations"), key);
}

const json& ObjectView::ownerReferences() const { return arrayMember(metadata(), "ownerReferences"); }
const json& ObjectView::finalizers() const { return arrayMember(metadata(), "finalizers"); }

const json* ObjectView::condition(std::string_view type) const { return findCondition(object_, type); }
bool ObjectView::conditionIsTrue(std::string_view type) const { return api::conditionIsTrue(object_, type); }

std::string_view WorkloadView::queueName() const { return stringView(spec(), "queueName"); }

bool WorkloadView::active() const {
  const auto it = spec().find("active");
  return it == spec().end() || !it->is_boolean() || it->get<bool>();
}

const json& WorkloadView::podSets() const { return arrayMember(spec(), "podSets"); }

std::string_view WorkloadView::admittedClusterQueue() const {
  return stringView(objectMember(status(), "admission"), "clusterQueue");
}

const json& WorkloadView::podSetAssignments() const {
  return arrayMember(objectMember(status(), "admission"), "podSetAssignments");
}

std::string_view WorkloadView::clusterName() const { return stringView(status(), "clusterName"); }

std::vector<std::string> WorkloadView::nominatedClusterNames() const {
  return stringsOf(arrayMember(status(), "nominatedClusterNames"));
}

const json& WorkloadView::admissionChecks() const { return arrayMember(status(), "admissionChecks"); }

const json* WorkloadView::admissionCheck(std::string_view check) const {
  return json_fields::findInStatusList(json(), "admissionChecks", "name", check);
}

bool WorkloadView::finished() const { return conditionIsTrue(condition::kFinished); }
bool WorkloadView::quotaReserved() const { return conditionIsTrue(condition::kQuotaReserved); }
bool WorkloadView::admitted() const { return conditionIsTrue(condition::kAdmitted); }
bool WorkloadView::evicted() const { return conditionIsTrue(condition::kEvicted); }

std::string_view AdmissionCheckView::controllerName() const { return stringView(spec(), "controllerName"); }
bool AdmissionCheckView::hasParameters() const {
  const auto it = spec().find("parameters");
  return it != spec().end() && it->is_object();
}
std::string_view AdmissionCheckView::parametersApiGroup() const {
  return stringView(objectMember(spec(), "parameters"), "apiGroup");
}
std::string_view AdmissionCheckView::parametersKind() const {
  return stringView(objectMember(spec(), "parameters"), "kind");
}
std::string_view AdmissionCheckView::parametersName() const {
  return stringView(objectMember(spec(), "parameters"), "name");
}

std::vector<std::string> MultiKueueConfigView::clusters() const { return stringsOf(arrayMember(spec(), "clusters")); }

namespace {

const json& clusterSourceOf(const json& spec) { return objectMember(spec, "clusterSource"); }

}  // namespace

bool MultiKueueClusterView::hasClusterProfileRef() const {
  return clusterSourceOf(spec()).contains("clusterProfileRef");
}
std::string_view MultiKueueClusterView::clusterProfileName() const {
  return stringView(objectMember(clusterSourceOf(spec()), "clusterProfileRef"), "name");
}
bool MultiKueueClusterView::hasKubeConfig() const {
  const auto& source = clusterSourceOf(spec());
  const auto it = source.find("kubeConfig");
  return it != source.end() && it->is_object();
}
std::string_view MultiKueueClusterView::kubeConfigLocation() const {
  return stringView(objectMember(clusterSourceOf(spec()), "kubeConfig"), "location");
}
std::string_view MultiKueueClusterView::kubeConfigLocationType() const {
  return stringView(objectMember(clusterSourceOf(spec()), "kubeConfig"), "locationType");
}

std::string_view ClusterQueueView::cohort() const { return stringView(spec(), "cohortName"); }
const json& ClusterQueueView::resourceGroups() const { return arrayMember(spec(), "resourceGroups"); }
const json& ClusterQueueView::flavorsReservation() const { return arrayMember(status(), "flavorsReservation"); }

std::int64_t ClusterQueueView::pendingWorkloads() const {
  const auto it = status().find("pendingWorkloads");
  return it != status().end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

std::string_view LocalQueueView::clusterQueue() const { return stringView(spec(), "clusterQueue"); }

std::vector<std::string> PlacementDecisionView::clusterNames() const {
  std::vector<std::string> out;
  for (const auto& entry : arrayMember(status(), "decisions"))
    if (const auto name = stringView(entry, "clusterName"); !name.empty()) out.emplace_back(name);
  return out;
}

}  // namespace mka::api
