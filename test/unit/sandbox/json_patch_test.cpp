#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

#include "support/table_test.h"

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;

const json kDoc = {{"metadata", {{"name", "x"}, {"labels", {{"a", "1"}, {"b/c", "2"}}}}},
                   {"spec", {{"list", {"p", "q"}}, {"n", 1}}}};

struct Case {
  std::string name;
  json patch;
  json want;
};

std::vector<Case> jsonPatchCases() {
  auto doc = [](const std::function<void(json&)>& change) {
    json d = kDoc;
    change(d);
    return d;
  };
  return {
      {"add a member", json::parse(R"([{"op":"add","path":"/spec/m","value":{"k":1}}])"), doc([](json& d) {
         d["spec"]["m"] = {{"k", 1}};
       })},
      {"add replaces an existing member", json::parse(R"([{"op":"add","path":"/spec/n","value":2}])"),
       doc([](json& d) { d["spec"]["n"] = 2; })},
      {"add inserts into a list", json::parse(R"([{"op":"add","path":"/spec/list/1","value":"x"}])"), doc([](json& d) {
         d["spec"]["list"] = {"p", "x", "q"};
       })},
      {"add appends with -", json::parse(R"([{"op":"add","path":"/spec/list/-","value":"x"}])"), doc([](json& d) {
         d["spec"]["list"] = {"p", "q", "x"};
       })},
      {"remove an escaped key", json::parse(R"([{"op":"remove","path":"/metadata/labels/b~1c"}])"),
       doc([](json& d) { d["metadata"]["labels"].erase("b/c"); })},
      {"remove a list item", json::parse(R"([{"op":"remove","path":"/spec/list/0"}])"),
       doc([](json& d) { d["spec"]["list"] = {"q"}; })},
      {"replace", json::parse(R"([{"op":"replace","path":"/metadata/name","value":"y"}])"),
       doc([](json& d) { d["metadata"]["name"] = "y"; })},
      {"move", json::parse(R"([{"op":"move","from":"/spec/n","path":"/spec/m"}])"), doc([](json& d) {
         d["spec"].erase("n");
         d["spec"]["m"] = 1;
       })},
      {"copy", json::parse(R"([{"op":"copy","from":"/spec/n","path":"/spec/m"}])"),
       doc([](json& d) { d["spec"]["m"] = 1; })},
      {"test then replace",
       json::parse(R"([{"op":"test","path":"/spec/n","value":1},{"op":"replace","path":"/spec/n","value":5}])"),
       doc([](json& d) { d["spec"]["n"] = 5; })},
      {"empty patch", json::array(), kDoc},
  };
}

MKA_TABLE_TEST(JsonPatchTest, AppliesEachOperation, Case, jsonPatchCases()) {
  const Case& c = testCase();
  EXPECT_EQ(jsonPatch(kDoc, c.patch), c.want);
}

struct ErrorCase {
  std::string name;
  json patch;
  int code;
  std::string cause;  // details.causes[0].message (422) or the message (400)
  std::string field;
};

std::vector<ErrorCase> jsonPatchFailureCases() {
  return {
      {"not a list", json::parse(R"({"op":"add"})"), 400,
       "json: cannot unmarshal object into Go value of type jsonpatch.Patch", ""},
      {"failing test", json::parse(R"([{"op":"test","path":"/spec/n","value":2}])"), 422,
       "testing value /spec/n failed: test failed", "[0]"},
      {"remove a missing key",
       json::parse(R"([{"op":"test","path":"/spec/n","value":1},{"op":"remove","path":"/spec/zzz"}])"), 422,
       "error in remove for path: '/spec/zzz': Unable to remove nonexistent key: zzz: missing value", "[1]"},
      {"replace a missing key", json::parse(R"([{"op":"replace","path":"/spec/zzz","value":1}])"), 422,
       "replace operation does not apply: doc is missing key: /spec/zzz: missing value", "[0]"},
      {"add under a missing parent", json::parse(R"([{"op":"add","path":"/status/phase","value":"x"}])"), 422,
       "add operation does not apply: doc is missing path: \"/status/phase\": missing value", "[0]"},
      {"add past the end of a list", json::parse(R"([{"op":"add","path":"/spec/list/5","value":"x"}])"), 422,
       "Unable to access invalid index: 5: invalid index referenced", "[0]"},
      {"move from a missing path", json::parse(R"([{"op":"move","from":"/nope","path":"/x"}])"), 422,
       "move operation does not apply: doc is missing from path: /nope: missing value", "[0]"},
      {"unknown operation", json::parse(R"([{"op":"frobnicate","path":"/x"}])"), 422, "Unexpected kind: frobnicate",
       "[0]"},
  };
}

MKA_TABLE_TEST(JsonPatchTest, FailuresAreKubeApiserversErrors, ErrorCase, jsonPatchFailureCases()) {
  const ErrorCase& c = testCase();
  try {
    jsonPatch(kDoc, c.patch);
    ADD_FAILURE() << "applied";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), c.code);
    if (c.code == 422) {
      EXPECT_EQ(e.reason(), "Invalid");
      EXPECT_STREQ(e.what(), "the server rejected our request due to an error in our request");
      EXPECT_EQ(e.details()["causes"][0]["message"], c.cause);
      EXPECT_EQ(e.details()["causes"][0]["reason"], "UnexpectedServerResponse");
      EXPECT_EQ(e.details()["causes"][0]["field"], c.field);
    } else {
      EXPECT_EQ(e.reason(), "BadRequest");
      EXPECT_EQ(std::string(e.what()), c.cause);
    }
  }
}

TEST(JsonPatchTest, AFailedPatchChangesNothing) {
  const json target = {{"a", 1}};
  EXPECT_THROW(
      jsonPatch(target, json::parse(R"([{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":0}])")),
      ApiError);
  EXPECT_EQ(target, (json{{"a", 1}}));
}

}  // namespace
}  // namespace mka::sandbox::patch
