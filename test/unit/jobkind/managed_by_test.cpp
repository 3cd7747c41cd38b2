#include "mka/jobkind/managed_by.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::jobkind {
namespace {

using nlohmann::json;

ManagedByLocation specPath(std::string p = "spec.managedBy") {
  ManagedByLocation where;
  where.path = std::move(p);
  return where;
}

ManagedByLocation label(std::string key = "workflows.argoproj.io/controller-instanceid",
                        std::string value = "multikueue") {
  ManagedByLocation where;
  where.type = ManagedByLocation::Type::Label;
  where.path.clear();
  where.labelKey = std::move(key);
  where.value = std::move(value);
  return where;
}

struct PatchCase {
  std::string name;
  json object;
  ManagedByLocation where;
  json expectedPatch;
};

std::vector<PatchCase> addsTheMarkerAndOnlyTheMissingParentsCases() {
  const json kueue = "kueue.x-k8s.io/multikueue";
  const std::vector<PatchCase> cases = {
      {"spec exists", json{{"spec", {{"pipelineRef", {{"name", "p"}}}}}}, specPath(),
       json::array({{{"op", "add"}, {"path", "/spec/managedBy"}, {"value", kueue}}})},
      {"no spec", json{{"metadata", {{"name", "x"}}}}, specPath(),
       json::array({{{"op", "add"}, {"path", "/spec"}, {"value", {{"managedBy", kueue}}}}})},
      {"null spec", json{{"spec", nullptr}}, specPath(),
       json::array({{{"op", "add"}, {"path", "/spec"}, {"value", {{"managedBy", kueue}}}}})},
      {"empty spec", json{{"spec", json::object()}}, specPath(),
       json::array({{{"op", "add"}, {"path", "/spec/managedBy"}, {"value", kueue}}})},
      {"run policy exists", json{{"spec", {{"runPolicy", {{"cleanPodPolicy", "None"}}}}}},
       specPath("spec.runPolicy.managedBy"),
       json::array({{{"op", "add"}, {"path", "/spec/runPolicy/managedBy"}, {"value", kueue}}})},
      {"run policy missing", json{{"spec", {{"replicas", 1}}}}, specPath("spec.runPolicy.managedBy"),
       json::array({{{"op", "add"}, {"path", "/spec/runPolicy"}, {"value", {{"managedBy", kueue}}}}})},
      {"spec missing, deep path", json::object(), specPath("spec.runPolicy.managedBy"),
       json::array({{{"op", "add"}, {"path", "/spec"}, {"value", {{"runPolicy", {{"managedBy", kueue}}}}}}})},
      {"existing value is overwritten", json{{"spec", {{"managedBy", ""}}}}, specPath(),
       json::array({{{"op", "add"}, {"path", "/spec/managedBy"}, {"value", kueue}}})},
      {"labels exist", json{{"metadata", {{"labels", {{"app", "x"}}}}}}, label(),
       json::array({{{"op", "add"},
                     {"path", "/metadata/labels/workflows.argoproj.io~1controller-instanceid"},
                     {"value", "multikueue"}}})},
      {"no labels", json{{"metadata", {{"name", "wf"}}}}, label(),
       json::array({{{"op", "add"},
                     {"path", "/metadata/labels"},
                     {"value", {{"workflows.argoproj.io/controller-instanceid", "multikueue"}}}}})},
      {"no metadata", json{{"spec", json::object()}}, label(),
       json::array({{{"op", "add"},
                     {"path", "/metadata"},
                     {"value", {{"labels", {{"workflows.argoproj.io/controller-instanceid", "multikueue"}}}}}}})},
      {"tilde in a key", json{{"metadata", {{"labels", json::object()}}}}, label("example.com/a~b", "v"),
       json::array({{{"op", "add"}, {"path", "/metadata/labels/example.com~1a~0b"}, {"value", "v"}}})},
      {"spec is a list: nothing sane to write", json{{"spec", json::array()}}, specPath(), json::array()},
      {"labels is a string", json{{"metadata", {{"labels", "x"}}}}, label(), json::array()},
      {"object is not an object", json::array(), specPath(), json::array()},
  };
  return cases;
}

MKA_TABLE_TEST(ManagedByPatch, AddsTheMarkerAndOnlyTheMissingParents, PatchCase,
               addsTheMarkerAndOnlyTheMissingParentsCases()) {
  const PatchCase& c = testCase();
  const auto patch = managedByPatch(c.object, c.where);
  EXPECT_EQ(patch, c.expectedPatch) << patch.dump();
  if (c.expectedPatch.empty()) return;

  // Applying the patch sets the marker and leaves every other value as it was.
  const auto patched = c.object.patch(patch);
  EXPECT_EQ(readManagedBy(patched, c.where), c.where.value);
  auto restored = patched;
  removeManagedBy(restored, c.where);
  auto original = c.object;
  removeManagedBy(original, c.where);
  const auto diff = json::diff(original, restored);
  for (const auto& op : diff) {
    // Only parents the patch created may remain (empty), in place of nothing or of a null.
    const bool wasNull = op["op"] == "replace" && original.at(json::json_pointer(op["path"])).is_null();
    EXPECT_TRUE(op["op"] == "add" || wasNull) << diff.dump();
    EXPECT_TRUE(op["value"].is_object()) << diff.dump();
  }
}

TEST(ManagedByPatch, NeverReplacesExistingMaps) {
  const json object = {{"metadata", {{"name", "wf"}, {"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}},
                       {"spec", {{"runPolicy", {{"backoffLimit", 3}}}}}};
  for (const auto& where : {label(), specPath("spec.runPolicy.managedBy")}) {
    SCOPED_TRACE(where.fieldPath());
    const auto patched = object.patch(managedByPatch(object, where));
    EXPECT_EQ(patched["metadata"]["name"], "wf");
    EXPECT_EQ(patched["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "q");
    EXPECT_EQ(patched["spec"]["runPolicy"]["backoffLimit"], 3);
  }
}

struct FindsTheMarkerOnlyWhereItIsAStringCase {
  std::string name;
  json object;
  ManagedByLocation where;
  std::optional<std::string> expected;
};

std::vector<FindsTheMarkerOnlyWhereItIsAStringCase> findsTheMarkerOnlyWhereItIsAStringCases() {
  const std::vector<FindsTheMarkerOnlyWhereItIsAStringCase> cases = {
      {"set", json{{"spec", {{"managedBy", "kueue.x-k8s.io/multikueue"}}}}, specPath(), "kueue.x-k8s.io/multikueue"},
      {"empty string", json{{"spec", {{"managedBy", ""}}}}, specPath(), ""},
      {"absent", json{{"spec", json::object()}}, specPath(), std::nullopt},
      {"no spec", json::object(), specPath(), std::nullopt},
      {"spec is a string", json{{"spec", "x"}}, specPath(), std::nullopt},
      {"not a string", json{{"spec", {{"managedBy", 3}}}}, specPath(), std::nullopt},
      {"null", json{{"spec", {{"managedBy", nullptr}}}}, specPath(), std::nullopt},
      {"nested", json{{"spec", {{"runPolicy", {{"managedBy", "x"}}}}}}, specPath("spec.runPolicy.managedBy"), "x"},
      {"label", json{{"metadata", {{"labels", {{"workflows.argoproj.io/controller-instanceid", "mk"}}}}}}, label(),
       "mk"},
      {"no labels", json{{"metadata", json::object()}}, label(), std::nullopt},
      {"not an object", json::array(), label(), std::nullopt},
  };
  return cases;
}

MKA_TABLE_TEST(ReadManagedBy, FindsTheMarkerOnlyWhereItIsAString, FindsTheMarkerOnlyWhereItIsAStringCase,
               findsTheMarkerOnlyWhereItIsAStringCases()) {
  const FindsTheMarkerOnlyWhereItIsAStringCase& c = testCase();
  EXPECT_EQ(readManagedBy(c.object, c.where), c.expected);
}

struct RemovesOnlyTheMarkerCase {
  std::string name;
  json object;
  ManagedByLocation where;
  json expected;
};

std::vector<RemovesOnlyTheMarkerCase> removesOnlyTheMarkerCases() {
  const std::vector<RemovesOnlyTheMarkerCase> cases = {
      {"path", json{{"spec", {{"managedBy", "kueue.x-k8s.io/multikueue"}, {"x", 1}}}}, specPath(),
       json{{"spec", {{"x", 1}}}}},
      {"nested path", json{{"spec", {{"runPolicy", {{"managedBy", "m"}, {"y", 2}}}}}},
       specPath("spec.runPolicy.managedBy"), json{{"spec", {{"runPolicy", {{"y", 2}}}}}}},
      {"label", json{{"metadata", {{"labels", {{"workflows.argoproj.io/controller-instanceid", "mk"}, {"a", "b"}}}}}},
       label(), json{{"metadata", {{"labels", {{"a", "b"}}}}}}},
      {"absent is a no-op", json{{"spec", {{"x", 1}}}}, specPath(), json{{"spec", {{"x", 1}}}}},
      {"missing parent is a no-op", json{{"metadata", {{"name", "n"}}}}, label(), json{{"metadata", {{"name", "n"}}}}},
      {"parent not an object", json{{"spec", "s"}}, specPath(), json{{"spec", "s"}}},
      {"not an object", json::array({1}), specPath(), json::array({1})},
  };
  return cases;
}

MKA_TABLE_TEST(RemoveManagedBy, RemovesOnlyTheMarker, RemovesOnlyTheMarkerCase, removesOnlyTheMarkerCases()) {
  const RemovesOnlyTheMarkerCase& c = testCase();
  auto object = c.object;
  removeManagedBy(object, c.where);
  EXPECT_EQ(object, c.expected);
}

}  // namespace
}  // namespace mka::jobkind
