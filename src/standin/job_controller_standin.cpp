#include "mka/standin/job_controller_standin.h"

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mka/common/log.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"

namespace mka::standin {
namespace {

using nlohmann::json;
using Style = JobControllerStandIn::Style;

const json::json_pointer kArgoInstanceId("/metadata/labels/workflows.argoproj.io~1controller-instanceid");

std::string keyOf(const json& job) {
  return job["metadata"].value("namespace", "") + "/" + job["metadata"].value("name", "");
}

std::string stringAt(const json& object, const json::json_pointer& pointer) {
  return object.contains(pointer) && object[pointer].is_string() ? object[pointer].get<std::string>() : "";
}

const json* succeededCondition(const json& job) {
  const json::json_pointer conditions("/status/conditions");
  if (!job.contains(conditions) || !job[conditions].is_array()) return nullptr;
  for (const auto& c : job[conditions])
    if (c.value("type", "") == "Succeeded") return &c;
  return nullptr;
}

bool finishedRun(Style style, const json& job) {
  if (style == Style::Argo) {
    const auto phase = stringAt(job, json::json_pointer("/status/phase"));
    return phase == "Succeeded" || phase == "Failed" || phase == "Error";
  }
  const json* c = succeededCondition(job);
  return c != nullptr && c->value("status", "") != "Unknown";
}

// Whether the kind's controller acts on `job` at all.
bool ours(Style style, const json& job) {
  if (style == Style::Tekton) {
    const auto managedBy = stringAt(job, json::json_pointer("/spec/managedBy"));
    return managedBy.empty() || managedBy == "tekton.dev/pipeline";
  }
  if (style == Style::Argo) return stringAt(job, kArgoInstanceId).empty();
  return true;
}

// What the job's spec asks of its controller now.
enum class Wanted { Run, Wait, Stop };
Wanted wanted(Style style, const json& job) {
  const json spec = job.value("spec", json::object());
  if (style == Style::Tekton) {
    const std::string status = spec.value("status", "");
    if (status.empty()) return Wanted::Run;
    return status == "PipelineRunPending" ? Wanted::Wait : Wanted::Stop;
  }
  return spec.value("suspend", false) ? Wanted::Wait : Wanted::Run;
}

// Argo's node id (Workflow.NodeID): the Workflow's name for its root node, else the name and
// the FNV-1a hash of the node's name.
std::string argoNodeId(const std::string& workflow, const std::string& nodeName) {
  if (nodeName == workflow) return workflow;
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : nodeName) {
    hash ^= c;
    hash *= 16777619u;
  }
  return workflow + "-" + std::to_string(hash);
}

// What a Workflow runs, as Argo runs it: the entrypoint template's step groups one after
// another, each step of a group a pod; any other entrypoint (a container) is one pod, the root
// node itself.
struct ArgoPlan {
  bool steps = false;
  std::vector<std::vector<std::string>> groups;  // step names per group
};

ArgoPlan argoPlan(const json& workflow) {
  const json spec = workflow.value("spec", json::object());
  const std::string entrypoint = spec.value("entrypoint", "");
  for (const auto& t : spec.value("templates", json::array())) {
    if (!t.is_object() || t.value("name", "") != entrypoint || !t.contains("steps")) continue;
    ArgoPlan plan{true, {}};
    for (const auto& group : t["steps"]) {
      std::vector<std::string> names;
      for (const auto& step : group) names.push_back(step.value("name", ""));
      if (!names.empty()) plan.groups.push_back(std::move(names));
    }
    if (!plan.groups.empty()) return plan;
  }
  return {false, {{""}}};
}

// The node names of step group `g`'s pods: "<workflow>[g].<step>", or the root's for a
// container entrypoint.
std::vector<std::string> argoPodNames(const std::string& workflow, const ArgoPlan& plan, std::size_t g) {
  if (!plan.steps) return {workflow};
  std::vector<std::string> names;
  for (const auto& step : plan.groups[g]) names.push_back(workflow + "[" + std::to_string(g) + "]." + step);
  return names;
}

// status.conditions holding one condition of `type`.
json onlyCondition(const std::string& type, const std::string& status, const std::string& reason,
                   const std::string& message, const std::string& stamp) {
  return json::array(
      {{{"type", type}, {"status", status}, {"reason", reason}, {"message", message}, {"lastTransitionTime", stamp}}});
}

json tektonCondition(const std::string& status, const std::string& reason, const std::string& message,
                     const std::string& stamp) {
  return onlyCondition("Succeeded", status, reason, message, stamp);
}

// An in-house run's Running condition: True while its replicas run, False while they are
// pending or deleted.
json inHouseRunning(const std::string& status, const std::string& reason, const std::string& message,
                    const std::string& stamp) {
  return onlyCondition("Running", status, reason, message, stamp);
}

// ---- Tekton's children: a TaskRun per pipeline task, a Pod per TaskRun ---------------------

const sandbox::ResourceRef kTaskRuns{"tekton.dev", "v1", "taskruns", "", "", ""};
const sandbox::ResourceRef kPods{"", "v1", "pods", "", "", ""};

// metav1.NewControllerRef: the owner as the child's controller, blocking its deletion.
json controllerRef(const json& owner) {
  return {{"apiVersion", owner.value("apiVersion", "")},
          {"kind", owner.value("kind", "")},
          {"name", owner["metadata"].value("name", "")},
          {"uid", owner["metadata"].value("uid", "")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

json objectAt(const json& object, const char* pointer) {
  const json::json_pointer at(pointer);
  return object.contains(at) && object[at].is_object() ? object[at] : json::object();
}

// The TaskRun Tekton's PipelineRun reconciler creates for pipeline task `task` of `run`
// (createTaskRun): named "<run>-<task>", owned by the run, with the run's labels and annotations
// (the kubectl last-applied one left out) and its own, and the run's taskRunTemplate.
json taskRunFor(const json& run, const json& task) {
  const std::string runName = run["metadata"].value("name", "");
  const std::string taskName = task.value("name", "");
  json labels = objectAt(run, "/metadata/labels");
  labels["tekton.dev/pipelineRun"] = runName;
  labels["tekton.dev/pipelineRunUID"] = run["metadata"].value("uid", "");
  labels["tekton.dev/pipelineTask"] = taskName;
  labels["tekton.dev/memberOf"] = "tasks";
  json annotations = objectAt(run, "/metadata/annotations");
  annotations.erase("kubectl.kubernetes.io/last-applied-configuration");
  json spec = json::object();
  for (const char* field : {"taskSpec", "taskRef", "params"})
    if (task.contains(field)) spec[field] = task[field];
  const json runTemplate = objectAt(run, "/spec/taskRunTemplate");
  if (runTemplate.contains("podTemplate")) spec["podTemplate"] = runTemplate["podTemplate"];
  if (runTemplate.contains("serviceAccountName")) spec["serviceAccountName"] = runTemplate["serviceAccountName"];
  return {{"apiVersion", "tekton.dev/v1"},
          {"kind", "TaskRun"},
          {"metadata",
           {{"name", runName + "-" + taskName},
            {"namespace", run["metadata"].value("namespace", "")},
            {"ownerReferences", json::array({controllerRef(run)})},
            {"labels", labels},
            {"annotations", annotations}}},
          {"spec", spec}};
}

// The Pod Tekton's TaskRun reconciler creates for `taskRun` (pod.Build): named "<taskrun>-pod",
// owned by it, with its labels and annotations, a container per inline step, and its
// podTemplate's nodeSelector and tolerations.
json podFor(const json& taskRun) {
  json labels = objectAt(taskRun, "/metadata/labels");
  labels["tekton.dev/taskRun"] = taskRun["metadata"].value("name", "");
  labels["tekton.dev/taskRunUID"] = taskRun["metadata"].value("uid", "");
  labels["app.kubernetes.io/managed-by"] = "tekton-pipelines";
  json containers = json::array();
  const json::json_pointer steps("/spec/taskSpec/steps");
  if (taskRun.contains(steps) && taskRun[steps].is_array())
    for (const auto& step : taskRun[steps])
      containers.push_back({{"name", "step-" + step.value("name", "unnamed")}, {"image", step.value("image", "")}});
  json spec = {{"restartPolicy", "Never"}, {"containers", containers}};
  const json podTemplate = objectAt(taskRun, "/spec/podTemplate");
  for (const char* field : {"nodeSelector", "tolerations"})
    if (podTemplate.contains(field)) spec[field] = podTemplate[field];
  if (taskRun["spec"].contains("serviceAccountName"))
    spec["serviceAccountName"] = taskRun["spec"]["serviceAccountName"];
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", taskRun["metadata"].value("name", "") + "-pod"},
            {"namespace", taskRun["metadata"].value("namespace", "")},
            {"ownerReferences", json::array({controllerRef(taskRun)})},
            {"labels", labels},
            {"annotations", objectAt(taskRun, "/metadata/annotations")}}},
          {"spec", spec}};
}

}  // namespace

struct JobControllerStandIn::Impl {
  Impl(sandbox::ClusterApi& api, const Clock& clock, Options o) : api(api), clock(clock), options(std::move(o)) {
    if (options.plural.empty()) {
      switch (options.style) {
        case Style::InHouse:
          options.group = "ml.example.com", options.version = "v1", options.plural = "trainingruns";
          break;
        case Style::Tekton:
          options.group = "tekton.dev", options.version = "v1", options.plural = "pipelineruns";
          break;
        case Style::Argo:
          options.group = "argoproj.io", options.version = "v1alpha1", options.plural = "workflows";
          break;
      }
    }
  }

  sandbox::ClusterApi& api;
  const Clock& clock;
  Options options;

  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  // "<key>/<uid>" -> when its pods started: a job deleted and created again under the same name
  // is a new run.
  std::map<std::string, Clock::TimePoint> runningSince;
  std::map<std::string, int> starts;
  std::thread thread;

  sandbox::ResourceRef ref(const std::string& ns = "", const std::string& name = "",
                           const std::string& sub = "") const {
    return {options.group, options.version, options.plural, ns, name, sub};
  }

  // Argo's CRD has no status subresource: its controller writes the whole object. False when
  // the job changed meanwhile or is gone: the next pass reads it again.
  bool writeStatus(const json& job, json status) {
    json next = job;
    next["status"] = std::move(status);
    const auto ns = job["metadata"].value("namespace", "");
    const auto name = job["metadata"].value("name", "");
    try {
      api.update(ref(ns, name, options.style == Style::Argo ? "" : "status"), next);
      return true;
    } catch (const sandbox::ApiError& e) {
      if (e.code() != 409 && e.code() != 404) throw;
      return false;
    }
  }

  json runningStatus(const json& job, const std::string& stamp) const {
    json status = job.value("status", json::object());
    switch (options.style) {
      case Style::InHouse: {
        const auto replicas = job["spec"].value("replicas", json(1));
        status["activeReplicas"] = replicas.is_number_integer() ? replicas.get<int>() : 1;
        status["conditions"] = inHouseRunning("True", "Running", "the replicas are running", stamp);
        break;
      }
      case Style::Tekton:
        status["startTime"] = stamp;
        status["conditions"] = tektonCondition(
            "Unknown", "Running", "Tasks Completed: 0 (Failed: 0, Cancelled 0), Incomplete: 1, Skipped: 0", stamp);
        break;
      case Style::Argo:  // argoStep
        break;
    }
    return status;
  }

  json finalStatus(const json& job, bool success, const std::string& stamp, const std::string& stoppedAs = "") const {
    json status = job.value("status", json::object());
    switch (options.style) {
      case Style::InHouse:
        status["activeReplicas"] = 0;
        status["conditions"] =
            tektonCondition(success ? "True" : "False", success ? "Completed" : "Failed",
                            success ? "the training run completed" : "the training run failed", stamp);
        break;
      case Style::Tekton:
        if (!status.contains("startTime")) status["startTime"] = stamp;
        status["completionTime"] = stamp;
        status["conditions"] = tektonCondition(
            success ? "True" : "False",
            !stoppedAs.empty() ? stoppedAs
            : success          ? "Succeeded"
                               : "Failed",
            !stoppedAs.empty() ? "PipelineRun \"" + job["metadata"].value("name", "") + "\" was cancelled"
            : success          ? "Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0"
                               : "Tasks Completed: 1 (Failed: 1, Cancelled 0), Skipped: 0",
            stamp);
        break;
      case Style::Argo:  // argoStep
        break;
    }
    return status;
  }

  // `object` created in `resource`; one there already (an earlier pass) is read back instead.
  json createOrGet(sandbox::ResourceRef resource, const json& object) {
    resource.namespace_ = object["metadata"].value("namespace", "");
    try {
      return *api.create(resource, object);
    } catch (const sandbox::ApiError& e) {
      if (e.code() != 409) throw;
    }
    resource.name = object["metadata"].value("name", "");
    return api.get(resource);
  }

  // A starting PipelineRun's TaskRuns and their Pods: one per task of spec.pipelineSpec.
  void startTasks(const json& run) {
    const json::json_pointer tasks("/spec/pipelineSpec/tasks");
    if (!run.contains(tasks) || !run[tasks].is_array()) return;
    for (const auto& task : run[tasks]) {
      const json taskRun = createOrGet(kTaskRuns, taskRunFor(run, task));
      createOrGet(kPods, podFor(taskRun));
    }
  }

  // ---- the thread's loop ----------------------------------------------------------------------

  // The thread's view of the kind's jobs, as a real controller's informer keeps it: filled from
  // one watch, so a pass costs what changed, not every job there is.
  std::unique_ptr<sandbox::ObjectStore::Watch> watch;  // thread only
  std::map<std::string, sandbox::StoredObject> jobs;   // thread only; "ns/name" -> the job
  std::set<std::string> dirty;                         // thread only; keys to look at again
  // Jobs whose pods exist but are Pending (Options::podsPending): looked at again on every
  // round, since what lets them be scheduled is no change to the job.
  std::set<std::string> pendingPods;  // thread only
  // When each running run is due to end, so only those that are due are looked at.
  std::set<std::pair<Clock::TimePoint, std::string>> dueAt;  // thread only; (time, "ns/name")

  void run() {
    std::chrono::milliseconds wait{0};
    while (true) {
      {
        std::lock_guard lock(mutex);
        if (stopping) return;
      }
      bool events = false;
      try {
        events = drainWatch(wait);
      } catch (const std::exception& e) {
        // The CRD may not exist yet; look again after a poll interval.
        log::debug("job controller stand-in watch failed", {{"kind", options.plural}, {"error", e.what()}});
        std::unique_lock lock(mutex);
        if (!stopping) wake.wait_for(lock, options.pollInterval);
      }
      enqueueDueRuns();
      for (const auto& key : pendingPods)
        if (auto it = jobs.find(key); it != jobs.end() && !options.podsPending(*it->second)) dirty.insert(key);
      const bool worked = !dirty.empty();
      processDirty();
      // After work, look again at once: what was written is already waiting in the watch.
      wait = events || worked ? std::chrono::milliseconds{0} : options.pollInterval;
    }
  }

  // Opens the watch when it is missing (a relist: "0" starts with an ADDED event for every job)
  // and applies what arrived to `jobs`, waiting up to `wait` for the first event. Returns
  // whether anything arrived.
  bool drainWatch(std::chrono::milliseconds wait) {
    bool relisting = false;
    if (!watch || watch->closed()) {
      watch.reset();
      jobs.clear();
      watch = api.watch(ref(), {}, "0");
      relisting = true;
      wait = std::chrono::milliseconds{0};
    }
    bool any = false;
    while (auto event = watch->next(wait)) {
      wait = std::chrono::milliseconds{0};
      any = true;
      if (event->type == sandbox::EventType::Error) {
        watch.reset();  // 410: reopen (relist) next round
        break;
      }
      if (event->type == sandbox::EventType::Bookmark || !event->object) continue;
      const std::string key = keyOf(*event->object);
      if (event->type == sandbox::EventType::Deleted) {
        jobs.erase(key);
        forgetRuns(key, "");  // a deleted job's pods are gone
      } else {
        jobs[key] = event->object;
      }
      dirty.insert(key);
    }
    if (relisting) {
      // Jobs deleted while the watch was closed send no event: their runs end here.
      std::lock_guard lock(mutex);
      std::erase_if(runningSince,
                    [&](const auto& entry) { return jobs.count(entry.first.substr(0, entry.first.rfind('/'))) == 0; });
    }
    return any;
  }

  // Drops the runs of job `key` other than the one of uid `keep` (all of them when empty): a job
  // deleted, or deleted and created again under the same name, is a new run.
  void forgetRuns(const std::string& key, const std::string& keep) {
    const std::string prefix = key + "/";
    std::lock_guard lock(mutex);
    for (auto it = runningSince.lower_bound(prefix); it != runningSince.end() && it->first.starts_with(prefix);) {
      if (!keep.empty() && it->first == prefix + keep) {
        ++it;
      } else {
        it = runningSince.erase(it);
      }
    }
  }

  void enqueueDueRuns() {
    const auto now = clock.now();
    while (!dueAt.empty() && dueAt.begin()->first <= now) {
      dirty.insert(dueAt.begin()->second);
      dueAt.erase(dueAt.begin());
    }
  }

  void processDirty() {
    auto keys = std::move(dirty);
    dirty.clear();
    for (const auto& key : keys) {
      const auto it = jobs.find(key);
      if (it == jobs.end()) continue;
      const sandbox::StoredObject job = it->second;
      try {
        step(*job);
      } catch (const std::exception& e) {
        log::debug("job controller stand-in write failed",
                   {{"kind", options.plural}, {"job", key}, {"error", e.what()}});
        dirty.insert(key);  // try again next round
      }
    }
  }

  // Argo's TTL controller: a finished Workflow with spec.ttlStrategy is deleted that many
  // seconds after status.finishedAt (secondsAfterSuccess or secondsAfterFailure for its outcome
  // before secondsAfterCompletion).
  void expireFinished(const json& job, const std::string& key) {
    const auto ttl = job.value("spec", json::object()).value("ttlStrategy", json::object());
    if (!ttl.is_object() || ttl.empty()) return;
    const bool succeeded = stringAt(job, json::json_pointer("/status/phase")) == "Succeeded";
    json seconds = ttl.value(succeeded ? "secondsAfterSuccess" : "secondsAfterFailure", json());
    if (!seconds.is_number_integer()) seconds = ttl.value("secondsAfterCompletion", json());
    const auto finishedAt = parseRfc3339(stringAt(job, json::json_pointer("/status/finishedAt")));
    if (!seconds.is_number_integer() || !finishedAt) return;
    const auto deleteAt = *finishedAt + std::chrono::seconds{seconds.get<std::int64_t>()};
    if (clock.now() < deleteAt) {
      dueAt.insert({deleteAt, key});
      return;
    }
    try {
      api.remove(ref(job["metadata"].value("namespace", ""), job["metadata"].value("name", "")));
    } catch (const sandbox::ApiError& e) {
      if (e.code() != 404) throw;
    }
  }

  // Argo's pass over a Workflow it has started (workflow/controller/operator.go operate): pods
  // are reconciled first (a pod whose step has ended makes its node Succeeded, suspended or
  // not); a suspended Workflow then returns, starting nothing and staying Running; otherwise the
  // next step group starts, or, every step done, the Workflow ends.
  void argoStep(const json& job, const std::string& key, const std::string& run, bool suspended) {
    const std::string name = job["metadata"].value("name", "");
    // One instant for the pass: a pod's run is timed from the startedAt it is written with, even
    // if the clock moves before the write returns.
    const auto now = clock.now();
    const std::string stamp = toRfc3339(now);
    const auto runTime = std::chrono::duration_cast<Clock::TimePoint::duration>(options.runTime);
    const ArgoPlan plan = argoPlan(job);
    json status = job.value("status", json::object());
    if (!status.contains("nodes") || !status["nodes"].is_object()) status["nodes"] = json::object();
    json& nodes = status["nodes"];
    const auto phaseOf = [&](const std::string& nodeName) {
      const auto it = nodes.find(argoNodeId(name, nodeName));
      return it == nodes.end() ? std::string() : it->value("phase", "");
    };
    const auto setPhase = [&](const std::string& nodeName, const std::string& phase) {
      json& node = nodes[argoNodeId(name, nodeName)];
      node["phase"] = phase;
      if (phase == "Succeeded" || phase == "Failed") node["finishedAt"] = stamp;
    };
    const auto groupPhase = [&](std::size_t g) { return phaseOf(argoPodNames(name, plan, g).front()); };
    std::size_t done = 0;  // step groups whose pods succeeded
    while (done < plan.groups.size() && groupPhase(done) == "Succeeded") ++done;
    bool failed = done < plan.groups.size() && groupPhase(done) == "Failed";
    bool changed = false;

    if (done < plan.groups.size() && groupPhase(done) == "Pending") {  // suspended or not, as the scheduler allows
      if (options.podsPending && options.podsPending(job)) {
        pendingPods.insert(key);
        return;
      }
      pendingPods.erase(key);
      for (const auto& pod : argoPodNames(name, plan, done)) {
        json& node = nodes[argoNodeId(name, pod)];
        node["phase"] = "Running";
        node["startedAt"] = stamp;
      }
      if (writeStatus(job, status)) podsStarted(key, run, done == 0, now);
      return;
    }
    if (done < plan.groups.size() && groupPhase(done) == "Running") {
      Clock::TimePoint since;
      {
        std::lock_guard lock(mutex);
        since = runningSince.emplace(run, clock.now()).first->second;  // now, after a restart
      }
      if (clock.now() < since + runTime) {  // suspended or not, the pods run on
        dueAt.insert({since + runTime, key});
        return;
      }
      failed = done + 1 == plan.groups.size() && options.runFails && options.runFails(job);
      const std::string phase = failed ? "Failed" : "Succeeded";
      for (const auto& pod : argoPodNames(name, plan, done)) setPhase(pod, phase);
      if (plan.steps) setPhase(name + "[" + std::to_string(done) + "]", phase);
      if (!failed) ++done;
      changed = true;
    }
    // The pods that ran are written with what follows in the same pass, as Argo does.
    const auto written = [&](bool ok) {
      if (!ok) return;
      std::lock_guard lock(mutex);
      if (changed) runningSince.erase(run);
    };
    if (suspended) {  // nothing new starts; the Workflow stays Running
      if (changed) written(writeStatus(job, status));
      return;
    }
    if (failed || done == plan.groups.size()) {
      status["phase"] = failed ? "Failed" : "Succeeded";
      status["finishedAt"] = stamp;
      if (plan.steps) setPhase(name, status["phase"].get<std::string>());
      if (failed) status["message"] = "the workflow failed";
      written(writeStatus(job, status));
      return;
    }
    // The next step group's pods are created; they run unless nothing can schedule them.
    const bool pending = options.podsPending && options.podsPending(job);
    json children = json::array();
    for (const auto& pod : argoPodNames(name, plan, done)) {
      const std::string id = argoNodeId(name, pod);
      nodes[id] = {{"id", id},
                   {"name", pod},
                   {"displayName", plan.steps ? pod.substr(pod.rfind('.') + 1) : name},
                   {"type", "Pod"},
                   {"phase", pending ? "Pending" : "Running"}};
      if (!pending) nodes[id]["startedAt"] = stamp;
      if (!plan.steps) nodes[id]["templateName"] = job["spec"].value("entrypoint", "");
      children.push_back(id);
    }
    if (plan.steps) {
      const std::string groupName = name + "[" + std::to_string(done) + "]";
      const std::string groupId = argoNodeId(name, groupName);
      nodes[groupId] = {{"id", groupId},       {"name", groupName},  {"displayName", "[" + std::to_string(done) + "]"},
                        {"type", "StepGroup"}, {"phase", "Running"}, {"startedAt", stamp},
                        {"children", children}};
      json& root = nodes[name];
      if (!root.contains("id"))
        root = {{"id", name},
                {"name", name},
                {"displayName", name},
                {"type", "Steps"},
                {"phase", "Running"},
                {"startedAt", stamp},
                {"templateName", job["spec"].value("entrypoint", "")},
                {"children", json::array()}};
      root["children"].push_back(groupId);
    }
    if (!writeStatus(job, status)) return;
    if (pending) {
      pendingPods.insert(key);
      return;
    }
    podsStarted(key, run, done == 0, now);
  }

  // A step group's pods of Workflow `key` started running at `at`; the first group's is its start.
  void podsStarted(const std::string& key, const std::string& run, bool first, Clock::TimePoint at) {
    {
      std::lock_guard lock(mutex);
      runningSince[run] = at;
      if (first) ++starts[key];
    }
    dueAt.insert({at + std::chrono::duration_cast<Clock::TimePoint::duration>(options.runTime), key});
  }

  // What the controller does with one job as it is now.
  void step(const json& job) {
    const std::string key = keyOf(job);
    const std::string uid = stringAt(job, json::json_pointer("/metadata/uid"));
    if (job["metadata"].contains("deletionTimestamp")) {
      forgetRuns(key, "");
      return;
    }
    forgetRuns(key, uid);
    if (!ours(options.style, job)) return;
    if (finishedRun(options.style, job)) {
      if (options.style == Style::Argo) expireFinished(job, key);
      return;
    }
    const std::string stamp = toRfc3339(clock.now());
    const Wanted want = wanted(options.style, job);
    const std::string run = key + "/" + uid;
    std::unique_lock lock(mutex);
    const auto since = runningSince.find(run);
    const bool running = since != runningSince.end();

    if (options.style == Style::Argo) {
      lock.unlock();
      if (!stringAt(job, json::json_pointer("/status/phase")).empty()) {
        argoStep(job, key, run, want == Wanted::Wait);
        return;
      }
      json status = job.value("status", json::object());  // Argo's first pass, suspended or not
      status["phase"] = "Running";
      status["startedAt"] = stamp;
      writeStatus(job, status);
      return;
    }
    if (want == Wanted::Stop) {  // Tekton: stopped or cancelled
      if (running) runningSince.erase(since);
      lock.unlock();
      writeStatus(job, finalStatus(job, false, stamp, job["spec"].value("status", "")));
      return;
    }
    if (want == Wanted::Wait && !running && pendingPods.erase(key) != 0) {  // the pending replicas are deleted
      lock.unlock();
      json status = job.value("status", json::object());
      status["activeReplicas"] = 0;
      status["conditions"] = inHouseRunning("False", "Suspended", "the replicas were deleted", stamp);
      writeStatus(job, status);
      return;
    }
    if (want == Wanted::Wait) {
      if (!running) return;
      runningSince.erase(since);
      lock.unlock();
      json status = job.value("status", json::object());
      status["activeReplicas"] = 0;  // InHouse: the replicas are deleted
      status["conditions"] = inHouseRunning("False", "Suspended", "the replicas were deleted", stamp);
      writeStatus(job, status);
      return;
    }
    if (!running && options.podsPending && options.podsPending(job)) {  // InHouse: created, never scheduled
      const bool known = !pendingPods.insert(key).second;
      lock.unlock();
      if (known) return;
      json status = runningStatus(job, stamp);
      status["conditions"] =
          inHouseRunning("False", "PodsPending", "the replicas are Pending: no node can run them", stamp);
      writeStatus(job, status);
      return;
    }
    if (!running) {
      pendingPods.erase(key);
      lock.unlock();
      // Before the run counts as started: a failed write throws, and the next pass tries again.
      if (options.style == Style::Tekton && options.taskRuns) startTasks(job);
      const auto now = clock.now();
      lock.lock();
      runningSince[run] = now;
      ++starts[key];
      lock.unlock();
      dueAt.insert({now + std::chrono::duration_cast<Clock::TimePoint::duration>(options.runTime), key});
      writeStatus(job, runningStatus(job, stamp));
      return;
    }
    const auto endsAt = since->second + std::chrono::duration_cast<Clock::TimePoint::duration>(options.runTime);
    if (clock.now() < endsAt) {
      lock.unlock();
      dueAt.insert({endsAt, key});
      return;
    }
    runningSince.erase(since);
    lock.unlock();
    const bool failed = options.runFails && options.runFails(job);
    writeStatus(job, finalStatus(job, !failed, stamp));
  }
};

JobControllerStandIn::JobControllerStandIn(sandbox::ClusterApi& api, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(api, clock, std::move(options))) {}

JobControllerStandIn::~JobControllerStandIn() { stop(); }

void JobControllerStandIn::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

void JobControllerStandIn::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int JobControllerStandIn::starts(const std::string& key) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->starts.find(key);
  return it == impl_->starts.end() ? 0 : it->second;
}

std::size_t JobControllerStandIn::running() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->runningSince.size();
}

std::map<std::string, int> JobControllerStandIn::allStarts() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->starts;
}

}  // namespace mka::standin
