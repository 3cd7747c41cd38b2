#pragma once
// The storage of one emulated cluster: objects by key, one cluster-wide resourceVersion counter
// (as etcd's revision), a bounded event history so watches can resume from a resourceVersion,
// and watch subscriptions. It stores what it is given: the API semantics (uids, generation,
// status subresource, finalizers, admission) live in the layer above.
//
// Threads: one mutex guards everything; any thread may call any method. A Watch is consumed by
// one thread (the HTTP connection streaming it).

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::sandbox {

struct ObjectKey {
  std::string group;
  std::string plural;
  std::string namespace_;  // "" for cluster-scoped
  std::string name;
  auto operator<=>(const ObjectKey&) const = default;
};

enum class EventType { Added, Modified, Deleted, Bookmark, Error };
const char* toString(EventType type);  // "ADDED", "MODIFIED", ...

// A stored object: shared with the store, its history and every watcher, and never changed
// after the write. A reader that needs to change it copies it first.
using StoredObject = std::shared_ptr<const nlohmann::json>;

struct WatchEvent {
  EventType type;
  std::uint64_t resourceVersion;
  // The object (for Error: a metav1.Status). Shared with the store and every other watcher and
  // never changed after the write: a watcher that needs to change it copies it first. Sharing
  // saves a deep copy per event per watcher, which would be a large share of the sandbox's CPU.
  StoredObject object;
};

class ObjectStore {
 public:
  using Filter = std::function<bool(const nlohmann::json&)>;

  explicit ObjectStore(std::size_t historyLimit = 10'000);
  ~ObjectStore();

  std::optional<nlohmann::json> get(const ObjectKey& key) const;
  // The stored object itself, without a copy (null when absent). It never changes: a write
  // stores a new object.
  StoredObject getShared(const ObjectKey& key) const;

  struct ListResult {
    std::vector<nlohmann::json> items;
    std::uint64_t resourceVersion = 0;  // the store's revision at the time of the list
    std::string continueToken;          // non-empty when `limit` cut the list
    std::int64_t remainingItemCount = -1;
  };
  // `namespace_` "" lists every namespace. Items are ordered by namespace then name. A
  // continue token encodes where to resume; a token older than the history answers ApiError 410.
  // Every page of a paginated list shows the store as it was at the first page's revision (as
  // etcd does), rebuilt from the event history: objects created, changed or deleted after it
  // do not show. When that revision has left the history, the 410 carries a token to continue
  // at the latest revision in its metadata.continue, as kube-apiserver does.
  // remainingItemCount is set only when `limit` cut the list and there is no filter (an empty
  // Filter), as kube-apiserver leaves it unset for selector lists.
  // `exactRevision` (without a continue token) lists the store as it was at that revision:
  // 410 Expired when that revision is older than the events kept, 504 when it is ahead of the
  // store.
  // `filter` runs under the store's lock: keep it cheap and never call the store from it.
  ListResult list(const std::string& group, const std::string& plural, const std::string& namespace_,
                  const Filter& filter, std::size_t limit = 0, const std::string& continueToken = "",
                  std::optional<std::uint64_t> exactRevision = std::nullopt) const;

  // Each write assigns the next revision, writes it into metadata.resourceVersion, records the
  // event and wakes watchers. Returns the stored object (for remove: its last state, at the
  // deletion's revision), shared rather than copied. Throws ApiError: create -> 409
  // AlreadyExists; update/remove -> 404 NotFound, or 409 Conflict when `expectedResourceVersion`
  // is set and differs from the stored one.
  StoredObject create(const ObjectKey& key, nlohmann::json object);
  StoredObject update(const ObjectKey& key, nlohmann::json object,
                      std::optional<std::uint64_t> expectedResourceVersion = std::nullopt);
  StoredObject remove(const ObjectKey& key, std::optional<std::uint64_t> expectedResourceVersion = std::nullopt);

  // Read-modify-write under the store's lock: `mutate` receives the current object (nullopt
  // when absent) and returns the new one, or nullopt to delete it (no-op when it returns the
  // object unchanged). Lets the API layer apply patches atomically. Returns what is stored
  // afterwards (nullopt when absent). `mutate` may throw (ApiError) to abort without a write;
  // it must not call the store.
  using Mutation = std::function<std::optional<nlohmann::json>(const std::optional<nlohmann::json>& current)>;
  std::optional<nlohmann::json> mutate(const ObjectKey& key, const Mutation& mutate);

  class Watch {
   public:
    virtual ~Watch() = default;
    // The next event, or nullopt on timeout or when the watch was closed.
    virtual std::optional<WatchEvent> next(std::chrono::milliseconds timeout) = 0;
    virtual bool closed() const = 0;
    virtual void close() = 0;
  };
  // Events after `fromResourceVersion` (0: from now on). Throws ApiError 410 Gone when that
  // revision is older than the history kept. `namespace_` "" watches every namespace.
  //
  // What a Watch delivers: every event after the start revision for that group/plural
  // (/namespace), in revision order, exactly once, as seen through `filter` the way
  // kube-apiserver's watch cache serves a selector watch: a MODIFIED event whose object stops
  // matching arrives as DELETED (carrying the previous object at the event's revision), one
  // whose object starts matching as ADDED. A watcher that falls so far behind that the history
  // it still needs has been trimmed gets one Error event (a 410 Expired Status) and is closed,
  // as a client must then relist. The filter runs on the watcher's thread, outside the store's
  // lock, so a slow watcher never holds up writers.
  std::unique_ptr<Watch> watch(const std::string& group, const std::string& plural, const std::string& namespace_,
                               std::uint64_t fromResourceVersion, Filter filter);
  struct WatchOptions {
    // > 0: next() answers a BOOKMARK once this long has passed without an event (or bookmark)
    // delivered. Its object is {"metadata":{"resourceVersion":"<rv>"}}, where rv is the
    // revision up to which the watcher has seen everything; the HTTP layer adds apiVersion and
    // kind (and the initial-events-end annotation when it streams initial events).
    std::chrono::milliseconds bookmarkInterval{0};
    // When the watch will end (its timeoutSeconds): with bookmarks on, one more is sent 2 s
    // before it, as kube-apiserver's watch cache does, so the client resumes from a recent
    // revision.
    std::optional<std::chrono::steady_clock::time_point> deadline;
  };
  std::unique_ptr<Watch> watch(const std::string& group, const std::string& plural, const std::string& namespace_,
                               std::uint64_t fromResourceVersion, Filter filter, const WatchOptions& options);

  std::uint64_t resourceVersion() const;
  // Every event after this revision is still in the history: watches and continue tokens
  // from an older revision get 410 (etcd's compacted revision).
  std::uint64_t compactedResourceVersion() const;
  // Forgets the history (as etcd compaction does): resuming from any earlier revision gets 410.
  void compact();
  // Closes every open watch (clients must resume or relist).
  void closeAllWatches();
  // Every stored object (for the garbage collector and the GC tests).
  std::vector<std::pair<ObjectKey, nlohmann::json>> snapshot() const;
  // The objects with an ownerReference to `ownerUid` (from an index: no walk of the store).
  std::vector<std::pair<ObjectKey, nlohmann::json>> dependentsOf(const std::string& ownerUid) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::sandbox
