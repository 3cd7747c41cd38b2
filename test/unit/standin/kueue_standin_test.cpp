#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

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

// One emulated cluster (API, store, garbage collector) with Kueue's, Tekton's and Argo's CRDs,
// and a stand-in started per test with the options the test wants. The tests play the job
// integration themselves where Kueue's core needs one: they create the Workloads and release a
// reservation after an eviction.
class KueueStandInTest : public ::testing::Test {
 protected:
  KueueStandInTest() : api("test", registry, store, clock), gc(api) {
    api.setGarbageCollector(&gc);
    gc.start();
    api.create({"", "v1", "namespaces", "", "", ""}, json{{"metadata", {{"name", "default"}}}});
    for (const auto* file :
         {"kueue.x-k8s.io_workloads.yaml", "kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_clusterqueues.yaml",
          "kueue.x-k8s.io_admissionchecks.yaml", "tekton.dev_pipelineruns.yaml", "argoproj.io_workflows.minimal.yaml"})
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

  // The ClusterQueue lists `checks`; each is created Active (as the adapter's admission check
  // controller leaves a usable one) unless `checksActive` is false.
  void createQueues(const std::vector<std::string>& checks, bool checksActive = true) {
    if (checksActive)
      for (const auto& c : checks) setCheckActive(c, "True");
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

  // Creates AdmissionCheck `name` if missing and writes its Active condition (no condition for
  // an empty status), as the controller named in it would.
  void setCheckActive(const std::string& name, const std::string& status) {
    const ResourceRef ref{"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", name, ""};
    json check;
    try {
      check = api.get(ref);
    } catch (const ApiError& e) {
      if (e.code() != 404) throw;
      check = *api.create({"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", "", ""},
                          json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                               {"kind", "AdmissionCheck"},
                               {"metadata", {{"name", name}}},
                               {"spec", {{"controllerName", "kueue.x-k8s.io/multikueue"}}}});
    }
    if (status.empty()) return;
    check["status"]["conditions"] = json::array({{{"type", "Active"},
                                                  {"status", status},
                                                  {"reason", status == "True" ? "Active" : "BadConfig"},
                                                  {"message", "set by the test"},
                                                  {"lastTransitionTime", api.now()}}});
    api.update({"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", name, "status"}, check);
  }

  json createWorkflow(const std::string& name, json labels) {
    return *api.create(wfRef(), json{{"apiVersion", "argoproj.io/v1alpha1"},
                                     {"kind", "Workflow"},
                                     {"metadata", {{"name", name}, {"labels", labels}}},
                                     {"spec", {{"entrypoint", "main"}}}});
  }
  json createPipelineRun(const std::string& name, json labels, json annotations = json::object()) {
    return *api.create(prRef(), json{{"apiVersion", "tekton.dev/v1"},
                                     {"kind", "PipelineRun"},
                                     {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
                                     {"spec", {{"pipelineRef", {{"name", "build"}}}}}});
  }

  // What a job integration creates on the manager for a queued job (the stand-in makes none).
  void createManagerWorkload(const std::string& name) {
    createWorkload(name, json::object(), json::array({"kueue.x-k8s.io/resource-in-use"}));
  }
  // What the dispatcher creates on a worker: a clone of the manager's Workload.
  void createRemoteWorkload(const std::string& name) {
    createWorkload(name, {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}}, json::array());
  }
  void createWorkload(const std::string& name, const json& labels, const json& finalizers) {
    api.create(wlRef(),
               json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                    {"kind", "Workload"},
                    {"metadata", {{"name", name}, {"labels", labels}, {"finalizers", finalizers}}},
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
      return writeStatus(wlName, wl);
    }));
  }

  // Writes `wl`'s status as read; false when someone wrote in between (409: read again).
  bool writeStatus(const std::string& wlName, const json& wl) {
    try {
      api.update(wlRef(wlName, "status"), wl);
      return true;
    } catch (const ApiError& e) {
      if (e.code() == 409) return false;
      throw;
    }
  }

  // What the job integration does once an evicted Workload's job has stopped
  // (UnsetQuotaReservationWithCondition): QuotaReserved=False, Admitted=False, admission removed.
  void releaseReservation(const std::string& wlName) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      for (auto& c : wl["status"]["conditions"]) {
        if (c["type"] == "QuotaReserved") c.update({{"status", "False"}, {"reason", "Pending"}});
        if (c["type"] == "Admitted") c.update({{"status", "False"}, {"reason", "NoReservation"}});
      }
      wl["status"].erase("admission");
      return writeStatus(wlName, wl);
    }));
  }

  // Someone else (the job integration, or the dispatcher copying the worker's result) marks the
  // Workload finished.
  void finishExternally(const std::string& wlName) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      wl["status"]["conditions"].push_back({{"type", "Finished"},
                                            {"status", "True"},
                                            {"reason", "Succeeded"},
                                            {"message", "done elsewhere"},
                                            {"lastTransitionTime", api.now()}});
      return writeStatus(wlName, wl);
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

// Kueue's core as it treats kinds it does not integrate: a queued job gets no Workload and is
// never read or written, on a manager as on a worker (where a job naming a prebuilt Workload is
// not adopted, and its Workload is neither run nor finished).
TEST_F(KueueStandInTest, NeverCreatesAWorkloadForAJobNorTouchesTheJob) {
  createQueues({});
  start({});
  const auto workflow = createWorkflow("flow", {{"kueue.x-k8s.io/queue-name", "user-queue"}});
  const auto pipelineRun = createPipelineRun("build", {{"kueue.x-k8s.io/queue-name", "user-queue"}});
  ASSERT_TRUE(settled());
  EXPECT_THAT(api.list(wlRef(), {})["items"], ::testing::IsEmpty()) << "Workloads are the job integration's";
  EXPECT_EQ(api.get(wfRef("flow")), workflow);
  EXPECT_EQ(api.get(prRef("build")), pipelineRun);
  kueue->stop();

  start(worker());
  createRemoteWorkload("wl-p");
  const auto prebuilt = createPipelineRun("run", json::object(), {{"kueue.x-k8s.io/prebuilt-workload-name", "wl-p"}});
  ASSERT_TRUE(eventuallyCondition("wl-p", "Admitted", "True"));
  clock.advance(std::chrono::hours{1});
  kueue->poke();
  ASSERT_TRUE(settled());
  const auto wl = *workload("wl-p");
  EXPECT_FALSE(wl["metadata"].contains("ownerReferences")) << "not adopted by its job";
  EXPECT_FALSE(wl["metadata"]["labels"].contains("kueue.x-k8s.io/job-uid"));
  EXPECT_EQ(conditionStatus(wl, "Finished"), "");
  EXPECT_EQ(api.get(prRef("run")), prebuilt) << "no running or final status";
  EXPECT_EQ(api.get(wfRef("flow")), workflow);
}

// The resource-in-use finalizer is the job integration's: a deleted Workload keeps it, and the
// stand-in no longer counts or touches the Workload.
TEST_F(KueueStandInTest, LeavesTheFinalizerOfADeletedWorkload) {
  createQueues({});
  start({});
  createManagerWorkload("wl-d");
  ASSERT_TRUE(eventuallyCondition("wl-d", "QuotaReserved", "True"));
  EXPECT_EQ(kueue->admittedCount(), 1u);
  api.remove(wlRef("wl-d"));
  ASSERT_TRUE(settled());
  const auto wl = workload("wl-d");
  ASSERT_TRUE(wl.has_value()) << "held by its finalizer";
  EXPECT_TRUE(wl->at("metadata").contains("deletionTimestamp"));
  EXPECT_EQ(wl->at("metadata").at("finalizers"), json({"kueue.x-k8s.io/resource-in-use"}));
  EXPECT_EQ(kueue->admittedCount(), 0u) << "a Workload being deleted holds no quota";
}

TEST_F(KueueStandInTest, ManagerReservesQuotaWithPendingChecksFromTheClusterQueue) {
  start({});
  createManagerWorkload("wl-1");
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionStatus(*workload("wl-1"), "QuotaReserved"), "") << "no LocalQueue yet: no reservation";
  createQueues({"multikueue", "other"});
  ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True"));
  ASSERT_TRUE(settled());

  const auto wl = *workload("wl-1");
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

// Kueue keeps a ClusterQueue inactive while an AdmissionCheck it lists is missing or not
// Active; its scheduler reserves nothing there and its Workload controller says why. Each step
// leaves the ClusterQueue inactive until the last.
TEST_F(KueueStandInTest, AClusterQueueAdmitsNothingUntilEveryCheckItListsIsActive) {
  struct Case {
    std::string step;
    std::function<void()> act;
    bool reserved;
  };
  createQueues({"multikueue", "other"}, /*checksActive=*/false);
  start({});
  createManagerWorkload("wl-1");
  const std::vector<Case> cases = {
      {"no AdmissionCheck exists", [] {}, false},
      {"both exist, neither has an Active condition",
       [&] {
         setCheckActive("multikueue", "");
         setCheckActive("other", "");
       },
       false},
      {"one is Active=False", [&] { setCheckActive("multikueue", "False"); }, false},
      {"one is Active=True, the other Active=False",
       [&] {
         setCheckActive("multikueue", "True");
         setCheckActive("other", "False");
       },
       false},
      {"both are Active=True", [&] { setCheckActive("other", "True"); }, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.step);
    c.act();
    if (c.reserved) {
      ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True"));
      EXPECT_EQ(workload("wl-1")->at("status").at("admissionChecks").size(), 2u);
      continue;
    }
    ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "False"));
    ASSERT_TRUE(settled());
    const auto wl = *workload("wl-1");
    const auto reserved = conditionOf(wl, "QuotaReserved");
    EXPECT_EQ(reserved["reason"], "Inadmissible");
    EXPECT_EQ(reserved["message"], "ClusterQueue cluster-queue is inactive");
    EXPECT_FALSE(wl["status"].contains("admission"));
    EXPECT_EQ(kueue->admittedCount(), 0u);
  }
}

TEST_F(KueueStandInTest, ManagerAdmitsOnceEveryCheckIsReady) {
  createQueues({"multikueue", "other"});
  start({});
  createManagerWorkload("wl-1");
  ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True"));

  setCheck("wl-1", "multikueue", "Ready", "The workload was admitted on \"worker-1\"");
  ASSERT_TRUE(settled());
  EXPECT_NE(conditionStatus(*workload("wl-1"), "Admitted"), "True") << "one check is still Pending";

  setCheck("wl-1", "other", "Ready", "");
  ASSERT_TRUE(eventuallyCondition("wl-1", "Admitted", "True"));
  EXPECT_EQ(conditionOf(*workload("wl-1"), "Admitted")["reason"], "Admitted");
}

TEST_F(KueueStandInTest, ManagerEvictsOnRetryThenReservesAgainWithChecksReset) {
  createQueues({"multikueue"});
  auto options = KueueStandIn::Options{};
  options.readmitDelay = std::chrono::minutes{1};
  start(options);
  createManagerWorkload("wl-1");
  ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True"));
  setCheck("wl-1", "multikueue", "Ready", "admitted", {{"clusterName", "worker-1"}});
  ASSERT_TRUE(eventuallyCondition("wl-1", "Admitted", "True"));

  setCheck("wl-1", "multikueue", "Retry", "Admitting remote lost");
  ASSERT_TRUE(eventuallyCondition("wl-1", "Evicted", "True"));
  ASSERT_TRUE(settled());
  auto wl = *workload("wl-1");
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "AdmissionCheck");
  EXPECT_EQ(conditionOf(wl, "Evicted")["message"],
            "Evicted due to AdmissionCheck in Retry state: \"multikueue\" (Admitting remote lost)");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True") << "the job integration's to release";
  EXPECT_FALSE(wl["status"].contains("clusterName"));
  const auto& check = wl["status"]["admissionChecks"][0];
  EXPECT_EQ(check["state"], "Pending");
  EXPECT_EQ(check["retryCount"], 1);
  EXPECT_EQ(check["message"], "Reset to Pending after eviction. Previously: Retry");

  releaseReservation("wl-1");
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionStatus(*workload("wl-1"), "QuotaReserved"), "False") << "readmitDelay has not passed";

  clock.advance(std::chrono::seconds{61});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True")) << "re-admission after readmitDelay";
  ASSERT_TRUE(settled());
  wl = *workload("wl-1");
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "False");
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "QuotaReserved");
  EXPECT_EQ(wl["status"]["admissionChecks"][0]["state"], "Pending");
  EXPECT_NE(conditionStatus(wl, "Admitted"), "True");
}

TEST_F(KueueStandInTest, ManagerDeactivatesOnRejected) {
  createQueues({"multikueue"});
  start({});
  createManagerWorkload("wl-1");
  ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True"));
  setCheck("wl-1", "multikueue", "Rejected", "No multikueue adapter found");
  ASSERT_TRUE(eventuallyCondition("wl-1", "Evicted", "True"));
  ASSERT_TRUE(settled());
  const auto wl = *workload("wl-1");
  EXPECT_EQ(wl["spec"]["active"], false);
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "Deactivated");
  EXPECT_EQ(conditionOf(wl, "DeactivationTarget")["message"],
            "AdmissionCheck in Rejected state: \"multikueue\" (No multikueue adapter found)");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True") << "the job integration's to release";
  EXPECT_EQ(conditionStatus(wl, "Finished"), "");
  EXPECT_EQ(wl["status"]["admissionChecks"][0]["state"], "Rejected") << "the dispatcher ignores it from then on";

  releaseReservation("wl-1");
  clock.advance(std::chrono::hours{1});
  kueue->poke();
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionStatus(*workload("wl-1"), "QuotaReserved"), "False") << "an inactive Workload is not reserved";
}

TEST_F(KueueStandInTest, ManagerLeavesAFinishedWorkload) {
  createQueues({"multikueue"});
  start({});
  createManagerWorkload("wl-1");
  ASSERT_TRUE(eventuallyCondition("wl-1", "QuotaReserved", "True"));
  finishExternally("wl-1");
  setCheck("wl-1", "multikueue", "Retry", "late");
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionStatus(*workload("wl-1"), "Evicted"), "");
}

TEST_F(KueueStandInTest, WorkerReservesAndAdmitsAtOnceWithoutChecks) {
  createQueues({});
  start(worker());
  createRemoteWorkload("wl-w");
  ASSERT_TRUE(eventuallyCondition("wl-w", "Admitted", "True"));
  const auto wl = *workload("wl-w");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True");
  EXPECT_EQ(wl["status"]["admission"]["clusterQueue"], "cluster-queue");
  EXPECT_FALSE(wl["status"].contains("admissionChecks")) << "no admission checks on workers";
  EXPECT_EQ(kueue->admittedCount(), 1u);
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
  ASSERT_TRUE(eventuallyCondition("wl-e", "Admitted", "True"));

  kueue->evict("default", "wl-e");
  ASSERT_TRUE(settled());
  auto wl = *workload("wl-e");
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "True");
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "Preempted");
  EXPECT_THROW(kueue->evict("default", "wl-e"), Error) << "being evicted already";

  releaseReservation("wl-e");
  ASSERT_TRUE(settled());
  wl = *workload("wl-e");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "False") << "readmitDelay has not passed";
  EXPECT_EQ(kueue->admittedCount(), 0u);
  EXPECT_THROW(kueue->evict("default", "wl-e"), Error) << "no quota held";

  clock.advance(std::chrono::seconds{61});
  kueue->poke();
  ASSERT_TRUE(eventuallyCondition("wl-e", "Admitted", "True"));
  wl = *workload("wl-e");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True");
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "False");
  EXPECT_EQ(kueue->admittedCount(), 1u);
}

// Eviction leaves the reservation to the job integration (which releases it once the job has
// stopped), and a Workload is reserved again only after that.
TEST_F(KueueStandInTest, EvictionKeepsTheReservationUntilTheIntegrationReleasesIt) {
  createQueues({});
  start(worker());
  createRemoteWorkload("wl-c");
  ASSERT_TRUE(eventuallyCondition("wl-c", "Admitted", "True"));

  kueue->evict("default", "wl-c");
  ASSERT_TRUE(settled());
  const auto wl = *workload("wl-c");
  EXPECT_EQ(conditionStatus(wl, "Evicted"), "True");
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True") << "the integration's to release";
  EXPECT_EQ(conditionStatus(wl, "Admitted"), "True");
  EXPECT_TRUE(wl["status"].contains("admission"));
  EXPECT_EQ(kueue->admittedCount(), 1u);

  releaseReservation("wl-c");
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
