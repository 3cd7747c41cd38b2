#pragma once
// kubeconfig files and the connection settings (RestConfig) built from them, the way
// client-go's clientcmd reads them: loading precedence (--kubeconfig, KUBECONFIG merged,
// ~/.kube/config, in-cluster service account), contexts, inline credentials. Plus Kueue's
// security validation for the worker kubeconfigs that MultiKueue reads from Secrets
// (KUEUE-MULTIKUEUE.md §3.2), which refuses everything that would let a Secret author read
// files or run programs on the manager.
//
// Threads: pure functions and plain values.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::kube {

class CredentialSource;  // exec_credential.h

struct KubeconfigCluster {
  std::string name;
  std::string server;
  std::string certificateAuthorityData;  // PEM (decoded from base64)
  std::string certificateAuthority;      // a file path
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName;
  std::string proxyUrl;
};

struct KubeconfigUser {
  std::string name;
  std::string token;
  std::string tokenFile;
  std::string clientCertificateData;  // PEM
  std::string clientKeyData;          // PEM
  std::string clientCertificate;      // file paths
  std::string clientKey;
  std::string username, password;
  bool exec = false;          // an exec credential plugin is configured
  bool authProvider = false;  // an auth-provider is configured
};

struct KubeconfigContext {
  std::string name;
  std::string cluster;
  std::string user;
  std::string namespace_;
};

struct Kubeconfig {
  std::vector<KubeconfigCluster> clusters;
  std::vector<KubeconfigUser> users;
  std::vector<KubeconfigContext> contexts;
  std::string currentContext;
  // Where it came from ("<inline>" or a path), for error messages; relative file paths in it
  // are resolved against `directory` when not empty.
  std::string source = "<inline>";
  std::filesystem::path directory;

  // Throws mka::Error "<source>: <problem>" when the text is not a kubeconfig (bad YAML, a
  // field of the wrong type, base64 that does not decode).
  static Kubeconfig parse(std::string_view yaml, std::string source = "<inline>");
  static Kubeconfig load(const std::filesystem::path& file);  // also throws when unreadable

  const KubeconfigCluster* cluster(const std::string& name) const;
  const KubeconfigUser* user(const std::string& name) const;
  const KubeconfigContext* context(const std::string& name) const;
};

// client-go's merge of the KUBECONFIG list: for each cluster, user and context name the first
// file that defines it wins, and so does the first current-context set.
Kubeconfig mergeKubeconfigs(const std::vector<Kubeconfig>& files);

// Everything a REST client needs to talk to one API server.
struct RestConfig {
  std::string host;  // "https://127.0.0.1:6443"
  std::string caPem;
  std::string tlsServerName;
  bool insecureSkipTlsVerify = false;
  std::string bearerToken;
  std::string bearerTokenFile;  // re-read by the client (projected service account tokens rotate)
  std::string clientCertificatePem, clientKeyPem;
  std::string username, password;
  bool exec = false, authProvider = false;
  // Credentials from an exec plugin (a ClusterProfile's access provider), asked for each
  // request and connection; null: the fields above. Shared by the copies of this config.
  std::shared_ptr<CredentialSource> credentials;
  std::string namespace_ = "default";  // the context's namespace
  std::string context, cluster;        // names, for logs
};

// The RestConfig of `context` ("" = current-context), with file references (CA, client
// certificate and key, token file) read. Throws mka::Error naming the context, cluster or
// user that is missing or unreadable, and how to fix it.
RestConfig restConfigFor(const Kubeconfig& config, const std::string& context = "");

// Where loadRestConfig looks, injectable for tests.
struct LoadingRules {
  std::string explicitPath;                  // --kubeconfig
  std::optional<std::string> kubeconfigEnv;  // $KUBECONFIG (colon-separated)
  std::filesystem::path home;                // ~/.kube/config is home/.kube/config
  std::filesystem::path serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::optional<std::string> serviceHost, servicePort;  // $KUBERNETES_SERVICE_HOST/_PORT
  std::string context;                                  // --context
  static LoadingRules fromEnvironment(std::string explicitPath = "", std::string context = "");
};

// client-go's precedence: --kubeconfig (that file only, which must exist); else the KUBECONFIG
// files that exist, merged; else ~/.kube/config when present; else the in-cluster service
// account (token, ca.crt, namespace and KUBERNETES_SERVICE_HOST/PORT). Throws mka::Error
// saying what was tried when nothing is found.
RestConfig loadRestConfig(const LoadingRules& rules);

// Kueue's security validation of a worker kubeconfig (§3.2), rules in Kueue's order. nullopt
// when the kubeconfig is acceptable, else Kueue's message (reason InsecureKubeConfig), e.g.
// "tokenFile is not allowed" or "insecure TLS verification is not allowed for cluster w1".
std::optional<std::string> validateKubeconfigSecurity(std::string_view kubeconfigYaml);

// Kueue's endpoint rule: the server URL's host (port stripped, lower-cased) is an IP literal
// or a DNS-1123 subdomain. False means "untrusted server endpoint".
bool trustedServerEndpoint(const std::string& server);

// The kubeconfig of a MultiKueueCluster's Secret: data.kubeconfig (base64). Throws mka::Error
// `key "kubeconfig" not found in secret "<name>"` and the like.
std::string kubeconfigFromSecret(const nlohmann::json& secret);

}  // namespace mka::kube
