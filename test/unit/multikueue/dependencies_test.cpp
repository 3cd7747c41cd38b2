#include "mka/multikueue/dependencies.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/api/kinds.h"
#include "mka/common/json_fields.h"
#include "mka/multikueue/api.h"
#include "sandbox_fixture.h"

namespace mka::multikueue {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const api::GroupVersionKind kWorkflow{"argoproj.io", "v1alpha1", "Workflow"};

jobkind::JobKind kindOf(const api::GroupVersionKind& gvk, bool sync, std::vector<config::DependencyPath> extra = {}) {
  config::ExternalFramework f;
  f.name = gvk.kind + "." + gvk.version + "." + gvk.group;
  f.gvk = gvk;
  f.syncDependencies = sync;
  f.dependencies = std::move(extra);
  return jobkind::JobKind(f);
}

json pipelineRun(const std::string& name, const std::string& secret, const std::string& serviceAccount) {
  return {{"apiVersion", "tekton.dev/v1"},
          {"kind", "PipelineRun"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"managedBy", "kueue.x-k8s.io/multikueue"},
            {"workspaces", json::array({{{"name", "git"}, {"secret", {{"secretName", secret}}}},
                                        {{"name", "cache"}, {"emptyDir", json::object()}}})},
            {"taskRunTemplate", {{"serviceAccountName", serviceAccount}}}}}};
}

json secret(const std::string& name, const std::string& ns = "default", const std::string& type = "Opaque") {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"type", type},
          {"data", {{"token", "c2VjcmV0"}}}};
}

TEST(DependencyPaths, EachItemOfAListIsRead) {
  const json job = {{"spec",
                     {{"workspaces", json::array({{{"secret", {{"secretName", "a"}}}},
                                                  {{"configMap", {{"name", "c"}}}},
                                                  {{"secret", {{"secretName", ""}}}},
                                                  {{"secret", {{"secretName", "b"}}}}})},
                      {"tasks", json::array({{{"volumes", json::array({{{"name", "x"}}, {{"name", "y"}}})}},
                                             {{"volumes", "not a list"}},
                                             {{"volumes", json::array({{{"name", "z"}}})}}})}}}};
  EXPECT_EQ(json_fields::stringsAt(job, "spec.workspaces[*].secret.secretName"), (std::vector<std::string>{"a", "b"}))
      << "an empty name and items without the field give nothing";
  EXPECT_EQ(json_fields::stringsAt(job, "spec.tasks[*].volumes[*].name"), (std::vector<std::string>{"x", "y", "z"}))
      << "lists in lists, and a value that is not a list skipped";
  EXPECT_TRUE(json_fields::stringsAt(job, "spec.workspaces.secret").empty()) << "a list read without [*]";
  EXPECT_TRUE(json_fields::stringsAt(job, "spec.missing[*].name").empty());
}

TEST(DependencyPaths, OnlyTrailingStarBracketsAreAccepted) {
  EXPECT_FALSE(json_fields::listPathProblem("spec.volumes[*].secret.secretName"));
  EXPECT_FALSE(json_fields::listPathProblem("spec.serviceAccountName"));
  EXPECT_TRUE(json_fields::listPathProblem(""));
  EXPECT_TRUE(json_fields::listPathProblem("spec..name"));
  EXPECT_TRUE(json_fields::listPathProblem("spec.volumes[0].name"));
  EXPECT_TRUE(json_fields::listPathProblem("spec.vol[*]umes.name"));
  EXPECT_TRUE(json_fields::listPathProblem("[*]"));
}

TEST(DependencyPaths, APipelineRunNamesItsWorkspaceSecretAndServiceAccountsOnce) {
  auto job = pipelineRun("pr", "git-auth", "builder");
  job["spec"]["taskRunSpecs"] = json::array({{{"pipelineTaskName", "a"}, {"serviceAccountName", "builder"}},
                                             {{"pipelineTaskName", "b"}, {"serviceAccountName", "deployer"}}});
  job["spec"]["workspaces"].push_back({{"name", "conf"}, {"configMap", {{"name", "settings"}}}});
  const auto refs = dependenciesOf(job, kindOf(fixture::kPipelineRun, true));
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0].gvk, api::kSecretGvk);
  EXPECT_EQ(refs[0].name, "git-auth");
  EXPECT_EQ(refs[1].gvk, api::kConfigMapGvk);
  EXPECT_EQ(refs[1].name, "settings");
  EXPECT_EQ(refs[2].gvk, api::kServiceAccountGvk);
  EXPECT_EQ(refs[2].name, "builder");
  EXPECT_EQ(refs[2].path, "spec.taskRunTemplate.serviceAccountName");
  EXPECT_EQ(refs[3].name, "deployer");
}

TEST(DependencyPaths, AWorkflowNamesItsServiceAccountPullSecretsAndVolumes) {
  const json wf = {{"spec",
                    {{"serviceAccountName", "argo-runner"},
                     {"imagePullSecrets", json::array({{{"name", "registry"}}})},
                     {"volumes", json::array({{{"name", "v1"}, {"secret", {{"secretName", "creds"}}}},
                                              {{"name", "v2"}, {"configMap", {{"name", "conf"}}}}})}}}};
  const auto refs = dependenciesOf(wf, kindOf(kWorkflow, true));
  std::vector<std::string> names;
  for (const auto& r : refs) names.push_back(r.gvk.kind + "/" + r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"ServiceAccount/argo-runner", "Secret/registry", "Secret/creds",
                                             "ConfigMap/conf"}));
}

TEST(DependencyPaths, NoneUnlessTheKindSyncsAndExplicitPathsAddToTheProfile) {
  const auto job = pipelineRun("pr", "git-auth", "builder");
  EXPECT_TRUE(dependenciesOf(job, kindOf(fixture::kPipelineRun, false)).empty());
  const api::GroupVersionKind custom{"example.com", "v1", "Build"};
  const json build = {{"spec", {{"credentials", {{"secretName", "deploy-key"}}}}}};
  const auto refs = dependenciesOf(build, kindOf(custom, true, {{"Secret", "spec.credentials.secretName"}}));
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].name, "deploy-key");
}

TEST(DependencyRefusal, AServiceAccountTokenSecretIsNeverCopied) {
  const DependencyRef ref{api::kSecretGvk, "builder-token", "spec.workspaces[*].secret.secretName"};
  const auto token = secret("builder-token", "default", "kubernetes.io/service-account-token");
  const auto refusal = dependencyRefusal(ref, &token, "default");
  ASSERT_TRUE(refusal);
  EXPECT_THAT(*refusal, HasSubstr("service-account token Secret"));
  const auto plain = secret("builder-token");
  EXPECT_FALSE(dependencyRefusal(ref, &plain, "default"));
}

TEST(DependencyRefusal, AnObjectOverOneMebibyteIsNeverCopied) {
  const DependencyRef ref{api::kConfigMapGvk, "big", "spec.volumes[*].configMap.name"};
  json big = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", "big"}, {"namespace", "default"}}},
              {"data", {{"blob", std::string(kMaxDependencyBytes, 'x')}}}};
  const auto refusal = dependencyRefusal(ref, &big, "default");
  ASSERT_TRUE(refusal);
  EXPECT_THAT(*refusal, HasSubstr("over the 1 MiB"));
  big["data"]["blob"] = std::string(kMaxDependencyBytes - 200, 'x');
  EXPECT_FALSE(dependencyRefusal(ref, &big, "default"));
}

TEST(DependencyRefusal, AnObjectOfAnotherNamespaceIsNeverCopied) {
  const DependencyRef qualified{api::kSecretGvk, "team-b/creds", "spec.volumes[*].secret.secretName"};
  const auto byName = dependencyRefusal(qualified, nullptr, "default");
  ASSERT_TRUE(byName);
  EXPECT_THAT(*byName, HasSubstr("names another namespace"));
  const DependencyRef ref{api::kSecretGvk, "creds", "spec.volumes[*].secret.secretName"};
  const auto other = secret("creds", "team-b");
  const auto byObject = dependencyRefusal(ref, &other, "default");
  ASSERT_TRUE(byObject);
  EXPECT_THAT(*byObject, HasSubstr("another namespace"));
}

TEST(RemoteDependency, CarriesTheContentOriginAndOwnersOnly) {
  auto local = secret("git-auth");
  local["metadata"]["uid"] = "u1";
  local["metadata"]["resourceVersion"] = "7";
  local["metadata"]["ownerReferences"] = json::array({{{"kind", "Thing"}}});
  local["metadata"]["labels"] = {{"team", "a"}};
  local["metadata"]["annotations"] = {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}, {"note", "x"}};
  const auto copy = remoteDependency(local, "mgr", {"wl-b", "wl-a"});
  EXPECT_EQ(copy["metadata"], json::parse(R"({"name": "git-auth", "namespace": "default",
                            "labels": {"team": "a", "kueue.x-k8s.io/multikueue-origin": "mgr"},
                            "annotations": {"note": "x", "multikueue-adapter.dev/dependency-of": "wl-a,wl-b"}})"));
  EXPECT_EQ(copy["type"], "Opaque");
  EXPECT_EQ(copy["data"], local["data"]);
  EXPECT_EQ(dependencyOwners(copy), (std::set<std::string>{"wl-a", "wl-b"}));

  const json sa = {{"apiVersion", "v1"},
                   {"kind", "ServiceAccount"},
                   {"metadata", {{"name", "builder"}, {"namespace", "default"}}},
                   {"secrets", json::array({{{"name", "builder-token-x"}}})},
                   {"imagePullSecrets", json::array({{{"name", "registry"}}})}};
  const auto saCopy = remoteDependency(sa, "mgr", {"wl"});
  EXPECT_FALSE(saCopy.contains("secrets")) << "the worker makes its own token Secrets";
  EXPECT_EQ(saCopy["imagePullSecrets"], sa["imagePullSecrets"]);
  EXPECT_TRUE(sameDependency(saCopy, saCopy));
  auto changed = saCopy;
  changed["imagePullSecrets"] = json::array();
  EXPECT_FALSE(sameDependency(changed, saCopy));
}

// Against sandbox clusters: the manager holds the objects, the worker gets the copies.
class DependencySync : public fixture::MultiKueueSandbox {
 protected:
  DependencySync() {
    workerClient = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(worker1.kubeconfig())), fastClient()));
  }
  void sync(const json& job, const std::string& workload, std::vector<std::string>* notices = nullptr) {
    std::vector<std::string> ignored;
    syncDependencies(*managerClient, *workerClient, "worker1", job, kind, "default", workload, "mgr",
                     notices ? *notices : ignored);
  }
  std::optional<json> onWorker(const api::GroupVersionKind& gvk, const std::string& name) {
    try {
      return workerClient->get(gvk, "default", name);
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return std::nullopt;
      throw;
    }
  }
  json serviceAccount(const std::string& name) {
    return {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}, {"namespace", "default"}}}};
  }

  jobkind::JobKind kind = kindOf(fixture::kPipelineRun, true);
  std::unique_ptr<kube::Client> workerClient;
};

TEST_F(DependencySync, CopiesAreSharedByTheirWorkloadsAndGoWithTheLast) {
  managerClient->create(secret("git-auth"));
  managerClient->create(serviceAccount("builder"));
  managerClient->create(serviceAccount("deployer"));
  sync(pipelineRun("pr-1", "git-auth", "builder"), "wl-1");
  sync(pipelineRun("pr-2", "git-auth", "deployer"), "wl-2");
  const auto shared = onWorker(api::kSecretGvk, "git-auth");
  ASSERT_TRUE(shared);
  EXPECT_TRUE(ownedByOrigin(*shared, "mgr"));
  EXPECT_EQ(dependencyOwners(*shared), (std::set<std::string>{"wl-1", "wl-2"}));
  EXPECT_EQ((*shared)["data"], secret("git-auth")["data"]);
  ASSERT_TRUE(onWorker(api::kServiceAccountGvk, "builder"));

  EXPECT_EQ(releaseDependencies(*workerClient, "default", "wl-1", "mgr"), 1u) << "builder was wl-1's alone";
  EXPECT_FALSE(onWorker(api::kServiceAccountGvk, "builder"));
  const auto kept = onWorker(api::kSecretGvk, "git-auth");
  ASSERT_TRUE(kept) << "wl-2 still uses it";
  EXPECT_EQ(dependencyOwners(*kept), (std::set<std::string>{"wl-2"}));

  EXPECT_EQ(releaseDependencies(*workerClient, "default", "wl-2", "mgr"), 2u);
  EXPECT_FALSE(onWorker(api::kSecretGvk, "git-auth"));
  EXPECT_FALSE(onWorker(api::kServiceAccountGvk, "deployer"));
}

TEST_F(DependencySync, ACopyFollowsTheManagersObject) {
  managerClient->create(secret("git-auth"));
  managerClient->create(serviceAccount("builder"));
  const auto job = pipelineRun("pr-1", "git-auth", "builder");
  sync(job, "wl-1");
  auto changed = managerClient->get(api::kSecretGvk, "default", "git-auth");
  changed["data"] = {{"token", "bmV3"}};
  managerClient->update(changed);
  sync(job, "wl-1");
  EXPECT_EQ((*onWorker(api::kSecretGvk, "git-auth"))["data"], changed["data"]);
}

TEST_F(DependencySync, TheWorkersOwnObjectIsUsedAsItIs) {
  managerClient->create(secret("git-auth"));
  managerClient->create(serviceAccount("builder"));
  auto own = secret("git-auth");
  own["data"] = {{"token", "d29ya2Vy"}};
  workerClient->create(own);
  std::vector<std::string> notices;
  sync(pipelineRun("pr-1", "git-auth", "builder"), "wl-1", &notices);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("worker worker1 has its own Secret \"default/git-auth\""));
  EXPECT_THAT(notices[0], HasSubstr("used as it is"));
  const auto after = onWorker(api::kSecretGvk, "git-auth");
  EXPECT_EQ((*after)["data"], own["data"]) << "never overwritten";
  EXPECT_EQ(releaseDependencies(*workerClient, "default", "wl-1", "mgr"), 1u) << "only the ServiceAccount";
  EXPECT_TRUE(onWorker(api::kSecretGvk, "git-auth")) << "never deleted";
}

TEST_F(DependencySync, RefusedObjectsStayOnTheManager) {
  managerClient->create(secret("builder-token", "default", "kubernetes.io/service-account-token"));
  managerClient->create(serviceAccount("builder"));
  std::vector<std::string> notices;
  sync(pipelineRun("pr-1", "builder-token", "builder"), "wl-1", &notices);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("service-account token"));
  EXPECT_FALSE(onWorker(api::kSecretGvk, "builder-token"));
  EXPECT_TRUE(onWorker(api::kServiceAccountGvk, "builder"));
}

TEST_F(DependencySync, AMissingObjectIsNamedAndNothingOfItIsWritten) {
  managerClient->create(serviceAccount("builder"));
  const auto job = pipelineRun("pr-1", "git-auth", "builder");
  const auto missing = missingDependency(*managerClient, job, kind, "default");
  ASSERT_TRUE(missing);
  EXPECT_THAT(*missing, HasSubstr("Secret \"default/git-auth\" (spec.workspaces[*].secret.secretName)"));
  EXPECT_THAT(*missing, HasSubstr("PipelineRun default/pr-1"));
  EXPECT_THROW(sync(job, "wl-1"), DependencyMissing);
  EXPECT_FALSE(onWorker(api::kSecretGvk, "git-auth"));
  managerClient->create(secret("git-auth"));
  EXPECT_FALSE(missingDependency(*managerClient, job, kind, "default")) << "the job goes on once it is there";
}

TEST_F(DependencySync, TheCollectorDeletesCopiesWithoutALiveOwner) {
  managerClient->create(secret("git-auth"));
  managerClient->create(serviceAccount("builder"));
  sync(pipelineRun("pr-1", "git-auth", "builder"), "wl-1");
  sync(pipelineRun("pr-2", "git-auth", "builder"), "wl-2");
  const auto live = [](const std::string& key) { return key == "default/wl-2"; };
  EXPECT_EQ(collectDependencies(*workerClient, "mgr", live), 0u);
  EXPECT_EQ(dependencyOwners(*onWorker(api::kSecretGvk, "git-auth")), (std::set<std::string>{"wl-2"}))
      << "the dead owner dropped";
  EXPECT_EQ(collectDependencies(*workerClient, "mgr", [](const std::string&) { return false; }), 2u);
  EXPECT_FALSE(onWorker(api::kSecretGvk, "git-auth"));
  EXPECT_FALSE(onWorker(api::kServiceAccountGvk, "builder"));
}

}  // namespace
}  // namespace mka::multikueue
