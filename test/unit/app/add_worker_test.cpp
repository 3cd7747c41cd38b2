// The pure parts of add-worker: the names, the worker's objects and their rules, the kubeconfig.
// The commands themselves run against sandbox clusters in
// test/integration/dispatch/add_worker_test.cpp.
#include <gtest/gtest.h>

#include "mka/app/add_worker.h"
#include "mka/common/base64.h"
#include "mka/config/loader.h"
#include "mka/deploy/worker_access.h"
#include "mka/kube/kubeconfig.h"

namespace mka::app {
// Named, not anonymous: the app tests are built as one unity file.
namespace add_worker_test {

using nlohmann::json;

config::Configuration baseConfiguration() {
  auto loaded = config::loadConfigurationFile(std::string(MKA_SOURCE_DIR) + "/manifests/base/config.yaml");
  EXPECT_TRUE(loaded.ok());
  return loaded.ok() ? *loaded.config : config::Configuration{};
}

TEST(AddWorkerNames, FollowTheNamespaceAndTheOrigin) {
  config::Configuration cfg;
  auto names = workerAccessNames(cfg);
  EXPECT_EQ(names.namespace_, "kueue-system");
  EXPECT_EQ(names.serviceAccount, "multikueue-adapter-dispatcher");
  EXPECT_EQ(names.tokenSecret, "multikueue-adapter-dispatcher-token");
  cfg.namespace_ = "kueue";
  cfg.multiKueue.origin = "east";
  names = workerAccessNames(cfg);
  EXPECT_EQ(names.namespace_, "kueue");
  EXPECT_EQ(names.serviceAccount, "multikueue-adapter-dispatcher-east");
  EXPECT_EQ(kubeconfigSecretName("worker1"), "worker1-secret");
}

TEST(AddWorkerObjects, GrantTheDispatchLoopsCallsAndBindThemToTheServiceAccount) {
  const auto objects = workerAccessObjects(baseConfiguration());
  ASSERT_EQ(objects.size(), 4u);
  EXPECT_EQ(objects[0]["kind"], "ServiceAccount");
  EXPECT_EQ(objects[1]["kind"], "ClusterRole");
  const json rules = json::parse(objects[1]["rules"].dump());
  EXPECT_EQ(rules, json::parse(R"([
    {"apiGroups":["kueue.x-k8s.io"],"resources":["workloads"],"verbs":["get","list","watch","create","update","delete"]},
    {"apiGroups":["kueue.x-k8s.io"],"resources":["clusterqueues","localqueues"],"verbs":["list","watch"]},
    {"apiGroups":["kueue.x-k8s.io"],"resources":["workloads/status"],"verbs":["update"]},
    {"apiGroups":["tekton.dev"],"resources":["pipelineruns"],"verbs":["get","list","watch","create","delete"]},
    {"apiGroups":["argoproj.io"],"resources":["workflows"],"verbs":["get","list","watch","create","delete"]},
    {"apiGroups":[""],"resources":["namespaces"],"verbs":["list","watch"]}
  ])"))
      << "no Secrets, ConfigMaps or ServiceAccounts while no kind syncs its dependencies";
  EXPECT_EQ(objects[2]["kind"], "ClusterRoleBinding");
  EXPECT_EQ(objects[2]["roleRef"]["name"], "multikueue-adapter-dispatcher");
  EXPECT_EQ(objects[2]["subjects"][0]["namespace"], "kueue-system");
  EXPECT_EQ(objects[3]["type"], "kubernetes.io/service-account-token");
  EXPECT_EQ(objects[3]["metadata"]["annotations"]["kubernetes.io/service-account.name"],
            "multikueue-adapter-dispatcher");
}

TEST(AddWorkerObjects, EveryRowOfTheWorkerTableHasAReasonAndVerbs) {
  for (const auto& row : deploy::workerAccessTable()) {
    EXPECT_FALSE(row.reason.empty());
    EXPECT_FALSE(row.verbs.empty());
    EXPECT_EQ(row.scope, deploy::Scope::Cluster);
  }
  // Without dispatched kinds only the Workload rows, the queues' row and the namespaces' remain.
  EXPECT_EQ(deploy::workerClusterRoleRules(config::Configuration{}).size(), 4u);
}

TEST(AddWorkerObjects, SecretsConfigMapsAndServiceAccountsAreGrantedOnlyWhenAKindSyncsThem) {
  auto cfg = baseConfiguration();
  const json dependencyRule = json::parse(R"({"apiGroups":[""],"resources":["secrets","configmaps","serviceaccounts"],)"
                                          R"("verbs":["get","list","create","update","delete"]})");
  const auto rulesOf = [](const config::Configuration& c) {
    return json::parse(deploy::workerClusterRoleRules(c).dump());
  };
  for (const auto& rule : rulesOf(cfg)) EXPECT_NE(rule, dependencyRule);
  cfg.multiKueue.externalFrameworks.at(0).syncDependencies = true;
  const auto rules = rulesOf(cfg);
  EXPECT_NE(std::find(rules.begin(), rules.end(), dependencyRule), rules.end()) << rules.dump();
}

TEST(AddWorkerKubeconfig, IsInlineAndPassesTheDispatchersSecurityRules) {
  const auto text = renderKubeconfig({.clusterName = "worker1",
                                      .server = "https://worker1.example.com:6443",
                                      .caPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
                                      .user = "multikueue-adapter-dispatcher",
                                      .token = "abc"});
  EXPECT_EQ(kube::validateKubeconfigSecurity(text), std::nullopt);
  const auto parsed = kube::Kubeconfig::parse(text);
  EXPECT_EQ(parsed.currentContext, "worker1");
  ASSERT_EQ(parsed.users.size(), 1u);
  EXPECT_EQ(parsed.users[0].token, "abc");
  EXPECT_TRUE(parsed.users[0].tokenFile.empty());
  ASSERT_EQ(parsed.clusters.size(), 1u);
  EXPECT_EQ(parsed.clusters[0].server, "https://worker1.example.com:6443");
  EXPECT_TRUE(parsed.clusters[0].certificateAuthority.empty());
  EXPECT_FALSE(parsed.clusters[0].certificateAuthorityData.empty());
}

}  // namespace add_worker_test
}  // namespace mka::app
