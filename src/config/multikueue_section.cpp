#include <string>
#include <vector>

#include "formats.h"

namespace mka::config::detail {
namespace {

const std::vector<std::string> kOurKeys = {"externalFrameworks", "gcInterval", "origin", "workerLostTimeout",
                                           "dispatcherName"};
// Kueue's multiKueue keys that configure its own controller; we accept and ignore them.
const std::vector<std::string> kKueueOnlyKeys = {"clusterProfile", "incrementalDispatcherConfig"};

constexpr std::string_view kFrameworkExample = "- name: PipelineRun.v1.tekton.dev";
constexpr std::string_view kManagedByExample = "{path: spec.managedBy}, or {label: KEY, value: VALUE}";

// An explicit managedBy: exactly one of path or label; value goes with label only.
void readManagedBy(YamlReader& reader, MapReader m, ExternalFramework& framework) {
  m.checkKeys({"path", "label", "value"}, UnknownKeys::Reject);
  const bool hasPath = m.has("path");
  const bool hasLabel = m.has("label");
  ManagedByLocation where;
  if (hasPath && hasLabel) {
    reader.error(m.path(), "sets both path and label",
                 "keep path (a field such as spec.managedBy) or label with value (a label marker), not both");
  } else if (!hasPath && !hasLabel) {
    // Unknown keys were reported by checkKeys; say more only when nothing else explains it.
    if (m.isMap() && m.size() == (m.has("value") ? 1u : 0u))
      reader.error(m.path(), "must set path or label", "write it as " + std::string(kManagedByExample));
  } else if (hasPath) {
    m.read("path", where.path);
    if (m.has("value"))
      reader.error(m.pathOf("value"), "is only used with label",
                   "remove it; a path marker always holds kueue.x-k8s.io/multikueue, the value Kueue's MultiKueue "
                   "looks for");
  } else {
    where.type = ManagedByLocation::Type::Label;
    where.path.clear();
    where.value.clear();  // required with label; validation says so when it stays empty
    m.read("label", where.labelKey);
    m.read("value", where.value);
  }
  framework.managedBy = where;
  framework.managedByFromProfile = false;
}

void readFramework(YamlReader& reader, const yaml::Node& item, const std::string& path, UnknownKeys policy,
                   ExternalFramework& framework) {
  if (item.isScalar() && !item.isNull()) {
    // Kueue's integrations.externalFrameworks is a plain list of names; this list is not.
    reader.error(path, "must be a mapping with a name, not " + describe(item), "write it as - name: " + item.scalar());
    return;
  }
  MapReader f(reader, &item, path, kFrameworkExample);
  f.checkKeys({"name", "managedBy"}, policy);
  f.read("name", framework.name);
  if (auto gvk = api::GroupVersionKind::parseDotted(framework.name)) framework.gvk = *gvk;

  if (f.has("managedBy") && policy == UnknownKeys::KueueStrict) {
    reader.error(f.pathOf("managedBy"), "is a multikueue-adapter extension, which Kueue's Configuration cannot hold",
                 "remove it (Kueue decodes its Configuration strictly and would not start with it), or move the "
                 "frameworks to an AdapterConfiguration (apiVersion: config.multikueue-adapter.dev/v1alpha1, kind: "
                 "AdapterConfiguration)");
  } else if (f.has("managedBy")) {
    readManagedBy(reader, f.child("managedBy", kManagedByExample), framework);
    return;
  }
  if (auto profile = builtinProfile(framework.gvk)) {
    framework.managedBy = *profile;
    framework.managedByFromProfile = true;
  }
}

}  // namespace

void readMultiKueue(MapReader section, UnknownKeys policy, MultiKueue& out) {
  auto known = kOurKeys;
  if (policy == UnknownKeys::KueueStrict) known.insert(known.end(), kKueueOnlyKeys.begin(), kKueueOnlyKeys.end());
  section.checkKeys(known, policy);

  section.read("gcInterval", out.gcInterval);
  section.read("workerLostTimeout", out.workerLostTimeout);
  section.read("origin", out.origin);
  if (out.origin.empty()) out.origin = "multikueue";  // Kueue defaults an empty origin too
  section.read("dispatcherName", out.dispatcherName);
  if (out.dispatcherName.empty()) out.dispatcherName = std::string(kDispatcherAllAtOnce);

  const auto* list = section.get("externalFrameworks");
  if (!list) return;
  auto& reader = section.reader();
  const auto listPath = section.pathOf("externalFrameworks");
  if (!list->isSequence()) {
    reader.error(listPath, "must be a list, not " + describe(*list),
                 "write one entry per line, such as " + std::string(kFrameworkExample));
    return;
  }
  // Every entry keeps its index, broken or not, so that paths in later errors match the file.
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    auto path = indexPath(listPath, i++);
    reader.noteLine(path, *item);
    ExternalFramework framework;
    readFramework(reader, *item, path, policy, framework);
    out.externalFrameworks.push_back(std::move(framework));
  }
}

}  // namespace mka::config::detail
