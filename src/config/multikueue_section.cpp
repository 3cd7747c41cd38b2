#include <string>
#include <vector>

#include "formats.h"
#include "mka/yaml/json.h"

namespace mka::config::detail {
namespace {

const std::vector<std::string> kOurKeys = {"externalFrameworks",
                                           "gcInterval",
                                           "origin",
                                           "workerLostTimeout",
                                           "dispatcherName",
                                           "clusterProfile",
                                           "incrementalDispatcherConfig",
                                           "orchestratedPreemption"};

constexpr std::string_view kFrameworkExample = "- name: PipelineRun.v1.tekton.dev";
constexpr std::string_view kProviderExample =
    "- {name: token-provider, execConfig: {command: /usr/local/bin/cp-creds, apiVersion: "
    "client.authentication.k8s.io/v1, interactiveMode: Never}}";
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

std::vector<std::string> readStringList(MapReader& m, std::string_view key, std::string_view example) {
  std::vector<std::string> out;
  const auto* list = m.get(key);
  if (!list) return out;
  if (!list->isSequence()) {
    m.reader().error(m.pathOf(key), "must be a list, not " + describe(*list), "write it as " + std::string(example));
    return out;
  }
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    const auto path = indexPath(m.pathOf(key), i++);
    if (!item->isScalar() || item->isNull()) {
      m.reader().error(path, "must be a string, not " + describe(*item), "write it as " + std::string(example));
      continue;
    }
    out.push_back(item->scalar());
  }
  return out;
}

constexpr std::string_view kRemoteCopyExample =
    "{removeFields: [/spec/ttlStrategy], patches: [{op: add, path: /metadata/labels/site, value: worker}]}";
constexpr std::string_view kPatchExample = "{op: add, path: /metadata/labels/site, value: worker}";

// remoteCopy as written: keys and types; the operations' values are checked by
// validateConfiguration.
void readRemoteCopy(YamlReader& reader, MapReader m, RemoteCopy& copy) {
  m.checkKeys({"removeFields", "patches"}, UnknownKeys::Reject);
  copy.removeFields = readStringList(m, "removeFields", "[/spec/ttlStrategy]");
  const auto* list = m.get("patches");
  if (list == nullptr) return;
  if (!list->isSequence()) {
    reader.error(m.pathOf("patches"), "must be a list of RFC 6902 operations, not " + describe(*list),
                 "write it as - " + std::string(kPatchExample));
    return;
  }
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    MapReader op(reader, item.get(), indexPath(m.pathOf("patches"), i++), kPatchExample);
    op.checkKeys({"op", "path", "value", "from"}, UnknownKeys::Reject);
    nlohmann::json operation = nlohmann::json::object();
    for (const char* key : {"op", "path", "from"}) {
      if (!op.hasKey(key)) continue;
      std::string text;
      op.read(key, text);
      operation[key] = text;
    }
    // A null value is a value (add: null), so it is kept as written.
    if (op.hasKey("value")) operation["value"] = op.has("value") ? yaml::toJson(*op.get("value")) : nullptr;
    copy.patches.push_back(std::move(operation));
  }
}

constexpr std::string_view kDependencyExample = "{kind: Secret, path: spec.credentials.secretName}";

// dependencies as written: keys and types; kinds and paths are checked by validateConfiguration.
void readDependencies(YamlReader& reader, MapReader& f, std::vector<DependencyPath>& out) {
  const auto* list = f.get("dependencies");
  if (list == nullptr) return;
  if (!list->isSequence()) {
    reader.error(f.pathOf("dependencies"), "must be a list of {kind, path}, not " + describe(*list),
                 "write it as - " + std::string(kDependencyExample));
    return;
  }
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    MapReader d(reader, item.get(), indexPath(f.pathOf("dependencies"), i++), kDependencyExample);
    d.checkKeys({"kind", "path"}, UnknownKeys::Reject);
    DependencyPath dependency;
    d.read("kind", dependency.kind);
    d.read("path", dependency.path);
    out.push_back(std::move(dependency));
  }
}

void readRemoteStatus(MapReader m, std::vector<std::string>& exclude) {
  m.checkKeys({"exclude"}, UnknownKeys::Reject);
  exclude = readStringList(m, "exclude", "[/nodes]");
}

void readFramework(YamlReader& reader, const yaml::Node& item, const std::string& path, UnknownKeys policy,
                   ExternalFramework& framework) {
  if (item.isScalar() && !item.isNull()) {
    // Kueue's integrations.externalFrameworks is a plain list of names; this list is not.
    reader.error(path, "must be a mapping with a name, not " + describe(item), "write it as - name: " + item.scalar());
    return;
  }
  MapReader f(reader, &item, path, kFrameworkExample);
  f.checkKeys({"name", "resource", "managedBy", "remoteCopy", "remoteStatus", "syncDependencies", "dependencies"},
              policy);
  f.read("name", framework.name);
  if (auto gvk = api::GroupVersionKind::parseDotted(framework.name)) framework.gvk = *gvk;

  const auto extension = [&](std::string_view key) {
    if (!f.has(key) || policy != UnknownKeys::KueueStrict) return false;
    reader.error(f.pathOf(key), "is a multikueue-adapter extension, which Kueue's Configuration cannot hold",
                 "remove it (Kueue decodes its Configuration strictly and would not start with it), or move the "
                 "frameworks to an AdapterConfiguration (apiVersion: config.multikueue-adapter.dev/v1alpha1, kind: "
                 "AdapterConfiguration)");
    return true;
  };
  if (!extension("resource") && f.has("resource")) f.read("resource", framework.resource);
  if (!extension("remoteCopy") && f.has("remoteCopy"))
    readRemoteCopy(reader, f.child("remoteCopy", kRemoteCopyExample), framework.remoteCopy);
  if (!extension("remoteStatus") && f.has("remoteStatus"))
    readRemoteStatus(f.child("remoteStatus", "{exclude: [/nodes]}"), framework.statusExclude);
  if (!extension("syncDependencies") && f.has("syncDependencies"))
    f.read("syncDependencies", framework.syncDependencies);
  if (!extension("dependencies") && f.has("dependencies")) readDependencies(reader, f, framework.dependencies);
  if (!extension("managedBy") && f.has("managedBy")) {
    readManagedBy(reader, f.child("managedBy", kManagedByExample), framework);
    return;
  }
  if (auto profile = builtinProfile(framework.gvk)) {
    framework.managedBy = *profile;
    framework.managedByFromProfile = true;
  }
}

// client-go's ExecConfig keys, as Kueue decodes them (strictly).
api::ExecConfig readExecConfig(MapReader m, UnknownKeys policy) {
  m.checkKeys({"command", "args", "env", "apiVersion", "installHint", "provideClusterInfo", "interactiveMode"}, policy);
  api::ExecConfig out;
  m.read("command", out.command);
  out.args = readStringList(m, "args", "[--cluster-name, prod]");
  m.read("apiVersion", out.apiVersion);
  m.read("installHint", out.installHint);
  m.read("provideClusterInfo", out.provideClusterInfo);
  m.read("interactiveMode", out.interactiveMode);
  const auto* env = m.get("env");
  if (env && !env->isSequence()) {
    m.reader().error(m.pathOf("env"), "must be a list, not " + describe(*env),
                     "write it as - {name: AWS_REGION, value: eu-west-1}");
  } else if (env) {
    std::size_t i = 0;
    for (const auto& item : env->items()) {
      MapReader var(m.reader(), item.get(), indexPath(m.pathOf("env"), i++), "{name: AWS_REGION, value: eu-west-1}");
      var.checkKeys({"name", "value"}, policy);
      api::ExecEnvVar v;
      var.read("name", v.name);
      var.read("value", v.value);
      out.env.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<ClusterProfileAccessProvider> readProviders(MapReader& section, std::string_view key, UnknownKeys policy) {
  std::vector<ClusterProfileAccessProvider> out;
  const auto* list = section.get(key);
  if (!list) return out;
  if (!list->isSequence()) {
    section.reader().error(section.pathOf(key), "must be a list, not " + describe(*list),
                           "write one provider per entry, such as " + std::string(kProviderExample));
    return out;
  }
  std::size_t i = 0;
  for (const auto& item : list->items()) {
    const auto path = indexPath(section.pathOf(key), i++);
    section.reader().noteLine(path, *item);
    MapReader p(section.reader(), item.get(), path, kProviderExample);
    p.checkKeys({"name", "execConfig"}, policy);
    ClusterProfileAccessProvider provider;
    p.read("name", provider.name);
    provider.execConfig = readExecConfig(p.child("execConfig", kProviderExample), policy);
    out.push_back(std::move(provider));
  }
  return out;
}

void readClusterProfile(MapReader m, UnknownKeys policy, MultiKueue& out) {
  m.checkKeys({"accessProviders", "credentialsProviders"}, policy);
  ClusterProfileAccess access;
  access.accessProviders = readProviders(m, "accessProviders", policy);
  access.credentialsProviders = readProviders(m, "credentialsProviders", policy);
  out.clusterProfile = std::move(access);
}

}  // namespace

void readMultiKueue(MapReader section, UnknownKeys policy, MultiKueue& out) {
  section.checkKeys(kOurKeys, policy);

  section.read("gcInterval", out.gcInterval);
  section.read("workerLostTimeout", out.workerLostTimeout);
  section.read("origin", out.origin);
  if (out.origin.empty()) out.origin = api::kDefaultOrigin;  // Kueue defaults an empty origin too
  section.read("dispatcherName", out.dispatcherName);
  if (out.dispatcherName.empty()) out.dispatcherName = std::string(kDispatcherAllAtOnce);
  section.read("orchestratedPreemption", out.orchestratedPreemption);
  if (section.hasKey("incrementalDispatcherConfig")) {
    auto step = section.child("incrementalDispatcherConfig", "incrementalDispatcherConfig: {stepSize: 3}");
    step.checkKeys({"stepSize"}, policy);
    int value = 0;
    if (step.has("stepSize")) {
      step.read("stepSize", value);
      out.stepSize = value;
    }
  }
  if (section.hasKey("clusterProfile"))
    readClusterProfile(section.child("clusterProfile", "clusterProfile: {accessProviders: [...]}"), policy, out);

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
