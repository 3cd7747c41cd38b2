#include "mka/kube/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace mka::kube::json_text {
namespace {

using nlohmann::json;

std::string cutEventFields(std::string_view text) {
  return withoutMember(text, {"object", "metadata", "managedFields"}, true);
}
std::string cutListFields(std::string_view text) {
  return withoutMember(text, {"items", "[]", "metadata", "managedFields"}, false);
}

TEST(JsonTextTest, CutsTheMemberWhereverItSitsAmongItsSiblings) {
  // Only member, first, middle, last; compact and with whitespace around the separators.
  EXPECT_EQ(cutEventFields(R"({"object":{"metadata":{"managedFields":[{"a":1}]}}})"), R"({"object":{"metadata":{}}})");
  EXPECT_EQ(cutEventFields(R"({"object":{"metadata":{"managedFields":[],"name":"a"}}})"),
            R"({"object":{"metadata":{"name":"a"}}})");
  EXPECT_EQ(cutEventFields(R"({"object":{"metadata":{"a":1,"managedFields":[{}],"name":"a"}}})"),
            R"({"object":{"metadata":{"a":1,"name":"a"}}})");
  EXPECT_EQ(cutEventFields(R"({"object":{"metadata":{"name":"a","managedFields":[{}]}}})"),
            R"({"object":{"metadata":{"name":"a"}}})");
  EXPECT_EQ(cutEventFields("{ \"object\" : { \"metadata\" : { \"managedFields\" : [ ] , \"name\" : \"a\" } } }"),
            "{ \"object\" : { \"metadata\" : { \"name\" : \"a\" } } }");
  EXPECT_EQ(cutEventFields("{\"object\":{\"metadata\":{\"name\":\"a\" ,\n \"managedFields\" : [ {} ] \n}}}"),
            "{\"object\":{\"metadata\":{\"name\":\"a\" \n}}}");
}

TEST(JsonTextTest, StepsOverStringsHoldingBracketsQuotesAndEscapes) {
  const std::string text = R"({"type":"MODIFIED","object":{"apiVersion":"v1","metadata":{"annotations":{"x":"}]\"{["},)"
                           R"("managedFields":[{"fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:x":"]\\"}}}}],)"
                           R"("name":"a\"b"},"spec":{"s":"{"}}})";
  const auto cut = cutEventFields(text);
  auto expected = json::parse(text);
  expected["object"]["metadata"].erase("managedFields");
  EXPECT_EQ(json::parse(cut), expected);
  EXPECT_EQ(cut.find("fieldsV1"), std::string::npos);
}

TEST(JsonTextTest, CutsOnlyAtThePathNotTheSameKeyElsewhere) {
  // A spec field or an annotation may be called managedFields too: they are the user's data.
  const std::string text =
      R"({"type":"ADDED","object":{"spec":{"managedFields":[1]},"metadata":{"annotations":{"managedFields":"keep"},)"
      R"("labels":{"managedFields":"keep"},"managedFields":[{"manager":"kueue"}]},"managedFields":[2]},)"
      R"("managedFields":[3]})";
  const auto cut = json::parse(cutEventFields(text));
  EXPECT_EQ(cut["object"]["spec"]["managedFields"], json::array({1}));
  EXPECT_EQ(cut["object"]["metadata"]["annotations"]["managedFields"], "keep");
  EXPECT_EQ(cut["object"]["metadata"]["labels"]["managedFields"], "keep");
  EXPECT_FALSE(cut["object"]["metadata"].contains("managedFields"));
  EXPECT_EQ(cut["object"]["managedFields"], json::array({2}));
  EXPECT_EQ(cut["managedFields"], json::array({3}));
}

TEST(JsonTextTest, CutsEveryItemOfAListButOnlyTheFirstMatchWhenAskedTo) {
  const std::string text = R"({"kind":"WorkloadList","metadata":{"resourceVersion":"9","managedFields":[0]},"items":[)"
                           R"({"metadata":{"name":"a","managedFields":[1]}},"not an object",)"
                           R"({"metadata":{"name":"b"}},{"metadata":{"managedFields":[3],"name":"c"}}]})";
  const auto all = json::parse(cutListFields(text));
  EXPECT_EQ(all["metadata"]["managedFields"], json::array({0}));  // the list's own metadata is not an item's
  ASSERT_EQ(all["items"].size(), 4u);
  EXPECT_EQ(all["items"][0]["metadata"], json({{"name", "a"}}));
  EXPECT_EQ(all["items"][1], "not an object");
  EXPECT_EQ(all["items"][2]["metadata"], json({{"name", "b"}}));
  EXPECT_EQ(all["items"][3]["metadata"], json({{"name", "c"}}));

  const auto first = json::parse(withoutMember(text, {"items", "[]", "metadata", "managedFields"}, true));
  EXPECT_EQ(first["items"][0]["metadata"], json({{"name", "a"}}));
  EXPECT_EQ(first["items"][3]["metadata"]["managedFields"], json::array({3}));
}

TEST(JsonTextTest, ReturnsTheTextUnchangedWhenThePathIsAbsentOrTheTextMalformed) {
  for (const std::string text : {
           R"({"object":{"metadata":{"name":"a"}}})",                      // nothing to cut
           R"({"object":{"metadata":"a string"}})",                        // not an object on the path
           R"({"object":[{"metadata":{"managedFields":[]}}]})",            // an array where an object is expected
           R"({"object":{"metadata":{"managedFields":[1,2})",              // cut short inside the member
           R"({"object":{"metadata":{"managedFields":}}})",                // no value
           R"({"object":{"metadata":{"managedFields" [1]}}})",             // no colon
           R"({"object":{"metadata":{"name":"a" "managedFields":[1]}}})",  // no comma
           R"({"object":{"metadata":{"name":"unterminated}}})",
           R"({"object")",
           "",
           "   ",
           "[]",
       }) {
    EXPECT_EQ(cutEventFields(text), text) << text;
  }
  EXPECT_EQ(withoutMember(R"({"a":1})", {}, true), R"({"a":1})");
}

// Random documents: cutting the text must give what parsing the whole and erasing gives.
json randomValue(std::mt19937& rng, int depth) {
  static const std::string pieces[] = {"a",  "b", "{", "}", "[",  "]", "\"",
                                       "\\", ",", ":", " ", "\n", "é", "managedFields"};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto randomString = [&] {
    std::string s;
    for (int i = pick(5); i > 0; --i) s += pieces[pick(std::size(pieces))];
    return s;
  };
  switch (depth > 3 ? pick(4) : pick(6)) {
    case 0: return randomString();
    case 1: return pick(1000) - 500;
    case 2: return pick(2) == 0 ? json(true) : json(nullptr);
    case 3: return 0.5 * pick(100);
    case 4: {
      json array = json::array();
      for (int i = pick(4); i > 0; --i) array.push_back(randomValue(rng, depth + 1));
      return array;
    }
    default: {
      json object = json::object();
      for (int i = pick(5); i > 0; --i) object[randomString()] = randomValue(rng, depth + 1);
      return object;
    }
  }
}

TEST(JsonTextTest, AgreesWithParsingAndErasingOnRandomDocuments) {
  std::mt19937 rng(20261123);
  int cut = 0;
  for (int i = 0; i < 2000; ++i) {
    json object = json::object();
    json metadata = randomValue(rng, 2);
    if (!metadata.is_object()) metadata = json::object({{"name", "x"}});
    if (rng() % 4 != 0) metadata["managedFields"] = randomValue(rng, 2);
    object["metadata"] = metadata;
    object["spec"] = randomValue(rng, 1);
    json event = {{"type", "MODIFIED"}, {"object", object}};
    const std::string text = rng() % 2 == 0 ? event.dump() : event.dump(rng() % 3);

    json expected = event;
    if (expected["object"]["metadata"].erase("managedFields") > 0) ++cut;
    ASSERT_EQ(json::parse(cutEventFields(text)), expected) << text;
  }
  EXPECT_GT(cut, 1000);  // the documents did hold the member to cut
}

}  // namespace
}  // namespace mka::kube::json_text
