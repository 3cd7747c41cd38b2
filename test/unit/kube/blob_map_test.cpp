#include "mka/kube/blob_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace mka::kube {
namespace {

using ::testing::Optional;

TEST(BlobMapTest, FindsAssignedBlobsAndReplacesThem) {
  BlobMap map;
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.find("default/a"), std::nullopt);

  map.assign("default/a", "first");
  map.assign("default/b", std::string("\0binary\xff", 8));
  EXPECT_EQ(map.size(), 2u);
  EXPECT_THAT(map.find("default/a"), Optional(std::string_view("first")));
  EXPECT_THAT(map.find("default/b"), Optional(std::string_view(std::string("\0binary\xff", 8))));
  EXPECT_TRUE(map.contains("default/b"));
  EXPECT_FALSE(map.contains("default/c"));

  map.assign("default/a", "second, and longer than the first");
  EXPECT_EQ(map.size(), 2u);
  EXPECT_THAT(map.find("default/a"), Optional(std::string_view("second, and longer than the first")));
}

TEST(BlobMapTest, EmptyKeysAndBlobsAreEntriesLikeAnyOther) {
  BlobMap map;
  map.assign("", "cluster-scoped name would never be empty, but the map does not care");
  map.assign("default/empty", "");
  EXPECT_THAT(map.find(""),
              Optional(std::string_view("cluster-scoped name would never be empty, but the map does not care")));
  EXPECT_THAT(map.find("default/empty"), Optional(std::string_view("")));
  EXPECT_EQ(map.size(), 2u);
}

TEST(BlobMapTest, EraseRemovesOnlyThatKey) {
  BlobMap map;
  map.assign("default/a", "a");
  map.assign("default/b", "b");
  EXPECT_TRUE(map.erase("default/a"));
  EXPECT_FALSE(map.erase("default/a"));
  EXPECT_EQ(map.find("default/a"), std::nullopt);
  EXPECT_THAT(map.find("default/b"), Optional(std::string_view("b")));
  map.clear();
  EXPECT_TRUE(map.empty());
}

// Sizes are stored as varints: one byte below 128, more above; each length must come back whole.
TEST(BlobMapTest, KeysAndBlobsOfEveryLengthComeBackWhole) {
  BlobMap map;
  for (const std::size_t keySize : {0, 1, 127, 128, 300, 16383, 16384}) {
    for (const std::size_t blobSize : {0, 127, 128, 16384, 70000, 2100000}) {
      const std::string key = std::to_string(blobSize) + "/" + std::string(keySize, 'k');
      const std::string blob(blobSize, static_cast<char>('a' + keySize % 26));
      map.assign(key, blob);
      EXPECT_THAT(map.find(key), Optional(std::string_view(blob))) << keySize << " " << blobSize;
    }
  }
  std::size_t visited = 0;
  map.forEach([&](std::string_view key, std::string_view blob) {
    ++visited;
    EXPECT_EQ(std::to_string(blob.size()), key.substr(0, key.find('/')));
  });
  EXPECT_EQ(visited, map.size());
}

TEST(BlobMapTest, AssignAcceptsViewsIntoItsOwnEntry) {
  BlobMap map;
  map.assign("default/a", "blob of a");
  const auto blob = *map.find("default/a");
  map.assign("default/a", blob.substr(0, 4));  // the view points into the entry being replaced
  EXPECT_THAT(map.find("default/a"), Optional(std::string_view("blob")));
}

TEST(BlobMapTest, VisitsEveryEntryOnceAndAgreesWithAStdMapUnderRandomChanges) {
  BlobMap map;
  std::map<std::string, std::string> model;
  std::mt19937 random(7);
  for (int step = 0; step < 20000; ++step) {
    const auto key = "ns/object-" + std::to_string(random() % 500);
    if (random() % 4 == 0) {
      EXPECT_EQ(map.erase(key), model.erase(key) == 1) << key;
    } else {
      const auto blob = std::string(random() % 300, static_cast<char>('a' + step % 26));
      map.assign(key, blob);
      model[key] = blob;
    }
  }
  ASSERT_EQ(map.size(), model.size());
  std::map<std::string, std::string> visited;
  map.forEach([&](std::string_view key, std::string_view blob) {
    EXPECT_TRUE(visited.emplace(key, blob).second) << "visited twice: " << key;
  });
  EXPECT_EQ(visited, model);
}

// Erasing from the middle of a probe run must not hide the keys after it: many keys, erased
// and re-added in random order, each checked against a model after every step of a round.
TEST(BlobMapTest, KeysStayFindableThroughGrowthAndErasesInAnyOrder) {
  BlobMap map;
  std::map<std::string, std::string> model;
  std::mt19937 random(11);
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i) keys.push_back("default/pipelinerun-bench-" + std::to_string(i));
  for (int round = 0; round < 3; ++round) {
    std::shuffle(keys.begin(), keys.end(), random);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if ((i + round) % 3 == 0) {
        EXPECT_EQ(map.erase(keys[i]), model.erase(keys[i]) == 1) << keys[i];
      } else {
        map.assign(keys[i], keys[i] + "/" + std::to_string(round));
        model[keys[i]] = keys[i] + "/" + std::to_string(round);
      }
    }
    ASSERT_EQ(map.size(), model.size());
    for (const auto& key : keys) {
      const auto it = model.find(key);
      if (it == model.end()) {
        EXPECT_EQ(map.find(key), std::nullopt) << key;
      } else {
        EXPECT_THAT(map.find(key), Optional(std::string_view(it->second))) << key;
      }
    }
  }
  while (!model.empty()) {
    ASSERT_TRUE(map.erase(model.begin()->first));
    model.erase(model.begin());
  }
  EXPECT_TRUE(map.empty());
  map.forEach([](std::string_view key, std::string_view) { ADD_FAILURE() << "left behind: " << key; });
}

TEST(BlobMapTest, AMovedMapKeepsItsEntriesAndLeavesAnEmptyOne) {
  BlobMap first;
  first.assign("default/a", "a");
  first.assign("default/b", "b");
  BlobMap second(std::move(first));
  EXPECT_TRUE(first.empty());  // NOLINT(bugprone-use-after-move): a moved-from map is empty
  EXPECT_EQ(first.find("default/a"), std::nullopt);
  EXPECT_THAT(second.find("default/b"), Optional(std::string_view("b")));
  BlobMap third;
  third.assign("default/c", "c");
  third = std::move(second);
  EXPECT_EQ(third.size(), 2u);
  EXPECT_EQ(third.find("default/c"), std::nullopt);
  EXPECT_THAT(third.find("default/a"), Optional(std::string_view("a")));
  first.assign("default/d", "d");  // a moved-from map is usable again
  EXPECT_THAT(first.find("default/d"), Optional(std::string_view("d")));
}

}  // namespace
}  // namespace mka::kube
