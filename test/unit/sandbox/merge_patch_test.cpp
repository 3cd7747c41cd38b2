#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

#include "support/table_test.h"

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;

struct MergePatchCase {
  std::string name;
  json target;
  json patch;
  json want;
};

std::vector<MergePatchCase> mergePatchCases() {
  return {
      {"sets a field", {{"a", 1}}, {{"b", 2}}, {{"a", 1}, {"b", 2}}},
      {"replaces a value", {{"a", 1}}, {{"a", "x"}}, {{"a", "x"}}},
      {"null deletes", {{"a", 1}, {"b", 2}}, {{"a", nullptr}}, {{"b", 2}}},
      {"deleting an absent field is fine", {{"a", 1}}, {{"z", nullptr}}, {{"a", 1}}},
      {"maps merge recursively",
       {{"metadata", {{"labels", {{"a", "1"}, {"b", "2"}}}}}},
       {{"metadata", {{"labels", {{"b", nullptr}, {"c", "3"}}}}}},
       {{"metadata", {{"labels", {{"a", "1"}, {"c", "3"}}}}}}},
      {"lists are replaced", {{"l", {1, 2, 3}}}, {{"l", {4}}}, {{"l", {4}}}},
      {"nulls inside new maps are dropped", json::object(), {{"m", {{"a", nullptr}, {"b", 1}}}}, {{"m", {{"b", 1}}}}},
      {"a map replaces a scalar", {{"a", 1}}, {{"a", {{"b", 1}}}}, {{"a", {{"b", 1}}}}},
      {"empty patch", {{"a", 1}}, json::object(), {{"a", 1}}},
      {"absent target", nullptr, {{"a", 1}}, {{"a", 1}}},
  };
}

MKA_TABLE_TEST(MergePatchTest, FollowsRfc7386, MergePatchCase, mergePatchCases()) {
  const MergePatchCase& c = testCase();
  EXPECT_EQ(mergePatch(c.target, c.patch), c.want);
}

struct NonObjectPatch {
  json patch;
  std::string name = patch.dump();
};

std::vector<NonObjectPatch> nonObjectPatches() { return {{json::array({1})}, {json(nullptr)}, {json("x")}}; }

MKA_TABLE_TEST(MergePatchTest, ANonObjectPatchIsBadRequest, NonObjectPatch, nonObjectPatches()) {
  const auto& patch = testCase().patch;
  try {
    mergePatch({{"a", 1}}, patch);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 400);
    EXPECT_STREQ(e.what(), "Invalid JSON Patch");
  }
}

}  // namespace
}  // namespace mka::sandbox::patch
