#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/garbage_collector.h"
#include "support/eventually.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

class GarbageCollectorTest : public ::testing::Test {
 protected:
  GarbageCollectorTest() : api("test", registry, store, clock), gc(api) {
    api.setGarbageCollector(&gc);
    gc.start();
    api.create(nsRef(), json{{"metadata", {{"name", "default"}}}});
  }

  static ResourceRef nsRef(const std::string& name = "") { return {"", "v1", "namespaces", "", name, ""}; }
  static ResourceRef cmRef(const std::string& name = "", const std::string& ns = "default") {
    return {"", "v1", "configmaps", ns, name, ""};
  }
  json configMap(const std::string& name, const std::vector<json>& owners = {}) {
    json o = {{"metadata", {{"name", name}}}};
    for (const auto& owner : owners)
      o["metadata"]["ownerReferences"].push_back({{"apiVersion", "v1"},
                                                  {"kind", "ConfigMap"},
                                                  {"name", owner["metadata"]["name"]},
                                                  {"uid", owner["metadata"]["uid"]}});
    return *api.create(cmRef(), o);
  }
  bool exists(const std::string& name, const std::string& ns = "default") {
    return store.get({"", "configmaps", ns, name}).has_value();
  }
  bool settled() {
    return mka::test::eventually([&] { return gc.idle(); });
  }

  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
  GarbageCollector gc;
};

TEST_F(GarbageCollectorTest, BackgroundDeletionRemovesDependentsInCascade) {
  auto owner = configMap("owner");
  auto child = configMap("child", {owner});
  configMap("grandchild", {child});
  configMap("unrelated");
  api.remove(cmRef("owner"));
  ASSERT_TRUE(mka::test::eventually([&] { return !exists("child") && !exists("grandchild"); }));
  ASSERT_TRUE(settled());
  EXPECT_TRUE(exists("unrelated"));
}

TEST_F(GarbageCollectorTest, ADependentWithAnotherOwnerOnlyLosesTheReference) {
  auto a = configMap("a");
  auto b = configMap("b");
  configMap("shared", {a, b});
  api.remove(cmRef("a"));
  ASSERT_TRUE(mka::test::eventually([&] {
    auto shared = store.get({"", "configmaps", "default", "shared"});
    return shared && (*shared)["metadata"]["ownerReferences"].size() == 1;
  }));
  EXPECT_EQ(store.get({"", "configmaps", "default", "shared"}).value()["metadata"]["ownerReferences"][0]["name"], "b");
}

TEST_F(GarbageCollectorTest, OrphanKeepsDependentsAndStripsTheReference) {
  auto owner = configMap("owner");
  configMap("child", {owner});
  DeleteOptions orphan;
  orphan.propagationPolicy = "Orphan";
  api.remove(cmRef("owner"), orphan);
  ASSERT_TRUE(mka::test::eventually([&] { return !exists("owner"); }));
  ASSERT_TRUE(settled());
  ASSERT_TRUE(exists("child"));
  EXPECT_FALSE(store.get({"", "configmaps", "default", "child"}).value()["metadata"].contains("ownerReferences"));
}

TEST_F(GarbageCollectorTest, ForegroundDeletionWaitsForDependents) {
  auto owner = configMap("owner");
  auto child = configMap("child", {owner});
  // The child is held by a finalizer, so the owner must wait with foregroundDeletion.
  api.patch(cmRef("child"), "application/merge-patch+json", R"({"metadata":{"finalizers":["example.com/hold"]}})");
  DeleteOptions foreground;
  foreground.propagationPolicy = "Foreground";
  auto deleting = *api.remove(cmRef("owner"), foreground);
  EXPECT_EQ(deleting["metadata"]["finalizers"], json({"foregroundDeletion"}));
  ASSERT_TRUE(mka::test::eventually([&] {
    auto c = store.get({"", "configmaps", "default", "child"});
    return c && (*c)["metadata"].contains("deletionTimestamp");
  }));
  EXPECT_TRUE(exists("owner")) << "the owner stays while a dependent exists";

  api.patch(cmRef("child"), "application/merge-patch+json", R"({"metadata":{"finalizers":null}})");
  ASSERT_TRUE(mka::test::eventually([&] { return !exists("owner") && !exists("child"); }));
}

TEST_F(GarbageCollectorTest, DisabledLeavesDependents) {
  gc.setEnabled(false);
  auto owner = configMap("owner");
  configMap("child", {owner});
  api.remove(cmRef("owner"));
  ASSERT_TRUE(settled());
  EXPECT_TRUE(exists("child"));
  EXPECT_FALSE(exists("owner"));
}

TEST_F(GarbageCollectorTest, DeletedNamespaceEmptiesThenGoes) {
  api.create(nsRef(), json{{"metadata", {{"name", "team"}}}});
  api.create(cmRef("", "team"), json{{"metadata", {{"name", "a"}, {"finalizers", {"example.com/hold"}}}}});
  api.create(cmRef("", "team"), json{{"metadata", {{"name", "b"}}}});
  auto terminating = *api.remove(nsRef("team"));
  EXPECT_EQ(terminating["status"]["phase"], "Terminating");
  auto e = [&] {
    try {
      api.create(cmRef("", "team"), json{{"metadata", {{"name", "c"}}}});
    } catch (const ApiError& err) {
      return err.code();
    }
    return 0;
  }();
  EXPECT_EQ(e, 403) << "no new content in a terminating namespace";
  ASSERT_TRUE(mka::test::eventually([&] { return !exists("b", "team"); }));
  EXPECT_TRUE(store.get({"", "namespaces", "", "team"})) << "held by the finalizer of a";

  api.patch(cmRef("a", "team"), "application/merge-patch+json", R"({"metadata":{"finalizers":null}})");
  ASSERT_TRUE(mka::test::eventually([&] { return !store.get({"", "namespaces", "", "team"}); }));
}

}  // namespace
}  // namespace mka::sandbox
