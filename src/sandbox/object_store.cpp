#include "mka/sandbox/object_store.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <utility>

#include "continue_token.h"
#include "mka/sandbox/api_error.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
// Stored objects are immutable once written (StoredObject), so the map, the history and every
// watcher share them without copies; a reader copies only what it hands out.
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kInconsistentContinue =
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list.";
constexpr std::string_view kConflict =
    "the object has been modified; please apply your changes to the latest version and try again";
// kube-apiserver's answer to a read at a revision it has not reached (after waiting for it).
ApiError tooLargeResourceVersion(std::uint64_t asked, std::uint64_t current) {
  return ApiError(
      504, "Timeout", "Too large resource version: " + std::to_string(asked) + ", current: " + std::to_string(current),
      nlohmann::json{{"causes", {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}}},
                     {"retryAfterSeconds", 1}});
}

// Events a watcher copies out per lock acquisition: bounds how long one watcher holds the lock.
constexpr std::size_t kScanBatch = 1024;

struct Event {
  EventType type;
  std::uint64_t revision;
  ObjectKey key;
  StoredObject object;    // after the write; for Deleted the last state at the deletion's revision
  StoredObject previous;  // before the write; null for Added
};

struct Entry {
  StoredObject object;
  std::uint64_t revision;
};

std::string qualifiedResource(const ObjectKey& key) {
  return key.group.empty() ? key.plural : key.plural + "." + key.group;
}

bool inScope(const ObjectKey& key, const std::string& group, const std::string& plural, const std::string& ns) {
  return key.plural == plural && key.group == group && (ns.empty() || key.namespace_ == ns);
}

json withRevision(json object, std::uint64_t revision) {
  if (!object.is_object()) throw ApiError::internal("object store: an object must be a JSON object");
  auto& metadata = object["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  metadata["resourceVersion"] = std::to_string(revision);
  return object;
}

std::string tooOld(std::uint64_t requested, std::uint64_t compacted) {
  return "too old resource version: " + std::to_string(requested) + " (" + std::to_string(compacted) + ")";
}

const char* const kEventNames[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

}  // namespace

const char* toString(EventType type) { return kEventNames[static_cast<int>(type)]; }

namespace {

// Shared by the store and its watches (a watch may outlive the store's owner briefly: the HTTP
// connection streaming it ends on its own thread). Every field but closeEpoch is guarded by mutex.
struct StoreState {
  explicit StoreState(std::size_t limit) : historyLimit(std::max<std::size_t>(limit, 1)) {}

  mutable std::mutex mutex;
  // One wake-up channel per group/plural: a write wakes only the watches of its own resource.
  // A single one would make every write wake every watch of the cluster (workloads, jobs,
  // events, secrets ...), and those context switches are a large share of the sandbox's CPU
  // under load.
  // Entries are never removed, so a watch may keep a pointer to its channel.
  std::map<std::pair<std::string, std::string>, std::condition_variable> channels;
  std::map<ObjectKey, Entry> objects;
  // owner uid -> objects with an ownerReference to it (the garbage collector's graph), so that
  // finding an owner's dependents does not walk the whole store.
  std::map<std::string, std::set<ObjectKey>> dependents;
  std::deque<Event> history;  // consecutive revisions (compacted, revision]
  const std::size_t historyLimit;
  std::uint64_t revision = 0;
  std::uint64_t compacted = 0;
  // Bumped by closeAllWatches(): a watch opened under an older epoch is closed.
  std::atomic<std::uint64_t> closeEpoch{0};

  void record(Event event) {
    history.push_back(std::move(event));
    while (history.size() > historyLimit) {
      compacted = history.front().revision;
      history.pop_front();
    }
  }
  std::condition_variable& channel(const std::string& group, const std::string& plural) {
    return channels[{group, plural}];
  }
  // The channel watches of `key`'s resource wait on; nullptr when nobody ever watched it.
  std::condition_variable* channelOf(const ObjectKey& key) {
    auto it = channels.find({key.group, key.plural});
    return it == channels.end() ? nullptr : &it->second;
  }

  std::size_t firstAfter(std::uint64_t rv) const {
    return static_cast<std::size_t>(
        std::partition_point(history.begin(), history.end(), [rv](const Event& e) { return e.revision <= rv; }) -
        history.begin());
  }

  void indexOwners(const ObjectKey& key, const json& object, bool add) {
    const auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return;
    const auto refs = meta->find("ownerReferences");
    if (refs == meta->end() || !refs->is_array()) return;
    for (const auto& ref : *refs) {
      if (!ref.is_object()) continue;
      const auto uid = ref.value("uid", "");
      if (uid.empty()) continue;
      if (add) {
        dependents[uid].insert(key);
      } else if (auto it = dependents.find(uid); it != dependents.end()) {
        it->second.erase(key);
        if (it->second.empty()) dependents.erase(it);
      }
    }
  }

  StoredObject create(const ObjectKey& key, json object) {
    const auto rv = ++revision;
    auto ptr = std::make_shared<const json>(withRevision(std::move(object), rv));
    objects.emplace(key, Entry{ptr, rv});
    indexOwners(key, *ptr, true);
    record({EventType::Added, rv, key, ptr, nullptr});
    return ptr;
  }
  StoredObject update(std::map<ObjectKey, Entry>::iterator it, json object) {
    const auto rv = ++revision;
    auto ptr = std::make_shared<const json>(withRevision(std::move(object), rv));
    auto previous = std::exchange(it->second, Entry{ptr, rv}).object;
    indexOwners(it->first, *previous, false);
    indexOwners(it->first, *ptr, true);
    record({EventType::Modified, rv, it->first, ptr, std::move(previous)});
    return ptr;
  }
  StoredObject remove(std::map<ObjectKey, Entry>::iterator it) {
    const auto rv = ++revision;
    auto previous = it->second.object;
    // etcd's watch reports a deletion with the last state at the deletion's revision.
    auto last = std::make_shared<const json>(withRevision(*previous, rv));
    indexOwners(it->first, *previous, false);
    record({EventType::Deleted, rv, it->first, last, std::move(previous)});
    objects.erase(it);
    return last;
  }
};

// Owned by the one thread that consumes it (next()); close() and closed() may be called from any.
class StoreWatch final : public ObjectStore::Watch {
 public:
  // Constructed under the store's lock (it registers on its resource's channel).
  StoreWatch(std::shared_ptr<StoreState> state, std::string group, std::string plural, std::string ns,
             std::uint64_t cursor, ObjectStore::Filter filter, ObjectStore::WatchOptions options, std::uint64_t epoch)
      : state_(std::move(state)),
        channel_(&state_->channel(group, plural)),
        group_(std::move(group)),
        plural_(std::move(plural)),
        namespace_(std::move(ns)),
        cursor_(cursor),
        filter_(std::move(filter)),
        options_(options),
        epoch_(epoch),
        lastDelivery_(SteadyClock::now()) {
    if (options_.deadline && *options_.deadline - std::chrono::seconds{2} > lastDelivery_)
      preDeadline_ = *options_.deadline - std::chrono::seconds{2};
  }

  ~StoreWatch() override = default;

  std::optional<WatchEvent> next(std::chrono::milliseconds timeout) override {
    const auto deadline = SteadyClock::now() + timeout;
    while (!closed()) {
      if (!pending_.empty()) {
        auto event = std::move(pending_.front());
        pending_.pop_front();
        lastDelivery_ = SteadyClock::now();
        return event;
      }
      if (auto expired = scan(deadline)) return expired;
      if (!pending_.empty()) continue;
      const auto now = SteadyClock::now();
      if (bookmarks() && now >= bookmarkDue()) {
        if (preDeadline_ && now >= *preDeadline_) preDeadline_.reset();
        lastDelivery_ = now;
        return WatchEvent{
            EventType::Bookmark, cursor_,
            std::make_shared<const json>(json{{"metadata", {{"resourceVersion", std::to_string(cursor_)}}}})};
      }
      if (now >= deadline) return std::nullopt;
    }
    return std::nullopt;
  }

  bool closed() const override { return closed_.load() || epoch_ != state_->closeEpoch.load(); }

  void close() override {
    closed_ = true;
    // Taking the lock orders the flag before a waiter's predicate check, so the wake-up is not lost.
    { std::lock_guard lock(state_->mutex); }
    channel_->notify_all();
  }

 private:
  struct Candidate {
    EventType type;
    std::uint64_t revision;
    StoredObject object, previous;
  };

  bool bookmarks() const { return options_.bookmarkInterval.count() > 0; }
  SteadyClock::time_point bookmarkDue() const {
    const auto periodic = lastDelivery_ + options_.bookmarkInterval;
    return preDeadline_ ? std::min(periodic, *preDeadline_) : periodic;
  }

  // Waits for events past the cursor (until `deadline` or a bookmark is due), copies a batch of
  // the ones in scope under the lock and filters them outside it. Returns an Error event when
  // the history the watcher still needs is gone.
  std::optional<WatchEvent> scan(SteadyClock::time_point deadline) {
    std::vector<Candidate> batch;
    {
      std::unique_lock lock(state_->mutex);
      auto wakeAt = deadline;
      if (bookmarks()) wakeAt = std::min(wakeAt, bookmarkDue());
      // A time already past (a poll: next(0)) is not waited for. A wait for it still makes a
      // futex call that often goes through the scheduler, a noticeable share of the sandbox's
      // CPU under load, in the watch streams' batching and the Kueue stand-ins' polls.
      const auto ready = [&] { return closed() || state_->revision > cursor_; };
      if (!ready() && SteadyClock::now() < wakeAt) channel_->wait_until(lock, wakeAt, ready);
      if (closed()) return std::nullopt;
      if (cursor_ < state_->compacted) {
        const auto compacted = state_->compacted;
        lock.unlock();
        closed_ = true;
        return WatchEvent{EventType::Error, compacted,
                          std::make_shared<const json>(ApiError::gone(tooOld(cursor_, compacted)).status())};
      }
      std::size_t scanned = 0;
      for (auto i = state_->firstAfter(cursor_); i < state_->history.size() && scanned < kScanBatch; ++i, ++scanned) {
        const auto& e = state_->history[i];
        if (inScope(e.key, group_, plural_, namespace_)) batch.push_back({e.type, e.revision, e.object, e.previous});
        cursor_ = e.revision;
      }
    }
    for (const auto& c : batch) present(c);
    return std::nullopt;
  }

  bool matches(const json& object) const { return !filter_ || filter_(object); }

  // The event as this watcher's filter sees it (kube-apiserver's cacheWatcher rules).
  void present(const Candidate& c) {
    const bool now = c.type != EventType::Deleted && matches(*c.object);
    const bool before = c.type != EventType::Added && c.previous && matches(*c.previous);
    if (now && before) {
      pending_.push_back({EventType::Modified, c.revision, c.object});
    } else if (now) {
      pending_.push_back({EventType::Added, c.revision, c.object});
    } else if (before) {
      pending_.push_back({EventType::Deleted, c.revision,
                          c.type == EventType::Deleted
                              ? c.object
                              : std::make_shared<const json>(withRevision(*c.previous, c.revision))});
    }
  }

  std::shared_ptr<StoreState> state_;
  std::condition_variable* const channel_;  // in state_->channels
  const std::string group_, plural_, namespace_;
  std::uint64_t cursor_;  // every event up to here has been looked at
  const ObjectStore::Filter filter_;
  const ObjectStore::WatchOptions options_;
  const std::uint64_t epoch_;
  std::atomic<bool> closed_{false};
  std::deque<WatchEvent> pending_;
  SteadyClock::time_point lastDelivery_;
  std::optional<SteadyClock::time_point> preDeadline_;  // the bookmark before the deadline, until sent
};

}  // namespace

struct ObjectStore::Impl {
  std::shared_ptr<StoreState> state;

  // Writers wake watchers after releasing the lock so a woken watcher does not block on it.
  static void notify(std::condition_variable* channel) {
    if (channel) channel->notify_all();
  }
};

ObjectStore::ObjectStore(std::size_t historyLimit)
    : impl_(std::make_unique<Impl>(Impl{std::make_shared<StoreState>(historyLimit)})) {}

ObjectStore::~ObjectStore() { closeAllWatches(); }

std::optional<nlohmann::json> ObjectStore::get(const ObjectKey& key) const {
  auto found = getShared(key);
  if (!found) return std::nullopt;
  return *found;
}

StoredObject ObjectStore::getShared(const ObjectKey& key) const {
  std::lock_guard lock(impl_->state->mutex);
  auto it = impl_->state->objects.find(key);
  return it == impl_->state->objects.end() ? nullptr : it->second.object;
}

ObjectStore::ListResult ObjectStore::list(const std::string& group, const std::string& plural,
                                          const std::string& namespace_, const Filter& filter, std::size_t limit,
                                          const std::string& continueToken,
                                          std::optional<std::uint64_t> exactRevision) const {
  std::optional<ContinueToken> from;
  if (!continueToken.empty()) from = decodeContinue(continueToken);

  ListResult out;
  std::vector<StoredObject> picked;
  {
    auto& s = *impl_->state;
    std::lock_guard lock(s.mutex);
    std::uint64_t at = s.revision;
    if (exactRevision && !from) {
      if (*exactRevision < s.compacted) throw ApiError::gone("The resourceVersion for the provided list is too old.");
      if (*exactRevision > s.revision) throw tooLargeResourceVersion(*exactRevision, s.revision);
      at = *exactRevision;
    }
    if (from && from->resourceVersion > 0) {
      if (static_cast<std::uint64_t>(from->resourceVersion) < s.compacted) {
        ContinueToken latest = *from;
        latest.resourceVersion = -1;
        throw ApiError::gone(std::string(kInconsistentContinue))
            .withMetadata(json{{"continue", encodeContinue(latest)}});
      }
      at = std::min<std::uint64_t>(static_cast<std::uint64_t>(from->resourceVersion), s.revision);
    }
    out.resourceVersion = at;

    // The state at `at` of every key written since: the state before its first later write.
    std::map<ObjectKey, StoredObject> asOf;
    for (auto i = s.history.size(); i-- > 0;) {
      const auto& e = s.history[i];
      if (e.revision <= at) break;
      if (inScope(e.key, group, plural, namespace_)) asOf[e.key] = e.previous;
    }

    const ObjectKey start =
        from ? ObjectKey{group, plural, from->namespace_, from->name} : ObjectKey{group, plural, namespace_, ""};
    auto live = from ? s.objects.upper_bound(start) : s.objects.lower_bound(start);
    auto past = from ? asOf.upper_bound(start) : asOf.lower_bound(start);
    auto liveIn = [&] { return live != s.objects.end() && inScope(live->first, group, plural, namespace_); };
    auto pastIn = [&] { return past != asOf.end(); };

    const ObjectKey* lastKey = nullptr;
    bool cut = false;
    std::int64_t remaining = 0;
    while (liveIn() || pastIn()) {
      const ObjectKey* key;
      StoredObject object;
      if (pastIn() && (!liveIn() || past->first <= live->first)) {
        if (liveIn() && past->first == live->first) ++live;
        key = &past->first;
        object = past->second;
        ++past;
      } else {
        key = &live->first;
        object = live->second.object;
        ++live;
      }
      if (!object || (filter && !filter(*object))) continue;
      if (limit > 0 && picked.size() == limit) {
        cut = true;
        if (filter) break;
        ++remaining;
        continue;
      }
      picked.push_back(std::move(object));
      lastKey = key;
    }
    if (cut) {
      out.continueToken = encodeContinue({static_cast<std::int64_t>(at), lastKey->namespace_, lastKey->name});
      if (!filter) out.remainingItemCount = remaining;
    }
  }
  out.items.reserve(picked.size());
  for (const auto& p : picked) out.items.push_back(*p);
  return out;
}

StoredObject ObjectStore::create(const ObjectKey& key, nlohmann::json object) {
  StoredObject stored;
  std::condition_variable* channel = nullptr;
  {
    std::lock_guard lock(impl_->state->mutex);
    if (impl_->state->objects.contains(key)) throw ApiError::alreadyExists(qualifiedResource(key), key.name);
    stored = impl_->state->create(key, std::move(object));
    channel = impl_->state->channelOf(key);
  }
  Impl::notify(channel);
  return stored;
}

StoredObject ObjectStore::update(const ObjectKey& key, nlohmann::json object,
                                 std::optional<std::uint64_t> expectedResourceVersion) {
  StoredObject stored;
  std::condition_variable* channel = nullptr;
  {
    std::lock_guard lock(impl_->state->mutex);
    auto it = impl_->state->objects.find(key);
    if (it == impl_->state->objects.end()) throw ApiError::notFound(qualifiedResource(key), key.name);
    if (expectedResourceVersion && *expectedResourceVersion != it->second.revision) {
      throw ApiError::conflict(qualifiedResource(key), key.name, std::string(kConflict));
    }
    stored = impl_->state->update(it, std::move(object));
    channel = impl_->state->channelOf(key);
  }
  Impl::notify(channel);
  return stored;
}

StoredObject ObjectStore::remove(const ObjectKey& key, std::optional<std::uint64_t> expectedResourceVersion) {
  StoredObject last;
  std::condition_variable* channel = nullptr;
  {
    std::lock_guard lock(impl_->state->mutex);
    auto it = impl_->state->objects.find(key);
    if (it == impl_->state->objects.end()) throw ApiError::notFound(qualifiedResource(key), key.name);
    if (expectedResourceVersion && *expectedResourceVersion != it->second.revision) {
      throw ApiError::conflict(
          qualifiedResource(key), key.name,
          "Precondition failed: ResourceVersion in precondition: " + std::to_string(*expectedResourceVersion) +
              ", ResourceVersion in object meta: " + std::to_string(it->second.revision));
    }
    last = impl_->state->remove(it);
    channel = impl_->state->channelOf(key);
  }
  Impl::notify(channel);
  return last;
}

std::optional<nlohmann::json> ObjectStore::mutate(const ObjectKey& key, const Mutation& mutate) {
  StoredObject stored;
  std::condition_variable* channel = nullptr;
  {
    auto& s = *impl_->state;
    std::lock_guard lock(s.mutex);
    auto it = s.objects.find(key);
    std::optional<json> current;
    if (it != s.objects.end()) current = *it->second.object;
    auto next = mutate(current);
    if (!next) {
      if (it == s.objects.end()) return std::nullopt;
      s.remove(it);
    } else if (current && *next == *current) {
      return current;
    } else {
      stored = it == s.objects.end() ? s.create(key, std::move(*next)) : s.update(it, std::move(*next));
    }
    channel = s.channelOf(key);
  }
  Impl::notify(channel);
  if (!stored) return std::nullopt;
  return *stored;
}

std::unique_ptr<ObjectStore::Watch> ObjectStore::watch(const std::string& group, const std::string& plural,
                                                       const std::string& namespace_, std::uint64_t fromResourceVersion,
                                                       Filter filter) {
  return watch(group, plural, namespace_, fromResourceVersion, std::move(filter), WatchOptions{});
}

std::unique_ptr<ObjectStore::Watch> ObjectStore::watch(const std::string& group, const std::string& plural,
                                                       const std::string& namespace_, std::uint64_t fromResourceVersion,
                                                       Filter filter, const WatchOptions& options) {
  auto& s = *impl_->state;
  std::lock_guard lock(s.mutex);
  if (fromResourceVersion != 0 && fromResourceVersion < s.compacted) {
    throw ApiError::gone(tooOld(fromResourceVersion, s.compacted));
  }
  const auto cursor = fromResourceVersion == 0 ? s.revision : fromResourceVersion;
  return std::make_unique<StoreWatch>(impl_->state, group, plural, namespace_, cursor, std::move(filter), options,
                                      s.closeEpoch.load());
}

std::uint64_t ObjectStore::resourceVersion() const {
  std::lock_guard lock(impl_->state->mutex);
  return impl_->state->revision;
}

std::uint64_t ObjectStore::compactedResourceVersion() const {
  std::lock_guard lock(impl_->state->mutex);
  return impl_->state->compacted;
}

void ObjectStore::compact() {
  std::lock_guard lock(impl_->state->mutex);
  impl_->state->compacted = impl_->state->revision;
  impl_->state->history.clear();
}

void ObjectStore::closeAllWatches() {
  std::lock_guard lock(impl_->state->mutex);
  ++impl_->state->closeEpoch;
  for (auto& [resource, channel] : impl_->state->channels) channel.notify_all();
}

namespace {

// Copies handed out, made after the store's lock is released.
std::vector<std::pair<ObjectKey, nlohmann::json>> copiesOf(std::vector<std::pair<ObjectKey, StoredObject>> refs) {
  std::vector<std::pair<ObjectKey, nlohmann::json>> out;
  out.reserve(refs.size());
  for (auto& [key, object] : refs) out.emplace_back(std::move(key), *object);
  return out;
}

}  // namespace

std::vector<std::pair<ObjectKey, nlohmann::json>> ObjectStore::dependentsOf(const std::string& ownerUid) const {
  std::vector<std::pair<ObjectKey, StoredObject>> refs;
  {
    std::lock_guard lock(impl_->state->mutex);
    auto it = impl_->state->dependents.find(ownerUid);
    if (it == impl_->state->dependents.end()) return {};
    for (const auto& key : it->second) refs.emplace_back(key, impl_->state->objects.at(key).object);
  }
  return copiesOf(std::move(refs));
}

std::vector<std::pair<ObjectKey, nlohmann::json>> ObjectStore::snapshot() const {
  std::vector<std::pair<ObjectKey, StoredObject>> refs;
  {
    std::lock_guard lock(impl_->state->mutex);
    refs.reserve(impl_->state->objects.size());
    for (const auto& [key, entry] : impl_->state->objects) refs.emplace_back(key, entry.object);
  }
  return copiesOf(std::move(refs));
}

}  // namespace mka::sandbox
