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
#include "support/table_test.h"

namespace mka::standin {
namespace {

using nlohmann::json;
using sandbox::ApiError;
using sandbox::ClusterApi;
using sandbox::GarbageCollector;
using sandbox::ObjectStore;
using sandbox::ResourceRef;
using sandbox::ResourceRegistry;

// ClusterQueue quotas as the CRD spells them: a resource group covering `covered`, each flavor
// listing one quota per covered resource, in the same order.
json quota(const std::string& resource, const std::string& nominal, const std::string& borrowingLimit = "",
           const std::string& lendingLimit = "") {
  json q = {{"name", resource}, {"nominalQuota", nominal}};
  if (!borrowingLimit.empty()) q["borrowingLimit"] = borrowingLimit;
  if (!lendingLimit.empty()) q["lendingLimit"] = lendingLimit;
  return q;
}
json flavor(const std::string& name, std::vector<json> quotas) {
  return {{"name", name}, {"resources", std::move(quotas)}};
}
json resourceGroup(std::vector<std::string> covered, std::vector<json> flavors) {
  return {{"coveredResources", std::move(covered)}, {"flavors", std::move(flavors)}};
}
// A ClusterQueue spec: its resource groups, optionally a cohort and a preemption policy.
json queueSpec(std::vector<json> groups, const std::string& cohort = "", const std::string& withinClusterQueue = "") {
  json spec = {{"namespaceSelector", json::object()}, {"resourceGroups", std::move(groups)}};
  if (!cohort.empty()) spec["cohortName"] = cohort;
  if (!withinClusterQueue.empty()) spec["preemption"] = {{"withinClusterQueue", withinClusterQueue}};
  return spec;
}
// One CPU flavor "default-flavor" with `nominal` CPUs.
json cpuQueue(const std::string& nominal, const std::string& withinClusterQueue = "") {
  return queueSpec({resourceGroup({"cpu"}, {flavor("default-flavor", {quota("cpu", nominal)})})}, "",
                   withinClusterQueue);
}
// A pod set of `count` pods, each requesting `requests`.
json podSet(const std::string& name, int count, json requests) {
  return {{"name", name}, {"count", count}, {"requests", std::move(requests)}};
}
json cpu(const std::string& amount) { return {{"cpu", amount}}; }

constexpr const char* kMultiKueueGate = "kueue.x-k8s.io/multikueue";

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

  // A ClusterQueue `name` and, in namespace default, LocalQueue `localQueue` pointing to it.
  void createClusterQueue(const std::string& name, json spec, const std::string& localQueue) {
    api.create({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""},
               json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                    {"kind", "ClusterQueue"},
                    {"metadata", {{"name", name}}},
                    {"spec", std::move(spec)}});
    api.create({"kueue.x-k8s.io", "v1beta2", "localqueues", "default", "", ""},
               json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                    {"kind", "LocalQueue"},
                    {"metadata", {{"name", localQueue}}},
                    {"spec", {{"clusterQueue", name}}}});
  }
  json clusterQueue(const std::string& name) {
    return api.get({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", name, ""});
  }

  // A Workload in LocalQueue `queue` with `podSets` (podSet()), as a job integration or the
  // dispatcher creates one; `spec` adds to its spec (priority, preemptionGates).
  void submit(const std::string& name, const std::vector<json>& podSets, json spec = json::object(),
              const std::string& queue = "user-queue") {
    json sets = json::array();
    for (const auto& ps : podSets)
      sets.push_back(
          {{"name", ps["name"]},
           {"count", ps["count"]},
           {"template",
            {{"spec",
              {{"containers",
                {{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", ps["requests"]}}}}}}}}}}});
    spec["queueName"] = queue;
    spec["podSets"] = sets;
    api.create(wlRef(), json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                             {"kind", "Workload"},
                             {"metadata", {{"name", name}}},
                             {"spec", std::move(spec)}});
  }
  // Waits until `wlName` has QuotaReserved `status` and the stand-in has settled.
  void awaitQuotaReserved(const std::string& wlName, const std::string& status) {
    ASSERT_TRUE(eventuallyCondition(wlName, "QuotaReserved", status)) << workload(wlName)->dump();
    ASSERT_TRUE(settled());
  }

  // Plays MultiKueue on the manager: writes the gate's position in status.preemptionGates.
  void setGate(const std::string& wlName, const std::string& position) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      wl["status"]["preemptionGates"] =
          json::array({{{"name", kMultiKueueGate}, {"position", position}, {"lastTransitionTime", api.now()}}});
      return writeStatus(wlName, wl);
    }));
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

  // What the job integration does once the job of a Workload evicted by Kueue has stopped:
  // Requeued=False with the eviction's reason, the reservation released (jobframework step 18).
  void releaseAfterEviction(const std::string& wlName) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      const auto evicted = conditionOf(wl, "Evicted");
      json conditions = json::array();
      for (auto c : wl["status"]["conditions"]) {
        if (c["type"] == "Requeued") continue;
        if (c["type"] == "QuotaReserved") c.update({{"status", "False"}, {"reason", "PendingEvaluation"}});
        if (c["type"] == "Admitted") c.update({{"status", "False"}, {"reason", "NoReservation"}});
        conditions.push_back(c);
      }
      conditions.push_back({{"type", "Requeued"},
                            {"status", "False"},
                            {"reason", evicted["reason"]},
                            {"message", evicted["message"]},
                            {"lastTransitionTime", api.now()}});
      wl["status"]["conditions"] = conditions;
      wl["status"].erase("admission");
      return writeStatus(wlName, wl);
    }));
  }
  // What the job integration writes while waitForPodsReady is on.
  void setPodsReady(const std::string& wlName, const std::string& status, const std::string& reason) {
    ASSERT_TRUE(mka::test::eventually([&] {
      auto wl = api.get(wlRef(wlName));
      auto& conditions = wl["status"]["conditions"];
      for (auto it = conditions.begin(); it != conditions.end(); ++it)
        if ((*it)["type"] == "PodsReady") {
          conditions.erase(it);
          break;
        }
      conditions.push_back({{"type", "PodsReady"},
                            {"status", status},
                            {"reason", reason},
                            {"message", "as the job integration wrote it"},
                            {"lastTransitionTime", api.now()}});
      return writeStatus(wlName, wl);
    }));
  }
  // Moves the clock on and lets the stand-in look at it.
  void advance(std::chrono::seconds by) {
    clock.advance(by);
    kueue->poke();
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
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "DeactivatedDueToAdmissionCheck");
  EXPECT_EQ(conditionOf(wl, "Evicted")["message"],
            "The workload is deactivated due to AdmissionCheck in Rejected state: \"multikueue\" (No multikueue "
            "adapter found)");
  EXPECT_EQ(conditionStatus(wl, "DeactivationTarget"), "") << "Kueue removes it once it has deactivated";
  EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True") << "the job integration's to release";
  EXPECT_EQ(conditionStatus(wl, "Finished"), "");
  EXPECT_EQ(wl["status"]["admissionChecks"][0]["state"], "Pending") << "reset by the eviction, as any";
  EXPECT_EQ(wl["status"]["admissionChecks"][0]["message"], "Reset to Pending after eviction. Previously: Rejected");

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

// ---- quotas ------------------------------------------------------------------------------

// Whether a Workload fits its ClusterQueue, and where. Each case creates its ClusterQueues (the
// first is "cluster-queue", LocalQueue "user-queue"; the others LocalQueue "<name>-queue"),
// has the `held` Workloads reserved first, then submits "wl" to user-queue.
struct QuotaCase {
  std::string name;
  std::vector<std::pair<std::string, json>> clusterQueues;      // name, spec
  std::vector<std::pair<std::string, std::vector<json>>> held;  // LocalQueue, pod sets
  std::vector<json> podSets;
  // Reserved: each pod set's flavors; else pending with `reason` and `message`.
  std::vector<json> flavors;
  std::string reason;
  std::string message;
};

std::vector<QuotaCase> quotaReservationCases() {
  const json spotThenOnDemand =
      queueSpec({resourceGroup({"cpu", "memory"}, {flavor("spot", {quota("cpu", "4"), quota("memory", "8Gi")}),
                                                   flavor("on-demand", {quota("cpu", "4"), quota("memory", "8Gi")})})});
  const json gpus = queueSpec({resourceGroup({"cpu"}, {flavor("default-flavor", {quota("cpu", "8")})}),
                               resourceGroup({"nvidia.com/gpu"}, {flavor("gpu", {quota("nvidia.com/gpu", "4")})})});
  const auto inCohort = [](const std::string& nominal, const std::string& borrowingLimit = "",
                           const std::string& lendingLimit = "") {
    return queueSpec(
        {resourceGroup({"cpu"}, {flavor("default-flavor", {quota("cpu", nominal, borrowingLimit, lendingLimit)})})},
        "team");
  };
  return {
      {"fits in the first flavor",
       {{"cluster-queue", spotThenOnDemand}},
       {},
       {podSet("main", 3, {{"cpu", "1"}, {"memory", "1Gi"}})},
       {{{"cpu", "spot"}, {"memory", "spot"}}}},
      {"falls to the second flavor when the first is used up",
       {{"cluster-queue", spotThenOnDemand}},
       {{"user-queue", {podSet("main", 1, cpu("3"))}}},
       {podSet("main", 2, cpu("1"))},
       {{{"cpu", "on-demand"}}}},
      {"every resource of a group in one flavor",
       {{"cluster-queue", spotThenOnDemand}},
       {{"user-queue", {podSet("main", 1, {{"cpu", "1"}, {"memory", "7Gi"}})}}},
       {podSet("main", 1, {{"cpu", "1"}, {"memory", "2Gi"}})},
       {{{"cpu", "on-demand"}, {"memory", "on-demand"}}}},
      {"does not fit anywhere: waits for quota",
       {{"cluster-queue", gpus}},
       {{"user-queue", {podSet("main", 2, {{"nvidia.com/gpu", "1"}})}}},
       {podSet("main", 4, {{"cpu", "500m"}, {"nvidia.com/gpu", "1"}})},
       {},
       "WaitingForQuota",
       "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor gpu, 2 more "
       "needed"},
      {"each flavor tried says what it lacks",
       {{"cluster-queue", spotThenOnDemand}},
       {{"user-queue", {podSet("main", 1, cpu("3"))}}, {"user-queue", {podSet("main", 1, cpu("3500m"))}}},
       {podSet("main", 1, cpu("2"))},
       {},
       "WaitingForQuota",
       "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 1500m more "
       "needed, insufficient unused quota for cpu in flavor spot, 1 more needed"},
      {"more than the ClusterQueue could ever give",
       {{"cluster-queue", gpus}},
       {},
       {podSet("main", 8, {{"nvidia.com/gpu", "1"}})},
       {},
       "ExceedsMaxQuota",
       "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor gpu, previously "
       "considered podsets requests (0) + current podset request (8) > maximum capacity (4)"},
      {"a resource no resource group covers",
       {{"cluster-queue", gpus}},
       {},
       {podSet("main", 1, {{"cpu", "1"}, {"example.com/fpga", "1"}})},
       {},
       "NoMatchingFlavor",
       "couldn't assign flavors to pod set main: resource example.com/fpga unavailable in ClusterQueue"},
      {"borrows the cohort's unused quota",
       {{"cluster-queue", inCohort("2")}, {"lender", inCohort("4")}},
       {{"lender-queue", {podSet("main", 1, cpu("1"))}}},
       {podSet("main", 5, cpu("1"))},
       {{{"cpu", "default-flavor"}}}},
      {"borrows no more than the cohort has unused",
       {{"cluster-queue", inCohort("2")}, {"lender", inCohort("4")}},
       {{"lender-queue", {podSet("main", 1, cpu("2"))}}},
       {podSet("main", 5, cpu("1"))},
       {},
       "WaitingForQuota",
       "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 more "
       "needed"},
      {"borrowingLimit caps the borrowing",
       {{"cluster-queue", inCohort("2", "1")}, {"lender", inCohort("4")}},
       {},
       {podSet("main", 4, cpu("1"))},
       {},
       "ExceedsMaxQuota",
       "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously "
       "considered podsets requests (0) + current podset request (4) > maximum capacity (3)"},
      {"lendingLimit caps what a lender lends",
       {{"cluster-queue", inCohort("2")}, {"lender", inCohort("4", "", "1")}},
       {},
       {podSet("main", 4, cpu("1"))},
       {},
       "ExceedsMaxQuota",
       "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously "
       "considered podsets requests (0) + current podset request (4) > maximum capacity (3)"},
      {"all pod sets fit together",
       {{"cluster-queue", cpuQueue("4")}},
       {},
       {podSet("driver", 1, cpu("1")), podSet("workers", 2, cpu("1500m"))},
       {{{"cpu", "default-flavor"}}, {{"cpu", "default-flavor"}}}},
      {"all pod sets or none",
       {{"cluster-queue", cpuQueue("4")}},
       {},
       {podSet("driver", 1, cpu("2")), podSet("workers", 2, cpu("1500m"))},
       {},
       "ExceedsMaxQuota",
       "couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor default-flavor, previously "
       "considered podsets requests (2) + current podset request (3) > maximum capacity (4)"},
  };
}

MKA_TABLE_TEST_F(KueueStandInTest, QuotaReservation, QuotaCase, quotaReservationCases()) {
  const QuotaCase& c = testCase();
  for (std::size_t i = 0; i < c.clusterQueues.size(); ++i) {
    const auto& [name, spec] = c.clusterQueues[i];
    createClusterQueue(name, spec, i == 0 ? "user-queue" : name + "-queue");
  }
  start(worker());
  for (std::size_t i = 0; i < c.held.size(); ++i) {
    const auto name = "held-" + std::to_string(i);
    submit(name, c.held[i].second, json::object(), c.held[i].first);
    awaitQuotaReserved(name, "True");
  }
  submit("wl", c.podSets);
  if (!c.flavors.empty()) {
    awaitQuotaReserved("wl", "True");
    const auto wl = *workload("wl");
    const auto& assignments = wl["status"]["admission"]["podSetAssignments"];
    ASSERT_EQ(assignments.size(), c.flavors.size());
    for (std::size_t i = 0; i < c.flavors.size(); ++i) EXPECT_EQ(assignments[i]["flavors"], c.flavors[i]) << i;
    EXPECT_EQ(conditionStatus(wl, "Admitted"), "True");
    return;
  }
  awaitQuotaReserved("wl", "False");
  const auto wl = *workload("wl");
  EXPECT_EQ(conditionOf(wl, "QuotaReserved")["reason"], c.reason);
  EXPECT_EQ(conditionOf(wl, "QuotaReserved")["message"], c.message);
  EXPECT_EQ(conditionOf(wl, "Admitted")["reason"], "NoReservation");
  EXPECT_FALSE(wl["status"].contains("admission"));
  EXPECT_EQ(kueue->admittedCount(), c.held.size()) << "nothing of the pending Workload is held";
}

// A pending Workload is reconsidered whenever quota is released, however it is released.
enum class Release { Finished, Deleted, EvictedAndReleased, QuotaRaised };
struct ReleaseCase {
  std::string name;
  Release release;
};

std::vector<ReleaseCase> releaseCases() {
  return {{"the holder finishes", Release::Finished},
          {"the holder is deleted", Release::Deleted},
          {"the holder is evicted and its reservation released", Release::EvictedAndReleased},
          {"the ClusterQueue's quota grows", Release::QuotaRaised}};
}

MKA_TABLE_TEST_F(KueueStandInTest, ReleasedQuotaAdmitsThePendingWorkload, ReleaseCase, releaseCases()) {
  const ReleaseCase& c = testCase();
  createClusterQueue("cluster-queue", cpuQueue("2"), "user-queue");
  auto options = worker();
  options.readmitDelay = std::chrono::minutes{1};  // the evicted holder does not take its room back
  start(options);
  submit("holder", {podSet("main", 1, cpu("2"))});
  awaitQuotaReserved("holder", "True");
  submit("waiting", {podSet("main", 1, cpu("1"))});
  awaitQuotaReserved("waiting", "False");
  EXPECT_EQ(conditionOf(*workload("waiting"), "QuotaReserved")["message"],
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 "
            "more needed");

  switch (c.release) {
    case Release::Finished: finishExternally("holder"); break;
    case Release::Deleted: api.remove(wlRef("holder")); break;
    case Release::EvictedAndReleased:
      kueue->evict("default", "holder");
      ASSERT_TRUE(settled());
      EXPECT_EQ(conditionStatus(*workload("waiting"), "QuotaReserved"), "False") << "evicted, not yet released";
      releaseReservation("holder");
      break;
    case Release::QuotaRaised:
      ASSERT_TRUE(mka::test::eventually([&] {
        auto cq = clusterQueue("cluster-queue");
        cq["spec"] = cpuQueue("3");
        try {
          api.update({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""}, cq);
          return true;
        } catch (const ApiError& e) {
          if (e.code() == 409) return false;  // the stand-in wrote its status in between
          throw;
        }
      }));
      break;
  }
  awaitQuotaReserved("waiting", "True");
  EXPECT_EQ(conditionStatus(*workload("waiting"), "Admitted"), "True");
}

// Pending Workloads go by priority, then age; one that does not fit does not hold back a
// smaller one behind it (BestEffortFIFO).
TEST_F(KueueStandInTest, PendingWorkloadsGoByPriorityAndDoNotBlockSmallerOnes) {
  createClusterQueue("cluster-queue", cpuQueue("3"), "user-queue");
  submit("a-low", {podSet("main", 1, cpu("1"))});
  submit("b-mid", {podSet("main", 1, cpu("2"))}, {{"priority", 5}});
  submit("c-high", {podSet("main", 1, cpu("2"))}, {{"priority", 10}});
  start(worker());  // all three pending at its first look
  awaitQuotaReserved("c-high", "True");
  awaitQuotaReserved("a-low", "True");
  const auto mid = *workload("b-mid");
  EXPECT_EQ(conditionStatus(mid, "QuotaReserved"), "False") << "ahead of c-high by age (name), not by priority";
  // What it lacks now that a-low holds the last CPU (every pass says it anew).
  EXPECT_EQ(conditionOf(mid, "QuotaReserved")["message"],
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 2 "
            "more needed");
  EXPECT_EQ(kueue->admittedCount(), 2u);
}

// The ClusterQueue's status as Kueue's ClusterQueue controller writes it: what its Workloads
// reserve and what the admitted ones use, per flavor and resource, with what is borrowed from
// the cohort, and the counts. On a manager the difference shows: a reservation waits for its
// admission check.
TEST_F(KueueStandInTest, ClusterQueueStatusCountsReservationsAndUsage) {
  setCheckActive("multikueue", "True");
  auto spec = queueSpec(
      {resourceGroup({"cpu", "memory"}, {flavor("default-flavor", {quota("cpu", "2"), quota("memory", "4Gi")})})},
      "team");
  spec["admissionChecksStrategy"]["admissionChecks"] = json::array({{{"name", "multikueue"}}});
  createClusterQueue("cluster-queue", spec, "user-queue");
  createClusterQueue("other",
                     queueSpec({resourceGroup({"cpu", "memory"},
                                              {flavor("default-flavor", {quota("cpu", "4"), quota("memory", "4Gi")})})},
                               "team"),
                     "other-queue");
  start({});
  submit("wl-a", {podSet("main", 1, {{"cpu", "2500m"}, {"memory", "1536Mi"}})});
  submit("wl-b", {podSet("main", 1, cpu("4"))});
  awaitQuotaReserved("wl-a", "True");
  awaitQuotaReserved("wl-b", "False");
  EXPECT_EQ(conditionOf(*workload("wl-b"), "QuotaReserved")["message"],
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, "
            "500m more needed");

  const auto flavorUsage = [](const std::string& cpu, const std::string& borrowed, const std::string& memory) {
    return json::array({{{"name", "default-flavor"},
                         {"resources",
                          {{{"name", "cpu"}, {"total", cpu}, {"borrowed", borrowed}},
                           {{"name", "memory"}, {"total", memory}, {"borrowed", "0"}}}}}});
  };
  auto cq = clusterQueue("cluster-queue");
  EXPECT_EQ(cq["status"]["flavorsReservation"], flavorUsage("2500m", "500m", "1536Mi"));
  EXPECT_EQ(cq["status"]["flavorsUsage"], flavorUsage("0", "0", "0")) << "reserved, not admitted";
  EXPECT_EQ(cq["status"]["pendingWorkloads"], 1);
  EXPECT_EQ(cq["status"]["reservingWorkloads"], 1);
  EXPECT_EQ(cq["status"]["admittedWorkloads"], 0);
  EXPECT_FALSE(managedBy(cq, "kueue-standin", "status").is_null()) << "written through /status";
  const auto other = clusterQueue("other");
  EXPECT_EQ(other["status"]["flavorsReservation"], flavorUsage("0", "0", "0")) << "the lender's own usage";
  EXPECT_EQ(other["status"]["pendingWorkloads"], 0);

  setCheck("wl-a", "multikueue", "Ready", "");
  ASSERT_TRUE(eventuallyCondition("wl-a", "Admitted", "True"));
  ASSERT_TRUE(settled());
  cq = clusterQueue("cluster-queue");
  EXPECT_EQ(cq["status"]["flavorsUsage"], flavorUsage("2500m", "500m", "1536Mi"));
  EXPECT_EQ(cq["status"]["admittedWorkloads"], 1);

  finishExternally("wl-a");
  awaitQuotaReserved("wl-b", "True");
  cq = clusterQueue("cluster-queue");
  EXPECT_EQ(cq["status"]["flavorsReservation"], flavorUsage("4", "2", "0"));
  EXPECT_EQ(cq["status"]["flavorsUsage"], flavorUsage("0", "0", "0"));
  EXPECT_EQ(cq["status"]["pendingWorkloads"], 0);
  EXPECT_EQ(cq["status"]["reservingWorkloads"], 1);
  EXPECT_EQ(cq["status"]["admittedWorkloads"], 0);
}

// ---- preemption --------------------------------------------------------------------------

// A Workload that fits only if lower-priority ones go: whether it preempts them. The
// ClusterQueue has 3 CPUs, held by "low-1" (priority 1), "low-2" (priority 2) and "peer"
// (priority 10, as the preemptor); the preemptor asks for 1 CPU.
struct PreemptionCase {
  std::string name;
  std::string withinClusterQueue;
  json gates;         // spec.preemptionGates
  std::string gate;   // its status position, "" for no status entry
  bool orchestrated;  // Options::orchestratedPreemption
  // Expected: the preemptor's QuotaReserved reason and message; whether low-1 is preempted.
  std::string reason;
  std::string message;
  bool preempts;
};

std::vector<PreemptionCase> preemptionCases() {
  const json gate = json::array({{{"name", kMultiKueueGate}}});
  const std::string lacks =
      "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 more "
      "needed";
  const std::string gated = "Workload requires preemption, but it's gated";
  return {
      {"LowerPriority evicts the lowest-priority Workload", "LowerPriority", nullptr, "", true,
       "WaitingForPreemptedWorkloads", lacks + ". Pending the preemption of 1 workload(s)", true},
      {"Never preempts nobody", "Never", nullptr, "", true, "WaitingForQuota", lacks, false},
      {"a gate without a status entry is closed", "LowerPriority", gate, "", true, "AdmissionGated", gated, false},
      {"a Closed gate blocks", "LowerPriority", gate, "Closed", true, "AdmissionGated", gated, false},
      {"an Open gate lets it preempt", "LowerPriority", gate, "Open", true, "WaitingForPreemptedWorkloads",
       lacks + ". Pending the preemption of 1 workload(s)", true},
      {"without orchestrated preemption gates are ignored", "LowerPriority", gate, "Closed", false,
       "WaitingForPreemptedWorkloads", lacks + ". Pending the preemption of 1 workload(s)", true},
  };
}

MKA_TABLE_TEST_F(KueueStandInTest, PreemptionWithinTheClusterQueue, PreemptionCase, preemptionCases()) {
  const PreemptionCase& c = testCase();
  createClusterQueue("cluster-queue", cpuQueue("3", c.withinClusterQueue), "user-queue");
  auto options = worker();
  options.orchestratedPreemption = c.orchestrated;
  start(options);
  for (const auto& [name, priority] : {std::pair{"low-1", 1}, std::pair{"low-2", 2}, std::pair{"peer", 10}}) {
    submit(name, {podSet("main", 1, cpu("1"))}, {{"priority", priority}});
    awaitQuotaReserved(name, "True");
  }
  // The preemptor appears with its gates' positions already written, as the stand-in would see
  // a Workload the dispatcher created and MultiKueue then gated or opened.
  kueue->stop();
  json spec = {{"priority", 10}};
  if (!c.gates.is_null()) spec["preemptionGates"] = c.gates;
  submit("preemptor", {podSet("main", 1, cpu("1"))}, spec);
  if (!c.gate.empty()) setGate("preemptor", c.gate);
  kueue->start();
  awaitQuotaReserved("preemptor", "False");

  const auto preemptor = *workload("preemptor");
  EXPECT_EQ(conditionOf(preemptor, "QuotaReserved")["reason"], c.reason);
  EXPECT_EQ(conditionOf(preemptor, "QuotaReserved")["message"], c.message);
  const auto blocked = conditionOf(preemptor, "BlockedOnPreemptionGates");
  if (c.reason == "AdmissionGated") {
    EXPECT_EQ(blocked["status"], "True");
    EXPECT_EQ(blocked["reason"], "PreemptionGated");
    EXPECT_EQ(blocked["message"], c.message);
  } else {
    EXPECT_TRUE(blocked.is_null());
  }
  const auto low = *workload("low-1");
  if (c.preempts) {
    const auto message =
        "Preempted to accommodate a workload (UID: " + preemptor["metadata"]["uid"].get<std::string>() +
        ", JobUID: UNKNOWN) due to prioritization in the ClusterQueue; preemptor path: "
        "/cluster-queue; preemptee path: /cluster-queue";
    EXPECT_EQ(conditionStatus(low, "Evicted"), "True");
    EXPECT_EQ(conditionOf(low, "Evicted")["reason"], "Preempted");
    EXPECT_EQ(conditionOf(low, "Evicted")["message"], message);
    EXPECT_EQ(conditionStatus(low, "Preempted"), "True");
    EXPECT_EQ(conditionOf(low, "Preempted")["reason"], "InClusterQueue");
    EXPECT_EQ(conditionOf(low, "Preempted")["message"], message);
    EXPECT_EQ(conditionStatus(low, "QuotaReserved"), "True") << "the job integration's to release";
  } else {
    EXPECT_EQ(conditionStatus(low, "Evicted"), "");
  }
  EXPECT_EQ(conditionStatus(*workload("low-2"), "Evicted"), "") << "one eviction is enough";
  EXPECT_EQ(conditionStatus(*workload("peer"), "Evicted"), "") << "not of lower priority";
}

// MultiKueue's orchestrated preemption on a worker (KEP-8303): a gated Workload says it needs to
// preempt and waits; once the manager opens its gate it preempts, and when its victim's
// reservation is released it is reserved, no longer blocked.
TEST_F(KueueStandInTest, AGatedWorkloadPreemptsOnceItsGateOpens) {
  createClusterQueue("cluster-queue", cpuQueue("1", "LowerPriority"), "user-queue");
  start(worker());
  submit("low", {podSet("main", 1, cpu("1"))});
  awaitQuotaReserved("low", "True");
  submit("high", {podSet("main", 1, cpu("1"))},
         {{"priority", 10}, {"preemptionGates", json::array({{{"name", kMultiKueueGate}}})}});
  awaitQuotaReserved("high", "False");
  ASSERT_TRUE(eventuallyCondition("high", "BlockedOnPreemptionGates", "True"));
  ASSERT_TRUE(settled());
  EXPECT_EQ(conditionOf(*workload("high"), "QuotaReserved")["reason"], "AdmissionGated");
  EXPECT_EQ(conditionStatus(*workload("low"), "Evicted"), "") << "gated: no preemption";

  setGate("high", "Open");
  ASSERT_TRUE(eventuallyCondition("low", "Evicted", "True"));
  ASSERT_TRUE(settled());
  auto high = *workload("high");
  EXPECT_EQ(conditionOf(high, "QuotaReserved")["reason"], "WaitingForPreemptedWorkloads");
  EXPECT_EQ(conditionStatus(high, "BlockedOnPreemptionGates"), "True") << "Kueue lifts it on reservation";

  releaseReservation("low");
  awaitQuotaReserved("high", "True");
  high = *workload("high");
  const auto blocked = conditionOf(high, "BlockedOnPreemptionGates");
  EXPECT_EQ(blocked["status"], "False");
  EXPECT_EQ(blocked["reason"], "QuotaReserved");
  EXPECT_EQ(blocked["message"], "Previously: Workload requires preemption, but it's gated");
  EXPECT_EQ(high["status"]["preemptionGates"][0]["position"], "Open") << "closed again only by an eviction";
  const auto low = *workload("low");
  EXPECT_EQ(conditionOf(low, "QuotaReserved")["reason"], "WaitingForQuota") << "no one of lower priority to preempt";
}

// ---- waitForPodsReady (Kueue's core workload controller) ------------------------------------

struct PodsReadyTimeoutCase {
  std::string name;
  KueueStandIn::WaitForPodsReady settings;
  std::vector<int> backoffs;  // seconds, of each PodsReadyTimeout eviction in turn
  bool deactivatedAtLast = false;
};

std::vector<PodsReadyTimeoutCase> podsReadyTimeoutCases() {
  using std::chrono::seconds;
  return {
      {"the backoff doubles from its base, then the limit deactivates",
       {seconds{60}, std::nullopt, 10, 3600, 3},
       {10, 20, 40},
       true},
      {"the backoff is capped by its maximum", {seconds{60}, std::nullopt, 10, 25, 3}, {10, 20, 25}, true},
      {"a limit of 0 deactivates at the first timeout", {seconds{60}, std::nullopt, 10, 3600, 0}, {}, true},
      {"no limit: requeued again and again", {seconds{60}, std::nullopt, 60, 3600, std::nullopt}, {60, 120, 240}},
  };
}

// An admitted Workload that never becomes PodsReady (nothing writes the condition) is evicted
// `timeout` after its admission with Kueue's reason, message and requeue state, reserved again
// only at requeueAt, and deactivated once the requeuing limit is exceeded.
MKA_TABLE_TEST_F(KueueStandInTest, PodsReadyTimeout, PodsReadyTimeoutCase, podsReadyTimeoutCases()) {
  const auto& c = testCase();
  auto options = worker();
  options.waitForPodsReady = c.settings;
  createQueues({});
  start(options);
  createWorkload("wl-1", json::object(), json::array());
  ASSERT_TRUE(eventuallyCondition("wl-1", "Admitted", "True"));
  const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(c.settings.timeout);
  for (std::size_t i = 0; i < c.backoffs.size(); ++i) {
    SCOPED_TRACE("eviction " + std::to_string(i + 1));
    ASSERT_TRUE(settled());
    advance(timeout - std::chrono::seconds{1});
    ASSERT_TRUE(settled());
    EXPECT_NE(conditionStatus(*workload("wl-1"), "Evicted"), "True") << "not timed out yet";
    advance(std::chrono::seconds{1});
    ASSERT_TRUE(eventuallyCondition("wl-1", "Evicted", "True"));
    ASSERT_TRUE(settled());
    auto wl = *workload("wl-1");
    EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "PodsReadyTimeout");
    EXPECT_EQ(conditionOf(wl, "Evicted")["message"], "Exceeded the PodsReady timeout default/wl-1");
    EXPECT_EQ(wl["status"]["requeueState"]["count"], i + 1);
    const auto backoff = std::chrono::seconds{c.backoffs[i]};
    EXPECT_EQ(wl["status"]["requeueState"]["requeueAt"], toRfc3339(clock.now() + backoff));
    EXPECT_EQ(conditionStatus(wl, "QuotaReserved"), "True") << "the job integration's to release";

    releaseAfterEviction("wl-1");
    advance(backoff - std::chrono::seconds{1});
    ASSERT_TRUE(settled());
    EXPECT_EQ(conditionStatus(*workload("wl-1"), "QuotaReserved"), "False") << "before requeueAt";
    advance(std::chrono::seconds{1});
    ASSERT_TRUE(eventuallyCondition("wl-1", "Admitted", "True")) << "at requeueAt";
    ASSERT_TRUE(settled());
    wl = *workload("wl-1");
    EXPECT_EQ(conditionOf(wl, "Requeued")["status"], "True");
    EXPECT_EQ(conditionOf(wl, "Requeued")["reason"], "BackoffFinished");
    EXPECT_EQ(conditionOf(wl, "Requeued")["message"], "The workload backoff was finished");
    EXPECT_FALSE(wl["status"]["requeueState"].contains("requeueAt"));
    EXPECT_EQ(wl["status"]["requeueState"]["count"], i + 1);
  }
  ASSERT_TRUE(settled());
  advance(timeout);
  if (!c.deactivatedAtLast) {
    ASSERT_TRUE(eventuallyCondition("wl-1", "Evicted", "True"));
    ASSERT_TRUE(settled());
    EXPECT_EQ(conditionOf(*workload("wl-1"), "Evicted")["reason"], "PodsReadyTimeout");
    return;
  }
  ASSERT_TRUE(eventuallyCondition("wl-1", "Evicted", "True"));
  ASSERT_TRUE(settled());
  const auto wl = *workload("wl-1");
  EXPECT_EQ(wl["spec"]["active"], false);
  EXPECT_EQ(conditionStatus(wl, "DeactivationTarget"), "") << "removed once it has deactivated";
  EXPECT_EQ(conditionOf(wl, "Evicted")["reason"], "DeactivatedDueToRequeuingLimitExceeded");
  EXPECT_EQ(conditionOf(wl, "Evicted")["message"],
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries");
  EXPECT_FALSE(wl["status"].contains("requeueState")) << "cleared on deactivation";
}

struct PodsReadyClockCase {
  std::string name;
  std::optional<std::chrono::seconds> recoveryTimeout;
  std::string status, reason;       // the PodsReady condition written 10s after admission
  std::optional<int> evictedAfter;  // seconds after that write; nullopt: never
};

std::vector<PodsReadyClockCase> podsReadyClockCases() {
  using std::chrono::seconds;
  return {
      {"ready: no timeout", std::nullopt, "True", "Started", std::nullopt},
      {"recovered: no timeout", std::nullopt, "True", "Recovered", std::nullopt},
      {"waiting for the start: timed from the admission", std::nullopt, "False", "WaitForStart", 50},
      {"recovering: recoveryTimeout from PodsReady's transition", seconds{30}, "False", "WaitForRecovery", 30},
      {"recovering, no recoveryTimeout: the timeout from PodsReady's transition", std::nullopt, "False",
       "WaitForRecovery", 60},
      {"recovering with recoveryTimeout 0s: never", seconds{0}, "False", "WaitForRecovery", std::nullopt},
  };
}

// Which clock the timeout runs on: from the Admitted transition while the pods have not started,
// from PodsReady's transition while they recover; none while PodsReady is True.
MKA_TABLE_TEST_F(KueueStandInTest, PodsReadyTimeoutClock, PodsReadyClockCase, podsReadyClockCases()) {
  const auto& c = testCase();
  auto options = worker();
  options.waitForPodsReady = KueueStandIn::WaitForPodsReady{std::chrono::seconds{60}, c.recoveryTimeout};
  createQueues({});
  start(options);
  createWorkload("wl-1", json::object(), json::array());
  ASSERT_TRUE(eventuallyCondition("wl-1", "Admitted", "True"));
  ASSERT_TRUE(settled());
  advance(std::chrono::seconds{10});
  setPodsReady("wl-1", c.status, c.reason);
  ASSERT_TRUE(settled());
  if (!c.evictedAfter) {
    advance(std::chrono::hours{2});
    ASSERT_TRUE(settled());
    EXPECT_NE(conditionStatus(*workload("wl-1"), "Evicted"), "True");
    return;
  }
  advance(std::chrono::seconds{*c.evictedAfter - 1});
  ASSERT_TRUE(settled());
  EXPECT_NE(conditionStatus(*workload("wl-1"), "Evicted"), "True") << "a second early";
  advance(std::chrono::seconds{1});
  ASSERT_TRUE(eventuallyCondition("wl-1", "Evicted", "True"));
  EXPECT_EQ(conditionOf(*workload("wl-1"), "Evicted")["reason"], "PodsReadyTimeout");
}

}  // namespace
}  // namespace mka::standin
