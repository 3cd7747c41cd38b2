#include "mka/sandbox/sandbox.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "cluster_http.h"
#include "ids.h"
#include "log.h"
#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/common/validation.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/pki.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/crd_loader.h"
#include "mka/yaml/json.h"
#include "token_controller.h"

namespace mka::sandbox {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The namespaces every kube-apiserver has.
const std::vector<std::string> kDefaultNamespaces = {"default", "kube-system", "kube-public", "kube-node-lease"};

const ResourceRef kCrdRef{"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""};
const ResourceRef kNamespaceRef{"", "v1", "namespaces", "", "", ""};

bool isIpAddress(const std::string& host) {
  return (!host.empty() && host.find_first_not_of("0123456789.") == std::string::npos) ||
         host.find(':') != std::string::npos;
}

// Writes `content` to `file` with mode 0600, through a temporary file renamed over it.
void writePrivateFile(const fs::path& file, const std::string& content) {
  const fs::path tmp = file.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw Error(tmp.string() + ": cannot create: " + std::strerror(errno) +
                ": check that the directory exists and is writable");
  }
  bool ok = ::fchmod(fd, 0600) == 0;  // an existing file keeps its mode otherwise
  std::size_t written = 0;
  while (ok && written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) written += static_cast<std::size_t>(n);
  }
  const int savedErrno = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) {
    const std::string reason = std::strerror(ok ? errno : savedErrno);
    ::unlink(tmp.c_str());
    throw Error(file.string() + ": cannot write: " + reason + ": check free space and permissions");
  }
}

// The serving certificate goes through CertificateReloader, which reads files: write the pair
// to a private directory, load it, and remove the directory (the pair stays in memory).
std::shared_ptr<net::CertificateReloader> servingCertificates(const std::string& cluster,
                                                              const net::CertificateAndKey& pair) {
  std::string pattern = (fs::temp_directory_path() / ("mka-sandbox-" + cluster + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error("sandbox cluster " + cluster + ": cannot create a temporary directory in " +
                fs::temp_directory_path().string() + ": " + std::strerror(errno) +
                ": set TMPDIR to a writable directory");
  }
  const fs::path dir = pattern;
  struct RemoveDir {
    fs::path dir;
    ~RemoveDir() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } removeDir{dir};
  writePrivateFile(dir / "tls.crt", pair.certPem);
  writePrivateFile(dir / "tls.key", pair.keyPem);
  auto certificates = std::make_shared<net::CertificateReloader>(dir / "tls.crt", dir / "tls.key");
  const std::string error = certificates->reload();
  if (!error.empty()) throw Error("sandbox cluster " + cluster + ": cannot load its serving certificate: " + error);
  return certificates;
}

}  // namespace

struct Cluster::Impl {
  Impl(ClusterOptions o, const ServiceResolver& r, const Clock& c)
      : options(std::move(o)),
        clock(c),
        store(options.watchHistory),
        admission(store, r),
        api(options.name, registry, store, clock),
        gc(api),
        ca("multikueue-adapter sandbox CA (" + options.name + ")"),
        token(detail::newToken("a bearer token")),
        tokens(api, ca.certPem()) {}

  ClusterOptions options;
  const Clock& clock;
  ResourceRegistry registry;
  ObjectStore store;
  AdmissionChain admission;  // the cluster's webhooks, called by the API on every write
  ClusterApi api;
  GarbageCollector gc;
  FaultInjector faults;
  net::CertificateAuthority ca;
  std::string token;
  TokenController tokens;  // ServiceAccount token Secrets, and the tokens they hold
  std::unique_ptr<ClusterHttp> http;
  bool seeded = false;
  bool unreachable = false;
};

Cluster::Cluster(ClusterOptions options, const ServiceResolver& resolver, const Clock& clock) {
  if (!validation::dns1123Label(options.name).empty()) {
    throw Error("sandbox: cluster name \"" + options.name +
                "\" is not a DNS label: use lower-case letters, digits and '-' (at most 63), e.g. worker1");
  }
  impl_ = std::make_unique<Impl>(std::move(options), resolver, clock);
  Impl& d = *impl_;
  d.api.setAdmission(
      [&admission = d.admission](const AdmissionAttributes& attributes) { return admission.admit(attributes); },
      [&admission = d.admission] { return admission.hasWebhooks(); });
  d.api.setGarbageCollector(&d.gc);
  d.api.setWriteObserver([&tokens = d.tokens](const ResourceType& type, const json& object, bool removed) {
    tokens.observe(type, object, removed);
  });
  d.gc.setEnabled(d.options.garbageCollection);

  net::IssueOptions issue;
  issue.commonName = d.options.host == "127.0.0.1" ? "localhost" : d.options.host;
  issue.dnsNames = {"localhost"};
  issue.ipAddresses = {"127.0.0.1"};
  if (d.options.host != "127.0.0.1" && d.options.host != "localhost") {
    (isIpAddress(d.options.host) ? issue.ipAddresses : issue.dnsNames).push_back(d.options.host);
  }
  issue.validity = std::chrono::hours{24 * 30};  // as long as the CA

  ClusterHttpOptions http;
  http.clusterName = d.options.name;
  http.host = d.options.host;
  http.port = d.options.port;
  http.token = d.token;
  http.authenticateToken = [&tokens = d.tokens](const std::string& token) { return tokens.authenticate(token); };
  http.clientCaPem = d.ca.certPem();
  http.bookmarkInterval = d.options.bookmarkInterval;
  http.defaultWatchTimeout = d.options.defaultWatchTimeout;
  d.http = std::make_unique<ClusterHttp>(std::move(http), servingCertificates(d.options.name, d.ca.issue(issue)), d.api,
                                         d.faults, d.clock);
}

Cluster::~Cluster() { stop(); }

void Cluster::start() {
  Impl& d = *impl_;
  if (!d.seeded) {
    for (const auto& ns : kDefaultNamespaces) {
      try {
        d.api.create(kNamespaceRef, json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
      } catch (const ApiError& e) {
        if (e.code() != 409) throw;
      }
    }
    std::set<std::string> created;
    for (const auto& file : d.options.crdFiles) {
      for (auto& crd : loadCrdFile(file)) {
        const std::string name = crd.value(json::json_pointer("/metadata/name"), std::string());
        if (!created.insert(name).second) {
          log::warn(logger(), "CRD skipped: an earlier file already defined it",
                    {{"cluster", d.options.name}, {"crd", name}, {"file", file.string()}});
          continue;
        }
        try {
          d.api.create(kCrdRef, std::move(crd));
        } catch (const ApiError& e) {
          throw Error(file.string() + ": cannot create CRD " + name + " in sandbox cluster " + d.options.name + ": " +
                      e.what());
        }
      }
    }
    log::info(logger(), "cluster seeded",
              {{"cluster", d.options.name}, {"namespaces", kDefaultNamespaces.size()}, {"crds", created.size()}});
    d.seeded = true;
  }
  d.gc.start();
  d.tokens.start();
  if (!d.unreachable) d.http->start();
}

void Cluster::stop() {
  Impl& d = *impl_;
  d.http->stop();
  d.gc.stop();
  d.tokens.stop();
}

void Cluster::setUnreachable(bool unreachable) {
  Impl& d = *impl_;
  if (d.unreachable == unreachable) return;
  d.unreachable = unreachable;
  if (unreachable) {
    d.http->stop();
    log::info(logger(), "cluster unreachable", {{"cluster", d.options.name}, {"port", d.http->port()}});
  } else {
    d.http->start();
    log::info(logger(), "cluster reachable again", {{"cluster", d.options.name}, {"port", d.http->port()}});
  }
}

bool Cluster::unreachable() const { return impl_->unreachable; }

const std::string& Cluster::name() const { return impl_->options.name; }
int Cluster::port() const { return impl_->http->port(); }

std::string Cluster::server() const {
  const std::string& host = impl_->options.host;
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "https://" + shown + ":" + std::to_string(port());
}

const std::string& Cluster::caPem() const { return impl_->ca.certPem(); }
const std::string& Cluster::token() const { return impl_->token; }

net::CertificateAndKey Cluster::clientCertificate(const std::string& user,
                                                  const std::vector<std::string>& groups) const {
  net::IssueOptions issue;
  issue.commonName = user;
  issue.organizations = groups;
  issue.clientAuth = true;
  issue.validity = std::chrono::hours{24};
  return impl_->ca.issue(issue);
}

std::string Cluster::kubeconfig() const {
  const std::string& name = impl_->options.name;
  const nlohmann::ordered_json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"clusters",
       {{{"name", name}, {"cluster", {{"server", server()}, {"certificate-authority-data", base64Encode(caPem())}}}}}},
      {"contexts", {{{"name", name}, {"context", {{"cluster", name}, {"user", name}}}}}},
      {"current-context", name},
      {"users", {{{"name", name}, {"user", {{"token", token()}}}}}},
      {"preferences", nlohmann::ordered_json::object()},
  };
  return yaml::toYaml(config);
}

std::size_t Cluster::openWatches() const { return impl_->http->openWatches(); }
std::uint64_t Cluster::watchesStarted() const { return impl_->http->watchesStarted(); }
std::size_t Cluster::openConnections() const { return impl_->http->openConnections(); }
std::vector<std::string> Cluster::invalidWrites() const { return impl_->http->invalidWrites(); }
void Cluster::recordRequests(bool on) { impl_->http->recordRequests(on); }
std::vector<RecordedRequest> Cluster::recordedRequests() const { return impl_->http->recordedRequests(); }

ClusterApi& Cluster::api() { return impl_->api; }
ObjectStore& Cluster::store() { return impl_->store; }
ResourceRegistry& Cluster::registry() { return impl_->registry; }
FaultInjector& Cluster::faults() { return impl_->faults; }
GarbageCollector& Cluster::garbageCollector() { return impl_->gc; }

Sandbox::Sandbox(const Clock& clock) : clock_(clock) {}

Sandbox::~Sandbox() { stop(); }

const Clock& Sandbox::defaultClock() {
  static const SystemClock clock;
  return clock;
}

Cluster& Sandbox::addCluster(ClusterOptions options) {
  if (clusters_.count(options.name) != 0) {
    throw Error("sandbox: a cluster named \"" + options.name + "\" exists already: give each cluster its own name");
  }
  const std::string name = options.name;
  auto cluster = std::make_unique<Cluster>(std::move(options), resolver_, clock_);
  cluster->start();
  return *clusters_.emplace(name, std::move(cluster)).first->second;
}

Cluster& Sandbox::cluster(const std::string& name) {
  auto it = clusters_.find(name);
  if (it == clusters_.end()) {
    std::string known;
    for (const auto& [n, c] : clusters_) known += (known.empty() ? "" : ", ") + n;
    throw Error("sandbox: no cluster named \"" + name + "\" (clusters: " + (known.empty() ? "none" : known) + ")");
  }
  return *it->second;
}

std::vector<std::string> Sandbox::clusterNames() const {
  std::vector<std::string> out;
  for (const auto& [name, cluster] : clusters_) out.push_back(name);
  return out;
}

std::map<std::string, fs::path> Sandbox::writeKubeconfigs(const fs::path& dir) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(dir.string() + ": cannot create the kubeconfig directory: " + ec.message() +
                ": choose a writable directory");
  }
  std::map<std::string, fs::path> out;
  for (const auto& [name, cluster] : clusters_) {
    const fs::path file = dir / (name + ".kubeconfig");
    writePrivateFile(file, cluster->kubeconfig());
    out[name] = file;
  }
  return out;
}

void Sandbox::stop() {
  for (auto& [name, cluster] : clusters_) cluster->stop();
}

}  // namespace mka::sandbox
