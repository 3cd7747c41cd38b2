#pragma once
// Several emulated clusters in one process, each on its own loopback HTTPS port with its own CA
// and bearer token, and a kubeconfig per cluster written to a folder so that kubectl (and our
// own client) can talk to each. Used by integration tests, benchmarks, `demo` and the
// standalone `multikueue-adapter sandbox` command.
//
// Threads: the owner creates, starts and stops clusters; each cluster serves on its own threads.

#include <chrono>
#include <compare>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mka/common/clock.h"
#include "mka/net/pki.h"
#include "mka/sandbox/admission.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/faults.h"
#include "mka/sandbox/garbage_collector.h"

namespace mka::sandbox {

struct ClusterOptions {
  std::string name;  // a DNS label (lower-case letters, digits, '-'): it names files and contexts
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = a free port
  // CRDs (YAML, one or more documents) created at start, as `kubectl apply -f` would: they are
  // served and listed by `kubectl get crd`. A CRD already created by an earlier file is skipped.
  std::vector<std::filesystem::path> crdFiles;
  bool garbageCollection = true;
  // Events kept for watch (and list) resume before 410 Gone. kube-apiserver's watch cache keeps
  // about as many per resource for a minute or so; a small window makes clients relist as they
  // must on a real cluster.
  std::size_t watchHistory = 1000;
  // How often an idle watch that allows bookmarks gets one (kube-apiserver: about a minute).
  std::chrono::milliseconds bookmarkInterval{std::chrono::seconds{60}};
  // Length of a watch whose client sends no timeoutSeconds.
  std::chrono::seconds defaultWatchTimeout{1800};
};

// One resource request as kube-apiserver's authorizer sees it: who asked, and RBAC's verb,
// group, resource, subresource, namespace and name (its RequestInfo). Recorded while
// Cluster::recordRequests is on, so that a test can check a client's calls against RBAC rules.
struct RecordedRequest {
  // The client certificate's CN, or a ServiceAccount token's "system:serviceaccount:<ns>:<name>";
  // "" for the cluster's bearer token.
  std::string user;
  std::string userAgent;
  std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection
  std::string group;
  std::string resource;  // plural
  std::string subresource;
  std::string namespace_;
  std::string name;  // "" for a create, as RBAC sees it
  // A create's object name (the body's metadata.name), as kube-apiserver's audit log fills in
  // objectRef.name: which object a client created, when several clients create. "" otherwise.
  std::string createdName;
  auto operator<=>(const RecordedRequest&) const = default;
};

class Cluster {
 public:
  Cluster(ClusterOptions options, const ServiceResolver& resolver, const Clock& clock);
  ~Cluster();

  // Creates the default namespaces and the CRDs of `crdFiles`, binds (throws mka::Error on
  // failure, naming the address or the CRD file) and serves.
  void start();
  void stop();
  // Unreachable: the listener closes and open connections are dropped (watches end, requests
  // held by injected latency are released with 503); back: listens again on the same port
  // with the same certificate. Objects and watch history are kept.
  void setUnreachable(bool unreachable);
  bool unreachable() const;

  const std::string& name() const;
  int port() const;
  std::string server() const;        // "https://127.0.0.1:<port>"
  const std::string& caPem() const;  // the cluster's CA (certificate-authority-data)
  const std::string& token() const;  // bearer token accepted by this cluster
  // A client certificate signed by the cluster's CA, which the cluster accepts instead of the
  // token (x509 authentication), for the kubeconfig field client-certificate-data.
  net::CertificateAndKey clientCertificate(const std::string& user,
                                           const std::vector<std::string>& groups = {"system:masters"}) const;
  // A complete kubeconfig (YAML) for this cluster: cluster, user and context all named after
  // it, current-context set, the CA inline (certificate-authority-data) and the bearer token.
  std::string kubeconfig() const;

  std::size_t openWatches() const;       // watches streamed over HTTP right now
  std::uint64_t watchesStarted() const;  // watches streamed over HTTP since the cluster was made
  std::size_t openConnections() const;   // HTTP connections open right now
  // The last writes (up to 100) this cluster refused as invalid (422) over HTTP, as
  // "<METHOD> <path>: <message>": a client whose writes a real cluster would refuse.
  std::vector<std::string> invalidWrites() const;
  // Off by default (nothing is kept). Turned on, it starts afresh and keeps every authenticated
  // resource request once per distinct RecordedRequest, whatever its answer; recordedRequests()
  // returns them sorted.
  void recordRequests(bool on);
  std::vector<RecordedRequest> recordedRequests() const;

  ClusterApi& api();
  ObjectStore& store();
  ResourceRegistry& registry();
  FaultInjector& faults();
  GarbageCollector& garbageCollector();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Sandbox {
 public:
  explicit Sandbox(const Clock& clock = defaultClock());
  ~Sandbox();

  // Created and started. Throws mka::Error when the name is taken or not a DNS label, or when
  // the cluster cannot start.
  Cluster& addCluster(ClusterOptions options);
  Cluster& cluster(const std::string& name);
  std::vector<std::string> clusterNames() const;
  ServiceResolver& services() { return resolver_; }

  // Writes <dir>/<cluster>.kubeconfig (mode 0600, replaced atomically) for each cluster,
  // creating `dir` if needed; returns the paths by cluster name. Throws mka::Error naming the file.
  std::map<std::string, std::filesystem::path> writeKubeconfigs(const std::filesystem::path& dir) const;
  void stop();

 private:
  static const Clock& defaultClock();
  const Clock& clock_;
  ServiceResolver resolver_;
  std::map<std::string, std::unique_ptr<Cluster>> clusters_;
};

}  // namespace mka::sandbox
