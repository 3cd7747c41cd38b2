#include "mka/webhook/log_value.h"

#include <gtest/gtest.h>

namespace mka::webhook {
namespace {

TEST(LogValue, QuotesWhatCouldForgeFields) {
  struct Case {
    std::string name{};
    std::string value{};
    std::string expected{};
  };
  const std::vector<Case> cases = {
      {"plain token", "tekton-ci/build-42", "tekton-ci/build-42"},
      {"uid", "705ab4f5-6393-11e8-b7cc-42010a800002", "705ab4f5-6393-11e8-b7cc-42010a800002"},
      {"empty", "", "\"\""},
      {"space", "a b", "\"a b\""},
      {"quote and backslash", R"(a"b\c)", R"("a\"b\\c")"},
      {"newline cannot start a new entry", "x\nlevel=error", R"("x\nlevel=error")"},
      {"tab", "a\tb", R"("a\tb")"},
      {"control byte", std::string("a\x01", 2), R"("a\x01")"},
      {"equals sign", "k=v", "\"k=v\""},
      {"long values are cut", std::string(300, 'a'), "\"" + std::string(256, 'a') + "...\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(logValue(c.value), c.expected);
  }
}

}  // namespace
}  // namespace mka::webhook
