#include "mka/kube/blob_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

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
  EXPECT_THAT(map.find(""), Optional(std::string_view("cluster-scoped name would never be empty, but the map does not care")));
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

}  // namespace
}  // namespace mka::kube
