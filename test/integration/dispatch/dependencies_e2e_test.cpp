// End to end: the Secrets and ServiceAccounts a PipelineRun names travel
// to the worker that runs it (syncDependencies) and leave with the last job using them; a worker
// without the job's namespace is named in the check message and an Event, and skipped until the
// namespace appears there.

#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/api/kinds.h"
#include "mka/integration/workload_builder.h"
#include "mka/multikueue/dependencies.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;
using ::testing::HasSubstr;

const api::GroupVersionKind kLocalQueue{"kueue.x-k8s.io", "v1beta2", "LocalQueue"};

json secret(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"type", "Opaque"},
          {"data", {{"token", "Z2l0LXRva2Vu"}}}};
}

json serviceAccount(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}, {"namespace", "default"}}}};
}

// A PipelineRun whose git workspace is the Secret `secretName` and whose tasks run as
// `serviceAccount` ("": the default one).
std::function<void(json&)> naming(const std::string& secretName, const std::string& serviceAccount) {
  return [=](json& job) {
    job["spec"]["workspaces"] = json::array({{{"name", "git"}, {"secret", {{"secretName", secretName}}}}});
    if (!serviceAccount.empty()) job["spec"]["taskRunTemplate"] = {{"serviceAccountName", serviceAccount}};
  };
}

class DependenciesE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
  void setUpSyncing(std::vector<std::string> workers) {
    setUpEnvironment({.workers = std::move(workers), .configure = [](config::Configuration& c) {
                        for (auto& f : c.multiKueue.externalFrameworks)
                          if (f.gvk == kPipelineRun.gvk) f.syncDependencies = true;
                      }});
  }
  std::set<std::string> ownersOn(const std::string& worker, const api::GroupVersionKind& gvk, const std::string& name) {
    const auto object = get(worker, gvk, name);
    return object ? multikueue::dependencyOwners(*object) : std::set<std::string>{};
  }
};

// Done when: a PipelineRun whose workspace names a Secret and whose
// taskRunTemplate.serviceAccountName names a ServiceAccount runs on a worker that had neither;
// both are gone from the worker after the job is cleaned up, and a second job sharing the Secret
// keeps it until it ends too.
TEST_F(DependenciesE2E, ASecretAndServiceAccountTravelWithTheJobAndLeaveWithTheLastUser) {
  setUpSyncing({"worker1"});
  env_->create("manager", secret("git-auth"));
  env_->create("manager", serviceAccount("builder"));
  ASSERT_FALSE(get("worker1", api::kSecretGvk, "git-auth"));
  ASSERT_FALSE(get("worker1", api::kServiceAccountGvk, "builder"));
  startAdapter();

  const auto [first, worker] = runOnAWorker(kPipelineRun, "build-1", naming("git-auth", "builder"));
  ASSERT_EQ(worker, "worker1");
  const auto copied = get(worker, api::kSecretGvk, "git-auth");
  ASSERT_TRUE(copied) << "created before the job's copy, which has started";
  EXPECT_EQ(copied->at("data"), secret("git-auth")["data"]);
  EXPECT_EQ(copied->at("metadata").at("labels").value(std::string(api::kOriginLabel), ""), config_.multiKueue.origin);
  EXPECT_EQ(ownersOn(worker, api::kServiceAccountGvk, "builder"), (std::set<std::string>{first}));

  advance(std::chrono::seconds{5});  // the second job starts 5 s after the first: it ends later
  const auto [second, worker2] = runOnAWorker(kPipelineRun, "build-2", naming("git-auth", ""));
  ASSERT_EQ(worker2, "worker1");
  EXPECT_EQ(ownersOn(worker, api::kSecretGvk, "git-auth"), (std::set<std::string>{first, second}));

  advance(std::chrono::seconds{6});  // the first job's 10 s are over
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", first)); }));
  ASSERT_TRUE(eventually([&] { return !get(worker, api::kServiceAccountGvk, "builder"); }))
      << "the ServiceAccount was the first job's alone";
  ASSERT_TRUE(eventually([&] { return ownersOn(worker, api::kSecretGvk, "git-auth") == std::set{second}; }));
  EXPECT_FALSE(api::isFinished(*workload("manager", second)));

  advance(std::chrono::seconds{10});
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", second)); }));
  ASSERT_TRUE(eventually([&] { return !get(worker, api::kSecretGvk, "git-auth"); })) << "gone with its last user";
  EXPECT_TRUE(get("manager", api::kSecretGvk, "git-auth")) << "the manager's own stays";
}

// A Secret the manager lacks blocks the job with an Event naming it; once it is created there,
// the job runs, with it.
TEST_F(DependenciesE2E, AMissingSecretHoldsTheJobUntilItIsThere) {
  setUpSyncing({"worker1"});
  startAdapter();
  createJob(kPipelineRun, "waits", true, naming("late-secret", ""));
  const auto wl = awaitWorkload(kPipelineRun, "waits");
  ASSERT_TRUE(eventually([&] {
    for (const auto& e : events("waits"))
      if (e.value("reason", "") == multikueue::kEventDependencyMissing &&
          e.value("message", "").find("Secret \"default/late-secret\"") != std::string::npos)
        return true;
    return false;
  })) << "no DependencyMissing Event on the job";
  EXPECT_FALSE(workload("worker1", wl)) << "no copy anywhere while it is missing";
  env_->create("manager", secret("late-secret"));
  ASSERT_TRUE(eventually(
      [&] {
        advance(std::chrono::seconds{1});
        return checkIs(wl, "Ready");
      },
      std::chrono::seconds{60}))
      << checkState(wl).dump();
  EXPECT_TRUE(get("worker1", api::kSecretGvk, "late-secret"));
}

// Done when: a worker missing the namespace gets the message and the job runs on another worker.
TEST_F(DependenciesE2E, AWorkerWithoutTheNamespaceIsNamedAndSkipped) {
  setUpEnvironment({});
  const auto addNamespace = [&](const std::string& cluster) {
    env_->create(cluster, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-a"}}}});
    env_->create(cluster, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                           {"kind", "LocalQueue"},
                           {"metadata", {{"name", "user-queue"}, {"namespace", "team-a"}}},
                           {"spec", {{"clusterQueue", "cluster-queue"}}}});
  };
  addNamespace("manager");
  addNamespace("worker1");
  startAdapter();
  ASSERT_TRUE(settled()) << "both workers connected: each is offered the copy";
  createJob(kPipelineRun, "elsewhere", true, [](json& job) { job["metadata"]["namespace"] = "team-a"; });
  std::string wl;
  ASSERT_TRUE(eventually([&] {
    const auto job = get("manager", kPipelineRun.gvk, "elsewhere", "team-a");
    if (!job) return false;
    wl = integration::workloadName(kPipelineRun.gvk, "elsewhere", job->at("metadata").value("uid", ""));
    return get("manager", api::kWorkloadGvk, wl, "team-a").has_value();
  }));
  const auto managerWorkload = [&] { return get("manager", api::kWorkloadGvk, wl, "team-a"); };
  ASSERT_TRUE(eventually([&] {
    const auto w = managerWorkload();
    return w && api::clusterName(*w) == "worker1";
  })) << managerWorkload()->dump();
  ASSERT_TRUE(eventually([&] {
    for (const auto& e : env_->client("manager").listAll({"", "v1", "Event"}, "team-a"))
      if (e.value("reason", "") == multikueue::kEventNamespaceMissing && e.at("involvedObject").value("name", "") == wl)
        return e.value("type", "") == "Warning" &&
               e.value("message", "").find("Worker \"worker2\" has no namespace \"team-a\"") != std::string::npos;
    return false;
  })) << "no Warning Event naming worker2 and team-a";
  EXPECT_FALSE(get("worker2", api::kWorkloadGvk, wl, "team-a"));
}

// With no worker holding the namespace the check stays Pending and says so; the worker's
// Namespace watch brings the job back when the namespace is created there.
TEST_F(DependenciesE2E, TheJobGoesOnWhenTheNamespaceAppears) {
  setUpEnvironment({.workers = {"worker1"}});
  const auto namespaceAndQueue = [&](const std::string& cluster) {
    env_->create(cluster, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-b"}}}});
    env_->create(cluster, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                           {"kind", "LocalQueue"},
                           {"metadata", {{"name", "user-queue"}, {"namespace", "team-b"}}},
                           {"spec", {{"clusterQueue", "cluster-queue"}}}});
  };
  namespaceAndQueue("manager");
  startAdapter();
  ASSERT_TRUE(settled());
  createJob(kPipelineRun, "later", true, [](json& job) { job["metadata"]["namespace"] = "team-b"; });
  std::string wl;
  ASSERT_TRUE(eventually([&] {
    const auto job = get("manager", kPipelineRun.gvk, "later", "team-b");
    if (!job) return false;
    wl = integration::workloadName(kPipelineRun.gvk, "later", job->at("metadata").value("uid", ""));
    return get("manager", api::kWorkloadGvk, wl, "team-b").has_value();
  }));
  const auto stateOf = [&] {
    const auto w = get("manager", api::kWorkloadGvk, wl, "team-b");
    const auto* s = w ? api::findCheckState(*w, checkName_) : nullptr;
    return s ? *s : json(nullptr);
  };
  ASSERT_TRUE(eventually([&] {
    const auto s = stateOf();
    return s.is_object() && s.value("state", "") == "Pending" &&
           s.value("message", "") ==
               "Worker \"worker1\" has no namespace \"team-b\": it is skipped for this workload until the "
               "namespace exists there";
  })) << stateOf().dump();
  namespaceAndQueue("worker1");
  ASSERT_TRUE(eventually([&] { return stateOf().value("state", "") == "Ready"; })) << stateOf().dump();
}

}  // namespace
}  // namespace mka::e2e
