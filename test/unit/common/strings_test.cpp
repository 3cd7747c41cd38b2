#include "mka/common/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/table_test.h"

namespace mka::strings {
namespace {

struct SplitKeepsEmptyPartsCase {
  std::string name;
  std::string text;
  std::vector<std::string> parts;
};

std::vector<SplitKeepsEmptyPartsCase> splitKeepsEmptyPartsCases() {
  const std::vector<SplitKeepsEmptyPartsCase> cases = {
      {"plain", "spec.runPolicy.managedBy", {"spec", "runPolicy", "managedBy"}},
      {"empty middle", "a..b", {"a", "", "b"}},
      {"no separator", "spec", {"spec"}},
      {"empty text", "", {""}},
      {"trailing", "a.", {"a", ""}},
  };
  return cases;
}

MKA_TABLE_TEST(Strings, SplitKeepsEmptyParts, SplitKeepsEmptyPartsCase, splitKeepsEmptyPartsCases()) {
  const SplitKeepsEmptyPartsCase& c = testCase();
  EXPECT_EQ(split(c.text, '.'), c.parts);
}

TEST(Strings, JoinAndTrim) {
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"one"}, ", "), "one");
  EXPECT_EQ(trim("  x y \t\n"), "x y");
  EXPECT_EQ(trim(" \n "), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Strings, ToLower) {
  EXPECT_EQ(toLower("PipelineRun"), "pipelinerun");
  EXPECT_EQ(toLower("Bearer x-Y_9"), "bearer x-y_9");
  EXPECT_EQ(toLower(""), "");
}

struct EditDistanceIgnoresCaseCase {
  std::string name;
  std::string a, b;
  std::size_t distance;
};

std::vector<EditDistanceIgnoresCaseCase> editDistanceIgnoresCaseCases() {
  const std::vector<EditDistanceIgnoresCaseCase> cases = {
      {"equal", "port", "port", 0},
      {"case only", "multikueue", "multiKueue", 0},
      {"one insertion", "gcInterval", "gcIntervall", 1},
      {"transposition is one", "namepsace", "namespace", 1},
      {"two transpositions", "pmiaryKey", "primaryKey", 2},
      {"short transposition", "prot", "port", 1},
      {"empty", "", "abc", 3},
      {"both empty", "", "", 0},
      {"substitution", "qps", "qpz", 1},
  };
  return cases;
}

MKA_TABLE_TEST(Strings, EditDistanceIgnoresCase, EditDistanceIgnoresCaseCase, editDistanceIgnoresCaseCases()) {
  const EditDistanceIgnoresCaseCase& c = testCase();
  EXPECT_EQ(editDistance(c.a, c.b), c.distance);
  EXPECT_EQ(editDistance(c.b, c.a), c.distance);
}

struct DidYouMeanCase {
  std::string name;
  std::string word;
  std::optional<std::string> suggestion;
};

std::vector<DidYouMeanCase> didYouMeanCases() {
  const std::vector<DidYouMeanCase> cases = {
      {"case only always matches", "multikueue", "multiKueue"},
      {"case only short word", "QPS", "qps"},
      {"one typo", "gcIntervall", "gcInterval"},
      {"transposed letters in a long word", "namepsace", "namespace"},
      {"typo in a long word", "clientConection", "clientConnection"},
      {"short word one typo", "qpz", "qps"},
      {"short word transposed letters", "prot", "port"},
      {"short word two typos is too far", "pxyt", std::nullopt},
      {"unrelated", "featureGates", std::nullopt},
      {"exact match is not a suggestion", "origin", std::nullopt},
      {"empty", "", std::nullopt},
  };
  return cases;
}

MKA_TABLE_TEST(Strings, DidYouMean, DidYouMeanCase, didYouMeanCases()) {
  const DidYouMeanCase& c = testCase();
  const std::vector<std::string> keys = {"namespace",  "webhook", "multiKueue", "clientConnection", "qps", "burst",
                                         "gcInterval", "origin",  "port"};
  EXPECT_EQ(didYouMean(c.word, keys), c.suggestion);
}

TEST(Strings, DidYouMeanPrefersTheClosest) {
  EXPECT_EQ(didYouMean("gcIntervl", {"gcIntervals", "gcInterval"}), "gcInterval");
  EXPECT_EQ(didYouMean("abcdefgh", {"abcdefgX", "abcdefgh2"}), "abcdefgX");  // ties: first listed
}

struct EscapeJsonPointerCase {
  std::string name;
  std::string token;
  std::string escaped;
};

std::vector<EscapeJsonPointerCase> escapeJsonPointerCases() {
  const std::vector<EscapeJsonPointerCase> cases = {
      {"plain", "managedBy", "managedBy"},
      {"slash", "workflows.argoproj.io/controller-instanceid", "workflows.argoproj.io~1controller-instanceid"},
      {"tilde first so that ~1 stays literal", "a~1/b", "a~01~1b"},
      {"empty", "", ""},
  };
  return cases;
}

MKA_TABLE_TEST(Strings, EscapeJsonPointer, EscapeJsonPointerCase, escapeJsonPointerCases()) {
  const EscapeJsonPointerCase& c = testCase();
  EXPECT_EQ(escapeJsonPointer(c.token), c.escaped);
}

TEST(Strings, QuotedExcerpt) {
  EXPECT_EQ(quotedExcerpt("PipelineRun"), "\"PipelineRun\"");
  EXPECT_EQ(quotedExcerpt(""), "\"\"");
  EXPECT_EQ(quotedExcerpt(std::string(64, 'x')), "\"" + std::string(64, 'x') + "\"");
  EXPECT_EQ(quotedExcerpt(std::string(65, 'x')), "\"" + std::string(64, 'x') + "...\"");
  EXPECT_EQ(quotedExcerpt("abcdef", 3), "\"abc...\"");
}

struct EscapeControlBytesCase {
  std::string name;
  std::string in;
  std::string want;
};

std::vector<EscapeControlBytesCase> escapeControlBytesCases() {
  const std::vector<EscapeControlBytesCase> cases = {
      {"printable text stays", "a-b c/d", "a-b c/d"},
      {"a terminal escape", std::string("a\x1b[31mb"), "a\\x1b[31mb"},
      {"line breaks and tabs", "a\nb\rc\td", "a\\nb\\rc\\td"},
      {"NUL and DEL", std::string("a\0b\x7f", 4), "a\\x00b\\x7f"},
      {"UTF-8 stays", "caf\xc3\xa9", "caf\xc3\xa9"},
  };
  return cases;
}

MKA_TABLE_TEST(Strings, EscapeControlBytes, EscapeControlBytesCase, escapeControlBytesCases()) {
  const EscapeControlBytesCase& c = testCase();
  EXPECT_EQ(escapeControlBytes(c.in), c.want);
}

TEST(Strings, EscapeControlBytes) { EXPECT_EQ(quotedExcerpt("a\x1b"), "\"a\\x1b\""); }

}  // namespace
}  // namespace mka::strings
