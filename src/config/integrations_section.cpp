// The integrations section of an AdapterConfiguration (SPEC §7.1): per kind, the rules the job
// integration queues it by, on top of a built-in profile where there is one.
#include <string>
#include <vector>

#include "formats.h"
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

FieldValue readFieldValue(MapReader m) {
  m.checkKeys({"path", "value"}, UnknownKeys::Reject);
  FieldValue out;
  m.read("path", out.path);
  if (const auto* value = m.get("value")) {
    if (value->isScalar()) {
      out.value = yaml::scalarToJson(*value);
    } else {
      m.reader().error(m.pathOf("value"), "must be a single value, not " + describe(*value),
                       "write the value the field holds while the job is suspended, such as true");
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

void readIntegratedFramework(YamlReader& reader, const yaml::Node& item, const std::string& path,
                             IntegratedFramework& out) {
  MapReader f(reader, &item, path, kIntegrationExample);
  f.checkKeys({"name", "suspend", "stop", "podSets", "finished"}, UnknownKeys::Reject);
  f.read("name", out.name);
  if (auto gvk = api::GroupVersionKind::parseDotted(out.name)) {
    if (auto profile = integrationProfile(*gvk)) {
      const std::string name = std::move(out.name);
      out = std::move(*profile);
      out.name = name;
    }
    out.gvk = *gvk;
  }
  // What is written overrides the profile, a whole rule at a time.
  if (f.has("suspend")) out.suspend = readFieldValue(f.child("suspend", kFieldValueExample));
  if (f.has("stop")) out.stop = readFieldValue(f.child("stop", kFieldValueExample));
  if (f.has("finished")) out.finished = readFinished(f.child("finished", kFinishedExample));
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

}  // namespace

void readIntegrations(MapReader section, Integrations& out) {
  section.checkKeys({"frameworks"}, UnknownKeys::Reject);
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
    out.frameworks.push_back(std::move(framework));
  }
}

}  // namespace mka::config::detail
