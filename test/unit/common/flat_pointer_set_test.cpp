#include "mka/common/flat_pointer_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace mka {
namespace {

struct Item {
  std::string key;
  int value = 0;
};
std::string_view keyOf(const Item* item) { return item->key; }
using Set = FlatPointerSet<Item, &keyOf>;

TEST(FlatPointerSetTest, PutFindsReplacesAndTakes) {
  Set set;
  EXPECT_EQ(set.find("a"), nullptr);
  EXPECT_EQ(set.take("a"), nullptr);
  Item a{"a", 1}, b{"b", 2}, a2{"a", 3};
  EXPECT_EQ(set.put(&a), nullptr);
  EXPECT_EQ(set.put(&b), nullptr);
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.find("a"), &a);
  EXPECT_EQ(set.put(&a2), &a);  // the replaced element goes back to its owner
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.find("a"), &a2);
  EXPECT_EQ(set.take("a"), &a2);
  EXPECT_EQ(set.take("a"), nullptr);
  EXPECT_EQ(set.find("b"), &b);
  EXPECT_EQ(set.size(), 1u);
  set.clear();
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.find("b"), nullptr);
}

// Taking from the middle of a probe run must not hide what follows it: many keys, taken and
// put back in random order, checked against a model after each round.
TEST(FlatPointerSetTest, ElementsStayFindableThroughGrowthAndTakesInAnyOrder) {
  std::vector<std::unique_ptr<Item>> items;
  for (int i = 0; i < 5000; ++i) items.push_back(std::make_unique<Item>(Item{"ns/object-" + std::to_string(i), i}));
  Set set;
  std::map<std::string, Item*> model;
  std::mt19937 random(3);
  for (int round = 0; round < 4; ++round) {
    std::shuffle(items.begin(), items.end(), random);
    for (std::size_t i = 0; i < items.size(); ++i) {
      Item* item = items[i].get();
      if ((i + static_cast<std::size_t>(round)) % 3 == 0) {
        const auto it = model.find(item->key);
        EXPECT_EQ(set.take(item->key), it == model.end() ? nullptr : it->second) << item->key;
        if (it != model.end()) model.erase(it);
      } else {
        const auto it = model.find(item->key);
        EXPECT_EQ(set.put(item), it == model.end() ? nullptr : it->second) << item->key;
        model[item->key] = item;
      }
    }
    ASSERT_EQ(set.size(), model.size());
    for (const auto& item : items) {
      const auto it = model.find(item->key);
      EXPECT_EQ(set.find(item->key), it == model.end() ? nullptr : it->second) << item->key;
    }
    std::size_t visited = 0;
    set.forEach([&](Item* element) {
      ++visited;
      EXPECT_EQ(model.at(element->key), element);
    });
    EXPECT_EQ(visited, model.size());
  }
}

TEST(FlatPointerSetTest, AMovedSetKeepsItsElementsAndLeavesAnEmptyOne) {
  Item a{"a", 1};
  Set first;
  first.put(&a);
  Set second(std::move(first));
  EXPECT_TRUE(first.empty());  // NOLINT(bugprone-use-after-move): a moved-from set is empty
  EXPECT_EQ(first.find("a"), nullptr);
  EXPECT_EQ(second.find("a"), &a);
  Set third;
  third = std::move(second);
  EXPECT_EQ(third.find("a"), &a);
  Item b{"b", 2};
  first.put(&b);  // usable again
  EXPECT_EQ(first.find("b"), &b);
}

}  // namespace
}  // namespace mka
