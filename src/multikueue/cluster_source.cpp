#include "cluster_source.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

#include "mka/kube/api_error.h"
#include "mka/kube/kubeconfig.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/conditions.h"

namespace mka::multikueue {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
    secret = objects.get(kSecretGvk, namespace_, name);
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

}  // namespace

std::optional<std::string> validateKubeconfigPath(const std::string& path, const fs::path& prefix) {
  return checkKubeconfigPath(path, prefix, /*missingAllowed=*/false);
}

ClusterSource loadClusterSource(const ObjectReader& objects, const json& cluster, const std::string& namespace_,
                                const fs::path& pathPrefix) {
  const auto spec = cluster.value("spec", json::object());
  const auto source = spec.is_object() ? spec.value("clusterSource", json::object()) : json::object();
  if (source.contains("clusterProfileRef") && !source.contains("kubeConfig"))
    return failure(cluster_reason::kClusterProfileFeatureDisabled, std::string(kClusterProfileDisabledMessage));
  const auto kubeConfig = source.value("kubeConfig", json::object());
  if (!kubeConfig.is_object() || !source.contains("kubeConfig"))
    return failure(cluster_reason::kBadKubeConfig,
                   "spec.clusterSource: set kubeConfig {location, locationType} (clusterProfileRef is not supported)");
  const auto location = kubeConfig.value("location", "");
  const auto type = kubeConfig.value("locationType", std::string(kLocationTypeSecret));
  if (type == kLocationTypeSecret) return fromSecret(objects, location, namespace_);
  if (type == kLocationTypePath) {
    auto loaded = fromPath(location, pathPrefix);
    if (watchable(loaded, location, pathPrefix)) loaded.path = location;
    return loaded;
  }
  return failure(cluster_reason::kBadKubeConfig, "spec.clusterSource.kubeConfig.locationType: unsupported value " +
                                                     quoted(type) + ": use Secret or Path");
}

}  // namespace mka::multikueue
