#include "mka/common/thread_name.h"

#include <gtest/gtest.h>

#include <thread>

namespace mka {
namespace {

std::string nameOnAThreadOfItsOwn(const std::string& name) {
  std::string seen;
  std::thread([&] {
    nameThisThread(name);
    seen = thisThreadName();
  }).join();
  return seen;
}

TEST(ThreadNameTest, NamesTheCallingThreadAndCutsLongNamesTo15Bytes) {
  EXPECT_EQ(nameOnAThreadOfItsOwn("mk-workload-3"), "mk-workload-3");
  EXPECT_EQ(nameOnAThreadOfItsOwn("exactly-15-byte"), "exactly-15-byte");
  EXPECT_EQ(nameOnAThreadOfItsOwn("kueue-worker-cluster-1"), "kueue-worker-cl");
  // "é" is two bytes; cutting at 15 would split the one that straddles the limit.
  EXPECT_EQ(nameOnAThreadOfItsOwn("gc-clusteréééé"), "gc-clusteréé");
  EXPECT_EQ(nameOnAThreadOfItsOwn(""), "");
}

}  // namespace
}  // namespace mka
