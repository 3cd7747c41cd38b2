#include "mka/sandbox/resource_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/crd_loader.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"
#include "support/temp_dir.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using test::argoWorkflowCrd;
using test::fixtureCrd;
using test::pipelineRunCrd;
using test::workloadCrd;

struct BuiltinCase {
  std::string name;
  std::string group, plural, kind, singular;
  bool namespaced;
  std::vector<std::string> shortNames;
  bool hasStatus;
};

std::vector<BuiltinCase> builtinCases() {
  return {
      {"namespaces", "", "namespaces", "Namespace", "namespace", false, {"ns"}, true},
      {"configmaps", "", "configmaps", "ConfigMap", "configmap", true, {"cm"}, false},
      {"pods", "", "pods", "Pod", "pod", true, {"po"}, true},
      {"secrets", "", "secrets", "Secret", "secret", true, {}, false},
      {"core events", "", "events", "Event", "event", true, {"ev"}, false},
      {"services", "", "services", "Service", "service", true, {"svc"}, true},
      {"serviceaccounts", "", "serviceaccounts", "ServiceAccount", "serviceaccount", true, {"sa"}, false},
      {"events.k8s.io events", "events.k8s.io", "events", "Event", "event", true, {"ev"}, false},
      {"leases", "coordination.k8s.io", "leases", "Lease", "lease", true, {}, false},
      {"priority classes",
       "scheduling.k8s.io",
       "priorityclasses",
       "PriorityClass",
       "priorityclass",
       false,
       {"pc"},
       false},
      {"cluster roles", "rbac.authorization.k8s.io", "clusterroles", "ClusterRole", "clusterrole", false, {}, false},
      {"cluster role bindings",
       "rbac.authorization.k8s.io",
       "clusterrolebindings",
       "ClusterRoleBinding",
       "clusterrolebinding",
       false,
       {},
       false},
      {"roles", "rbac.authorization.k8s.io", "roles", "Role", "role", true, {}, false},
      {"role bindings", "rbac.authorization.k8s.io", "rolebindings", "RoleBinding", "rolebinding", true, {}, false},
      {"crds",
       "apiextensions.k8s.io",
       "customresourcedefinitions",
       "CustomResourceDefinition",
       "customresourcedefinition",
       false,
       {"crd", "crds"},
       true},
      {"mutating webhooks",
       "admissionregistration.k8s.io",
       "mutatingwebhookconfigurations",
       "MutatingWebhookConfiguration",
       "mutatingwebhookconfiguration",
       false,
       {},
       false},
      {"validating webhooks",
       "admissionregistration.k8s.io",
       "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration",
       "validatingwebhookconfiguration",
       false,
       {},
       false},
      {"token reviews", "authentication.k8s.io", "tokenreviews", "TokenReview", "tokenreview", false, {}, false},
      {"access reviews",
       "authorization.k8s.io",
       "subjectaccessreviews",
       "SubjectAccessReview",
       "subjectaccessreview",
       false,
       {},
       false},
  };
}

TEST(ResourceRegistry, ServesAsManyBuiltinKindsAsTheTableHas) {
  const std::vector<BuiltinCase> cases = builtinCases();
  const ResourceRegistry registry;
  EXPECT_EQ(registry.all().size(), cases.size());
}

MKA_TABLE_TEST(ResourceRegistry, ServesTheBuiltinKinds, BuiltinCase, builtinCases()) {
  const BuiltinCase& c = testCase();
  const ResourceRegistry registry;
  const auto type = registry.byResource(c.group, "v1", c.plural);
  ASSERT_TRUE(type.has_value());
  EXPECT_EQ(type->kind, c.kind);
  EXPECT_EQ(type->listKind, c.kind + "List");
  EXPECT_EQ(type->singular, c.singular);
  EXPECT_EQ(type->namespaced, c.namespaced);
  EXPECT_EQ(type->shortNames, c.shortNames);
  EXPECT_TRUE(type->builtin);
  EXPECT_EQ(type->storageVersion().name, "v1");
  EXPECT_EQ(type->storageVersion().hasStatus, c.hasStatus);
  const auto byKind = registry.byKind(c.group, "v1", c.kind);
  ASSERT_TRUE(byKind.has_value());
  EXPECT_EQ(byKind->plural, c.plural);
}

TEST(ResourceRegistry, NamespacesCannotBeDeletedAsACollection) {
  const ResourceRegistry registry;
  const auto ns = registry.byResource("", "v1", "namespaces");
  ASSERT_TRUE(ns);
  EXPECT_EQ(std::count(ns->verbs.begin(), ns->verbs.end(), "deletecollection"), 0);
  const auto cm = registry.byResource("", "v1", "configmaps");
  ASSERT_TRUE(cm);
  EXPECT_EQ(std::count(cm->verbs.begin(), cm->verbs.end(), "deletecollection"), 1);
}

struct LookupCase {
  std::string name;
  std::string group, version, plural;
  bool found;
};

// Registers the PipelineRun CRD with v1beta1 not served.
void applyPipelineRunsServedAsV1Only(ResourceRegistry& registry) {
  json crd = pipelineRunCrd();
  crd["spec"]["versions"][0]["served"] = false;  // v1beta1
  registry.applyCrd(crd);
}

std::vector<LookupCase> servedVersionLookupCases() {
  return {
      {"served version", "tekton.dev", "v1", "pipelineruns", true},
      {"version not served", "tekton.dev", "v1beta1", "pipelineruns", false},
      {"unknown version", "tekton.dev", "v2", "pipelineruns", false},
      {"unknown plural", "tekton.dev", "v1", "taskruns", false},
      {"wrong group", "tekton.dev.x", "v1", "pipelineruns", false},
      {"core group needs v1", "", "v2", "configmaps", false},
      {"kind is not a plural", "tekton.dev", "v1", "PipelineRun", false},
  };
}

MKA_TABLE_TEST(ResourceRegistry, LooksUpOnlyServedVersions, LookupCase, servedVersionLookupCases()) {
  const auto& c = testCase();
  ResourceRegistry registry;
  applyPipelineRunsServedAsV1Only(registry);
  EXPECT_EQ(registry.byResource(c.group, c.version, c.plural).has_value(), c.found);
}

TEST(ResourceRegistry, LooksUpKindsOfServedVersionsOnly) {
  ResourceRegistry registry;
  applyPipelineRunsServedAsV1Only(registry);
  EXPECT_TRUE(registry.byKind("tekton.dev", "v1", "PipelineRun"));
  EXPECT_FALSE(registry.byKind("tekton.dev", "v1beta1", "PipelineRun"));
  EXPECT_FALSE(registry.byKind("tekton.dev", "v1", "pipelinerun"));
}

TEST(ResourceRegistry, NamesResourcesAndKindsAsErrorMessagesDo) {
  const ResourceRegistry registry;
  const auto cm = registry.byResource("", "v1", "configmaps");
  const auto lease = registry.byResource("coordination.k8s.io", "v1", "leases");
  ASSERT_TRUE(cm && lease);
  EXPECT_EQ(cm->qualifiedResource(), "configmaps");
  EXPECT_EQ(cm->qualifiedKind(), "ConfigMap");
  EXPECT_EQ(lease->qualifiedResource(), "leases.coordination.k8s.io");
  EXPECT_EQ(lease->qualifiedKind(), "Lease.coordination.k8s.io");
}

TEST(ResourceRegistry, RegistersTheProjectsCrds) {
  ResourceRegistry registry;
  for (const char* file :
       {"kueue.x-k8s.io_workloads.yaml", "kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_clusterqueues.yaml",
        "kueue.x-k8s.io_admissionchecks.yaml", "kueue.x-k8s.io_multikueueclusters.yaml",
        "kueue.x-k8s.io_multikueueconfigs.yaml", "kueue.x-k8s.io_resourceflavors.yaml", "tekton.dev_pipelineruns.yaml",
        "argoproj.io_workflows.minimal.yaml"}) {
    SCOPED_TRACE(file);
    ASSERT_NO_THROW(registry.applyCrd(fixtureCrd(file)));
  }
  EXPECT_EQ(registry.all().size(), 19u + 9u);

  const auto workload = registry.byResource("kueue.x-k8s.io", "v1beta2", "workloads");
  ASSERT_TRUE(workload);
  EXPECT_EQ(workload->kind, "Workload");
  EXPECT_EQ(workload->listKind, "WorkloadList");
  EXPECT_EQ(workload->qualifiedResource(), "workloads.kueue.x-k8s.io");
  EXPECT_TRUE(workload->namespaced);
  EXPECT_FALSE(workload->builtin);
  EXPECT_EQ(workload->storageVersion().name, "v1beta2");
  EXPECT_TRUE(workload->storageVersion().hasStatus);
  EXPECT_EQ(workload->storageVersion().schema.at("type"), "object");
  EXPECT_FALSE(workload->storageVersion().printerColumns.empty());
  ASSERT_NE(workload->version("v1beta1"), nullptr);
  EXPECT_FALSE(workload->version("v1beta1")->storage);

  const auto clusterQueue = registry.byResource("kueue.x-k8s.io", "v1beta2", "clusterqueues");
  ASSERT_TRUE(clusterQueue);
  EXPECT_FALSE(clusterQueue->namespaced);

  const auto pipelineRun = registry.byResource("tekton.dev", "v1", "pipelineruns");
  ASSERT_TRUE(pipelineRun);
  EXPECT_EQ(pipelineRun->shortNames, (std::vector<std::string>{"pr", "prs"}));
  EXPECT_EQ(pipelineRun->categories, (std::vector<std::string>{"tekton", "tekton-pipelines"}));
  EXPECT_EQ(pipelineRun->singular, "pipelinerun");
  EXPECT_EQ(pipelineRun->storageVersion().name, "v1");

  const auto workflow = registry.byResource("argoproj.io", "v1alpha1", "workflows");
  ASSERT_TRUE(workflow);
  EXPECT_EQ(workflow->shortNames, std::vector<std::string>{"wf"});
  EXPECT_FALSE(workflow->storageVersion().hasStatus);  // `subresources: {}`
}

json minimalCrd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "kind": "Widget"},
             "versions": [{"name": "v1", "served": true, "storage": true,
                           "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
}

TEST(ResourceRegistry, DefaultsSingularAndListKind) {
  ResourceRegistry registry;
  registry.applyCrd(minimalCrd());
  const auto widget = registry.byResource("example.com", "v1", "widgets");
  ASSERT_TRUE(widget);
  EXPECT_EQ(widget->singular, "widget");
  EXPECT_EQ(widget->listKind, "WidgetList");
  EXPECT_FALSE(widget->storageVersion().hasStatus);
}

const std::string kSchema = R"("schema":{"openAPIV3Schema":{"type":"object"}})";
// A merge patch replacing spec.versions with `entries`.
std::string versions(const std::string& entries) { return R"({"spec":{"versions":[)" + entries + "]}}"; }

struct InvalidCase {
  std::string name;
  std::string patch;                                        // JSON merge patch applied to minimalCrd()
  std::vector<std::pair<std::string, std::string>> causes;  // field, message prefix
};

std::vector<InvalidCase> invalidCrdCases() {
  return {
      {"no plural",
       R"({"metadata":{"name":".example.com"},"spec":{"names":{"plural":null}}})",
       {{"spec.names.plural", "Required value"}}},
      {"no kind", R"({"spec":{"names":{"kind":null}}})", {{"spec.names.kind", "Required value"}}},
      {"no group", R"({"metadata":{"name":"widgets."},"spec":{"group":null}})", {{"spec.group", "Required value"}}},
      {"group without a dot",
       R"({"metadata":{"name":"widgets.example"},"spec":{"group":"example"}})",
       {{"spec.group", "Invalid value: \"example\": should be a domain with at least one dot"}}},
      {"name does not match",
       R"({"metadata":{"name":"gadgets.example.com"}})",
       {{"metadata.name", "Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group"}}},
      {"no name", R"({"metadata":{"name":null}})", {{"metadata.name", "Required value"}}},
      {"upper-case plural",
       R"({"metadata":{"name":"Widgets.example.com"},"spec":{"names":{"plural":"Widgets"}}})",
       {{"spec.names.plural", "Invalid value: \"Widgets\": a lowercase RFC 1123 label"}}},
      {"bad scope",
       R"({"spec":{"scope":"Global"}})",
       {{"spec.scope", "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""}}},
      {"no scope", R"({"spec":{"scope":null}})", {{"spec.scope", "Required value"}}},
      {"no versions", R"({"spec":{"versions":[]}})", {{"spec.versions", "Required value"}}},
      {"no storage version",
       versions(R"({"name":"v1","served":true,"storage":false,)" + kSchema + "}"),
       {{"spec.versions", "Invalid value: []: must have exactly one version marked as storage version"}}},
      {"two storage versions",
       versions(R"({"name":"v1","served":true,"storage":true,)" + kSchema + R"(},
                  {"name":"v2","served":true,"storage":true,)" +
                kSchema + "}"),
       {{"spec.versions", "Invalid value: [\"v1\",\"v2\"]: must have exactly one version marked as storage version"}}},
      {"duplicate version",
       versions(R"({"name":"v1","served":true,"storage":true,)" + kSchema + R"(},
                  {"name":"v1","served":true,"storage":false,)" +
                kSchema + "}"),
       {{"spec.versions[1].name", "Duplicate value: \"v1\""}}},
      {"version without a name",
       versions(R"({"served":true,"storage":true,)" + kSchema + "}"),
       {{"spec.versions[0].name", "Required value"}}},
      {"version without a schema",
       versions(R"({"name":"v1","served":true,"storage":true})"),
       {{"spec.versions[0].schema.openAPIV3Schema", "Required value: schemas are required"}}},
      {"schema root not an object",
       versions(R"({"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"string"}}})"),
       {{"spec.versions[0].schema.openAPIV3Schema.type", "Unsupported value: \"string\""}}},
      {"served is not a boolean",
       versions(R"({"name":"v1","served":"yes","storage":true,)" + kSchema + "}"),
       {{"spec.versions[0].served", "Invalid value: \"yes\": must be a boolean"}}},
      {"names not an object",
       R"({"metadata":{"name":null},"spec":{"names":"widgets"}})",
       {{"spec.names", "Invalid value"},
        {"spec.names.plural", "Required value"},
        {"spec.names.kind", "Required value"},
        {"metadata.name", "Required value"}}},
  };
}

MKA_TABLE_TEST(ResourceRegistry, RejectsMalformedCrdsNamingEveryField, InvalidCase, invalidCrdCases()) {
  const InvalidCase& c = testCase();
  json crd = minimalCrd();
  crd.merge_patch(json::parse(c.patch));
  ResourceRegistry registry;
  try {
    registry.applyCrd(crd);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 422);
    EXPECT_EQ(e.reason(), "Invalid");
    EXPECT_TRUE(std::string(e.what()).starts_with("CustomResourceDefinition.apiextensions.k8s.io \"")) << e.what();
    const auto& causes = e.details().at("causes");
    ASSERT_EQ(causes.size(), c.causes.size()) << e.details().dump();
    for (std::size_t i = 0; i < causes.size(); ++i) {
      EXPECT_EQ(causes[i].value("field", ""), c.causes[i].first) << causes[i].dump();
      EXPECT_TRUE(causes[i].at("message").get<std::string>().starts_with(c.causes[i].second)) << causes[i].dump();
    }
  }
  EXPECT_FALSE(registry.byResource("example.com", "v1", "widgets"));
}

TEST(ResourceRegistry, ReportsWhichFieldIsMissingInTheMessage) {
  json crd = minimalCrd();
  crd["spec"]["names"].erase("plural");
  try {
    parseCrd(crd);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()),
              "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: spec.names.plural: "
              "Required value");
    EXPECT_EQ(e.details().at("causes").at(0).at("reason"), "FieldValueRequired");
  }
}

TEST(ResourceRegistry, UpdatingACrdReplacesItsResource) {
  ResourceRegistry registry;
  registry.applyCrd(minimalCrd());
  json updated = minimalCrd();
  updated["spec"]["names"]["shortNames"] = {"wd"};
  updated["spec"]["versions"][0]["storage"] = false;
  updated["spec"]["versions"].push_back({{"name", "v2"},
                                         {"served", true},
                                         {"storage", true},
                                         {"schema", {{"openAPIV3Schema", {{"type", "object"}}}}},
                                         {"subresources", {{"status", json::object()}}}});
  registry.applyCrd(updated);

  const auto v2 = registry.byResource("example.com", "v2", "widgets");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->shortNames, std::vector<std::string>{"wd"});
  EXPECT_EQ(v2->storageVersion().name, "v2");
  EXPECT_TRUE(v2->storageVersion().hasStatus);
  EXPECT_EQ(registry.all().size(), 20u);

  updated["spec"]["versions"][0]["served"] = false;
  registry.applyCrd(updated);
  EXPECT_FALSE(registry.byResource("example.com", "v1", "widgets"));
  EXPECT_TRUE(registry.byResource("example.com", "v2", "widgets"));
}

TEST(ResourceRegistry, RemovesCrdsButNeverBuiltins) {
  ResourceRegistry registry;
  registry.applyCrd(pipelineRunCrd());
  registry.removeCrd("tekton.dev", "pipelineruns");
  EXPECT_FALSE(registry.byResource("tekton.dev", "v1", "pipelineruns"));
  registry.removeCrd("tekton.dev", "pipelineruns");  // gone already: no-op
  registry.removeCrd("", "configmaps");
  EXPECT_TRUE(registry.byResource("", "v1", "configmaps"));
}

TEST(ResourceRegistry, RefusesCrdsThatShadowBuiltins) {
  ResourceRegistry registry;
  json crd = minimalCrd();
  crd["metadata"]["name"] = "leases.coordination.k8s.io";
  crd["spec"]["group"] = "coordination.k8s.io";
  crd["spec"]["names"] = {{"plural", "leases"}, {"kind", "Lease"}};
  try {
    registry.applyCrd(crd);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 422);
    EXPECT_NE(std::string(e.what()).find("leases.coordination.k8s.io is served by the API server itself"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(registry.byResource("coordination.k8s.io", "v1", "leases")->builtin);
}

TEST(ResourceRegistry, SharesImmutableEntriesWithoutCopying) {
  ResourceRegistry registry;
  registry.applyCrd(minimalCrd());
  const ResourceTypePtr before = registry.find("example.com", "v1", "widgets");
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(registry.find("example.com", "v1", "widgets"), before);  // the same entry, not a copy
  EXPECT_EQ(registry.findKind("example.com", "v1", "Widget"), before);
  EXPECT_EQ(registry.find("example.com", "v2", "widgets"), nullptr);
  EXPECT_EQ(registry.findKind("example.com", "v1", "Gadget"), nullptr);

  json updated = minimalCrd();
  updated["spec"]["names"]["shortNames"] = {"wd"};
  registry.applyCrd(updated);
  // Holders keep what they got; lookups see the update.
  EXPECT_TRUE(before->shortNames.empty());
  EXPECT_EQ(registry.find("example.com", "v1", "widgets")->shortNames, std::vector<std::string>{"wd"});
  EXPECT_EQ(registry.snapshot().size(), 20u);
}

TEST(ResourceRegistry, RegistersTheFullArgoWorkflowCrd) {
  // 2.8 MB upstream file, kept out of the repository: read from the shared folder when present.
  const std::string file = std::string(MKA_SOURCE_DIR) + "/../shared/crds/argoproj.io_workflows.full.yaml";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " is not here";
  ResourceRegistry registry;
  registry.applyCrd(loadCrdFile(file).at(0));
  const auto workflow = registry.find("argoproj.io", "v1alpha1", "workflows");
  ASSERT_NE(workflow, nullptr);
  EXPECT_EQ(workflow->kind, "Workflow");
  EXPECT_EQ(workflow->storageVersion().schema.at("properties").at("spec").at("type"), "object");
  const auto doc = registry.openApiV3("argoproj.io", "v1alpha1");
  ASSERT_TRUE(doc);
  EXPECT_TRUE(doc->at("components").at("schemas").contains("io.argoproj.v1alpha1.Workflow"));
}

TEST(CrdStatus, AcceptsNamesAndRecordsStoredVersions) {
  json crd = pipelineRunCrd();
  const json status = crdStatus(crd, "2025-01-01T00:00:00Z");
  EXPECT_EQ(status.at("acceptedNames"), json::parse(R"({"plural":"pipelineruns","singular":"pipelinerun",
      "kind":"PipelineRun","listKind":"PipelineRunList","shortNames":["pr","prs"],
      "categories":["tekton","tekton-pipelines"]})"));
  EXPECT_EQ(status.at("storedVersions"), json::array({"v1"}));
  ASSERT_EQ(status.at("conditions").size(), 2u);
  EXPECT_EQ(status.at("conditions")[1],
            json::parse(R"({"type":"Established","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z",
                "reason":"InitialNamesAccepted","message":"the initial names have been accepted"})"));

  // A later update keeps the transition times and adds a new storage version to the record.
  crd["status"] = status;
  for (auto& v : crd["spec"]["versions"]) v["storage"] = v["name"] == "v1beta1";
  const json later = crdStatus(crd, "2025-06-01T00:00:00Z");
  EXPECT_EQ(later.at("storedVersions"), json::array({"v1", "v1beta1"}));
  EXPECT_EQ(later.at("conditions")[0].at("lastTransitionTime"), "2025-01-01T00:00:00Z");
  EXPECT_EQ(later.at("conditions")[0].at("type"), "NamesAccepted");
}

TEST(CrdStatus, ThrowsForAMalformedCrd) {
  json crd = minimalCrd();
  crd["spec"].erase("scope");
  EXPECT_THROW(crdStatus(crd, "2025-01-01T00:00:00Z"), ApiError);
}

struct LoaderErrorCase {
  std::string name;
  std::string content;  // empty: the file does not exist
  std::string messagePart;
};

std::string widgetCrdYaml() {
  return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
         "metadata: {name: widgets.example.com}\n";
}

TEST(CrdLoader, ReadsMultiDocumentFiles) {
  const mka::test::TempDir dir("crd-loader");
  const std::string widget = widgetCrdYaml();
  const auto both = loadCrdFile(dir.write("two.yaml", widget + "---\n" + widget + "---\n"));
  EXPECT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].at("metadata").at("name"), "widgets.example.com");
}

std::vector<LoaderErrorCase> loaderErrorCases() {
  const std::string widget = widgetCrdYaml();
  return {
      {"missing file", "", "cannot read the CRD file"},
      {"not YAML", "a: [1\n", "bad.yaml: yaml: line"},
      {"empty", "---\n", "holds no document"},
      {"a ConfigMap", widget + "---\napiVersion: v1\nkind: ConfigMap\n",
       "bad.yaml: document 2: is v1 ConfigMap, not apiextensions.k8s.io/v1 CustomResourceDefinition"},
      {"an old CRD", "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n",
       "document 1: is apiextensions.k8s.io/v1beta1 CustomResourceDefinition"},
      {"a list", "- a\n", "document 1: is not a mapping"},
  };
}

MKA_TABLE_TEST(CrdLoader, ReadsMultiDocumentFilesAndNamesTheBadOne, LoaderErrorCase, loaderErrorCases()) {
  const LoaderErrorCase& c = testCase();
  const mka::test::TempDir dir("crd-loader");
  const auto file = c.content.empty() ? dir / "absent.yaml" : dir.write("bad.yaml", c.content);
  try {
    loadCrdFile(file);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(c.messagePart), std::string::npos) << e.what();
  }
}

TEST(CrdLoader, RereadsAFileThatChanged) {
  const mka::test::TempDir dir("crd-loader");
  const std::string header = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n";
  const auto file = dir.write("crd.yaml", header + "metadata: {name: widgets.example.com}\n");
  EXPECT_EQ(loadCrdFile(file).at(0).at("metadata").at("name"), "widgets.example.com");
  EXPECT_EQ(loadCrdFile(file).at(0).at("metadata").at("name"), "widgets.example.com");  // from the cache
  dir.write("crd.yaml", header + "metadata: {name: gadgets.example.com, labels: {a: b}}\n");
  EXPECT_EQ(loadCrdFile(file).at(0).at("metadata").at("name"), "gadgets.example.com");
  std::filesystem::remove(file);
  EXPECT_THROW(loadCrdFile(file), Error);
}

TEST(ResourceRegistry, ServesReadersWhileCrdsChange) {
  // Meant for the sanitizer builds: readers and a writer of CRDs at the same time.
  ResourceRegistry registry;
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) {
      registry.applyCrd(argoWorkflowCrd());
      registry.removeCrd("argoproj.io", "workflows");
    }
    registry.applyCrd(argoWorkflowCrd());
  });
  for (int i = 0; i < 200; ++i) {
    EXPECT_GE(registry.snapshot().size(), 19u);
    EXPECT_TRUE(registry.openApiV3Root().at("paths").contains("api/v1"));
    EXPECT_TRUE(registry.apiResourceList("", "v1"));
  }
  writer.join();
  EXPECT_TRUE(registry.openApiV3Root().at("paths").contains("apis/argoproj.io/v1alpha1"));
}

}  // namespace
}  // namespace mka::sandbox
