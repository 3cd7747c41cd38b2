#pragma once
// Where a MultiKueueCluster's connection comes from (KUEUE-MULTIKUEUE.md §3.1, §3.2): a
// kubeconfig in the Secret `<namespace>/<location>` (key `kubeconfig`) or in a file that must
// resolve under the allowed prefix, then Kueue's security validation; or the ClusterProfile
// `<namespace>/<clusterProfileRef.name>`, whose status names the server, its CA and the access
// providers it offers, the first of them the configuration lists supplying the exec plugin (as
// cluster-inventory-api's access.Config does it). Failures carry Kueue's reason for the
// `Active` condition and its message (without the `load client config failed: ` prefix).
//
// The dispatch loop's cluster registry and the `workers` command read workers through it alike.
//
// Threads: the caller's (one reconcile, one command); reads the manager and the filesystem.

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/api/exec_config.h"
#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/rest_client.h"

namespace mka::multikueue {

// A worker reached through a ClusterProfile: no kubeconfig, the plugin's credentials.
struct ProfileAccess {
  std::string provider;  // the access provider chosen
  std::string server;
  std::string caPem;
  std::string tlsServerName;
  std::string proxyUrl;
  api::ExecConfig exec;                    // from the adapter's configuration, never the profile
  nlohmann::json execExtension = nullptr;  // the cluster's client.authentication.k8s.io/exec data
  bool operator==(const ProfileAccess&) const = default;
};

struct ClusterSource {
  std::string profileName;               // the ClusterProfile's name when the source is clusterProfileRef, else ""
  std::optional<ProfileAccess> profile;  // set when the profile loaded (kubeconfig stays "")
  std::string secretName;                // the Secret's name when locationType is Secret, else ""
  // The file to watch when locationType is Path: it loaded, or it is missing under the prefix.
  // "" otherwise (Secret, or a path the adapter may not read).
  std::string path;
  std::string kubeconfig;  // the kubeconfig text when it loaded
  // When it did not load: Kueue's reason (BadKubeConfig, InsecureKubeConfig, ...) and error.
  std::string reason;
  std::string error;
  bool notFound = false;  // the Secret or ClusterProfile is missing: its own event brings the cluster back
  bool ok() const { return reason.empty(); }
  // What a connection is built from, as one string: when it changes, the worker reconnects.
  std::string identity() const;
};

// Reads spec.clusterSource of `cluster` and loads its kubeconfig or ClusterProfile.
// `profiles`: multiKueue.clusterProfile (null: not configured).
ClusterSource loadClusterSource(const controller::ObjectReader& objects, const nlohmann::json& cluster,
                                const std::string& namespace_, const std::filesystem::path& pathPrefix,
                                const config::ClusterProfileAccess* profiles = nullptr);

// MultiKueueKubeConfigPathValidation: nullopt when `path` resolves (symlinks included) to a
// file under `prefix`, else Kueue's message.
std::optional<std::string> validateKubeconfigPath(const std::string& path, const std::filesystem::path& prefix);

// The connection settings of a loaded `source` (ok()): its kubeconfig's current context, or the
// ClusterProfile's server and CA with the exec plugin's credentials, fetched here once so that
// a failing plugin fails before any request. Throws mka::Error naming the cluster or profile.
kube::RestConfig restConfigOf(const std::string& cluster, const ClusterSource& source, const Clock& clock);

}  // namespace mka::multikueue
