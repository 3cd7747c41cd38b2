#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

#include "support/table_test.h"

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;

// A Workload-like CRD version: spec.podSets is a map list by name, spec.tags a set, spec.args
// atomic, status.conditions a map list by type, and a status subresource.
ResourceVersionInfo workloadVersion() {
  ResourceVersionInfo v;
  v.name = "v1beta1";
  v.served = v.storage = v.hasStatus = true;
  v.schema = json::parse(R"({
    "type": "object",
    "properties": {
      "spec": {"type": "object", "properties": {
        "queueName": {"type": "string"},
        "replicas": {"type": "integer"},
        "podSets": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}}}},
      "status": {"type": "object", "properties": {
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                       "items": {"type": "object", "properties": {
                         "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"}}}}}}}})");
  return v;
}

// A Workload applied with `spec` (none when null).
json workload(json spec) {
  json out = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
              {"kind", "Workload"},
              {"metadata", {{"name", "w"}, {"namespace", "ns"}}}};
  if (!spec.is_null()) out["spec"] = std::move(spec);
  return out;
}

json statusConfig(json conditions) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
          {"kind", "Workload"},
          {"metadata", {{"name", "w"}, {"namespace", "ns"}}},
          {"status", {{"conditions", std::move(conditions)}}}};
}

ApplyOptions apply(const std::string& manager, const std::string& subresource = "", bool force = false) {
  return {manager, force, subresource, "kueue.x-k8s.io/v1beta1", "2030-01-01T00:00:00Z"};
}

// The entry of `manager` (and operation) in managedFields, or null.
json entryOf(const json& object, const std::string& manager, const std::string& operation = "Apply") {
  for (const auto& e : object["metadata"].value("managedFields", json::array())) {
    if (e["manager"] == manager && e["operation"] == operation) return e;
  }
  return nullptr;
}

json conditionsOf(const json& object) { return object["status"]["conditions"]; }

ApiError applyError(const json& live, const json& config, const ApplyOptions& options) {
  try {
    serverSideApply(live, config, workloadVersion(), options);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "applied without error";
  return ApiError(0, "", "");
}

TEST(ServerSideApplyTest, ApplyingToNothingCreatesAndRecordsOwnership) {
  json config = workload({{"queueName", "q"}, {"podSets", {{{"name", "main"}, {"count", 2}}}}});
  config["metadata"]["labels"] = {{"app", "x"}};
  config["status"] = {{"conditions", json::array()}};  // main resource with a status subresource: ignored
  const auto out = serverSideApply(nullptr, config, workloadVersion(), apply("kubectl"));
  EXPECT_EQ(out["spec"], config["spec"]);
  EXPECT_FALSE(out.contains("status"));
  EXPECT_EQ(out["metadata"]["managedFields"],
            json::parse(R"([{"manager":"kubectl","operation":"Apply","apiVersion":"kueue.x-k8s.io/v1beta1",
              "time":"2030-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{
                "f:metadata":{"f:labels":{"f:app":{}}},
                "f:spec":{"f:podSets":{"k:{\"name\":\"main\"}":{".":{},"f:count":{},"f:name":{}}},"f:queueName":{}}}}])"));
}

struct ApplyMergeCase {
  std::string name;
  json first;   // spec applied by "a"
  json second;  // spec applied next by "a"
  json want;    // resulting spec
};

std::vector<ApplyMergeCase> applyMergeCases() {
  return {
      {"omitted scalar is removed", {{"queueName", "q"}, {"replicas", 2}}, {{"queueName", "q"}}, {{"queueName", "q"}}},
      {"map-list item omitted is removed",
       {{"podSets", {{{"name", "a"}, {"count", 1}}, {{"name", "b"}, {"count", 1}}}}},
       {{"podSets", {{{"name", "b"}, {"count", 3}}}}},
       {{"podSets", {{{"name", "b"}, {"count", 3}}}}}},
      {"map-list item field omitted is removed, item kept",
       {{"podSets", {{{"name", "a"}, {"count", 1}}}}},
       {{"podSets", {{{"name", "a"}}}}},
       {{"podSets", {{{"name", "a"}}}}}},
      {"set items", {{"tags", {"x", "y"}}}, {{"tags", {"y", "z"}}}, {{"tags", {"y", "z"}}}},
      {"atomic list replaced", {{"args", {"1", "2"}}}, {{"args", {"3"}}}, {{"args", {"3"}}}},
      {"an empty map applied stays, owned", {{"queueName", "q"}}, json::object(), json::object()},
      {"everything omitted", {{"queueName", "q"}}, nullptr, nullptr},
  };
}

MKA_TABLE_TEST(ServerSideApplyTest, MergesByListTypeAndPrunesWhatTheManagerNoLongerApplies, ApplyMergeCase,
               applyMergeCases()) {
  const ApplyMergeCase& c = testCase();
  const auto first = serverSideApply(nullptr, workload(c.first), workloadVersion(), apply("a"));
  const auto second = serverSideApply(first, workload(c.second), workloadVersion(), apply("a"));
  EXPECT_EQ(second.value("spec", json()), c.want);
}

TEST(ServerSideApplyTest, FieldsAnotherManagerOwnsAreNotPruned) {
  const auto a =
      serverSideApply(nullptr, workload({{"queueName", "q"}, {"replicas", 2}}), workloadVersion(), apply("a"));
  // "b" applies the same replicas value: no conflict, shared ownership.
  const auto b = serverSideApply(a, workload({{"replicas", 2}}), workloadVersion(), apply("b"));
  EXPECT_EQ(entryOf(b, "b")["fieldsV1"], json::parse(R"({"f:spec":{"f:replicas":{}}})"));
  const auto again = serverSideApply(b, workload({{"queueName", "q"}}), workloadVersion(), apply("a"));
  EXPECT_EQ(again["spec"], (json{{"queueName", "q"}, {"replicas", 2}}));
  EXPECT_EQ(entryOf(again, "a")["fieldsV1"], json::parse(R"({"f:spec":{"f:queueName":{}}})"));
}

// Two controllers own different conditions of one Workload through /status, as the
// MultiKueue dispatcher and Kueue's own controllers do.
TEST(ServerSideApplyTest, StatusConditionsAreOwnedPerTypeThroughTheStatusSubresource) {
  const auto version = workloadVersion();
  auto live = serverSideApply(nullptr, workload({{"queueName", "q"}}), version, apply("creator"));

  live = serverSideApply(live, statusConfig({{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "Q"}}}),
                         version, apply("kueue", "status"));
  live = serverSideApply(live, statusConfig({{{"type", "Admitted"}, {"status", "True"}}}), version,
                         apply("dispatcher", "status"));
  EXPECT_EQ(conditionsOf(live).size(), 2u);
  EXPECT_EQ(entryOf(live, "kueue")["subresource"], "status");
  EXPECT_EQ(entryOf(live, "kueue")["fieldsV1"],
            json::parse(R"({"f:status":{"f:conditions":{"k:{\"type\":\"QuotaReserved\"}":{
              ".":{},"f:reason":{},"f:status":{},"f:type":{}}}}})"));
  EXPECT_EQ(entryOf(live, "creator")["fieldsV1"], json::parse(R"({"f:spec":{"f:queueName":{}}})"));

  // A conflicting value without force: 409 naming the field and its owner.
  const auto conflict =
      applyError(live, statusConfig({{{"type", "Admitted"}, {"status", "False"}}}), apply("kueue", "status"));
  EXPECT_EQ(conflict.code(), 409);
  EXPECT_EQ(conflict.reason(), "Conflict");
  EXPECT_STREQ(conflict.what(),
               "Apply failed with 1 conflict: conflict with \"dispatcher\" with subresource \"status\": "
               ".status.conditions[type=\"Admitted\"].status");
  EXPECT_EQ(conflict.details()["causes"], json::parse(R"([{"reason":"FieldManagerConflict",
              "message":"conflict with \"dispatcher\" with subresource \"status\"",
              "field":".status.conditions[type=\"Admitted\"].status"}])"));

  // With force the value changes and the ownership of that field moves.
  auto forced = serverSideApply(live,
                                statusConfig({{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "Q"}},
                                              {{"type", "Admitted"}, {"status", "False"}}}),
                                version, apply("kueue", "status", true));
  EXPECT_EQ(conditionsOf(forced)[1], (json{{"type", "Admitted"}, {"status", "False"}}));
  EXPECT_EQ(entryOf(forced, "dispatcher")["fieldsV1"],
            json::parse(R"({"f:status":{"f:conditions":{"k:{\"type\":\"Admitted\"}":{".":{},"f:type":{}}}}})"));
  EXPECT_TRUE(entryOf(forced, "kueue")["fieldsV1"]["f:status"]["f:conditions"].contains("k:{\"type\":\"Admitted\"}"));

  // One manager re-applies without its condition: it goes; the other manager's stays.
  auto dropped = serverSideApply(live, statusConfig(json::array()), version, apply("kueue", "status"));
  EXPECT_EQ(conditionsOf(dropped), json::parse(R"([{"type":"Admitted","status":"True"}])"));
  EXPECT_TRUE(entryOf(dropped, "kueue").is_null());  // owns nothing any more
  EXPECT_EQ(dropped["spec"], live["spec"]);          // /status never touches the rest
}

TEST(ServerSideApplyTest, StatusSubresourceApplyIgnoresEverythingButStatus) {
  const auto version = workloadVersion();
  const auto live = serverSideApply(nullptr, workload({{"queueName", "q"}}), version, apply("creator"));
  auto config = statusConfig({{{"type", "Finished"}, {"status", "True"}}});
  config["spec"] = {{"queueName", "other"}};
  config["metadata"]["labels"] = {{"sneaky", "yes"}};
  const auto out = serverSideApply(live, config, version, apply("kueue", "status"));
  EXPECT_EQ(out["spec"], live["spec"]);
  EXPECT_FALSE(out["metadata"].contains("labels"));
  EXPECT_EQ(conditionsOf(out).size(), 1u);
}

TEST(ServerSideApplyTest, ConflictsWithAnUpdateManagerNameItsVersion) {
  const auto version = workloadVersion();
  json live = workload({{"replicas", 1}});
  recordUpdate(nullptr, live,
               UpdateOptions{"kubectl-client-side-apply", "kueue.x-k8s.io/v1beta1", "", &version.schema,
                             "2029-01-01T00:00:00Z"});
  const auto e = applyError(live, workload({{"replicas", 2}}), apply("kubectl"));
  EXPECT_EQ(e.code(), 409);
  EXPECT_STREQ(e.what(),
               "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using "
               "kueue.x-k8s.io/v1beta1: .spec.replicas");

  const auto forced = serverSideApply(live, workload({{"replicas", 2}}), version, apply("kubectl", "", true));
  EXPECT_EQ(forced["spec"]["replicas"], 2);
  EXPECT_EQ(entryOf(forced, "kubectl")["fieldsV1"], json::parse(R"({"f:spec":{"f:replicas":{}}})"));
  // The updater keeps what it still owns (the spec map it created), not replicas.
  EXPECT_EQ(entryOf(forced, "kubectl-client-side-apply", "Update")["fieldsV1"], json::parse(R"({"f:spec":{}})"));
}

TEST(ServerSideApplyTest, SeveralConflictsAreListedByManager) {
  const auto version = workloadVersion();
  auto live = serverSideApply(nullptr, workload({{"replicas", 1}, {"queueName", "q"}}), version, apply("a"));
  live = serverSideApply(live, workload({{"args", {"x"}}}), version, apply("b"));
  const auto e = applyError(live, workload({{"replicas", 2}, {"queueName", "r"}, {"args", {"y"}}}), apply("c"));
  EXPECT_STREQ(e.what(),
               "Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.queueName\n- .spec.replicas\n"
               "conflicts with \"b\":\n- .spec.args");
  EXPECT_EQ(e.details()["causes"].size(), 3u);
}

TEST(ServerSideApplyTest, AnObjectNobodyTrackedBelongsToBeforeFirstApply) {
  const json live = workload({{"replicas", 1}});
  const auto e = applyError(live, workload({{"replicas", 2}}), apply("kubectl"));
  EXPECT_STREQ(e.what(),
               "Apply failed with 1 conflict: conflict with \"before-first-apply\" using kueue.x-k8s.io/v1beta1: "
               ".spec.replicas");
}

TEST(ServerSideApplyTest, MetadataListsMergeWithoutASchema) {
  ResourceVersionInfo configMaps;
  configMaps.name = "v1";
  const json live = [] {
    json o = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata",
               {{"name", "cm"},
                {"finalizers", {"x/a"}},
                {"ownerReferences", {{{"uid", "u1"}, {"name", "one"}, {"kind", "Job"}, {"apiVersion", "batch/v1"}}}}}}};
    recordUpdate(nullptr, o, "creator", "v1", "");
    return o;
  }();
  const json config = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", "cm"},
        {"finalizers", {"x/b"}},
        {"ownerReferences", {{{"uid", "u2"}, {"name", "two"}, {"kind", "Job"}, {"apiVersion", "batch/v1"}}}}}},
      {"data", {{"k", "v"}}}};
  ApplyOptions options{"kubectl", false, "", "v1", "2030-01-01T00:00:00Z"};
  const auto out = serverSideApply(live, config, configMaps, options);
  EXPECT_EQ(out["metadata"]["finalizers"], (json{"x/a", "x/b"}));
  EXPECT_EQ(out["metadata"]["ownerReferences"].size(), 2u);
  EXPECT_EQ(entryOf(out, "kubectl")["fieldsV1"],
            json::parse(R"({"f:data":{"f:k":{}},"f:metadata":{"f:finalizers":{"v:\"x/b\"":{}},
              "f:ownerReferences":{"k:{\"uid\":\"u2\"}":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:uid":{}}}}})"));
}

TEST(ServerSideApplyTest, ANoOpApplyReturnsTheLiveObjectUnchanged) {
  const auto version = workloadVersion();
  const auto live = serverSideApply(nullptr, workload({{"queueName", "q"}}), version, apply("a"));
  auto later = apply("a");
  later.time = "2031-01-01T00:00:00Z";
  EXPECT_EQ(serverSideApply(live, workload({{"queueName", "q"}}), version, later), live);
}

struct BadApplyCase {
  std::string name;
  json config;
  ApplyOptions options;
  int code;
  std::string message;
};

std::vector<BadApplyCase> badApplyCases() {
  return {
      {"no field manager", workload({{"queueName", "q"}}), apply(""), 422,
       "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"},
      {"map-list item without its key", workload({{"podSets", {{{"count", 1}}}}}), apply("a"), 500,
       "failed to create typed patch object (kueue.x-k8s.io/v1beta1, Kind=Workload): .spec.podSets: element 0: "
       "associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"},
      {"not an object", json::array(), apply("a"), 400, "the applied configuration must be an object"},
      {"managedFields set",
       [] {
         auto config = workload({{"queueName", "q"}});
         config["metadata"]["managedFields"] = json::array();
         return config;
       }(),
       apply("a"), 400, "metadata.managedFields must be nil"},
  };
}

MKA_TABLE_TEST(ServerSideApplyTest, RejectsBadRequests, BadApplyCase, badApplyCases()) {
  const BadApplyCase& c = testCase();
  const auto e = applyError(nullptr, c.config, c.options);
  EXPECT_EQ(e.code(), c.code);
  EXPECT_EQ(std::string(e.what()), c.message);
}

}  // namespace
}  // namespace mka::sandbox::patch
