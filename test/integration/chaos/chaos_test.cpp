// The dispatch loop and the job integration under faults (issues 5, 21 and 24): 300 jobs
// (PipelineRuns and Workflows), 3 workers, as deployed (our integration on the manager and on
// every worker, the Kueue stand-ins playing Kueue's core, Tekton and Argo controller stand-ins
// running the jobs), random 5xx answers, latency, dropped watches, 410 Gone on watches, a worker
// unreachable for a while, two adapter restarts, and the MultiKueueConfig's worker set changed
// three times with jobs in flight. Seeded (MKA_CHAOS_SEED, default 20261122) and
// bounded. Afterwards every job finished on exactly one worker, ran there once and never on the
// manager, with its final status on the manager, and no remote object with our origin is left
// (jobs, Workloads, and the Secrets and ServiceAccounts the jobs name, syncDependencies on);
// at every quiet point, every job running on a worker had an admitted Workload, every job whose
// pods still ran (a suspended Workflow's pod runs to its step's end) had one holding quota, and
// no worker's reservations exceeded its ClusterQueue's nominal quota. The counts are printed.
//
// Verification reads the clusters in-process (ClusterApi), so injected faults never touch it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "mka/api/workload_status.h"
#include "mka/common/clock.h"
#include "mka/common/quantity.h"
#include "mka/demo/environment.h"
#include "mka/integration/controller.h"
#include "mka/multikueue/dispatcher.h"
#include "mka/multikueue/garbage_collector.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/object_store.h"
#include "support/eventually.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// MKA_CHAOS_JOBS overrides it: the sanitizer pass of scripts/test.sh runs fewer. Batches are a
// thirtieth to a tenth of the jobs, so every size goes through about fifteen rounds: the same
// faults per round, two restarts, a lost worker and every change of the worker set.
const int kJobs = [] {
  const char* text = std::getenv("MKA_CHAOS_JOBS");
  const int n = text ? std::atoi(text) : 0;
  return n >= 30 ? n : 300;
}();
const std::vector<std::string> kWorkers{"worker1", "worker2", "worker3"};

sandbox::ResourceRef pipelineRuns() { return {"tekton.dev", "v1", "pipelineruns", "default", "", ""}; }
sandbox::ResourceRef workflows() { return {"argoproj.io", "v1alpha1", "workflows", "default", "", ""}; }
sandbox::ResourceRef workloads() { return {"kueue.x-k8s.io", "v1beta2", "workloads", "", "", ""}; }
// The kinds syncDependencies copies to workers (every namespace).
const std::vector<sandbox::ResourceRef> kDependencyRefs{
    {"", "v1", "secrets", "", "", ""}, {"", "v1", "configmaps", "", "", ""}, {"", "v1", "serviceaccounts", "", "", ""}};
// The Secrets the jobs share (by index modulo their count) and the ServiceAccount all run as.
constexpr int kSharedSecrets = 3;
// One pod of half a CPU: the workers' ClusterQueues (8 CPUs) hold sixteen Workflows at once, so
// the copies that race for them (every worker's, under AllAtOnce) fill them.
const json kWorkflowTemplates = json::parse(R"([{"name": "main", "container": {"image": "busybox",
    "resources": {"requests": {"cpu": "500m"}}}}])");
const std::string kServiceAccount = "chaos-runner";

std::vector<json> items(sandbox::Cluster& cluster, const sandbox::ResourceRef& ref, const std::string& selector = "") {
  const auto list = cluster.api().list(ref, {.labelSelector = selector});
  return list.value("items", std::vector<json>{});
}

// A quantity as a ClusterQueue or a Workload writes it (a string, or a number), in thousandths.
std::int64_t milli(const json& quantity) {
  const auto parsed = quantity::parseMilli(quantity.is_string() ? quantity.get<std::string>() : quantity.dump());
  if (!parsed) throw std::runtime_error("not a quantity: " + quantity.dump());
  return *parsed;
}

// Whether a job's pods may still run, as the frameworks record them: a Workflow's Pod nodes
// Pending or Running; a PipelineRun under way (Succeeded Unknown, other than pending).
bool podsRun(const json& job) {
  if (const auto* c = api::findCondition(job, "Succeeded"))
    return c->value("status", "") == "Unknown" && c->value("reason", "") != "PipelineRunPending";
  const json::json_pointer nodes("/status/nodes");
  if (!job.contains(nodes) || !job.at(nodes).is_object()) return false;
  for (const auto& [id, node] : job.at(nodes).items()) {
    const auto phase = node.value("phase", "");
    if (node.value("type", "") == "Pod" && (phase == "Pending" || phase == "Running")) return true;
  }
  return false;
}

std::string finalOutcome(const json& job) {
  if (const auto* c = api::findCondition(job, "Succeeded")) return c->value("status", "") == "True" ? "Succeeded" : "";
  return job.value("status", json::object()).value("phase", "");
}

// Each dispatcher keeps every invariant: the default (every worker races) and ours, which sends
// one copy where there is room.
class ChaosTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const char* seedText = std::getenv("MKA_CHAOS_SEED");
    seed_ = seedText ? std::strtoul(seedText, nullptr, 10) : 20261122u;
    random_.seed(seed_);
    demo::Environment::Options o;
    o.workers = kWorkers;
    o.crdDirectory = std::string(MKA_FIXTURES_DIR) + "/crds";
    o.samplesDirectory = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
    o.clock = &clock_;
    o.runTime = 30s;
    o.pollInterval = 2ms;
    env_ = std::make_unique<demo::Environment>(o);
    config_ = env_->adapterConfiguration();
    config_.multiKueue.gcInterval = std::chrono::nanoseconds::zero();
    config_.multiKueue.dispatcherName = GetParam();
    // Every job names Secrets and a ServiceAccount, which travel with it and must all go.
    for (auto& f : config_.multiKueue.externalFrameworks) f.syncDependencies = true;
    auto& manager = env_->cluster("manager").api();
    for (int i = 0; i < kSharedSecrets; ++i)
      manager.create({"", "v1", "secrets", "default", "", ""},
                     json{{"apiVersion", "v1"},
                          {"kind", "Secret"},
                          {"metadata", {{"name", "chaos-secret-" + std::to_string(i)}, {"namespace", "default"}}},
                          {"data", {{"token", "Y2hhb3M="}}}});
    manager.create({"", "v1", "serviceaccounts", "default", "", ""},
                   json{{"apiVersion", "v1"},
                        {"kind", "ServiceAccount"},
                        {"metadata", {{"name", kServiceAccount}, {"namespace", "default"}}}});
  }
  void TearDown() override {
    stopAdapter();
    // Every object the adapter and the stand-ins wrote passed kube-apiserver's validation.
    EXPECT_THAT(env_->invalidWrites(), ::testing::IsEmpty());
    env_.reset();
  }

  void startAdapter() {
    multikueue::Dispatcher::Options o;
    o.config = config_;
    o.registry.informerInitialBackoff = 20ms;
    o.registry.informerMaxBackoff = 200ms;
    dispatcher_ = std::make_unique<multikueue::Dispatcher>(env_->client("manager"), clock_, o);
    dispatcher_->start(30s);
    integration_ = std::make_unique<integration::IntegrationController>(env_->client("manager"),
                                                                        jobkind::integratedKindsOf(config_), clock_,
                                                                        integration::IntegrationController::Options{});
    integration_->start(30s);
  }
  void stopAdapter() {
    if (integration_) integration_->stop();
    integration_.reset();
    if (dispatcher_) dispatcher_->stop();
    dispatcher_.reset();
  }

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }
  sandbox::Cluster& anyCluster() {
    const int i = pick(0, static_cast<int>(kWorkers.size()));
    return env_->cluster(i == 0 ? "manager" : kWorkers[i - 1]);
  }

  // One random fault somewhere; returns what it did, for the log.
  std::string injectFault() {
    auto& cluster = anyCluster();
    static const std::vector<std::string> verbs{"get", "list", "create", "update", "patch", "delete", "watch"};
    switch (pick(0, 4)) {
      case 0: {
        const int code = std::vector<int>{500, 503, 429, 504}[pick(0, 3)];
        const auto verb = verbs[pick(0, static_cast<int>(verbs.size()) - 1)];
        cluster.faults().failNext(pick(1, 8), code, {.verb = verb}, 0);
        ++counts_["5xx/429 rules"];
        return "fail " + verb + " with " + std::to_string(code) + " on " + cluster.name();
      }
      case 1:
        cluster.faults().setLatency(std::chrono::milliseconds{pick(1, 30)});
        ++counts_["latency phases"];
        return "latency on " + cluster.name();
      case 2:
        cluster.store().closeAllWatches();
        ++counts_["watch drops"];
        return "dropped every watch on " + cluster.name();
      case 3:
        cluster.faults().goneOnNextWatch();
        ++counts_["410s armed"];
        return "410 on the next watch on " + cluster.name();
      default:
        for (const auto& name : std::vector<std::string>{"manager", "worker1", "worker2", "worker3"})
          env_->cluster(name).faults().setLatency(0ms);
        return "latency lifted";
    }
  }

  // The MultiKueueConfigs list `clusters` from now on (OCM rewrites them when a
  // PlacementDecision changes); jobs in flight keep running where they were admitted.
  void setWorkerSet(const std::vector<std::string>& clusters) {
    const sandbox::ResourceRef configs{"kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "", "", ""};
    for (auto config : items(env_->cluster("manager"), configs)) {
      config["spec"]["clusters"] = clusters;
      auto ref = configs;
      ref.name = config.at("metadata").value("name", "");
      env_->cluster("manager").api().update(ref, config);
    }
    ++counts_["worker set changes"];
  }

  static std::string sharedSecret(int i) { return "chaos-secret-" + std::to_string(i % kSharedSecrets); }

  void createJob(int i) {
    const auto name = "chaos-" + std::to_string(i);
    if (i % 2 == 0) {
      env_->cluster("manager").api().create(
          pipelineRuns(),
          json{{"apiVersion", "tekton.dev/v1"},
               {"kind", "PipelineRun"},
               {"metadata", {{"name", name}, {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
               {"spec",
                {{"managedBy", "kueue.x-k8s.io/multikueue"},
                 {"status", "PipelineRunPending"},
                 {"pipelineRef", {{"name", "build"}}},
                 {"workspaces", json::array({{{"name", "git"}, {"secret", {{"secretName", sharedSecret(i)}}}}})},
                 {"taskRunTemplate", {{"serviceAccountName", kServiceAccount}}}}}});
    } else {
      env_->cluster("manager").api().create(workflows(),
                                            json{{"apiVersion", "argoproj.io/v1alpha1"},
                                                 {"kind", "Workflow"},
                                                 {"metadata",
                                                  {{"name", name},
                                                   {"labels",
                                                    {{"kueue.x-k8s.io/queue-name", "user-queue"},
                                                     {"workflows.argoproj.io/controller-instanceid", "multikueue"}}}}},
                                                 {"spec",
                                                  {{"entrypoint", "main"},
                                                   {"suspend", true},
                                                   {"templates", kWorkflowTemplates},
                                                   {"serviceAccountName", kServiceAccount},
                                                   {"imagePullSecrets", json::array({{{"name", sharedSecret(i)}}})}}}});
    }
  }

  // Which worker has held a copy of which job (names -> workers; uids counted apart).
  void recordCopies() {
    for (const auto& worker : kWorkers) {
      for (const auto& ref : {pipelineRuns(), workflows()}) {
        for (const auto& job : items(env_->cluster(worker), ref)) {
          const auto name = job.at("metadata").value("name", "");
          copies_[name].insert(worker);
          uids_.insert(job.at("metadata").value("uid", ""));
        }
      }
      for (const auto& ref : kDependencyRefs)
        for (const auto& object : items(env_->cluster(worker), ref, "kueue.x-k8s.io/multikueue-origin=multikueue"))
          dependencyCopies_.insert(worker + "/" + object.value("kind", ref.plural) + "/" +
                                   object.at("metadata").value("uid", ""));
    }
  }

  std::size_t finishedOnManager() {
    std::size_t done = 0;
    for (const auto& ref : {pipelineRuns(), workflows()})
      for (const auto& job : items(env_->cluster("manager"), ref)) done += finalOutcome(job) == "Succeeded" ? 1 : 0;
    return done;
  }

  std::size_t remoteLeftovers() {
    std::size_t left = 0;
    for (const auto& worker : kWorkers)
      for (const auto& ref : {pipelineRuns(), workflows(), workloads()})
        left += items(env_->cluster(worker), ref, "kueue.x-k8s.io/multikueue-origin=multikueue").size();
    // No dependency copy of ours either (syncDependencies): each goes with the last job using it.
    for (const auto& worker : kWorkers)
      for (const auto& ref : kDependencyRefs)
        left += items(env_->cluster(worker), ref, "kueue.x-k8s.io/multikueue-origin=multikueue").size();
    return left;
  }

  // At a quiet point every job running on a worker has an admitted, unevicted Workload (the
  // prebuilt one its copy names): a running job without one is a job resumed or left running
  // without quota.
  void checkRunningJobsAreAdmitted() {
    for (const auto& worker : kWorkers) {
      auto& cluster = env_->cluster(worker);
      for (const auto& ref : {pipelineRuns(), workflows()}) {
        for (const auto& job : items(cluster, ref)) {
          const json spec = job.value("spec", json::object());
          const bool suspended = spec.value("suspend", false) || spec.value("status", "") == "PipelineRunPending";
          if (suspended || !finalOutcome(job).empty() || job.at("metadata").contains("deletionTimestamp")) continue;
          const auto name = job.at("metadata").value("name", "");
          const auto wlName = job.at("metadata")
                                  .value("annotations", json::object())
                                  .value("kueue.x-k8s.io/prebuilt-workload-name", "");
          std::optional<json> wl;
          try {
            wl = cluster.api().get({"kueue.x-k8s.io", "v1beta2", "workloads", "default", wlName, ""});
          } catch (const std::exception&) {
          }
          const bool admitted = wl && api::isAdmitted(*wl) && !api::isEvicted(*wl);
          if (!admitted && !api::isFinished(wl.value_or(json::object()))) {
            ++violations_;
            ADD_FAILURE() << worker << ": job " << name << " runs without an admitted Workload " << wlName;
          }
        }
      }
    }
  }

  // Kueue's promise while pods run (issue 44): at a quiet point every job copy whose pods still
  // run, suspended or not (a suspended Workflow's pod runs until its step ends), has a Workload
  // that holds quota, and what the Workloads holding quota on a worker reserve fits its
  // ClusterQueue's nominal quota, per flavor and resource (no cohort here: nothing to borrow).
  void checkRunningPodsHoldQuota() {
    for (const auto& worker : kWorkers) {
      auto& cluster = env_->cluster(worker);
      std::set<std::string> holding;
      std::map<std::pair<std::string, std::string>, std::int64_t> reserved;
      for (const auto& wl : items(cluster, workloads())) {
        if (!api::hasQuotaReservation(wl)) continue;
        holding.insert(wl.at("metadata").value("name", ""));
        for (const auto& assignment : wl.at("status").at("admission").at("podSetAssignments")) {
          const json usage = assignment.value("resourceUsage", json::object());
          for (const auto& [resource, value] : usage.items())
            reserved[{assignment.at("flavors").value(resource, ""), resource}] += milli(value);
        }
      }
      const auto cq = cluster.api().get({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""});
      for (const auto& group : cq.at("spec").at("resourceGroups"))
        for (const auto& flavor : group.at("flavors"))
          for (const auto& resource : flavor.at("resources")) {
            const std::pair<std::string, std::string> key{flavor.value("name", ""), resource.value("name", "")};
            const auto& nominal = resource.at("nominalQuota");
            if (key.second == "cpu" && reserved[key] * 4 >= milli(nominal) * 3)
              ++counts_["worker cpu quota seen 3/4 full"];
            if (reserved[key] > milli(nominal)) {
              ++violations_;
              ADD_FAILURE() << worker << ": " << key.first << "/" << key.second << " reserved "
                            << quantity::formatMilli(reserved[key]) << " over its nominal quota " << nominal.dump();
            }
          }
      for (const auto& ref : {pipelineRuns(), workflows()}) {
        for (const auto& job : items(cluster, ref)) {
          if (!podsRun(job)) continue;
          if (job.at("spec").value("suspend", false)) ++counts_["stopped jobs seen with pods running"];
          const auto wlName = job.at("metadata")
                                  .value("annotations", json::object())
                                  .value("kueue.x-k8s.io/prebuilt-workload-name", "");
          if (holding.contains(wlName)) continue;
          ++violations_;
          ADD_FAILURE() << worker << ": job " << job.at("metadata").value("name", "")
                        << " has pods running, its Workload " << wlName << " holds no quota";
        }
      }
    }
  }

  // Kueue deactivates a running job now and then (as an administrator, a requeuing limit or a
  // maximum execution time would): the manager's Workload is evicted, the worker's copy stopped,
  // and the copy's pod runs on to its end, holding quota on both clusters until then. Returns
  // whether a Workflow running on a worker was found.
  bool deactivateARunningWorkflow() {
    auto& manager = env_->cluster("manager").api();
    for (auto wl : items(env_->cluster("manager"), workloads())) {
      const auto worker = api::clusterName(wl);
      const auto owner = wl.at("metadata").value("ownerReferences", json::array());
      if (worker.empty() || owner.empty() || owner[0].value("kind", "") != "Workflow") continue;
      if (!api::isAdmitted(wl) || api::isEvicted(wl) || api::isFinished(wl)) continue;
      const auto name = owner[0].value("name", "");
      if (deactivated_.contains(name)) continue;
      auto ref = workflows();
      ref.name = name;
      std::optional<json> copy;
      try {
        copy = env_->cluster(worker).api().get(ref);
      } catch (const sandbox::ApiError&) {
        continue;
      }
      if (!podsRun(*copy)) continue;
      wl["spec"]["active"] = false;
      try {
        manager.update({"kueue.x-k8s.io", "v1beta2", "workloads", "default", wl.at("metadata").value("name", ""), ""},
                       wl);
      } catch (const sandbox::ApiError&) {
        continue;  // changed since it was listed: another one
      }
      deactivated_[name] = wl.at("metadata").value("name", "");
      ++counts_["running Workflows deactivated"];
      return true;
    }
    return false;
  }
  // A deactivated Workload whose quota is released is activated again: Kueue requeues it.
  void reactivateReleased() {
    auto& manager = env_->cluster("manager").api();
    for (const auto& [job, wlName] : deactivated_) {
      const sandbox::ResourceRef ref{"kueue.x-k8s.io", "v1beta2", "workloads", "default", wlName, ""};
      try {
        auto wl = manager.get(ref);
        if (wl.at("spec").value("active", true) || api::hasQuotaReservation(wl)) continue;
        wl["spec"]["active"] = true;
        manager.update(ref, wl);
      } catch (const sandbox::ApiError&) {
        // Changed since it was read: the next tick looks again.
      }
    }
  }

  // Fake time moves only once the platform is quiet and every reachable worker is connected:
  // otherwise time would race past workerLostTimeout while a reconnect is merely slow.
  void tick() {
    test::eventually(
        [&] {
          if (!env_->kueuesIdle() || (dispatcher_ && !dispatcher_->idle())) return false;
          if (integration_ && !integration_->idle()) return false;
          if (!dispatcher_) return true;
          for (const auto& w : kWorkers)
            if (!env_->cluster(w).unreachable() && !dispatcher_->registry().connected(w)) return false;
          return true;
        },
        10s);
    if (dispatcher_ && env_->kueuesIdle() && dispatcher_->idle() && integration_->idle()) {
      checkRunningJobsAreAdmitted();
      checkRunningPodsHoldQuota();
    }
    reactivateReleased();
    clock_.advance(5s);
    env_->pokeKueues();
    if (dispatcher_) dispatcher_->recheckClock();
    recordCopies();
  }

  unsigned seed_ = 0;
  std::mt19937 random_;
  FakeClock clock_;
  std::unique_ptr<demo::Environment> env_;
  config::Configuration config_;
  std::unique_ptr<multikueue::Dispatcher> dispatcher_;
  std::unique_ptr<integration::IntegrationController> integration_;
  int violations_ = 0;
  std::map<std::string, int> counts_;
  std::map<std::string, std::set<std::string>> copies_;
  std::set<std::string> uids_;
  std::set<std::string> dependencyCopies_;          // worker/kind/uid of every dependency copy seen at a tick
  std::map<std::string, std::string> deactivated_;  // job -> its manager Workload, deactivated once
};

TEST_P(ChaosTest, EveryJobFinishesOnExactlyOneWorkerAndNothingIsLeftBehind) {
  startAdapter();
  int created = 0;
  int round = 0;
  const int restartAt[2] = {kJobs / 3, 2 * kJobs / 3};
  bool workerDown = false;
  while (created < kJobs) {
    ++round;
    const int batch = std::min(pick(kJobs / 30, kJobs / 10), kJobs - created);
    for (int i = 0; i < batch; ++i) createJob(created++);
    for (int f = pick(1, 3); f > 0; --f) injectFault();
    if (!workerDown && round == 3) {
      env_->cluster("worker2").setUnreachable(true);  // down for a few rounds, well under workerLostTimeout
      workerDown = true;
      ++counts_["worker outages"];
    } else if (workerDown && round == 6) {
      env_->cluster("worker2").setUnreachable(false);
    }
    // The worker set changes with jobs in flight: a worker leaves, another, then all are back.
    if (round == 4) setWorkerSet({"worker1", "worker3"});
    if (round == 7) setWorkerSet({"worker2", "worker3"});
    if (round == 9) setWorkerSet(kWorkers);
    if (round % 3 == 2) deactivateARunningWorkflow();
    for (const int at : restartAt) {
      if (created - batch < at && created >= at) {
        stopAdapter();
        tick();
        startAdapter();
        ++counts_["adapter restarts"];
      }
    }
    tick();
  }
  if (workerDown) env_->cluster("worker2").setUnreachable(false);

  // Faults stop; the platform converges: every job finishes, every copy goes.
  for (const auto& name : std::vector<std::string>{"manager", "worker1", "worker2", "worker3"})
    env_->cluster(name).faults().clear();
  const bool converged = test::eventually(
      [&] {
        tick();
        if (finishedOnManager() < static_cast<std::size_t>(kJobs)) return false;
        dispatcher_->collector().collect();
        return remoteLeftovers() == 0;
      },
      std::chrono::minutes{4});

  const auto finished = finishedOnManager();
  std::size_t onOne = 0, onSeveral = 0, onNone = 0, ranOnce = 0, ranOnManager = 0;
  for (int i = 0; i < kJobs; ++i) {
    const auto name = "chaos-" + std::to_string(i);
    const auto it = copies_.find(name);
    const auto n = it == copies_.end() ? 0 : it->second.size();
    const std::string kind = i % 2 == 0 ? "PipelineRun" : "Workflow";
    int starts = 0;
    std::string startsPerWorker;
    for (const auto& worker : kWorkers) {
      const int here = env_->frameworkController(worker, kind)->starts("default/" + name);
      starts += here;
      if (here > 0) startsPerWorker += " " + worker + "=" + std::to_string(here);
    }
    if (deactivated_.contains(name)) {
      // Stopped once while running: its one pod may have ended the Workflow (it never ran
      // again), or it ran again once, possibly on another worker, after its reactivation.
      (n == 1 || n == 2 ? onOne : n == 0 ? onNone : onSeveral)++;
      ranOnce += starts == 1 || starts == 2 ? 1 : 0;
      if (starts != 1 && starts != 2) ADD_FAILURE() << name << " (deactivated once) started:" << startsPerWorker;
      continue;
    }
    (n == 1 ? onOne : n == 0 ? onNone : onSeveral)++;
    ranOnce += starts == 1 ? 1 : 0;
    if (starts != 1) ADD_FAILURE() << name << " started:" << startsPerWorker;
    ranOnManager += env_->frameworkController("manager", kind)->starts("default/" + name) > 0 ? 1 : 0;
  }
  std::printf(
      "chaos dispatcher=%s seed=%u jobs=%d finished_with_final_status=%zu ran_on_one_worker=%zu on_several=%zu "
      "on_none=%zu "
      "started_once=%zu started_on_manager=%zu invariant_violations=%d remote_job_copies_created=%zu "
      "dependency_copies_seen=%zu leftovers=%zu",
      GetParam().c_str(), seed_, kJobs, finished, onOne, onSeveral, onNone, ranOnce, ranOnManager, violations_,
      uids_.size(), dependencyCopies_.size(), remoteLeftovers());
  for (const auto& [what, n] : counts_) std::printf(" %s=%d", what.c_str(), n);
  std::printf("\n");

  EXPECT_TRUE(converged) << "seed " << seed_;
  EXPECT_EQ(finished, static_cast<std::size_t>(kJobs)) << "seed " << seed_;
  EXPECT_EQ(onOne, static_cast<std::size_t>(kJobs)) << "seed " << seed_;
  EXPECT_EQ(ranOnce, static_cast<std::size_t>(kJobs)) << "seed " << seed_ << ": every job started exactly once";
  EXPECT_EQ(ranOnManager, 0u) << "seed " << seed_;
  EXPECT_EQ(violations_, 0) << "seed " << seed_;
  EXPECT_EQ(remoteLeftovers(), 0u) << "seed " << seed_;
  EXPECT_GT(dependencyCopies_.size(), 0u) << "no Secret or ServiceAccount ever travelled: the invariant above says "
                                             "nothing";
  for (const auto& wl : items(env_->cluster("manager"), workloads()))
    EXPECT_TRUE(api::isFinished(wl)) << wl.at("metadata").value("name", "");
}

INSTANTIATE_TEST_SUITE_P(Dispatchers, ChaosTest,
                         ::testing::Values(std::string(config::kDispatcherAllAtOnce),
                                           std::string(config::kDispatcherQuotaAware)),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == config::kDispatcherAllAtOnce ? "AllAtOnce" : "QuotaAware";
                         });

}  // namespace
}  // namespace mka::e2e
