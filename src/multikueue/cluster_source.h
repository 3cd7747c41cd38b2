#pragma once
// Where a MultiKueueCluster's kubeconfig comes from (KUEUE-MULTIKUEUE.md §3.1, §3.2): the
// Secret `<namespace>/<location>` (key `kubeconfig`) or a file that must resolve under the
// allowed prefix, then Kueue's security validation. Failures carry Kueue's reason for the
// `Active` condition and its message (without the `load client config failed: ` prefix).
//
// Threads: the caller's (one reconcile); reads the manager and the filesystem.

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/multikueue/object_reader.h"

namespace mka::multikueue {

struct ClusterSource {
  std::string secretName;  // the Secret's name when locationType is Secret, else ""
  // The file to watch when locationType is Path: it loaded, or it is missing under the prefix.
  // "" otherwise (Secret, or a path the adapter may not read).
  std::string path;
  std::string kubeconfig;  // the kubeconfig text when it loaded
  // When it did not load: Kueue's reason (BadKubeConfig, InsecureKubeConfig, ...) and error.
  std::string reason;
  std::string error;
  bool notFound = false;  // the Secret is missing: its own event brings the cluster back
  bool ok() const { return reason.empty(); }
};

// Reads spec.clusterSource of `cluster` and loads its kubeconfig.
ClusterSource loadClusterSource(const ObjectReader& objects, const nlohmann::json& cluster,
                                const std::string& namespace_, const std::filesystem::path& pathPrefix);

// MultiKueueKubeConfigPathValidation: nullopt when `path` resolves (symlinks included) to a
// file under `prefix`, else Kueue's message.
std::optional<std::string> validateKubeconfigPath(const std::string& path, const std::filesystem::path& prefix);

}  // namespace mka::multikueue
