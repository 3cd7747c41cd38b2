#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mka/sandbox/resource_registry.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

TEST(VersionPriority, SortsAsKubernetesDocumentsForCrdVersions) {
  // The example of the CRD versioning documentation, shuffled.
  const std::vector<std::string> expected = {"v10",     "v2",        "v1",        "v11beta2", "v10beta3",
                                             "v3beta1", "v12alpha1", "v11alpha2", "foo1",     "foo10"};
  std::vector<std::string> versions = expected;
  std::mt19937 random(42);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(versions.begin(), versions.end(), random);
    std::sort(versions.begin(), versions.end(),
              [](const auto& a, const auto& b) { return compareVersionPriority(a, b) > 0; });
    EXPECT_EQ(versions, expected);
  }
}

struct PriorityCase {
  std::string name;
  std::string a, b;
  int expectedSign;
};

std::vector<PriorityCase> priorityCases() {
  return {
      {"equal", "v1", "v1", 0},
      {"GA beats beta of a higher major", "v1", "v2beta1", 1},
      {"beta beats alpha", "v1beta1", "v1alpha9", 1},
      {"higher major", "v2", "v1", 1},
      {"higher minor", "v1beta2", "v1beta1", 1},
      {"numbers compare as numbers", "v10", "v9", 1},
      {"kube-like beats other names", "v1alpha1", "stable", 1},
      {"other names alphabetically", "alpha", "beta", 1},
      {"a suffix makes it not kube-like", "v1gamma1", "v1alpha1", -1},
      {"v without number is not kube-like", "v", "v1", -1},
      {"beta without number is not kube-like", "v1beta", "v1alpha1", -1},
  };
}

MKA_TABLE_TEST(VersionPriority, ComparesPairs, PriorityCase, priorityCases()) {
  const PriorityCase& c = testCase();
  const int got = compareVersionPriority(c.a, c.b);
  EXPECT_EQ((got > 0) - (got < 0), c.expectedSign);
  const int reverse = compareVersionPriority(c.b, c.a);
  EXPECT_EQ((reverse > 0) - (reverse < 0), -c.expectedSign);
}

TEST(Discovery, ApiVersionsNamesTheServer) {
  const ResourceRegistry registry;
  EXPECT_EQ(registry.apiVersions("127.0.0.1:6443"), json::parse(R"({"kind":"APIVersions","versions":["v1"],
      "serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]})"));
  EXPECT_EQ(registry.apiVersions().at("serverAddressByClientCIDRs")[0].at("serverAddress"), "");
}

json groupEntry(const std::string& group, const std::vector<std::string>& versions) {
  json entry = {{"name", group}, {"versions", json::array()}};
  for (const auto& v : versions) entry["versions"].push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  entry["preferredVersion"] = entry["versions"][0];
  return entry;
}

TEST(Discovery, ListsBuiltinGroupsThenCrdGroupsWithTheirPreferredVersion) {
  ResourceRegistry registry;
  const json builtins =
      json::array({groupEntry("events.k8s.io", {"v1"}), groupEntry("authentication.k8s.io", {"v1"}),
                   groupEntry("authorization.k8s.io", {"v1"}), groupEntry("rbac.authorization.k8s.io", {"v1"}),
                   groupEntry("admissionregistration.k8s.io", {"v1"}), groupEntry("apiextensions.k8s.io", {"v1"}),
                   groupEntry("scheduling.k8s.io", {"v1"}), groupEntry("coordination.k8s.io", {"v1"})});
  EXPECT_EQ(registry.apiGroupList(), (json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", builtins}}));

  registry.applyCrd(test::pipelineRunCrd());
  registry.applyCrd(test::workloadCrd());
  registry.applyCrd(test::argoWorkflowCrd());
  json expected = builtins;
  expected.push_back(groupEntry("argoproj.io", {"v1alpha1"}));
  expected.push_back(groupEntry("kueue.x-k8s.io", {"v1beta2", "v1beta1"}));
  expected.push_back(groupEntry("tekton.dev", {"v1", "v1beta1"}));
  EXPECT_EQ(registry.apiGroupList().at("groups"), expected);
}

TEST(Discovery, PrefersTheHighestPriorityServedVersion) {
  ResourceRegistry registry;
  json crd = test::pipelineRunCrd();
  crd["spec"]["versions"][1]["served"] = false;  // v1 is stored but not served
  registry.applyCrd(crd);
  EXPECT_EQ(registry.apiGroup("tekton.dev"), json::parse(R"({"kind":"APIGroup","apiVersion":"v1","name":"tekton.dev",
                "versions":[{"groupVersion":"tekton.dev/v1beta1","version":"v1beta1"}],
                "preferredVersion":{"groupVersion":"tekton.dev/v1beta1","version":"v1beta1"}})"));
}

TEST(Discovery, AnswersGroupsItServesOnly) {
  ResourceRegistry registry;
  EXPECT_FALSE(registry.apiGroup(""));  // the core group lives at /api
  EXPECT_FALSE(registry.apiGroup("tekton.dev"));
  registry.applyCrd(test::pipelineRunCrd());
  ASSERT_TRUE(registry.apiGroup("tekton.dev"));
  registry.removeCrd("tekton.dev", "pipelineruns");
  EXPECT_FALSE(registry.apiGroup("tekton.dev"));
  EXPECT_EQ(registry.apiGroupList().dump().find("tekton.dev"), std::string::npos);
}

const json* findResource(const json& list, const std::string& name) {
  for (const auto& r : list.at("resources"))
    if (r.at("name") == name) return &r;
  return nullptr;
}

struct DiscoveryResourceCase {
  std::string name;
  std::string group, version, resource;
  json expected;
};

std::vector<DiscoveryResourceCase> discoveryResourceCases() {
  const json allVerbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
  const json statusVerbs = {"get", "patch", "update"};
  return {
      {"namespaces",
       "",
       "v1",
       "namespaces",
       {{"name", "namespaces"},
        {"singularName", "namespace"},
        {"namespaced", false},
        {"kind", "Namespace"},
        {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}},
        {"shortNames", json::array({"ns"})}}},
      {"namespaces/status",
       "",
       "v1",
       "namespaces/status",
       {{"name", "namespaces/status"},
        {"singularName", ""},
        {"namespaced", false},
        {"kind", "Namespace"},
        {"verbs", statusVerbs}}},
      {"configmaps",
       "",
       "v1",
       "configmaps",
       {{"name", "configmaps"},
        {"singularName", "configmap"},
        {"namespaced", true},
        {"kind", "ConfigMap"},
        {"verbs", allVerbs},
        {"shortNames", json::array({"cm"})}}},
      {"services are in category all",
       "",
       "v1",
       "services",
       {{"name", "services"},
        {"singularName", "service"},
        {"namespaced", true},
        {"kind", "Service"},
        {"verbs", allVerbs},
        {"shortNames", json::array({"svc"})},
        {"categories", json::array({"all"})}}},
      {"services/status",
       "",
       "v1",
       "services/status",
       {{"name", "services/status"},
        {"singularName", ""},
        {"namespaced", true},
        {"kind", "Service"},
        {"verbs", statusVerbs}}},
      {"crds",
       "apiextensions.k8s.io",
       "v1",
       "customresourcedefinitions",
       {{"name", "customresourcedefinitions"},
        {"singularName", "customresourcedefinition"},
        {"namespaced", false},
        {"kind", "CustomResourceDefinition"},
        {"verbs", allVerbs},
        {"shortNames", {"crd", "crds"}},
        {"categories", json::array({"api-extensions"})}}},
      {"crds/status",
       "apiextensions.k8s.io",
       "v1",
       "customresourcedefinitions/status",
       {{"name", "customresourcedefinitions/status"},
        {"singularName", ""},
        {"namespaced", false},
        {"kind", "CustomResourceDefinition"},
        {"verbs", statusVerbs}}},
      {"pipelineruns",
       "tekton.dev",
       "v1",
       "pipelineruns",
       {{"name", "pipelineruns"},
        {"singularName", "pipelinerun"},
        {"namespaced", true},
        {"kind", "PipelineRun"},
        {"verbs", allVerbs},
        {"shortNames", {"pr", "prs"}},
        {"categories", {"tekton", "tekton-pipelines"}}}},
      {"pipelineruns/status",
       "tekton.dev",
       "v1",
       "pipelineruns/status",
       {{"name", "pipelineruns/status"},
        {"singularName", ""},
        {"namespaced", true},
        {"kind", "PipelineRun"},
        {"verbs", statusVerbs}}},
      {"older version too",
       "tekton.dev",
       "v1beta1",
       "pipelineruns/status",
       {{"name", "pipelineruns/status"},
        {"singularName", ""},
        {"namespaced", true},
        {"kind", "PipelineRun"},
        {"verbs", statusVerbs}}},
      {"workflows",
       "argoproj.io",
       "v1alpha1",
       "workflows",
       {{"name", "workflows"},
        {"singularName", "workflow"},
        {"namespaced", true},
        {"kind", "Workflow"},
        {"verbs", allVerbs},
        {"shortNames", json::array({"wf"})}}},
      {"no status subresource for workflows", "argoproj.io", "v1alpha1", "workflows/status", nullptr},
      {"no status subresource for configmaps", "", "v1", "configmaps/status", nullptr},
      {"leases",
       "coordination.k8s.io",
       "v1",
       "leases",
       {{"name", "leases"}, {"singularName", "lease"}, {"namespaced", true}, {"kind", "Lease"}, {"verbs", allVerbs}}},
  };
}

MKA_TABLE_TEST(Discovery, DescribesEachResourceAndItsStatusSubresource, DiscoveryResourceCase,
               discoveryResourceCases()) {
  const auto& c = testCase();
  ResourceRegistry registry;
  registry.applyCrd(test::pipelineRunCrd());
  registry.applyCrd(test::argoWorkflowCrd());
  const auto list = registry.apiResourceList(c.group, c.version);
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->at("kind"), "APIResourceList");
  EXPECT_EQ(list->at("groupVersion"), c.group.empty() ? c.version : c.group + "/" + c.version);
  const json* found = findResource(*list, c.resource);
  if (c.expected.is_null()) {
    EXPECT_EQ(found, nullptr);
  } else {
    ASSERT_NE(found, nullptr) << list->dump();
    EXPECT_EQ(*found, c.expected);
  }
}

TEST(Discovery, ListsTheCoreResourcesInOrder) {
  const ResourceRegistry registry;
  const auto list = registry.apiResourceList("", "v1");
  ASSERT_TRUE(list);
  std::vector<std::string> names;
  for (const auto& r : list->at("resources")) names.push_back(r.at("name"));
  EXPECT_EQ(names,
            (std::vector<std::string>{"configmaps", "events", "namespaces", "namespaces/status", "pods", "pods/status",
                                      "secrets", "serviceaccounts", "services", "services/status"}));
}

TEST(Discovery, HasNoResourceListForUnservedGroupVersions) {
  ResourceRegistry registry;
  EXPECT_FALSE(registry.apiResourceList("", "v2"));
  EXPECT_FALSE(registry.apiResourceList("tekton.dev", "v1"));
  json crd = test::pipelineRunCrd();
  crd["spec"]["versions"][0]["served"] = false;
  registry.applyCrd(crd);
  EXPECT_FALSE(registry.apiResourceList("tekton.dev", "v1beta1"));
  EXPECT_TRUE(registry.apiResourceList("tekton.dev", "v1"));
}

}  // namespace
}  // namespace mka::sandbox
