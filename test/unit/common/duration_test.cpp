#include "mka/common/duration.h"

#include <gtest/gtest.h>

#include <limits>

#include "support/table_test.h"

namespace mka {
namespace {

using namespace std::chrono_literals;

struct ParsesGoSyntaxCase {
  std::string name;
  std::string text;
  std::optional<Duration> expected;
};

std::vector<ParsesGoSyntaxCase> parsesGoSyntaxCases() {
  const std::vector<ParsesGoSyntaxCase> cases = {
      {"minute", "1m", 1min},
      {"hours and minutes", "1h30m", 90min},
      {"fraction", "1.5s", 1500ms},
      {"milliseconds", "250ms", 250ms},
      {"zero", "0", 0ns},
      {"zero with unit", "0s", 0ns},
      {"negative", "-1m", -1min},
      {"plus sign", "+2s", 2s},
      {"nanoseconds", "7ns", 7ns},
      {"microseconds us", "3us", 3us},
      {"microseconds micro sign", "3\xC2\xB5s", 3us},
      {"microseconds greek mu", "3\xCE\xBCs", 3us},
      {"leading dot", ".5s", 500ms},
      {"trailing dot", "1.s", 1s},
      {"many parts", "1h2m3s4ms5us6ns", 1h + 2min + 3s + 4ms + 5us + 6ns},
      {"fraction of hour", "0.5h", 30min},
      {"large", "2540400h10m10.000000000s", Duration{9145440610LL * 1000000000LL}},
      {"max int64", "9223372036854775807ns", Duration{std::numeric_limits<std::int64_t>::max()}},
      {"min int64", "-9223372036854775808ns", Duration{std::numeric_limits<std::int64_t>::min()}},
      {"overflow", "9223372036854775808ns", std::nullopt},
      {"overflow hours", "3000000h", std::nullopt},
      {"bare number", "5", std::nullopt},
      {"empty", "", std::nullopt},
      {"sign only", "-", std::nullopt},
      {"unknown unit", "5d", std::nullopt},
      {"unit only", "s", std::nullopt},
      {"dot only", ".s", std::nullopt},
      {"space", "1 m", std::nullopt},
      {"trailing garbage", "1mx", std::nullopt},
      {"upper-case unit", "1M", std::nullopt},
  };
  return cases;
}

MKA_TABLE_TEST(Duration, ParsesGoSyntax, ParsesGoSyntaxCase, parsesGoSyntaxCases()) {
  const ParsesGoSyntaxCase& c = testCase();
  EXPECT_EQ(parseDuration(c.text), c.expected);
}

struct FormatsLikeGoCase {
  std::string name;
  Duration value;
  std::string text;
};

std::vector<FormatsLikeGoCase> formatsLikeGoCases() {
  const std::vector<FormatsLikeGoCase> cases = {
      {"zero", 0ns, "0s"},
      {"minute", 60s, "1m0s"},
      {"fifteen minutes", 15min, "15m0s"},
      {"fraction", 1500ms, "1.5s"},
      {"hours", 90min, "1h30m0s"},
      {"milliseconds", 250ms, "250ms"},
      {"fractional milliseconds", 1200us, "1.2ms"},
      {"microseconds", 3us, "3\xC2\xB5s"},
      {"nanoseconds", 7ns, "7ns"},
      {"negative", -1min, "-1m0s"},
      {"negative sub-second", -5ms, "-5ms"},
      {"seconds with nanos", 2s + 1ns, "2.000000001s"},
      {"min int64", Duration{std::numeric_limits<std::int64_t>::min()}, "-2562047h47m16.854775808s"},
      {"max int64", Duration{std::numeric_limits<std::int64_t>::max()}, "2562047h47m16.854775807s"},
  };
  return cases;
}

MKA_TABLE_TEST(Duration, FormatsLikeGo, FormatsLikeGoCase, formatsLikeGoCases()) {
  const FormatsLikeGoCase& c = testCase();
  EXPECT_EQ(formatDuration(c.value), c.text);
}

TEST(Duration, FormatThenParseRoundTrips) {
  for (Duration d : {Duration{1}, Duration{999}, Duration{1001}, Duration{123456789}, Duration{3723000000001},
                     Duration{-42000000}}) {
    SCOPED_TRACE(d.count());
    EXPECT_EQ(parseDuration(formatDuration(d)), d);
  }
}

}  // namespace
}  // namespace mka
