#pragma once
// A framework controller stand-in: what the controller of one job kind does with a job, no more
// (SPEC §6). It never creates Workloads or reads Kueue's objects: queueing a job is a job
// integration's work. Three kinds of controller (Style):
// - InHouse, a generic Job-like CRD (KUEUE-JOBFRAMEWORK.md §8.3): creates no pods while
//   spec.suspend is true; when it turns false it starts the replicas (status.activeReplicas =
//   spec.replicas, default 1); when it turns true again it deletes them and the run starts over
//   on the next resume; a run left alone for Options::runTime ends with condition Succeeded.
//   Condition Running says whether its replicas run (True) or not (False: PodsPending, or
//   Suspended once they are deleted).
// - Tekton, the PipelineRun controller: ignores runs whose spec.managedBy is set to anything but
//   tekton.dev/pipeline (a MultiKueue manager's copy); a run whose spec.status is
//   PipelineRunPending waits; otherwise it runs (startTime, Succeeded Unknown/Running) and ends
//   with Succeeded True or False; a running run whose spec.status turns StoppedRunFinally or
//   Cancelled ends at once, failed (its finally tasks left out). With Options::taskRuns, as a
//   run starts, it creates what Tekton's PipelineRun and TaskRun reconcilers create for each task of
//   spec.pipelineSpec.tasks, all at once: a TaskRun "<run>-<task>" controlled by the run, with
//   the run's labels and annotations (less kubectl's last-applied one) and Tekton's own, the
//   task's taskSpec or taskRef, and spec.taskRunTemplate's podTemplate and serviceAccountName;
//   and a Pod "<taskrun>-pod" controlled by the TaskRun, with its labels and annotations, a
//   container per inline step, and the podTemplate's nodeSelector and tolerations. Left out:
//   finally tasks, spec.taskRunSpecs (whose podTemplates Tekton merges over the run's), the
//   tasks of a referenced Pipeline (a run by pipelineRef gets none), the tekton.dev/pipeline
//   label, names Tekton hashes when longer than 63, and any status of TaskRuns and Pods: they
//   are left as created. The cluster must then serve TaskRuns (test/fixtures/crds/tekton/, which
//   the clusters of the demo and the dispatch tests do not load) and Pods.
//   Tekton's webhook is no part of it: an update it would refuse (any change to a run's spec
//   but spec.status) is stored here.
// - Argo, the workflow controller without an instanceID: ignores Workflows labelled
//   workflows.argoproj.io/controller-instanceid; on its first pass sets phase Running and
//   startedAt even while spec.suspend is true (as Argo does: a queued Workflow reads Running with
//   no nodes). Not suspended, it runs the entrypoint template's step groups one after another,
//   each step a pod running for Options::runTime (any other entrypoint is one pod), recorded in
//   status.nodes as Argo records them: a root node of type Steps (id: the Workflow's name), a
//   StepGroup node per group and a node of type Pod per step (ids: the name and the FNV-1a hash
//   of the node's name); a container entrypoint's one node is the root, of type Pod. Suspending
//   stops no running pod: it runs until its step ends and its node goes Succeeded; no new step
//   starts and the Workflow stays Running until it is resumed, when the remaining steps run.
//   Every step done, the Workflow ends with phase Succeeded or Failed. Pods nothing can schedule
//   (Options::podsPending) have Pod nodes in phase Pending until they can be. Its status goes through
//   the main resource (no subresource). As Argo's TTL controller, it deletes a finished
//   Workflow spec.ttlStrategy seconds after its status.finishedAt.
// Writes carry the resourceVersion read; after a conflict the job's newer version, which the
// watch brings, is looked at again.
//
// Like the real controllers it is driven by a watch of its kind: each change is looked at once,
// and a running job again when its run time is up.
//
// Threads: owns one thread that follows the watch and, when idle, looks at the clock every
// Options::pollInterval (runs end by the Clock, which may be a FakeClock); public methods may be
// called from any thread.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"

namespace mka::sandbox {
class ClusterApi;
}  // namespace mka::sandbox

namespace mka::standin {

class JobControllerStandIn {
 public:
  enum class Style { InHouse, Tekton, Argo };
  struct Options {
    Style style = Style::InHouse;
    // The kind's resource; empty: ml.example.com/v1 trainingruns, tekton.dev/v1 pipelineruns or
    // argoproj.io/v1alpha1 workflows by style.
    std::string group, version, plural;
    std::chrono::nanoseconds runTime{std::chrono::seconds{10}};
    // Whether a run fails; called with the job on the stand-in's thread. Null: every run succeeds.
    std::function<bool(const nlohmann::json& job)> runFails;
    // How long the idle thread waits for the watch before it looks at the clock again.
    std::chrono::milliseconds pollInterval{5};
    // While it returns true for a job, the pods its controller creates stay Pending: no node can
    // run them. That is the scheduler's and the kubelet's doing, not the job controller's; the
    // controller only sees its pods not start. Pending pods do not count as a start and their
    // run time does not pass; it is asked again on every round (the stand-in's thread), and once
    // it returns false they run. InHouse: the replicas are created (condition Running False,
    // reason PodsPending) and a suspension deletes them. Argo: a step group's Pod nodes read
    // Pending, and a suspension deletes no pod, so they run once they can be scheduled, suspended
    // or not. Tekton: not modelled. Null: pods always run.
    std::function<bool(const nlohmann::json& job)> podsPending;
    // Tekton: a starting run gets its TaskRuns and their Pods (see above).
    bool taskRuns = false;
  };

  JobControllerStandIn(sandbox::ClusterApi& api, const Clock& clock, Options options);
  ~JobControllerStandIn();
  JobControllerStandIn(const JobControllerStandIn&) = delete;
  JobControllerStandIn& operator=(const JobControllerStandIn&) = delete;

  void start();
  void stop();

  // Times job "ns/name" started running (each resume of a suspended job counts; a Workflow
  // counts when its first step starts).
  int starts(const std::string& key) const;
  // Jobs running right now (a Workflow: with a pod running).
  std::size_t running() const;
  // Every job started so far, by key, with its start count.
  std::map<std::string, int> allStarts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::standin
