#include "mka/kube/informer.h"

#include <algorithm>

#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"

namespace mka::kube {

using nlohmann::json;

Informer::Informer(Client& client, api::GroupVersionKind gvk, InformerOptions options)
    : client_(client), gvk_(std::move(gvk)), options_(std::move(options)) {}

Informer::~Informer() { stop(); }

std::string Informer::keyOf(const json& object) {
  const auto& meta = json_fields::objectMember(object, "metadata");
  const auto ns = json_fields::stringMember(meta, "namespace");
  const auto name = json_fields::stringMember(meta, "name");
  return ns.empty() ? name : ns + "/" + name;
}

Informer::HandlerId Informer::addHandlers(InformerHandlers handlers) {
  std::lock_guard dispatch(dispatchMutex_);
  const auto onAdd = handlers.onAdd;
  HandlerId id = 0;
  {
    std::lock_guard lock(mutex_);
    id = nextHandlerId_++;
    auto next = std::make_shared<Handlers>(*handlers_);
    next->list.push_back(std::move(handlers));
    next->ids.push_back(id);
    next->oldRead = next->oldRead || static_cast<bool>(next->list.back().onUpdate);
    handlers_ = std::move(next);
  }
  // What is cached already (nothing before the first list): the reflector waits on
  // dispatchMutex_ meanwhile, so the new handler hears of later changes after this.
  if (onAdd) forEach(onAdd);
  return id;
}

void Informer::removeHandlers(HandlerId id) {
  std::lock_guard dispatch(dispatchMutex_);
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<Handlers>();
  for (std::size_t i = 0; i < handlers_->list.size(); ++i) {
    if (handlers_->ids[i] == id) continue;
    next->list.push_back(handlers_->list[i]);
    next->ids.push_back(handlers_->ids[i]);
    next->oldRead = next->oldRead || static_cast<bool>(handlers_->list[i].onUpdate);
  }
  handlers_ = std::move(next);
}

void Informer::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  stop_ = std::stop_source();
  thread_ = std::thread([this, stop = stop_.get_token()] {
    nameThisThread("inf-" + gvk_.kind);  // "inf-PipelineRun": which cache a profile's time goes to
    if (!options_.threadCache) disableThreadCache();
    run(stop);
  });
}

void Informer::stop() {
  std::stop_source running;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    running = stop_;
  }
  running.request_stop();  // runs the interrupts of the reflector's calls in flight, here
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::waitForSync(std::chrono::milliseconds timeout, std::stop_token caller) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, caller, timeout, [&] { return synced_.load() || stopping_; });
  return synced_.load();
}

std::optional<json> Informer::get(const std::string& key) const {
  std::string blob;
  {
    std::lock_guard lock(mutex_);
    const auto stored = cache_.find(key);
    if (!stored) return std::nullopt;
    if (auto hit = recentLocked(key)) return *hit;
    blob = *stored;
  }
  // Not remembered: keeping it would cost a copy on every read that misses.
  return decode(key, blob);
}

std::pair<std::string_view, std::string_view> Informer::splitKey(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return {{}, key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::string Informer::encode(const std::string& key, json& object) {
  // Only a name and a namespace that are the key's own are left out; anything else (no name,
  // a non-string one) is kept as it is, so decode() restores exactly what was there.
  const auto [ns, name] = splitKey(key);
  auto meta = object.is_object() ? object.find("metadata") : object.end();
  if (name.empty() || meta == object.end() || !meta->is_object()) return codec_.encode(object);
  auto nameIt = meta->find("name");
  auto nsIt = meta->find("namespace");
  const bool nameMatches =
      nameIt != meta->end() && nameIt->is_string() && nameIt->get_ref<const std::string&>() == name;
  const bool nsMatches = ns.empty()
                             ? nsIt == meta->end()
                             : nsIt != meta->end() && nsIt->is_string() && nsIt->get_ref<const std::string&>() == ns;
  if (!nameMatches || !nsMatches) return codec_.encode(object);
  json savedName = std::move(*nameIt);
  meta->erase(nameIt);
  json savedNs;
  if (!ns.empty()) {
    savedNs = std::move(*nsIt);
    meta->erase(nsIt);
  }
  const bool namespaced = !ns.empty();
  const auto restore = [&] {
    (*meta)["name"] = std::move(savedName);
    if (namespaced) (*meta)["namespace"] = std::move(savedNs);
  };
  std::string blob;
  try {
    blob = codec_.encode(object);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return blob;
}

json Informer::decode(std::string_view key, std::string_view blob) const {
  ++decodes_;
  json object = codec_.decode(blob);
  const auto [ns, name] = splitKey(key);
  auto meta = object.is_object() ? object.find("metadata") : object.end();
  if (name.empty() || meta == object.end() || !meta->is_object() || meta->contains("name")) return object;
  (*meta)["name"] = name;
  if (!ns.empty()) (*meta)["namespace"] = ns;
  return object;
}

std::size_t Informer::cachedBytes() const {
  std::lock_guard lock(mutex_);
  std::size_t bytes = 0;
  cache_.forEach([&](std::string_view, std::string_view blob) { bytes += blob.size(); });
  return bytes;
}

Informer::Decoded Informer::recentLocked(const std::string& key) const {
  auto it = recentIndex_.find(key);
  if (it == recentIndex_.end()) return nullptr;
  recent_.splice(recent_.begin(), recent_, it->second);
  return it->second->second;
}

void Informer::rememberLocked(const std::string& key, Decoded object) const {
  if (options_.recentObjects == 0) return;
  if (auto it = recentIndex_.find(key); it != recentIndex_.end()) {
    it->second->second = std::move(object);
    recent_.splice(recent_.begin(), recent_, it->second);
    return;
  }
  recent_.emplace_front(key, std::move(object));
  recentIndex_.emplace(key, recent_.begin());
  if (recent_.size() > options_.recentObjects) {
    recentIndex_.erase(recent_.back().first);
    recent_.pop_back();
  }
}

void Informer::forgetLocked(const std::string& key) const {
  auto it = recentIndex_.find(key);
  if (it == recentIndex_.end()) return;
  recent_.erase(it->second);
  recentIndex_.erase(it);
}

std::vector<json> Informer::list() const {
  std::vector<json> out;
  forEach([&](const json& object) { out.push_back(object); });
  return out;
}

void Informer::forEach(const std::function<void(const json& object)>& visit,
                       const std::function<bool(const std::string& key)>& wanted) const {
  // Only the keys are taken at the call, packed in one buffer (offset, size); each blob is
  // copied when its turn comes. A copy of every blob up front would hold a copy of the whole
  // cache for the whole walk, which for a GC pass over a worker's remote Workloads is a lot.
  std::string keys;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  {
    std::lock_guard lock(mutex_);
    spans.reserve(cache_.size());
    cache_.forEach([&](std::string_view key, std::string_view) {
      spans.emplace_back(keys.size(), key.size());
      keys.append(key);
    });
  }
  const auto keyAt = [&](const std::pair<std::size_t, std::size_t>& span) {
    return std::string_view(keys).substr(span.first, span.second);
  };
  // By key, as a list from the server.
  std::sort(spans.begin(), spans.end(), [&](const auto& a, const auto& b) { return keyAt(a) < keyAt(b); });
  std::string blob;
  for (const auto& span : spans) {
    const auto key = keyAt(span);
    if (wanted && !wanted(std::string(key))) continue;
    {
      std::lock_guard lock(mutex_);
      const auto stored = cache_.find(key);
      if (!stored) continue;  // deleted since the call
      blob.assign(*stored);
    }
    visit(decode(key, blob));
  }
}

std::string Informer::lastResourceVersion() const {
  std::lock_guard lock(mutex_);
  return resourceVersion_;
}

bool Informer::sleepFor(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !changed_.wait_for(lock, delay, [&] { return stopping_; });
}

void Informer::run(const std::stop_token& stop) {
  auto backoff = options_.initialBackoff;
  bool needList = true;
  while (true) {
    if (stop.stop_requested()) return;
    try {
      if (needList) {
        relist(stop);
        needList = false;
      }
      watchOnce(stop);
      backoff = options_.initialBackoff;  // a watch that ran and ended: resume right away
    } catch (const ApiError& e) {
      // What a stop cut short is no failure to report.
      if (stop.stop_requested()) return;
      if (e.reason() == Reason::Gone) {
        log::info("informer relists after 410 Gone",
                  {{"kind", gvk_.goString()}, {"resourceVersion", lastResourceVersion()}});
        needList = true;
        continue;
      }
      log::warn("informer retries", {{"kind", gvk_.goString()}, {"backoffMs", backoff.count()}, {"error", e.what()}});
      if (options_.onError) options_.onError(e);
      if (!sleepFor(backoff)) return;
      backoff = std::min(backoff * 2, options_.maxBackoff);
    } catch (const std::exception& e) {
      if (stop.stop_requested()) return;
      log::error("informer retries", {{"kind", gvk_.goString()}, {"backoffMs", backoff.count()}, {"error", e.what()}});
      if (options_.onError) options_.onError(e);
      if (!sleepFor(backoff)) return;
      backoff = std::min(backoff * 2, options_.maxBackoff);
    }
  }
}

void Informer::relist(const std::stop_token& stop) {
  ListOptions list;
  list.labelSelector = options_.labelSelector;
  list.fieldSelector = options_.fieldSelector;
  list.limit = options_.pageSize;
  list.withoutManagedFields = options_.withoutManagedFields;
  std::string rv;
  // Each item is encoded as its page arrives: the parsed list is never held whole. `listed`
  // keeps the list's order (by key, as the server sorts), in which the handlers hear of it.
  //
  // Nothing below copies a key or a blob: `listed` views the keys stored in `fresh`, and the
  // handlers' views point into `fresh` (the cache from the swap on) and into `previous`, the
  // cache it replaces, kept until they have run. This thread is the cache's only writer, so the
  // views stay valid after the lock is released. Copies cost a relist of 10,000 objects about
  // 300 bytes each until its handlers had run.
  BlobMap fresh;
  std::vector<std::string_view> listed;
  client_.listEach(
      gvk_, options_.namespace_, list,
      [&](json& item) {
        if (options_.withoutManagedFields) dropManagedFields(item);
        if (options_.transform) options_.transform(item);
        const auto key = keyOf(item);
        const auto blob = encode(key, item);
        if (!fresh.contains(key)) {
          listed.push_back(fresh.assign(key, blob));
          return;
        }
        // Listed twice (the server's bug): the later item wins, at the first one's place. Its view
        // is found while it still holds, then pointed at the new entry.
        const auto at = std::find(listed.begin(), listed.end(), key);
        *at = fresh.assign(key, blob);
      },
      &rv, stop);
  ++lists_;

  // Reconcile the cache with the list; handlers see what changed (client-go's Replace).
  std::vector<std::pair<std::string_view, std::string_view>> deleted;  // key, blob (in previous)
  std::vector<std::string_view> added;                                 // key (in the cache)
  std::vector<std::pair<std::string_view, std::string_view>> updated;  // key (in the cache), blob before
  BlobMap previous;
  std::shared_ptr<const Handlers> handlers;
  std::unique_lock dispatch(dispatchMutex_);
  {
    std::lock_guard lock(mutex_);
    cache_.forEach([&](std::string_view key, std::string_view blob) {
      if (!fresh.contains(key)) deleted.emplace_back(key, blob);
    });
    std::sort(deleted.begin(), deleted.end());
    for (const auto key : listed) {
      const auto before = cache_.find(key);
      if (!before) {
        added.push_back(key);
      } else if (!codec_.sameObject(*before, *fresh.find(key))) {
        updated.emplace_back(key, *before);
      }
    }
    previous = std::move(cache_);
    cache_ = std::move(fresh);
    recent_.clear();  // the list may have replaced any of them
    recentIndex_.clear();
    resourceVersion_ = rv;
    handlers = handlers_;
  }
  if (!handlers->list.empty()) {
    for (const auto& [key, blob] : deleted) {
      const auto o = decode(key, blob);
      for (const auto& h : handlers->list)
        if (h.onDelete) h.onDelete(o);
    }
    for (const auto key : added) {
      const auto o = decode(key, *cache_.find(key));
      for (const auto& h : handlers->list)
        if (h.onAdd) h.onAdd(o);
    }
    for (const auto& [key, beforeBlob] : updated) {
      const auto after = decode(key, *cache_.find(key));
      const auto before = handlers->oldRead ? decode(key, beforeBlob) : json();
      for (const auto& h : handlers->list) {
        if (h.onUpdate) h.onUpdate(before, after);
        if (h.onUpdateNew) h.onUpdateNew(after);
      }
    }
  }
  dispatch.unlock();
  if (!synced_.exchange(true)) {
    log::info("informer synced", {{"kind", gvk_.goString()}, {"objects", added.size()}, {"resourceVersion", rv}});
  }
  changed_.notify_all();
  if (options_.onSynced) options_.onSynced();
}

void Informer::watchOnce(const std::stop_token& stop) {
  WatchOptions watch;
  watch.labelSelector = options_.labelSelector;
  watch.fieldSelector = options_.fieldSelector;
  watch.timeoutSeconds = options_.watchTimeoutSeconds;
  watch.withoutManagedFields = options_.withoutManagedFields;
  watch.resourceVersion = lastResourceVersion();
  ++watches_;
  client_.watch(
      gvk_, options_.namespace_, watch,
      [&](WatchEvent& event) {
        apply(event.type, std::move(event.object));
        return true;
      },
      stop);
}

void dropManagedFields(json& object) {
  auto meta = object.find("metadata");
  if (meta != object.end() && meta->is_object()) meta->erase("managedFields");
}

void Informer::apply(const std::string& type, json object) {
  if (type == "BOOKMARK") {
    setResourceVersion(object);
    return;
  }
  if (options_.withoutManagedFields) dropManagedFields(object);
  if (options_.transform) options_.transform(object);
  const auto key = keyOf(object);
  const bool deleted = type == "DELETED";
  std::lock_guard dispatch(dispatchMutex_);
  std::string blob = deleted ? std::string{} : encode(key, object);
  const auto resourceVersion = json_fields::metadataString(object, "resourceVersion");
  // The object as stored, decoded already: kept among the recent objects and handed to the
  // handlers. A deleted object is handed over as the event carries it (client-go does the same).
  Decoded current = deleted ? nullptr : std::make_shared<const json>(std::move(object));
  bool existed = false;
  std::optional<std::string> previousBlob;
  Decoded previousDecoded;
  std::shared_ptr<const Handlers> handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    if (const auto stored = cache_.find(key)) {
      existed = true;
      // The old object of an update is decoded only for handlers that read it.
      if (!deleted && handlers->oldRead) {
        previousDecoded = recentLocked(key);
        if (!previousDecoded) previousBlob = std::string(*stored);
      }
      if (deleted) cache_.erase(key);
    }
    if (!deleted) cache_.assign(key, blob);
    if (deleted) {
      forgetLocked(key);
    } else {
      rememberLocked(key, current);
    }
    if (!resourceVersion.empty()) resourceVersion_ = resourceVersion;
  }
  if (handlers->list.empty()) return;
  if (previousBlob) previousDecoded = std::make_shared<const json>(decode(key, *previousBlob));
  for (const auto& h : handlers->list) {
    if (deleted) {
      if (h.onDelete) h.onDelete(object);
    } else if (existed) {
      if (h.onUpdate) h.onUpdate(*previousDecoded, *current);
      if (h.onUpdateNew) h.onUpdateNew(*current);
    } else if (h.onAdd) {
      h.onAdd(*current);
    }
  }
}

void Informer::setResourceVersion(const json& object) {
  const auto rv = json_fields::metadataString(object, "resourceVersion");
  if (rv.empty()) return;
  std::lock_guard lock(mutex_);
  resourceVersion_ = rv;
}

std::string startAndWaitForSync(const std::vector<Informer*>& informers, std::chrono::milliseconds timeout,
                                std::stop_token caller) {
  for (auto* informer : informers) informer->start();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string missing;
  for (auto* informer : informers) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!informer->waitForSync(std::max(left, std::chrono::milliseconds{0}), caller))
      missing += (missing.empty() ? "" : ", ") + informer->gvk().goString();
  }
  return missing;
}

}  // namespace mka::kube
