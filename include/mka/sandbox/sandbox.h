#pragma once
// Several emulated clusters in one process, each on its own loopback HTTPS port with its own CA
// and bearer token, and a kubeconfig per cluster written to a folder so that kubectl (and our
// own client) can talk to each. Used by integration tests, benchmarks, `demo` and the
// standalone `multikueue-adapter sandbox` command.
//
// Threads: the owner creates, starts and stops clusters; each cluster serves on its own threads.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mka/common/clock.h"
#include "mka/sandbox/admission.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/faults.h"
#include "mka/sandbox/garbage_collector.h"

namespace mka::sandbox {

struct ClusterOptions {
  std::string name;
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = a free port
  std::vector<std::filesystem::path> crdFiles;  // CRDs (YAML, one or more documents) loaded at start
  bool garbageCollection = true;
  std::size_t watchHistory = 10'000;  // events kept for watch resume before 410 Gone
};

class Cluster {
 public:
  Cluster(ClusterOptions options, const ServiceResolver& resolver, const Clock& clock);
  ~Cluster();

  void start();  // binds (throws mka::Error on failure) and serves
  void stop();
  // Unreachable: the listener closes and open connections are dropped; back: listens again on
  // the same port with the same certificate.
  void setUnreachable(bool unreachable);

  const std::string& name() const;
  int port() const;
  std::string server() const;         // "https://127.0.0.1:<port>"
  const std::string& caPem() const;   // the cluster's CA (certificate-authority-data)
  const std::string& token() const;   // bearer token accepted by this cluster
  std::string kubeconfig() const;     // a complete kubeconfig (YAML) for this cluster

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

  Cluster& addCluster(ClusterOptions options);  // created and started
  Cluster& cluster(const std::string& name);
  std::vector<std::string> clusterNames() const;
  ServiceResolver& services() { return resolver_; }

  // Writes <dir>/<cluster>.kubeconfig for each cluster; returns the paths by cluster name.
  std::map<std::string, std::filesystem::path> writeKubeconfigs(const std::filesystem::path& dir) const;
  void stop();

 private:
  static const Clock& defaultClock();
  const Clock& clock_;
  ServiceResolver resolver_;
  std::map<std::string, std::unique_ptr<Cluster>> clusters_;
};

}  // namespace mka::sandbox
