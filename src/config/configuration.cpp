#include "mka/config/configuration.h"

#include <algorithm>
#include <span>

namespace mka::config {

std::string ManagedByLocation::fieldPath() const {
  return type == Type::Path ? path : "metadata.labels[" + labelKey + "]";
}

std::string_view toString(ManagedByDefaulting policy) {
  switch (policy) {
    case ManagedByDefaulting::MultiKueueQueues: return "MultiKueueQueues";
    case ManagedByDefaulting::QueueLabeled: return "QueueLabeled";
    case ManagedByDefaulting::Never: return "Never";
  }
  return "Unknown";
}

std::optional<ManagedByDefaulting> parseManagedByDefaulting(std::string_view text) {
  for (auto p : {ManagedByDefaulting::MultiKueueQueues, ManagedByDefaulting::QueueLabeled, ManagedByDefaulting::Never})
    if (toString(p) == text) return p;
  return std::nullopt;
}

const ExternalFramework* Configuration::findFramework(const api::GroupVersionKind& gvk) const {
  for (const auto& f : multiKueue.externalFrameworks)
    if (f.gvk == gvk) return &f;
  return nullptr;
}

std::string Configuration::resourceOf(const api::GroupVersionKind& gvk) const {
  const auto same = [&](const api::GroupVersionKind& other) {
    return other.group == gvk.group && other.kind == gvk.kind;
  };
  for (const auto& f : multiKueue.externalFrameworks)
    if (same(f.gvk) && !f.resource.empty()) return f.resource;
  for (const auto& f : integrations.frameworks)
    if (same(f.gvk) && !f.resource.empty()) return f.resource;
  return api::guessResource(gvk.kind);
}

std::vector<std::string> Configuration::multiKueueControllerNames() const {
  std::vector<std::string> names;
  if (!dispatch.admissionCheckControllerName.empty()) names.push_back(dispatch.admissionCheckControllerName);
  // Kueue's own name always counts: a queue it dispatches also needs the marker on the job.
  if (std::find(names.begin(), names.end(), api::kMultiKueueControllerName) == names.end())
    names.emplace_back(api::kMultiKueueControllerName);
  return names;
}

namespace {

// Where a built-in kind names the objects its jobs need (syncDependencies).
struct DependencyRow {
  std::string_view kind;
  std::string_view path;
};
constexpr DependencyRow kPipelineRunDependencies[] = {
    {"Secret", "spec.workspaces[*].secret.secretName"},
    {"ConfigMap", "spec.workspaces[*].configMap.name"},
    {"ServiceAccount", "spec.taskRunTemplate.serviceAccountName"},
    {"ServiceAccount", "spec.taskRunSpecs[*].serviceAccountName"},
};
constexpr DependencyRow kWorkflowDependencies[] = {
    {"ServiceAccount", "spec.serviceAccountName"},
    {"Secret", "spec.imagePullSecrets[*].name"},
    {"Secret", "spec.volumes[*].secret.secretName"},
    {"ConfigMap", "spec.volumes[*].configMap.name"},
};

// The built-in profiles, by group and kind (any version).
struct Profile {
  std::string_view group;
  std::string_view kind;
  ManagedByLocation::Type type;
  std::string_view pathOrLabel;
  std::string_view value;
  std::string_view copyRemoves = {};  // a JSON pointer the worker's copy leaves out
  std::span<const DependencyRow> dependencies = {};
};
constexpr Profile kProfiles[] = {
    {"tekton.dev",
     "PipelineRun",
     ManagedByLocation::Type::Path,
     "spec.managedBy",
     api::kMultiKueueControllerName,
     {},
     kPipelineRunDependencies},
    // A Workflow's ttlStrategy deletes the finished copy, possibly before its final status
    // reached the manager, which then sees its job gone (kueue#14734 did the same for Jobs).
    {"argoproj.io", "Workflow", ManagedByLocation::Type::Label, kArgoInstanceIdLabel, kArgoInstanceIdValue,
     "/spec/ttlStrategy", kWorkflowDependencies},
};

const Profile* profileOf(const api::GroupVersionKind& gvk) {
  for (const auto& profile : kProfiles)
    if (gvk.group == profile.group && gvk.kind == profile.kind) return &profile;
  return nullptr;
}

}  // namespace

std::optional<ManagedByLocation> builtinProfile(const api::GroupVersionKind& gvk) {
  const auto* profile = profileOf(gvk);
  if (profile == nullptr) return std::nullopt;
  ManagedByLocation where;
  where.type = profile->type;
  where.path = profile->type == ManagedByLocation::Type::Path ? std::string(profile->pathOrLabel) : "";
  where.labelKey = profile->type == ManagedByLocation::Type::Label ? std::string(profile->pathOrLabel) : "";
  where.value = std::string(profile->value);
  return where;
}

std::vector<DependencyPath> builtinDependencies(const api::GroupVersionKind& gvk) {
  const auto* profile = profileOf(gvk);
  if (profile == nullptr) return {};
  std::vector<DependencyPath> out;
  for (const auto& row : profile->dependencies) out.push_back({std::string(row.kind), std::string(row.path)});
  return out;
}

std::vector<std::string> builtinRemoteCopyRemovals(const api::GroupVersionKind& gvk) {
  const auto* profile = profileOf(gvk);
  if (profile == nullptr || profile->copyRemoves.empty()) return {};
  return {std::string(profile->copyRemoves)};
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  const auto valueOf = [&](const std::string& key) -> std::optional<std::string> {
    if (!labels.is_object()) return std::nullopt;
    auto it = labels.find(key);
    if (it == labels.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  for (const auto& [key, value] : matchLabels)
    if (valueOf(key) != value) return false;
  for (const auto& e : matchExpressions) {
    const auto value = valueOf(e.key);
    const bool listed = value && std::find(e.values.begin(), e.values.end(), *value) != e.values.end();
    switch (e.op) {
      case Expression::Operator::In:
        if (!listed) return false;
        break;
      case Expression::Operator::NotIn:
        if (listed) return false;
        break;
      case Expression::Operator::Exists:
        if (!value) return false;
        break;
      case Expression::Operator::DoesNotExist:
        if (value) return false;
        break;
    }
  }
  return true;
}

PodFieldPaths PodSetRule::podFieldPaths() const {
  if (podFields) return *podFields;
  if (templatePath.empty()) return {};
  return {templatePath + ".metadata.labels", templatePath + ".metadata.annotations",
          templatePath + ".spec.nodeSelector", templatePath + ".spec.tolerations"};
}

const IntegratedFramework* Integrations::find(const api::GroupVersionKind& gvk) const {
  for (const auto& f : frameworks)
    if (f.gvk == gvk) return &f;
  return nullptr;
}

const std::vector<std::pair<std::string, std::string>>& integrationProfileKinds() {
  static const std::vector<std::pair<std::string, std::string>> kinds = {{"argoproj.io", "Workflow"},
                                                                         {"tekton.dev", "PipelineRun"}};
  return kinds;
}

std::optional<IntegratedFramework> integrationProfile(const api::GroupVersionKind& gvk) {
  IntegratedFramework f;
  f.gvk = gvk;
  f.profile = true;
  if (gvk.group == "argoproj.io" && gvk.kind == "Workflow") {
    // As `argo suspend` and `argo resume` do; a Workflow records its end in status.phase.
    f.suspend = FieldValue{"spec.suspend", true};
    // Argo gives every pod of the Workflow its podMetadata, nodeSelector and tolerations (a
    // template's own nodeSelector replaces the Workflow's).
    f.podSets = {PodSetRule{"main", PodSetCount{"", 1, 1}, "",
                            PodFieldPaths{"spec.podMetadata.labels", "spec.podMetadata.annotations",
                                          "spec.nodeSelector", "spec.tolerations"}}};
    f.podSetsFrom = PodSetsFrom::ArgoTemplates;
    FinishedRule finished;
    finished.type = FinishedRule::Type::Phase;
    finished.phasePath = "status.phase";
    finished.succeeded = {"Succeeded"};
    finished.failed = {"Failed", "Error"};
    finished.messagePath = "status.message";
    f.finished = finished;
    // Suspending a Workflow stops no running pod: each runs until its step ends. Pod nodes
    // (status.nodes, keyed by node id) say which still run.
    ActiveRule active;
    active.type = ActiveRule::Type::Pods;
    active.items = "/status/nodes";
    active.filter = FieldValue{"type", "Pod"};
    active.path = "phase";
    active.running = {"Pending", "Running"};
    f.active = active;
    // Pods started: a Pod node that runs or ran. Not phase Running: a Workflow reads Running from
    // Argo's first pass, queued and suspended with no node yet, so it would read started before
    // any pod exists and Kueue's timeout would never apply. A Pending Pod node is a pod the
    // scheduler has not placed. A finished Workflow counts as started (podsReady rule).
    ActiveRule podsReady = active;
    podsReady.running = {"Running", "Succeeded", "Failed"};
    f.podsReady = podsReady;
    return f;
  }
  if (gvk.group == "tekton.dev" && gvk.kind == "PipelineRun") {
    // tekton-kueue's rules, so that either can serve a cluster.
    f.suspend = FieldValue{"spec.status", "PipelineRunPending"};
    f.stop = FieldValue{"spec.status", "StoppedRunFinally"};
    // Tekton gives each TaskRun the run's labels and annotations (and spec.taskRunTemplate's
    // podTemplate), and each pod its TaskRun's; its PodTemplate has no metadata of its own.
    // Tekton's webhook refuses any change to a run's spec but spec.status, pending or not
    // (PipelineRunSpec.ValidateUpdate), so the admission's node labels and tolerations cannot be
    // written into the run's spec: the start writes them into its annotations
    // (kChildPlacementAnnotation), Tekton copies them to each TaskRun, and the /mutate-children
    // webhook writes them into the TaskRun's spec.podTemplate as Tekton creates it, which its
    // pods take. The run's own podTemplate is still checked: a value there that conflicts with
    // the admission's refuses the start.
    PodFieldPaths fields{"metadata.labels", "metadata.annotations", "spec.taskRunTemplate.podTemplate.nodeSelector",
                         "spec.taskRunTemplate.podTemplate.tolerations"};
    fields.specImmutable = true;
    f.podSets = {PodSetRule{"pod-set-1", PodSetCount{"", 1, 1}, "", fields}};
    f.children = ChildRule{
        {"tekton.dev", "v1", "TaskRun"}, "taskruns", "spec.podTemplate.nodeSelector", "spec.podTemplate.tolerations"};
    f.podSetsFrom = PodSetsFrom::TektonAnnotations;
    FinishedRule finished;
    finished.type = FinishedRule::Type::Condition;
    finished.conditionType = "Succeeded";
    f.finished = finished;
    // A run is under way (its TaskRuns' pods too, until Tekton has stopped or cancelled them)
    // while Succeeded is Unknown; a pending run, Unknown with reason PipelineRunPending, has
    // none.
    ActiveRule active;
    active.type = ActiveRule::Type::Condition;
    active.conditionType = "Succeeded";
    active.conditionStatus = "Unknown";
    active.exceptReasons = {"PipelineRunPending"};
    f.active = active;
    // Started: Succeeded Unknown with reason Running (its TaskRuns created; Tekton does not say
    // whether their pods were scheduled), or finished (podsReady rule).
    ActiveRule podsReady = active;
    podsReady.exceptReasons.clear();
    podsReady.reasons = {"Running"};
    f.podsReady = podsReady;
    return f;
  }
  return std::nullopt;
}

}  // namespace mka::config
