#include "mka/yaml/document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "mka/yaml/json.h"
#include "support/table_test.h"

namespace mka::yaml {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The single document of a stream; the pointer keeps its tree alive.
NodePtr only(const std::vector<NodePtr>& documents) {
  EXPECT_EQ(documents.size(), 1u);
  return documents.at(0);
}

std::string repeated(const std::string& s, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += s;
  return out;
}

// "a: &a [x, x]\nb: &b [*a, *a]\n..." : each level doubles what the last one repeats.
std::string laughs(int levels, const std::string& leaf = "lol") {
  std::string text = "l0: &l0 [" + leaf + ", " + leaf + "]\n";
  for (int i = 1; i < levels; ++i) {
    const auto prev = "l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [*" + prev + ", *" + prev + "]\n";
  }
  return text;
}

TEST(YamlDocument, KeepsPositionsStylesTagsAndDuplicateKeys) {
  const auto rootPtr = only(parse("a: 1\nb: 'quoted'\nc: |\n  block\nd: !!str 5\na: 2\n", Limits{}));
  const auto& root = *rootPtr;
  ASSERT_TRUE(root.isMapping());
  ASSERT_EQ(root.entries().size(), 5u);
  EXPECT_EQ(root.entries()[1].key->mark().line, 1);
  EXPECT_EQ(root.entries()[1].value->mark().column, 3);
  EXPECT_EQ(root.entries()[0].value->style(), Node::Style::Plain);
  EXPECT_EQ(root.entries()[1].value->style(), Node::Style::Quoted);
  EXPECT_EQ(root.entries()[2].value->style(), Node::Style::Block);
  EXPECT_EQ(root.entries()[2].value->scalar(), "block\n");
  EXPECT_EQ(root.entries()[3].value->tag(), "tag:yaml.org,2002:str");
  EXPECT_FALSE(root.entries()[3].value->isPlain());
  ASSERT_NE(root.find("a"), nullptr);
  EXPECT_EQ(root.find("a")->scalar(), "2");  // the last one wins
  EXPECT_EQ(root.find("missing"), nullptr);
}

struct NullsAreSpelledAsGoYamlSpellsThemCase {
  std::string name;
  std::string yaml;
  bool null;
};

std::vector<NullsAreSpelledAsGoYamlSpellsThemCase> nullsAreSpelledAsGoYamlSpellsThemCases() {
  const std::vector<NullsAreSpelledAsGoYamlSpellsThemCase> cases = {
      {"nothing", "v:\n", true},
      {"tilde", "v: ~\n", true},
      {"null", "v: null\n", true},
      {"Null", "v: Null\n", true},
      {"!!null tag", "v: !!null x\n", true},
      {"quoted empty", "v: ''\n", false},
      {"quoted null", "v: 'null'\n", false},
      {"word", "v: nil\n", false},
  };
  return cases;
}

MKA_TABLE_TEST(YamlDocument, NullsAreSpelledAsGoYamlSpellsThem, NullsAreSpelledAsGoYamlSpellsThemCase,
               nullsAreSpelledAsGoYamlSpellsThemCases()) {
  const NullsAreSpelledAsGoYamlSpellsThemCase& c = testCase();
  EXPECT_EQ(only(parse(c.yaml, Limits{}))->find("v")->isNull(), c.null);
}

TEST(YamlDocument, StreamsHoldEveryDocument) {
  const auto documents = parse("a: 1\n---\n---\n- b\n", Limits{});
  ASSERT_EQ(documents.size(), 3u);
  EXPECT_TRUE(documents[0]->isMapping());
  EXPECT_TRUE(documents[1]->isNull());
  EXPECT_TRUE(documents[2]->isSequence());
  EXPECT_TRUE(parse("", Limits{}).empty());
  EXPECT_TRUE(parse(std::string_view(), Limits{}).empty());
  EXPECT_TRUE(parse("# only a comment\n", Limits{}).empty());
}

TEST(YamlDocument, AnchorsAreSharedAndKnownOnlyInTheirDocument) {
  const auto root = only(parse("a: &x {k: v}\nb: *x\n", Limits{}));
  EXPECT_EQ(root->find("a"), root->find("b"));
  try {
    parse("a: &x 1\n---\nb: *x\n", Limits{});
    ADD_FAILURE() << "no error";
  } catch (const SyntaxError& e) {
    EXPECT_EQ(e.mark().line, 2);
    EXPECT_THAT(e.what(), HasSubstr("unknown anchor 'x'"));
  }
}

struct SyntaxErrorsSayWhereAndWhatCase {
  std::string name;
  std::string yaml;
  int line;
  std::string problem;
};

std::vector<SyntaxErrorsSayWhereAndWhatCase> syntaxErrorsSayWhereAndWhatCases() {
  const std::vector<SyntaxErrorsSayWhereAndWhatCase> cases = {
      {"three bytes that used to loop", ",w,", 0, "did not find expected node content"},
      {"unclosed flow sequence", "a: [1, 2\nb: 3\n", 1, "did not find expected ',' or ']'"},
      {"bad indentation", "a:\n  b: 1\n c: 2\n", 2, "did not find expected key"},
      {"tab indentation", "a:\n\tb: 1\n", 1, "found character that cannot start any token"},
      {"not UTF-8", "a: \xff\xfe\xfd\n", 0, "invalid"},
      {"control character", std::string("a: b\0c\n", 7), 0, "control characters are not allowed"},
  };
  return cases;
}

MKA_TABLE_TEST(YamlDocument, SyntaxErrorsSayWhereAndWhat, SyntaxErrorsSayWhereAndWhatCase,
               syntaxErrorsSayWhereAndWhatCases()) {
  const SyntaxErrorsSayWhereAndWhatCase& c = testCase();
  try {
    parse(c.yaml, Limits{});
    ADD_FAILURE() << "no error";
  } catch (const SyntaxError& e) {
    EXPECT_EQ(e.mark().line, c.line) << e.what();
    EXPECT_THAT(e.problem(), HasSubstr(c.problem));
    EXPECT_THAT(e.what(), HasSubstr("yaml: line " + std::to_string(c.line + 1) + ", column "));
  }
}

struct EveryLimitIsEnforcedAndNamedCase {
  std::string name;
  std::string yaml;
  Limits limits;
  std::string message;
};

std::vector<EveryLimitIsEnforcedAndNamedCase> everyLimitIsEnforcedAndNamedCases() {
  const Limits small{.maxBytes = 1000, .maxDepth = 5, .maxNodes = 100, .maxScalarBytes = 200};
  const std::vector<EveryLimitIsEnforcedAndNamedCase> cases = {
      {"input size", std::string(1001, '#'), small, "1001 bytes, over the 1000 bytes size limit"},
      {"depth of flow collections", "[[[[[[1]]]]]]", small, "nested deeper than 5 levels (the depth limit"},
      {"depth of block collections", "a:\n b:\n  c:\n   d:\n    e:\n     f: 1\n", small, "nested deeper than 5"},
      {"depth reached through an alias", "a: &a [[[[1]]]]\nb: [[*a]]\n", small, "nested deeper than 5"},
      {"node count", "[" + repeated("1,", 60) + "1]", Limits{.maxNodes = 50}, "more than 50 nodes (the node limit"},
      {"billion laughs", laughs(30), Limits{}, "aliases repeat more than 100000 nodes (the alias limit)"},
      {"billion laughs without an alias limit", laughs(30),
       Limits{.maxAliasNodes = SIZE_MAX, .maxAliasBytes = SIZE_MAX},
       "more than 200000 nodes (the node limit; each alias counts"},
      {"one large value repeated", "a: &a " + std::string(2000, 'x') + "\nb: [" + repeated("*a, ", 600) + "*a]\n",
       Limits{}, "aliases repeat more than 1 MiB of values (the alias limit)"},
      {"laughs of one large value", laughs(12, std::string(60, 'x')), small, "of values (the value size limit"},
  };
  return cases;
}

MKA_TABLE_TEST(YamlDocument, EveryLimitIsEnforcedAndNamed, EveryLimitIsEnforcedAndNamedCase,
               everyLimitIsEnforcedAndNamedCases()) {
  const EveryLimitIsEnforcedAndNamedCase& c = testCase();
  try {
    parse(c.yaml, c.limits);
    ADD_FAILURE() << "no error";
  } catch (const LimitError& e) {
    EXPECT_THAT(e.what(), HasSubstr(c.message));
  }
}

TEST(YamlDocument, WithinTheLimitsEverythingIsRead) {
  const Limits exact{.maxBytes = 30, .maxDepth = 3, .maxNodes = 9, .maxScalarBytes = 8};
  // 9 nodes: the mapping, a, the list, 1, 2, b, its mapping, c, 3; depth 3 through the alias.
  const std::string text = "a: &l [1, 2]\nb: {c: *l}\n";
  ASSERT_LE(text.size(), exact.maxBytes);
  EXPECT_THROW(parse(text, exact), LimitError);  // the alias repeats 3 nodes: 12 in all
  const auto root = only(parse(text, Limits{.maxBytes = 30, .maxDepth = 3, .maxNodes = 12, .maxScalarBytes = 8}));
  EXPECT_EQ(toJson(*root), (json{{"a", {1, 2}}, {"b", {{"c", {1, 2}}}}}));
}

TEST(YamlDocument, ManifestLimitsTakeKueuesLargestCrd) {
  // Kueue's Workload CRD is 1.4 MB: the manifest limits must leave room for it, the small ones not.
  std::string big = "items:\n";
  while (big.size() < 1'500'000) big += "- {name: pod-set, count: 1, minCount: 1, template: {spec: {}}}\n";
  EXPECT_NO_THROW(parse(big, Limits::forManifests()));
  EXPECT_THROW(parse(big, Limits::forSmallDocuments()), LimitError);
}

TEST(YamlEmit, WritesWhatReadsBackTheSame) {
  const json value = {{"apiVersion", "v1"},
                      {"strings that look like other things", {"true", "yes", "010", "1.5", "", "null", "~", "-"}},
                      {"numbers", {1, -2, 2.5}},
                      {"flags", {true, false, nullptr}},
                      {"text", "a: b # c\nsecond line"},
                      {"empty", {{"map", json::object()}, {"list", json::array()}}},
                      {"base64", std::string(300, 'A')},
                      {"<<", {{"a merge key's spelling", "is an ordinary key here"}}}};
  const auto text = toYaml(value);
  EXPECT_EQ(parseJson(text, Limits{}), std::vector<json>{value}) << text;
  EXPECT_THAT(text, HasSubstr("apiVersion: v1\n"));
  EXPECT_THAT(text, HasSubstr("base64: " + std::string(300, 'A') + "\n"));  // one line, no folding
}

}  // namespace
}  // namespace mka::yaml
