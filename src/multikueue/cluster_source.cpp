#include "mka/multikueue/cluster_source.h"

#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "mka/api/kinds.h"
#include "mka/api/views.h"
#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/controller/status_update.h"
#include "mka/kube/api_error.h"
#include "mka/kube/exec_credential.h"
#include "mka/kube/kubeconfig.h"
#include "mka/multikueue/api.h"

namespace mka::multikueue {

using controller::apiErrorMessage;
using controller::ObjectReader;
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// client-go's reserved extension: per-cluster data handed to the exec plugin as spec.cluster.config.
constexpr std::string_view kExecExtension = "client.authentication.k8s.io/exec";
constexpr std::string_view kNotUnderPrefix = "kubeconfig path is not under the allowed prefix: ";

ClusterSource failure(std::string_view reason, std::string error, std::string secretName = "") {
  ClusterSource s;
  s.secretName = std::move(secretName);
  s.reason = std::string(reason);
  s.error = std::move(error);
  return s;
}

std::string quoted(const std::string& text) { return json(text).dump(); }

// Kueue's security validation (§3.2), applied to every kubeConfig source.
ClusterSource validated(std::string kubeconfig, std::string secretName) {
  if (auto insecure = kube::validateKubeconfigSecurity(kubeconfig))
    return failure(cluster_reason::kInsecureKubeConfig, *insecure, std::move(secretName));
  ClusterSource s;
  s.secretName = std::move(secretName);
  s.kubeconfig = std::move(kubeconfig);
  return s;
}

ClusterSource fromSecret(const ObjectReader& objects, const std::string& name, const std::string& namespace_) {
  std::optional<json> secret;
  try {
    secret = objects.get(api::kSecretGvk, namespace_, name);
  } catch (const kube::ApiError& e) {
    return failure(cluster_reason::kBadKubeConfig, apiErrorMessage(e), name);
  }
  if (!secret) {
    // kube-apiserver's words for the missing Secret, as Kueue shows them.
    auto f = failure(cluster_reason::kBadKubeConfig, "secrets " + quoted(name) + " not found", name);
    f.notFound = true;
    return f;
  }
  try {
    return validated(kube::kubeconfigFromSecret(*secret), name);
  } catch (const std::exception& e) {
    return failure(cluster_reason::kBadKubeConfig, e.what(), name);
  }
}

ClusterSource fromPath(const std::string& path, const fs::path& prefix) {
  if (auto invalid = validateKubeconfigPath(path, prefix)) return failure(cluster_reason::kBadKubeConfig, *invalid);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::error_code ec(errno, std::generic_category());
    return failure(cluster_reason::kBadKubeConfig, "open " + path + ": " + ec.message());
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return failure(cluster_reason::kBadKubeConfig, "read " + path + ": the file cannot be read");
  return validated(text.str(), "");
}

// Kueue's MultiKueueKubeConfigPathValidation. `missingAllowed`: a file that does not exist yet is
// judged by where it would be (its existing parent directories resolved), not refused.
std::optional<std::string> checkKubeconfigPath(const std::string& path, const fs::path& prefix, bool missingAllowed) {
  if (path.empty()) return "kubeconfig path must not be empty";
  const fs::path p(path);
  for (const auto& part : p)
    if (part == "..") return std::string(kNotUnderPrefix) + "path contains \"..\"";
  if (!p.is_absolute()) return std::string(kNotUnderPrefix) + "path must be absolute";
  std::error_code ec;
  const auto resolvedPrefix = fs::canonical(prefix, ec);
  if (ec) return std::string(kNotUnderPrefix) + quoted(path) + " is not under " + quoted(prefix.string());
  const auto resolved = missingAllowed ? fs::weakly_canonical(p, ec) : fs::canonical(p, ec);
  if (ec) return "cannot resolve kubeconfig path symlinks: " + ec.message();
  // With the separator, so that a sibling such as "<prefix>-other" is not "under" it.
  const auto base = resolvedPrefix.string() + "/";
  if (!(resolved.string() + "/").starts_with(base))
    return std::string(kNotUnderPrefix) + quoted(resolved.string()) + " is not under " +
           quoted(resolvedPrefix.string());
  return std::nullopt;
}

// Whether the registry may watch `path` for changes: it loaded, or it does not exist yet at a
// place under the prefix (so its creation is noticed). Never a file the adapter may not load:
// the watcher reads what it watches.
bool watchable(const ClusterSource& loaded, const std::string& path, const fs::path& prefix) {
  if (loaded.ok()) return true;
  std::error_code ec;
  if (path.empty() || fs::exists(fs::symlink_status(path, ec))) return false;
  return !checkKubeconfigPath(path, prefix, /*missingAllowed=*/true);
}

std::string names(const std::vector<std::string>& list) {
  std::string out = "[";
  for (const auto& n : list) out += (out.size() > 1 ? ", " : "") + n;
  return out + "]";
}

// cluster-inventory-api's BuildConfigFromCP, with the adapter's words where it has none.
ClusterSource fromClusterProfile(const ObjectReader& objects, const std::string& name, const std::string& namespace_,
                                 const config::ClusterProfileAccess* profiles) {
  auto fail = [&](std::string_view reason, std::string error) {
    auto f = failure(reason, std::move(error));
    f.profileName = name;
    return f;
  };
  if (profiles == nullptr || profiles->providers().empty())
    return fail(cluster_reason::kBadClusterProfile,
                "no access provider configured (list the providers the ClusterProfiles offer, with their exec "
                "plugins, in the adapter's multiKueue.clusterProfile.accessProviders)");
  std::optional<json> profile;
  try {
    profile = objects.get(api::kClusterProfileGvk, namespace_, name);
  } catch (const kube::ApiError& e) {
    return fail(cluster_reason::kBadClusterProfile, apiErrorMessage(e));
  }
  if (!profile) {
    auto f = fail(cluster_reason::kBadClusterProfile,
                  "clusterprofiles.multicluster.x-k8s.io " + quoted(name) + " not found in namespace " + namespace_);
    f.notFound = true;
    return f;
  }
  // The deprecated list first, so that an access provider of the same name wins.
  std::map<std::string, json> offered;
  std::vector<std::string> offeredNames;
  const auto status = profile->value("status", json::object());
  for (const auto* key : {"credentialProviders", "accessProviders"}) {
    const auto list = status.is_object() ? status.value(key, json::array()) : json::array();
    if (!list.is_array()) continue;
    for (const auto& p : list) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
      const auto providerName = p["name"].get<std::string>();
      if (offered.emplace(providerName, p).second) offeredNames.push_back(providerName);
      offered[providerName] = p;
    }
  }
  const config::ClusterProfileAccessProvider* chosen = nullptr;
  std::vector<std::string> configured;
  for (const auto& p : profiles->providers()) {
    configured.push_back(p.name);
    if (!chosen && offered.contains(p.name)) chosen = &p;
  }
  if (!chosen)
    return fail(cluster_reason::kBadClusterProfile,
                "no matching cluster accessor found for cluster profile " + quoted(name) + ": it offers " +
                    names(offeredNames) + " (status.accessProviders) and the adapter is configured for " +
                    names(configured) +
                    " (multiKueue.clusterProfile.accessProviders); add one of the profile's providers to the "
                    "configuration, or have the cluster manager publish one of the configured ones");
  const auto cluster = offered[chosen->name].value("cluster", json::object());
  ProfileAccess access;
  access.provider = chosen->name;
  access.exec = chosen->execConfig;
  const auto text = [&](const char* key) {
    const auto it = cluster.find(key);
    return it != cluster.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  access.server = text("server");
  access.tlsServerName = text("tls-server-name");
  access.proxyUrl = text("proxy-url");
  if (const auto ca = text("certificate-authority-data"); !ca.empty()) {
    // The CRD's `format: byte` makes kube-apiserver refuse anything else; still, what does not
    // decode must not pass for a CA.
    auto pem = base64Decode(ca);
    if (!pem)
      return fail(cluster_reason::kBadClusterProfile, "status.accessProviders[" + quoted(chosen->name) +
                                                          "].cluster.certificate-authority-data is not base64");
    access.caPem = std::move(*pem);
  }
  for (const auto& ext : cluster.value("extensions", json::array()))
    if (ext.is_object() && ext.value("name", "") == kExecExtension)
      access.execExtension = ext.value("extension", json());
  // Kueue's rest config validation, exec allowed (§3.2).
  if (access.server.empty() || !kube::trustedServerEndpoint(access.server))
    return fail(cluster_reason::kBadRestConfig, "untrusted server endpoint");
  if (!access.proxyUrl.empty())
    return fail(cluster_reason::kBadRestConfig,
                "proxy-url " + json(access.proxyUrl).dump() +
                    " is not supported: the adapter connects to workers directly; publish a server the manager "
                    "reaches without a proxy");
  ClusterSource s;
  s.profileName = name;
  s.profile = std::move(access);
  return s;
}

}  // namespace

std::string ClusterSource::identity() const {
  if (!profile) return kubeconfig;
  return json{{"provider", profile->provider},
              {"server", profile->server},
              {"ca", profile->caPem},
              {"tlsServerName", profile->tlsServerName},
              {"command", profile->exec.command},
              {"args", profile->exec.args},
              {"env",
               [&] {
                 json env = json::array();
                 for (const auto& e : profile->exec.env) env.push_back({e.name, e.value});
                 return env;
               }()},
              {"apiVersion", profile->exec.apiVersion},
              {"provideClusterInfo", profile->exec.provideClusterInfo},
              {"extension", profile->execExtension}}
      .dump();
}

std::optional<std::string> validateKubeconfigPath(const std::string& path, const fs::path& prefix) {
  return checkKubeconfigPath(path, prefix, /*missingAllowed=*/false);
}

ClusterSource loadClusterSource(const ObjectReader& objects, const json& cluster, const std::string& namespace_,
                                const fs::path& pathPrefix, const config::ClusterProfileAccess* profiles) {
  const api::MultiKueueClusterView view(cluster);
  if (view.hasClusterProfileRef() && !view.hasKubeConfig())
    return fromClusterProfile(objects, std::string(view.clusterProfileName()), namespace_, profiles);
  if (!view.hasKubeConfig())
    return failure(cluster_reason::kBadKubeConfig,
                   "spec.clusterSource: set kubeConfig {location, locationType} or clusterProfileRef {name}");
  const auto location = std::string(view.kubeConfigLocation());
  const auto type = view.kubeConfigLocationType().empty() ? std::string(api::kLocationTypeSecret)
                                                          : std::string(view.kubeConfigLocationType());
  if (type == api::kLocationTypeSecret) return fromSecret(objects, location, namespace_);
  if (type == api::kLocationTypePath) {
    auto loaded = fromPath(location, pathPrefix);
    if (watchable(loaded, location, pathPrefix)) loaded.path = location;
    return loaded;
  }
  return failure(cluster_reason::kBadKubeConfig, "spec.clusterSource.kubeConfig.locationType: unsupported value " +
                                                     quoted(type) + ": use Secret or Path");
}

kube::RestConfig restConfigOf(const std::string& cluster, const ClusterSource& source, const Clock& clock) {
  if (!source.profile)
    return kube::restConfigFor(kube::Kubeconfig::parse(source.kubeconfig, "MultiKueueCluster " + cluster));
  const auto& p = *source.profile;
  kube::RestConfig config;
  config.host = p.server;
  config.caPem = p.caPem;
  config.tlsServerName = p.tlsServerName;
  config.exec = true;
  config.cluster = cluster;
  auto credentials = std::make_shared<kube::ExecCredentialSource>(
      p.exec, kube::ExecClusterInfo{p.server, p.tlsServerName, p.caPem, p.proxyUrl, p.execExtension}, clock);
  try {
    credentials->current();
  } catch (const Error& e) {
    throw Error("getting credentials from access provider " + p.provider + " of ClusterProfile " + source.profileName +
                ": " + e.what());
  }
  config.credentials = std::move(credentials);
  return config;
}

}  // namespace mka::multikueue
