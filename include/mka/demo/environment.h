#pragma once
// A whole MultiKueue platform in one process, for `demo`, the end-to-end tests and the
// benchmarks: sandbox clusters (a manager and workers, HTTPS on loopback), a Kueue stand-in on
// each, the sample Kueue objects of manifests/samples applied (AdmissionCheck, MultiKueueConfig,
// MultiKueueClusters, queues; the workers get manifests/samples/worker), one kubeconfig Secret
// per worker in kueue-system, and a client per cluster. It runs as deployed with the job
// integration (SPEC §7.2): the Kueue stand-ins play Kueue's core only (waitForPodsReady on, as
// Kueue 0.19 and later run by default); every cluster runs the
// Tekton and Argo controller stand-ins; each worker runs our integration (the worker adapter's
// leader) for Workflows and PipelineRuns. The manager's adapter itself is not part of it:
// callers start a multikueue::Dispatcher and the manager's integration (or the whole Service)
// against client("manager"); adapterConfiguration() lists the kinds.
//
// Threads: the owner builds, uses and destroys it; clusters and stand-ins run their own threads.

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/integration/controller.h"
#include "mka/kube/client.h"
#include "mka/sandbox/sandbox.h"
#include "mka/standin/job_controller_standin.h"
#include "mka/standin/kueue_standin.h"

namespace mka::demo {

class Environment {
 public:
  struct Options {
    // Each manager gets the sample Kueue objects and a MultiKueueCluster per worker: several
    // managers share the workers (each adapter with its own origin).
    std::vector<std::string> managers{"manager"};
    std::vector<std::string> workers{"worker1", "worker2"};
    std::filesystem::path crdDirectory;                          // CRDs served by every cluster (*.yaml)
    std::filesystem::path samplesDirectory;                      // manifests/samples (kueue/, worker/)
    const Clock* clock = nullptr;                                // null: real time
    std::chrono::nanoseconds runTime{std::chrono::seconds{10}};  // how long a framework controller runs a job
    bool startWorkerKueues = true;
    std::size_t workerCapacity = 0;  // Workloads admitted at once per worker; 0 = unlimited
    std::chrono::milliseconds pollInterval{5};
    std::chrono::nanoseconds readmitDelay{0};
    std::size_t watchHistory = 10'000;  // events each cluster keeps for watch resume (benchmarks raise it)
    // Also written into client options of the environment's own clients.
    kube::ClientOptions clientOptions{.qps = 0};
    // Objects created in each worker (*.yaml, as `kubectl create -f`); "" = samplesDirectory/worker.
    std::filesystem::path workerSamplesDirectory;
    // Each worker runs an integration of the environment's own. false: the caller runs the
    // adapter there (the single-cluster demo runs the whole Service).
    bool workerIntegrations = true;
    // Per worker: how many PipelineRuns its ClusterQueue "cluster-queue" holds at once (the
    // nominal quota of tekton.dev/pipelineruns, which each PipelineRun's Workload requests one
    // of), replacing the sample's. Workers not listed keep the sample's quota.
    std::map<std::string, std::int64_t> workerJobQuota;
  };

  // Starts everything; throws mka::Error naming what failed (a missing CRD directory, a bad
  // sample file).
  explicit Environment(Options options);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  sandbox::Sandbox& sandbox();
  sandbox::Cluster& cluster(const std::string& name);  // a manager or a worker
  standin::KueueStandIn& kueue(const std::string& name);
  kube::Client& client(const std::string& name);
  const std::vector<std::string>& workers() const { return options_.workers; }
  const Clock& clock() const;
  // Sets how many PipelineRuns `cluster`'s ClusterQueue "cluster-queue" holds at once (the
  // nominal quota of tekton.dev/pipelineruns), on a manager or a worker.
  void setJobQuota(const std::string& cluster, std::int64_t quota);

  // The adapter configuration matching the environment: PipelineRun.v1.tekton.dev and
  // Workflow.v1alpha1.argoproj.io (built-in profiles, dispatched and integrated),
  // namespace kueue-system, origin multikueue, our AdmissionCheck controller name, client rate
  // limits off.
  config::Configuration adapterConfiguration() const;

  // Creates every document of a YAML file in `cluster` (as `kubectl create -f`); returns them.
  std::vector<nlohmann::json> createFromFile(const std::string& cluster, const std::filesystem::path& file);
  // Creates one object in `cluster` through its client.
  nlohmann::json create(const std::string& cluster, const nlohmann::json& object);

  // Starts the stand-in of a cluster created with startWorkerKueues = false.
  void startKueue(const std::string& name);
  // Every started stand-in quiet (see KueueStandIn::idle), and every reachable worker's integration.
  bool kueuesIdle() const;
  // Stops a worker's integration and starts a new one with empty caches, as a restarted worker
  // adapter does. Throws mka::Error for a cluster without one.
  void restartIntegration(const std::string& worker);
  // The Tekton or Argo controller stand-in of a cluster ("PipelineRun" or "Workflow"), else null.
  standin::JobControllerStandIn* frameworkController(const std::string& cluster, const std::string& kind);
  // Every write a cluster refused as invalid (sandbox::Cluster::invalidWrites), as
  // "<cluster>: <METHOD> <path>: <message>".
  std::vector<std::string> invalidWrites();
  void pokeKueues();  // after advancing a FakeClock

  // Where the repository's sample and CRD folders are, found from `start` upwards
  // (../shared/crds beside the checkout, else test/fixtures/crds). Throws mka::Error when absent.
  static std::filesystem::path findCrdDirectory(const std::filesystem::path& start);
  static std::filesystem::path findSamplesDirectory(const std::filesystem::path& start);

 private:
  void startIntegration(const std::string& worker);

  Options options_;
  const Clock* clock_;
  std::unique_ptr<sandbox::Sandbox> sandbox_;
  std::map<std::string, std::unique_ptr<kube::Client>> clients_;
  std::map<std::string, std::unique_ptr<standin::KueueStandIn>> kueues_;
  std::map<std::string, std::unique_ptr<standin::JobControllerStandIn>> frameworks_;         // "<cluster>/<Kind>"
  std::map<std::string, std::unique_ptr<integration::IntegrationController>> integrations_;  // the workers' adapters
  std::set<std::string> started_;                                                            // stand-ins running
};

}  // namespace mka::demo
