#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

#include "support/table_test.h"

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;

json ownerRef(const std::string& uid, const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", name}, {"uid", uid}};
}

struct StrategicCase {
  std::string name;
  json target;
  json patch;
  json want;
};

std::vector<StrategicCase> strategicMergeCases() {
  const json configMap = {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata",
                           {{"name", "cm"},
                            {"labels", {{"a", "1"}}},
                            {"finalizers", {"x/one"}},
                            {"ownerReferences", {ownerRef("u1", "one"), ownerRef("u2", "two")}}}},
                          {"data", {{"k", "v"}}}};
  auto with = [&](const std::function<void(json&)>& change) {
    json d = configMap;
    change(d);
    return d;
  };
  const json webhooks = {
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "MutatingWebhookConfiguration"},
      {"metadata", {{"name", "mwc"}}},
      {"webhooks",
       {{{"name", "a.example.com"}, {"timeoutSeconds", 10}}, {{"name", "b.example.com"}, {"timeoutSeconds", 10}}}}};
  return {
      {"maps merge like a merge patch",
       configMap,
       {{"metadata", {{"labels", {{"a", nullptr}, {"b", "2"}}}}}, {"data", {{"k2", "v2"}}}},
       with([](json& d) {
         d["metadata"]["labels"] = {{"b", "2"}};
         d["data"]["k2"] = "v2";
       })},
      {"ownerReferences merge by uid",
       configMap,
       {{"metadata", {{"ownerReferences", {{{"uid", "u2"}, {"name", "renamed"}}, ownerRef("u3", "three")}}}}},
       with([](json& d) {
         d["metadata"]["ownerReferences"][1]["name"] = "renamed";
         d["metadata"]["ownerReferences"].push_back(ownerRef("u3", "three"));
       })},
      {"$patch: delete removes an item by key",
       configMap,
       {{"metadata", {{"ownerReferences", {{{"uid", "u1"}, {"$patch", "delete"}}}}}}},
       with([](json& d) { d["metadata"]["ownerReferences"] = {ownerRef("u2", "two")}; })},
      {"$patch: replace replaces the list",
       configMap,
       {{"metadata", {{"ownerReferences", {{{"$patch", "replace"}}, ownerRef("u9", "nine")}}}}},
       with([](json& d) { d["metadata"]["ownerReferences"] = {ownerRef("u9", "nine")}; })},
      {"finalizers merge as a set", configMap, {{"metadata", {{"finalizers", {"x/two", "x/one"}}}}}, with([](json& d) {
         d["metadata"]["finalizers"] = {"x/one", "x/two"};
       })},
      {"$deleteFromPrimitiveList removes finalizers",
       configMap,
       {{"metadata", {{"$deleteFromPrimitiveList/finalizers", {"x/one"}}}}},
       with([](json& d) { d["metadata"]["finalizers"] = json::array(); })},
      {"$setElementOrder is accepted and dropped",
       configMap,
       {{"metadata",
         {{"$setElementOrder/ownerReferences", {{{"uid", "u2"}}, {{"uid", "u1"}}}},
          {"ownerReferences", {{{"uid", "u2"}, {"name", "renamed"}}}}}}},
       with([](json& d) { d["metadata"]["ownerReferences"][1]["name"] = "renamed"; })},
      {"$patch: replace on a map", configMap, {{"data", {{"$patch", "replace"}, {"only", "this"}}}}, with([](json& d) {
         d["data"] = {{"only", "this"}};
       })},
      {"$patch: delete on a map", configMap, {{"data", {{"$patch", "delete"}}}}, with([](json& d) {
         d.erase("data");
       })},
      {"$retainKeys clears other fields",
       configMap,
       {{"data", {{"$retainKeys", {"k2"}}, {"k2", "v2"}}}},
       with([](json& d) {
         d["data"] = {{"k2", "v2"}};
       })},
      {"webhooks merge by name",
       webhooks,
       {{"webhooks", {{{"name", "b.example.com"}, {"timeoutSeconds", 5}}}}},
       [&] {
         json d = webhooks;
         d["webhooks"][1]["timeoutSeconds"] = 5;
         return d;
       }()},
      {"other lists are replaced",
       {{"kind", "Secret"}, {"metadata", {{"name", "s"}}}, {"type", "Opaque"}, {"x", {1, 2}}},
       {{"x", {3}}},
       {{"kind", "Secret"}, {"metadata", {{"name", "s"}}}, {"type", "Opaque"}, {"x", {3}}}},
      {"new items lose their directives and nulls",
       configMap,
       {{"metadata", {{"ownerReferences", {{{"uid", "u5"}, {"name", "five"}, {"controller", nullptr}}}}}}},
       with([](json& d) {
         d["metadata"]["ownerReferences"].push_back({{"uid", "u5"}, {"name", "five"}});
       })},
  };
}

MKA_TABLE_TEST(StrategicMergePatchTest, MergesBuiltInListsByTheirKeys, StrategicCase, strategicMergeCases()) {
  const StrategicCase& c = testCase();
  EXPECT_EQ(strategicMergePatch(c.target, c.patch), c.want);
}

struct MalformedStrategicPatch {
  std::string name;
  json patch;
};

std::vector<MalformedStrategicPatch> malformedStrategicPatches() {
  return {
      {"not an object", json::array()},
      {"item without its merge key", {{"metadata", {{"ownerReferences", {{{"name", "x"}}}}}}}},
      {"unknown directive", {{"data", {{"$patch", "explode"}}}}},
  };
}

MKA_TABLE_TEST(StrategicMergePatchTest, RejectsMalformedPatches, MalformedStrategicPatch, malformedStrategicPatches()) {
  const auto& [name, patch] = testCase();
  const json target = {{"kind", "ConfigMap"}, {"metadata", {{"name", "cm"}}}};
  try {
    strategicMergePatch(target, patch);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 400);
  }
}

}  // namespace
}  // namespace mka::sandbox::patch
