#include "mka/common/bounded_read.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/table_test.h"

namespace mka {
namespace {

struct ReadsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCase {
  std::string name;
  std::size_t size;
  std::size_t limit;
  std::size_t expected;
};

std::vector<ReadsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCase>
readsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCases() {
  const std::vector<ReadsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCase> cases = {
      {"empty", 0, 10, 0},
      {"shorter than the limit", 5, 10, 5},
      {"exactly the limit", 10, 10, 10},
      {"one byte over", 11, 10, 11},
      {"far over, in several steps", 1'000'000, 200'000, 200'001},
  };
  return cases;
}

MKA_TABLE_TEST(ReadAtMost, ReadsAllOfAShortStreamAndOneBytePastTheLimitOfALongOne,
               ReadsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCase,
               readsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCases()) {
  const ReadsAllOfAShortStreamAndOneBytePastTheLimitOfALongOneCase& c = testCase();
  std::string content(c.size, 'x');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 26);
  std::istringstream in(content);
  const auto got = readAtMost(in, c.limit);
  EXPECT_EQ(got, content.substr(0, c.expected));
}

TEST(ReadAtMost, StopsOnAStreamWithoutEnd) {
  std::ifstream zero("/dev/zero", std::ios::binary);
  ASSERT_TRUE(zero);
  EXPECT_EQ(readAtMost(zero, 100'000), std::string(100'001, '\0'));
}

}  // namespace
}  // namespace mka
