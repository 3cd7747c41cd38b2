#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "mka/sandbox/resource_registry.h"
#include "mka/yaml/json.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

const std::string kMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.";

const ResourceRegistry& sharedRegistry() {
  static const auto registry = [] {
    auto r = std::make_unique<ResourceRegistry>();
    r->applyCrd(test::pipelineRunCrd());
    r->applyCrd(test::workloadCrd());
    r->applyCrd(test::argoWorkflowCrd());
    r->applyCrd(test::fixtureCrd("kueue.x-k8s.io_clusterqueues.yaml"));
    return r;
  }();
  return *registry;
}

struct Gvk {
  std::string group, version, kind;
};

json gvkObject(const Gvk& gvk) { return {{"group", gvk.group}, {"kind", gvk.kind}, {"version", gvk.version}}; }

// kubectl's QueryParamVerifierV3: the first PATCH operation of the kind decides.
bool supportsQueryParam(const json& doc, const Gvk& gvk, const std::string& param) {
  for (const auto& [path, item] : doc.at("paths").items()) {
    if (!item.contains("patch")) continue;
    const auto& op = item.at("patch");
    if (op.value("x-kubernetes-group-version-kind", json()) != gvkObject(gvk)) continue;
    for (const auto& p : op.value("parameters", json::array()))
      if (p.at("name") == param) return true;
    return false;
  }
  return false;
}

// The component kubectl computes strategic merge patches from (x-kubernetes-group-version-kind
// is a list on schemas, an object on operations).
std::string schemaOf(const json& doc, const Gvk& gvk) {
  for (const auto& [name, schema] : doc.at("components").at("schemas").items()) {
    for (const auto& g : schema.value("x-kubernetes-group-version-kind", json::array()))
      if (g == gvkObject(gvk)) return name;
  }
  return "";
}

struct OpenApiKindCase {
  std::string name;
  Gvk gvk;
  std::string schemaName;
  bool strategicMerge;
};

std::vector<OpenApiKindCase> openApiKindCases() {
  return {
      {"ConfigMap", {"", "v1", "ConfigMap"}, "io.k8s.api.core.v1.ConfigMap", true},
      {"Namespace", {"", "v1", "Namespace"}, "io.k8s.api.core.v1.Namespace", true},
      {"Secret", {"", "v1", "Secret"}, "io.k8s.api.core.v1.Secret", true},
      {"Service", {"", "v1", "Service"}, "io.k8s.api.core.v1.Service", true},
      {"ServiceAccount", {"", "v1", "ServiceAccount"}, "io.k8s.api.core.v1.ServiceAccount", true},
      {"core Event", {"", "v1", "Event"}, "io.k8s.api.core.v1.Event", true},
      {"events.k8s.io Event", {"events.k8s.io", "v1", "Event"}, "io.k8s.api.events.v1.Event", true},
      {"Lease", {"coordination.k8s.io", "v1", "Lease"}, "io.k8s.api.coordination.v1.Lease", true},
      {"CRD",
       {"apiextensions.k8s.io", "v1", "CustomResourceDefinition"},
       "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
       true},
      {"MutatingWebhookConfiguration",
       {"admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"},
       "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
       true},
      {"ValidatingWebhookConfiguration",
       {"admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"},
       "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
       true},
      {"PipelineRun v1", {"tekton.dev", "v1", "PipelineRun"}, "dev.tekton.v1.PipelineRun", false},
      {"PipelineRun v1beta1", {"tekton.dev", "v1beta1", "PipelineRun"}, "dev.tekton.v1beta1.PipelineRun", false},
      {"Workload", {"kueue.x-k8s.io", "v1beta2", "Workload"}, "io.x-k8s.kueue.v1beta2.Workload", false},
      {"ClusterQueue", {"kueue.x-k8s.io", "v1beta2", "ClusterQueue"}, "io.x-k8s.kueue.v1beta2.ClusterQueue", false},
      {"Workflow", {"argoproj.io", "v1alpha1", "Workflow"}, "io.argoproj.v1alpha1.Workflow", false},
  };
}

MKA_TABLE_TEST(OpenApiV3, EveryKindTellsKubectlTheServerValidatesFields, OpenApiKindCase, openApiKindCases()) {
  const auto& c = testCase();
  const auto doc = sharedRegistry().openApiV3(c.gvk.group, c.gvk.version);
  ASSERT_TRUE(doc.has_value());
  EXPECT_TRUE(supportsQueryParam(*doc, c.gvk, "fieldValidation"));
  EXPECT_TRUE(supportsQueryParam(*doc, c.gvk, "fieldManager"));
  EXPECT_TRUE(supportsQueryParam(*doc, c.gvk, "force"));
  EXPECT_TRUE(supportsQueryParam(*doc, c.gvk, "dryRun"));
  EXPECT_FALSE(supportsQueryParam(*doc, c.gvk, "labelSelector"));
  EXPECT_EQ(schemaOf(*doc, c.gvk), c.schemaName);
  EXPECT_EQ(schemaOf(*doc, {c.gvk.group, c.gvk.version, c.gvk.kind + "List"}), c.schemaName + "List");
}

MKA_TABLE_TEST(OpenApiV3, OffersStrategicMergePatchForBuiltinsOnly, OpenApiKindCase, openApiKindCases()) {
  const auto& c = testCase();
  const auto doc = sharedRegistry().openApiV3(c.gvk.group, c.gvk.version);
  ASSERT_TRUE(doc.has_value());
  std::size_t patches = 0;
  for (const auto& [path, item] : doc->at("paths").items()) {
    if (!item.contains("patch") || item["patch"]["x-kubernetes-group-version-kind"] != gvkObject(c.gvk)) continue;
    ++patches;
    const auto& content = item["patch"].at("requestBody").at("content");
    EXPECT_TRUE(content.contains("application/apply-patch+yaml")) << path;
    EXPECT_TRUE(content.contains("application/merge-patch+json")) << path;
    EXPECT_TRUE(content.contains("application/json-patch+json")) << path;
    EXPECT_EQ(content.contains("application/strategic-merge-patch+json"), c.strategicMerge) << path;
  }
  EXPECT_GE(patches, 1u);
}

TEST(OpenApiV3, DocumentsWriteOperationsWithTheirQueryParameters) {
  const auto doc = sharedRegistry().openApiV3("tekton.dev", "v1");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->at("openapi"), "3.0.0");
  EXPECT_EQ(doc->at("info").at("title"), "Kubernetes");
  const auto& paths = doc->at("paths");
  auto names = [](const json& op) {
    std::set<std::string> out;
    for (const auto& p : op.value("parameters", json::array())) out.insert(p.at("name"));
    return out;
  };
  const std::string collection = "/apis/tekton.dev/v1/namespaces/{namespace}/pipelineruns";
  ASSERT_TRUE(paths.contains(collection));
  EXPECT_EQ(paths[collection]["post"]["x-kubernetes-action"], "post");
  EXPECT_EQ(names(paths[collection]["post"]), (std::set<std::string>{"dryRun", "fieldManager", "fieldValidation"}));
  EXPECT_EQ(paths[collection]["get"]["x-kubernetes-action"], "list");
  EXPECT_TRUE(names(paths[collection]["get"]).count("watch"));
  EXPECT_EQ(paths[collection]["delete"]["x-kubernetes-action"], "deletecollection");
  EXPECT_EQ(paths[collection]["post"]["requestBody"]["content"]["*/*"]["schema"]["$ref"],
            "#/components/schemas/dev.tekton.v1.PipelineRun");

  const std::string item = collection + "/{name}";
  ASSERT_TRUE(paths.contains(item));
  for (const char* method : {"get", "put", "patch", "delete"}) EXPECT_TRUE(paths[item].contains(method)) << method;
  EXPECT_EQ(names(paths[item]["put"]), (std::set<std::string>{"dryRun", "fieldManager", "fieldValidation"}));
  EXPECT_EQ(names(paths[item]["patch"]), (std::set<std::string>{"dryRun", "fieldManager", "fieldValidation", "force"}));
  EXPECT_TRUE(names(paths[item]["delete"]).count("propagationPolicy"));
  json pathParams = json::array();
  for (const auto& p : paths[item]["parameters"]) pathParams.push_back(p.at("name"));
  EXPECT_EQ(pathParams, json::array({"name", "namespace", "pretty"}));

  const std::string status = item + "/status";
  ASSERT_TRUE(paths.contains(status));
  EXPECT_FALSE(paths[status].contains("delete"));
  EXPECT_TRUE(names(paths[status]["patch"]).count("fieldValidation"));

  ASSERT_TRUE(paths.contains("/apis/tekton.dev/v1/pipelineruns"));  // every namespace
  EXPECT_EQ(paths["/apis/tekton.dev/v1/pipelineruns"].size(), 2u);  // get + parameters
}

struct OpenApiPathCase {
  std::string name;
  std::string group, version, path;
  std::vector<std::string> methods;  // empty: the path must not exist
};

std::vector<OpenApiPathCase> openApiPathCases() {
  return {
      {"cluster-scoped collection",
       "kueue.x-k8s.io",
       "v1beta2",
       "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
       {"get", "post", "delete"}},
      {"cluster-scoped item",
       "kueue.x-k8s.io",
       "v1beta2",
       "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{name}",
       {"get", "put", "patch", "delete"}},
      {"cluster-scoped status",
       "kueue.x-k8s.io",
       "v1beta2",
       "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{name}/status",
       {"get", "put", "patch"}},
      {"no namespaced path for cluster-scoped",
       "kueue.x-k8s.io",
       "v1beta2",
       "/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/clusterqueues",
       {}},
      {"no status without the subresource",
       "argoproj.io",
       "v1alpha1",
       "/apis/argoproj.io/v1alpha1/namespaces/{namespace}/workflows/{name}/status",
       {}},
      {"namespaces cannot be deleted as a collection", "", "v1", "/api/v1/namespaces", {"get", "post"}},
      {"namespace status", "", "v1", "/api/v1/namespaces/{name}/status", {"get", "put", "patch"}},
      {"configmaps", "", "v1", "/api/v1/namespaces/{namespace}/configmaps/{name}", {"get", "put", "patch", "delete"}},
      {"no configmap status", "", "v1", "/api/v1/namespaces/{namespace}/configmaps/{name}/status", {}},
      {"webhooks",
       "admissionregistration.k8s.io",
       "v1",
       "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}",
       {"get", "put", "patch", "delete"}},
      {"older served version",
       "tekton.dev",
       "v1beta1",
       "/apis/tekton.dev/v1beta1/namespaces/{namespace}/pipelineruns/{name}",
       {"get", "put", "patch", "delete"}},
  };
}

MKA_TABLE_TEST(OpenApiV3, HasPathsForScopeAndSubresources, OpenApiPathCase, openApiPathCases()) {
  const auto& c = testCase();
  const auto doc = sharedRegistry().openApiV3(c.group, c.version);
  ASSERT_TRUE(doc);
  const auto& paths = doc->at("paths");
  if (c.methods.empty()) {
    EXPECT_FALSE(paths.contains(c.path));
    return;
  }
  ASSERT_TRUE(paths.contains(c.path));
  std::set<std::string> methods;
  for (const auto& [k, v] : paths[c.path].items())
    if (k != "parameters") methods.insert(k);
  EXPECT_EQ(methods, std::set<std::string>(c.methods.begin(), c.methods.end()));
}

void collectRefs(const json& node, std::set<std::string>& out) {
  if (node.is_object()) {
    if (node.contains("$ref")) out.insert(node["$ref"].get<std::string>());
    for (const auto& [k, v] : node.items()) collectRefs(v, out);
  } else if (node.is_array()) {
    for (const auto& v : node) collectRefs(v, out);
  }
}

TEST(OpenApiV3, ResolvesEveryReferenceWithinTheDocument) {
  const auto root = sharedRegistry().openApiV3Root();
  std::size_t documents = 0;
  for (const auto& [path, entry] : root.at("paths").items()) {
    SCOPED_TRACE(path);
    const bool core = path.starts_with("api/");
    const std::string gv = path.substr(core ? 4 : 5);
    const auto slash = gv.rfind('/');
    const auto doc = core ? sharedRegistry().openApiV3("", gv)
                          : sharedRegistry().openApiV3(gv.substr(0, slash), gv.substr(slash + 1));
    ASSERT_TRUE(doc);
    ++documents;
    std::set<std::string> refs;
    collectRefs(*doc, refs);
    EXPECT_FALSE(refs.empty());
    for (const auto& r : refs) {
      ASSERT_TRUE(r.starts_with("#/components/schemas/")) << r;
      EXPECT_TRUE(doc->at("components").at("schemas").contains(r.substr(21))) << r;
    }
  }
  EXPECT_EQ(documents, 9u + 5u);  // built-in group-versions + tekton (2), kueue (2), argo
}

TEST(OpenApiV3, PublishesTheCrdSchemaWithObjectMeta) {
  const auto doc = sharedRegistry().openApiV3("tekton.dev", "v1");
  ASSERT_TRUE(doc);
  const auto& schema = doc->at("components").at("schemas").at("dev.tekton.v1.PipelineRun");
  EXPECT_EQ(schema.at("properties").at("metadata"), (json{{"$ref", "#/components/schemas/" + kMeta + "ObjectMeta"}}));
  EXPECT_EQ(schema.at("properties").at("apiVersion").at("type"), "string");
  EXPECT_EQ(schema.at("properties").at("spec").at("properties").at("managedBy").at("type"), "string");
  EXPECT_EQ(schema.at("x-kubernetes-group-version-kind"),
            json::array({{{"group", "tekton.dev"}, {"kind", "PipelineRun"}, {"version", "v1"}}}));
  const auto& meta = doc->at("components").at("schemas").at(kMeta + "ObjectMeta").at("properties");
  for (const char* field :
       {"name", "namespace", "labels", "annotations", "ownerReferences", "finalizers", "managedFields", "uid",
        "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp"}) {
    EXPECT_TRUE(meta.contains(field)) << field;
  }
  EXPECT_EQ(meta.at("ownerReferences").at("x-kubernetes-patch-merge-key"), "uid");
  // The argo schema is open below spec: it is published as it is.
  const auto argo = sharedRegistry().openApiV3("argoproj.io", "v1alpha1");
  ASSERT_TRUE(argo);
  EXPECT_TRUE(argo->at("components")
                  .at("schemas")
                  .at("io.argoproj.v1alpha1.Workflow")
                  .at("properties")
                  .at("spec")
                  .at("x-kubernetes-preserve-unknown-fields"));
}

// kubectl's PatchMetaFromOpenAPIV3: every map or merge-keyed list of a manifest is looked up by
// name in the schema (through $ref and allOf); a missing field makes `kubectl apply` warn.
void walkLikeKubectl(const json& schemas, const json* schema, const json& value, const std::string& path,
                     std::vector<std::string>& missing) {
  auto resolve = [&](const json* s) {
    if (s->contains("allOf")) s = &(*s)["allOf"][0];
    if (s->contains("$ref")) s = &schemas.at(s->at("$ref").get<std::string>().substr(21));
    return s;
  };
  for (const auto& [key, field] : value.items()) {
    if (!field.is_object() && !field.is_array()) continue;
    const json* properties = schema->contains("properties") ? &(*schema)["properties"] : nullptr;
    if (!properties || !properties->contains(key)) {
      missing.push_back(path + key);
      continue;
    }
    const json* sub = &(*properties)[key];
    if (field.is_object()) {
      walkLikeKubectl(schemas, resolve(sub), field, path + key + ".", missing);
    } else if (sub->contains("x-kubernetes-patch-merge-key")) {
      const json* items = resolve(&(*resolve(sub))["items"]);
      for (const auto& item : field)
        if (item.is_object()) walkLikeKubectl(schemas, items, item, path + key + "[].", missing);
    }
  }
}

TEST(OpenApiV3, BuiltinSchemasHoldEveryFieldOfTypicalManifests) {
  const std::string manifests = R"(
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {a: b}, annotations: {x: y}}
spec: {finalizers: [kubernetes]}
---
apiVersion: v1
kind: Service
metadata: {name: hook, namespace: team-a, ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u1}]}
spec:
  selector: {app: hook}
  ports: [{name: https, port: 443, targetPort: 9443, protocol: TCP}]
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 5}}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: team-a}
type: Opaque
stringData: {k: v}
data: {d: dg==}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: team-a, finalizers: [f]}
data: {k: v}
binaryData: {b: dg==}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: team-a}
imagePullSecrets: [{name: reg}]
secrets: [{name: token}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l, namespace: team-a}
spec: {holderIdentity: me, leaseDurationSeconds: 15}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: mka}
webhooks:
- name: validate.mka.dev
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {service: {namespace: team-a, name: hook, path: /validate, port: 443}, caBundle: Zm9v}
  rules: [{operations: [CREATE], apiGroups: [tekton.dev], apiVersions: [v1], resources: [pipelineruns]}]
  namespaceSelector: {matchExpressions: [{key: k, operator: NotIn, values: [kube-system]}]}
  objectSelector: {matchLabels: {x: y}}
  matchConditions: [{name: m, expression: "true"}]
---
apiVersion: v1
kind: Event
metadata: {name: e1, namespace: team-a}
involvedObject: {kind: Pod, name: p, namespace: team-a}
source: {component: c}
series: {count: 2}
reason: Test
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: e2, namespace: team-a}
regarding: {kind: Pod, name: p}
deprecatedSource: {component: c}
series: {count: 2}
note: hello
)";
  auto documents = yaml::parseJson(manifests, yaml::Limits::forManifests());
  documents.push_back(test::argoWorkflowCrd());
  for (const auto& manifest : documents) {
    const std::string apiVersion = manifest.at("apiVersion");
    const auto slash = apiVersion.find('/');
    const Gvk gvk{slash == std::string::npos ? "" : apiVersion.substr(0, slash), apiVersion.substr(slash + 1),
                  manifest.at("kind")};
    SCOPED_TRACE(apiVersion + " " + gvk.kind);
    const auto doc = sharedRegistry().openApiV3(gvk.group, gvk.version);
    ASSERT_TRUE(doc);
    const auto& schemas = doc->at("components").at("schemas");
    const std::string name = schemaOf(*doc, gvk);
    ASSERT_FALSE(name.empty());
    std::vector<std::string> missing;
    walkLikeKubectl(schemas, &schemas.at(name), manifest, "", missing);
    EXPECT_TRUE(missing.empty()) << json(missing).dump();
  }
}

TEST(OpenApiV3, MergesListsByTheKeysKubernetesUses) {
  const auto core = sharedRegistry().openApiV3("", "v1");
  ASSERT_TRUE(core);
  const auto& schemas = core->at("components").at("schemas");
  const auto& ports = schemas.at("io.k8s.api.core.v1.ServiceSpec").at("properties").at("ports");
  EXPECT_EQ(ports.at("x-kubernetes-patch-merge-key"), "port");
  EXPECT_EQ(ports.at("x-kubernetes-list-map-keys"), json::array({"port", "protocol"}));
  const auto webhooks = sharedRegistry().openApiV3("admissionregistration.k8s.io", "v1");
  ASSERT_TRUE(webhooks);
  EXPECT_EQ(webhooks->at("components")
                .at("schemas")
                .at("io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration")
                .at("properties")
                .at("webhooks")
                .at("x-kubernetes-patch-merge-key"),
            "name");
}

TEST(OpenApiV3Root, ListsEveryServedGroupVersionWithAContentHash) {
  const json root = sharedRegistry().openApiV3Root();
  std::set<std::string> paths;
  for (const auto& [path, entry] : root.at("paths").items()) {
    paths.insert(path);
    const std::string url = entry.at("serverRelativeURL");
    const std::string prefix = "/openapi/v3/" + path + "?hash=";
    ASSERT_TRUE(url.starts_with(prefix)) << url;
    const std::string hash = url.substr(prefix.size());
    EXPECT_EQ(hash.size(), 128u) << url;  // SHA-512 in upper-case hex, as kube-apiserver writes it
    EXPECT_EQ(hash.find_first_not_of("0123456789ABCDEF"), std::string::npos) << url;
  }
  EXPECT_EQ(paths, (std::set<std::string>{
                       "api/v1", "apis/admissionregistration.k8s.io/v1", "apis/apiextensions.k8s.io/v1",
                       "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1", "apis/authentication.k8s.io/v1",
                       "apis/authorization.k8s.io/v1", "apis/argoproj.io/v1alpha1", "apis/scheduling.k8s.io/v1",
                       "apis/rbac.authorization.k8s.io/v1", "apis/kueue.x-k8s.io/v1beta1",
                       "apis/kueue.x-k8s.io/v1beta2", "apis/tekton.dev/v1", "apis/tekton.dev/v1beta1"}));
}

std::string urlOf(const ResourceRegistry& registry, const std::string& path) {
  const json root = registry.openApiV3Root();
  return root.at("paths").contains(path) ? root["paths"][path].at("serverRelativeURL").get<std::string>() : "";
}

TEST(OpenApiV3Root, HashChangesWithTheDocumentOnly) {
  ResourceRegistry registry;
  const std::string core = urlOf(registry, "api/v1");
  EXPECT_EQ(urlOf(ResourceRegistry(), "api/v1"), core);  // same content, same hash, in any registry
  EXPECT_EQ(urlOf(registry, "apis/tekton.dev/v1"), "");

  registry.applyCrd(test::pipelineRunCrd());
  const std::string tekton = urlOf(registry, "apis/tekton.dev/v1");
  EXPECT_NE(tekton, "");
  EXPECT_EQ(urlOf(registry, "apis/tekton.dev/v1"), tekton);

  json changed = test::pipelineRunCrd();
  changed["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = {
      {"type", "string"}};
  registry.applyCrd(changed);
  EXPECT_NE(urlOf(registry, "apis/tekton.dev/v1"), tekton);
  EXPECT_EQ(urlOf(registry, "api/v1"), core);

  registry.removeCrd("tekton.dev", "pipelineruns");
  EXPECT_EQ(urlOf(registry, "apis/tekton.dev/v1"), "");
}

TEST(OpenApiV3, AnswersServedGroupVersionsOnly) {
  EXPECT_FALSE(sharedRegistry().openApiV3("", "v2"));
  EXPECT_FALSE(sharedRegistry().openApiV3("tekton.dev", "v2"));
  EXPECT_FALSE(sharedRegistry().openApiV3("example.com", "v1"));
}

}  // namespace
}  // namespace mka::sandbox
