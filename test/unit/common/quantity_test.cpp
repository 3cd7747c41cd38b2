#include "mka/common/quantity.h"

#include <gtest/gtest.h>

namespace mka::quantity {
namespace {

TEST(Quantity, ParsesKubernetesSuffixesInThousandths) {
  struct Case {
    std::string text;
    std::optional<std::int64_t> milli;
  };
  const std::vector<Case> cases = {
      {"1", 1000},
      {"500m", 500},
      {"1.5", 1500},
      {"2Gi", 2147483648000},
      {"1Ki", 1024000},
      {"1k", 1000000},
      {"1M", 1000000000},
      {"1e3", 1000000},
      {"1E-3", 1},
      {"0.1", 100},
      {"1n", 1},
      {"+2", 2000},
      {"-1", -1000},
      {"", std::nullopt},
      {"m", std::nullopt},
      {"1.2.3", std::nullopt},
      {"1Xi", std::nullopt},
      {"1 Gi", std::nullopt},
      {"10E", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(parseMilli(c.text), c.milli);
  }
}

TEST(Quantity, FormatsWholeUnitsPlainAndTheRestInMilli) {
  EXPECT_EQ(formatMilli(2000), "2");
  EXPECT_EQ(formatMilli(1500), "1500m");
  EXPECT_EQ(formatMilli(0), "0");
  for (const std::int64_t milli :
       {std::int64_t{1}, std::int64_t{999}, std::int64_t{2147483648000}, std::int64_t{123456789}})
    EXPECT_EQ(parseMilli(formatMilli(milli)), milli);
}

}  // namespace
}  // namespace mka::quantity
