#include "mka/jobkind/job_kind.h"

#include <algorithm>

#include "mka/jobkind/managed_by.h"

namespace mka::jobkind {

JobKind::JobKind(config::ExternalFramework framework, std::optional<config::IntegratedFramework> integration,
                 bool dispatched)
    : framework_(std::move(framework)), integration_(std::move(integration)), dispatched_(dispatched) {
  copyRemovals_ = config::builtinRemoteCopyRemovals(framework_.gvk);
  for (const auto& field : framework_.remoteCopy.removeFields)
    if (std::find(copyRemovals_.begin(), copyRemovals_.end(), field) == copyRemovals_.end())
      copyRemovals_.push_back(field);
  if (framework_.syncDependencies) {
    dependencyPaths_ = config::builtinDependencies(framework_.gvk);
    for (const auto& path : framework_.dependencies)
      if (std::find(dependencyPaths_.begin(), dependencyPaths_.end(), path) == dependencyPaths_.end())
        dependencyPaths_.push_back(path);
  }
}

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
  for (const auto& framework : configuration.multiKueue.externalFrameworks) {
    const auto* integration = configuration.integrations.find(framework.gvk);
    kinds.emplace_back(framework, integration ? std::optional(*integration) : std::nullopt);
  }
  return kinds;
}

std::optional<JobKind> kindOf(const config::Configuration& configuration, const api::GroupVersionKind& gvk) {
  const auto* integration = configuration.integrations.find(gvk);
  if (const auto* framework = configuration.findFramework(gvk))
    return JobKind(*framework, integration ? std::optional(*integration) : std::nullopt);
  if (integration == nullptr) return std::nullopt;
  for (auto& kind : integratedKindsOf(configuration))
    if (kind.is(gvk)) return std::move(kind);
  return std::nullopt;
}

std::vector<JobKind> integratedKindsOf(const config::Configuration& configuration) {
  std::vector<JobKind> kinds;
  for (const auto& integration : configuration.integrations.frameworks) {
    if (const auto* framework = configuration.findFramework(integration.gvk)) {
      kinds.emplace_back(*framework, integration, /*dispatched=*/true);
      continue;
    }
    config::ExternalFramework framework{integration.name, integration.gvk, {}, false};
    if (auto profile = config::builtinProfile(integration.gvk)) {
      framework.managedBy = *profile;
      framework.managedByFromProfile = true;
    }
    kinds.emplace_back(std::move(framework), integration, /*dispatched=*/false);
  }
  return kinds;
}

}  // namespace mka::jobkind
