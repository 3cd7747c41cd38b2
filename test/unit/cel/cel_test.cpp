#include "mka/cel/cel.h"
#include "mka/cel/regex.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/table_test.h"
#include "support/thrown.h"

namespace mka::cel {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json evaluate(const std::string& expression, const json& self = nullptr, const json* oldSelf = nullptr,
              std::uint64_t costLimit = Program::kDefaultCostLimit) {
  Activation activation;
  activation.variables["self"] = &self;
  if (oldSelf) activation.variables["oldSelf"] = oldSelf;
  return Program::compile(expression).evaluate(activation, costLimit);
}

// A case's test name: its expression with the operators spelled out, as a test's name keeps
// letters and digits only ("1 < 2" is 1_lt_2).
std::string spelled(const std::string& expression) {
  static const std::vector<std::pair<std::string, std::string>> words = {
      {"[]", "empty list"}, {"{}", "empty map"}, {"==", "eq"}, {"!=", "ne"}, {"<=", "le"},  {">=", "ge"},
      {"&&", "and"},        {"||", "or"},        {"<", "lt"},  {">", "gt"},  {"!", "not"},  {"+", "plus"},
      {"-", "minus"},       {"*", "times"},      {"/", "div"}, {"%", "mod"}, {"?", "then"},
  };
  std::string out;
  for (std::size_t i = 0; i < expression.size();) {
    const auto word = std::find_if(words.begin(), words.end(),
                                   [&](const auto& w) { return expression.compare(i, w.first.size(), w.first) == 0; });
    if (word == words.end()) {
      out += expression[i++];
    } else {
      out += " " + word->second + " ";
      i += word->first.size();
    }
  }
  return out;
}

// A table's cases, each named by its spelled expression; a name an earlier case took gets _2,
// _3... (names must be unique within a table).
template <typename C>
std::vector<C> named(std::vector<C> cases) {
  std::set<std::string> taken;
  for (auto& c : cases) {
    const std::string base = test::caseName(spelled(c.expression));
    c.name = base;
    for (int n = 2; !taken.insert(c.name).second; ++n) c.name = base + "_" + std::to_string(n);
  }
  return cases;
}

struct Case {
  std::string expression;
  json expected;
  json self = nullptr;
  std::string name = "";  // set by named()
};

void expectValue(const Case& c) {
  try {
    const json got = evaluate(c.expression, c.self);
    EXPECT_EQ(got, c.expected) << got.dump();
    EXPECT_EQ(got.type(), c.expected.type()) << got.dump();
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

struct ErrorCase {
  std::string expression;
  std::string message;  // EvalError's whole message
  json self = nullptr;
  std::string name = "";  // set by named()
};

void expectError(const ErrorCase& c) {
  EXPECT_EQ(test::messageOf<EvalError>([&] { evaluate(c.expression, c.self); }), c.message);
}

std::vector<Case> literalsCases() {
  return {
      {"null", nullptr},
      {"true", true},
      {"false", false},
      {"42", 42},
      {"-42", -42},
      {"0x1F", 31},
      {"0X1f", 31},
      {"-9223372036854775808", INT64_MIN},
      {"9223372036854775807", INT64_MAX},
      {"1u", 1u},
      {"0x10U", 16u},
      {"18446744073709551615u", UINT64_MAX},
      {"1.5", 1.5},
      {"-1.5", -1.5},
      {".5", 0.5},
      {"1e3", 1000.0},
      {"2.5E-1", 0.25},
      {"'single'", "single"},
      {"\"double\"", "double"},
      {R"('it\'s')", "it's"},
      {R"("say \"hi\"")", "say \"hi\""},
      {R"('back\\slash')", "back\\slash"},
      {R"('a\nb\tc')", "a\nb\tc"},
      {R"('\u00e9t\u00E9')", "été"},
      {R"('\U0001F600')", "😀"},
      {R"('\x41\101')", "AA"},
      {R"('\xe9')", "é"},
      {R"(r'\n\d')", "\\n\\d"},
      {R"(R"\s+")", "\\s+"},
      {"'''it's \"triple\"'''", "it's \"triple\""},
      {"\"\"\"two\nlines\"\"\"", "two\nlines"},
      {"'日本'", "日本"},
      {"[]", json::array()},
      {"[1, 'a', null, [true]]", json::parse(R"([1, "a", null, [true]])")},
      {"[1, 2,]", json::array({1, 2})},
      {"{}", json::object()},
      {"{'a': 1, 'b': [2]}", json::parse(R"({"a": 1, "b": [2]})")},
      {"{'a': 1,}", json::parse(R"({"a": 1})")},
      {"1 // a comment\n + 1", 2},
  };
}

MKA_TABLE_TEST(Cel, Literals, Case, named(literalsCases())) { expectValue(testCase()); }

std::vector<Case> precedenceAndAssociativityCases() {
  return {
      {"1 + 2 * 3", 7},
      {"(1 + 2) * 3", 9},
      {"10 - 4 - 3", 3},
      {"100 / 10 / 5", 2},
      {"2 * 3 % 4", 2},
      {"7 / 2", 3},
      {"-7 / 2", -3},
      {"-7 % 3", -1},
      {"- -1", 1},
      {"-(1 + 2)", -3},
      {"!true || true", true},
      {"!!true", true},
      {"true || false && false", true},
      {"(true || false) && false", false},
      {"1 + 1 == 2 && 2 < 3", true},
      {"1 < 2 == true", true},
      {"1 + 2 in [3]", true},
      {"!(1 in [2])", true},
      {"[1, 2][1] + 1", 3},
      {"{'a': {'b': 2}}.a.b * 2", 4},
      {"'abc'.size() + size([1])", 4},
      {"-'abc'.size()", -3},
      {"true ? 1 : 2 + 10", 1},
      {"false ? 1 : 2 + 10", 12},
      {"true ? 1 : false ? 2 : 3", 1},
      {"false ? 1 : false ? 2 : 3", 3},
      {"false || true ? 'yes' : 'no'", "yes"},
      {"1 < 2 ? 'lt' : 'ge'", "lt"},
  };
}

MKA_TABLE_TEST(Cel, PrecedenceAndAssociativity, Case, named(precedenceAndAssociativityCases())) {
  expectValue(testCase());
}

std::vector<Case> ternaryEvaluatesOnlyTheChosenBranchCases() {
  return {
      {"true ? 1 : 1 / 0", 1},
      {"false ? self.missing : 'x'", "x", json::object()},
  };
}

MKA_TABLE_TEST(Cel, TernaryEvaluatesOnlyTheChosenBranch, Case, named(ternaryEvaluatesOnlyTheChosenBranchCases())) {
  expectValue(testCase());
}

std::vector<ErrorCase> ternaryEvaluatesOnlyTheChosenBranchErrorCases() {
  return {
      {"1 ? 2 : 3", "no such overload: _?_:_(int)"},
      {"self.missing ? 1 : 2", "no such key: missing", json::object()},
  };
}

MKA_TABLE_TEST(Cel, TernaryEvaluatesOnlyTheChosenBranchErrors, ErrorCase,
               named(ternaryEvaluatesOnlyTheChosenBranchErrorCases())) {
  expectError(testCase());
}

std::vector<Case> andOrAbsorbErrorsInEitherOrderCases() {
  const json self = {{"a", 1}};
  return {
      {"false && 1 / 0 == 1", false},
      {"1 / 0 == 1 && false", false},
      {"true || 1 / 0 == 1", true},
      {"1 / 0 == 1 || true", true},
      {"false && self.missing", false, self},
      {"self.missing && false", false, self},
      {"self.missing == 1 || self.a == 1", true, self},
      {"'not a bool' && false", false},
      {"true || 'not a bool'", true},
      {"true && true", true},
      {"false || false", false},
  };
}

MKA_TABLE_TEST(Cel, AndOrAbsorbErrorsInEitherOrder, Case, named(andOrAbsorbErrorsInEitherOrderCases())) {
  expectValue(testCase());
}

std::vector<ErrorCase> andOrAbsorbErrorsInEitherOrderErrorCases() {
  const json self = {{"a", 1}};
  return {
      {"true && 1 / 0 == 1", "division by zero"},
      {"1 / 0 == 1 && true", "division by zero"},
      {"false || self.missing", "no such key: missing", self},
      {"self.missing || false", "no such key: missing", self},
      {"1 / 0 == 1 || self.missing", "division by zero", self},
      {"true && 'x'", "no such overload: &&(string)"},
      {"'x' || false", "no such overload: ||(string)"},
  };
}

MKA_TABLE_TEST(Cel, AndOrAbsorbErrorsInEitherOrderErrors, ErrorCase,
               named(andOrAbsorbErrorsInEitherOrderErrorCases())) {
  expectError(testCase());
}

std::vector<Case> hasAndFieldSelectionCases() {
  const json self = json::parse(R"({"a": 1, "n": null, "o": {"b": 2}, "l": [1]})");
  return {
      {"has(self.a)", true, self},
      {"has(self.z)", false, self},
      {"has(self.n)", true, self},
      {"has(self.o.b)", true, self},
      {"has(self.o.c)", false, self},
      {"has({'k': 1}.k)", true},
      {"!has(self.z) || self.z > 0", true, self},
      {"self.a", 1, self},
      {"self.n", nullptr, self},
      {"self.o.b", 2, self},
      {"self['a']", 1, self},
      {"self.o['b']", 2, self},
      {"self.l[0]", 1, self},
      {"{1: 'one', true: 'yes'}[1]", "one"},
      {"{1: 'one'}[1u]", "one"},
      {"[1, 2][1u]", 2},
  };
}

MKA_TABLE_TEST(Cel, HasAndFieldSelection, Case, named(hasAndFieldSelectionCases())) { expectValue(testCase()); }

std::vector<ErrorCase> hasAndFieldSelectionErrorCases() {
  const json self = json::parse(R"({"a": 1, "n": null, "o": {"b": 2}, "l": [1]})");
  return {
      {"self.z", "no such key: z", self},
      {"has(self.z.b)", "no such key: z", self},
      {"has(self.a.b)", "no such overload: has(int)", self},
      {"self.a.b", "no such overload: field selection .b on int", self},
      {"self['z']", "no such key: z", self},
      {"{1: 'one'}[2]", "no such key: 2"},
      {"self.l[1]", "index out of range: 1", self},
      {"[1][-1]", "index out of range: -1"},
      {"[1]['a']", "no such overload: list [] string"},
      {"'abc'[0]", "no such overload: string [] int"},
  };
}

MKA_TABLE_TEST(Cel, HasAndFieldSelectionErrors, ErrorCase, named(hasAndFieldSelectionErrorCases())) {
  expectError(testCase());
}

std::vector<Case> macrosOnListsCases() {
  const json self = json::parse(R"([{"n": 1}, {"n": 2}, {"n": 3}])");
  return {
      {"[1, 2, 3].all(x, x > 0)", true},
      {"[1, 2, 3].all(x, x > 1)", false},
      {"[].all(x, false)", true},
      {"[1, 2, 3].exists(x, x == 2)", true},
      {"[1, 2, 3].exists(x, x == 4)", false},
      {"[].exists(x, true)", false},
      {"[1, 2, 3].exists_one(x, x > 2)", true},
      {"[1, 2, 3].exists_one(x, x > 1)", false},
      {"[1, 2, 3].exists_one(x, x > 3)", false},
      {"[1, 2, 3].filter(x, x % 2 == 1)", json::array({1, 3})},
      {"[1, 2, 3].map(x, x * 10)", json::array({10, 20, 30})},
      {"[1, 2, 3].map(x, x > 1, x * 10)", json::array({20, 30})},
      {"self.all(e, e.n > 0)", true, self},
      {"self.exists(e, e.n == 3)", true, self},
      {"self.filter(e, e.n >= 2).map(e, e.n)", json::array({2, 3}), self},
      {"self.map(e, e)", self, self},
      {"[1, 2].map(x, [10, 20].map(y, x * y))", json::parse("[[10, 20], [20, 40]]")},
      {"[1].all(x, [2].all(x, x == 2))", true},
      {"[1, 2].all(x, [3].all(y, x < y))", true},
      {"size(['a', 'b', 'a'].filter(i, size(['a', 'b', 'a'].filter(j, j == i)) > 1))", 2},
      // A decisive element wins over an error on another, as with && and ||.
      {"[0, -1].all(x, 1 / x > 0)", false},
      {"[0, 1].exists(x, 1 / x > 0)", true},
  };
}

MKA_TABLE_TEST(Cel, MacrosOnLists, Case, named(macrosOnListsCases())) { expectValue(testCase()); }

std::vector<ErrorCase> macrosOnListsErrorCases() {
  return {
      {"[0, 1].all(x, 1 / x > 0)", "division by zero"},
      {"[0].exists(x, 1 / x > 0)", "division by zero"},
      {"[0, 1].exists_one(x, 1 / x > 0)", "division by zero"},
      {"[0, 1].filter(x, 1 / x > 0)", "division by zero"},
      {"[1].all(x, x)", "all() needs a bool predicate, not int"},
      {"1.all(x, true)", "all() needs a list or a map, not int"},
  };
}

MKA_TABLE_TEST(Cel, MacrosOnListsErrors, ErrorCase, named(macrosOnListsErrorCases())) { expectError(testCase()); }

std::vector<Case> macrosOnMapsIterateKeysCases() {
  const json self = json::parse(R"({"b": 2, "a": 1})");
  return {
      {"{'a': 1, 'b': 2}.all(k, k.size() == 1)", true},
      {"{'a': 1, 'b': 2}.exists(k, k == 'b')", true},
      {"{'a': 1, 'b': 2}.exists_one(k, k != 'a')", true},
      {"{'a': 1, 'b': 2}.filter(k, k != 'a')", json::array({"b"})},
      {"{'a': 1, 'b': 2}.map(k, k + k)", json::array({"aa", "bb"})},
      {"{'a': 1, 'b': 2}.map(k, k == 'b', k)", json::array({"b"})},
      // JSON objects iterate in key order.
      {"self.map(k, k)", json::array({"a", "b"}), self},
      {"self.map(k, self[k] * 10)", json::array({10, 20}), self},
      {"self.all(k, self[k] > 0)", true, self},
      {"self.exists(k, self[k] == 3)", false, self},
  };
}

MKA_TABLE_TEST(Cel, MacrosOnMapsIterateKeys, Case, named(macrosOnMapsIterateKeysCases())) { expectValue(testCase()); }

std::vector<Case> sizeCountsCodePointsCases() {
  return {
      {"size('')", 0},
      {"size('hello')", 5},
      {"size('héllo')", 5},
      {"'日本語'.size()", 3},
      {"size('😀!')", 2},
      {"size([1, 2, 3])", 3},
      {"size({'a': 1})", 1},
      {"self.size()", 2, json::array({1, 2})},
      {"size(self)", 1, json::object({{"k", "v"}})},
      {"size(self)", 4, "ÀÉÎÕ"},
  };
}

MKA_TABLE_TEST(Cel, SizeCountsCodePoints, Case, named(sizeCountsCodePointsCases())) { expectValue(testCase()); }

std::vector<ErrorCase> sizeCountsCodePointsErrorCases() {
  return {
      {"size(1)", "no such overload: size(int)"},
  };
}

MKA_TABLE_TEST(Cel, SizeCountsCodePointsErrors, ErrorCase, named(sizeCountsCodePointsErrorCases())) {
  expectError(testCase());
}

std::vector<Case> inOnListsAndMapsCases() {
  return {
      {"1 in [1, 2]", true},
      {"3 in [1, 2]", false},
      {"'a' in ['a']", true},
      {"1 in [1.0]", true},
      {"'1' in [1]", false},
      {"[1] in [[1], [2]]", true},
      {"'a' in {'a': 1}", true},
      {"'b' in {'a': 1}", false},
      {"'a' in self", true, json::object({{"a", nullptr}})},
      {"1 in self", false, json::object({{"1", 1}})},
      {"self.e in ['NoSchedule', 'NoExecute']", true, json::object({{"e", "NoExecute"}})},
  };
}

MKA_TABLE_TEST(Cel, InOnListsAndMaps, Case, named(inOnListsAndMapsCases())) { expectValue(testCase()); }

std::vector<ErrorCase> inOnListsAndMapsErrorCases() {
  return {
      {"1 in 1", "no such overload: int in int"},
  };
}

MKA_TABLE_TEST(Cel, InOnListsAndMapsErrors, ErrorCase, named(inOnListsAndMapsErrorCases())) { expectError(testCase()); }

std::vector<Case> arithmeticCases() {
  return {
      {"2 + 3", 5},
      {"2 - 5", -3},
      {"6 * 7", 42},
      {"9223372036854775807 - 1 + 1", INT64_MAX},
      {"2u + 3u", 5u},
      {"7u / 2u", 3u},
      {"7u % 4u", 3u},
      {"1.5 + 1.0", 2.5},
      {"1.0 / 4.0", 0.25},
      {"1.0 / 0.0 > 1e308", true},
      {"-(1.5)", -1.5},
      {"'ab' + 'cd'", "abcd"},
      {"[1] + [2, 3]", json::array({1, 2, 3})},
      {"self + [3]", json::array({1, 2, 3}), json::array({1, 2})},
  };
}

MKA_TABLE_TEST(Cel, Arithmetic, Case, named(arithmeticCases())) { expectValue(testCase()); }

std::vector<ErrorCase> arithmeticErrorCases() {
  return {
      {"9223372036854775807 + 1", "integer overflow"},
      {"-9223372036854775808 - 1", "integer overflow"},
      {"9223372036854775807 * 2", "integer overflow"},
      {"-9223372036854775808 / -1", "integer overflow"},
      {"-9223372036854775808 % -1", "integer overflow"},
      {"-(-9223372036854775808)", "integer overflow"},
      {"1 / 0", "division by zero"},
      {"1 % 0", "modulus by zero"},
      {"1u / 0u", "division by zero"},
      {"1u - 2u", "unsigned integer overflow"},
      {"18446744073709551615u + 1u", "unsigned integer overflow"},
      {"1 + 1.0", "no such overload: int + double"},
      {"1 + 1u", "no such overload: int + uint"},
      {"'a' + 1", "no such overload: string + int"},
      {"5.5 % 2.0", "no such overload: double % double"},
      {"'a' - 'b'", "no such overload: string - string"},
      {"-1u", "no such overload: -(uint)"},
      {"-'a'", "no such overload: -(string)"},
      {"!1", "no such overload: !(int)"},
  };
}

MKA_TABLE_TEST(Cel, ArithmeticErrors, ErrorCase, named(arithmeticErrorCases())) { expectError(testCase()); }

std::vector<Case> equalityAndOrderAcrossTypesCases() {
  const json self = json::parse(R"({"a": [1, {"b": "c"}], "n": 2})");
  return {
      {"1 == 1.0", true},
      {"1 == 1u", true},
      {"1u == 1.0", true},
      {"-1 == 18446744073709551615u", false},
      {"9007199254740993 == 9007199254740992.0", false},
      {"1 != 2", true},
      {"1 < 1.5", true},
      {"2u > 1", true},
      {"-1 < 0u", true},
      {"1.5 <= 2", true},
      {"2 >= 2.0", true},
      {"'a' < 'b'", true},
      {"'B' < 'a'", true},
      {"'é' > 'z'", true},
      {"false < true", true},
      {"'a' == 1", false},
      {"'a' != 1", true},
      {"null == null", true},
      {"null == 0", false},
      {"[1, 2] == [1, 2]", true},
      {"[1, 2] == [2, 1]", false},
      {"[1] == [1.0]", true},
      {"{'a': 1} == {'a': 1.0}", true},
      {"{'a': 1} == {'b': 1}", false},
      {"self == {'n': 2, 'a': [1, {'b': 'c'}]}", true, self},
      {"self.a[1] == {'b': 'c'}", true, self},
      {"0.0 / 0.0 == 0.0 / 0.0", false},
      {"0.0 / 0.0 < 1.0", false},
      {"0.0 / 0.0 >= 1.0", false},
  };
}

MKA_TABLE_TEST(Cel, EqualityAndOrderAcrossTypes, Case, named(equalityAndOrderAcrossTypesCases())) {
  expectValue(testCase());
}

std::vector<ErrorCase> equalityAndOrderAcrossTypesErrorCases() {
  return {
      {"1 < 'a'", "no such overload: int < string"},
      {"[1] < [2]", "no such overload: list < list"},
      {"null < null", "no such overload: null_type < null_type"},
  };
}

MKA_TABLE_TEST(Cel, EqualityAndOrderAcrossTypesErrors, ErrorCase, named(equalityAndOrderAcrossTypesErrorCases())) {
  expectError(testCase());
}

TEST(Cel, AnObjectEqualsItsOldSelfWhateverTheKeyOrder) {
  const json self = json::parse(R"({"a": [1, {"b": "c"}], "n": 2})");
  const json same = json::parse(R"({"n": 2, "a": [1, {"b": "c"}]})");
  EXPECT_EQ(evaluate("self == oldSelf", self, &same), true);
}

std::vector<Case> stringFunctionsCases() {
  return {
      {"'kueue.x-k8s.io'.contains('k8s')", true},
      {"'abc'.contains('')", true},
      {"'abc'.contains('d')", false},
      {"'resourcesDuration.cpu'.startsWith('resourcesDuration.')", true},
      {"'ab'.startsWith('abc')", false},
      {"'file.yaml'.endsWith('.yaml')", true},
      {"'yaml'.endsWith('.yaml')", false},
      {"'1st'.matches('^[0-9]')", true},
      {"'first'.matches('^[0-9]')", false},
      {"'abc'.matches('b')", true},
      {"'abc'.matches('^b')", false},
      {"matches('abc', 'a.c$')", true},
      {R"('a-1'.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$'))", true},
      {R"('A-1'.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$'))", false},
      {R"('x.y'.matches(r'^\w+\.\w+$'))", true},
      {"'ab'.matches('^(?:a|b)+$')", true},
      {"'a\\nb'.matches('a.b')", false},
      {"'a\\nb'.matches('^b')", false},
      {"'a\\nb'.matches('a$')", false},
      // Patterns that make a backtracking matcher take exponential time match in one pass.
      {"self.matches('(a*)*b')", false, std::string(5000, 'a')},
      {"self.matches('^(a|aa)+$')", true, std::string(5000, 'a')},
      {"'ÀBc-d'.lowerAscii()", "Àbc-d"},
      {"'àbC'.upperAscii()", "àBC"},
  };
}

MKA_TABLE_TEST(Cel, StringFunctions, Case, named(stringFunctionsCases())) { expectValue(testCase()); }

std::vector<ErrorCase> stringFunctionsErrorCases() {
  return {
      {"'a'.contains(1)", "no such overload: string contains int"},
      {"1.startsWith('a')", "no such overload: int startsWith string"},
      {"self.matches('a')", "no such overload: matches(int)", 1},
      {"1.lowerAscii()", "no such overload: lowerAscii(int)"},
  };
}

MKA_TABLE_TEST(Cel, StringFunctionsErrors, ErrorCase, named(stringFunctionsErrorCases())) { expectError(testCase()); }

std::vector<Case> conversionsCases() {
  return {
      {"int('42')", 42},
      {"int('-3')", -3},
      {"int('+3')", 3},
      {"int(2.9)", 2},
      {"int(-2.9)", -2},
      {"int(5u)", 5},
      {"int(7)", 7},
      {"uint(5)", 5u},
      {"uint(2.5)", 2u},
      {"uint('7')", 7u},
      {"double(3)", 3.0},
      {"double(3u)", 3.0},
      {"double('1.5')", 1.5},
      {"double('-2e3')", -2000.0},
      {"string(1)", "1"},
      {"string(-1)", "-1"},
      {"string(1u)", "1"},
      {"string(1.5)", "1.5"},
      {"string(100.0)", "100"},
      {"string(123456.0)", "123456"},
      {"string(1e6)", "1e+06"},
      {"string(1234567.0)", "1.234567e+06"},
      {"string(0.0001)", "0.0001"},
      {"string(0.00001)", "1e-05"},
      {"string(-0.5)", "-0.5"},
      {"string(1e100)", "1e+100"},
      {"string(true)", "true"},
      {"string('s')", "s"},
      {"bool('true')", true},
      {"bool('False')", false},
      {"bool('1')", true},
      {"bool(false)", false},
      {"dyn(1) + 1", 2},
  };
}

MKA_TABLE_TEST(Cel, Conversions, Case, named(conversionsCases())) { expectValue(testCase()); }

std::vector<ErrorCase> conversionsErrorCases() {
  return {
      {"int('x')", "int() of \"x\": not an integer"},
      {"int('1.5')", "int() of \"1.5\": not an integer"},
      {"int(1e20)", "int() of 1e+20: out of the int range"},
      {"int(18446744073709551615u)", "int() of 18446744073709551615u: out of the int range"},
      {"uint(-1)", "uint() of -1: out of the uint range"},
      {"uint(-0.5)", "uint() of -0.5: out of the uint range"},
      {"uint('-1')", "uint() of \"-1\": not an unsigned integer"},
      {"double('x')", "double() of \"x\": not a number"},
      {"string(null)", "no such overload: string(null_type)"},
      {"string([1])", "no such overload: string(list)"},
      {"bool('yes')", "bool() of \"yes\": not a boolean"},
      {"int(true)", "no such overload: int(bool)"},
  };
}

MKA_TABLE_TEST(Cel, ConversionsErrors, ErrorCase, named(conversionsErrorCases())) { expectError(testCase()); }

// JSON integers are ints whatever nlohmann made of them; floats are doubles.
std::vector<Case> jsonValuesMapToCelTypesCases() {
  return {
      {"self + 1", 6, json(5u)},
      {"self + 0.5", 3.0, json(2.5)},
      {"self > 1e19", true, json(UINT64_C(18446744073709551615))},
      {"self == 5", true, json(5)},
      {"self.n + 1", 3, json::parse(R"({"n": 2})")},
  };
}

MKA_TABLE_TEST(Cel, JsonValuesMapToCelTypes, Case, named(jsonValuesMapToCelTypesCases())) { expectValue(testCase()); }

std::vector<ErrorCase> jsonValuesMapToCelTypesErrorCases() {
  return {
      {"self + 1", "no such overload: double + int", json(2.5)},
  };
}

MKA_TABLE_TEST(Cel, JsonValuesMapToCelTypesErrors, ErrorCase, named(jsonValuesMapToCelTypesErrorCases())) {
  expectError(testCase());
}

std::vector<Case> resultsAreJsonCases() {
  return {
      {"'replicas ' + string(self.n) + ' exceed ' + string(self.max)", "replicas 5 exceed 3",
       json::parse(R"({"n": 5, "max": 3})")},
      {"{'a': [1u, 2.5, null]}", json::parse(R"({"a": [1, 2.5, null]})")},
      {"self.l.map(x, {'v': x})", json::parse(R"([{"v": "a"}])"), json::parse(R"({"l": ["a"]})")},
  };
}

MKA_TABLE_TEST(Cel, ResultsAreJson, Case, named(resultsAreJsonCases())) { expectValue(testCase()); }

std::vector<ErrorCase> resultsAreJsonErrorCases() {
  return {
      {"{1: 'a'}", "a map with a int key has no JSON form"},
      {"{'a': 1, 'a': 2}", "repeated key in a map literal: a"},
      {"{1: 'a', 1u: 'b'}", "repeated key in a map literal: 1"},
      {"{1.5: 'a'}", "unsupported key type double in a map literal"},
  };
}

MKA_TABLE_TEST(Cel, ResultsAreJsonErrors, ErrorCase, named(resultsAreJsonErrorCases())) { expectError(testCase()); }

TEST(Cel, EvalErrorsSayWhere) {
  const json self = {{"a", 1}};
  const auto missing = test::thrownBy<EvalError>([&] { evaluate("self.a + self.missing", self); });
  EXPECT_STREQ(missing.what(), "no such key: missing");
  EXPECT_EQ(missing.column(), 15);
  const auto division = test::thrownBy<EvalError>([&] { evaluate("[1, 2].map(x, x / 0)", self); });
  EXPECT_EQ(division.column(), 17);
}

struct CompileCase {
  std::string expression;
  std::string message;  // a part of the message, ending with the position
  int column;
  int line = 1;
  std::string name = "";  // set by named()
};

std::vector<CompileCase> compileErrorCases() {
  return {
      {"1 + quantity('1')", "unsupported function \"quantity\" at column 5", 5},
      {"timestamp('2020-01-01T00:00:00Z') > 1", "unsupported function \"timestamp\" at column 1", 1},
      {"self.foo()", "unsupported function \"foo\" at column 6", 6},
      {"self.all(x, x.isSorted())", "unsupported function \"isSorted\" at column 15", 15},
      {"size(1, 2)", "wrong arguments to \"size\" at column 1: call it as size(x) or x.size()", 1},
      {"'a'.size(1)", "wrong arguments to \"size\" at column 5", 5},
      {"'a'.int()", "wrong arguments to \"int\" at column 5", 5},
      {"contains('a', 'b')", "wrong arguments to \"contains\" at column 1", 1},
      {"self.all(x)", "all() takes a variable and a predicate at column 6", 6},
      {"self.map(x, 1, 2, 3)", "map() takes a variable and a transform at column 6", 6},
      {"self.exists(1, true)", "the first argument of exists() must be a variable name at column 13", 13},
      {"has(self)", "has() takes one field selection at column 1", 1},
      {"has(self.a, self.b)", "has() takes one field selection at column 1", 1},
      {"b'abc' == b'abc'", "unsupported bytes literal at column 1", 1},
      {"foo == 1", "undeclared reference to \"foo\" at column 1", 1},
      {"[1].all(x, y > 0)", "undeclared reference to \"y\" at column 12", 12},
      {"[1].map(x, x) == [x]", "undeclared reference to \"x\" at column 19", 19},
      {"int == 1", "undeclared reference to \"int\" at column 1", 1},
      {"self.namespace == 'a'", "\"namespace\" is a reserved word at column 6", 6},
      {"self.x__dash__y", "unsupported escaped field name \"x__dash__y\" at column 6", 6},
      {"self.?x", "unsupported optional field selection \".?\" at column 6", 6},
      {"self[?'x']", "unsupported optional index \"[?\" at column 6", 6},
      {"Foo{a: 1}", "unsupported message construction at column 4", 4},
      {".self", "unsupported leading \".\" (a fully qualified name) at column 1", 1},
      {"1 +", "unexpected end of the expression at column 4", 4},
      {"(1 + 2", "expected \")\" to close the \"(\" at column 1, found the end of the expression at column 7", 7},
      {"[1, 2", "expected \"]\" to close the list at column 1", 6},
      {"1 2", "expected an operator or the end of the expression, found a number at column 3", 3},
      {"self.a)", "found \")\" at column 7", 7},
      {"true ? 1", "expected \":\" in a conditional", 9},
      {"'abc", "unterminated string at column 1", 1},
      {"'a\nb'", "line break in a quoted string at line 1, column 1", 1},
      {R"('\q')", "unknown escape sequence \"\\q\" at column 2", 2},
      {R"('\u12')", "escape sequence with too few digits at column 2", 2},
      {R"('\uD800')", "escape sequence is not a Unicode code point at column 2", 2},
      {"1 = 1", "unexpected \"=\" at column 3: compare with ==", 3},
      {"1 & 1", "unexpected \"&\" at column 3", 3},
      {"1 # 1", "unexpected \"#\" at column 3", 3},
      {"9223372036854775808", "integer literal out of range at column 1", 1},
      {"-9223372036854775809", "integer literal out of range at column 1", 1},
      {"99999999999999999999u", "integer literal \"99999999999999999999\" is out of range at column 1", 1},
      {"1e400", "double literal \"1e400\" is out of range at column 1", 1},
      {"1x", "unexpected \"x\" after a number at column 2", 2},
      {"'a'.matches('(?P<n>a)')", "unsupported regular expression group \"(?\" at column 13", 13},
      {R"('a'.matches('\\pL'))", "unsupported regular expression escape \"\\p\" at column 13", 13},
      {"'a'.matches('[')", "invalid regular expression \"[\"", 13},
      {"'a'.matches('a)(b')", "invalid regular expression \"a)(b\"", 13},
      {"'a'.matches('a{1001}')", "regular expression repetition count above 1000 at column 13", 13},
      {"'a'.matches('" + std::string(101, '(') + std::string(101, ')') + "')",
       "regular expression nests deeper than 100 groups at column 13", 13},
      {"'a'.matches(self.p)", "matches() with a pattern that is not a string literal at column 18", 18},
      // Columns count code points, not bytes.
      {"'é' + foo", "undeclared reference to \"foo\" at column 7", 7},
      {"self.a &&\n  foo(1)", "unsupported function \"foo\" at line 2, column 3", 3, 2},
  };
}

MKA_TABLE_TEST(Cel, CompileErrorsNameTheConstructAndColumn, CompileCase, named(compileErrorCases())) {
  const CompileCase& c = testCase();
  try {
    Program::compile(c.expression);
    ADD_FAILURE() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.what(), HasSubstr(c.message));
    EXPECT_EQ(e.column(), c.column);
    EXPECT_EQ(e.line(), c.line);
  }
}

TEST(Cel, NestingIsBounded) {
  const std::string deep = std::string(150, '(') + "1" + std::string(150, ')');
  EXPECT_THAT(test::messageOf<CompileError>([&] { Program::compile(deep); }),
              HasSubstr("expression nests deeper than 100 levels"));
  std::string chain = "1";
  for (int i = 0; i < 150; ++i) chain += " + 1";
  EXPECT_THAT(test::messageOf<CompileError>([&] { Program::compile(chain); }),
              HasSubstr("expression nests deeper than 100 levels"));
  EXPECT_THAT(test::messageOf<CompileError>([&] { Program::compile(std::string(150, '!') + "true"); }),
              HasSubstr("expression nests deeper than 100 levels"));
  std::string shallow = "1";
  for (int i = 0; i < 50; ++i) shallow += " + 1";
  EXPECT_EQ(evaluate(shallow), 51);
}

TEST(Cel, CostLimitStopsLongEvaluations) {
  EXPECT_EQ(evaluate("[1, 2, 3].all(x, x > 0)", nullptr, nullptr, 100), true);
  EXPECT_EQ(test::messageOf<EvalError>([&] { evaluate("[1, 2, 3].all(x, x > 0)", nullptr, nullptr, 10); }),
            "cost limit exceeded: the expression took more than 10 steps");
}

struct CostlyCase {
  std::string expression;
  std::string name = "";  // set by named()
};

std::vector<CostlyCase> costlyCases() {
  const std::string cubic = "self.all(x, self.all(y, self.all(z, z == 1)))";
  return {{cubic}, {cubic + " || true"}, {"self.exists(x, " + cubic + ")"}};
}

MKA_TABLE_TEST(Cel, CostLimitStopsLongEvaluationsAndIsNotAbsorbed, CostlyCase, named(costlyCases())) {
  const std::string& expression = testCase().expression;
  const json self = json(std::vector<int>(200, 1));
  const auto error = test::thrownBy<EvalError>([&] { evaluate(expression, self); });
  EXPECT_THAT(error.what(), HasSubstr("cost limit exceeded"));
}

TEST(Cel, VariablesAndTransitionRules) {
  EXPECT_TRUE(Program::compile("self == oldSelf").usesOldSelf());
  EXPECT_TRUE(Program::compile("!has(oldSelf.a) || self.a == oldSelf.a").usesOldSelf());
  EXPECT_FALSE(Program::compile("self.a > 0").usesOldSelf());
  // An iteration variable named oldSelf hides the variable.
  EXPECT_FALSE(Program::compile("self.all(oldSelf, oldSelf > 0)").usesOldSelf());
  EXPECT_EQ(Program::compile(" self ").expression(), " self ");

  const json self = {{"a", 1}};
  const auto noOld = test::thrownBy<EvalError>([&] { evaluate("self == oldSelf", self); });
  EXPECT_THAT(noOld.what(), HasSubstr("no value for oldSelf"));
  // A rule that does not read oldSelf needs none; one that reads neither needs no self.
  EXPECT_EQ(evaluate("self.a == 1", self), true);
  EXPECT_EQ(Program::compile("1 + 1").evaluate({}), 2);
}

// A caller may declare other variables (a webhook's matchConditions read object, oldObject and
// request); then self is as unknown as any other name.
TEST(Cel, DeclaredVariablesReplaceSelfAndOldSelf) {
  const std::vector<std::string> variables = {"object", "oldObject", "request"};
  const Program program = Program::compile("request.operation != 'UPDATE' || object.a != oldObject.a", variables);
  EXPECT_TRUE(program.uses("object"));
  EXPECT_TRUE(program.uses("request"));
  EXPECT_FALSE(program.uses("self"));
  EXPECT_FALSE(program.usesOldSelf());
  const json object = {{"a", 1}};
  const json same = {{"a", 1}};
  const json update = {{"operation", "UPDATE"}};
  Activation activation;
  activation.variables = {{"object", &object}, {"oldObject", &same}, {"request", &update}};
  EXPECT_EQ(program.evaluate(activation), false);
  const json other = {{"a", 2}};
  activation.variables["oldObject"] = &other;
  EXPECT_EQ(program.evaluate(activation), true);

  const auto error = test::thrownBy<CompileError>([&] { Program::compile("self.a == 1", variables); });
  EXPECT_THAT(error.what(), HasSubstr("undeclared reference to \"self\" at column 1: the expression reads object, "
                                      "oldObject, request, and the variables its macros declare"));
  EXPECT_THAT(test::messageOf<EvalError>([&] { Program::compile("request.dryRun", variables).evaluate({}); }),
              HasSubstr("no value for request"));
}

TEST(Cel, OneProgramEvaluatesOnManyThreads) {
  const Program program = Program::compile("self.filter(x, x.matches('^[0-9]')).map(x, int(x) * 2)");
  std::vector<json> inputs;
  for (int t = 0; t < 4; ++t) inputs.push_back(json::array({std::to_string(t), "x", std::to_string(t + 10)}));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const json expected = json::array({t * 2, (t + 10) * 2});
      for (int i = 0; i < 200; ++i) {
        Activation activation;
        activation.variables["self"] = &inputs[static_cast<std::size_t>(t)];
        if (program.evaluate(activation) != expected) ++mismatches[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace mka::cel

namespace mka::cel {
namespace {

// Patterns as RE2 reads them: a leading (?i) is honoured, syntax ECMAScript reads differently
// is refused instead of matched differently.
TEST(Regex, ReadsWhatRe2Reads) {
  const auto kind = Regex::compile("^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$");
  EXPECT_TRUE(kind.search("MultiKueue"));
  EXPECT_FALSE(kind.search("1abc"));
  EXPECT_TRUE(Regex::compile("(?i)abc").search("xABCx")) << "unanchored: a match anywhere";
  EXPECT_FALSE(Regex::compile("abc").search("ABC"));
  // Linear time: a pattern that makes a backtracking matcher take exponential time.
  EXPECT_FALSE(Regex::compile("^(a*)*b$").search(std::string(64, 'a')));
}

struct RefusedPattern {
  std::string name;  // the construct refused
  std::string pattern;
};

std::vector<RefusedPattern> refusedPatterns() {
  return {
      {"a flag after the start", "a(?i)b"},
      {"a named group", "(?P<n>a)"},
      {"a lookahead", "(?=a)"},
      {"a Unicode class", "\\pL"},
      {"a start-of-text anchor", "\\Aa"},
      {"a backreference", "(a)\\1"},
      {"a repetition count above 1000", "a{1001}"},
  };
}

MKA_TABLE_TEST(Regex, ReadsWhatRe2ReadsOrRefusesIt, RefusedPattern, refusedPatterns()) {
  const char* refused = testCase().pattern.c_str();
  EXPECT_THROW(Regex::compile(refused), RegexError);
}

}  // namespace
}  // namespace mka::cel
