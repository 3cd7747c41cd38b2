// One emulated cluster over real HTTPS on 127.0.0.1: authentication, discovery, /version,
// OpenAPI, the resource routes (CRUD, patches, status, delete options), Tables, metadata-only
// answers and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "mka/sandbox/sandbox.h"
#include "sandbox_http.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;

const std::string kCrds = std::string(MKA_FIXTURES_DIR) + "/crds/";

class ClusterHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions options;
    options.name = "worker1";
    options.crdFiles = {kCrds + "tekton.dev_pipelineruns.yaml", kCrds + "kueue.x-k8s.io_workloads.yaml"};
    cluster_ = &sandbox_.addCluster(options);
    client_ = test::clientFor(*cluster_);
  }

  httplib::Result get(const std::string& path, httplib::Headers headers = {}) {
    return client_->Get(path.c_str(), headers);
  }
  httplib::Result post(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), body.dump(), "application/json");
  }

  static json configMap(const std::string& name, json labels = json::object()) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"labels", std::move(labels)}}},
            {"data", {{"key", "value"}}}};
  }
  static json pipelineRun(const std::string& name) {
    return {{"apiVersion", "tekton.dev/v1"},
            {"kind", "PipelineRun"},
            {"metadata", {{"name", name}}},
            {"spec", {{"pipelineRef", {{"name", "build"}}}}}};
  }

  Sandbox sandbox_;
  Cluster* cluster_ = nullptr;
  std::unique_ptr<httplib::SSLClient> client_;
};

// --- authentication ----------------------------------------------------------------------------

TEST_F(ClusterHttpTest, RequestsWithoutATokenAreUnauthorized) {
  auto anonymous = test::clientFor(*cluster_, "");
  auto res = anonymous->Get("/api/v1/namespaces");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  const json status = test::bodyOf(res);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["reason"], "Unauthorized");
  EXPECT_EQ(status["message"], "Unauthorized");
  EXPECT_EQ(status["code"], 401);
}

TEST_F(ClusterHttpTest, AWrongTokenIsUnauthorizedEvenForUnknownPaths) {
  auto stranger = test::clientFor(*cluster_, "not-the-token");
  for (const char* path : {"/api", "/apis", "/api/v1/namespaces/default/configmaps", "/no/such/path"}) {
    auto res = stranger->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 401) << path;
  }
}

TEST_F(ClusterHttpTest, AnotherClustersTokenIsUnauthorized) {
  ClusterOptions options;
  options.name = "worker2";
  Cluster& other = sandbox_.addCluster(options);
  EXPECT_NE(other.token(), cluster_->token());
  EXPECT_NE(other.caPem(), cluster_->caPem());
  auto res = test::clientFor(*cluster_, other.token())->Get("/api");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
}

TEST_F(ClusterHttpTest, HealthAndVersionAreServedWithoutAToken) {
  auto anonymous = test::clientFor(*cluster_, "");
  for (const char* path : {"/healthz", "/readyz", "/livez"}) {
    auto res = anonymous->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_EQ(res->body, "ok");
  }
  auto version = anonymous->Get("/version");
  ASSERT_TRUE(version);
  EXPECT_EQ(version->status, 200);
  const json v = test::bodyOf(version);
  EXPECT_EQ(v["major"], "1");
  EXPECT_EQ(v["minor"], "32");
  EXPECT_THAT(v["gitVersion"].get<std::string>(), HasSubstr("v1.32."));
}

// --- discovery and OpenAPI ---------------------------------------------------------------------

TEST_F(ClusterHttpTest, CoreDiscovery) {
  auto res = get("/api");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json versions = test::bodyOf(res);
  EXPECT_EQ(versions["kind"], "APIVersions");
  EXPECT_EQ(versions["versions"], json::array({"v1"}));
  EXPECT_EQ(versions["serverAddressByClientCIDRs"][0]["serverAddress"],
            "127.0.0.1:" + std::to_string(cluster_->port()));

  res = get("/api/v1");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json list = test::bodyOf(res);
  EXPECT_EQ(list["kind"], "APIResourceList");
  bool namespaces = false;
  for (const auto& r : list["resources"]) {
    if (r["name"] != "namespaces") continue;
    namespaces = true;
    EXPECT_EQ(r["namespaced"], false);
    EXPECT_THAT(r["verbs"], Contains("watch"));
  }
  EXPECT_TRUE(namespaces);
}

TEST_F(ClusterHttpTest, GroupDiscoveryListsTheLoadedCrds) {
  auto res = get("/apis");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::vector<std::string> groups;
  const json groupList = test::bodyOf(res);
  for (const auto& g : groupList["groups"]) groups.push_back(g["name"]);
  EXPECT_THAT(groups, Contains("tekton.dev"));
  EXPECT_THAT(groups, Contains("kueue.x-k8s.io"));
  EXPECT_THAT(groups, Contains("apiextensions.k8s.io"));

  res = get("/apis/tekton.dev");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(test::bodyOf(res)["preferredVersion"]["version"], "v1");

  res = get("/apis/tekton.dev/v1");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json resources = test::bodyOf(res)["resources"];
  bool main = false, status = false;
  for (const auto& r : resources) {
    if (r["name"] == "pipelineruns") {
      main = true;
      EXPECT_EQ(r["namespaced"], true);
      EXPECT_EQ(r["kind"], "PipelineRun");
      EXPECT_THAT(r["shortNames"], Contains("pr"));
      EXPECT_THAT(r["verbs"], Contains("patch"));
    }
    status = status || r["name"] == "pipelineruns/status";
  }
  EXPECT_TRUE(main);
  EXPECT_TRUE(status);
}

TEST_F(ClusterHttpTest, AggregatedDiscoveryRequestsGetPlainJson) {
  // kubectl 1.32 asks for aggregated discovery first and falls back on plain application/json.
  auto res = get("/apis", {{"Accept",
                            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                            "application/json"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(test::bodyOf(res)["kind"], "APIGroupList");
}

TEST_F(ClusterHttpTest, UnknownGroupsAndPathsAre404Status) {
  for (const char* path :
       {"/apis/nosuch.dev", "/apis/tekton.dev/v9", "/api/v2", "/nonsense", "/openapi/v2",
        "/apis/tekton.dev/v1/namespaces/default/frobnicators", "/api/v1/namespaces/default/configmaps/x/scale"}) {
    auto res = get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    const json status = test::bodyOf(res);
    EXPECT_EQ(status["kind"], "Status") << path;
    EXPECT_EQ(status["reason"], "NotFound") << path;
  }
}

TEST_F(ClusterHttpTest, OpenApiV3) {
  auto res = get("/openapi/v3");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json root = test::bodyOf(res);
  ASSERT_TRUE(root["paths"].contains("apis/tekton.dev/v1"));
  const std::string url = root["paths"]["apis/tekton.dev/v1"]["serverRelativeURL"];
  EXPECT_THAT(url, HasSubstr("?hash="));

  res = get(url);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Cache-Control"), "public, immutable");
  EXPECT_TRUE(test::bodyOf(res)["components"]["schemas"].contains("dev.tekton.v1.PipelineRun"));

  res = get("/openapi/v3/api/v1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

// --- resources ---------------------------------------------------------------------------------

TEST_F(ClusterHttpTest, DefaultNamespacesAndLoadedCrdsExist) {
  auto res = get("/api/v1/namespaces");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::vector<std::string> names;
  const json namespaces = test::bodyOf(res);
  for (const auto& ns : namespaces["items"]) names.push_back(ns["metadata"]["name"]);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"default", "kube-system", "kube-public", "kube-node-lease"}));

  res = get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  names.clear();
  const json crds = test::bodyOf(res);
  for (const auto& crd : crds["items"]) names.push_back(crd["metadata"]["name"]);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("pipelineruns.tekton.dev", "workloads.kueue.x-k8s.io"));
}

TEST_F(ClusterHttpTest, CreateGetListUpdateDelete) {
  auto res = post("/api/v1/namespaces/default/configmaps", configMap("one", {{"team", "blue"}}));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const json created = test::bodyOf(res);
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  ASSERT_EQ(test::statusOf(post("/api/v1/namespaces/default/configmaps", configMap("two", {{"team", "red"}}))), 201);

  res = get("/api/v1/namespaces/default/configmaps/one");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(test::bodyOf(res)["data"]["key"], "value");

  res = get("/api/v1/namespaces/default/configmaps?labelSelector=team%3Dblue");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  json list = test::bodyOf(res);
  EXPECT_EQ(list["kind"], "ConfigMapList");
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "one");

  res = get("/api/v1/configmaps?fieldSelector=metadata.name%3Dtwo");  // every namespace
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(test::bodyOf(res)["items"].size(), 1u);

  res = get("/api/v1/namespaces/default/configmaps?limit=1");
  ASSERT_TRUE(res);
  list = test::bodyOf(res);
  ASSERT_EQ(list["items"].size(), 1u);
  const std::string token = list["metadata"]["continue"];
  res = get("/api/v1/namespaces/default/configmaps?limit=1&continue=" + httplib::detail::encode_query_param(token));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(test::bodyOf(res)["items"][0]["metadata"]["name"], "two");

  json update = created;
  update["data"]["key"] = "changed";
  res = client_->Put("/api/v1/namespaces/default/configmaps/one", update.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(test::bodyOf(res)["data"]["key"], "changed");

  // The same body again carries a stale resourceVersion: 409 Conflict.
  res = client_->Put("/api/v1/namespaces/default/configmaps/one", update.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 409);
  const json conflict = test::bodyOf(res);
  EXPECT_EQ(conflict["reason"], "Conflict");
  EXPECT_THAT(conflict["message"].get<std::string>(), HasSubstr("the object has been modified"));

  res = client_->Delete("/api/v1/namespaces/default/configmaps/one");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  res = get("/api/v1/namespaces/default/configmaps/one");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  const json gone = test::bodyOf(res);
  EXPECT_EQ(gone["reason"], "NotFound");
  EXPECT_EQ(gone["message"], "configmaps \"one\" not found");
  EXPECT_EQ(gone["details"]["kind"], "configmaps");
}

TEST_F(ClusterHttpTest, CreateAcceptsYaml) {
  const std::string yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  on: \"yes\"\n";
  auto res = client_->Post("/api/v1/namespaces/default/configmaps", yaml, "application/yaml");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(test::bodyOf(res)["metadata"]["name"], "from-yaml");
  // YAML 1.1 reads an unquoted yes as a boolean, which a ConfigMap's data cannot hold.
  const std::string unquoted = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unquoted\ndata:\n  a: yes\n";
  res = client_->Post("/api/v1/namespaces/default/configmaps", unquoted, "application/yaml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(test::bodyOf(res)["message"],
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct "
            "field ConfigMap.data of type string");
}

// Built-in kinds decode into their Go types: wrong types and bad base64 are 400s, unknown
// fields are dropped with a Warning header (or refused with fieldValidation=Strict), and a
// Secret's stringData is folded into data.
TEST_F(ClusterHttpTest, BuiltinKindsAreTypedAsKubeApiserverDecodesThem) {
  auto res = post("/api/v1/namespaces/default/configmaps", {{"metadata", {{"name", "a"}}}, {"data", {1}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(test::bodyOf(res)["message"],
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal array into Go struct "
            "field ConfigMap.data of type map[string]string");

  res = post("/api/v1/namespaces/default/secrets", {{"metadata", {{"name", "s"}}}, {"data", {{"k", "not base64!"}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(test::bodyOf(res)["message"],
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3");

  // A Service's port is an int32 (a string is a 400, as kube-apiserver answers), its targetPort
  // an int or a name.
  res = post("/api/v1/namespaces/default/services",
             {{"metadata", {{"name", "svc"}}}, {"spec", {{"ports", {{{"port", "443"}, {"targetPort", "https"}}}}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(test::bodyOf(res)["message"],
            "Service in version \"v1\" cannot be handled as a Service: json: cannot unmarshal string into Go struct "
            "field ServicePort.spec.ports.port of type int32");
  res = post("/api/v1/namespaces/default/services",
             {{"metadata", {{"name", "svc"}}}, {"spec", {{"ports", {{{"port", 443}, {"targetPort", "https"}}}}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;

  res = post("/api/v1/namespaces/default/secrets",
             {{"metadata", {{"name", "s"}}}, {"data", {{"k", "dg=="}, {"a", "eA=="}}}, {"stringData", {{"a", "b"}}}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(test::bodyOf(res)["data"], json({{"a", "Yg=="}, {"k", "dg=="}})) << "stringData wins for its keys";
  EXPECT_FALSE(test::bodyOf(res).contains("stringData"));

  res = post("/api/v1/namespaces/default/configmaps",
             {{"metadata", {{"name", "b"}, {"bogusMeta", 1}}}, {"data", {{"k", "v"}}}, {"bogus", true}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_FALSE(test::bodyOf(res).contains("bogus"));
  std::vector<std::string> warnings;
  for (const auto& [name, value] : res->headers)
    if (name == "Warning") warnings.push_back(value);
  EXPECT_THAT(warnings, ::testing::UnorderedElementsAre("299 - \"unknown field \\\"metadata.bogusMeta\\\"\"",
                                                        "299 - \"unknown field \\\"bogus\\\"\""));
  EXPECT_FALSE(test::bodyOf(get("/api/v1/namespaces/default/configmaps/b")).contains("bogus"));

  res = client_->Post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
                      json({{"metadata", {{"name", "c"}}}, {"bogus", true}}).dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(test::bodyOf(res)["message"], "strict decoding error: unknown field \"bogus\"");
}

TEST_F(ClusterHttpTest, MalformedBodiesAreBadRequests) {
  auto res = client_->Post("/api/v1/namespaces/default/configmaps", "{not json", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(test::bodyOf(res)["reason"], "BadRequest");

  res = client_->Post("/api/v1/namespaces/default/configmaps", "x", "application/cbor");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
  EXPECT_EQ(test::bodyOf(res)["reason"], "UnsupportedMediaType");

  res = client_->Post("/api/v1/namespaces/default/configmaps", "x", "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << "no protobuf envelope";

  res = get("/api/v1/namespaces/default/configmaps?limit=many");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
}

TEST_F(ClusterHttpTest, CreateInAMissingNamespaceIsNotFound) {
  auto res = post("/api/v1/namespaces/nowhere/configmaps", configMap("x"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(test::bodyOf(res)["details"]["kind"], "namespaces");
}

TEST_F(ClusterHttpTest, PatchTypesFollowTheContentType) {
  ASSERT_EQ(test::statusOf(post("/apis/tekton.dev/v1/namespaces/default/pipelineruns", pipelineRun("pr"))), 201);
  const std::string path = "/apis/tekton.dev/v1/namespaces/default/pipelineruns/pr";

  auto res = client_->Patch(path.c_str(), R"({"metadata":{"labels":{"a":"1"}}})", "application/merge-patch+json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(test::bodyOf(res)["metadata"]["labels"]["a"], "1");

  res = client_->Patch(path.c_str(), R"([{"op":"add","path":"/metadata/labels/b","value":"2"}])",
                       "application/json-patch+json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(test::bodyOf(res)["metadata"]["labels"]["b"], "2");

  res = client_->Patch((path + "?fieldManager=test&force=true").c_str(),
                       "apiVersion: tekton.dev/v1\nkind: PipelineRun\nmetadata:\n  name: pr\n  labels:\n    c: \"3\"\n",
                       "application/apply-patch+yaml");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(test::bodyOf(res)["metadata"]["labels"]["c"], "3");

  // CRDs take no strategic merge patch.
  res = client_->Patch(path.c_str(), R"({"metadata":{"labels":{"d":"4"}}})", "application/strategic-merge-patch+json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
}

TEST_F(ClusterHttpTest, StatusSubresourceWritesOnlyStatus) {
  ASSERT_EQ(test::statusOf(post("/apis/tekton.dev/v1/namespaces/default/pipelineruns", pipelineRun("pr"))), 201);
  auto res = client_->Patch("/apis/tekton.dev/v1/namespaces/default/pipelineruns/pr/status",
                            R"({"status":{"startTime":"2026-01-01T00:00:00Z"},"spec":{"status":"Cancelled"}})",
                            "application/merge-patch+json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json object = test::bodyOf(res);
  EXPECT_EQ(object["status"]["startTime"], "2026-01-01T00:00:00Z");
  EXPECT_FALSE(object["spec"].contains("status"));

  res = get("/apis/tekton.dev/v1/namespaces/default/pipelineruns/pr/status");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // ConfigMaps have no status subresource: kube-apiserver answers 404.
  res = get("/api/v1/namespaces/default/configmaps/x/status");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST_F(ClusterHttpTest, DryRunStoresNothing) {
  auto res =
      client_->Post("/api/v1/namespaces/default/configmaps?dryRun=All", configMap("dry").dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201);
  EXPECT_EQ(test::statusOf(get("/api/v1/namespaces/default/configmaps/dry")), 404);

  res = client_->Post("/api/v1/namespaces/default/configmaps?dryRun=Some", configMap("dry").dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 422);
}

TEST_F(ClusterHttpTest, DeleteOptionsInTheBody) {
  json held = pipelineRun("held");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  ASSERT_EQ(test::statusOf(post("/apis/tekton.dev/v1/namespaces/default/pipelineruns", held)), 201);
  const std::string path = "/apis/tekton.dev/v1/namespaces/default/pipelineruns/held";

  // A precondition on a wrong uid: 409.
  auto res = client_->Delete(path.c_str(), R"({"preconditions":{"uid":"not-the-uid"}})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 409) << res->body;

  // dryRun in the body: nothing happens.
  res = client_->Delete(path.c_str(), R"({"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]})",
                        "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(test::bodyOf(get(path))["metadata"].contains("deletionTimestamp"));

  // A finalizer holds it: the answer is the object, with a deletionTimestamp.
  res = client_->Delete(path.c_str(), R"({"propagationPolicy":"Foreground"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const json deleting = test::bodyOf(res);
  EXPECT_TRUE(deleting["metadata"].contains("deletionTimestamp"));
  EXPECT_THAT(deleting["metadata"]["finalizers"], Contains("foregroundDeletion"));
}

TEST_F(ClusterHttpTest, DeleteCollectionServesWhereDiscoveryListsIt) {
  ASSERT_EQ(
      post("/api/v1/namespaces/default/configmaps", {{"metadata", {{"name", "a"}, {"labels", {{"x", "1"}}}}}})->status,
      201);
  ASSERT_EQ(post("/api/v1/namespaces/default/configmaps", {{"metadata", {{"name", "b"}}}})->status, 201);
  auto res = client_->Delete("/api/v1/namespaces/default/configmaps?labelSelector=x%3D1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(test::bodyOf(res)["kind"], "ConfigMapList");
  EXPECT_EQ(get("/api/v1/namespaces/default/configmaps/a")->status, 404);
  EXPECT_EQ(get("/api/v1/namespaces/default/configmaps/b")->status, 200);
  res = client_->Delete("/api/v1/namespaces");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405) << "namespaces do not list deletecollection";
  EXPECT_EQ(test::bodyOf(res)["reason"], "MethodNotAllowed");
}

TEST_F(ClusterHttpTest, AnApplyThatCreatesAnswers201) {
  const std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"a":"1"}})";
  const std::string path = "/api/v1/namespaces/default/configmaps/applied?fieldManager=me";
  auto res = client_->Patch(path, body, "application/apply-patch+yaml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
  res = client_->Patch(path, body, "application/apply-patch+yaml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(ClusterHttpTest, CreatingACrdServesItsResource) {
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": true, "storage": true,
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
  })");
  auto res = post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  res = get("/apis/example.com/v1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = post("/apis/example.com/v1/namespaces/default/widgets",
             {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w"}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
}

TEST_F(ClusterHttpTest, LegacyWatchPrefixAndNamedResourceTypesRoute) {
  // GET /api/v1/namespaces/<name> is the Namespace, not a namespaced collection.
  auto res = get("/api/v1/namespaces/default");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(test::bodyOf(res)["kind"], "Namespace");
}

// --- Tables ------------------------------------------------------------------------------------

const httplib::Headers kTableAccept = {{"Accept",
                                        "application/json;as=Table;v=v1;g=meta.k8s.io,application/"
                                        "json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"}};

TEST_F(ClusterHttpTest, KubectlGetReceivesATable) {
  ASSERT_EQ(test::statusOf(post("/apis/tekton.dev/v1/namespaces/default/pipelineruns", pipelineRun("pr"))), 201);
  auto res = get("/apis/tekton.dev/v1/namespaces/default/pipelineruns?limit=500", kTableAccept);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json table = test::bodyOf(res);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  std::vector<std::string> columns;
  for (const auto& c : table["columnDefinitions"]) columns.push_back(c["name"]);
  EXPECT_EQ(columns, (std::vector<std::string>{"Name", "Succeeded", "Reason", "StartTime", "CompletionTime"}));
  ASSERT_EQ(table["rows"].size(), 1u);
  EXPECT_EQ(table["rows"][0]["cells"][0], "pr");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_FALSE(table["metadata"]["resourceVersion"].get<std::string>().empty());

  res = get("/api/v1/namespaces/default", kTableAccept);
  ASSERT_TRUE(res);
  const json ns = test::bodyOf(res);
  EXPECT_EQ(ns["kind"], "Table");
  EXPECT_EQ(ns["rows"][0]["cells"][0], "default");
  EXPECT_EQ(ns["rows"][0]["cells"][1], "Active");

  res = get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions?includeObject=Object", kTableAccept);
  ASSERT_TRUE(res);
  const json crds = test::bodyOf(res);
  EXPECT_EQ(crds["columnDefinitions"][1]["name"], "Created At");
  EXPECT_EQ(crds["rows"][0]["object"]["kind"], "CustomResourceDefinition");
}

TEST_F(ClusterHttpTest, WithoutTheTableAcceptTheObjectIsServed) {
  auto res = get("/api/v1/namespaces/default", {{"Accept", "application/json"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(test::bodyOf(res)["kind"], "Namespace");
}

// --- PartialObjectMetadata -----------------------------------------------------------------------

// client-go's metadata client, with protobuf first as it sends it.
const httplib::Headers kMetadataAccept = {
    {"Accept",
     "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
     "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"}};
const httplib::Headers kMetadataListAccept = {
    {"Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"}};

TEST_F(ClusterHttpTest, ReadsAnswerMetadataOnlyWhenAskedTo) {
  ASSERT_EQ(test::statusOf(post("/apis/tekton.dev/v1/namespaces/default/pipelineruns", pipelineRun("pr"))), 201);
  auto res = get("/apis/tekton.dev/v1/namespaces/default/pipelineruns/pr", kMetadataAccept);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json one = test::bodyOf(res);
  EXPECT_EQ(one["kind"], "PartialObjectMetadata");
  EXPECT_EQ(one["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(one["metadata"]["name"], "pr");
  EXPECT_FALSE(one["metadata"]["uid"].get<std::string>().empty());
  EXPECT_TRUE(one["metadata"].contains("managedFields"));  // all of ObjectMeta, as kube-apiserver sends it
  EXPECT_FALSE(one.contains("spec"));

  res = get("/apis/tekton.dev/v1/namespaces/default/pipelineruns", kMetadataListAccept);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json list = test::bodyOf(res);
  EXPECT_EQ(list["kind"], "PartialObjectMetadataList");
  EXPECT_FALSE(list["metadata"]["resourceVersion"].get<std::string>().empty());
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "pr");

  // One object asked for as a list, and a list as one object: 406, as kube-apiserver answers.
  res = get("/apis/tekton.dev/v1/namespaces/default/pipelineruns", kMetadataAccept);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 406);
  EXPECT_EQ(test::bodyOf(res)["reason"], "NotAcceptable");
  res = get("/apis/tekton.dev/v1/namespaces/default/pipelineruns/pr", kMetadataListAccept);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 406);
}

TEST_F(ClusterHttpTest, WritesAnswerMetadataOnlyWhenAskedTo) {
  const std::string collection = "/apis/tekton.dev/v1/namespaces/default/pipelineruns";
  auto res = client_->Post(collection, kMetadataAccept, pipelineRun("pr").dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201);
  json answer = test::bodyOf(res);
  EXPECT_EQ(answer["kind"], "PartialObjectMetadata");
  EXPECT_FALSE(answer.contains("spec"));
  const auto created = answer["metadata"]["resourceVersion"].get<std::string>();
  EXPECT_EQ(created, cluster_->api()
                         .get({"tekton.dev", "v1", "pipelineruns", "default", "pr", ""})
                         .at("metadata")
                         .at("resourceVersion"));

  json object = test::bodyOf(get(collection + "/pr"));
  object["metadata"]["labels"]["changed"] = "yes";
  object["metadata"]["finalizers"] = {"example.com/keep"};
  res = client_->Put(collection + "/pr", kMetadataAccept, object.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  answer = test::bodyOf(res);
  EXPECT_EQ(answer["kind"], "PartialObjectMetadata");
  EXPECT_EQ(answer["metadata"]["labels"]["changed"], "yes");
  EXPECT_NE(answer["metadata"]["resourceVersion"], created);

  res = client_->Patch(collection + "/pr/status", kMetadataAccept, R"({"status":{"startTime":"2026-01-01T00:00:00Z"}})",
                       "application/merge-patch+json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(test::bodyOf(res)["kind"], "PartialObjectMetadata");
  EXPECT_EQ(cluster_->api().get({"tekton.dev", "v1", "pipelineruns", "default", "pr", ""})["status"]["startTime"],
            "2026-01-01T00:00:00Z");

  // A delete that a finalizer holds answers the object, marked for deletion...
  res = client_->Delete(collection + "/pr", kMetadataAccept);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  answer = test::bodyOf(res);
  EXPECT_EQ(answer["kind"], "PartialObjectMetadata");
  EXPECT_EQ(answer["metadata"]["name"], "pr");
  EXPECT_TRUE(answer["metadata"].contains("deletionTimestamp"));

  // ... one that removes the object at once answers a Status, which no rendering changes.
  ASSERT_EQ(test::statusOf(post(collection, pipelineRun("gone"))), 201);
  res = client_->Delete(collection + "/gone", kMetadataAccept);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  answer = test::bodyOf(res);
  EXPECT_EQ(answer["kind"], "Status");
  EXPECT_EQ(answer["status"], "Success");
  EXPECT_EQ(answer["details"]["name"], "gone");

  // So is an error.
  res = client_->Delete(collection + "/gone", kMetadataAccept);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(test::bodyOf(res)["kind"], "Status");
}

}  // namespace
}  // namespace mka::sandbox
