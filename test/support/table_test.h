#pragma once
// Table-driven tests whose cases are tests of their own, as Kueue's TestWlReconcile runs each
// named case as a subtest: `--gtest_filter='*WorkloadReconciler*OutOfSync*'` runs the cases
// whose table or name match, a fatal failure ends only its own case, and gtest reports and
// times each case. ctest runs a table as one test (test/cmake/discover_tests.cmake). A table is
// a function returning its cases; each case has a `name`.
//
//   std::vector<Case> entryCases() { ... }
//   MKA_TABLE_TEST(WorkloadReconcilerTest, EntryAndAdapterSelection, Case, entryCases()) {
//     const Case& c = testCase();
//     ...
//   }
//
// registers "WorkloadReconcilerTest/EntryAndAdapterSelection.Case/<name>", the name with every
// character other than a letter or a digit made '_'. The table is built when the tests are
// listed (after static initialisation), so cases may use any global; it is built in every
// process of its test binary, whichever test that process runs, so building it must stay cheap
// (read files or start servers in the test body, not in the table). Names must be unique within
// a table: gtest refuses a duplicate when it lists the tests.

#include <cctype>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace mka::test {

// A case's name as a gtest parameter name: letters, digits and '_' only, runs of anything else
// one '_', no '_' at either end.
inline std::string caseName(const std::string& name) {
  std::string out;
  for (const unsigned char ch : name) {
    if (std::isalnum(ch)) {
      out += static_cast<char>(ch);
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "unnamed" : out;
}

// A case as a test parameter: gtest and ctest show its name (as in the test's name: ctest's
// names must not carry the quotes or semicolons a case's name may have), not the bytes of the
// whole case.
// Shared, not copied: gtest copies each parameter several times while it registers the tests.
template <typename Case>
struct TableCase {
  std::shared_ptr<const Case> value;
};
template <typename Case>
void PrintTo(const TableCase<Case>& c, std::ostream* out) {
  *out << caseName(c.value->name);
}
template <typename Case>
std::vector<TableCase<Case>> tableOf(std::vector<Case> cases) {
  std::vector<TableCase<Case>> out;
  out.reserve(cases.size());
  for (auto& c : cases) out.push_back({std::make_shared<const Case>(std::move(c))});
  return out;
}

}  // namespace mka::test

// `Table` is the fixture class: unique in its test binary (files may share a unity build) and
// unlike any type the test's namespace sees.
#define MKA_TABLE_TEST(Suite, Table, CaseType, casesExpression) \
  MKA_TABLE_TEST_WITH_(Suite, Table, CaseType, casesExpression, ::testing::Test)

// The same with a fixture every case sets up anew (a TEST_F's class): "Fixture/Table.Case/<name>".
#define MKA_TABLE_TEST_F(Fixture, Table, CaseType, casesExpression) \
  MKA_TABLE_TEST_WITH_(Fixture, Table, CaseType, casesExpression, Fixture)

#define MKA_TABLE_TEST_WITH_(Suite, Table, CaseType, casesExpression, Base)                             \
  class Table : public Base, public ::testing::WithParamInterface<::mka::test::TableCase<CaseType>> {   \
   protected:                                                                                           \
    const CaseType& testCase() const { return *GetParam().value; }                                      \
  };                                                                                                    \
  INSTANTIATE_TEST_SUITE_P(Suite, Table, ::testing::ValuesIn(::mka::test::tableOf(casesExpression)),    \
                           [](const ::testing::TestParamInfo<::mka::test::TableCase<CaseType>>& info) { \
                             return ::mka::test::caseName(info.param.value->name);                      \
                           });                                                                          \
  TEST_P(Table, Case)
