// The OpenAPI validation of custom resources, with kube-apiserver's field paths and messages.
#include <gtest/gtest.h>

#include "schema.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"

namespace mka::sandbox::schema {
namespace {

using nlohmann::json;
using sandbox::test::versionSchema;
using sandbox::test::workloadCrd;

std::vector<std::string> rendered(const FieldErrors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.toString());
  return out;
}

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "spec": {
      "type": "object",
      "required": ["name"],
      "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0, "multipleOf": 0.5},
        "policy": {"type": "string", "enum": ["Always", "Never"]},
        "port": {"x-kubernetes-int-or-string": true},
        "when": {"type": "string", "format": "date-time"},
        "note": {"type": "string", "nullable": true},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "hosts": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                       "items": {"type": "object", "required": ["type"],
                                 "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }
    }
  }
})");

json withSpec(json spec) {
  if (!spec.contains("name")) spec["name"] = "ok";
  return {{"apiVersion", "example.com/v1"}, {"kind", "Thing"}, {"metadata", {{"name", "t"}}}, {"spec", spec}};
}

struct ValidationCase {
  std::string name;
  json spec;
  std::vector<std::string> errors;
};

std::vector<ValidationCase> validationCases() {
  return {
      {"valid", {{"replicas", 3}, {"policy", "Never"}, {"port", "http"}, {"note", nullptr}}, {}},
      {"int-or-string takes an integer", {{"port", 8080}}, {}},
      {"2.0 is an integer", {{"replicas", 2.0}}, {}},
      {"wrong type",
       {{"replicas", "three"}},
       {"spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""}},
      {"a float is not an integer",
       {{"replicas", 1.5}},
       {"spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""}},
      {"int-or-string refuses a boolean",
       {{"port", true}},
       {"spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""}},
      {"required", {{"name", nullptr}}, {"spec.name: Required value"}},
      {"below the minimum",
       {{"replicas", 0}},
       {"spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"}},
      {"above the maximum",
       {{"replicas", 11}},
       {"spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"}},
      {"exclusive minimum",
       {{"ratio", 0}},
       {"spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"}},
      {"multiple of",
       {{"ratio", 0.7}},
       {"spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"}},
      {"enum",
       {{"policy", "Sometimes"}},
       {"spec.policy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""}},
      {"pattern", {{"name", "Abc"}}, {"spec.name: Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'"}},
      {"too long", {{"name", "abcdefghi"}}, {"spec.name: Too long: may not be more than 8 bytes"}},
      {"too short",
       {{"name", ""}},
       {"spec.name: Invalid value: \"\": spec.name in body should be at least 1 chars long",
        "spec.name: Invalid value: \"\": spec.name in body should match '^[a-z]+$'"}},
      {"date-time",
       {{"when", "yesterday"}},
       {"spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\""}},
      {"too many items", {{"tags", {"a", "b", "c"}}}, {"spec.tags: Too many: 3: must have at most 2 items"}},
      {"too few items",
       {{"hosts", json::array()}},
       {"spec.hosts: Invalid value: 0: spec.hosts in body should have at least 1 items"}},
      {"set duplicates", {{"tags", {"a", "a"}}}, {"spec.tags[1]: Duplicate value: \"a\""}},
      {"map-list duplicate keys",
       {{"conditions", {{{"type", "Ready"}, {"status", "True"}}, {{"type", "Ready"}, {"status", "False"}}}}},
       {"spec.conditions[1]: Duplicate value: map[string]interface {}{\"type\":\"Ready\"}"}},
      {"items are validated", {{"conditions", {{{"status", "True"}}}}}, {"spec.conditions[0].type: Required value"}},
      {"additionalProperties",
       {{"labels", {{"a", 1}}}},
       {"spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\""}},
      {"preserved unknown fields are not checked", {{"free", {{"anything", {1, "two"}}}}}, {}},
      {"every problem at once",
       {{"replicas", 0}, {"policy", "x"}},
       {"spec.policy: Unsupported value: \"x\": supported values: \"Always\", \"Never\"",
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"}},
  };
}

MKA_TABLE_TEST(SchemaValidation, RefusesWhatKubeApiserverRefusesInItsWords, ValidationCase, validationCases()) {
  const ValidationCase& c = testCase();
  EXPECT_EQ(rendered(validate(withSpec(c.spec), kSchema)), c.errors);
}

TEST(SchemaValidation, NullsOfFieldsThatAreNotNullableAreDropped) {
  json object = withSpec({{"replicas", nullptr}, {"note", nullptr}});
  pruneNulls(object, kSchema);
  EXPECT_FALSE(object["spec"].contains("replicas"));
  EXPECT_TRUE(object["spec"].contains("note")) << "nullable: the null stays";
  EXPECT_TRUE(validate(object, kSchema).empty());
}

TEST(SchemaValidation, AWorkloadTheAdapterCouldGetWrong) {
  const json& schema = versionSchema(workloadCrd(), "v1beta2");
  json wl = json::parse(R"({
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "wl", "namespace": "ns"},
    "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1,
             "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})");
  EXPECT_TRUE(validate(wl, schema).empty()) << rendered(validate(wl, schema)).front();

  json noPodSets = wl;
  noPodSets["spec"]["podSets"] = json::array();
  EXPECT_EQ(
      rendered(validate(noPodSets, schema)),
      std::vector<std::string>{"spec.podSets: Invalid value: 0: spec.podSets in body should have at least 1 items"});

  json noTemplate = wl;
  noTemplate["spec"]["podSets"][0].erase("template");
  EXPECT_EQ(rendered(validate(noTemplate, schema)),
            std::vector<std::string>{"spec.podSets[0].template: Required value"});

  json badCondition = wl;
  badCondition["status"] = {{"conditions", {{{"type", "Finished"}, {"status", "Maybe"}}}}};
  const auto errors = rendered(validate(badCondition, schema));
  EXPECT_NE(std::find(errors.begin(), errors.end(), "status.conditions[0].reason: Required value"), errors.end());
  EXPECT_NE(std::find(errors.begin(), errors.end(),
                      "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", "
                      "\"False\", \"Unknown\""),
            errors.end());
}

}  // namespace
}  // namespace mka::sandbox::schema
