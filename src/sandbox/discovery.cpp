// The legacy (non-aggregated) discovery documents. kubectl asks for aggregated discovery first
// and reads these when the answer's Content-Type is plain application/json.

#include <algorithm>
#include <charconv>
#include <mutex>
#include <optional>
#include <set>

#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

// The order kube-apiserver lists its own groups in; groups from CRDs follow, by name.
const std::vector<std::string> kBuiltinGroupOrder = {"events.k8s.io",
                                                     "authentication.k8s.io",
                                                     "authorization.k8s.io",
                                                     "rbac.authorization.k8s.io",
                                                     "admissionregistration.k8s.io",
                                                     "apiextensions.k8s.io",
                                                     "scheduling.k8s.io",
                                                     "coordination.k8s.io"};

struct KubeVersion {
  int stability;  // 0 alpha, 1 beta, 2 GA
  long major;
  long minor;
};

bool parseNumber(std::string_view digits, long& out) {
  if (digits.empty()) return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc{} && end == digits.data() + digits.size();
}

// ^v(\d+)((alpha|beta)(\d+))?$
std::optional<KubeVersion> parseKubeVersion(std::string_view v) {
  if (v.size() < 2 || v[0] != 'v') return std::nullopt;
  v.remove_prefix(1);
  const auto digitsEnd = std::find_if(v.begin(), v.end(), [](char c) { return c < '0' || c > '9'; });
  KubeVersion out{2, 0, 0};
  if (!parseNumber(v.substr(0, static_cast<std::size_t>(digitsEnd - v.begin())), out.major)) return std::nullopt;
  std::string_view rest = v.substr(static_cast<std::size_t>(digitsEnd - v.begin()));
  if (rest.empty()) return out;
  if (rest.starts_with("alpha")) {
    out.stability = 0;
    rest.remove_prefix(5);
  } else if (rest.starts_with("beta")) {
    out.stability = 1;
    rest.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  if (!parseNumber(rest, out.minor)) return std::nullopt;
  return out;
}

int sign(long v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

json versionEntry(const std::string& group, const std::string& version) {
  return {{"groupVersion", group + "/" + version}, {"version", version}};
}

// Served versions of `group`, highest priority first.
std::vector<std::string> servedVersions(const std::vector<ResourceTypePtr>& types, const std::string& group) {
  std::set<std::string> versions;
  for (const auto& entry : types) {
    const ResourceType& t = *entry;
    if (t.group != group) continue;
    for (const auto& v : t.versions)
      if (v.served) versions.insert(v.name);
  }
  std::vector<std::string> out(versions.begin(), versions.end());
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return compareVersionPriority(a, b) > 0; });
  return out;
}

std::vector<std::string> orderedGroups(const std::vector<ResourceTypePtr>& types) {
  std::set<std::string> custom;
  std::set<std::string> present;
  for (const auto& entry : types) {
    const ResourceType& t = *entry;
    if (t.group.empty()) continue;
    present.insert(t.group);
    if (std::find(kBuiltinGroupOrder.begin(), kBuiltinGroupOrder.end(), t.group) == kBuiltinGroupOrder.end()) {
      custom.insert(t.group);
    }
  }
  std::vector<std::string> out;
  for (const auto& g : kBuiltinGroupOrder)
    if (present.count(g)) out.push_back(g);
  out.insert(out.end(), custom.begin(), custom.end());
  return out;
}

std::optional<json> groupDocument(const std::vector<ResourceTypePtr>& types, const std::string& group) {
  const auto versions = servedVersions(types, group);
  if (versions.empty()) return std::nullopt;
  json doc = {
      {"name", group}, {"versions", json::array()}, {"preferredVersion", versionEntry(group, versions.front())}};
  for (const auto& v : versions) doc["versions"].push_back(versionEntry(group, v));
  return doc;
}

json apiResource(const ResourceType& t) {
  json r = {{"name", t.plural},
            {"singularName", t.singular},
            {"namespaced", t.namespaced},
            {"kind", t.kind},
            {"verbs", t.verbs}};
  if (!t.shortNames.empty()) r["shortNames"] = t.shortNames;
  if (!t.categories.empty()) r["categories"] = t.categories;
  return r;
}

}  // namespace

int compareVersionPriority(std::string_view a, std::string_view b) {
  if (a == b) return 0;
  const auto va = parseKubeVersion(a);
  const auto vb = parseKubeVersion(b);
  if (!va && !vb) return b.compare(a) > 0 ? 1 : -1;  // alphabetical: the earlier name wins
  if (!va) return -1;
  if (!vb) return 1;
  if (va->stability != vb->stability) return va->stability - vb->stability;
  if (va->major != vb->major) return sign(va->major - vb->major);
  return sign(va->minor - vb->minor);
}

json ResourceRegistry::apiVersions() const { return apiVersions(""); }

json ResourceRegistry::apiVersions(const std::string& serverAddress) const {
  return {
      {"kind", "APIVersions"},
      {"versions", json::array({"v1"})},
      {"serverAddressByClientCIDRs", json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", serverAddress}}})}};
}

json ResourceRegistry::apiGroupList() const {
  const auto types = snapshot();
  json groups = json::array();
  for (const auto& g : orderedGroups(types)) {
    if (auto doc = groupDocument(types, g)) groups.push_back(std::move(*doc));
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

std::optional<json> ResourceRegistry::apiGroup(const std::string& group) const {
  if (group.empty()) return std::nullopt;  // the core group is /api, not /apis/
  auto doc = groupDocument(snapshot(), group);
  if (!doc) return std::nullopt;
  json out = {{"kind", "APIGroup"}, {"apiVersion", "v1"}};
  out.update(*doc);
  return out;
}

std::optional<json> ResourceRegistry::apiResourceList(const std::string& group, const std::string& version) const {
  auto types = snapshot();
  std::sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a->plural < b->plural; });
  json resources = json::array();
  for (const auto& entry : types) {
    const ResourceType& t = *entry;
    if (t.group != group) continue;
    const auto* v = t.version(version);
    if (!v) continue;
    resources.push_back(apiResource(t));
    if (v->hasStatus) {
      resources.push_back({{"name", t.plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", t.namespaced},
                           {"kind", t.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (resources.empty()) return std::nullopt;
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", apiVersionOf(group, version)},
              {"resources", std::move(resources)}};
}

}  // namespace mka::sandbox
