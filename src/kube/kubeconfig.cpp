#include "mka/kube/kubeconfig.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "mka/common/base64.h"
#include "mka/common/bounded_read.h"
#include "mka/common/errors.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/yaml/document.h"

namespace mka::kube {
namespace {

// A kubeconfig, CA bundle, certificate, key or token: none is near 1 MiB, and a device or a pipe
// named by mistake must not be read forever.
constexpr std::size_t kMaxFileBytes = 1 << 20;

std::string readFile(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(what + ": cannot read " + path.string() + ": check that the file exists and is readable");
  auto out = readAtMost(in, kMaxFileBytes);
  if (out.size() > kMaxFileBytes)
    throw Error(what + ": " + path.string() + " is larger than 1 MiB: point to the " + what + " file itself");
  return out;
}

// A scalar field, or "" when absent; a field of another type is an error naming it.
std::string scalar(const yaml::Node& node, const char* key, const std::string& where) {
  const auto* value = node.find(key);
  if (!value || value->isNull()) return {};
  if (!value->isScalar()) throw Error(where + "." + key + ": must be a string");
  return value->scalar();
}

bool present(const yaml::Node& node, const char* key) {
  const auto* value = node.find(key);
  return value && !value->isNull();
}

bool boolean(const yaml::Node& node, const char* key, const std::string& where) {
  const auto text = scalar(node, key, where);
  if (text.empty() || text == "false") return false;
  if (text == "true") return true;
  throw Error(where + "." + key + ": must be true or false, not \"" + text + "\"");
}

std::string base64Field(const yaml::Node& node, const char* key, const std::string& where) {
  auto text = scalar(node, key, where);
  if (text.empty()) return {};
  // Go's []byte JSON/YAML decoding takes standard padded base64; tolerate line breaks that
  // YAML folding may leave.
  text.erase(std::remove_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == ' '; }),
             text.end());
  auto decoded = base64Decode(text);
  if (!decoded) throw Error(where + "." + key + ": is not valid base64: encode the PEM file with `base64 -w0`");
  return *decoded;
}

// The entries of a named list ("clusters", "users", "contexts"): [{name, <item>: {...}}].
template <typename F>
void forEachNamed(const yaml::Node& root, const char* list, const char* item, const std::string& source, F&& f) {
  const auto* entries = root.find(list);
  if (!entries || entries->isNull()) return;
  if (!entries->isSequence()) throw Error(source + ": " + list + ": must be a list");
  for (std::size_t i = 0; i < entries->items().size(); ++i) {
    const auto& entry = *entries->items()[i];
    const std::string where = std::string(list) + "[" + std::to_string(i) + "]";
    if (!entry.isMapping()) throw Error(source + ": " + where + ": must be a map with name and " + item);
    auto name = scalar(entry, "name", where);
    if (name.empty()) throw Error(source + ": " + where + ".name: Required value: give every " + item + " a name");
    const auto* body = entry.find(item);
    if (body && !body->isNull() && !body->isMapping())
      throw Error(source + ": " + where + "." + item + ": must be a map");
    // An absent or null body has no fields: every one of them reads as "".
    static const yaml::Node kNothing;
    f(name, body && body->isMapping() ? *body : kNothing, where + "." + item);
  }
}

std::filesystem::path resolve(const Kubeconfig& config, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_relative() && !config.directory.empty()) return config.directory / p;
  return p;
}

// A kubeconfig credential: the inline *-data value when set (it wins, as in client-go), else the
// file it names, else "".
std::string inlineOrFile(const Kubeconfig& config, const std::string& data, const std::string& path,
                         const std::string& what) {
  if (!data.empty()) return data;
  if (!path.empty()) return readFile(resolve(config, path), what);
  return {};
}

// host[:port] of a URL, lower-cased, without brackets around an IPv6 literal.
std::optional<std::string> urlHost(const std::string& server) {
  auto rest = std::string_view(server);
  const auto scheme = rest.find("://");
  if (scheme == std::string_view::npos) return std::nullopt;
  const auto s = rest.substr(0, scheme);
  if (s != "https" && s != "http") return std::nullopt;
  rest.remove_prefix(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (rest.find('@') != std::string_view::npos) rest.remove_prefix(rest.find('@') + 1);
  std::string host;
  if (rest.starts_with("[")) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = std::string(rest.substr(1, close - 1));
  } else {
    host = std::string(rest.substr(0, rest.find(':')));
  }
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  return host;
}

}  // namespace

Kubeconfig Kubeconfig::parse(std::string_view yaml, std::string source) {
  Kubeconfig out;
  out.source = source;
  std::vector<yaml::NodePtr> documents;
  try {
    documents = yaml::parse(yaml, yaml::Limits::forSmallDocuments());
  } catch (const yaml::SyntaxError& e) {
    throw Error(source + ": not valid YAML: " + e.what());
  } catch (const yaml::LimitError& e) {
    throw Error(source + ": not a kubeconfig: " + e.what());
  }
  // client-go reads the first document of a file.
  if (documents.empty() || documents.front()->isNull()) return out;  // an empty file is an empty kubeconfig
  const auto& root = *documents.front();
  if (!root.isMapping()) throw Error(source + ": a kubeconfig must be a YAML map (apiVersion: v1, kind: Config)");
  try {
    out.currentContext = scalar(root, "current-context", "current-context");
    forEachNamed(root, "clusters", "cluster", source, [&](std::string name, const yaml::Node& c, const std::string& w) {
      KubeconfigCluster cluster;
      cluster.name = std::move(name);
      cluster.server = scalar(c, "server", w);
      cluster.certificateAuthorityData = base64Field(c, "certificate-authority-data", w);
      cluster.certificateAuthority = scalar(c, "certificate-authority", w);
      cluster.insecureSkipTlsVerify = boolean(c, "insecure-skip-tls-verify", w);
      cluster.tlsServerName = scalar(c, "tls-server-name", w);
      cluster.proxyUrl = scalar(c, "proxy-url", w);
      out.clusters.push_back(std::move(cluster));
    });
    forEachNamed(root, "users", "user", source, [&](std::string name, const yaml::Node& u, const std::string& w) {
      KubeconfigUser user;
      user.name = std::move(name);
      user.token = scalar(u, "token", w);
      user.tokenFile = scalar(u, "tokenFile", w);
      user.clientCertificateData = base64Field(u, "client-certificate-data", w);
      user.clientKeyData = base64Field(u, "client-key-data", w);
      user.clientCertificate = scalar(u, "client-certificate", w);
      user.clientKey = scalar(u, "client-key", w);
      user.username = scalar(u, "username", w);
      user.password = scalar(u, "password", w);
      user.exec = present(u, "exec");
      user.authProvider = present(u, "auth-provider");
      out.users.push_back(std::move(user));
    });
    forEachNamed(root, "contexts", "context", source, [&](std::string name, const yaml::Node& c, const std::string& w) {
      out.contexts.push_back(
          {std::move(name), scalar(c, "cluster", w), scalar(c, "user", w), scalar(c, "namespace", w)});
    });
  } catch (const Error& e) {
    const std::string text = e.what();
    if (text.starts_with(source + ": ")) throw;
    throw Error(source + ": " + text);
  }
  return out;
}

Kubeconfig Kubeconfig::load(const std::filesystem::path& file) {
  auto config = parse(readFile(file, "kubeconfig"), file.string());
  config.directory = file.parent_path();
  return config;
}

const KubeconfigCluster* Kubeconfig::cluster(const std::string& name) const {
  for (const auto& c : clusters)
    if (c.name == name) return &c;
  return nullptr;
}
const KubeconfigUser* Kubeconfig::user(const std::string& name) const {
  for (const auto& u : users)
    if (u.name == name) return &u;
  return nullptr;
}
const KubeconfigContext* Kubeconfig::context(const std::string& name) const {
  for (const auto& c : contexts)
    if (c.name == name) return &c;
  return nullptr;
}

Kubeconfig mergeKubeconfigs(const std::vector<Kubeconfig>& files) {
  Kubeconfig out;
  std::vector<std::string> sources;
  for (const auto& f : files) {
    sources.push_back(f.source);
    if (out.currentContext.empty()) out.currentContext = f.currentContext;
    // File references stay relative to the file that holds them.
    for (auto c : f.clusters) {
      if (out.cluster(c.name)) continue;
      if (!c.certificateAuthority.empty()) c.certificateAuthority = resolve(f, c.certificateAuthority).string();
      out.clusters.push_back(std::move(c));
    }
    for (auto u : f.users) {
      if (out.user(u.name)) continue;
      if (!u.tokenFile.empty()) u.tokenFile = resolve(f, u.tokenFile).string();
      if (!u.clientCertificate.empty()) u.clientCertificate = resolve(f, u.clientCertificate).string();
      if (!u.clientKey.empty()) u.clientKey = resolve(f, u.clientKey).string();
      out.users.push_back(std::move(u));
    }
    for (const auto& c : f.contexts)
      if (!out.context(c.name)) out.contexts.push_back(c);
  }
  out.source = strings::join(sources, ":");
  return out;
}

RestConfig restConfigFor(const Kubeconfig& config, const std::string& contextName) {
  const std::string name = contextName.empty() ? config.currentContext : contextName;
  if (name.empty())
    throw Error(config.source +
                ": invalid configuration: no current-context is set: set current-context or pass --context");
  const auto* context = config.context(name);
  if (!context) throw Error(config.source + ": context \"" + name + "\" does not exist: check contexts[].name");
  const auto* cluster = config.cluster(context->cluster);
  if (!cluster)
    throw Error(config.source + ": context \"" + name + "\": cluster \"" + context->cluster +
                "\" does not exist: add it to clusters[] or fix contexts[].context.cluster");
  if (cluster->server.empty())
    throw Error(config.source + ": cluster \"" + cluster->name + "\": server is empty: set clusters[].cluster.server");
  RestConfig out;
  out.host = cluster->server;
  out.context = name;
  out.cluster = cluster->name;
  out.insecureSkipTlsVerify = cluster->insecureSkipTlsVerify;
  out.tlsServerName = cluster->tlsServerName;
  if (!context->namespace_.empty()) out.namespace_ = context->namespace_;
  const std::string where = config.source + ": cluster \"" + cluster->name + "\"";
  out.caPem = inlineOrFile(config, cluster->certificateAuthorityData, cluster->certificateAuthority,
                           where + ": certificate-authority");
  if (!context->user.empty()) {
    const auto* user = config.user(context->user);
    if (!user)
      throw Error(config.source + ": context \"" + name + "\": user \"" + context->user +
                  "\" does not exist: add it to users[] or fix contexts[].context.user");
    const std::string uwhere = config.source + ": user \"" + user->name + "\"";
    out.bearerToken = user->token;
    if (!user->tokenFile.empty()) {
      out.bearerTokenFile = resolve(config, user->tokenFile).string();
      if (out.bearerToken.empty())
        out.bearerToken = std::string(strings::trim(readFile(out.bearerTokenFile, uwhere + ": tokenFile")));
    }
    out.clientCertificatePem =
        inlineOrFile(config, user->clientCertificateData, user->clientCertificate, uwhere + ": client-certificate");
    out.clientKeyPem = inlineOrFile(config, user->clientKeyData, user->clientKey, uwhere + ": client-key");
    if (out.clientCertificatePem.empty() != out.clientKeyPem.empty())
      throw Error(uwhere +
                  ": a client certificate needs its key (client-certificate-data and client-key-data together)");
    out.username = user->username;
    out.password = user->password;
    out.exec = user->exec;
    out.authProvider = user->authProvider;
  }
  return out;
}

LoadingRules LoadingRules::fromEnvironment(std::string explicitPath, std::string context) {
  LoadingRules rules;
  rules.explicitPath = std::move(explicitPath);
  rules.context = std::move(context);
  if (const char* env = std::getenv("KUBECONFIG")) rules.kubeconfigEnv = env;
  if (const char* home = std::getenv("HOME")) rules.home = home;
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST")) rules.serviceHost = host;
  if (const char* port = std::getenv("KUBERNETES_SERVICE_PORT")) rules.servicePort = port;
  return rules;
}

RestConfig loadRestConfig(const LoadingRules& rules) {
  if (!rules.explicitPath.empty()) return restConfigFor(Kubeconfig::load(rules.explicitPath), rules.context);
  std::vector<std::string> tried;
  if (rules.kubeconfigEnv && !rules.kubeconfigEnv->empty()) {
    std::vector<Kubeconfig> files;
    std::set<std::string> seen;
    for (const auto& part : strings::split(*rules.kubeconfigEnv, ':')) {
      if (part.empty() || !seen.insert(part).second) continue;
      if (std::filesystem::exists(part)) files.push_back(Kubeconfig::load(part));  // missing files are skipped
    }
    if (!files.empty()) return restConfigFor(mergeKubeconfigs(files), rules.context);
    tried.push_back("KUBECONFIG=" + *rules.kubeconfigEnv + " (no file exists)");
  }
  if (!rules.home.empty()) {
    const auto file = rules.home / ".kube" / "config";
    if (std::filesystem::exists(file)) return restConfigFor(Kubeconfig::load(file), rules.context);
    tried.push_back(file.string() + " (absent)");
  }
  if (rules.serviceHost && rules.servicePort && !rules.serviceHost->empty() && !rules.servicePort->empty()) {
    RestConfig out;
    const bool ipv6 = rules.serviceHost->find(':') != std::string::npos;
    out.host = "https://" + (ipv6 ? "[" + *rules.serviceHost + "]" : *rules.serviceHost) + ":" + *rules.servicePort;
    out.bearerTokenFile = (rules.serviceAccountDir / "token").string();
    out.bearerToken = std::string(strings::trim(readFile(out.bearerTokenFile, "in-cluster service account token")));
    out.caPem = readFile(rules.serviceAccountDir / "ca.crt", "in-cluster service account CA");
    const auto nsFile = rules.serviceAccountDir / "namespace";
    if (std::filesystem::exists(nsFile))
      out.namespace_ = std::string(strings::trim(readFile(nsFile, "in-cluster namespace")));
    out.context = "in-cluster";
    out.cluster = "in-cluster";
    return out;
  }
  tried.push_back("in-cluster (KUBERNETES_SERVICE_HOST/PORT not set)");
  throw Error("no Kubernetes configuration found: tried " + strings::join(tried, ", ") +
              ": pass --kubeconfig, set KUBECONFIG, or run in a pod with a service account");
}

std::optional<std::string> validateKubeconfigSecurity(std::string_view kubeconfigYaml) {
  Kubeconfig config;
  try {
    config = Kubeconfig::parse(kubeconfigYaml, "kubeconfig");
  } catch (const Error& e) {
    return "failed to parse kubeconfig(apiconfig): " + std::string(e.what());
  }
  for (const auto& user : config.users)
    if (!user.tokenFile.empty()) return "tokenFile is not allowed";
  for (const auto& cluster : config.clusters) {
    if (cluster.insecureSkipTlsVerify) return "insecure TLS verification is not allowed for cluster " + cluster.name;
    if (!cluster.certificateAuthority.empty())
      return "certificate-authority file paths are not allowed, use certificate-authority-data for cluster " +
             cluster.name;
    if (cluster.server.empty()) return "server URL is required for cluster " + cluster.name;
  }
  // The rest config of the current context, built without reading any file: paths that
  // survive the checks above are client certificate/key files, which a Secret must not name.
  const auto* context = config.context(config.currentContext);
  if (!context) return "invalid configuration: context \"" + config.currentContext + "\" does not exist";
  const auto* cluster = config.cluster(context->cluster);
  if (!cluster) return "invalid configuration: cluster \"" + context->cluster + "\" does not exist";
  const auto* user = context->user.empty() ? nullptr : config.user(context->user);
  // Not in Kueue's list, which would read these files from the manager's disk: the same
  // reasoning as for certificate-authority paths.
  if (user && (!user->clientCertificate.empty() || !user->clientKey.empty()))
    return "client certificate file paths are not allowed, use client-certificate-data and client-key-data";
  if (!trustedServerEndpoint(cluster->server)) return "untrusted server endpoint";
  if (user && (!user->username.empty() || !user->password.empty())) return "basic auth is not allowed";
  if (user && user->exec) return "exec plugins are not allowed";
  if (user && user->authProvider) return "auth providers are not allowed";
  return std::nullopt;
}

bool trustedServerEndpoint(const std::string& server) {
  auto host = urlHost(server);
  return host && !host->empty() && (validation::isIpLiteral(*host) || validation::dns1123Subdomain(*host).empty());
}

std::string kubeconfigFromSecret(const nlohmann::json& secret) {
  const auto meta = secret.value("metadata", nlohmann::json::object());
  const std::string name = meta.value("namespace", "") + "/" + meta.value("name", "");
  const auto data = secret.value("data", nlohmann::json::object());
  if (!data.is_object() || !data.contains("kubeconfig"))
    throw Error("key \"kubeconfig\" not found in secret \"" + meta.value("name", "") + "\"");
  const auto& value = data["kubeconfig"];
  auto decoded = value.is_string() ? base64Decode(value.get<std::string>()) : std::nullopt;
  if (!decoded)
    throw Error("secret " + name + ": data.kubeconfig is not valid base64: store the kubeconfig file's bytes");
  return *decoded;
}

}  // namespace mka::kube
