// x-kubernetes-validations (CEL) rules enforced on custom resources as kube-apiserver enforces
// them: Kueue's Workload rules the adapter could plausibly break, and the rule features
// (messageExpression, reason, fieldPath, transition rules, ratcheting) on a small CRD.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"
#include "support/thrown.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class CrdValidationRules : public ::testing::Test {
 protected:
  CrdValidationRules() : api("test", registry, store, clock) {
    api.create(nsRef(), json{{"metadata", {{"name", "default"}}}});
    api.create(crdRef(), test::workloadCrd());
  }

  static ResourceRef nsRef() { return {"", "v1", "namespaces", "", "", ""}; }
  static ResourceRef crdRef(const std::string& name = "") {
    return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", name, ""};
  }
  static ResourceRef wlRef(const std::string& name = "", const std::string& sub = "") {
    return {"kueue.x-k8s.io", "v1beta1", "workloads", "default", name, sub};
  }
  static ResourceRef widgetRef(const std::string& name = "", const std::string& sub = "") {
    return {"example.com", "v1", "widgets", "default", name, sub};
  }

  static json workload() {
    return {{"metadata", {{"name", "wl"}}},
            {"spec",
             {{"queueName", "q"},
              {"podSets",
               {{{"name", "main"},
                 {"count", 2},
                 {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}}}}}}}}};
  }

  static json condition(const std::string& type, const std::string& status = "True") {
    return {{"type", type},
            {"status", status},
            {"reason", "R"},
            {"message", "m"},
            {"lastTransitionTime", "2026-11-26T10:00:00Z"}};
  }

  // The message of the 422 a write is refused with.
  template <typename F>
  static std::string refusal(F&& write) {
    const auto error = mka::test::thrownBy<ApiError>(std::forward<F>(write));
    EXPECT_EQ(error.code(), 422) << error.what();
    return error.what();
  }

  // A Widget CRD whose spec carries `rules`, and an atomic list and a list-map to hang rules on.
  static json widgetCrd(const json& rules, const json& itemRules = json::array()) {
    json spec = {{"type", "object"},
                 {"properties",
                  {{"size", {{"type", "integer"}}},
                   {"mode", {{"type", "string"}}},
                   {"owner", {{"type", "string"}}},
                   {"labels", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
                   {"ports",
                    {{"type", "array"},
                     {"x-kubernetes-list-type", "map"},
                     {"x-kubernetes-list-map-keys", {"name"}},
                     {"items",
                      {{"type", "object"},
                       {"required", {"name"}},
                       {"properties", {{"name", {{"type", "string"}}}, {"port", {{"type", "integer"}}}}},
                       {"x-kubernetes-validations", itemRules}}}}},
                   {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}};
    if (!rules.empty()) spec["x-kubernetes-validations"] = rules;
    return {
        {"apiVersion", "apiextensions.k8s.io/v1"},
        {"kind", "CustomResourceDefinition"},
        {"metadata", {{"name", "widgets.example.com"}}},
        {"spec",
         {{"group", "example.com"},
          {"scope", "Namespaced"},
          {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}, {"listKind", "WidgetList"}}},
          {"versions",
           {{{"name", "v1"},
             {"served", true},
             {"storage", true},
             {"schema", {{"openAPIV3Schema", {{"type", "object"}, {"properties", {{"spec", spec}}}}}}}}}}}}};
  }

  static json widget(const json& spec) { return {{"metadata", {{"name", "w"}}}, {"spec", spec}}; }

  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
};

struct WorkloadRuleRefusal {
  std::string name;
  std::function<json(json)> change;
  std::string message;
};
std::vector<WorkloadRuleRefusal> workloadRuleRefusals() {
  return {
      {"a priority class name without a priority",
       [](json wl) {
         wl["spec"]["priorityClassName"] = "high";
         return wl;
       },
       "Workload.kueue.x-k8s.io \"wl\" is invalid: spec: Invalid value: \"object\": priority should not be nil when "
       "priorityClassName is set"},
      {"a pod set whose minCount exceeds its count",
       [](json wl) {
         wl["spec"]["podSets"][0]["minCount"] = 3;
         return wl;
       },
       "Workload.kueue.x-k8s.io \"wl\" is invalid: spec.podSets[0]: Invalid value: \"object\": minCount should be "
       "positive and less or equal to count"},
      {"both at once, in one answer, a node's rules before its children's",
       [](json wl) {
         wl["spec"]["priorityClassName"] = "high";
         wl["spec"]["podSets"][0]["minCount"] = 3;
         return wl;
       },
       "Workload.kueue.x-k8s.io \"wl\" is invalid: [spec: Invalid value: \"object\": priority should not be nil when "
       "priorityClassName is set, spec.podSets[0]: Invalid value: \"object\": minCount should be positive and less "
       "or equal to count]"},
  };
}

MKA_TABLE_TEST_F(CrdValidationRules, WorkloadsTheAdapterCouldGetWrongAreRefusedWithKubesMessages, WorkloadRuleRefusal,
                 workloadRuleRefusals()) {
  const auto& c = testCase();
  EXPECT_EQ(refusal([&] { api.create(wlRef(), c.change(workload())); }), c.message);
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.get(wlRef("wl")); }).code(), 404) << "nothing stored";
}

TEST_F(CrdValidationRules, AWorkloadThatKeepsTheRulesIsStored) {
  auto valid = workload();
  valid["spec"]["priorityClassName"] = "high";
  valid["spec"]["priority"] = 100;
  valid["spec"]["podSets"][0]["minCount"] = 2;
  EXPECT_NO_THROW(api.create(wlRef(), valid));
}

TEST_F(CrdValidationRules, WorkloadStatusRulesHoldOnTheStatusSubresource) {
  auto stored = *api.create(wlRef(), workload());
  const auto status = wlRef("wl", "status");

  // Quota reserved with two assignments for one pod set.
  auto mismatch = stored;
  mismatch["status"] = {
      {"conditions", {condition("QuotaReserved")}},
      {"admission",
       {{"clusterQueue", "cq"},
        {"podSetAssignments", {{{"name", "main"}, {"count", 2}}, {{"name", "extra"}, {"count", 1}}}}}}};
  EXPECT_EQ(refusal([&] { api.update(status, mismatch); }),
            "Workload.kueue.x-k8s.io \"wl\" is invalid: <nil>: Invalid value: \"object\": podSetAssignments must have "
            "the same number of podSets as the spec");

  // A condition without a reason: the OpenAPI error, and the rules left unchecked.
  auto noReason = stored;
  noReason["status"] = {{"conditions", {condition("Finished")}}};
  noReason["status"]["conditions"][0].erase("reason");
  EXPECT_EQ(refusal([&] { api.update(status, noReason); }),
            "Workload.kueue.x-k8s.io \"wl\" is invalid: [status.conditions[0].reason: Required value, <nil>: Invalid "
            "value: \"null\": some validation rules were not checked because the object was invalid; correct the "
            "existing errors to complete validation]");

  // clusterName: mutually exclusive with nominations, and immutable once set (a transition rule).
  auto both = stored;
  both["status"] = {{"clusterName", "w1"}, {"nominatedClusterNames", {"w1", "w2"}}};
  EXPECT_EQ(refusal([&] { api.update(status, both); }),
            "Workload.kueue.x-k8s.io \"wl\" is invalid: status: Invalid value: \"object\": clusterName and "
            "nominatedClusterNames are mutually exclusive");
  auto chosen = stored;
  chosen["status"] = {{"clusterName", "w1"}};
  auto written = *api.update(status, chosen);
  written["status"]["clusterName"] = "w2";
  EXPECT_EQ(refusal([&] { api.update(status, written); }),
            "Workload.kueue.x-k8s.io \"wl\" is invalid: status: Invalid value: \"object\": clusterName is immutable "
            "once set");
  written["status"].erase("clusterName");
  EXPECT_NO_THROW(api.update(status, written)) << "the rule allows clearing it";
}

TEST_F(CrdValidationRules, MessageExpressionReasonAndFieldPathShapeTheError) {
  api.create(crdRef(), widgetCrd(json::array({
                           {{"rule", "!has(self.size) || self.size <= 10"},
                            {"messageExpression", "'size ' + string(self.size) + ' is above 10'"},
                            {"fieldPath", ".size"}},
                           {{"rule", "self.mode != 'root'"}, {"reason", "FieldValueForbidden"}, {"message", "no root"}},
                           {{"rule", "self.owner.startsWith('team-')"}},
                       })));
  EXPECT_EQ(refusal([&] {
              api.create(widgetRef(), widget({{"size", 11}, {"mode", "root"}, {"owner", "team-a"}}));
            }),
            "Widget.example.com \"w\" is invalid: [spec.size: Invalid value: \"object\": size 11 is above 10, spec: "
            "Forbidden: no root]");
  // A rule that reads a field the object does not have fails to evaluate, with cel-go's reason.
  EXPECT_EQ(refusal([&] {
              api.create(widgetRef(), widget({{"mode", "user"}}));
            }),
            "Widget.example.com \"w\" is invalid: spec: Invalid value: \"object\": no such key: owner evaluating rule: "
            "self.owner.startsWith('team-')");
  // Without a message, "failed rule: <rule>".
  EXPECT_EQ(refusal([&] {
              api.create(widgetRef(), widget({{"mode", "user"}, {"owner", "me"}}));
            }),
            "Widget.example.com \"w\" is invalid: spec: Invalid value: \"object\": failed rule: "
            "self.owner.startsWith('team-')");
  EXPECT_NO_THROW(api.create(widgetRef(), widget({{"mode", "user"}, {"owner", "team-a"}})));
}

TEST_F(CrdValidationRules, TransitionRulesSeeTheCorrelatedOldValue) {
  api.create(crdRef(),
             widgetCrd(json::array({{{"rule", "self.mode == oldSelf.mode"}, {"message", "mode is immutable"}}}),
                       json::array({{{"rule", "!has(oldSelf.port) || self.port >= oldSelf.port"},
                                     {"message", "a port may only grow"}}})));
  auto w = *api.create(
      widgetRef(),
      widget({{"mode", "a"}, {"ports", {{{"name", "http"}, {"port", 80}}, {{"name", "tls"}, {"port", 443}}}}}));
  auto changedMode = w;
  changedMode["spec"]["mode"] = "b";
  EXPECT_EQ(refusal([&] { api.update(widgetRef("w"), changedMode); }),
            "Widget.example.com \"w\" is invalid: spec: Invalid value: \"object\": mode is immutable");
  // List-map entries correlate by key, wherever they move: "tls" shrank, "http" is new at index 1.
  auto reordered = w;
  reordered["spec"]["ports"] = {{{"name", "tls"}, {"port", 442}}, {{"name", "http"}, {"port", 81}}};
  EXPECT_EQ(refusal([&] { api.update(widgetRef("w"), reordered); }),
            "Widget.example.com \"w\" is invalid: spec.ports[0]: Invalid value: \"object\": a port may only grow");
  reordered["spec"]["ports"][0]["port"] = 8443;
  reordered["spec"]["ports"].push_back({{"name", "admin"}, {"port", 1}});
  EXPECT_NO_THROW(api.update(widgetRef("w"), reordered)) << "a new entry has no old value to compare";
}

TEST_F(CrdValidationRules, AnUnchangedValueKeepsTheErrorsItWasStoredWith) {
  api.create(crdRef(), widgetCrd(json::array()));
  api.create(widgetRef(), widget({{"size", 50}, {"mode", "a"}}));
  // The rule arrives after the object was stored.
  auto crd = api.get(crdRef("widgets.example.com"));
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
      json::array({{{"rule", "self.size <= 10"}, {"message", "too big"}}});
  api.update(crdRef("widgets.example.com"), crd);

  auto w = api.get(widgetRef("w"));
  w["metadata"]["labels"] = {{"touched", "yes"}};
  EXPECT_NO_THROW(w = *api.update(widgetRef("w"), w)) << "spec unchanged: ratcheted";
  w["spec"]["mode"] = "b";
  EXPECT_EQ(refusal([&] { api.update(widgetRef("w"), w); }),
            "Widget.example.com \"w\" is invalid: spec: Invalid value: \"object\": too big");
}

// The Status causes a client reads (kubectl, client-go's field errors): a type error is
// FieldValueTypeInvalid and leaves the rules unchecked, under the field "<nil>".
TEST_F(CrdValidationRules, CausesCarryKubesReasonsAndFields) {
  api.create(crdRef(), widgetCrd(json::array({{{"rule", "self.size <= 10"}}})));
  const auto error = mka::test::thrownBy<ApiError>([&] { api.create(widgetRef(), widget({{"size", "big"}})); });
  EXPECT_EQ(error.details()["causes"], json::parse(R"([{"reason": "FieldValueTypeInvalid", "field": "spec.size",
                             "message": "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""},
                            {"reason": "FieldValueInvalid", "field": "<nil>",
                             "message": "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"}])"));
}

TEST_F(CrdValidationRules, ACrdWithARuleTheSandboxCannotEnforceIsRefused) {
  const std::string unsupported = refusal([&] {
    api.create(crdRef(), widgetCrd(json::array({{{"rule", "quantity(self.mode).isGreaterThan(1)"}}})));
  });
  EXPECT_THAT(unsupported, HasSubstr("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-"
                                     "validations[0].rule: Invalid value: \"quantity(self.mode).isGreaterThan(1)\": "
                                     "compilation failed: "));
  EXPECT_THAT(unsupported, HasSubstr("quantity"));
  // Compiled schemas are shared between writes and clusters: the same CRD is refused again.
  EXPECT_EQ(refusal([&] {
              api.create(crdRef(), widgetCrd(json::array({{{"rule", "quantity(self.mode).isGreaterThan(1)"}}})));
            }),
            unsupported);

  const std::string uncorrelatable = refusal([&] {
    json crd = widgetCrd(json::array());
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"]["items"]
       ["x-kubernetes-validations"] = json::array({{{"rule", "self == oldSelf"}}});
    api.create(crdRef(), crd);
  });
  EXPECT_THAT(uncorrelatable, HasSubstr("properties[spec].properties[tags].items.x-kubernetes-validations[0].rule: "
                                        "Invalid value: \"self == oldSelf\": oldSelf cannot be used on the "
                                        "uncorrelatable portion of the schema"));

  const std::string pattern = refusal([&] {
    json crd = widgetCrd(json::array());
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mode"]["pattern"] =
        "(?P<x>a)";
    api.create(crdRef(), crd);
  });
  EXPECT_THAT(pattern, HasSubstr("properties[spec].properties[mode].pattern: Invalid value: \"(?P<x>a)\""));
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.get(crdRef("widgets.example.com")); }).code(), 404);
}

}  // namespace
}  // namespace mka::sandbox
