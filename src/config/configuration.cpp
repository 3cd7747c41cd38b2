#include "mka/config/configuration.h"

#include <algorithm>

namespace mka::config {

std::string ManagedByLocation::fieldPath() const {
  return type == Type::Path ? path : "metadata.labels[" + labelKey + "]";
}

std::string_view toString(ManagedByDefaulting policy) {
  switch (policy) {
    case ManagedByDefaulting::MultiKueueQueues:
      return "MultiKueueQueues";
    case ManagedByDefaulting::QueueLabeled:
      return "QueueLabeled";
    case ManagedByDefaulting::Never:
      return "Never";
  }
  return "Unknown";
}

std::optional<ManagedByDefaulting> parseManagedByDefaulting(std::string_view text) {
  for (auto p : {ManagedByDefaulting::MultiKueueQueues, ManagedByDefaulting::QueueLabeled, ManagedByDefaulting::Never})
    if (toString(p) == text) return p;
  return std::nullopt;
}

const ExternalFramework* Configuration::findFramework(const kube::GroupVersionKind& gvk) const {
  for (const auto& f : multiKueue.externalFrameworks)
    if (f.gvk == gvk) return &f;
  return nullptr;
}

std::vector<std::string> Configuration::multiKueueControllerNames() const {
  std::vector<std::string> names;
  if (!dispatch.admissionCheckControllerName.empty()) names.push_back(dispatch.admissionCheckControllerName);
  // Kueue's own name always counts: a queue it dispatches also needs the marker on the job.
  if (std::find(names.begin(), names.end(), kMultiKueueControllerName) == names.end())
    names.emplace_back(kMultiKueueControllerName);
  return names;
}

std::optional<ManagedByLocation> builtinProfile(const kube::GroupVersionKind& gvk) {
  if (gvk.kind == "PipelineRun" && gvk.group == "tekton.dev") return ManagedByLocation{};
  if (gvk.kind == "Workflow" && gvk.group == "argoproj.io") {
    ManagedByLocation where;
    where.type = ManagedByLocation::Type::Label;
    where.path.clear();
    where.labelKey = std::string(kArgoInstanceIdLabel);
    where.value = std::string(kArgoInstanceIdValue);
    return where;
  }
  return std::nullopt;
}

}  // namespace mka::config
