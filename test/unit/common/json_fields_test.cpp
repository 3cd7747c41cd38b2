#include "mka/common/json_fields.h"

#include <gtest/gtest.h>

namespace mka::json_fields {
namespace {

using nlohmann::json;

TEST(JsonFieldsTest, StringMemberReadsStringsAndFallsBackOnAnythingElse) {
  const json object = {{"kind", "Workload"}, {"count", 3}, {"nothing", nullptr}};
  EXPECT_EQ(stringMember(object, "kind"), "Workload");
  EXPECT_EQ(stringMember(object, "count"), "");  // another type
  EXPECT_EQ(stringMember(object, "nothing", "none"), "none");
  EXPECT_EQ(stringMember(object, "missing", "fallback"), "fallback");
  EXPECT_EQ(stringMember(json::array({"kind"}), "kind", "x"), "x");  // not an object
  EXPECT_EQ(stringMember(json(nullptr), "kind"), "");
}

TEST(JsonFieldsTest, MetadataStringReadsObjectMetadata) {
  const json object = {{"metadata", {{"name", "build-1"}, {"namespace", "team-a"}, {"generation", 2}}}};
  EXPECT_EQ(metadataString(object, "name"), "build-1");
  EXPECT_EQ(metadataString(object, "namespace"), "team-a");
  EXPECT_EQ(metadataString(object, "generation"), "");
  EXPECT_EQ(metadataString(object, "uid"), "");
  EXPECT_EQ(metadataString(json{{"metadata", "oops"}}, "name"), "");
  EXPECT_EQ(metadataString(json::object(), "name"), "");
  EXPECT_EQ(metadataString(json("text"), "name"), "");
}

TEST(JsonFieldsTest, ObjectAndArrayMembersAreReferencesOrEmpty) {
  const json object = {{"status", {{"conditions", {{{"type", "Admitted"}}}}}}, {"spec", "text"}, {"list", {1, 2}}};
  EXPECT_EQ(&objectMember(object, "status"), &object["status"]) << "the member itself, not a copy";
  EXPECT_EQ(&arrayMember(objectMember(object, "status"), "conditions"), &object["status"]["conditions"]);
  EXPECT_EQ(objectMember(object, "spec"), json::object()) << "another type reads as empty";
  EXPECT_EQ(objectMember(object, "missing"), json::object());
  EXPECT_EQ(objectMember(json("text"), "status"), json::object());
  EXPECT_EQ(arrayMember(object, "list"), json({1, 2}));
  EXPECT_EQ(arrayMember(object, "status"), json::array());
  EXPECT_EQ(arrayMember(json(nullptr), "list"), json::array());
}

// What a start or a webhook merges into: the field as it is, or `empty` put there (parents
// made) when it is absent or null.
TEST(JsonFieldsTest, FieldOrEmptyKeepsAValueAndPutsEmptyWhereThereIsNone) {
  json object = {{"spec", {{"nodeSelector", {{"disk", "ssd"}}}, {"tolerations", nullptr}}}};
  fieldOrEmpty(object, "spec.nodeSelector", json::object())["gpu"] = "a100";
  fieldOrEmpty(object, "spec.tolerations", json::array()).push_back("t");
  fieldOrEmpty(object, "spec.podTemplate.labels", json::object())["a"] = "b";
  EXPECT_EQ(object, json::parse(R"({"spec": {"nodeSelector": {"disk": "ssd", "gpu": "a100"}, "tolerations": ["t"],
                                             "podTemplate": {"labels": {"a": "b"}}}})"));
}

}  // namespace
}  // namespace mka::json_fields
