#include "mka/integration/key_links.h"

#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include "support/table_test.h"

namespace mka::integration {
namespace {

// The two directions of the informer indexes (WorkloadOwners, PrebuiltNames).
struct EachKeyHasOneTargetAndEachTargetItsKeysCase {
  std::string name;
  std::function<void(KeyLinks&)> steps;
  std::map<std::string, std::vector<std::string>> keysTo;  // target -> keys expected
  std::size_t links = 0, targets = 0;                      // held afterwards
};
std::vector<EachKeyHasOneTargetAndEachTargetItsKeysCase> eachKeyHasOneTargetAndEachTargetItsKeysCases() {
  return {
      {"two keys to one target, listed sorted",
       [](KeyLinks& l) {
         l.link("b", "t");
         l.link("a", "t");
       },
       {{"t", {"a", "b"}}},
       2,
       1},
      {"a new target replaces the old, which goes",
       [](KeyLinks& l) {
         l.link("a", "t");
         l.link("a", "u");
       },
       {{"t", {}}, {"u", {"a"}}},
       1,
       1},
      {"the same link twice is one link",
       [](KeyLinks& l) {
         l.link("a", "t");
         l.link("a", "t");
       },
       {{"t", {"a"}}},
       1,
       1},
      {"an empty target unlinks",
       [](KeyLinks& l) {
         l.link("a", "t");
         l.link("a", "");
       },
       {{"t", {}}, {"", {}}},
       0,
       0},
      {"unlink",
       [](KeyLinks& l) {
         l.link("a", "t");
         l.link("b", "t");
         l.unlink("a");
         l.unlink("nothing");
       },
       {{"t", {"b"}}},
       1,
       1},
      {"unlinking the first, middle and last key of a target",
       [](KeyLinks& l) {
         for (const char* key : {"a", "b", "c", "d", "e"}) l.link(key, "t");
         l.unlink("e");  // the first of the target's list: linked last
         l.unlink("c");
         l.unlink("a");
       },
       {{"t", {"b", "d"}}},
       2,
       1},
      {"a target's last key gone, nothing is kept for it",
       [](KeyLinks& l) {
         l.link("a", "t");
         l.link("b", "u");
         l.unlink("a");
         l.link("b", "");
       },
       {{"t", {}}, {"u", {}}},
       0,
       0},
      {"keys and targets are compared whole, not by a prefix",
       [](KeyLinks& l) {
         l.link("ns/job", "ns/wl");
         l.link("ns/job-2", "ns/wl-2");
       },
       {{"ns/wl", {"ns/job"}}, {"ns/wl-2", {"ns/job-2"}}, {"ns/w", {}}},
       2,
       2},
  };
}
MKA_TABLE_TEST(KeyLinksTest, EachKeyHasOneTargetAndEachTargetItsKeys, EachKeyHasOneTargetAndEachTargetItsKeysCase,
               eachKeyHasOneTargetAndEachTargetItsKeysCases()) {
  const EachKeyHasOneTargetAndEachTargetItsKeysCase& c = testCase();
  KeyLinks links;
  c.steps(links);
  for (const auto& [target, keys] : c.keysTo) EXPECT_EQ(links.keysTo(target), keys) << target;
  EXPECT_EQ(links.links(), c.links);
  EXPECT_EQ(links.targets(), c.targets);
}

// Thousands of random links, relinks and unlinks (the tables grow and take elements out by
// backward shift) against two std::maps doing the same.
TEST(KeyLinksTest, AgreesWithAMapUnderRandomChanges) {
  std::mt19937 random(20261128);
  KeyLinks links;
  std::map<std::string, std::string> targetOf;
  const auto key = [&] { return "ns/workload-" + std::to_string(random() % 3000); };
  const auto target = [&] { return "ns/job-" + std::to_string(random() % 1000); };
  for (int step = 0; step < 40000; ++step) {
    const std::string k = key();
    switch (random() % 4) {
      case 0:
      case 1: {
        const std::string t = target();
        links.link(k, t);
        targetOf[k] = t;
        break;
      }
      case 2:
        links.link(k, "");
        targetOf.erase(k);
        break;
      default: links.unlink(k); targetOf.erase(k);
    }
  }
  std::map<std::string, std::vector<std::string>> keysTo;
  for (const auto& [k, t] : targetOf) keysTo[t].push_back(k);  // std::map: keys come sorted
  for (int i = 0; i < 1000; ++i) {
    const std::string t = "ns/job-" + std::to_string(i);
    const auto it = keysTo.find(t);
    ASSERT_EQ(links.keysTo(t), it == keysTo.end() ? std::vector<std::string>{} : it->second) << t;
  }
  EXPECT_EQ(links.links(), targetOf.size());
  EXPECT_EQ(links.targets(), keysTo.size());
}

}  // namespace
}  // namespace mka::integration
