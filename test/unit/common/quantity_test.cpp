#include "mka/common/quantity.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::quantity {
namespace {

struct ParsesKubernetesSuffixesInThousandthsCase {
  std::string name;
  std::string text;
  std::optional<std::int64_t> milli;
};

std::vector<ParsesKubernetesSuffixesInThousandthsCase> parsesKubernetesSuffixesInThousandthsCases() {
  const std::vector<ParsesKubernetesSuffixesInThousandthsCase> cases = {
      {"plain number", "1", 1000},
      {"milli", "500m", 500},
      {"decimal fraction", "1.5", 1500},
      {"binary Gi", "2Gi", 2147483648000},
      {"binary Ki", "1Ki", 1024000},
      {"decimal k", "1k", 1000000},
      {"decimal M", "1M", 1000000000},
      {"exponent", "1e3", 1000000},
      {"negative exponent", "1E-3", 1},
      {"fraction below one", "0.1", 100},
      {"nano rounds up to one milli", "1n", 1},
      {"plus sign", "+2", 2000},
      {"negative", "-1", -1000},
      {"empty", "", std::nullopt},
      {"suffix only", "m", std::nullopt},
      {"two decimal points", "1.2.3", std::nullopt},
      {"unknown suffix", "1Xi", std::nullopt},
      {"space before the suffix", "1 Gi", std::nullopt},
      {"too large", "10E", std::nullopt},
  };
  return cases;
}

MKA_TABLE_TEST(Quantity, ParsesKubernetesSuffixesInThousandths, ParsesKubernetesSuffixesInThousandthsCase,
               parsesKubernetesSuffixesInThousandthsCases()) {
  const ParsesKubernetesSuffixesInThousandthsCase& c = testCase();
  SCOPED_TRACE(c.text);
  EXPECT_EQ(parseMilli(c.text), c.milli);
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
