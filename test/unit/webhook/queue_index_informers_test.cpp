// The informer-fed queue index against the sandbox (never a mock of the client).
#include "mka/webhook/queue_index_informers.h"

#include <gtest/gtest.h>

#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/crd_loader.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

const std::vector<std::string> kControllers = {"kueue.x-k8s.io/multikueue"};

// Kueue's CRDs as an older Kueue serves them: `version` only.
void installKueueCrds(sandbox::Cluster& cluster, const std::string& version) {
  for (const char* file : {"kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_clusterqueues.yaml",
                           "kueue.x-k8s.io_admissionchecks.yaml"}) {
    auto crd = sandbox::loadCrdFile(std::filesystem::path(MKA_FIXTURES_DIR) / "crds" / file).at(0);
    json versions = json::array();
    for (auto v : crd["spec"]["versions"]) {
      if (v["name"] != version) continue;
      v["storage"] = true;
      versions.push_back(v);
    }
    crd["spec"]["versions"] = versions;
    crd["spec"].erase("conversion");
    cluster.api().create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""}, crd);
  }
}

class QueueIndexInformersTest : public ::testing::TestWithParam<std::string> {
 protected:
  QueueIndexInformersTest() : cluster(sandbox.addCluster({.name = "manager"})) {
    installKueueCrds(cluster, GetParam());
    client = std::make_unique<kube::Client>(
        std::make_shared<kube::RestClient>(kube::restConfigFor(kube::Kubeconfig::parse(cluster.kubeconfig()))));
  }
  void create(const std::string& plural, const std::string& ns, json object) {
    cluster.api().create({"kueue.x-k8s.io", GetParam(), plural, ns, "", ""}, std::move(object));
  }
  QueueLookup::Result lookup(const std::string& queue) { return index.lookup("team", queue, kControllers).result; }

  sandbox::Sandbox sandbox;
  sandbox::Cluster& cluster;
  std::unique_ptr<kube::Client> client;
  InMemoryQueueIndex index;
};

TEST_P(QueueIndexInformersTest, FollowsQueuesOfTheVersionTheClusterServes) {
  const bool v1beta1 = GetParam() == "v1beta1";
  create("admissionchecks", "", {{"metadata", {{"name", "mk"}}}, {"spec", {{"controllerName", kControllers[0]}}}});
  // v1beta1 names checks in spec.admissionChecks; both versions have admissionChecksStrategy.
  const json strategy = {{"admissionChecks", json::array({json{{"name", "mk"}}})}};
  const json spec =
      v1beta1 ? json{{"admissionChecks", json::array({"mk"})}} : json{{"admissionChecksStrategy", strategy}};
  create("clusterqueues", "", {{"metadata", {{"name", "cq"}}}, {"spec", spec}});
  cluster.api().create({"", "v1", "namespaces", "", "", ""}, {{"metadata", {{"name", "team"}}}});
  create("localqueues", "team", {{"metadata", {{"name", "q"}}}, {"spec", {{"clusterQueue", "cq"}}}});

  QueueIndexInformers informers(*client, index);
  EXPECT_FALSE(informers.hasSynced());
  informers.start();
  ASSERT_TRUE(test::eventually([&] { return informers.hasSynced(); }));
  EXPECT_EQ(informers.kueueVersion(), GetParam());
  EXPECT_EQ(lookup("q"), QueueLookup::Result::MultiKueue);

  cluster.api().remove({"kueue.x-k8s.io", GetParam(), "localqueues", "team", "q", ""});
  EXPECT_TRUE(test::eventually([&] { return lookup("q") == QueueLookup::Result::LocalQueueNotFound; }));
  create("localqueues", "team", {{"metadata", {{"name", "elsewhere"}}}, {"spec", {{"clusterQueue", "missing"}}}});
  EXPECT_TRUE(test::eventually([&] { return lookup("elsewhere") == QueueLookup::Result::ClusterQueueNotFound; }));
  informers.stop();
}

INSTANTIATE_TEST_SUITE_P(KueueVersions, QueueIndexInformersTest, ::testing::Values("v1beta2", "v1beta1"));

TEST(QueueIndexInformers, ReadsAdmissionChecksFromBothFields) {
  json cq = {
      {"spec",
       {{"admissionChecks", {"a"}},
        {"admissionChecksStrategy", {{"admissionChecks", json::array({{{"name", "b"}, {"onFlavors", {"x"}}}})}}}}}};
  EXPECT_EQ(clusterQueueAdmissionChecks(cq), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(clusterQueueAdmissionChecks(json::object()).empty());
}

}  // namespace
}  // namespace mka::webhook
