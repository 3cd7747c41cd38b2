#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/common/errors.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/garbage_collector.h"
#include "mka/standin/kueue_standin.h"
#include "support/crd_fixtures.h"
#include "support/eventually.h"

namespace mka::standin {
namespace {

using nlohmann::json;
using sandbox::ApiError;
using sandbox::ClusterApi;
using sandbox::GarbageCollector;
using sandbox::ObjectStore;
using sandbox::ResourceRef;
using sandbox::ResourceRegistry;
using ::testing::MatchesRegex;

const KueueStandIn::JobKind kPipelineRun{"tekton.dev", "v1", "pipelineruns", "PipelineRun"};

// One emulated cluster (API, store, garbage collector) with Kueue's, Tekton's and Argo's CRDs,
// and a stand-in started per test with the options the test wants.
class KueueStandInTest : public ::testing::Test {
 protected:
  KueueStandInTest() : api("test", registry, store, clock), gc(api) {
    api.setGarbageCollector(&gc);
    gc.start();
    api.create({"", "v1", "namespaces", "", "", ""}, json{{"metadata", {{"name", "default"}}}});
    for (const auto* file :
         {"kueue.x-k8s.io_workloads.yaml", "kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_clusterqueues.yaml",
          "tekton.dev_pipelineruns.yaml", "argoproj.io_workflows.minimal.yaml"})
      api.create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
                 sandbox::test::fixtureCrd(file));
  }
  ~KueueStandInTest() override {
    if (kueue) kueue->stop();
    gc.stop();
  }

  void start(KueueStandIn::Options options) {
    options.pollInterval = std::chrono::milliseconds{2};
    kueue = std::make_unique<KueueStandIn>(api, clock, std::move(options));
    kueue->start();
  }
  static KueueStandIn::Options worker() {
    KueueStandIn::Options o;
    o.role = KueueStandIn::Role::Worker;
    o.runTime = std::chrono::seconds{30};
    return o;
  }
  bool settled() {
    return mka::test::eventually([&] { return kueue->idle() && gc.idle(); });
  }

  static ResourceRef wlRef(const std::string& name = "", const std::string& sub = "") {
    return {"kueue.x-k8s.io", "v1beta2", "workloads", "default", name, sub};
  }
  static ResourceRef prRef(const std::string& name = "") {
    return {"tekton.dev", "v1", "pipelineruns", "default", name, ""};
  }
  static ResourceRef wfRef(const std::string& name = "") {
    return {"argoproj.io", "v1alpha1", "workflows", "default", name, ""};
  }

  void createQueues(const std::vector<std::string>& checks) {
    json cq = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
               {"kind", "ClusterQueue"},
               {"metadata", {{"name", "cluster-queue"}}},
               {"spec", {{"namespaceSelector", json::object()}}}};
    for (const auto& c : checks) cq["spec"]["admissionChecksStrategy"]["admissionChecks"].push_back({{"name", c}});
    api.create({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""}, cq);
    api.create({"kueue.x-k8s.io", "v1beta2", "localqueues", "default", "", ""},
               json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                    {"kind", "LocalQueue"},
                    {"metadata", {{"name", "user-queue"}}},
                    {"spec", {{"clusterQueue", "cluster-queue"}}}});
  }

  json createPipelineRun(const std::string& name, json labels, json annotations = json::object()) {
    return *api.create(prRef(), json{{"apiVersion", "tekton.dev/v1"},
                                     {"kind", "PipelineRun"},
                                     {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
                                     {"spec", {{"pipelineRef", {{"name", "build"}}}}}});
  }

  // What the dispatcher creates on a worker: a clone of the manager's Workload.
  void createRemoteWorkload(const std::string& name) {
    api.create(wlRef(),
               json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                    {"kind", "Workload"},
                    {"metadata", {{"name", name}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}}}}},
                    {"spec",
                     {{"queueName", "user-queue"},
                      {"podSets",
                       {{{"name", "main"},
                         {"count", 1},
                         {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}}}}});
  }

  std::optional<json> workload(const std::string& name) {
    try {
      return api.get(wlRef(name));
    } catch (const ApiError& e) {
      if (e.code() == 404) return std::nullopt;
      throw;
    }
  }
  std::string managerWorkloadName(const json& job) {
    return KueueStandIn::workloadNameFor(kPipelineRun, job["metadata"]["name"], job["metadata"]["uid"]);
  }

  static json conditionOf(const json& object, const std::string& type) {
    for (const auto& c : object.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == type) return c;
    return nullptr;
  }
  static std::string conditionStatus(const json& object, const std::string& type) {
    const auto c = conditionOf(object, type);
    return c.is_null() ? "" : c.value("status", "");
  }
  bool eventuallyCondition(const std::string& wlName, const std::string& type, const std::string& status) {
    return mka::test::eventually([&] {
      auto wl = workload(wlName);
      return wl && conditionStatus(*wl, type) == status;
    });
  }

  // Plays the MultiKueue admission check controller: sets `check`'s state through /status
  // with the resourceVersion read, again on a conflict with the stand-in.
  void setCheck(const std::string& wlName, const std::string& check, const std::string& state,
                const std::string& message, const json& extraStatus = json::object()) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      for (auto& c : wl["status"]["admissionChecks"])
        if (c["name"] == check) {
          c["state"] = state;
          c["message"] = message;
          c["lastTransitionTime"] = api.now();
        }
      wl["status"].update(extraStatus);
      try {
        api.update(wlRef(wlName, "status"), wl);
        return true;
      } catch (const ApiError& e) {
        if (e.code() == 409) return false;
        throw;
      }
    }));
  }

  // Someone else (the dispatcher copying the worker's result) marks the Workload finished.
  void finishExternally(const std::string& wlName) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      wl["status"]["conditions"].push_back({{"type", "Finished"},
                                            {"status", "True"},
                                            {"reason", "Succeeded"},
                                            {"message", "done elsewhere"},
                                            {"lastTransitionTime", api.now()}});
      try {
        api.update(wlRef(wlName, "status"), wl);
        return true;
      } catch (const ApiError& e) {
        if (e.code() == 409) return false;
        throw;
      }
    }));
  }

  // The managedFields entry `manager` wrote, or null.
  static json managedBy(const json& object, const std::string& manager, const std::string& subresource) {
    for (const auto& e : object["metadata"].value("managedFields", json::array()))
      if (e.value("manager", "") == manager && e.value("subresource", "") == subresource) return e;
    return nullptr;
  }

  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
  GarbageCollector gc;
  std::unique_ptr<KueueStandIn> kueue;
};

TEST(KueueStandInNames, FollowKueuesShortWorkloadNames) {
  // SHA-1("PipelineRun\ntekton.dev\nbuild\nuid-1") starts with 2c21f.
  EXPECT_EQ(KueueStandIn::workloadNameFor(kPipelineRun, "build", "uid-1"), "pipelinerun-build-2c21f");
  const auto longName = KueueStandIn::workloadNameFor(kPipelineRun, std::string(80, 'x'), "uid-1");
  EXPECT_EQ(longName.size(), 63u);
  EXPECT_THAT(longName, MatchesRegex("pipelinerun-x{45}-[0-9a-f]{5}"));
  EXPECT_NE(KueueStandIn::workloadNameFor(kPipelineRun, "build", "uid-2"), "pipelinerun-build-2c21f")
      << "a recreated job (new uid) gets a new Workload";
}

TEST_F(KueueStandInTest, ManagerCreatesAWorkloadForAQueuedJobOnly) {
  start({});
  const auto queued = createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}});
  createPipelineRun("unqueued", json::object());
  const auto name = managerWorkloadName(queued);
  EXPECT_THAT(name, MatchesRegex("pipelinerun-build-[0-9a-f]{5}"));
  ASSERT_TRUE(mka::test::eventually([&] { return workload(name).has_value(); }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(api.list(wlRef(), {})["items"].size(), 1u) << "no Workload for a job without the queue label";

  const auto wl = *workload(name);
  EXPECT_EQ(wl["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(wl["spec"]["queueName"], "user-queue");
  EXPECT_EQ(wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], queued["metadata"]["uid"]);
  ASSERT_EQ(wl["metadata"]["ownerReferences"].size(), 1u);
  const auto& owner = wl["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["apiVersion"], "tekton.dev/v1");
  EXPECT_EQ(owner["kind"], "PipelineRun");
  EXPECT_EQ(owner["name"], "build");
  EXPECT_EQ(owner["uid"], queued["metadata"]["uid"]);
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(owner["blockOwnerDeletion"], true);
  ASSERT_EQ(wl["spec"]["podSets"].size(), 1u);
  EXPECT_EQ(wl["spec"]["podSets"][0]["name"], "main");
  EXPECT_EQ(wl["spec"]["podSets"][0]["count"], 1);
  EXPECT_FALSE(wl["spec"]["podSets"][0]["template"]["spec"]["containers"].empty());
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "") << "no LocalQueue yet: no reservation";
}

TEST_F(KueueStandInTest, ManagerReservesQuotaWithPendingChecksFromTheClusterQueue) {
  start({});
  const auto name = managerWorkloadName(createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}}));
  ASSERT_TRUE(mka::test::eventually([&] { return workload(name).has_value(); }));
  createQueues({"multikueue", "other"});
  ASSERT_TRUE(eventuallyCondition(name, "QuotaReserved", "True"));
  ASSERT_TRUE(settled());

  const auto wl = *workload(name);
  EXPECT_EQ(wl["status"]["admission"]["clusterQueue"], "cluster-queue");
  EXPECT_EQ(wl["status"]["admission"]["podSetAssignments"][0]["name"], "main");
  EXPECT_EQ(conditionOf(wl, "QuotaReserved")["reason"], "QuotaReserved");
  const auto& checks = wl["status"]["admissionChecks"];
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0]["name"], "multikueue");
  EXPECT_EQ(checks[1]["name"], "other");
  for (const auto& c : checks) {
    EXPECT_EQ(c["state"], "Pending");
    EXPECT_EQ(c["message"], "");
    EXPECT_TRUE(c.contains("lastTransitionTime"));
  }
  EXPECT_NE(conditionStatus(wl, "Admitted"), "True") << "checks are Pending";
  EXPECT_FALSE(managedBy(wl, "kueue-standin", "status").is_null()) << "written through /status";
}

TEST_F(KueueStandInTest, ManagerAdmitsOnceEveryCheckIsReady) {
  createQueues({"multikueue", "other"});
  start({});
  const auto name = managerWorkloadName(createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}}));
  ASSERT_TRUE(eventuallyCondition(name, "QuotaReserved", "True"));

  setCheck(name, "multikueue", "Ready", "The workload was admitted on \"worker-1\"");
  ASSERT_TRUE(settled());
  EXPECT_NE(conditionStatus(*workload(name), "Admitted"), "True") << "one check is still Pending";

  setCheck(name, "other", "Ready", "");
  ASSERT_TRUE(eventuallyCondition(name, "Admitted", "True"));
  EXPECT_EQ(conditionOf(*workload(name), "Admitted")["reason"], "Admitted");
}

TEST_F(KueueStandInTest, ManagerEvictsOnRetryThenReservesAgainWithChecksReset) {
  createQueues({"multikueue"});
  auto options = KueueStandIn::Options{};
  options.readmitDelay = std::chrono::minutes{1};
  start(options);
  const auto name = managerWorkloadName(createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}}));
  ASSERT_TRUE(eventuallyCondition(name, "QuotaReserved", "True"));
  setCheck(name, "multikueue", "Ready", "admitted", {{"clusterName", "worker-1"}});
  ASSERT_TRUE(eventuallyCondition(name, "Admitted", "True"));

  setCheck(name, "multikueue", "Retry", "Admitting remote lost");
  ASSERT_TRUE(eventuallyCondition(name, "Evicted", "True"));
  ASSERT_TRUE(settled());
  auto wl = *workload(name);
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "AdmissionCheck");
  EXPECT_EQ(conditionOf(wl, "Evicted")["message"],
            "Evicted due to AdmissionCheck in Retry state: \"multikueue\" (Admitting remote lost)");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "False");
  EXPECT_EQ(conditionStatus(wl, "Admitted"), "False");
  EXPECT_FALSE(wl["status"].contains("admission"));
  EXPECT_FALSE(wl["status"].contains("clusterName"));
  const auto& check = wl["status"]["admissionChecks"][0];
  EXPECT_EQ(check["state"], "Pending");
  EXPECT_EQ(check["retryCount"], 1);
  EXPECT_EQ(check["message"], "Reset to Pending after eviction. Previously: Retry");

  clock.advance(std::chrono::seconds{61});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition(name, "QuotaReserved", "True")) << "re-admission after readmitDelay";
  ASSERT_TRUE(settled());
  wl = *workload(name);
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "False");
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "QuotaReserved");
  EXPECT_EQ(wl["status"]["admissionChecks"][0]["state"], "Pending");
  EXPECT_NE(conditionStatus(wl, "Admitted"), "True");
}

TEST_F(KueueStandInTest, ManagerDeactivatesOnRejected) {
  createQueues({"multikueue"});
  start({});
  const auto name = managerWorkloadName(createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}}));
  ASSERT_TRUE(eventuallyCondition(name, "QuotaReserved", "True"));
  setCheck(name, "multikueue", "Rejected", "No multikueue adapter found");
  ASSERT_TRUE(eventuallyCondition(name, "Evicted", "True"));
  ASSERT_TRUE(settled());
  const auto wl = *workload(name);
  EXPECT_EQ(wl["spec"]["active"], false);
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "Deactivated");
  EXPECT_EQ(conditionOf(wl, "DeactivationTarget")["message"],
            "AdmissionCheck in Rejected state: \"multikueue\" (No multikueue adapter found)");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "False");
  EXPECT_EQ(conditionStatus(wl, "Finished"), "");
  EXPECT_EQ(wl["status"]["admissionChecks"][0]["state"], "Rejected") << "the dispatcher ignores it from then on";
}

TEST_F(KueueStandInTest, ManagerLeavesAFinishedWorkload) {
  createQueues({"multikueue"});
  start({});
  const auto name = managerWorkloadName(createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}}));
  ASSERT_TRUE(eventuallyCondition(name, "QuotaReserved", "True"));
  finishExternally(name);
  setCheck(name, "multikueue", "Retry", "late");
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionStatus(*workload(name), "Evicted"), "");
}

TEST_F(KueueStandInTest, DeletingTheJobRemovesItsWorkload) {
  start({});
  const auto name = managerWorkloadName(createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}}));
  ASSERT_TRUE(mka::test::eventually([&] { return workload(name).has_value(); }));
  EXPECT_EQ(workload(name)->at("metadata").at("finalizers"), json({"kueue.x-k8s.io/resource-in-use"}));
  api.remove(prRef("build"));
  ASSERT_TRUE(mka::test::eventually([&] { return !workload(name).has_value(); }))
      << "the garbage collector deletes the dependent, the stand-in releases its finalizer";
}

TEST_F(KueueStandInTest, WorkerRunsAPipelineRunThroughTheStatusSubresource) {
  createQueues({});
  start(worker());
  createRemoteWorkload("wl-1");
  ASSERT_TRUE(eventuallyCondition("wl-1", "Admitted", "True"));
  EXPECT_EQ(conditionStatus(*workload("wl-1"), "QuotaReserved"), "True");
  EXPECT_FALSE(workload("wl-1")->at("status").contains("admissionChecks")) << "no admission checks on workers";

  const auto job = createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}},
                                     {{"kueue.x-k8s.io/prebuilt-workload-name", "wl-1"}});
  ASSERT_TRUE(mka::test::eventually([&] {
    const auto succeeded = conditionOf(api.get(prRef("build")), "Succeeded");
    return succeeded.is_object() && succeeded.value("reason", "") == "Running";
  }));
  ASSERT_TRUE(settled());
  auto wl = *workload("wl-1");
  ASSERT_EQ(wl["metadata"]["ownerReferences"].size(), 1u) << "the job adopted its prebuilt Workload";
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], job["metadata"]["uid"]);
  auto pr = api.get(prRef("build"));
  EXPECT_EQ(conditionStatus(pr, "Succeeded"), "Unknown");
  EXPECT_TRUE(pr["status"].contains("startTime"));
  EXPECT_EQ(kueue->runningCount(), 1u);
  EXPECT_NE(conditionStatus(wl, "Finished"), "True") << "the run time has not passed on the clock";

  clock.advance(std::chrono::seconds{31});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition("wl-1", "Finished", "True"));
  ASSERT_TRUE(settled());
  pr = api.get(prRef("build"));
  EXPECT_EQ(conditionStatus(pr, "Succeeded"), "True");
  EXPECT_EQ(conditionOf(pr, "Succeeded")["reason"], "Succeeded");
  EXPECT_TRUE(pr["status"].contains("completionTime"));
  EXPECT_FALSE(managedBy(pr, "kueue-standin", "status").is_null()) << "Tekton status goes through /status";
  EXPECT_EQ(conditionOf(*workload("wl-1"), "Finished")["reason"], "Succeeded");
  EXPECT_EQ(kueue->runningCount(), 0u);
  EXPECT_EQ(kueue->admittedCount(), 0u) << "a finished Workload holds no quota";
}

TEST_F(KueueStandInTest, WorkerRunsAWorkflowThroughTheMainResource) {
  createQueues({});
  start(worker());
  createRemoteWorkload("wl-2");
  // The label spelling of the prebuilt link (Kueue falls back to it without the annotation).
  api.create(wfRef(),
             json{{"apiVersion", "argoproj.io/v1alpha1"},
                  {"kind", "Workflow"},
                  {"metadata", {{"name", "flow"}, {"labels", {{"kueue.x-k8s.io/prebuilt-workload-name", "wl-2"}}}}},
                  {"spec", {{"entrypoint", "main"}}}});
  ASSERT_TRUE(mka::test::eventually(
      [&] { return api.get(wfRef("flow")).value("status", json::object()).value("phase", "") == "Running"; }));
  ASSERT_TRUE(settled());
  EXPECT_TRUE(api.get(wfRef("flow"))["status"].contains("startedAt"));

  clock.advance(std::chrono::seconds{31});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition("wl-2", "Finished", "True"));
  const auto wf = api.get(wfRef("flow"));
  EXPECT_EQ(wf["status"]["phase"], "Succeeded");
  EXPECT_TRUE(wf["status"].contains("finishedAt"));
  EXPECT_FALSE(managedBy(wf, "kueue-standin", "").is_null()) << "Argo has no status subresource";
}

TEST_F(KueueStandInTest, WorkerFailsARunWhenAsked) {
  createQueues({});
  auto options = worker();
  options.runFails = [](const json& job) { return job["metadata"]["name"] == "doomed"; };
  start(options);
  createRemoteWorkload("wl-3");
  createPipelineRun("doomed", json::object(), {{"kueue.x-k8s.io/prebuilt-workload-name", "wl-3"}});
  ASSERT_TRUE(mka::test::eventually([&] { return kueue->runningCount() == 1; }));
  clock.advance(std::chrono::seconds{31});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition("wl-3", "Finished", "True"));
  EXPECT_EQ(conditionOf(*workload("wl-3"), "Finished")["reason"], "Failed");
  const auto pr = api.get(prRef("doomed"));
  EXPECT_EQ(conditionStatus(pr, "Succeeded"), "False");
  EXPECT_EQ(conditionOf(pr, "Succeeded")["reason"], "Failed");
}

TEST_F(KueueStandInTest, WorkerCapacityHoldsTheNextWorkload) {
  createQueues({});
  auto options = worker();
  options.capacity = 1;
  start(options);
  createRemoteWorkload("wl-a");
  ASSERT_TRUE(eventuallyCondition("wl-a", "Admitted", "True"));
  createRemoteWorkload("wl-b");
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionStatus(*workload("wl-b"), "QuotaReserved"), "") << "capacity 1 is taken";
  EXPECT_EQ(kueue->admittedCount(), 1u);

  finishExternally("wl-a");
  ASSERT_TRUE(eventuallyCondition("wl-b", "Admitted", "True")) << "the freed slot goes to the waiting Workload";
  EXPECT_EQ(kueue->admittedCount(), 1u);
}

TEST_F(KueueStandInTest, WorkerEvictsOnDemandAndReadmitsLater) {
  createQueues({});
  auto options = worker();
  options.readmitDelay = std::chrono::minutes{1};
  start(options);
  EXPECT_THROW(kueue->evict("default", "absent"), ApiError);
  createRemoteWorkload("wl-e");
  createPipelineRun("build", json::object(), {{"kueue.x-k8s.io/prebuilt-workload-name", "wl-e"}});
  ASSERT_TRUE(mka::test::eventually([&] { return kueue->runningCount() == 1; }));

  kueue->evict("default", "wl-e");
  ASSERT_TRUE(settled());
  auto wl = *workload("wl-e");
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "True");
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "Preempted");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "False");
  EXPECT_EQ(conditionStatus(wl, "Admitted"), "False");
  EXPECT_FALSE(wl["status"].contains("admission"));
  EXPECT_EQ(kueue->runningCount(), 0u) << "an evicted Workload's job stops";
  EXPECT_EQ(kueue->admittedCount(), 0u);
  EXPECT_THROW(kueue->evict("default", "wl-e"), Error) << "no quota held";

  clock.advance(std::chrono::seconds{61});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition("wl-e", "Admitted", "True"));
  ASSERT_TRUE(mka::test::eventually([&] { return kueue->runningCount() == 1; })) << "the job runs again";
}

// Playing Kueue's core only, eviction leaves the reservation to the job integration (which
// releases it once the job has stopped), and a Workload is reserved again only after that.
TEST_F(KueueStandInTest, CoreOnlyEvictionKeepsTheReservationUntilTheIntegrationReleasesIt) {
  createQueues({});
  auto options = worker();
  options.playsJobIntegration = false;
  start(options);
  createRemoteWorkload("wl-c");
  ASSERT_TRUE(eventuallyCondition("wl-c", "Admitted", "True"));

  kueue->evict("default", "wl-c");
  ASSERT_TRUE(settled());
  auto wl = *workload("wl-c");
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "True");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True") << "the integration's to release";
  EXPECT_TRUE(wl["status"].contains("admission"));
  EXPECT_EQ(kueue->admittedCount(), 1u);
  EXPECT_THROW(kueue->evict("default", "wl-c"), Error) << "being evicted already";

  // What our integration does once the job is inactive (UnsetQuotaReservationWithCondition).
  json status = wl["status"];
  for (auto& c : status["conditions"]) {
    if (c["type"] == "QuotaReserved") c.update({{"status", "False"}, {"reason", "Pending"}});
    if (c["type"] == "Admitted") c.update({{"status", "False"}, {"reason", "NoReservation"}});
  }
  status.erase("admission");
  wl["status"] = status;
  api.update(wlRef("wl-c", "status"), wl);
  ASSERT_TRUE(mka::test::eventually([&] {
    const auto now = *workload("wl-c");
    return conditionStatus(now, "QuotaReserved") == "True" && conditionStatus(now, "Evicted") == "False";
  })) << "reserved again, the eviction kept as history: "
      << workload("wl-c")->dump();
  EXPECT_EQ(conditionOf(*workload("wl-c"), "Evicted")["reason"], "QuotaReserved");
}

// Each resource a pod set requests gets the first flavor of the resource group covering it;
// the usage is the pod's requests (a limit alone counting as the request) times the count.
TEST_F(KueueStandInTest, FlavorsComeFromTheClusterQueuesResourceGroups) {
  createQueues({});
  json cq = api.get({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""});
  cq["spec"]["resourceGroups"] = {
      {{"coveredResources", {"cpu", "memory"}},
       {"flavors",
        {{{"name", "spot"},
          {"resources", {{{"name", "cpu"}, {"nominalQuota", "4"}}, {{"name", "memory"}, {"nominalQuota", "8Gi"}}}}},
         {{"name", "on-demand"},
          {"resources", {{{"name", "cpu"}, {"nominalQuota", "4"}}, {{"name", "memory"}, {"nominalQuota", "8Gi"}}}}}}}},
      {{"coveredResources", {"example.com/gpu"}},
       {"flavors", {{{"name", "a100"}, {"resources", {{{"name", "example.com/gpu"}, {"nominalQuota", 4}}}}}}}}};
  api.update({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""}, cq);
  start(worker());
  api.create(wlRef(),
             json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                  {"kind", "Workload"},
                  {"metadata", {{"name", "wl-f"}}},
                  {"spec",
                   {{"queueName", "user-queue"},
                    {"podSets",
                     {{{"name", "main"},
                       {"count", 3},
                       {"template",
                        {{"spec",
                          {{"containers",
                            {{{"name", "a"},
                              {"image", "busybox"},
                              {"resources", {{"requests", {{"cpu", "250m"}}}, {"limits", {{"example.com/gpu", "1"}}}}}},
                             {{"name", "b"},
                              {"image", "busybox"},
                              {"resources", {{"requests", {{"cpu", "250m"}, {"memory", "1Gi"}}}}}}}}}}}}}}}}}});
  ASSERT_TRUE(eventuallyCondition("wl-f", "QuotaReserved", "True"));
  const auto assignment = workload("wl-f")->at(json::json_pointer("/status/admission/podSetAssignments/0"));
  EXPECT_EQ(assignment["count"], 3);
  EXPECT_EQ(assignment["flavors"], json({{"cpu", "spot"}, {"memory", "spot"}, {"example.com/gpu", "a100"}}));
  EXPECT_EQ(assignment["resourceUsage"], json({{"cpu", "1500m"}, {"memory", "3221225472"}, {"example.com/gpu", "3"}}))
      << "the same quantities as Kueue's (which would spell the memory 3Gi)";
}

}  // namespace
}  // namespace mka::standin
