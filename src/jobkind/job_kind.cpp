#include "mka/jobkind/job_kind.h"

#include "mka/jobkind/managed_by.h"

namespace mka::jobkind {

JobKind::JobKind(config::ExternalFramework framework) : framework_(std::move(framework)) {}

std::string JobKind::managedByField() const {
  const auto& where = framework_.managedBy;
  return where.type == config::ManagedByLocation::Type::Path ? "." + where.path : where.fieldPath();
}

std::optional<std::string> JobKind::managedByValue(const nlohmann::json& job) const {
  return readManagedBy(job, framework_.managedBy);
}

std::optional<std::string> JobKind::notManagedByMultiKueue(const nlohmann::json& job) const {
  const auto& expected = framework_.managedBy.value;
  const auto value = managedByValue(job).value_or("");
  if (value == expected) return std::nullopt;
  return "Expecting " + managedByField() + " to be \"" + expected + "\" not \"" + value + "\"";
}

nlohmann::json JobKind::managedByPatch(const nlohmann::json& job) const {
  return jobkind::managedByPatch(job, framework_.managedBy);
}

void JobKind::removeManagedBy(nlohmann::json& job) const { jobkind::removeManagedBy(job, framework_.managedBy); }

std::vector<JobKind> kindsOf(const config::Configuration& configuration) {
  std::vector<JobKind> kinds;
  kinds.reserve(configuration.multiKueue.externalFrameworks.size());
  for (const auto& framework : configuration.multiKueue.externalFrameworks) kinds.emplace_back(framework);
  return kinds;
}

}  // namespace mka::jobkind
