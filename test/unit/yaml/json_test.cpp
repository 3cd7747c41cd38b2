#include "mka/yaml/json.h"

#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "support/table_test.h"

namespace mka::yaml {
namespace {

using nlohmann::json;

std::vector<json> loadYamlDocuments(const std::string& text) { return parseJson(text, Limits::forManifests()); }

json scalar(const std::string& yaml) {
  auto docs = loadYamlDocuments("v: " + yaml + "\n");
  return docs.at(0).at("v");
}

struct ScalarCase {
  std::string name;
  std::string yaml;
  json expected;
};

std::vector<ScalarCase> resolvesPlainScalarsAsGoYamlV2DoesCases() {
  const std::vector<ScalarCase> cases = {
      {"true", "true", true},
      {"True", "True", true},
      {"yes is YAML 1.1 true", "yes", true},
      {"on is true", "On", true},
      {"y is true", "y", true},
      {"false", "false", false},
      {"no is false", "NO", false},
      {"off is false", "off", false},
      {"tilde is null", "~", nullptr},
      {"null", "null", nullptr},
      {"empty is null", "", nullptr},
      {"integer", "42", 42},
      {"negative integer", "-17", -17},
      {"plus sign", "+5", 5},
      {"underscores", "1_000_000", 1000000},
      {"hex", "0x1F", 31},
      {"leading zero is octal", "010", 8},
      {"explicit octal", "0o17", 15},
      {"binary", "0b101", 5},
      {"not octal, read as float", "08", 8},
      {"int64 max", "9223372036854775807", INT64_C(9223372036854775807)},
      {"beyond int64 is uint64", "18446744073709551615", UINT64_C(18446744073709551615)},
      {"float", "1.5", 1.5},
      {"exponent", "2.5e3", 2500},
      {"integral float reads as integer", "1.0", 1},
      {"leading dot", ".5", 0.5},
      {"float overflow stays a string", "1e400", "1e400"},
      {"version-like", "1.2.3", "1.2.3"},
      {"date stays a string", "2024-01-02", "2024-01-02"},
      {"timestamp stays a string", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"},
      {"word", "hello world", "hello world"},
      {"quantity", "500m", "500m"},
      {"single-quoted number", "'42'", "42"},
      {"double-quoted bool", "\"true\"", "true"},
      {"quoted null", "'null'", "null"},
      {"quoted empty", "''", ""},
      {"explicit str tag", "!!str 12", "12"},
      {"explicit int tag", "!!int \"7\"", 7},
      {"block literal", "|\n  line one\n  line two", "line one\nline two\n"},
      {"folded", ">-\n  a\n  b", "a b"},
  };
  return cases;
}

MKA_TABLE_TEST(YamlToJson, ResolvesPlainScalarsAsGoYamlV2Does, ScalarCase, resolvesPlainScalarsAsGoYamlV2DoesCases()) {
  const ScalarCase& c = testCase();
  const json got = scalar(c.yaml);
  EXPECT_EQ(got, c.expected) << got.dump();
  EXPECT_EQ(got.type(), c.expected.type()) << got.dump();
}

struct DocumentCase {
  std::string name;
  std::string yaml;
  std::vector<json> expected;
};

std::vector<DocumentCase> convertsDocumentsCases() {
  const std::vector<DocumentCase> cases = {
      {"nested mapping and list",
       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {app: x}\ndata:\n  a: \"1\"\nitems: [1, two, "
       "3.5]\n",
       {json{{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "cm"}, {"labels", {{"app", "x"}}}}},
             {"data", {{"a", "1"}}},
             {"items", {1, "two", 3.5}}}}},
      {"several documents, empty ones skipped", "---\na: 1\n---\n---\nb: 2\n...\n", {json{{"a", 1}}, json{{"b", 2}}}},
      {"only separators", "---\n---\n", {}},
      {"non-string keys become strings", "1: one\nno: f\n2.5: x\n", {json{{"1", "one"}, {"false", "f"}, {"2.5", "x"}}}},
      {"y is a boolean key too, as in kubectl", "y: 1\nyes: 2\n", {json{{"true", 2}}}},
      {"anchors and aliases", "base: &b {x: 1}\ncopy: *b\n", {json{{"base", {{"x", 1}}}, {"copy", {{"x", 1}}}}}},
      {"merge key, explicit keys win",
       "base: &b {x: 1, z: 2}\nderived:\n  <<: *b\n  z: 3\n",
       {json{{"base", {{"x", 1}, {"z", 2}}}, {"derived", {{"x", 1}, {"z", 3}}}}}},
      {"merge of a list, earlier maps win",
       "a: &a {k: a}\nb: &b {k: b, m: b}\nc:\n  <<: [*a, *b]\n",
       {json{{"a", {{"k", "a"}}}, {"b", {{"k", "b"}, {"m", "b"}}}, {"c", {{"k", "a"}, {"m", "b"}}}}}},
      {"quoted merge key is a plain key", "'<<': {x: 1}\n", {json{{"<<", {{"x", 1}}}}}},
      {"null values", "a:\nb: ~\nc: null\n", {json{{"a", nullptr}, {"b", nullptr}, {"c", nullptr}}}},
      {"empty collections", "a: {}\nb: []\n", {json{{"a", json::object()}, {"b", json::array()}}}},
      {"document that is a list", "- a\n- 1\n", {json{"a", 1}}},
  };
  return cases;
}

MKA_TABLE_TEST(YamlToJson, ConvertsDocuments, DocumentCase, convertsDocumentsCases()) {
  const DocumentCase& c = testCase();
  const auto got = loadYamlDocuments(c.yaml);
  ASSERT_EQ(got.size(), c.expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], c.expected[i]) << got[i].dump();
}

struct YamlErrorCase {
  std::string name;
  std::string yaml;
  std::string messagePart;
};

std::vector<YamlErrorCase> rejectsWhatJsonCannotHoldCases() {
  const std::vector<YamlErrorCase> cases = {
      {"syntax error names the line", "a: 1\nb: [1, 2\nc: 3\n", "yaml: line"},
      {"bad indentation", "a:\n  b: 1\n c: 2\n", "yaml: line 3"},
      {"NaN", "a: .nan\n", "unsupported value: .nan"},
      {"infinity", "a: -.inf\n", "unsupported value: -.inf"},
      {"collection key", "? [1, 2]\n: x\n", "unsupported map key"},
      {"null key", "~: x\n", "unsupported map key: null"},
      {"int tag on a word", "a: !!int seven\n", "cannot decode !!int"},
  };
  return cases;
}

MKA_TABLE_TEST(YamlToJson, RejectsWhatJsonCannotHold, YamlErrorCase, rejectsWhatJsonCannotHoldCases()) {
  const YamlErrorCase& c = testCase();
  try {
    loadYamlDocuments(c.yaml);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(c.messagePart), std::string::npos) << e.what();
  }
}

TEST(YamlToJson, ConvertsANodeDirectly) {
  const auto nodes = parse("spec:\n  replicas: 3\n  paused: off\n", Limits{});
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(toJson(*nodes[0]), (json{{"spec", {{"replicas", 3}, {"paused", false}}}}));
  EXPECT_EQ(toJson(Node{}), json(nullptr));
}

TEST(YamlToJson, AnAliasInsideItsOwnAnchorIsUnknown) {
  // The anchor is known only once its node is complete, so no alias can make a cycle.
  try {
    loadYamlDocuments("a: &x [*x]\n");
    ADD_FAILURE() << "no error";
  } catch (const SyntaxError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown anchor 'x'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mka::yaml
