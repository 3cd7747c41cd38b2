#include "mka/sandbox/object_store.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"
#include "support/table_test.h"
#include "support/thrown.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

ObjectKey cm(const std::string& ns, const std::string& name) { return {"", "configmaps", ns, name}; }
ObjectKey wl(const std::string& ns, const std::string& name) { return {"kueue.x-k8s.io", "workloads", ns, name}; }

json object(const std::string& ns, const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", std::move(labels)}}}};
}

std::string rvOf(const json& o) { return o["metadata"]["resourceVersion"].get<std::string>(); }
std::string nameOf(const json& o) { return o["metadata"]["name"].get<std::string>(); }

std::vector<std::string> names(const std::vector<json>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i["metadata"]["namespace"].get<std::string>() + "/" + nameOf(i));
  return out;
}

// Every event currently available, waiting `idle` for each.
std::vector<WatchEvent> drain(ObjectStore::Watch& w, std::chrono::milliseconds idle = 50ms) {
  std::vector<WatchEvent> out;
  while (auto e = w.next(idle)) out.push_back(std::move(*e));
  return out;
}

std::vector<std::string> summary(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    out.push_back(std::string(toString(e.type)) + " " + nameOf(*e.object) + "@" + std::to_string(e.resourceVersion));
  }
  return out;
}

bool hasLabel(const json& o, const std::string& key, const std::string& value) {
  const auto& labels = o["metadata"].value("labels", json::object());
  return labels.value(key, "") == value;
}

TEST(ObjectStoreTest, WritesAssignClusterWideRevisions) {
  ObjectStore store;
  EXPECT_EQ(store.resourceVersion(), 0u);
  EXPECT_EQ(rvOf(*store.create(cm("a", "x"), object("a", "x"))), "1");
  EXPECT_EQ(rvOf(*store.create(wl("a", "w"), object("a", "w"))), "2");  // one counter for every kind
  EXPECT_EQ(rvOf(*store.update(cm("a", "x"), object("a", "x"))), "3");
  EXPECT_EQ(rvOf(*store.get(cm("a", "x"))), "3");
  const auto removed = *store.remove(cm("a", "x"));
  EXPECT_EQ(rvOf(removed), "4");  // the deletion's revision, as etcd reports it
  EXPECT_FALSE(store.get(cm("a", "x")).has_value());
  EXPECT_EQ(store.resourceVersion(), 4u);
}

// getShared hands out the stored object itself; a later write stores a new one, so what was
// handed out never changes under its reader.
TEST(ObjectStoreTest, SharedReadsSeeOneRevisionAndNeverChange) {
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x"));
  const auto first = store.getShared(cm("a", "x"));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first, store.getShared(cm("a", "x"))) << "two reads of one revision share the object";
  store.update(cm("a", "x"), object("a", "x"));
  const auto second = store.getShared(cm("a", "x"));
  EXPECT_NE(second, first);
  EXPECT_EQ(rvOf(*first), "1");
  EXPECT_EQ(rvOf(*second), "2");
  store.remove(cm("a", "x"));
  EXPECT_EQ(store.getShared(cm("a", "x")), nullptr);
}

struct StoreErrorCase {
  std::string name;
  std::function<void(ObjectStore&)> call;
  int code;
  std::string reason;
  std::string message;
};

std::vector<StoreErrorCase> storeErrorCases() {
  return {
      {"create twice", [](ObjectStore& store) { store.create(cm("a", "x"), object("a", "x")); }, 409, "AlreadyExists",
       "configmaps \"x\" already exists"},
      {"update missing", [](ObjectStore& store) { store.update(wl("a", "nope"), object("a", "nope")); }, 404,
       "NotFound", "workloads.kueue.x-k8s.io \"nope\" not found"},
      {"update stale", [](ObjectStore& store) { store.update(cm("a", "x"), object("a", "x"), 7); }, 409, "Conflict",
       "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes "
       "to the latest version and try again"},
      {"remove missing", [](ObjectStore& store) { store.remove(cm("a", "nope")); }, 404, "NotFound",
       "configmaps \"nope\" not found"},
      {"remove stale", [](ObjectStore& store) { store.remove(cm("a", "x"), 9); }, 409, "Conflict",
       "Operation cannot be fulfilled on configmaps \"x\": Precondition failed: ResourceVersion in precondition: 9, "
       "ResourceVersion in object meta: 1"},
  };
}

MKA_TABLE_TEST(ObjectStoreTest, ErrorsAreKubeApiserversOwn, StoreErrorCase, storeErrorCases()) {
  const StoreErrorCase& c = testCase();
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x"));
  store.create(wl("a", "w"), object("a", "w"));
  const auto e = mka::test::thrownBy<ApiError>([&] { c.call(store); });
  EXPECT_EQ(e.code(), c.code);
  EXPECT_EQ(e.reason(), c.reason);
  EXPECT_EQ(std::string(e.what()), c.message);
}

TEST(ObjectStoreTest, AMatchingPreconditionUpdates) {
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x"));
  store.create(wl("a", "w"), object("a", "w"));
  EXPECT_EQ(rvOf(*store.update(cm("a", "x"), object("a", "x"), 1)), "3");  // matching precondition
}

struct StoreListCase {
  std::string name;
  std::string ns;
  ObjectStore::Filter filter;
  std::vector<std::string> want;
};

std::vector<StoreListCase> storeListCases() {
  return {
      {"every namespace", "", nullptr, {"/cluster-scoped", "a/x", "a/z", "b/y"}},
      {"one namespace", "a", nullptr, {"a/x", "a/z"}},
      {"filtered", "", [](const json& o) { return hasLabel(o, "app", "web"); }, {"a/x", "b/y"}},
  };
}

MKA_TABLE_TEST(ObjectStoreTest, ListsByNamespaceThenNameWithFilter, StoreListCase, storeListCases()) {
  const StoreListCase& c = testCase();
  ObjectStore store;
  store.create(cm("b", "y"), object("b", "y", {{"app", "web"}}));
  store.create(cm("a", "z"), object("a", "z"));
  store.create(cm("a", "x"), object("a", "x", {{"app", "web"}}));
  store.create(wl("a", "other-kind"), object("a", "other-kind"));
  store.create({"", "configmaps", "", "cluster-scoped"}, object("", "cluster-scoped"));
  const auto result = store.list("", "configmaps", c.ns, c.filter);
  EXPECT_EQ(names(result.items), c.want);
  EXPECT_EQ(result.resourceVersion, 5u);
  EXPECT_TRUE(result.continueToken.empty());
  EXPECT_EQ(result.remainingItemCount, -1);
}

TEST(ObjectStoreTest, PaginationShowsTheFirstPagesSnapshotDespiteConcurrentWrites) {
  ObjectStore store;
  for (const auto* n : {"a", "c", "e", "g", "i"}) *store.create(cm("ns", n), object("ns", n));
  auto page1 = store.list("", "configmaps", "ns", nullptr, 2);
  EXPECT_EQ(names(page1.items), (std::vector<std::string>{"ns/a", "ns/c"}));
  EXPECT_EQ(page1.resourceVersion, 5u);
  EXPECT_EQ(page1.remainingItemCount, 3);
  ASSERT_FALSE(page1.continueToken.empty());

  // Writes between pages: a new object in a later page, a deletion and an update of later items.
  store.create(cm("ns", "f"), object("ns", "f"));
  store.remove(cm("ns", "g"));
  store.update(cm("ns", "e"), object("ns", "e", {{"changed", "yes"}}));

  auto page2 = store.list("", "configmaps", "ns", nullptr, 2, page1.continueToken);
  EXPECT_EQ(names(page2.items), (std::vector<std::string>{"ns/e", "ns/g"}));
  EXPECT_EQ(page2.resourceVersion, 5u);
  EXPECT_EQ(rvOf(page2.items[0]), "3");  // e as it was at revision 5
  EXPECT_FALSE(page2.items[0]["metadata"]["labels"].contains("changed"));
  EXPECT_EQ(page2.remainingItemCount, 1);

  auto page3 = store.list("", "configmaps", "ns", nullptr, 2, page2.continueToken);
  EXPECT_EQ(names(page3.items), (std::vector<std::string>{"ns/i"}));
  EXPECT_TRUE(page3.continueToken.empty());
  EXPECT_EQ(page3.remainingItemCount, -1);

  // A fresh list sees the writes.
  EXPECT_EQ(names(store.list("", "configmaps", "ns", nullptr).items),
            (std::vector<std::string>{"ns/a", "ns/c", "ns/e", "ns/f", "ns/i"}));
}

TEST(ObjectStoreTest, PaginationWithAFilterFillsPagesAndLeavesRemainingUnset) {
  ObjectStore store;
  for (int i = 0; i < 10; ++i) {
    const auto n = "o" + std::to_string(i);
    store.create(cm("ns", n), object("ns", n, {{"even", i % 2 == 0 ? "yes" : "no"}}));
  }
  const ObjectStore::Filter even = [](const json& o) { return hasLabel(o, "even", "yes"); };
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = store.list("", "configmaps", "ns", even, 2, token);
    EXPECT_EQ(page.remainingItemCount, -1);
    for (auto& n : names(page.items)) seen.push_back(n);
    token = page.continueToken;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(seen, (std::vector<std::string>{"ns/o0", "ns/o2", "ns/o4", "ns/o6", "ns/o8"}));
  EXPECT_EQ(pages, 3);
}

TEST(ObjectStoreTest, ContinueTokenOlderThanHistoryIsExpired) {
  ObjectStore store;
  for (const auto* n : {"a", "b", "c"}) *store.create(cm("ns", n), object("ns", n));
  auto page1 = store.list("", "configmaps", "ns", nullptr, 1);
  store.create(cm("ns", "d"), object("ns", "d"));
  store.compact();
  const auto e =
      mka::test::thrownBy<ApiError>([&] { store.list("", "configmaps", "ns", nullptr, 1, page1.continueToken); });
  EXPECT_EQ(e.code(), 410);
  EXPECT_EQ(e.reason(), "Expired");
  EXPECT_TRUE(std::string(e.what()).starts_with(
      "The provided continue parameter is too old to display a consistent list result. You can start a new list "
      "without the continue parameter"));
  // The Status carries a token that continues at the latest revision (an inconsistent list).
  const auto latest = e.metadata().value("continue", "");
  ASSERT_FALSE(latest.empty());
  auto rest = store.list("", "configmaps", "ns", nullptr, 0, latest);
  EXPECT_EQ(names(rest.items), (std::vector<std::string>{"ns/b", "ns/c", "ns/d"}));
  EXPECT_EQ(rest.resourceVersion, 4u);
}

struct ContinueTokenCase {
  std::string name;
  std::string token;
};

std::vector<ContinueTokenCase> malformedContinueTokens() {
  return {{"illegal base64", "%%%"}, {"not a JSON object", "bm90LWpzb24"}, {"an unknown key version", "eyJ2IjoieCJ9"}};
}

MKA_TABLE_TEST(ObjectStoreTest, MalformedContinueTokenIsBadRequest, ContinueTokenCase, malformedContinueTokens()) {
  const std::string token = testCase().token;
  ObjectStore store;
  const auto e = mka::test::thrownBy<ApiError>([&] { store.list("", "configmaps", "", nullptr, 1, token); });
  EXPECT_EQ(e.code(), 400);
  EXPECT_TRUE(std::string(e.what()).starts_with("invalid continue token: ")) << e.what();
}

TEST(ObjectStoreTest, WatchDeliversEventsInOrderForItsScope) {
  ObjectStore store;
  store.create(cm("a", "before"), object("a", "before"));
  auto all = store.watch("", "configmaps", "", 0, nullptr);
  auto onlyA = store.watch("", "configmaps", "a", 0, nullptr);
  store.create(cm("a", "x"), object("a", "x"));
  store.create(cm("b", "y"), object("b", "y"));
  store.create(wl("a", "w"), object("a", "w"));  // another resource: never seen
  store.update(cm("a", "x"), object("a", "x", {{"v", "2"}}));
  store.remove(cm("b", "y"));
  EXPECT_EQ(summary(drain(*all)), (std::vector<std::string>{"ADDED x@2", "ADDED y@3", "MODIFIED x@5", "DELETED y@6"}));
  EXPECT_EQ(summary(drain(*onlyA)), (std::vector<std::string>{"ADDED x@2", "MODIFIED x@5"}));
}

TEST(ObjectStoreTest, WatchResumesWithExactlyTheMissedEvents) {
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x"));                // 1
  const auto seen = store.resourceVersion();                   // a client saw up to here, then lost its connection
  store.update(cm("a", "x"), object("a", "x", {{"v", "2"}}));  // 2
  store.create(cm("a", "y"), object("a", "y"));                // 3
  store.remove(cm("a", "x"));                                  // 4
  auto w = store.watch("", "configmaps", "a", seen, nullptr);
  EXPECT_EQ(summary(drain(*w)), (std::vector<std::string>{"MODIFIED x@2", "ADDED y@3", "DELETED x@4"}));
  store.create(cm("a", "z"), object("a", "z"));  // and then it goes on live
  EXPECT_EQ(summary(drain(*w)), (std::vector<std::string>{"ADDED z@5"}));
}

struct ForgottenHistoryCase {
  std::string name;
  std::function<void(ObjectStore&)> forget;
  std::uint64_t from;
  std::string message;
};

std::vector<ForgottenHistoryCase> forgottenHistoryCases() {
  return {
      {"trimmed by the history limit", [](ObjectStore&) {}, 1, "too old resource version: 1 (2)"},
      {"compacted", [](ObjectStore& s) { s.compact(); }, 3, "too old resource version: 3 (5)"},
  };
}

MKA_TABLE_TEST(ObjectStoreTest, WatchFromBeforeTheHistoryIsGone, ForgottenHistoryCase, forgottenHistoryCases()) {
  const ForgottenHistoryCase& c = testCase();
  ObjectStore store(3);
  for (int i = 0; i < 5; ++i) *store.create(cm("a", "o" + std::to_string(i)), object("a", "o" + std::to_string(i)));
  c.forget(store);
  const auto e = mka::test::thrownBy<ApiError>([&] { store.watch("", "configmaps", "", c.from, nullptr); });
  EXPECT_EQ(e.code(), 410);
  EXPECT_EQ(e.reason(), "Expired");
  EXPECT_EQ(std::string(e.what()), c.message);
}

TEST(ObjectStoreTest, WatchFromTheOldestKeptRevisionIsNotGone) {
  ObjectStore store(3);
  for (int i = 0; i < 5; ++i) *store.create(cm("a", "o" + std::to_string(i)), object("a", "o" + std::to_string(i)));
  EXPECT_EQ(store.compactedResourceVersion(), 2u);
  EXPECT_NO_THROW(store.watch("", "configmaps", "", 2, nullptr));  // events 3..5 are all kept
}

TEST(ObjectStoreTest, AWatcherLeftBehindByTrimmingGetsAnErrorAndCloses) {
  ObjectStore store(2);
  auto w = store.watch("", "configmaps", "", 0, nullptr);
  for (int i = 0; i < 5; ++i) *store.create(cm("a", "o" + std::to_string(i)), object("a", "o" + std::to_string(i)));
  auto e = w->next(100ms);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, EventType::Error);
  EXPECT_EQ(e->object->at("code"), 410);
  EXPECT_EQ(e->object->at("reason"), "Expired");
  EXPECT_EQ(e->object->at("message"), "too old resource version: 0 (3)");
  EXPECT_TRUE(w->closed());
  EXPECT_FALSE(w->next(10ms).has_value());
}

TEST(ObjectStoreTest, FilteredWatchTurnsMatchChangesIntoAddedAndDeleted) {
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x", {{"app", "web"}}));  // 1
  auto w = store.watch("", "configmaps", "", 0, [](const json& o) { return hasLabel(o, "app", "web"); });
  store.update(cm("a", "x"), object("a", "x", {{"app", "web"}, {"v", "2"}}));  // 2: still matches
  store.update(cm("a", "x"), object("a", "x", {{"app", "db"}}));               // 3: stops matching
  store.update(cm("a", "x"), object("a", "x", {{"app", "db"}, {"v", "4"}}));   // 4: never matched
  store.update(cm("a", "x"), object("a", "x", {{"app", "web"}}));              // 5: matches again
  store.create(cm("a", "y"), object("a", "y"));                                // 6: never matches
  store.remove(cm("a", "x"));                                                  // 7
  const auto events = drain(*w);
  EXPECT_EQ(summary(events), (std::vector<std::string>{"MODIFIED x@2", "DELETED x@3", "ADDED x@5", "DELETED x@7"}));
  // The DELETED for "stopped matching" carries the object as the watcher last saw it, at the
  // event's revision, as kube-apiserver's watch cache sends it.
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].object->at("metadata").at("labels").at("app"), "web");
  EXPECT_EQ(rvOf(*events[1].object), "3");
}

TEST(ObjectStoreTest, WatchersShareTheStoredObjectInsteadOfCopyingIt) {
  ObjectStore store;
  auto first = store.watch("", "configmaps", "", 0, nullptr);
  auto second = store.watch("", "configmaps", "a", 0, nullptr);
  store.create(cm("a", "x"), object("a", "x"));
  auto a = first->next(0ms);
  auto b = second->next(0ms);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->object.get(), b->object.get());  // one object, two readers
  EXPECT_EQ(nameOf(*a->object), "x");
}

// Each resource has its own wake-up channel: a watch waiting on configmaps is not woken by
// workload writes, but must still get the configmap event that follows them, promptly and once.
TEST(ObjectStoreTest, AWaitingWatchGetsItsEventAfterWritesToOtherResources) {
  ObjectStore store;
  auto configmaps = store.watch("", "configmaps", "", 0, nullptr);
  std::optional<WatchEvent> got;
  std::thread waiter([&] { got = configmaps->next(10s); });
  for (int i = 0; i < 20; ++i) *store.create(wl("a", "w" + std::to_string(i)), object("a", "w" + std::to_string(i)));
  store.create(cm("a", "x"), object("a", "x"));  // revision 21
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->type, EventType::Added);
  EXPECT_EQ(got->resourceVersion, 21u);
  EXPECT_FALSE(configmaps->next(20ms).has_value());
}

TEST(ObjectStoreTest, CloseAllWatchesEndsEveryWatch) {
  ObjectStore store;
  auto a = store.watch("", "configmaps", "", 0, nullptr);
  auto b = store.watch("kueue.x-k8s.io", "workloads", "ns", 0, nullptr);
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    EXPECT_FALSE(b->next(10s).has_value());  // woken by the close, well before the timeout
    returned = true;
  });
  std::this_thread::sleep_for(20ms);
  store.closeAllWatches();
  waiter.join();
  EXPECT_TRUE(returned);
  EXPECT_TRUE(a->closed());
  EXPECT_TRUE(b->closed());
  store.create(cm("a", "x"), object("a", "x"));
  EXPECT_FALSE(a->next(10ms).has_value());
  auto c = store.watch("", "configmaps", "", 0, nullptr);  // new watches are not affected
  EXPECT_FALSE(c->closed());
  c->close();
  EXPECT_TRUE(c->closed());
}

TEST(ObjectStoreTest, IdleWatchSendsBookmarksWhenAsked) {
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x"));
  ObjectStore::WatchOptions options;
  options.bookmarkInterval = 30ms;
  auto w = store.watch("", "configmaps", "", 0, nullptr, options);
  store.create(wl("a", "w"), object("a", "w"));  // revision 2, outside the watch
  auto e = w->next(1s);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, EventType::Bookmark);
  EXPECT_EQ(e->resourceVersion, 2u);
  EXPECT_EQ(*e->object, (json{{"metadata", {{"resourceVersion", "2"}}}}));
  auto plain = store.watch("", "configmaps", "", 0, nullptr);
  EXPECT_FALSE(plain->next(60ms).has_value());  // no bookmarks unless asked
}

TEST(ObjectStoreTest, MutateIsAnAtomicReadModifyWrite) {
  ObjectStore store;
  auto created = store.mutate(cm("a", "x"), [](const std::optional<json>& current) {
    EXPECT_FALSE(current.has_value());
    return std::optional<json>(object("a", "x"));
  });
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(rvOf(*created), "1");

  auto changed = store.mutate(cm("a", "x"), [](const std::optional<json>& current) {
    auto next = *current;
    next["data"] = {{"k", "v"}};
    return std::optional<json>(next);
  });
  EXPECT_EQ(rvOf(*changed), "2");

  auto same = store.mutate(cm("a", "x"), [](const std::optional<json>& current) { return current; });
  EXPECT_EQ(rvOf(*same), "2");  // unchanged: no write
  EXPECT_EQ(store.resourceVersion(), 2u);

  EXPECT_THROW(
      store.mutate(cm("a", "x"),
                   [](const std::optional<json>&) -> std::optional<json> { throw ApiError::badRequest("no"); }),
      ApiError);
  EXPECT_EQ(store.resourceVersion(), 2u);

  auto gone = store.mutate(cm("a", "x"), [](const std::optional<json>&) { return std::optional<json>(); });
  EXPECT_FALSE(gone.has_value());
  EXPECT_FALSE(store.get(cm("a", "x")).has_value());
  EXPECT_EQ(store.resourceVersion(), 3u);
  EXPECT_FALSE(store.mutate(cm("a", "x"), [](const std::optional<json>&) { return std::optional<json>(); }));
  EXPECT_EQ(store.resourceVersion(), 3u);
}

TEST(ObjectStoreTest, SnapshotHasEveryObject) {
  ObjectStore store;
  store.create(cm("a", "x"), object("a", "x"));
  store.create(wl("b", "w"), object("b", "w"));
  const auto all = store.snapshot();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].first, cm("a", "x"));
  EXPECT_EQ(all[1].first, wl("b", "w"));
}

// The garbage collector's index follows every write: creates, reference changes through
// update and mutate, and deletes.
TEST(ObjectStoreTest, DependentsOfFollowOwnerReferencesThroughEveryWrite) {
  ObjectStore store;
  auto owned = [](const std::string& name, std::vector<std::string> owners) {
    auto o = object("a", name);
    for (const auto& uid : owners) o["metadata"]["ownerReferences"].push_back({{"uid", uid}, {"kind", "Job"}});
    return o;
  };
  auto keys = [&](const std::string& uid) {
    std::vector<std::string> out;
    for (const auto& [key, o] : store.dependentsOf(uid)) out.push_back(key.name + "@" + rvOf(o));
    return out;
  };
  store.create(cm("a", "one"), owned("one", {"u1"}));
  store.create(cm("a", "two"), owned("two", {"u1", "u2"}));
  store.create(cm("a", "free"), object("a", "free"));
  EXPECT_EQ(keys("u1"), (std::vector<std::string>{"one@1", "two@2"}));
  EXPECT_EQ(keys("u2"), (std::vector<std::string>{"two@2"}));
  EXPECT_TRUE(keys("nobody").empty());

  store.update(cm("a", "two"), owned("two", {"u2"}));  // drops u1
  EXPECT_EQ(keys("u1"), (std::vector<std::string>{"one@1"}));
  EXPECT_EQ(keys("u2"), (std::vector<std::string>{"two@4"}));
  store.mutate(cm("a", "free"), [&](const std::optional<json>&) { return std::optional<json>(owned("free", {"u1"})); });
  EXPECT_EQ(keys("u1"), (std::vector<std::string>{"free@5", "one@1"}));
  store.remove(cm("a", "one"));
  store.mutate(cm("a", "free"), [](const std::optional<json>&) { return std::optional<json>(); });
  EXPECT_TRUE(keys("u1").empty());
  EXPECT_EQ(keys("u2"), (std::vector<std::string>{"two@4"}));
}

// Several writers and several watchers at once: each watcher sees every event of its scope
// exactly once, in revision order. Run under TSan in CI.
TEST(ObjectStoreTest, ConcurrentWritersAndWatchersSeeEveryEventInOrder) {
  constexpr int kWriters = 4;
  constexpr int kObjectsPerWriter = 150;  // each: create, 2 updates, delete
  constexpr int kEvents = kWriters * kObjectsPerWriter * 4;
  ObjectStore store(kEvents + 10);

  struct Seen {
    std::vector<std::uint64_t> revisions;
    int evenLabelled = 0;
  };
  constexpr int kWatchers = 3;
  std::vector<std::unique_ptr<ObjectStore::Watch>> watches;
  for (int i = 0; i < kWatchers; ++i) watches.push_back(store.watch("", "configmaps", "", 0, nullptr));
  auto filtered = store.watch("", "configmaps", "", 0, [](const json& o) { return hasLabel(o, "parity", "even"); });

  std::vector<Seen> seen(kWatchers + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWatchers; ++i) {
    threads.emplace_back([&, i] {
      while (static_cast<int>(seen[i].revisions.size()) < kEvents) {
        auto e = watches[i]->next(5s);
        if (!e) break;
        seen[i].revisions.push_back(e->resourceVersion);
      }
    });
  }
  threads.emplace_back([&] {
    // Even objects: ADDED, MODIFIED, MODIFIED, DELETED; all four pass the filter.
    while (static_cast<int>(seen[kWatchers].revisions.size()) < kEvents / 2) {
      auto e = filtered->next(5s);
      if (!e) break;
      seen[kWatchers].revisions.push_back(e->resourceVersion);
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kObjectsPerWriter; ++i) {
        const auto name = "w" + std::to_string(w) + "-" + std::to_string(i);
        const json labels = {{"parity", i % 2 == 0 ? "even" : "odd"}};
        store.create(cm("ns", name), object("ns", name, labels));
        store.update(cm("ns", name), object("ns", name, labels));
        store.mutate(cm("ns", name), [&](const std::optional<json>& current) {
          auto next = *current;
          next["data"] = {{"i", i}};
          return std::optional<json>(next);
        });
        store.remove(cm("ns", name));
      }
    });
  }
  for (auto& t : writers) t.join();
  for (auto& t : threads) t.join();

  for (int i = 0; i <= kWatchers; ++i) {
    SCOPED_TRACE("watcher " + std::to_string(i));
    const auto& revs = seen[i].revisions;
    EXPECT_EQ(static_cast<int>(revs.size()), i < kWatchers ? kEvents : kEvents / 2);
    EXPECT_TRUE(std::is_sorted(revs.begin(), revs.end()));
    EXPECT_EQ(std::adjacent_find(revs.begin(), revs.end()), revs.end());  // no duplicates
  }
  EXPECT_EQ(store.resourceVersion(), static_cast<std::uint64_t>(kEvents));
}

}  // namespace
}  // namespace mka::sandbox
