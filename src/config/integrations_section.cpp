// The integrations section of an AdapterConfiguration (SPEC §7.1): per kind, the rules the job
// integration queues it by, on top of a built-in profile where there is one.
#include <algorithm>
#include <string>
#include <vector>

#include "formats.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/yaml/json.h"

namespace mka::config::detail {
namespace {

constexpr std::string_view kIntegrationExample =
    "- name: TrainingRun.v1.ml.example.com with suspend, podSets and finished (or a built-in profile: - name: "
    "Workflow.v1alpha1.argoproj.io)";
constexpr std::string_view kFieldValueExample = "{path: spec.suspend, value: true}";
constexpr std::string_view kPodSetExample =
    "- {name: main, count: {path: spec.replicas, default: 1}, template: spec.template}";
constexpr std::string_view kFinishedExample =
    "{condition: {type: Succeeded}} or {phase: {path: status.phase, succeeded: [Succeeded], failed: [Failed]}}";

constexpr std::string_view kActiveExample =
    "{pods: {items: /status/nodes, filter: {path: type, value: Pod}, state: {path: phase, running: [Pending, "
    "Running]}}}, {condition: {type: Running, status: \"True\"}} or {phase: {path: status.phase, running: "
    "[Running]}}";

constexpr std::string_view kPodsReadyExample =
    "{pods: {items: /status/nodes, filter: {path: type, value: Pod}, state: {path: phase, running: [Running, "
    "Succeeded, Failed]}}}, {condition: {type: Succeeded, status: Unknown, reasons: [Running]}} or {phase: {path: "
    "status.phase, running: [Running]}}";

FieldValue readFieldValue(MapReader m, std::string_view valueFix =
                                           "write the value the field holds while the job is suspended, "
                                           "such as true") {
  m.checkKeys({"path", "value"}, UnknownKeys::Reject);
  FieldValue out;
  m.read("path", out.path);
  if (const auto* value = m.get("value")) {
    if (value->isScalar()) {
      out.value = yaml::scalarToJson(*value);
    } else {
      m.reader().error(m.pathOf("value"), "must be a single value, not " + describe(*value), std::string(valueFix));
    }
  }
  return out;
}

std::vector<std::string> readStrings(MapReader& m, std::string_view key) {
  std::vector<std::string> out;
  const auto* list = m.get(key);
  if (!list) return out;
  if (!list->isSequence()) {
    m.reader().error(m.pathOf(key), "must be a list, not " + describe(*list), "write it as [Succeeded]");
    return out;
  }
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    const auto path = indexPath(m.pathOf(key), i++);
    if (!item->isScalar() || item->isNull()) {
      m.reader().error(path, "must be a string, not " + describe(*item), "write a phase name such as Succeeded");
      continue;
    }
    out.push_back(item->scalar());
  }
  return out;
}

PodSetRule readPodSet(YamlReader& reader, const yaml::Node& item, const std::string& path) {
  PodSetRule rule;
  MapReader p(reader, &item, path, kPodSetExample);
  p.checkKeys({"name", "count", "template"}, UnknownKeys::Reject);
  p.read("name", rule.name);
  p.read("template", rule.templatePath);
  auto count = p.child("count", "{path: spec.replicas, default: 1} or {value: 4}");
  count.checkKeys({"path", "default", "value"}, UnknownKeys::Reject);
  count.read("path", rule.count.path);
  int number = 0;
  if (count.has("default")) {
    number = static_cast<int>(rule.count.defaultValue);
    count.read("default", number);
    rule.count.defaultValue = number;
  }
  if (count.has("value")) {
    number = 0;
    count.read("value", number);
    rule.count.value = number;
  }
  return rule;
}

FinishedRule readFinished(MapReader m) {
  m.checkKeys({"condition", "phase"}, UnknownKeys::Reject);
  FinishedRule out;
  if (m.has("phase")) {
    out.type = FinishedRule::Type::Phase;
    auto phase = m.child("phase", kFinishedExample);
    phase.checkKeys({"path", "succeeded", "failed", "message"}, UnknownKeys::Reject);
    phase.read("path", out.phasePath);
    out.succeeded = readStrings(phase, "succeeded");
    out.failed = readStrings(phase, "failed");
    phase.read("message", out.messagePath);
  }
  if (m.has("condition")) {
    if (m.has("phase")) {
      m.reader().error(m.path(), "sets both condition and phase", "keep the one that tells when the job is done");
      return out;
    }
    auto condition = m.child("condition", kFinishedExample);
    condition.checkKeys({"type"}, UnknownKeys::Reject);
    condition.read("type", out.conditionType);
  }
  return out;
}

// The active rule and the podsReady rule share their shapes; `example` and `purpose` (what the
// rule tells) word the errors for the one being read.
ActiveRule readActive(MapReader m, std::string_view example = kActiveExample,
                      std::string_view purpose = "whether the job's pods may still run") {
  m.checkKeys({"condition", "phase", "pods"}, UnknownKeys::Reject);
  ActiveRule out;
  const int shapes = int(m.has("condition")) + int(m.has("phase")) + int(m.has("pods"));
  if (shapes > 1) {
    m.reader().error(m.path(), "sets more than one of condition, phase and pods",
                     "keep the one that tells " + std::string(purpose));
    return out;
  }
  if (m.has("condition")) {
    out.type = ActiveRule::Type::Condition;
    auto condition = m.child("condition", example);
    condition.checkKeys({"type", "status", "reasons", "exceptReasons"}, UnknownKeys::Reject);
    condition.read("type", out.conditionType);
    condition.read("status", out.conditionStatus);
    out.reasons = readStrings(condition, "reasons");
    out.exceptReasons = readStrings(condition, "exceptReasons");
  } else if (m.has("phase")) {
    out.type = ActiveRule::Type::Phase;
    auto phase = m.child("phase", example);
    phase.checkKeys({"path", "running"}, UnknownKeys::Reject);
    phase.read("path", out.path);
    out.running = readStrings(phase, "running");
  } else if (m.has("pods")) {
    out.type = ActiveRule::Type::Pods;
    auto pods = m.child("pods", example);
    pods.checkKeys({"items", "filter", "state"}, UnknownKeys::Reject);
    pods.read("items", out.items);
    if (pods.has("filter"))
      out.filter = readFieldValue(pods.child("filter", "{path: type, value: Pod}"),
                                  "write the value the item's field holds for a pod, such as Pod");
    auto state = pods.child("state", "{path: phase, running: [Pending, Running]}");
    state.checkKeys({"path", "running"}, UnknownKeys::Reject);
    state.read("path", out.path);
    out.running = readStrings(state, "running");
  }
  return out;
}

void readIntegratedFramework(YamlReader& reader, const yaml::Node& item, const std::string& path,
                             IntegratedFramework& out) {
  MapReader f(reader, &item, path, kIntegrationExample);
  f.checkKeys({"name", "resource", "suspend", "stop", "podSets", "finished", "active", "podsReady"},
              UnknownKeys::Reject);
  f.read("name", out.name);
  if (auto gvk = api::GroupVersionKind::parseDotted(out.name)) {
    if (auto profile = integrationProfile(*gvk)) {
      const std::string name = std::move(out.name);
      out = std::move(*profile);
      out.name = name;
    }
    out.gvk = *gvk;
  }
  if (f.has("resource")) f.read("resource", out.resource);
  // What is written overrides the profile, a whole rule at a time.
  if (f.has("suspend")) out.suspend = readFieldValue(f.child("suspend", kFieldValueExample));
  if (f.has("stop")) out.stop = readFieldValue(f.child("stop", kFieldValueExample));
  if (f.has("finished")) out.finished = readFinished(f.child("finished", kFinishedExample));
  if (f.has("active")) out.active = readActive(f.child("active", kActiveExample));
  if (f.has("podsReady"))
    out.podsReady =
        readActive(f.child("podsReady", kPodsReadyExample), kPodsReadyExample, "when the job's pods have started");
  if (const auto* list = f.get("podSets")) {
    out.podSets.clear();
    out.podSetsFrom = PodSetsFrom::Rules;
    if (!list->isSequence()) {
      reader.error(f.pathOf("podSets"), "must be a list, not " + describe(*list),
                   "write one pod set per line, such as " + std::string(kPodSetExample));
      return;
    }
    std::size_t i = 0;
    for (const auto& podSet : list->items()) {
      const auto podSetPath = indexPath(f.pathOf("podSets"), i++);
      reader.noteLine(podSetPath, *podSet);
      out.podSets.push_back(readPodSet(reader, *podSet, podSetPath));
    }
  }
}

// A label key (qualified name) at `path`, or "" after reporting it.
std::string labelKey(YamlReader& reader, const yaml::Node& node, const std::string& path) {
  if (!node.isScalar() || node.isNull()) {
    reader.error(path, "must be a label key, not " + describe(node), "write a label key such as example.com/team");
    return "";
  }
  if (const auto problems = validation::qualifiedName(node.scalar()); !problems.empty()) {
    reader.error(path, "\"" + node.scalar() + "\" is not a valid label key: " + strings::join(problems, "; "),
                 "write a label key such as example.com/team");
    return "";
  }
  return node.scalar();
}

// integrations.labelKeysToCopy: label keys (qualified names), each once.
std::vector<std::string> readLabelKeys(MapReader& section) {
  std::vector<std::string> out;
  const auto* list = section.get("labelKeysToCopy");
  if (!list) return out;
  const auto path = section.pathOf("labelKeysToCopy");
  if (!list->isSequence()) {
    section.reader().error(path, "must be a list, not " + describe(*list), "write it as [team, cost-center]");
    return out;
  }
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    const auto itemPath = indexPath(path, i++);
    const std::string key = labelKey(section.reader(), *item, itemPath);
    if (key.empty()) continue;
    if (std::find(out.begin(), out.end(), key) != out.end()) {
      section.reader().error(itemPath, "\"" + key + "\" is listed twice", "list each key once");
      continue;
    }
    out.push_back(key);
  }
  return out;
}

constexpr std::string_view kSelectorExample =
    "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]}";

// integrations.managedJobsNamespaceSelector, a metav1.LabelSelector. Absent: Kueue's default,
// every namespace but kube-system and the adapter's (Kueue's) own.
LabelSelector readNamespaceSelector(MapReader& section, const std::string& adapterNamespace) {
  using Operator = LabelSelector::Expression::Operator;
  if (!section.hasKey("managedJobsNamespaceSelector"))
    return {{}, {{"kubernetes.io/metadata.name", Operator::NotIn, {"kube-system", adapterNamespace}}}};
  LabelSelector out;
  auto& reader = section.reader();
  MapReader s = section.child("managedJobsNamespaceSelector", kSelectorExample);
  s.checkKeys({"matchLabels", "matchExpressions"}, UnknownKeys::Reject);
  if (const auto* labels = s.get("matchLabels")) {
    if (!labels->isMapping()) {
      reader.error(s.pathOf("matchLabels"), "must be a mapping of label keys to values, not " + describe(*labels),
                   "write it as {team: a}");
    } else {
      for (const auto& entry : labels->entries()) {
        const auto path = s.pathOf("matchLabels") + "." + entry.key->scalar();
        const std::string key = labelKey(reader, *entry.key, path);
        if (key.empty()) continue;
        const std::string value = entry.value->isScalar() ? entry.value->scalar() : "";
        if (const auto problems = validation::labelValue(value); !entry.value->isScalar() || !problems.empty()) {
          reader.error(path, "must be a label value, not " + describe(*entry.value),
                       "write at most 63 letters, digits, '-', '_' or '.'");
          continue;
        }
        out.matchLabels[key] = value;
      }
    }
  }
  if (const auto* list = s.get("matchExpressions")) {
    if (!list->isSequence()) {
      reader.error(s.pathOf("matchExpressions"), "must be a list, not " + describe(*list),
                   "write it as [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]");
      return out;
    }
    std::size_t i = 0;
    for (const auto& item : list->items()) {
      const auto path = indexPath(s.pathOf("matchExpressions"), i++);
      MapReader e(reader, item.get(), path, "{key: team, operator: In, values: [a, b]}");
      e.checkKeys({"key", "operator", "values"}, UnknownKeys::Reject);
      LabelSelector::Expression expression;
      if (const auto* key = e.get("key")) {
        expression.key = labelKey(reader, *key, e.pathOf("key"));
      } else {
        reader.error(e.pathOf("key"), "is required", "name the label key the expression tests");
      }
      std::string op;
      e.read("operator", op);
      if (op == "In") {
        expression.op = LabelSelector::Expression::Operator::In;
      } else if (op == "NotIn") {
        expression.op = LabelSelector::Expression::Operator::NotIn;
      } else if (op == "Exists") {
        expression.op = LabelSelector::Expression::Operator::Exists;
      } else if (op == "DoesNotExist") {
        expression.op = LabelSelector::Expression::Operator::DoesNotExist;
      } else {
        reader.error(e.pathOf("operator"), op.empty() ? "is required" : "unsupported operator \"" + op + "\"",
                     "use In, NotIn, Exists or DoesNotExist");
        continue;
      }
      const bool takesValues = op == "In" || op == "NotIn";
      if (const auto* values = e.get("values"); values && values->isSequence()) {
        for (const auto& v : values->items()) expression.values.push_back(v->isScalar() ? v->scalar() : "");
      } else if (values) {
        reader.error(e.pathOf("values"), "must be a list, not " + describe(*values), "write it as [a, b]");
      }
      if (takesValues && expression.values.empty())
        reader.error(e.pathOf("values"), "must list at least one value for operator " + op, "write it as [a, b]");
      if (!takesValues && !expression.values.empty())
        reader.error(e.pathOf("values"), "must be empty for operator " + op, "remove the values");
      out.matchExpressions.push_back(std::move(expression));
    }
  }
  return out;
}

}  // namespace

void readIntegrations(MapReader section, const std::string& adapterNamespace, bool waitForPodsReady,
                      Integrations& out) {
  section.checkKeys({"frameworks", "labelKeysToCopy", "managedJobsNamespaceSelector", "objectRetentionPolicies"},
                    UnknownKeys::Reject);
  const auto labelKeys = readLabelKeys(section);
  const auto namespaceSelector = readNamespaceSelector(section, adapterNamespace);
  // Kueue's objectRetentionPolicies.workloads.afterDeactivatedByKueue; its afterFinished is
  // Kueue's own to apply (it deletes Workloads, not jobs).
  std::optional<Duration> afterDeactivated;
  {
    auto policies =
        section.child("objectRetentionPolicies", "objectRetentionPolicies: {workloads: {afterDeactivatedByKueue: 1h}}");
    policies.checkKeys({"workloads"}, UnknownKeys::Reject);
    auto workloads = policies.child("workloads", "workloads: {afterDeactivatedByKueue: 1h}");
    workloads.checkKeys({"afterDeactivatedByKueue"}, UnknownKeys::Reject);
    if (const auto* node = workloads.get("afterDeactivatedByKueue")) {
      const bool readable = node->isScalar() && parseDuration(node->scalar());
      Duration retention{};
      workloads.read("afterDeactivatedByKueue", retention);  // reports one that is not a duration
      if (readable && retention < Duration::zero()) {
        section.reader().error(workloads.pathOf("afterDeactivatedByKueue"), "must not be negative",
                               "write how long to keep the job, such as 1h, or 0s to delete it at once");
      } else if (readable) {
        afterDeactivated = retention;
      }
    }
  }
  const auto* list = section.get("frameworks");
  if (!list) return;
  auto& reader = section.reader();
  const auto listPath = section.pathOf("frameworks");
  if (!list->isSequence()) {
    reader.error(listPath, "must be a list, not " + describe(*list),
                 "write one entry per kind, such as " + std::string(kIntegrationExample));
    return;
  }
  // Every entry keeps its index, broken or not, so that paths in later errors match the file.
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    const auto path = indexPath(listPath, i++);
    reader.noteLine(path, *item);
    IntegratedFramework framework;
    readIntegratedFramework(reader, *item, path, framework);
    framework.labelKeysToCopy = labelKeys;
    framework.namespaceSelector = namespaceSelector;
    framework.deleteAfterDeactivatedByKueue = afterDeactivated;
    framework.waitForPodsReady = waitForPodsReady;
    out.frameworks.push_back(std::move(framework));
  }
}

}  // namespace mka::config::detail
