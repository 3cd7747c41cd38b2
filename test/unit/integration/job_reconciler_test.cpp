// The job integration's reconcile steps (KUEUE-JOBFRAMEWORK.md §4.2, §9's scenarios that apply
// to configured kinds) for an in-house CRD, one reconcile per case on a sandbox cluster that
// enforces the Workload and job CRDs, as Kueue's TestReconcileGenericJob runs its steps.
#include "mka/integration/job_reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>

#include "mka/api/workload_status.h"
#include "mka/integration/workload_builder.h"
#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"
#include "support/cache_or_client_reader.h"
#include "support/eventually.h"
#include "support/recording_events.h"
#include "support/table_test.h"
#include "training_run.h"

namespace mka::integration {
namespace {

using nlohmann::json;
using namespace fixture;
using ::testing::HasSubstr;

const sandbox::ResourceRef kFlavors{"kueue.x-k8s.io", "v1beta2", "resourceflavors", "", "", ""};

sandbox::ResourceRef named(sandbox::ResourceRef ref, const std::string& name) {
  ref.name = name;
  return ref;
}

const json kTemplate = {{"metadata", {{"labels", {{"app", "train"}}}}},
                        {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};

json trainingRun(const json& spec, const json& labels = {{"kueue.x-k8s.io/queue-name", "user-queue"}}) {
  json job = {{"apiVersion", "ml.example.com/v1"},
              {"kind", "TrainingRun"},
              {"metadata", {{"name", "train"}, {"namespace", "team-a"}}},
              {"spec", spec}};
  if (!labels.empty()) job["metadata"]["labels"] = labels;
  return job;
}

const json kSuspended = {{"suspend", true}, {"replicas", 2}, {"template", kTemplate}};
const json kRunning = {{"replicas", 2}, {"template", kTemplate}};

json condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message = "") {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", "2026-11-26T10:00:00Z"}};
}

// A Workload status holding quota in flavor "on-demand" (admitted or only reserved).
json reserved(bool admitted, const json& checks = json::array()) {
  json status = {
      {"admission",
       {{"clusterQueue", "cq"},
        {"podSetAssignments",
         {{{"name", "main"}, {"flavors", {{"cpu", "on-demand"}}}, {"resourceUsage", {{"cpu", "2"}}}, {"count", 2}}}}}},
      {"conditions", {condition("QuotaReserved", "True", "QuotaReserved")}}};
  if (admitted) status["conditions"].push_back(condition("Admitted", "True", "Admitted"));
  if (!checks.empty()) status["admissionChecks"] = checks;
  return status;
}

json evicted(json status, const std::string& reason, const std::string& message) {
  status["conditions"].push_back(condition("Evicted", "True", reason, message));
  return status;
}

// The Workload the integration creates for `job` (its spec as given), with `status`.
json ownWorkload(const json& job, const json& status = nullptr) {
  const auto podSets = podSetsFor(job, *trainingRuns().integration());
  json workload = newWorkload(job, kTrainingRun, podSets.podSets, std::nullopt);
  if (!status.is_null()) workload["status"] = status;
  return workload;
}

std::string ownName(const json& job) {
  return workloadName(kTrainingRun, "train", job["metadata"]["uid"].get<std::string>());
}

using test::RecordingEvents;

struct Given {
  json job;                                                     // created, status written after
  std::function<std::vector<json>(const json& job)> workloads;  // built from the stored job
  bool deleteJob = false;
  json managedBy;                                         // spec.managedBy of the job, when set
  bool workloadsTerminating = false;                      // deleted before the reconcile (held by their finalizers)
  std::optional<config::FieldValue> stop;                 // the kind's stop rule, when not its suspend rule
  config::LabelSelector namespaceSelector;                // the kind's; empty: every namespace
  std::optional<Duration> deleteAfterDeactivatedByKueue;  // the kind's retention
  json namespaceLabels = json::object();                  // of team-a, the job's namespace
  std::vector<std::pair<sandbox::ResourceRef, json>> objects;  // created first (priority classes)
  std::optional<config::ActiveRule> active;                    // the kind's active rule
  int reconciles = 1;                           // passes over the same job, the error of the last one expected
  std::vector<config::PodSetRule> podSetRules;  // the kind's pod sets; empty: TrainingRun's one
  std::optional<config::ActiveRule> podsReady;  // the kind's podsReady rule
  bool waitForPodsReady = false;
};

struct Seen {
  std::optional<json> job;
  std::vector<json> workloads;
  const json* workload(const std::string& name) const {
    for (const auto& w : workloads)
      if (w["metadata"]["name"] == name) return &w;
    return nullptr;
  }
};

struct Expected {
  std::vector<std::string> events;  // each a prefix of the event recorded (Workload names end in a hash)
  std::string error;                // a substring; empty: none
  std::function<void(const Seen& seen)> check;
  std::chrono::nanoseconds requeueAfter{0};  // the reconcile's result
  std::size_t refusedWrites = 0;             // writes the cluster refused as invalid (422)
};

struct Case {
  std::string name;
  Given given;
  Expected expected;
};

class World {
 public:
  explicit World(const Given& given) : kind_(kindFor(given)) {
    cluster_ = &sandbox_.addCluster(
        {.name = "worker",
         .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "kueue.x-k8s.io_resourceflavors.yaml",
                      kCrds / "kueue.x-k8s.io_workloadpriorityclasses.yaml", kTrainingRunCrd},
         .garbageCollection = false});
    api().create({"", "v1", "namespaces", "", "", ""},
                 {{"metadata", {{"name", "team-a"}, {"labels", given.namespaceLabels}}}});
    api().create(kFlavors, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                            {"kind", "ResourceFlavor"},
                            {"metadata", {{"name", "on-demand"}}},
                            {"spec",
                             {{"nodeLabels", {{"instance-type", "on-demand"}}},
                              {"tolerations", {{{"key", "dedicated"}, {"operator", "Exists"}}}}}}});
    for (const auto& [ref, object] : given.objects) api().create(ref, object);
    json job = given.job;
    if (!given.managedBy.is_null()) job["spec"]["managedBy"] = given.managedBy;
    job_ = put(kJobs, job);
    if (given.workloads) {
      for (const auto& w : given.workloads(job_)) {
        put(kWorkloads, w);
        if (given.workloadsTerminating) api().remove(named(kWorkloads, w["metadata"]["name"].get<std::string>()));
      }
    }

    kube::ClientOptions options;
    options.qps = 0;
    options.maxRetries = 0;
    client_ = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(cluster_->kubeconfig())), options));
    jobs_ = std::make_unique<kube::Informer>(*client_, kTrainingRun);
    workloads_ = std::make_unique<kube::Informer>(*client_, api::kWorkloadGvk);
    workloads_->addHandlers({.onAdd = [this](const json& w) { owners_.set(w, kTrainingRun); },
                             .onUpdateNew = [this](const json& w) { owners_.set(w, kTrainingRun); },
                             .onDelete = [this](const json& w) { owners_.remove(w); }});
    jobs_->start();
    workloads_->start();
    EXPECT_TRUE(jobs_->waitForSync(std::chrono::seconds{30}));
    EXPECT_TRUE(workloads_->waitForSync(std::chrono::seconds{30}));
    if (given.deleteJob) {
      api().remove(named(kJobs, "train"));
      EXPECT_TRUE(test::eventually([&] {  // gone, or terminating while its own finalizers hold it
        const auto cached = jobs_->get("team-a/train");
        return !cached || cached->at("metadata").contains("deletionTimestamp");
      }));
    }
    events_ = std::make_unique<RecordingEvents>(*client_, clock_, "test");
    objects_ = std::make_unique<test::CacheOrClientReader>(*client_);
    objects_->add(*jobs_);
    objects_->add(*workloads_);
    reconciler_ = std::make_unique<JobReconciler>(*client_, kind_, *objects_, owners_, *events_, clock_);
  }
  ~World() {
    jobs_->stop();
    workloads_->stop();
  }

  JobReconciler& reconciler() { return *reconciler_; }
  const RecordingEvents& events() const { return *events_; }
  const json& storedJob() const { return job_; }
  std::vector<std::string> invalidWrites() const { return cluster_->invalidWrites(); }

  // Changes the stored job with `edit` and waits until the job cache holds the change.
  void changeJob(const std::function<void(json&)>& edit) {
    json job = api().get(named(kJobs, "train"));
    edit(job);
    const json stored = *api().update(named(kJobs, "train"), job);
    const std::string version = stored["metadata"]["resourceVersion"].get<std::string>();
    EXPECT_TRUE(test::eventually([&] {
      const auto cached = jobs_->get("team-a/train");
      return cached && cached->at("metadata").value("resourceVersion", "") == version;
    }));
  }

  Seen seen() {
    Seen out;
    try {
      out.job = api().get(named(kJobs, "train"));
    } catch (const std::exception&) {
    }
    const auto listed = api().list(kWorkloads, {});
    for (const auto& w : listed["items"]) out.workloads.push_back(w);
    return out;
  }

 private:
  sandbox::ClusterApi& api() { return cluster_->api(); }

  // Creates `object`, then writes its status through the status subresource.
  json put(const sandbox::ResourceRef& ref, const json& object) {
    auto stored = *api().create(ref, object);
    if (!object.contains("status")) return stored;
    stored["status"] = object["status"];
    auto status = named(ref, stored["metadata"]["name"].get<std::string>());
    status.subresource = "status";
    return *api().update(status, stored);
  }

  FakeClock clock_;
  sandbox::Sandbox sandbox_{clock_};
  sandbox::Cluster* cluster_ = nullptr;
  static jobkind::JobKind kindFor(const Given& given) {
    auto rules = *trainingRuns().integration();
    rules.stop = given.stop;
    rules.namespaceSelector = given.namespaceSelector;
    rules.deleteAfterDeactivatedByKueue = given.deleteAfterDeactivatedByKueue;
    rules.active = given.active;
    if (!given.podSetRules.empty()) rules.podSets = given.podSetRules;
    rules.podsReady = given.podsReady;
    rules.waitForPodsReady = given.waitForPodsReady;
    return jobkind::JobKind(trainingRuns().framework(), rules, false);
  }

  jobkind::JobKind kind_;
  json job_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::Informer> jobs_, workloads_;
  std::unique_ptr<test::CacheOrClientReader> objects_;
  WorkloadOwners owners_;
  std::unique_ptr<RecordingEvents> events_;
  std::unique_ptr<JobReconciler> reconciler_;
};

void runCase(const Case& c) {
  World world(c.given);
  if (::testing::Test::HasFatalFailure()) return;
  std::string error;
  Result result;
  for (int pass = 0; pass < c.given.reconciles; ++pass) {
    error.clear();
    try {
      result = world.reconciler().reconcile("team-a/train");
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  EXPECT_EQ(result.requeueAfter, c.expected.requeueAfter);
  if (c.expected.error.empty()) {
    EXPECT_EQ(error, "");
  } else {
    EXPECT_THAT(error, HasSubstr(c.expected.error));
  }
  const auto events = world.events().events();
  EXPECT_EQ(events.size(), c.expected.events.size()) << ::testing::PrintToString(events);
  for (std::size_t i = 0; i < std::min(events.size(), c.expected.events.size()); ++i)
    EXPECT_THAT(events[i], ::testing::StartsWith(c.expected.events[i]));
  if (c.expected.refusedWrites == 0) {
    EXPECT_EQ(world.invalidWrites(), std::vector<std::string>{}) << "a write a real cluster refuses";
  } else {
    EXPECT_EQ(world.invalidWrites().size(), c.expected.refusedWrites)
        << ::testing::PrintToString(world.invalidWrites());
  }
  if (c.expected.check) c.expected.check(world.seen());
}

const json* conditionOf(const json& object, const std::string& type) { return api::findCondition(object, type); }

bool suspended(const Seen& seen) { return seen.job && seen.job->at("spec").value("suspend", false); }

// A job whose run ended: its Succeeded condition with `status`, `reason` and `message`.
json endedRun(const json& spec, const std::string& status, const std::string& reason, const std::string& message) {
  json job = trainingRun(spec);
  job["status"] = {{"conditions", {condition("Succeeded", status, reason, message)}}};
  return job;
}

// The one Workload is Finished with `reason` and `message`.
void expectFinished(const Seen& seen, const std::string& reason, const std::string& message) {
  const auto* finished = conditionOf(seen.workloads.at(0), "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->value("reason", ""), reason);
  EXPECT_EQ(finished->value("message", ""), message);
}

// The job's reserved Workload, also held by another controller's finalizer.
std::vector<json> heldByAnotherFinalizer(const json& job) {
  json w = ownWorkload(job, reserved(true));
  w["metadata"]["finalizers"].push_back("example.com/audit");
  return {w};
}

// A suspended job whose pod template tolerates the dedicated nodes.
json tolerating() {
  json spec = kSuspended;
  spec["template"]["spec"]["tolerations"] = {{{"key", "dedicated"}, {"operator", "Exists"}}};
  return trainingRun(spec);
}

// ---- §3.2, §3.6, §4.2 steps 9, 11, 12, 14, 15: the job's one Workload ----------------------

std::vector<Case> theJobsOneWorkloadCases() {
  return {
      {"a suspended job with a queue name gets its Workload",
       {trainingRun(kSuspended)},
       {{"Normal CreatedWorkload: Created Workload: team-a/"},  // name checked below
        "",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u);
          const auto& w = seen.workloads[0];
          EXPECT_EQ(w["metadata"]["name"], ownName(*seen.job));
          EXPECT_EQ(w["metadata"]["finalizers"], json({"kueue.x-k8s.io/resource-in-use"}));
          EXPECT_EQ(w["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], seen.job->at("metadata").at("uid"));
          EXPECT_EQ(w["metadata"]["ownerReferences"][0]["uid"], seen.job->at("metadata").at("uid"));
          EXPECT_EQ(w["spec"]["queueName"], "user-queue");
          EXPECT_EQ(w["spec"]["podSets"][0]["count"], 2);
          EXPECT_TRUE(suspended(seen));
        }}},
      {"a job without a queue name is not Kueue's",
       {trainingRun(kSuspended, json::object())},
       {{}, "", [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"a running job without a Workload is stopped, then gets one",
       {trainingRun(kRunning)},
       {{"Normal Stopped: Missing Workload; unable to restore pod templates",
         "Normal CreatedWorkload: Created Workload: team-a/"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          EXPECT_EQ(seen.workloads.size(), 1u);
        }}},
      {"a count that is not an integer: a Warning naming the field, no Workload",
       {trainingRun({{"suspend", true}, {"replicas", "four"}, {"template", kTemplate}})},
       {{"Warning InvalidJob: spec.replicas: the pod set main's count must be a whole number from 0 to 2147483647, "
         "not \"four\"; the job stays suspended without a Workload until this is fixed"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(seen.workloads.empty());
          EXPECT_TRUE(suspended(seen));
        }}},
      {"a missing template path: a Warning naming the field, no Workload",
       {trainingRun({{"suspend", true}, {"replicas", 1}})},
       {{"Warning InvalidJob: spec.template: the pod set main's template is missing; the job stays suspended "
         "without a Workload until this is fixed"},
        "",
        [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"the job succeeded: its Workload is finished",
       {endedRun(kRunning, "True", "Completed", "all epochs done"),
        [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(true))}; }},
       {{"Normal FinishedWorkload: Workload 'team-a/"},
        "",
        [](const Seen& seen) { expectFinished(seen, "Succeeded", "all epochs done"); }}},
      {"a finished Workload loses its finalizer, announced again as Kueue does on every pass",
       {trainingRun(kSuspended),
        [](const json& job) {
          json status = reserved(true);
          status["conditions"].push_back(condition("Finished", "True", "Succeeded"));
          return std::vector<json>{ownWorkload(job, status)};
        }},
       {{"Normal FinishedWorkload: Workload 'team-a/trainingrun-train-"},
        "",
        [](const Seen& seen) { EXPECT_FALSE(seen.workloads.at(0)["metadata"].contains("finalizers")); }}},
      {"changed while suspended without a reservation: updated in place",
       {trainingRun(kSuspended),
        [](const json& job) {
          json older = job;
          older["spec"]["replicas"] = 5;
          return std::vector<json>{ownWorkload(older)};
        }},
       {{"Normal UpdatedWorkload: Updated not matching Workload for suspended job: team-a/"},
        "",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u);
          EXPECT_EQ(seen.workloads[0]["spec"]["podSets"][0]["count"], 2);
        }}},
      {"changed while suspended holding a reservation: deleted, to be created again",
       {trainingRun(kSuspended),
        [](const json& job) {
          json older = job;
          older["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:old";
          return std::vector<json>{ownWorkload(older, reserved(false))};
        }},
       {{"Normal DeletedWorkload: Deleted not matching Workload: team-a/"},
        "no matching workloads: deleted 1 workloads",
        [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"tolerations changed while suspended without a reservation: updated in place, spec.active kept "
       "(scenarios 24, 27)",
       {tolerating(),
        [](const json& job) {
          json older = job;
          older["spec"]["template"]["spec"].erase("tolerations");
          json w = ownWorkload(older);
          w["spec"]["active"] = false;
          return std::vector<json>{w};
        }},
       {{"Normal UpdatedWorkload: Updated not matching Workload for suspended job: team-a/"},
        "",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u);
          const auto& spec = seen.workloads[0]["spec"];
          EXPECT_EQ(spec["podSets"][0]["template"]["spec"]["tolerations"],
                    json::parse(R"([{"key": "dedicated", "operator": "Exists"}])"));
          EXPECT_EQ(spec["active"], false);
        }}},
      {"tolerations changed while reserved, not admitted: the Workload is deleted (scenario 29)",
       {tolerating(),
        [](const json& job) {
          json older = job;
          older["spec"]["template"]["spec"].erase("tolerations");
          return std::vector<json>{ownWorkload(older, reserved(false))};
        }},
       {{"Normal DeletedWorkload: Deleted not matching Workload: team-a/"},
        "no matching workloads: deleted 1 workloads",
        [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"a second Workload the job controls is deleted",
       {trainingRun(kSuspended),
        [](const json& job) {
          json extra = ownWorkload(job);
          extra["metadata"]["name"] = "zz-extra";
          return std::vector<json>{ownWorkload(job), extra};
        }},
       {{"Normal DeletedWorkload: Deleted not matching Workload: team-a/zz-extra"},
        "extra workloads: deleted 1 workloads",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u);
          EXPECT_NE(seen.workloads[0]["metadata"]["name"], "zz-extra");
        }}},
      {"the job is deleted: its Workload is released and deleted",
       {trainingRun(kRunning), [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(true))}; },
        /*deleteJob=*/true},
       {{}, "", [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"the job is deleted while another finalizer holds its Workload: finished OwnerNotFound first (scenario 14)",
       {trainingRun(kRunning), heldByAnotherFinalizer,
        /*deleteJob=*/true},
       {{},
        "",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u) << "held by the other finalizer";
          const auto& w = seen.workloads[0];
          EXPECT_EQ(w["metadata"]["finalizers"], json({"example.com/audit"}));
          EXPECT_TRUE(w["metadata"].contains("deletionTimestamp"));
          expectFinished(seen, "OwnerNotFound", "The workload's owner no longer exists");
        }}},
      {"a job terminating behind its own finalizer: its Workload finished OwnerNotFound, released, deleted; the "
       "job's finalizers untouched (scenario 15)",
       {[] {
          json job = trainingRun(kRunning);
          job["metadata"]["finalizers"] = {"example.com/cleanup"};
          return job;
        }(),
        heldByAnotherFinalizer,
        /*deleteJob=*/true},
       {{},
        "",
        [](const Seen& seen) {
          ASSERT_TRUE(seen.job.has_value());
          EXPECT_EQ(seen.job->at("metadata").at("finalizers"), json({"example.com/cleanup"}));
          ASSERT_EQ(seen.workloads.size(), 1u);
          const auto& w = seen.workloads[0];
          EXPECT_EQ(w["metadata"]["finalizers"], json({"example.com/audit"}));
          EXPECT_EQ(conditionOf(w, "Finished")->value("reason", ""), "OwnerNotFound");
        }}},
      {"the job failed: its Workload is finished Failed with the job's message (scenario 12)",
       {endedRun(kRunning, "False", "Error", "epoch 3 diverged"),
        [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(true))}; }},
       {{"Normal FinishedWorkload: Workload 'team-a/"},
        "",
        [](const Seen& seen) { expectFinished(seen, "Failed", "epoch 3 diverged"); }}},
      {"the time limit changed while suspended: the Workload follows (scenario 7)",
       {[] {
          json job = trainingRun(kSuspended);
          job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "600";
          return job;
        }(),
        [](const json& job) {
          json older = job;
          older["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "300";
          return std::vector<json>{ownWorkload(older)};
        }},
       {{"Normal UpdatedWorkload: Updated not matching Workload for suspended job: team-a/"},
        "",
        [](const Seen& seen) { EXPECT_EQ(seen.workloads.at(0)["spec"]["maximumExecutionTimeSeconds"], 600); }}},
      {"a job that finished before it had a Workload gets none (scenario 16)",
       {endedRun(kSuspended, "True", "Completed", "done")},
       {{}, "", [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"running with a Workload that no longer matches: stopped and restored from it, then it is deleted "
       "(scenario 25)",
       {[] {
          json spec = kRunning;
          spec["template"]["spec"]["containers"][0]["image"] = "busybox:new";
          spec["template"]["spec"]["nodeSelector"] = {{"instance-type", "on-demand"}};
          return trainingRun(spec);
        }(),
        [](const json& job) {
          json older = job;
          older["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:old";
          older["spec"]["template"]["spec"].erase("nodeSelector");
          return std::vector<json>{ownWorkload(older, reserved(true))};
        }},
       {{"Normal Stopped: No matching Workload; restoring pod templates according to existent Workload",
         "Normal DeletedWorkload: Deleted not matching Workload: team-a/"},
        "no matching workloads: deleted 1 workloads",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          EXPECT_FALSE(seen.job->at("spec").at("template").at("spec").contains("nodeSelector"))
              << "restored from the Workload's template";
          EXPECT_TRUE(seen.workloads.empty());
        }}},
      {"admitted and running with the flavor's node selector and tolerations injected: matches, untouched "
       "(scenario 28)",
       {[] {
          json spec = kRunning;
          spec["template"]["spec"]["nodeSelector"] = {{"instance-type", "on-demand"}};
          spec["template"]["spec"]["tolerations"] = {{{"key", "dedicated"}, {"operator", "Exists"}}};
          return trainingRun(spec);
        }(),
        [](const json& job) {
          json original = job;
          original["spec"]["template"] = kTemplate;
          return std::vector<json>{ownWorkload(original, reserved(true))};
        }},
       {{},
        "",
        [](const Seen& seen) {
          EXPECT_FALSE(suspended(seen));
          EXPECT_EQ(seen.workloads.size(), 1u);
        }}},
      {"the queue label changed while suspended: the Workload's queueName follows, quietly (scenario 30)",
       {trainingRun(kSuspended, {{"kueue.x-k8s.io/queue-name", "user-queue-new"}}),
        [](const json& job) {
          json older = job;
          older["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue";
          return std::vector<json>{ownWorkload(older)};
        }},
       {{},
        "",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u);
          EXPECT_EQ(seen.workloads[0]["spec"]["queueName"], "user-queue-new");
        }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, TheJobsOneWorkload, Case, theJobsOneWorkloadCases()) { runCase(testCase()); }

// ---- §4.2 steps 18, 20, 21, §4.3, §4.4: start, stop, eviction -------------------------------

const json kUpdateCheck = {
    {{"name", "provisioning"},
     {"state", "Ready"},
     {"message", ""},
     {"lastTransitionTime", "2026-11-26T10:00:00Z"},
     {"podSetUpdates",
      {{{"name", "main"}, {"nodeSelector", {{"zone", "a"}}}, {"annotations", {{"provisioned", "yes"}}}}}}}};

std::vector<Case> startStopAndEvictionCases() {
  return {
      {"admitted: resumed with the flavor and the checks' podSetUpdates in its template",
       {trainingRun(kSuspended),
        [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(true, kUpdateCheck))}; }},
       {{"Normal Started: Admitted by clusterQueue cq"},
        "",
        [](const Seen& seen) {
          EXPECT_FALSE(seen.job->at("spec").contains("suspend"));
          const auto& t = seen.job->at("spec").at("template");
          EXPECT_EQ(t["spec"]["nodeSelector"], json({{"instance-type", "on-demand"}, {"zone", "a"}}));
          EXPECT_EQ(t["spec"]["tolerations"], json::parse(R"([{"key": "dedicated", "operator": "Exists"}])"));
          EXPECT_EQ(t["metadata"]["labels"]["app"], "train");
          EXPECT_EQ(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
          EXPECT_EQ(t["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"], "cq");
          EXPECT_EQ(t["metadata"]["annotations"]["provisioned"], "yes");
        }}},
      {"reserved with pending checks that say something: one UpdatedAdmissionCheck (scenario 43)",
       {trainingRun(kSuspended),
        [](const json& job) {
          const auto check = [](const std::string& name, const std::string& state, const std::string& message) {
            return json{
                {"name", name}, {"state", state}, {"message", message}, {"lastTransitionTime", "2026-11-26T10:00:00Z"}};
          };
          return std::vector<json>{ownWorkload(
              job,
              reserved(false, {check("acName1", "Pending", "Some message."), check("acName2", "Ready", "Done."),
                               check("acName3", "Pending", ""), check("acName4", "Pending", "Another message.")}))};
        }},
       {{"Normal UpdatedAdmissionCheck: acName1: Some message.; acName4: Another message."},
        "",
        [](const Seen& seen) { EXPECT_TRUE(suspended(seen)); }}},
      {"admitted with a check's podSetUpdate labels: they reach the pod template (scenario 32)",
       {trainingRun(kSuspended),
        [](const json& job) {
          json checks = kUpdateCheck;
          checks[0]["podSetUpdates"][0]["labels"] = {{"provisioned-by", "prov"}};
          return std::vector<json>{ownWorkload(job, reserved(true, checks))};
        }},
       {{"Normal Started: Admitted by clusterQueue cq"},
        "",
        [](const Seen& seen) {
          const auto& labels = seen.job->at("spec").at("template").at("metadata").at("labels");
          EXPECT_EQ(labels.value("provisioned-by", ""), "prov");
          EXPECT_EQ(labels.value("app", ""), "train");
        }}},
      {"two checks that conflict: the Workload finishes FailedToStart naming the second (scenario 33)",
       {trainingRun(kSuspended),
        [](const json& job) {
          json checks = kUpdateCheck;
          json second = kUpdateCheck[0];
          second["name"] = "zone-check";
          second["podSetUpdates"][0] = {{"name", "main"}, {"nodeSelector", {{"zone", "b"}}}};
          checks.push_back(second);
          return std::vector<json>{ownWorkload(job, reserved(true, checks))};
        }},
       {{},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          const auto* finished = conditionOf(seen.workloads.at(0), "Finished");
          ASSERT_NE(finished, nullptr);
          EXPECT_EQ(finished->value("reason", ""), "FailedToStart");
          EXPECT_EQ(finished->value("message", ""),
                    "in admission check \"zone-check\": invalid admission check PodSetUpdate: conflict for "
                    "nodeSelector: conflict for key=zone, value1=a, value2=b");
        }}},
      {"quota reserved with a check still pending: stays suspended",
       {trainingRun(kSuspended), [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(false))}; }},
       {{}, "", [](const Seen& seen) { EXPECT_TRUE(suspended(seen)); }}},
      {"admitted, but the marker says MultiKueue: never resumed here",
       {trainingRun(kSuspended), [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(true))}; },
        false, "kueue.x-k8s.io/multikueue"},
       {{}, "", [](const Seen& seen) { EXPECT_TRUE(suspended(seen)); }}},
      {"a podSetUpdate that conflicts with the template: the Workload finishes FailedToStart",
       {trainingRun(
            {{"suspend", true},
             {"replicas", 2},
             {"template",
              {{"metadata", {{"labels", {{"app", "train"}}}}},
               {"spec",
                {{"nodeSelector", {{"zone", "b"}}}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}),
        [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(true, kUpdateCheck))}; }},
       {{},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          expectFinished(seen, "FailedToStart",
                         "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=zone, "
                         "value1=b, value2=a");
        }}},
      {"evicted while running: stopped, template restored, reservation cleared",
       {trainingRun({{"replicas", 2},
                     {"template",
                      {{"metadata", {{"labels", {{"app", "train"}, {"kueue.x-k8s.io/podset", "main"}}}}},
                       {"spec",
                        {{"nodeSelector", {{"instance-type", "on-demand"}}},
                         {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}),
        [](const json& job) {
          json original = job;
          original["spec"]["template"] = kTemplate;
          return std::vector<json>{
              ownWorkload(original, evicted(reserved(true), "Preempted", "Preempted by a higher priority workload"))};
        }},
       {{"Normal Stopped: Preempted by a higher priority workload"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          EXPECT_EQ(seen.job->at("spec").at("template"), kTemplate) << "restored exactly";
          const auto& w = seen.workloads.at(0);
          EXPECT_FALSE(w["status"].contains("admission"));
          EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("status", ""), "False");
          EXPECT_EQ(conditionOf(w, "Admitted")->value("reason", ""), "NoReservation");
          EXPECT_EQ(conditionOf(w, "Requeued")->value("status", ""), "True");
          // Scenarios 36, 37, 39: QuotaReserved says why, with the eviction's message.
          EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("reason", ""), "PendingEvaluation");
          EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("message", ""), "Preempted by a higher priority workload");
          EXPECT_EQ(conditionOf(w, "Requeued")->value("reason", ""), "Preempted");
        }}},
      {"evicted without a message: the Stopped event has an empty note (scenario 40)",
       {trainingRun(kRunning),
        [](const json& job) { return std::vector<json>{ownWorkload(job, evicted(reserved(true), "Preempted", ""))}; }},
       {{"Normal Stopped: "}, "", [](const Seen& seen) { EXPECT_TRUE(suspended(seen)); }}},
      {"evicted while running because its ClusterQueue stopped: stopped, not requeued (scenario 38)",
       {trainingRun(kRunning),
        [](const json& job) {
          return std::vector<json>{
              ownWorkload(job, evicted(reserved(true), "ClusterQueueStopped", "The ClusterQueue is stopped"))};
        }},
       {{"Normal Stopped: The ClusterQueue is stopped"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          const auto* requeued = conditionOf(seen.workloads.at(0), "Requeued");
          ASSERT_NE(requeued, nullptr);
          EXPECT_EQ(requeued->value("status", ""), "False");
          EXPECT_EQ(requeued->value("reason", ""), "ClusterQueueStopped");
        }}},
      {"deactivated while running: stopped, the quota released, not requeued (scenario 41)",
       {trainingRun(kRunning),
        [](const json& job) {
          json w = ownWorkload(job, evicted(reserved(true), "Deactivated", "The workload is deactivated"));
          w["spec"]["active"] = false;
          return std::vector<json>{w};
        }},
       {{"Normal Stopped: The workload is deactivated"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          const auto& w = seen.workloads.at(0);
          EXPECT_FALSE(w["status"].contains("admission"));
          EXPECT_EQ(conditionOf(w, "Requeued")->value("status", ""), "False");
          EXPECT_EQ(conditionOf(w, "Requeued")->value("reason", ""), "Deactivated");
        }}},
      {"evicted while suspended: the reservation is cleared, no Stopped",
       {trainingRun(kSuspended),
        [](const json& job) {
          return std::vector<json>{ownWorkload(job, evicted(reserved(false), "AdmissionCheck", "check failed"))};
        }},
       {{},
        "",
        [](const Seen& seen) {
          EXPECT_FALSE(seen.workloads.at(0)["status"].contains("admission"));
          EXPECT_EQ(conditionOf(seen.workloads.at(0), "Requeued")->value("status", ""), "False");
        }}},
      {"a job marked for MultiKueue is suspended, never stopped (nothing of it runs here)",
       {trainingRun(kRunning), nullptr, false, "kueue.x-k8s.io/multikueue", false,
        config::FieldValue{"spec.replicas", 0}},
       {{"Normal Stopped: Missing Workload; unable to restore pod templates",
         "Normal CreatedWorkload: Created Workload: team-a/"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          EXPECT_EQ(seen.job->at("spec").at("replicas"), 2) << "the destructive stop rule was not applied";
        }}},
      {"an unmarked job is stopped by the stop rule",
       {trainingRun(kRunning), nullptr, false, nullptr, false, config::FieldValue{"spec.replicas", 0}},
       {{"Normal Stopped: Missing Workload; unable to restore pod templates"},
        "",
        [](const Seen& seen) {
          EXPECT_EQ(seen.job->at("spec").at("replicas"), 0);
          EXPECT_TRUE(seen.workloads.empty()) << "still active by the rules: Kueue waits for it to stop";
        }}},
      {"running without an admitted Workload: stopped",
       {trainingRun(kRunning), [](const json& job) { return std::vector<json>{ownWorkload(job)}; }},
       {{"Normal Stopped: Not admitted by cluster queue"}, "", [](const Seen& seen) { EXPECT_TRUE(suspended(seen)); }}},
      {"the Workload is being deleted: the job stops, the finalizer goes",
       {trainingRun(kRunning),
        [](const json& job) {
          json w = ownWorkload(job, reserved(true));
          w["metadata"]["finalizers"].push_back("test.dev/hold");
          return std::vector<json>{w};
        },
        false, nullptr, /*workloadsTerminating=*/true},
       {{"Normal Stopped: Workload is deleted"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          EXPECT_EQ(seen.workloads.at(0)["metadata"]["finalizers"], json({"test.dev/hold"}));
        }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, StartStopAndEviction, Case, startStopAndEvictionCases()) { runCase(testCase()); }

// ---- §2 IsActive, §4.2 steps 15 and 18: quota held while pods run ------------------------

// The TrainingRun's active rule in these cases: its Running condition is True while replicas run.
const config::ActiveRule kRunningCondition{
    .type = config::ActiveRule::Type::Condition, .conditionType = "Running", .conditionStatus = "True"};

// `spec` with the Running condition `status`: its replicas running ("True") or ended ("False").
json withReplicas(const json& spec, const std::string& status) {
  json job = trainingRun(spec);
  job["status"] = {{"conditions", {condition("Running", status, status == "True" ? "Running" : "Ended")}}};
  return job;
}

// The Workload still holds its quota: nothing of the reservation was touched.
void expectReservationKept(const Seen& seen) {
  const auto& w = seen.workloads.at(0);
  EXPECT_TRUE(w["status"].contains("admission"));
  EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("status", ""), "True");
  EXPECT_EQ(conditionOf(w, "Requeued"), nullptr);
}

// The reservation is cleared as Kueue clears it after an eviction (§1.3).
void expectReservationCleared(const Seen& seen, const std::string& requeued, const std::string& reason,
                              const std::string& message) {
  const auto& w = seen.workloads.at(0);
  EXPECT_FALSE(w["status"].contains("admission"));
  EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("status", ""), "False");
  EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("reason", ""), "PendingEvaluation");
  EXPECT_EQ(conditionOf(w, "QuotaReserved")->value("message", ""), message);
  EXPECT_EQ(conditionOf(w, "Admitted")->value("reason", ""), "NoReservation");
  EXPECT_EQ(conditionOf(w, "Requeued")->value("status", ""), requeued);
  EXPECT_EQ(conditionOf(w, "Requeued")->value("reason", ""), reason);
}

constexpr std::string_view kPreempted = "Preempted by a higher priority workload";

std::function<std::vector<json>(const json&)> preempted() {
  return [](const json& job) {
    return std::vector<json>{ownWorkload(job, evicted(reserved(true), "Preempted", std::string(kPreempted)))};
  };
}

// Evicted because MultiKueue's check went to Retry: the worker was lost.
constexpr std::string_view kRemoteLost =
    "Evicted due to AdmissionCheck in Retry state: \"multikueue\" (Admitting remote lost)";
std::function<std::vector<json>(const json&)> evictedByTheCheck() {
  return [](const json& job) {
    return std::vector<json>{ownWorkload(job, evicted(reserved(true), "AdmissionCheck", std::string(kRemoteLost)))};
  };
}

std::function<std::vector<json>(const json&)> deactivated() {
  return [](const json& job) {
    json w = ownWorkload(job, evicted(reserved(true), "Deactivated", "The workload is deactivated"));
    w["spec"]["active"] = false;
    return std::vector<json>{w};
  };
}

Given withRule(json job, std::function<std::vector<json>(const json&)> workloads, json managedBy = nullptr) {
  Given g{std::move(job), std::move(workloads)};
  g.managedBy = std::move(managedBy);
  g.active = kRunningCondition;
  return g;
}

std::vector<Case> activeWhilePodsRunCases() {
  return {
      {"evicted with replicas running: stopped at once, the reservation kept",
       withRule(withReplicas(kRunning, "True"), preempted()),
       {{"Normal Stopped: " + std::string(kPreempted)},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          expectReservationKept(seen);
        }}},
      {"evicted and stopped, replicas still running: nothing changes",
       withRule(withReplicas(kSuspended, "True"), preempted()),
       {{}, "", expectReservationKept}},
      {"evicted and stopped, the replicas ended: the reservation cleared, requeued",
       withRule(withReplicas(kSuspended, "False"), preempted()),
       {{},
        "",
        [](const Seen& seen) { expectReservationCleared(seen, "True", "Preempted", std::string(kPreempted)); }}},
      {"evicted while running with no active rule: the reservation cleared at once",
       {withReplicas(kRunning, "True"), preempted()},
       {{"Normal Stopped: " + std::string(kPreempted)},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          expectReservationCleared(seen, "True", "Preempted", std::string(kPreempted));
        }}},
      {"deactivated with replicas running: stopped at once, the reservation kept",
       withRule(withReplicas(kRunning, "True"), deactivated()),
       {{"Normal Stopped: The workload is deactivated"},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          expectReservationKept(seen);
        }}},
      {"deactivated and stopped, the replicas ended: the reservation cleared, not requeued",
       withRule(withReplicas(kSuspended, "False"), deactivated()),
       {{},
        "",
        [](const Seen& seen) {
          expectReservationCleared(seen, "False", "Deactivated", "The workload is deactivated");
        }}},
      {"deactivated while running with no active rule: the reservation cleared at once",
       {withReplicas(kRunning, "True"), deactivated()},
       {{"Normal Stopped: The workload is deactivated"},
        "",
        [](const Seen& seen) {
          expectReservationCleared(seen, "False", "Deactivated", "The workload is deactivated");
        }}},
      {"marked for MultiKueue, the worker's copied status says replicas run: the reservation kept",
       withRule(withReplicas(kRunning, "True"), preempted(), "kueue.x-k8s.io/multikueue"),
       {{"Normal Stopped: " + std::string(kPreempted)}, "", expectReservationKept}},
      {"marked for MultiKueue, evicted by the check (the worker lost, its status frozen): cleared at once",
       withRule(withReplicas(kRunning, "True"), evictedByTheCheck(), "kueue.x-k8s.io/multikueue"),
       {{"Normal Stopped: " + std::string(kRemoteLost)},
        "",
        [](const Seen& seen) { expectReservationCleared(seen, "False", "AdmissionCheck", std::string(kRemoteLost)); }}},
      {"marked for MultiKueue, the worker's copied status says they ended: the reservation cleared",
       withRule(withReplicas(kSuspended, "False"), preempted(), "kueue.x-k8s.io/multikueue"),
       {{},
        "",
        [](const Seen& seen) { expectReservationCleared(seen, "True", "Preempted", std::string(kPreempted)); }}},
      {"stopped with replicas still running and no Workload: waits for them (step 15)",
       withRule(withReplicas(kSuspended, "True"), nullptr),
       {{}, "", [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"suspended, the replicas ended, no Workload: gets one",
       withRule(withReplicas(kSuspended, "False"), nullptr),
       {{"Normal CreatedWorkload: Created Workload: team-a/"},
        "",
        [](const Seen& seen) { EXPECT_EQ(seen.workloads.size(), 1u); }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, ActiveWhilePodsRun, Case, activeWhilePodsRunCases()) { runCase(testCase()); }

// ---- step 17: waitForPodsReady (KUEUE-JOBFRAMEWORK scenario 44) -----------------------------

// An admitted Workload whose PodsReady condition is `podsReady` (status/reason; none when empty).
std::function<std::vector<json>(const json&)> admittedWith(const std::string& status = "",
                                                           const std::string& reason = "") {
  return [=](const json& job) {
    json s = reserved(true);
    if (!status.empty()) s["conditions"].push_back(condition("PodsReady", status, reason, "as it was"));
    return std::vector<json>{ownWorkload(job, s)};
  };
}

// The running job, its replicas running ("True") or not ("False"), with the kind's podsReady
// rule (Running=True) and waitForPodsReady `on`.
Given podsReadyGiven(const std::string& replicas, std::function<std::vector<json>(const json&)> workloads,
                     bool on = true) {
  Given g{withReplicas(kRunning, replicas), std::move(workloads)};
  g.podsReady = kRunningCondition;
  g.waitForPodsReady = on;
  return g;
}

std::function<void(const Seen&)> podsReadyIs(const std::string& status, const std::string& reason,
                                             const std::string& message) {
  return [=](const Seen& seen) {
    ASSERT_EQ(seen.workloads.size(), 1u);
    const auto* c = conditionOf(seen.workloads[0], "PodsReady");
    ASSERT_NE(c, nullptr) << seen.workloads[0].dump();
    EXPECT_EQ(c->value("status", ""), status);
    EXPECT_EQ(c->value("reason", ""), reason);
    EXPECT_EQ(c->value("message", ""), message);
  };
}

constexpr std::string_view kNotReady = "Not all pods are ready or succeeded";
constexpr std::string_view kReady = "All pods reached readiness and the workload is running";
constexpr std::string_view kRecovering = "At least one pod has failed, waiting for recovery";

std::vector<Case> podsReadyCases() {
  return {
      {"not admitted: False/WaitForStart",
       [] {
         Given g = podsReadyGiven("False",
                                  [](const json& job) { return std::vector<json>{ownWorkload(job, reserved(false))}; });
         g.job = withReplicas(kSuspended, "False");
         return g;
       }(),
       {{}, "", podsReadyIs("False", "WaitForStart", std::string(kNotReady))}},
      {"admitted, the pods not started: False/WaitForStart",
       podsReadyGiven("False", admittedWith()),
       {{}, "", podsReadyIs("False", "WaitForStart", std::string(kNotReady))}},
      {"admitted, the pods started: True/Started",
       podsReadyGiven("True", admittedWith("False", "WaitForStart")),
       {{}, "", podsReadyIs("True", "Started", std::string(kReady))}},
      {"ready before, a pod failed: False/WaitForRecovery",
       podsReadyGiven("False", admittedWith("True", "Started")),
       {{}, "", podsReadyIs("False", "WaitForRecovery", std::string(kRecovering))}},
      {"still recovering: unchanged",
       podsReadyGiven("False", admittedWith("False", "WaitForRecovery")),
       {{}, "", podsReadyIs("False", "WaitForRecovery", "as it was")}},
      {"recovered: True/Recovered",
       podsReadyGiven("True", admittedWith("False", "WaitForRecovery")),
       {{}, "", podsReadyIs("True", "Recovered", std::string(kReady))}},
      {"the same status and reason: not rewritten",
       podsReadyGiven("True", admittedWith("True", "Started")),
       {{}, "", podsReadyIs("True", "Started", "as it was")}},
      {"waitForPodsReady off: no PodsReady condition",
       podsReadyGiven("True", admittedWith(), false),
       {{}, "", [](const Seen& seen) { EXPECT_EQ(conditionOf(seen.workloads.at(0), "PodsReady"), nullptr); }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, PodsReady, Case, podsReadyCases()) { runCase(testCase()); }

// ---- §3.7: prebuilt Workloads (a MultiKueue worker's job copy) ------------------------------

// A job copy as the manager's dispatch loop creates it on a worker: linked to the Workload copy
// by name, labelled with the origin.
json jobCopy(const json& spec) {
  json job = trainingRun(spec, {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}});
  job["metadata"]["annotations"] = {{"kueue.x-k8s.io/prebuilt-workload-name", "remote-wl"}};
  return job;
}

// The manager's Workload copy: no owner, no finalizer (KUEUE-MULTIKUEUE.md §2.4).
json workloadCopy(const json& job, const json& status = nullptr) {
  json workload = ownWorkload(job, status);
  workload["metadata"]["name"] = "remote-wl";
  workload["metadata"].erase("ownerReferences");
  workload["metadata"].erase("finalizers");
  workload["metadata"].erase("labels");
  workload["metadata"]["labels"] = {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}};
  workload["spec"]["queueName"] = "user-queue";
  return workload;
}

std::vector<Case> prebuiltWorkloadsCases() {
  return {
      {"the prebuilt Workload is adopted, and none is created",
       {jobCopy(kSuspended), [](const json& job) { return std::vector<json>{workloadCopy(job)}; }},
       {{},
        "",
        [](const Seen& seen) {
          ASSERT_EQ(seen.workloads.size(), 1u);
          const auto& w = seen.workloads[0];
          EXPECT_EQ(w["metadata"]["ownerReferences"][0]["uid"], seen.job->at("metadata").at("uid"));
          EXPECT_EQ(w["metadata"]["ownerReferences"][0]["controller"], true);
          EXPECT_EQ(w["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], seen.job->at("metadata").at("uid"));
          EXPECT_FALSE(w["metadata"].contains("finalizers")) << "adoption adds no finalizer";
        }}},
      {"admitted on the worker: the copy is resumed, with the worker-pod label",
       {jobCopy(kSuspended),
        [](const json& job) {
          json w = workloadCopy(job, reserved(true));
          w["metadata"]["ownerReferences"] = {{{"apiVersion", "ml.example.com/v1"},
                                               {"kind", "TrainingRun"},
                                               {"name", "train"},
                                               {"uid", job["metadata"]["uid"]},
                                               {"controller", true}}};
          return std::vector<json>{w};
        }},
       {{"Normal Started: Admitted by clusterQueue cq"},
        "",
        [](const Seen& seen) {
          EXPECT_FALSE(suspended(seen));
          EXPECT_EQ(seen.job->at("spec")
                        .at("template")
                        .at("metadata")
                        .at("labels")
                        .at("kueue.x-k8s.io/multikueue-worker-workload-pod"),
                    "true");
        }}},
      {"a copy that does not match its job finishes OutOfSync",
       {jobCopy(kSuspended),
        [](const json& job) {
          json other = job;
          other["spec"]["replicas"] = 7;
          return std::vector<json>{workloadCopy(other)};
        }},
       {{},
        "prebuilt workload not found",
        [](const Seen& seen) {
          expectFinished(seen, "OutOfSync", "The prebuilt workload is out of sync with its user job");
          EXPECT_TRUE(suspended(seen));
        }}},
      {"the prebuilt Workload is missing: the job stays suspended and the reconcile retries",
       {jobCopy(kSuspended)},
       {{},
        "prebuilt workload not found",
        [](const Seen& seen) {
          EXPECT_TRUE(seen.workloads.empty()) << "never created for a job that names a prebuilt one";
          EXPECT_TRUE(suspended(seen));
        }}},
      {"a running job whose prebuilt Workload is missing is stopped, and none is created (scenario 17)",
       {jobCopy(kRunning)},
       {{"Normal Stopped: missing workload"},
        "prebuilt workload not found",
        [](const Seen& seen) {
          EXPECT_TRUE(seen.workloads.empty());
          EXPECT_TRUE(suspended(seen));
        }}},
      {"a prebuilt Workload controlled by another object is not adopted",
       {jobCopy(kRunning),
        [](const json& job) {
          json w = workloadCopy(job, reserved(true));
          w["metadata"]["ownerReferences"] = {{{"apiVersion", "ml.example.com/v1"},
                                               {"kind", "TrainingRun"},
                                               {"name", "train"},
                                               {"uid", "another-uid"},
                                               {"controller", true}}};
          return std::vector<json>{w};
        }},
       {{"Normal Stopped: missing workload"},
        "prebuilt workload not found",
        [](const Seen& seen) {
          EXPECT_TRUE(suspended(seen));
          EXPECT_EQ(seen.workloads.at(0)["metadata"]["ownerReferences"][0]["uid"], "another-uid");
        }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, PrebuiltWorkloads, Case, prebuiltWorkloadsCases()) { runCase(testCase()); }

// ---- §4.2 step 4: managedJobsNamespaceSelector (scenario 46) ---------------------------------

std::vector<Case> namespaceSelectorCases() {
  const config::LabelSelector labelled{{{"managed-by-kueue", "true"}}, {}};
  const config::LabelSelector notSystem{
      {}, {{"kubernetes.io/metadata.name", config::LabelSelector::Expression::Operator::NotIn, {"kube-system"}}}};
  Given outside{trainingRun(kRunning)};
  outside.namespaceSelector = labelled;
  Given inside{trainingRun(kSuspended)};
  inside.namespaceSelector = labelled;
  inside.namespaceLabels = {{"managed-by-kueue", "true"}};
  Given byName{trainingRun(kSuspended)};
  byName.namespaceSelector = notSystem;
  return {
      {"a queued, running job in a namespace the selector leaves out is left alone",
       outside,
       {{},
        "",
        [](const Seen& seen) {
          EXPECT_TRUE(seen.workloads.empty());
          EXPECT_FALSE(suspended(seen)) << "untouched";
        }}},
      {"in a labelled namespace it gets its Workload",
       inside,
       {{"Normal CreatedWorkload"}, "", [](const Seen& seen) { EXPECT_EQ(seen.workloads.size(), 1u); }}},
      {"the namespace's name label, as Kueue's default selector reads it",
       byName,
       {{"Normal CreatedWorkload"}, "", [](const Seen& seen) { EXPECT_EQ(seen.workloads.size(), 1u); }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, NamespaceSelector, Case, namespaceSelectorCases()) { runCase(testCase()); }

// ---- §4.2 step 19: a job whose Workload Kueue deactivated is deleted after the retention
// (scenario 42) ---------------------------------------------------------------------------------

std::vector<Case> deactivationRetentionCases() {
  const auto deactivated = [](const std::string& reason, bool active) {
    return [reason, active](const json& job) {
      json w = ownWorkload(job, evicted(reserved(true), reason, "The workload is deactivated"));
      w["spec"]["active"] = active;
      return std::vector<json>{w};
    };
  };
  const auto given = [](std::function<std::vector<json>(const json&)> workloads, Duration retention) {
    Given g{trainingRun(kRunning), std::move(workloads)};
    g.deleteAfterDeactivatedByKueue = retention;
    return g;
  };
  constexpr Duration kHundredDays = std::chrono::hours{24 * 100};
  // The Evicted condition's time (see condition()) plus the retention, from the test's clock.
  const auto remaining = *parseRfc3339("2026-11-26T10:00:00Z") + kHundredDays - FakeClock().now();
  const auto kept = [](const Seen& seen) { EXPECT_TRUE(seen.job.has_value()) << "the job is kept"; };
  return {
      {"deactivated by Kueue, retention 0: stopped, then deleted",
       given(deactivated("DeactivatedDueToRequeuingLimitExceeded", false), Duration::zero()),
       {{"Normal Stopped: The workload is deactivated",
         "Normal Deleted: Deleted job: deactivation retention period "
         "expired"},
        "",
        [](const Seen& seen) { EXPECT_FALSE(seen.job.has_value()) << "deleted"; }}},
      {"deactivated by a user (reason Deactivated): kept",
       given(deactivated("Deactivated", false), Duration::zero()),
       {{"Normal Stopped: The workload is deactivated"}, "", kept}},
      {"active again: kept",
       given(deactivated("DeactivatedDueToRequeuingLimitExceeded", true), Duration::zero()),
       {{"Normal Stopped: The workload is deactivated"}, "", kept}},
      {"retention not over: kept, and looked at again when it is",
       given(deactivated("DeactivatedDueToRequeuingLimitExceeded", false), kHundredDays),
       {{"Normal Stopped: The workload is deactivated"}, "", kept, remaining}},
      {"no retention configured: kept",
       {trainingRun(kRunning), deactivated("DeactivatedDueToRequeuingLimitExceeded", false)},
       {{"Normal Stopped: The workload is deactivated"}, "", kept}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, DeactivationRetention, Case, deactivationRetentionCases()) { runCase(testCase()); }

// ---- §3.3 priority: scenarios 8, 10, 11 --------------------------------------------------

const sandbox::ResourceRef kWorkloadPriorityClasses{"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "", "", ""};
const sandbox::ResourceRef kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", "", "", ""};

std::pair<sandbox::ResourceRef, json> workloadPriorityClass(const std::string& name, int value) {
  return {kWorkloadPriorityClasses,
          {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
           {"kind", "WorkloadPriorityClass"},
           {"metadata", {{"name", name}}},
           {"value", value}}};
}
std::pair<sandbox::ResourceRef, json> priorityClass(const std::string& name, int value, bool globalDefault = false) {
  return {kPriorityClasses,
          {{"apiVersion", "scheduling.k8s.io/v1"},
           {"kind", "PriorityClass"},
           {"metadata", {{"name", name}}},
           {"value", value},
           {"globalDefault", globalDefault}}};
}
json withPriorityLabel(const std::string& name) {
  return {{"kueue.x-k8s.io/queue-name", "user-queue"}, {"kueue.x-k8s.io/priority-class", name}};
}
json withPodPriorityClass(const std::string& name) {
  json spec = kSuspended;
  spec["template"]["spec"]["priorityClassName"] = name;
  return spec;
}
// The Workload's priority as "<kind>/<name>=<value>" ("=<value>" without a class).
std::string priorityText(const json& workload) {
  const auto& spec = workload.at("spec");
  std::string out;
  if (spec.contains("priorityClassRef"))
    out = spec["priorityClassRef"].value("kind", "") + "/" + spec["priorityClassRef"].value("name", "");
  return out + "=" + (spec.contains("priority") ? spec["priority"].dump() : "none");
}
std::function<std::vector<json>(const json&)> workloadWithPriority(const std::string& kind, const std::string& name,
                                                                   int value, const json& status = nullptr) {
  return [=](const json& job) {
    json w = ownWorkload(job, status);
    if (!name.empty())
      w["spec"]["priorityClassRef"] = {
          {"group", kind == "PriorityClass" ? "scheduling.k8s.io" : "kueue.x-k8s.io"}, {"kind", kind}, {"name", name}};
    if (value >= 0) w["spec"]["priority"] = value;
    return std::vector<json>{w};
  };
}
std::function<void(const Seen&)> priorityIs(const std::string& want) {
  return [want](const Seen& seen) {
    ASSERT_EQ(seen.workloads.size(), 1u);
    EXPECT_EQ(priorityText(seen.workloads[0]), want);
  };
}

std::vector<Case> priorityCases() {
  return {
      {"a WorkloadPriorityClass label gives its ref and value, over the pod's PriorityClass",
       {.job = trainingRun(withPodPriorityClass("test-pc"), withPriorityLabel("test-wpc")),
        .objects = {workloadPriorityClass("test-wpc", 100), priorityClass("test-pc", 200)}},
       {{"Normal CreatedWorkload: Created Workload: team-a/"}, "", priorityIs("WorkloadPriorityClass/test-wpc=100")}},
      {"a pod PriorityClass gives its ref and value",
       {.job = trainingRun(withPodPriorityClass("test-pc")), .objects = {priorityClass("test-pc", 200)}},
       {{"Normal CreatedWorkload: Created Workload: team-a/"}, "", priorityIs("PriorityClass/test-pc=200")}},
      {"no class named: the global default PriorityClass, the lowest of several",
       {.job = trainingRun(kSuspended),
        .objects = {priorityClass("default-a", 50, true), priorityClass("default-b", 10, true),
                    priorityClass("not-default", 1)}},
       {{"Normal CreatedWorkload: Created Workload: team-a/"}, "", priorityIs("PriorityClass/default-b=10")}},
      {"no class and no default: priority 0 without a ref",
       {.job = trainingRun(kSuspended)},
       {{"Normal CreatedWorkload: Created Workload: team-a/"}, "", priorityIs("=0")}},
      {"the label names a missing WorkloadPriorityClass: a Warning, no Workload, retried",
       {.job = trainingRun(kSuspended, withPriorityLabel("missing"))},
       {{"Warning WorkloadPriorityClassNotFound: WorkloadPriorityClass \"missing\" not found"},
        "WorkloadPriorityClass \"missing\" not found",
        [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"the template names a missing PriorityClass: no Workload, retried",
       {.job = trainingRun(withPodPriorityClass("missing"))},
       {{}, "PriorityClass \"missing\" not found", [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"the label changed on a suspended job: its Workload follows",
       {.job = trainingRun(kSuspended, withPriorityLabel("test-wpc-high")),
        .workloads = workloadWithPriority("WorkloadPriorityClass", "test-wpc", 100),
        .objects = {workloadPriorityClass("test-wpc", 100), workloadPriorityClass("test-wpc-high", 200)}},
       {{"Normal UpdatedWorkload: Updated workload priority class: team-a/"},
        "",
        priorityIs("WorkloadPriorityClass/test-wpc-high=200")}},
      {"a Workload whose priority came from a pod PriorityClass ignores the label",
       {.job = trainingRun(kSuspended, withPriorityLabel("missing")),
        .workloads = workloadWithPriority("PriorityClass", "pod-high", 1000)},
       {{}, "", priorityIs("PriorityClass/pod-high=1000")}},
      {"a Workload that reserved quota without a class is left alone: one can no longer be added",
       {.job = trainingRun(kSuspended, withPriorityLabel("test-wpc")),
        .workloads = workloadWithPriority("", "", -1, reserved(false)),
        .objects = {workloadPriorityClass("test-wpc", 100)}},
       {{}, "", priorityIs("=none")}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, WorkloadPriority, Case, priorityCases()) { runCase(testCase()); }

// ---- Bad input: a Warning naming the field, no retry storm ----------------------------------

// An object, but not a PodTemplateSpec the Workload CRD takes: its container has no name.
const json kNamelessContainer = {{"spec", {{"containers", {{{"image", "busybox"}}}}}}};
const json kNamelessSuspended = {{"suspend", true}, {"replicas", 2}, {"template", kNamelessContainer}};
const std::string kRefused =
    "Warning InvalidWorkload: the API server refused the job's Workload: spec.template.spec.containers[0].name: "
    "Required value; correct the job (a pod template must be a valid PodTemplateSpec): it stays suspended without "
    "a Workload until it changes";

// Admitted in flavor `flavor` (the sandbox has only "on-demand").
json reservedOn(const std::string& flavor) {
  json status = reserved(true);
  status["admission"]["podSetAssignments"][0]["flavors"]["cpu"] = flavor;
  return status;
}

std::vector<config::PodSetRule> podSetRules(std::size_t count) {
  std::vector<config::PodSetRule> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back({"ps-" + std::to_string(i), {"", 1, 1}, "spec.template"});
  return out;
}

std::vector<Case> badInputCases() {
  return {
      {"a pod template the Workload CRD refuses: one Warning naming the job's field, sent once over three passes",
       {.job = trainingRun(kNamelessSuspended), .reconciles = 3},
       {.events = {kRefused},
        .check =
            [](const Seen& seen) {
              EXPECT_TRUE(seen.workloads.empty());
              EXPECT_TRUE(suspended(seen));
            },
        .refusedWrites = 1}},
      {"a suspended job changed to a refused template: its Workload is not updated, one Warning",
       {.job = trainingRun(
            {{"suspend", true}, {"replicas", 2}, {"template", {{"spec", {{"containers", {{{"image", "alpine"}}}}}}}}}),
        .workloads =
            [](const json& job) {
              json valid = job;
              valid["spec"]["template"] = kTemplate;
              return std::vector<json>{ownWorkload(valid)};
            },
        .reconciles = 2},
       {.events = {kRefused},
        .check =
            [](const Seen& seen) {
              ASSERT_EQ(seen.workloads.size(), 1u);
              EXPECT_EQ(seen.workloads[0]["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["name"], "c")
                  << "as it was";
            },
        .refusedWrites = 1}},
      {"an admission naming a flavor that is not there: a Warning naming it, retried with backoff, not finished",
       {.job = trainingRun(kSuspended),
        .workloads = [](const json& job) { return std::vector<json>{ownWorkload(job, reservedOn("spot"))}; }},
       {.events = {"Warning ResourceFlavorNotFound: ResourceFlavor \"spot\" of pod set main in the admission of "
                   "Workload team-a/trainingrun-train-"},
        .error = "ResourceFlavor \"spot\" of pod set main",
        .check =
            [](const Seen& seen) {
              EXPECT_TRUE(suspended(seen));
              EXPECT_EQ(conditionOf(seen.workloads.at(0), "Finished"), nullptr) << "Kueue retries, so do we";
            }}},
      {"more pod sets than a Workload holds: a Warning, no Workload, not retried",
       {.job = trainingRun(kSuspended), .podSetRules = podSetRules(19)},
       {.events = {"Warning InvalidJob: Workload spec.podSets: the job's pod sets number 19, more than the 18 a Kueue "
                   "Workload holds (its CRD's maxItems): split the job, or merge pod sets whose pods are alike; the "
                   "job stays suspended without a Workload until this is fixed"},
        .check = [](const Seen& seen) { EXPECT_TRUE(seen.workloads.empty()); }}},
      {"as many pod sets as a Workload holds: its Workload",
       {.job = trainingRun(kSuspended), .podSetRules = podSetRules(18)},
       {.events = {"Normal CreatedWorkload: Created Workload: team-a/"},
        .check = [](const Seen& seen) { EXPECT_EQ(seen.workloads.at(0)["spec"]["podSets"].size(), 18u); }}},
  };
}
MKA_TABLE_TEST(JobReconcilerTest, BadInput, Case, badInputCases()) { runCase(testCase()); }

// A refused Workload is not sent again for a change that leaves it the same (an annotation);
// a change that makes it another (the template fixed) is sent, and taken.
TEST(JobReconcilerTest, ARefusedWorkloadIsSentAgainOnlyWhenTheJobChangesIt) {
  World world({.job = trainingRun(kNamelessSuspended)});
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  world.reconciler().reconcile("team-a/train");
  ASSERT_EQ(world.invalidWrites().size(), 1u);

  world.changeJob([](json& job) { job["metadata"]["annotations"]["example.com/note"] = "looked at"; });
  world.reconciler().reconcile("team-a/train");
  EXPECT_EQ(world.invalidWrites().size(), 1u) << "the same Workload is not sent again";

  world.changeJob([](json& job) { job["spec"]["template"] = kTemplate; });
  world.reconciler().reconcile("team-a/train");
  EXPECT_EQ(world.invalidWrites().size(), 1u);
  const auto events = world.events().events();
  ASSERT_EQ(events.size(), 2u) << ::testing::PrintToString(events);
  EXPECT_THAT(events[0], ::testing::StartsWith(kRefused));
  EXPECT_THAT(events[1], ::testing::StartsWith("Normal CreatedWorkload: Created Workload: team-a/"));
  EXPECT_EQ(world.seen().workloads.size(), 1u);
}

}  // namespace
}  // namespace mka::integration
