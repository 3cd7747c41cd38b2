#include "schema.h"

#include <gtest/gtest.h>

#include "support/crd_fixtures.h"
#include "support/table_test.h"

namespace mka::sandbox::schema {
namespace {

using nlohmann::json;
using sandbox::test::argoWorkflowCrd;
using sandbox::test::pipelineRunCrd;
using sandbox::test::versionSchema;
using sandbox::test::workloadCrd;

const json& workloadSchema() { return versionSchema(workloadCrd(), "v1beta2"); }

TEST(Prune, KeepsWhatTheWorkloadSchemaDeclares) {
  json workload = json::parse(R"({
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "extra": 1,
    "metadata": {"name": "wl", "namespace": "ns", "labels": {"a": "b"}, "uid": "u", "bogus": true,
                 "ownerReferences": [{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "name": "p",
                                      "uid": "u1"}]},
    "spec": {"queueName": "q", "bogus": "x",
             "podSets": [{"name": "main", "count": 2, "unknown": 1,
                          "template": {"metadata": {"labels": {"x": "y"}, "uid": "dropped"},
                                       "spec": {"containers": [{"name": "c", "image": "busybox", "bogus": 1,
                                                                "resources": {"requests": {"cpu": "1",
                                                                                           "memory": "1Gi"}}}]}}}]},
    "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "R", "message": "m",
                               "lastTransitionTime": "2025-01-01T00:00:00Z", "extra": "x"}],
               "admissionChecks": [{"name": "mk", "state": "Ready", "message": "",
                                    "lastTransitionTime": "2025-01-01T00:00:00Z"}],
               "bogus": {}}})");
  prune(workload, workloadSchema());
  EXPECT_EQ(workload, json::parse(R"({
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
    "metadata": {"name": "wl", "namespace": "ns", "labels": {"a": "b"}, "uid": "u",
                 "ownerReferences": [{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "name": "p",
                                      "uid": "u1"}]},
    "spec": {"queueName": "q",
             "podSets": [{"name": "main", "count": 2,
                          "template": {"metadata": {"labels": {"x": "y"}},
                                       "spec": {"containers": [{"name": "c", "image": "busybox",
                                                                "resources": {"requests": {"cpu": "1",
                                                                                           "memory": "1Gi"}}}]}}}]},
    "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "R", "message": "m",
                               "lastTransitionTime": "2025-01-01T00:00:00Z"}],
               "admissionChecks": [{"name": "mk", "state": "Ready", "message": "",
                                    "lastTransitionTime": "2025-01-01T00:00:00Z"}]}})"));
}

TEST(Prune, KeepsManagedByAndFreeFormParamsOfAPipelineRun) {
  const json& schema = versionSchema(pipelineRunCrd(), "v1");
  // Verified against the upstream CRD: v1 declares spec.managedBy, and spec itself is not open.
  ASSERT_TRUE(schema.at("properties").at("spec").at("properties").contains("managedBy"));
  ASSERT_FALSE(schema.at("properties").at("spec").contains("x-kubernetes-preserve-unknown-fields"));

  json run = json::parse(R"({
    "apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "metadata": {"name": "build-1"},
    "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "pipelineRef": {"name": "build"}, "notAField": 1,
             "params": [{"name": "s", "value": "x"}, {"name": "o", "value": {"a": [1, {"b": 2}]}}]}})");
  json expected = run;
  expected["spec"].erase("notAField");
  prune(run, schema);
  EXPECT_EQ(run, expected);
}

TEST(Prune, KeepsEverythingBelowArgosOpenSpecAndStatus) {
  json workflow = json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf", "generateName": "wf-"},
    "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "alpine"}}]},
    "status": {"phase": "Running", "nodes": {"wf": {"phase": "Running"}}},
    "unknown": true})");
  json expected = workflow;
  expected.erase("unknown");
  prune(workflow, versionSchema(argoWorkflowCrd(), "v1alpha1"));
  EXPECT_EQ(workflow, expected);
}

struct JsonCase {
  std::string name;
  std::string schema;
  std::string object;
  std::string expected;
};

std::vector<JsonCase> pruneCases() {
  return {
      {"null schema keeps everything", "null", R"({"a": 1, "b": {"c": 2}})", R"({"a": 1, "b": {"c": 2}})"},
      {"root keeps apiVersion, kind and ObjectMeta only", R"({"type": "object"})",
       R"({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n", "finalizers": ["f"], "x": 1}, "y": 2})",
       R"({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n", "finalizers": ["f"]}})"},
      {"object without properties loses its fields",
       R"({"type": "object", "properties": {"spec": {"type": "object"}}})", R"({"spec": {"a": 1}})", R"({"spec": {}})"},
      {"additionalProperties applies to every key",
       R"({"type": "object", "properties": {"m": {"type": "object",
           "additionalProperties": {"type": "object", "properties": {"k": {"type": "string"}}}}}})",
       R"({"m": {"a": {"k": "1", "x": 1}, "b": {"y": 2}}})", R"({"m": {"a": {"k": "1"}, "b": {}}})"},
      {"additionalProperties true keeps every key",
       R"({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": true}}})",
       R"({"m": {"a": {"deep": 1}}})", R"({"m": {"a": {"deep": 1}}})"},
      {"preserve-unknown keeps unknown fields but prunes known ones",
       R"({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
           "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}}}})",
       R"({"spec": {"free": {"any": 1}, "known": {"k": "v", "drop": 1}}})",
       R"({"spec": {"free": {"any": 1}, "known": {"k": "v"}}})"},
      {"array items are pruned one by one",
       R"({"type": "object", "properties": {"list": {"type": "array",
           "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}})",
       R"({"list": [{"k": "a", "x": 1}, {"y": 2}]})", R"({"list": [{"k": "a"}, {}]})"},
      {"array without items schema keeps its items", R"({"type": "object", "properties": {"list": {"type": "array"}}})",
       R"({"list": [{"x": 1}]})", R"({"list": [{"x": 1}]})"},
      {"embedded resource keeps apiVersion, kind and ObjectMeta",
       R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {"template": {
           "type": "object", "x-kubernetes-embedded-resource": true,
           "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}})",
       R"({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}, "nonsense": 1},
           "spec": {"containers": []}, "other": 1}}})",
       R"({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}},
           "spec": {"containers": []}}}})"},
      {"non-string apiVersion is pruned like any field", R"({"type": "object"})", R"({"apiVersion": 1, "kind": "K"})",
       R"({"kind": "K"})"},
      {"scalars where the schema wants objects are left alone",
       R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {"k": {"type": "string"}}}}})",
       R"({"spec": "text"})", R"({"spec": "text"})"},
  };
}

MKA_TABLE_TEST(Prune, FollowsStructuralPruning, JsonCase, pruneCases()) {
  const JsonCase& c = testCase();
  json object = json::parse(c.object);
  prune(object, json::parse(c.schema));
  EXPECT_EQ(object, json::parse(c.expected)) << object.dump();
}

TEST(ApplyDefaults, FillsTheWorkloadDefaults) {
  json workload = json::parse(R"({"spec": {"queueName": "q", "podSets": [
      {"template": {"spec": {"containers": []}}},
      {"name": "workers", "count": 4, "template": {"spec": {"containers": []}}}]}})");
  applyDefaults(workload, workloadSchema());
  EXPECT_EQ(workload.at("spec").at("active"), true);
  EXPECT_EQ(workload.at("spec").at("podSets")[0].at("name"), "main");
  EXPECT_EQ(workload.at("spec").at("podSets")[0].at("count"), 1);
  EXPECT_EQ(workload.at("spec").at("podSets")[1].at("name"), "workers");
  EXPECT_EQ(workload.at("spec").at("podSets")[1].at("count"), 4);
  EXPECT_FALSE(workload.contains("status"));  // no default there
}

std::vector<JsonCase> defaultCases() {
  const std::string n = R"("n": {"type": "integer", "default": 5})";
  return {
      {"absent field", R"({"type": "object", "properties": {)" + n + "}}", "{}", R"({"n": 5})"},
      {"present field kept", R"({"type": "object", "properties": {)" + n + "}}", R"({"n": 1})", R"({"n": 1})"},
      {"null replaced when not nullable", R"({"type": "object", "properties": {)" + n + "}}", R"({"n": null})",
       R"({"n": 5})"},
      {"null kept when nullable",
       R"({"type": "object", "properties": {"n": {"type": "integer", "default": 5, "nullable": true}}})",
       R"({"n": null})", R"({"n": null})"},
      {"inside array items",
       R"({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {)" + n +
           "}}}}}",
       R"({"l": [{}, {"n": 2}]})", R"({"l": [{"n": 5}, {"n": 2}]})"},
      {"inside additionalProperties",
       R"({"type": "object", "properties": {"m": {"type": "object",
           "additionalProperties": {"type": "object", "properties": {)" +
           n + "}}}}}",
       R"({"m": {"a": {}, "b": {"n": 3}}})", R"({"m": {"a": {"n": 5}, "b": {"n": 3}}})"},
      {"a defaulted object gets its own defaults",
       R"({"type": "object", "properties": {"spec": {"type": "object", "default": {}, "properties": {)" + n + "}}}}",
       "{}", R"({"spec": {"n": 5}})"},
      {"no defaults under an absent parent",
       R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {)" + n + "}}}}", "{}", "{}"},
      {"null schema changes nothing", "null", R"({"a": 1})", R"({"a": 1})"},
  };
}

MKA_TABLE_TEST(ApplyDefaults, FollowsStructuralDefaulting, JsonCase, defaultCases()) {
  const JsonCase& c = testCase();
  json object = json::parse(c.object);
  applyDefaults(object, json::parse(c.schema));
  EXPECT_EQ(object, json::parse(c.expected)) << object.dump();
}

struct ListTypeCase {
  std::string name;
  const json& (*schema)();  // called by the case, not by the table: the CRDs are read from files
  std::vector<std::string> path;
  ListType::Kind kind;
  std::vector<std::string> keys;
};

std::vector<ListTypeCase> listTypeCases() {
  const auto workload = &workloadSchema;
  const auto setSchema = []() -> const json& {
    static const json schema = {{"type", "object"},
                                {"properties", {{"tags", {{"type", "array"}, {"x-kubernetes-list-type", "set"}}}}}};
    return schema;
  };
  const auto none = []() -> const json& {
    static const json schema = nullptr;
    return schema;
  };
  return {
      {"workload conditions by type", workload, {"status", "conditions"}, ListType::Kind::Map, {"type"}},
      {"admission checks by name", workload, {"status", "admissionChecks"}, ListType::Kind::Map, {"name"}},
      {"pod sets by name", workload, {"spec", "podSets"}, ListType::Kind::Map, {"name"}},
      {"containers through list items",
       workload,
       {"spec", "podSets", "template", "spec", "containers"},
       ListType::Kind::Map,
       {"name"}},
      {"a list without list-type is atomic",
       workload,
       {"spec", "podSets", "template", "metadata", "finalizers"},
       ListType::Kind::Atomic,
       {}},
      {"not a list", workload, {"spec", "queueName"}, ListType::Kind::Atomic, {}},
      {"unknown path", workload, {"spec", "nothing", "here"}, ListType::Kind::Atomic, {}},
      {"finalizers are a set", workload, {"metadata", "finalizers"}, ListType::Kind::Set, {}},
      {"owner references by uid", workload, {"metadata", "ownerReferences"}, ListType::Kind::Map, {"uid"}},
      {"managed fields are atomic", workload, {"metadata", "managedFields"}, ListType::Kind::Atomic, {}},
      {"metadata lists without a schema", none, {"metadata", "finalizers"}, ListType::Kind::Set, {}},
      {"other lists without a schema", none, {"spec", "items"}, ListType::Kind::Atomic, {}},
      {"set", setSchema, {"tags"}, ListType::Kind::Set, {}},
      {"pipeline run conditions",
       []() -> const json& { return versionSchema(pipelineRunCrd(), "v1"); },
       {"status", "conditions"},
       ListType::Kind::Atomic,
       {}},
      {"pipeline run params are atomic",
       []() -> const json& { return versionSchema(pipelineRunCrd(), "v1"); },
       {"spec", "params"},
       ListType::Kind::Atomic,
       {}},
      {"open argo spec",
       []() -> const json& { return versionSchema(argoWorkflowCrd(), "v1alpha1"); },
       {"spec", "templates"},
       ListType::Kind::Atomic,
       {}},
  };
}

MKA_TABLE_TEST(ListTypeAt, AnswersForRealAndMetadataLists, ListTypeCase, listTypeCases()) {
  const auto& c = testCase();
  const ListType got = listTypeAt(c.schema(), c.path);
  EXPECT_EQ(got.kind, c.kind);
  EXPECT_EQ(got.mapKeys, c.keys);
}

}  // namespace
}  // namespace mka::sandbox::schema
