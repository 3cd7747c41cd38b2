#include "mka/common/keyed_block.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mka/common/flat_pointer_set.h"
#include "support/table_test.h"

namespace mka {
namespace {

struct Entry {
  std::uint64_t value = 7;
  std::string note = "default";  // a member with a destructor: deleteKeyedBlock must run it
  std::uint32_t keySize = 0;
};

struct ABlockHoldsItsKeyAndAValueInitializedHeaderCase {
  std::string name;
  std::string key;
};

std::vector<ABlockHoldsItsKeyAndAValueInitializedHeaderCase> aBlockHoldsItsKeyAndAValueInitializedHeaderCases() {
  const std::vector<ABlockHoldsItsKeyAndAValueInitializedHeaderCase> cases = {
      {"empty key", ""},
      {"short key", "ns/a"},
      {"key with a NUL and non-ASCII bytes", std::string("ns/\0\xff\xc3\xa9", 7)},
      {"long key", std::string(5000, 'k')},
  };
  return cases;
}

MKA_TABLE_TEST(KeyedBlockTest, ABlockHoldsItsKeyAndAValueInitializedHeader,
               ABlockHoldsItsKeyAndAValueInitializedHeaderCase, aBlockHoldsItsKeyAndAValueInitializedHeaderCases()) {
  const ABlockHoldsItsKeyAndAValueInitializedHeaderCase& c = testCase();
  Entry* entry = newKeyedBlock<Entry>(c.key, "test");
  EXPECT_EQ(keyOfBlock(entry), c.key);
  EXPECT_EQ(entry->keySize, c.key.size());
  EXPECT_EQ(entry->value, 7u);
  EXPECT_EQ(entry->note, "default");
  entry->note.assign(100, 'n');  // on the heap: a leak if the destructor did not run (ASan)
  deleteKeyedBlock(entry);
}

TEST(KeyedBlockTest, BlocksAreFoundByTheirKeysThroughAFlatPointerSet) {
  FlatPointerSet<Entry, &keyOfBlock<Entry>> set;
  for (int i = 0; i < 100; ++i) {
    Entry* entry = newKeyedBlock<Entry>("key-" + std::to_string(i), "test");
    entry->value = static_cast<std::uint64_t>(i);
    ASSERT_EQ(set.put(entry), nullptr);
  }
  for (int i = 0; i < 100; ++i) {
    const Entry* found = set.find("key-" + std::to_string(i));
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->value, static_cast<std::uint64_t>(i));
  }
  set.forEach([](Entry* entry) { deleteKeyedBlock(entry); });
}

TEST(KeyedBlockTest, AKeyOverFourGibibytesIsALengthErrorNamingTheOwner) {
  // An address range of 4 GiB + 1 bytes that costs no memory: it is never touched, since the
  // size is refused before any byte is read.
  const std::size_t size = (std::size_t{1} << 32) + 1;
  void* range = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(range, MAP_FAILED);
  try {
    newKeyedBlock<Entry>(std::string_view(static_cast<const char*>(range), size), "work queue webhooks");
    ADD_FAILURE() << "no error";
  } catch (const std::length_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "work queue webhooks: a key of 4294967297 bytes is longer than a key may be (4 GiB)");
  }
  ::munmap(range, size);
}

}  // namespace
}  // namespace mka
