#include "mka/sandbox/selectors.h"

#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"

#include "support/table_test.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

const json kLabels = {{"app", "web"}, {"tier", "front"}, {"replicas", "3"}, {"example.com/team", "a"}};

struct MatchCase {
  std::string name;
  std::string selector;
  json labels;
  bool want;
};

std::vector<MatchCase> labelMatchCases() {
  return {
      {"empty selects everything", "", kLabels, true},
      {"only spaces", "   ", kLabels, true},
      {"equals", "app=web", kLabels, true},
      {"double equals", "app==web", kLabels, true},
      {"equals, other value", "app=db", kLabels, false},
      {"not equals", "app!=db", kLabels, true},
      {"not equals holds when the label is absent", "zone!=x", kLabels, true},
      {"in", "tier in (front,back)", kLabels, true},
      {"in, no match", "tier in (back)", kLabels, false},
      {"notin", "tier notin (back)", kLabels, true},
      {"notin holds when absent", "zone notin (x)", kLabels, true},
      {"notin, match", "tier notin (front, back)", kLabels, false},
      {"exists", "app", kLabels, true},
      {"exists, absent", "zone", kLabels, false},
      {"does not exist", "!zone", kLabels, true},
      {"does not exist, present", "!app", kLabels, false},
      {"does not exist with a space", "! app", kLabels, false},
      {"prefixed key", "example.com/team=a", kLabels, true},
      {"all must hold", "app=web,tier=back", kLabels, false},
      {"whitespace around terms", " app = web , tier in ( front ) ", kLabels, true},
      {"empty exact value matches an empty label", "app=", json{{"app", ""}}, true},
      {"empty exact value does not match a set label", "app=", kLabels, false},
      {"empty set means the empty value", "app in ()", json{{"app", ""}}, true},
      {"a label named in", "in=x", json{{"in", "x"}}, true},
      {"greater than", "replicas>2", kLabels, true},
      {"less than", "replicas<2", kLabels, false},
      {"greater than on a non-number", "app>1", kLabels, false},
      {"null labels", "app", nullptr, false},
      {"null labels, negative terms", "!app,zone!=x", nullptr, true},
  };
}

MKA_TABLE_TEST(LabelSelectorTest, ParsesAndMatchesTheApiServersGrammar, MatchCase, labelMatchCases()) {
  const MatchCase& c = testCase();
  const auto selector = LabelSelector::parse(c.selector);
  EXPECT_EQ(selector.matches(c.labels), c.want);
}

struct ErrorCase {
  std::string name;
  std::string selector;
  std::string message;
};

std::vector<ErrorCase> labelErrorCases() {
  const std::string keyRules =
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character";
  return {
      {"bad key", "a@b=c", "unable to parse requirement: <nil>: Invalid value: \"a@b\": " + keyRules},
      {"key with a colon", "app:web", "unable to parse requirement: <nil>: Invalid value: \"app:web\": " + keyRules},
      {"bad value", "app=a b", "found 'b', expected: ',' or 'end of string'"},
      {"invalid value characters", "app=-x-",
       "unable to parse requirement: values[0][app]: Invalid value: \"-x-\": a valid label must be an empty string "
       "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
       "character"},
      {"missing operator", "app web",
       "unable to parse requirement: found 'web', expected: in, notin, =, ==, !=, gt, lt"},
      {"trailing comma", "app=web,", "found '', expected: identifier after ','"},
      {"leading operator", "=web", "found '=', expected: !, identifier, or 'end of string'"},
      {"set without parenthesis", "app in web", "unable to parse requirement: found 'web' expected: '('"},
      {"unclosed set", "app in (web", "unable to parse requirement: found '', expected: ',' or ')'"},
      {"gt needs an integer", "replicas>x",
       "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an "
       "integer"},
      {"two operators", "a=b=c", "found '=', expected: ',' or 'end of string'"},
  };
}

MKA_TABLE_TEST(LabelSelectorTest, RejectsMalformedSelectorsNamingTheBadTerm, ErrorCase, labelErrorCases()) {
  const ErrorCase& c = testCase();
  try {
    LabelSelector::parse(c.selector);
    ADD_FAILURE() << "parsed";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 400);
    EXPECT_EQ(e.reason(), "BadRequest");
    EXPECT_TRUE(std::string(e.what()).starts_with(c.message)) << e.what();
  }
}

struct JsonMatchCase {
  std::string name;
  json selector;
  json labels;
  bool want;
};

std::vector<JsonMatchCase> jsonMatchCases() {
  return {
      {"null selects everything", nullptr, kLabels, true},
      {"empty selects everything", json::object(), json::object(), true},
      {"matchLabels", {{"matchLabels", {{"app", "web"}}}}, kLabels, true},
      {"matchLabels mismatch", {{"matchLabels", {{"app", "db"}}}}, kLabels, false},
      {"In",
       {{"matchExpressions", {{{"key", "tier"}, {"operator", "In"}, {"values", {"front", "x"}}}}}},
       kLabels,
       true},
      {"NotIn",
       {{"matchExpressions", {{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"front"}}}}}},
       kLabels,
       false},
      {"Exists", {{"matchExpressions", {{{"key", "app"}, {"operator", "Exists"}}}}}, kLabels, true},
      {"DoesNotExist", {{"matchExpressions", {{{"key", "app"}, {"operator", "DoesNotExist"}}}}}, kLabels, false},
      {"namespace selector on a namespace's labels",
       {{"matchExpressions",
         {{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", {"kube-system"}}}}}},
       {{"kubernetes.io/metadata.name", "default"}},
       true},
      {"both parts must hold",
       {{"matchLabels", {{"app", "web"}}}, {"matchExpressions", {{{"key", "zone"}, {"operator", "Exists"}}}}},
       kLabels,
       false},
  };
}

MKA_TABLE_TEST(LabelSelectorTest, FromJsonReadsMetav1LabelSelector, JsonMatchCase, jsonMatchCases()) {
  const auto& [name, selector, labels, want] = testCase();
  EXPECT_EQ(LabelSelector::fromJson(selector).matches(labels), want);
}

std::vector<ErrorCase> jsonErrorCases() {
  return {
      {"unknown operator", R"({"matchExpressions":[{"key":"a","operator":"Equals","values":["x"]}]})",
       "\"Equals\" is not a valid label selector operator"},
      {"In without values", R"({"matchExpressions":[{"key":"a","operator":"In"}]})",
       "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"},
      {"Exists with values", R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})",
       "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"},
      {"bad key", R"({"matchLabels":{"a b":"x"}})", "key: Invalid value: \"a b\": name part must consist of"},
      {"bad value", R"({"matchLabels":{"a":"x y"}})", "values[0][a]: Invalid value: \"x y\": a valid label must"},
  };
}

MKA_TABLE_TEST(LabelSelectorTest, FromJsonRejectsMalformedSelectors, ErrorCase, jsonErrorCases()) {
  const ErrorCase& c = testCase();
  try {
    LabelSelector::fromJson(json::parse(c.selector));
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 400);
    EXPECT_TRUE(std::string(e.what()).starts_with(c.message)) << e.what();
  }
}

std::vector<MatchCase> fieldMatchCases() {
  const json object = {{"metadata", {{"name", "x"}, {"namespace", "team-a"}}},
                       {"spec", {{"replicas", 3}, {"suspend", false}}},
                       {"status", {{"phase", "Running"}}}};
  return {
      {"empty", "", object, true},
      {"name", "metadata.name=x", object, true},
      {"double equals", "metadata.name==x", object, true},
      {"not equals", "metadata.namespace!=team-a", object, false},
      {"two terms", "metadata.name=x,status.phase=Running", object, true},
      {"number stringified", "spec.replicas=3", object, true},
      {"bool stringified", "spec.suspend=false", object, true},
      {"absent field reads as empty", "spec.missing=", object, true},
      {"absent field is not a value", "spec.missing=x", object, false},
      {"absent field, not equals", "spec.missing!=x", object, true},
      {"escaped comma in a value", "metadata.name=a\\,b", json{{"metadata", {{"name", "a,b"}}}}, true},
  };
}

MKA_TABLE_TEST(FieldSelectorTest, MatchesDottedPathsAsStrings, MatchCase, fieldMatchCases()) {
  const MatchCase& c = testCase();
  EXPECT_EQ(FieldSelector::parse(c.selector).matches(c.labels), c.want);
}

std::vector<ErrorCase> fieldErrorCases() {
  return {
      {"no operator", "metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"},
      {"unescaped equals in value", "a=b=c", "invalid field selector: unescaped character in value: ="},
      {"bad escape", "a=b\\x", "invalid field selector: invalid escape sequence: \\x"},
  };
}

MKA_TABLE_TEST(FieldSelectorTest, RejectsMalformedSelectors, ErrorCase, fieldErrorCases()) {
  const ErrorCase& c = testCase();
  try {
    FieldSelector::parse(c.selector);
    ADD_FAILURE() << "parsed";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 400);
    EXPECT_EQ(std::string(e.what()), c.message);
  }
}

TEST(FieldSelectorTest, NamesItsFields) {
  EXPECT_EQ(FieldSelector::parse("metadata.namespace!=x,metadata.name=y").fields(),
            (std::vector<std::string>{"metadata.name", "metadata.namespace"}));
}

}  // namespace
}  // namespace mka::sandbox
