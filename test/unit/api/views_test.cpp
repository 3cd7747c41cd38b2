// The typed views read the fields the CRDs define, and read a missing or mistyped field as
// empty instead of throwing.
#include "mka/api/views.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::api {
namespace {

using nlohmann::json;

const json kWorkload = json::parse(R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
  "metadata": {"name": "wl", "namespace": "team-a", "uid": "u-1", "resourceVersion": "7", "generation": 3,
               "labels": {"kueue.x-k8s.io/queue-name": "lq"},
               "annotations": {"kueue.x-k8s.io/job-owner-name": "build-42"},
               "ownerReferences": [{"kind": "PipelineRun", "name": "build-42", "controller": true}],
               "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
  "spec": {"queueName": "lq", "active": false, "podSets": [{"name": "main", "count": 2}]},
  "status": {"clusterName": "worker2", "nominatedClusterNames": ["worker1", 7, "worker2"],
             "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2}]},
             "admissionChecks": [{"name": "mk", "state": "Ready"}],
             "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"},
                            {"type": "Finished", "status": "False"}]}})");

TEST(WorkloadViewTest, ReadsTheFieldsTheCrdDefines) {
  const WorkloadView wl(kWorkload);
  EXPECT_EQ(wl.name(), "wl");
  EXPECT_EQ(wl.namespace_(), "team-a");
  EXPECT_EQ(wl.uid(), "u-1");
  EXPECT_EQ(wl.resourceVersion(), "7");
  EXPECT_EQ(wl.generation(), 3);
  EXPECT_FALSE(wl.terminating());
  EXPECT_EQ(wl.label("kueue.x-k8s.io/queue-name"), "lq");
  EXPECT_EQ(wl.annotation("kueue.x-k8s.io/job-owner-name"), "build-42");
  EXPECT_EQ(wl.ownerReferences().size(), 1u);
  EXPECT_EQ(wl.finalizers(), json::array({"kueue.x-k8s.io/resource-in-use"}));
  EXPECT_EQ(wl.queueName(), "lq");
  EXPECT_FALSE(wl.active());
  EXPECT_EQ(wl.podSets().size(), 1u);
  EXPECT_EQ(wl.admittedClusterQueue(), "cq");
  EXPECT_EQ(wl.podSetAssignments().size(), 1u);
  EXPECT_EQ(wl.clusterName(), "worker2");
  EXPECT_EQ(wl.nominatedClusterNames(), (std::vector<std::string>{"worker1", "worker2"}));
  ASSERT_NE(wl.admissionCheck("mk"), nullptr);
  EXPECT_EQ(wl.admissionCheck("mk")->at("state"), "Ready");
  EXPECT_EQ(wl.admissionCheck("other"), nullptr);
  EXPECT_TRUE(wl.quotaReserved());
  EXPECT_TRUE(wl.admitted());
  EXPECT_FALSE(wl.finished());
  EXPECT_FALSE(wl.evicted());
  // No copy: the views point into the object.
  EXPECT_EQ(wl.name().data(), kWorkload["metadata"]["name"].get_ref<const std::string&>().data());
  EXPECT_EQ(&wl.podSets(), &kWorkload["spec"]["podSets"]);
}

struct MistypedWorkload {
  std::string name;  // the object's JSON
  json object;
};
std::vector<MistypedWorkload> mistypedWorkloads() {
  std::vector<MistypedWorkload> cases;
  for (const json& object : {json::object(), json(nullptr), json::parse(R"({"metadata": 1, "spec": [],
        "status": {"admission": "x", "admissionChecks": {}, "conditions": 3, "clusterName": 4}})")})
    cases.push_back({object.dump(), object});
  return cases;
}

MKA_TABLE_TEST(WorkloadViewTest, MissingOrMistypedFieldsReadAsEmpty, MistypedWorkload, mistypedWorkloads()) {
  const WorkloadView wl(testCase().object);
  EXPECT_EQ(wl.name(), "");
  EXPECT_EQ(wl.generation(), 0);
  EXPECT_EQ(wl.label("a"), "");
  EXPECT_TRUE(wl.ownerReferences().empty());
  EXPECT_TRUE(wl.active()) << "spec.active defaults to true";
  EXPECT_TRUE(wl.podSets().empty());
  EXPECT_EQ(wl.admittedClusterQueue(), "");
  EXPECT_EQ(wl.clusterName(), "");
  EXPECT_TRUE(wl.nominatedClusterNames().empty());
  EXPECT_TRUE(wl.admissionChecks().empty());
  EXPECT_FALSE(wl.quotaReserved());
}

TEST(AdmissionCheckViewTest, ControllerNameAndParameters) {
  const json check = json::parse(R"({"metadata": {"name": "ac"}, "spec": {"controllerName": "c",
      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"}}})");
  const AdmissionCheckView view(check);
  EXPECT_EQ(view.controllerName(), "c");
  EXPECT_TRUE(view.hasParameters());
  EXPECT_EQ(view.parametersApiGroup(), "kueue.x-k8s.io");
  EXPECT_EQ(view.parametersKind(), "MultiKueueConfig");
  EXPECT_EQ(view.parametersName(), "cfg");
  EXPECT_FALSE(AdmissionCheckView(json::parse(R"({"spec": {"parameters": null}})")).hasParameters());
  EXPECT_FALSE(AdmissionCheckView(json::object()).hasParameters());
}

TEST(MultiKueueViewsTest, ConfigClustersAndClusterSources) {
  EXPECT_EQ(MultiKueueConfigView(json::parse(R"({"spec": {"clusters": ["w1", 2, "w2"]}})")).clusters(),
            (std::vector<std::string>{"w1", "w2"}));
  const json secret = json::parse(R"({"spec": {"clusterSource": {"kubeConfig": {"location": "w1-secret"}}}})");
  const MultiKueueClusterView bySecret(secret);
  EXPECT_TRUE(bySecret.hasKubeConfig());
  EXPECT_FALSE(bySecret.hasClusterProfileRef());
  EXPECT_EQ(bySecret.kubeConfigLocation(), "w1-secret");
  EXPECT_EQ(bySecret.kubeConfigLocationType(), "") << "unset: Kueue's default (Secret) is the caller's";
  const json profile = json::parse(R"({"spec": {"clusterSource": {"clusterProfileRef": {"name": "w2"}}}})");
  const MultiKueueClusterView byProfile(profile);
  EXPECT_FALSE(byProfile.hasKubeConfig());
  EXPECT_TRUE(byProfile.hasClusterProfileRef());
  EXPECT_EQ(byProfile.clusterProfileName(), "w2");
  EXPECT_FALSE(
      MultiKueueClusterView(json::parse(R"({"spec": {"clusterSource": {"kubeConfig": "x"}}})")).hasKubeConfig());
}

TEST(ClusterQueueViewTest, QuotaAndReservation) {
  const json cq = json::parse(R"({"spec": {"cohortName": "all", "resourceGroups": [{"coveredResources": ["cpu"]}]},
      "status": {"flavorsReservation": [{"name": "default"}], "pendingWorkloads": 4}})");
  const ClusterQueueView view(cq);
  EXPECT_EQ(view.cohort(), "all");
  EXPECT_EQ(view.resourceGroups().size(), 1u);
  EXPECT_EQ(view.flavorsReservation().size(), 1u);
  EXPECT_EQ(view.pendingWorkloads(), 4);
  EXPECT_EQ(ClusterQueueView(json::object()).pendingWorkloads(), 0);
}

TEST(PlacementDecisionViewTest, TheDecidedClusters) {
  const json decision = json::parse(
      R"({"status": {"decisions": [{"clusterName": "c1"}, {"clusterName": ""}, {"reason": "x"}, {"clusterName": "c2"}]}})");
  EXPECT_EQ(PlacementDecisionView(decision).clusterNames(), (std::vector<std::string>{"c1", "c2"}));
}

}  // namespace
}  // namespace mka::api
