#pragma once
// The `demo` subcommand (SPEC §6): the whole MultiKueue flow in one process, no cluster needed.
// A sandbox manager and workers with Kueue stand-ins (demo::Environment), the adapter itself
// (`serve`, in-process: webhook registered in the manager as a MutatingWebhookConfiguration and
// a ValidatingWebhookConfiguration, dispatch loop under leader election), then the sample jobs
// of manifests/samples/jobs submitted without a managedBy marker. It prints each step as it
// happens (defaulted, Workload created, dispatched, admitted on worker N, status synced,
// finished, remote copies removed) and a summary; --keep leaves everything running for kubectl.
// --single-cluster: one cluster, no MultiKueue (README "Roles": single cluster): the adapter
// with dispatch off queues the Argo Workflow and in-house TrainingRun of
// manifests/samples/single-cluster through Kueue (suspended, Workload created, admitted on a
// flavor, resumed with its node labels, finished).
// --ocm: the workers chosen by an OCM Placement (the OCM scheduler played by a stand-in), the
// adapter's built-in placement controller writing the MultiKueueConfig and MultiKueueClusters;
// two jobs run, a worker is relabelled, the decision and the config follow, two more jobs run
// on the new set.
//
// Threads: demoCommand() runs on the main thread and polls the clusters to report progress;
// everything else runs on the threads of the pieces it starts.

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace mka::demo {

struct DemoOptions {
  std::filesystem::path dir;  // kubeconfigs, certificates, the adapter's config; "" = a temp dir
  bool keep = false;          // keep running after the summary, until SIGTERM/SIGINT
  std::vector<std::string> workers{"worker1", "worker2"};
  std::chrono::milliseconds runTime{std::chrono::seconds{3}};  // how long each job "runs" on its worker
  std::chrono::seconds timeout{std::chrono::seconds{120}};     // give up waiting for the jobs after this
  std::filesystem::path samples;  // manifests/samples; "" = found from the current directory
  std::filesystem::path crds;     // CRD directory; "" = found from the current directory
  bool singleCluster = false;     // one cluster, no MultiKueue; `workers` unused
  // An OCM fleet (README "Open Cluster Management fleets"): `workers` (three) as managed
  // clusters, a Placement choosing the labelled ones, the built-in placement controller; jobs
  // before and after a worker is relabelled.
  bool ocm = false;
  // multiKueue.dispatcherName as a short name: all-at-once (the default), incremental or
  // quota-aware. With quota-aware, worker i's ClusterQueue holds i-1 PipelineRuns at once (worker1
  // none), so the jobs are placed by room and the check's message says why a worker was skipped.
  std::string dispatcher = "all-at-once";
};

// Returns the exit code: 0 when every sample job finished on exactly one worker with its
// status copied back and no remote copy left (single cluster: ran once and its Workload is
// Finished and released); 1 otherwise (the summary says which and why).
int demoCommand(const DemoOptions& options, std::ostream& out);

}  // namespace mka::demo
