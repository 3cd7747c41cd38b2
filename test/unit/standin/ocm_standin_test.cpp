#include "mka/standin/ocm_standin.h"

#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/cluster_api.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"

namespace mka::standin {
namespace {

using nlohmann::json;
using sandbox::ClusterApi;
using sandbox::ObjectStore;
using sandbox::ResourceRef;
using sandbox::ResourceRegistry;

const ResourceRef kPlacements{"cluster.open-cluster-management.io", "v1beta1", "placements", "kueue-system", "", ""};
const ResourceRef kDecisions{
    "cluster.open-cluster-management.io", "v1beta1", "placementdecisions", "kueue-system", "", ""};

class OcmStandInTest : public ::testing::Test {
 protected:
  OcmStandInTest() : api("hub", registry, store, clock) {
    api.create({"", "v1", "namespaces", "", "", ""}, json{{"metadata", {{"name", "kueue-system"}}}});
    for (const auto* file : {"cluster.open-cluster-management.io_placements.yaml",
                             "cluster.open-cluster-management.io_placementdecisions.yaml"})
      api.create({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
                 sandbox::test::fixtureCrd(file));
  }

  void placement(const std::string& name, const json& spec) {
    api.create(kPlacements, {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
                             {"kind", "Placement"},
                             {"metadata", {{"name", name}, {"namespace", "kueue-system"}}},
                             {"spec", spec}});
  }
  // decision object name -> its clusters, for one Placement.
  std::map<std::string, std::vector<std::string>> decisions(const std::string& placement) {
    std::map<std::string, std::vector<std::string>> out;
    const auto list =
        api.list(kDecisions, {.labelSelector = "cluster.open-cluster-management.io/placement=" + placement});
    for (const auto& d : list["items"]) {
      auto& clusters = out[d["metadata"]["name"].get<std::string>()];
      for (const auto& e : d.value("status", json::object()).value("decisions", json::array()))
        clusters.push_back(e["clusterName"]);
    }
    return out;
  }
  json placementStatus(const std::string& name) {
    auto at = kPlacements;
    at.name = name;
    return api.get(at).value("status", json::object());
  }
  static json satisfied(const json& status) {
    for (const auto& c : status.value("conditions", json::array()))
      if (c["type"] == "PlacementSatisfied") return c;
    return nullptr;
  }

  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
};

const std::vector<ManagedClusterInput> kSeedClusters = {
    {"cluster1", {}},
    {"cluster2", {{"accelerator", "nvidia-tesla-t4"}}},
    {"cluster3", {{"accelerator", "nvidia-tesla-t4"}}},
};
const json kStory2Spec = {
    {"clusterSets", {"global"}},
    {"predicates",
     {{{"requiredClusterSelector", {{"labelSelector", {{"matchLabels", {{"accelerator", "nvidia-tesla-t4"}}}}}}}}}}};

struct OcmDecisionCase {
  std::string name;
  json spec;
  std::vector<std::string> clusters;
  std::string reason;
};
std::vector<OcmDecisionCase> ocmDecisionCases() {
  return {
      {"no predicates: every cluster (the seed's story 1)",
       json::object(),
       {"cluster1", "cluster2", "cluster3"},
       "AllDecisionsScheduled"},
      {"matchLabels (the seed's story 2)", kStory2Spec, {"cluster2", "cluster3"}, "AllDecisionsScheduled"},
      {"matchExpressions NotIn",
       {{"predicates",
         {{{"requiredClusterSelector",
            {{"labelSelector",
              {{"matchExpressions",
                {{{"key", "accelerator"}, {"operator", "NotIn"}, {"values", {"nvidia-tesla-t4"}}}}}}}}}}}}},
       {"cluster1"},
       "AllDecisionsScheduled"},
      {"numberOfClusters: the first by name", {{"numberOfClusters", 1}}, {"cluster1"}, "AllDecisionsScheduled"},
      {"more wanted than feasible",
       {{"numberOfClusters", 3}, {"predicates", kStory2Spec["predicates"]}},
       {"cluster2", "cluster3"},
       "NotAllDecisionsScheduled"},
      {"nothing matches: one empty decision",
       {{"predicates",
         {{{"requiredClusterSelector", {{"labelSelector", {{"matchLabels", {{"accelerator", "none"}}}}}}}}}}},
       {},
       "NoManagedClusterMatched"},
  };
}

MKA_TABLE_TEST_F(OcmStandInTest, DecidesWhatTheSchedulerWould, OcmDecisionCase, ocmDecisionCases()) {
  const auto& c = testCase();
  OcmStandIn ocm(api, kSeedClusters, {});
  const std::string name = "p1";
  placement(name, c.spec);
  ocm.sync();
  EXPECT_EQ(decisions(name), (std::map<std::string, std::vector<std::string>>{{name + "-decision-1", c.clusters}}));
  const auto status = placementStatus(name);
  EXPECT_EQ(status["numberOfSelectedClusters"], c.clusters.size());
  EXPECT_EQ(satisfied(status)["reason"], c.reason);
  EXPECT_EQ(status["decisionGroups"][0]["decisions"], json::array({name + "-decision-1"}));
}

TEST_F(OcmStandInTest, DecisionObjectsCarryOcmsLabelsAndOwner) {
  placement("p1", kStory2Spec);
  OcmStandIn ocm(api, kSeedClusters, {});
  ocm.sync();
  auto at = kDecisions;
  at.name = "p1-decision-1";
  const auto d = api.get(at);
  EXPECT_EQ(d["metadata"]["labels"], (json{{"cluster.open-cluster-management.io/placement", "p1"},
                                           {"cluster.open-cluster-management.io/decision-group-index", "0"},
                                           {"cluster.open-cluster-management.io/decision-group-name", ""}}));
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["kind"], "Placement");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["name"], "p1");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(d["status"]["decisions"][0], (json{{"clusterName", "cluster2"}, {"reason", ""}}));
}

TEST_F(OcmStandInTest, RelabelledClusterChangesTheDecisionAndASecondPassWritesNothing) {
  placement("p1", kStory2Spec);
  OcmStandIn ocm(api, kSeedClusters, {});
  ocm.sync();
  auto relabelled = kSeedClusters;
  relabelled[0].labels["accelerator"] = "nvidia-tesla-t4";
  relabelled[2].labels.clear();
  ocm.setClusters(relabelled);
  ocm.sync();
  EXPECT_EQ(decisions("p1"),
            (std::map<std::string, std::vector<std::string>>{{"p1-decision-1", {"cluster1", "cluster2"}}}));
  const auto version = api.list(kDecisions, {})["metadata"]["resourceVersion"];
  ocm.sync();
  EXPECT_EQ(api.list(kDecisions, {})["metadata"]["resourceVersion"], version);
}

TEST_F(OcmStandInTest, AtMostOneHundredDecisionsPerObjectAndSurplusObjectsDeleted) {
  std::vector<ManagedClusterInput> many;
  for (int i = 0; i < 150; ++i) many.push_back({"c" + std::to_string(1000 + i), {}});
  placement("p1", json::object());
  OcmStandIn ocm(api, many, {});
  ocm.sync();
  auto got = decisions("p1");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["p1-decision-1"].size(), 100u);
  EXPECT_EQ(got["p1-decision-2"].size(), 50u);
  many.resize(10);
  ocm.setClusters(many);
  ocm.sync();
  got = decisions("p1");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got["p1-decision-1"].size(), 10u);
}

}  // namespace
}  // namespace mka::standin
