#pragma once
// The end-to-end fixture of the dispatch loop, as deployed: an Environment (sandbox manager +
// workers, Kueue stand-ins playing Kueue's core only, Tekton and Argo controller stand-ins, our
// integration on each worker, the sample Kueue objects) on a FakeClock, and the adapter's
// Dispatcher and integration against the manager. Tests create jobs on the manager and await
// what users would see.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/workload_status.h"
#include "mka/common/clock.h"
#include "mka/demo/environment.h"
#include "mka/integration/controller.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/dispatcher.h"
#include "support/eventually.h"

namespace mka::e2e {

// A job kind under test: the sample manifest it is built from and how its marker is set.
struct JobKind {
  std::string name;  // test-name suffix
  api::GroupVersionKind gvk;
  std::string sampleFile;  // under manifests/samples/jobs
};

inline const JobKind kPipelineRun{"PipelineRun", {"tekton.dev", "v1", "PipelineRun"}, "pipelinerun-hello.yaml"};
inline const JobKind kWorkflow{"Workflow", {"argoproj.io", "v1alpha1", "Workflow"}, "workflow-hello.yaml"};

class DispatchFixture {
 public:
  struct Setup {
    std::vector<std::string> workers{"worker1", "worker2"};
    bool startWorkerKueues = true;
    std::vector<std::string> managers{"manager"};           // the adapter under test serves the first
    std::function<void(config::Configuration&)> configure;  // adapter configuration tweaks
    // How long, on the fake clock, an evicted Workload waits before every stand-in reserves it
    // again (0: at once, which can hide a worker's eviction from the adapter).
    std::chrono::nanoseconds readmitDelay{0};
    // Per worker: PipelineRuns its ClusterQueue holds at once (demo::Environment::workerJobQuota).
    std::map<std::string, std::int64_t> workerJobQuota;
    multikueue::DispatchObserver* observer = nullptr;  // given to the adapter under test
  };

  void setUpEnvironment(Setup setup);
  void tearDownEnvironment();

  // The adapter (a fresh Dispatcher each call: a restart is stop + start).
  void startAdapter();
  void stopAdapter();

  // A job of `kind` named `name` from the sample manifest, in namespace default, queued on
  // user-queue; `marker` false leaves the managedBy marker out; `mutate` edits it first. It
  // starts suspended, as /mutate leaves it.
  nlohmann::json createJob(const JobKind& kind, const std::string& name, bool marker = true,
                           const std::function<void(nlohmann::json&)>& mutate = {},
                           const std::string& manager = "manager");
  // Another adapter, for another manager of the environment (own origin, same workers); that
  // manager's integration runs too (until tearDownEnvironment) when `config` integrates kinds.
  std::unique_ptr<multikueue::Dispatcher> startAdapterFor(const std::string& manager, config::Configuration config);
  // The name of the manager Workload our integration makes for that job ("" until the job exists).
  std::string workloadNameOf(const JobKind& kind, const std::string& jobName, const std::string& manager = "manager");
  std::string awaitWorkload(const JobKind& kind, const std::string& jobName, const std::string& manager = "manager");

  std::optional<nlohmann::json> get(const std::string& cluster, const api::GroupVersionKind& gvk,
                                    const std::string& name, const std::string& ns = "default");
  std::optional<nlohmann::json> workload(const std::string& cluster, const std::string& name) {
    return get(cluster, api::kWorkloadGvk, name);
  }
  // The state entry of the adapter's check on the manager Workload (null json when absent).
  nlohmann::json checkState(const std::string& workloadName);
  bool checkIs(const std::string& workloadName, const std::string& state, const std::string& message = "");

  // Advances the fake clock and lets every piece look at it.
  void advance(std::chrono::nanoseconds by);
  // A worker that is reachable again reconnects: each round moves the fake clock past the
  // reconnect backoff window, then waits in real time (without moving the clock, so a slow
  // connection attempt is not failed by its establishment timeout) for the connection.
  bool awaitReconnect(const std::string& worker);
  // Everything quiet: stand-ins, every reachable worker connected, the adapter's controllers idle.
  bool settled();

  // Where a job runs: creates it on the manager, awaits its Workload's check Ready and its copy
  // started on the worker that admitted it. Returns {Workload name, worker}; empty after a
  // failed assertion. `mutate` edits the job before it is created.
  std::pair<std::string, std::string> runOnAWorker(const JobKind& kind, const std::string& name,
                                                   const std::function<void(nlohmann::json&)>& mutate = {});
  // The phase of Workflow `job`'s status node named `node` on `cluster` ("a[0].extract"; a
  // container entrypoint's one pod node has the Workflow's name), "" when there is none. On the
  // manager it is the worker's status, copied back.
  std::string workflowNodePhase(const std::string& cluster, const std::string& job, const std::string& node);
  // Times the worker's controller stand-in of `kind` started job `name` (namespace default).
  int startsOn(const std::string& cluster, const JobKind& kind, const std::string& name);
  // Jobs the workers' Tekton and Argo controller stand-ins run right now.
  std::size_t runningOnWorkers();
  // Events about `involvedName` in namespace default of `cluster`.
  std::vector<nlohmann::json> events(const std::string& involvedName, const std::string& cluster = "manager");

  FakeClock clock_;
  std::unique_ptr<demo::Environment> env_;
  config::Configuration config_;
  std::unique_ptr<multikueue::Dispatcher> dispatcher_;
  // Each manager's adapter runs its integration beside its Dispatcher.
  std::map<std::string, std::unique_ptr<integration::IntegrationController>> integrations_;
  std::string checkName_ = "multikueue-adapter";
  multikueue::DispatchObserver* observer_ = nullptr;
};

}  // namespace mka::e2e

namespace mka::e2e {
// gtest prints a parameter by its name.
inline void PrintTo(const JobKind& kind, std::ostream* os) { *os << kind.name; }
}  // namespace mka::e2e
