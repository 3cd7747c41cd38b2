#pragma once
// client-go's shared informer, for one kind: a reflector lists (every page) and then watches
// from the list's resourceVersion with bookmarks; when the stream drops it resumes from the
// last resourceVersion it saw, so nothing is missed or repeated; on 410 Gone it relists and
// reconciles its cache with the new list (handlers see the differences as adds, updates and
// deletes); other failures back off (exponentially, up to `maxBackoff`) and retry. The cache
// answers get/list; hasSynced() turns true after the first complete list. Owners that follow
// the connection (the MultiKueue cluster registry) hear of synced lists and failed requests
// through InformerOptions::onSynced and ::onError.
//
// Threads: owns one thread (the reflector, named "inf-<Kind>"), which also calls the handlers
// and the hooks, in event order; get/list/hasSynced may be called from any thread. stop() ends
// that thread promptly whatever it waits for: its requests (discovery, list, watch) are made
// with the stop token of its run, so a request in flight, a retry's backoff and the rate
// limiter end with the reflector's own backoff. Hooks must not call stop() on their own
// informer (it joins the thread they run on).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/kube/blob_map.h"
#include "mka/kube/client.h"
#include "mka/kube/object_codec.h"

namespace mka::kube {

struct InformerOptions {
  std::string namespace_;  // "" = every namespace
  std::string labelSelector;
  std::string fieldSelector;
  std::int64_t pageSize = 100;    // client-go uses 500; smaller pages keep a relist's parsed page small
  int watchTimeoutSeconds = 300;  // the server ends each watch after this (client-go: 5-10 min)
  std::chrono::milliseconds initialBackoff{100};
  std::chrono::milliseconds maxBackoff{std::chrono::seconds{30}};
  // Called after each complete list, once the cache and the handlers have it (the first call
  // is when hasSynced() turns true; later ones follow a relist after 410 Gone).
  std::function<void()> onSynced;
  // Called when a list or watch request fails, before the reflector backs off and retries.
  // Not called for a watch stream that ends (server timeout, dropped connection: the reflector
  // resumes) nor for 410 Gone (it relists).
  std::function<void(const std::exception& error)> onError;
  // client-go's SetTransform: applied to every listed or watched object before it is cached and
  // handed to the handlers (e.g. dropping metadata.managedFields to save memory). Runs on the
  // reflector thread; must not throw.
  std::function<void(nlohmann::json& object)> transform;
  // Cache objects without metadata.managedFields, which controllers never read and which is
  // often half of an object: they are cut from the list and watch answers before parsing
  // (ListOptions/WatchOptions::withoutManagedFields), and any left (a key written with
  // escapes) is erased after. Runs before `transform`.
  bool withoutManagedFields = false;
  // How many objects the informer also keeps decoded: those most recently stored by watch
  // events, most recent first. A controller works on the objects whose events just came in,
  // so their get() calls and the old object of their next update are served without
  // decoding. Each costs a decoded object's memory (a few KiB); 0 turns it off.
  std::size_t recentObjects = 16;
  // false for a kind that changes rarely (configuration objects): the reflector thread then
  // keeps no allocator thread cache (mka/common/thread_cache.h), and not its RSS either.
  bool threadCache = true;
};

// A transform for InformerOptions::transform: drops metadata.managedFields, which controllers
// never read and which often makes up a large part of an object.
void dropManagedFields(nlohmann::json& object);

struct InformerHandlers {
  std::function<void(const nlohmann::json& object)> onAdd;
  std::function<void(const nlohmann::json& oldObject, const nlohmann::json& newObject)> onUpdate;
  // For handlers that read only the new object of an update, instead of onUpdate: the informer
  // then need not decode the old object from its cache (unless another handler's onUpdate
  // reads it). Both are called when both are set.
  std::function<void(const nlohmann::json& newObject)> onUpdateNew;
  // A watched deletion hands over the object as the DELETED event carries it; one found by a
  // relist, as it was cached.
  std::function<void(const nlohmann::json& object)> onDelete;
};

class Informer {
 public:
  Informer(Client& client, api::GroupVersionKind gvk, InformerOptions options = {});
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers added at any time see every object: added after objects are cached (a shared
  // informer that runs already), they first get onAdd for each of them, as client-go's
  // AddEventHandler does, before any later change. Returns an id for removeHandlers.
  // Handlers run on the reflector thread and must not add or remove handlers of this informer.
  using HandlerId = std::uint64_t;
  HandlerId addHandlers(InformerHandlers handlers);
  // Once it returns, the handlers are not running and are never called again: what they point
  // to may go (a controller stopping while a shared informer keeps running).
  void removeHandlers(HandlerId id);
  void start();
  void stop();  // ends the reflector's requests and waits promptly, and joins

  bool hasSynced() const { return synced_.load(); }
  // Waits until synced or `timeout`, or until stop is requested on `caller` (a start that is
  // being given up); false unless synced.
  bool waitForSync(std::chrono::milliseconds timeout, std::stop_token caller = {}) const;

  // Cache reads: key is "namespace/name" ("name" for cluster-scoped kinds). A read decodes
  // the stored object (see ObjectCodec) unless it is among the recent objects, and copies
  // those: read once per decision, not in loops.
  std::optional<nlohmann::json> get(const std::string& key) const;
  std::vector<nlohmann::json> list() const;
  // Every object cached at the call, in key order, decoded one at a time as it stands when its
  // turn comes (one deleted meanwhile is skipped): unlike list(), never holds them all decoded
  // at once, nor copies of them all. `visit` runs outside the cache's lock.
  // `wanted`, when given, is asked about each key first (outside the lock too): the objects it
  // declines are skipped without being decoded.
  void forEach(const std::function<void(const nlohmann::json& object)>& visit,
               const std::function<bool(const std::string& key)>& wanted = nullptr) const;
  std::string lastResourceVersion() const;

  // Observability and tests.
  std::uint64_t lists() const { return lists_.load(); }
  std::uint64_t watches() const { return watches_.load(); }
  // Stored objects decoded so far (reads and handler calls served by the recent objects are not).
  std::uint64_t decodes() const { return decodes_.load(); }
  // The bytes of the cache's encoded objects (keys and table not counted).
  std::size_t cachedBytes() const;
  const api::GroupVersionKind& gvk() const { return gvk_; }

  static std::string keyOf(const nlohmann::json& object);
  // The namespace and name of such a key: ("ns", "name"), or ("", "name") for a cluster-scoped
  // object. The views point into `key`.
  static std::pair<std::string_view, std::string_view> splitKey(std::string_view key);

 private:
  void run(const std::stop_token& stop);
  void relist(const std::stop_token& stop);
  void watchOnce(const std::stop_token& stop);
  void apply(const std::string& type, nlohmann::json object);
  void setResourceVersion(const nlohmann::json& object);
  bool sleepFor(std::chrono::milliseconds delay);  // false when stopping
  using Decoded = std::shared_ptr<const nlohmann::json>;
  // The cache keeps an object without metadata.name and metadata.namespace, which its key
  // already holds (a shorter blob): encode() leaves them out, decode() puts them
  // back. `object` is as it was when encode() returns.
  std::string encode(const std::string& key, nlohmann::json& object);
  nlohmann::json decode(std::string_view key, std::string_view blob) const;  // counted
  // With mutex_ held. A read that hits moves the object to the front, so these are const.
  Decoded recentLocked(const std::string& key) const;
  void rememberLocked(const std::string& key, Decoded object) const;
  void forgetLocked(const std::string& key) const;

  Client& client_;
  api::GroupVersionKind gvk_;
  InformerOptions options_;

  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;  // any: waitForSync also wakes on a caller's stop token
  ObjectCodec codec_;                            // encodes on the reflector thread only
  BlobMap cache_;                                // key -> codec_-encoded object
  // Decoded copies of at most options_.recentObjects entries of cache_, always equal to them
  // (apply stores or drops them with the entry, relist drops them all), most recently used
  // first.
  mutable std::list<std::pair<std::string, Decoded>> recent_;
  mutable std::unordered_map<std::string, std::list<std::pair<std::string, Decoded>>::iterator> recentIndex_;
  // Replaced whole by addHandlers (rare), so each event takes a reference, not a copy of every
  // std::function. `oldRead`: some handler has onUpdate, so update events decode the old object.
  struct Handlers {
    std::vector<InformerHandlers> list;
    std::vector<HandlerId> ids;  // list[i]'s id
    bool oldRead = false;
  };
  // Held by the reflector thread from a change of the cache until the handlers have heard of it,
  // and by addHandlers and removeHandlers: a new handler's replay of the cache and the events
  // after it reach it in order, and a removed one is not running. Taken before mutex_.
  std::mutex dispatchMutex_;
  HandlerId nextHandlerId_ = 1;  // under mutex_
  std::shared_ptr<const Handlers> handlers_ = std::make_shared<const Handlers>();
  std::string resourceVersion_;
  bool stopping_ = false;
  std::stop_source stop_;  // the running thread's, requested by stop(); a new one per start()
  std::atomic<bool> synced_{false};
  std::atomic<std::uint64_t> lists_{0}, watches_{0};
  mutable std::atomic<std::uint64_t> decodes_{0};
  std::thread thread_;
};

// Starts `informers` (those already started go on) and waits, all within `timeout`, for their
// caches; returns the kinds that did not sync, comma-separated ("" when all did). A stop
// requested on `caller` ends the wait (the informers go on: their owner stops them).
std::string startAndWaitForSync(const std::vector<Informer*>& informers, std::chrono::milliseconds timeout,
                                std::stop_token caller = {});

}  // namespace mka::kube
