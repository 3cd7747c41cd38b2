#include "mka/kube/informer.h"

#include <spdlog/spdlog.h>

namespace mka::kube {

using nlohmann::json;

Informer::Informer(Client& client, GroupVersionKind gvk, InformerOptions options)
    : client_(client), gvk_(std::move(gvk)), options_(std::move(options)) {}

Informer::~Informer() { stop(); }

std::string Informer::keyOf(const json& object) {
  const auto meta = object.value("metadata", json::object());
  const auto ns = meta.value("namespace", "");
  const auto name = meta.value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

void Informer::addHandlers(InformerHandlers handlers) {
  std::lock_guard lock(mutex_);
  handlers_.push_back(std::move(handlers));
}

void Informer::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (stream_) stream_->cancel();
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::waitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return synced_.load() || stopping_; }) && synced_.load();
}

std::optional<json> Informer::get(const std::string& key) const {
  std::string blob;
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(key);
    if (it == cache_.end()) return std::nullopt;
    blob = it->second;
  }
  return codec_.decode(blob);
}

std::vector<json> Informer::list() const {
  std::vector<json> out;
  forEach([&](const json& object) { out.push_back(object); });
  return out;
}

void Informer::forEach(const std::function<void(const json& object)>& visit) const {
  std::vector<std::string> blobs;
  {
    std::lock_guard lock(mutex_);
    blobs.reserve(cache_.size());
    for (const auto& [key, blob] : cache_) blobs.push_back(blob);
  }
  for (auto& blob : blobs) {
    visit(codec_.decode(blob));
    std::string().swap(blob);
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

void Informer::run() {
  auto backoff = options_.initialBackoff;
  bool needList = true;
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    try {
      if (needList) {
        relist();
        needList = false;
      }
      watchOnce();
      backoff = options_.initialBackoff;  // a watch that ran and ended: resume right away
    } catch (const ApiError& e) {
      if (e.reason() == Reason::Gone) {
        spdlog::info("informer relists after 410 Gone kind={} resourceVersion={}", gvk_.goString(),
                     lastResourceVersion());
        needList = true;
        continue;
      }
      spdlog::warn("informer retries kind={} backoff_ms={} error=\"{}\"", gvk_.goString(), backoff.count(), e.what());
      if (options_.onError) options_.onError(e);
      if (!sleepFor(backoff)) return;
      backoff = std::min(backoff * 2, options_.maxBackoff);
    } catch (const std::exception& e) {
      spdlog::error("informer retries kind={} backoff_ms={} error=\"{}\"", gvk_.goString(), backoff.count(), e.what());
      if (options_.onError) options_.onError(e);
      if (!sleepFor(backoff)) return;
      backoff = std::min(backoff * 2, options_.maxBackoff);
    }
  }
}

void Informer::relist() {
  ListOptions list;
  list.labelSelector = options_.labelSelector;
  list.fieldSelector = options_.fieldSelector;
  list.limit = options_.pageSize;
  std::string rv;
  // Each item is encoded as its page arrives: the parsed list is never held whole.
  std::map<std::string, std::string> fresh;
  client_.listEach(gvk_, options_.namespace_, list, [&](json& item) {
    if (options_.transform) options_.transform(item);
    auto key = keyOf(item);
    fresh[std::move(key)] = codec_.encode(item);
  }, &rv);
  ++lists_;

  // Reconcile the cache with the list; handlers see what changed (client-go's Replace).
  std::vector<std::string> added, deleted;
  std::vector<std::pair<std::string, std::string>> updated;
  std::vector<InformerHandlers> handlers;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, blob] : cache_)
      if (!fresh.contains(key)) deleted.push_back(blob);
    for (const auto& [key, blob] : fresh) {
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        added.push_back(blob);
      } else if (!codec_.sameObject(it->second, blob)) {
        updated.emplace_back(it->second, blob);
      }
    }
    cache_ = std::move(fresh);
    resourceVersion_ = rv;
    handlers = handlers_;
  }
  if (!handlers.empty()) {
    for (const auto& blob : deleted) {
      const auto o = codec_.decode(blob);
      for (const auto& h : handlers)
        if (h.onDelete) h.onDelete(o);
    }
    for (const auto& blob : added) {
      const auto o = codec_.decode(blob);
      for (const auto& h : handlers)
        if (h.onAdd) h.onAdd(o);
    }
    for (const auto& [beforeBlob, afterBlob] : updated) {
      const auto before = codec_.decode(beforeBlob), after = codec_.decode(afterBlob);
      for (const auto& h : handlers)
        if (h.onUpdate) h.onUpdate(before, after);
    }
  }
  if (!synced_.exchange(true)) {
    spdlog::info("informer synced kind={} objects={} resourceVersion={}", gvk_.goString(), added.size(), rv);
  }
  changed_.notify_all();
  if (options_.onSynced) options_.onSynced();
}

void Informer::watchOnce() {
  RestClient::StreamHandle handle;
  WatchOptions watch;
  watch.labelSelector = options_.labelSelector;
  watch.fieldSelector = options_.fieldSelector;
  watch.timeoutSeconds = options_.watchTimeoutSeconds;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    watch.resourceVersion = resourceVersion_;
    stream_ = &handle;
  }
  ++watches_;
  try {
    client_.watch(gvk_, options_.namespace_, watch, [&](WatchEvent& event) {
      apply(event.type, std::move(event.object));
      return true;
    }, handle);
  } catch (...) {
    std::lock_guard lock(mutex_);
    stream_ = nullptr;
    throw;
  }
  std::lock_guard lock(mutex_);
  stream_ = nullptr;
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
  if (options_.transform) options_.transform(object);
  const auto key = keyOf(object);
  const bool deleted = type == "DELETED";
  std::string blob = deleted ? std::string{} : codec_.encode(object);
  std::optional<std::string> previousBlob;
  std::vector<InformerHandlers> handlers;
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      previousBlob = deleted ? std::move(it->second) : it->second;
      if (deleted) {
        cache_.erase(it);
      } else {
        it->second = std::move(blob);
      }
    } else if (!deleted) {
      cache_.emplace(key, std::move(blob));
    }
    resourceVersion_ = object.value("metadata", json::object()).value("resourceVersion", resourceVersion_);
    handlers = handlers_;
  }
  if (handlers.empty()) return;
  std::optional<json> previous;
  if (previousBlob) previous = codec_.decode(*previousBlob);
  for (const auto& h : handlers) {
    if (type == "DELETED") {
      if (h.onDelete) h.onDelete(previous ? *previous : object);
    } else if (previous) {
      if (h.onUpdate) h.onUpdate(*previous, object);
    } else if (h.onAdd) {
      h.onAdd(object);
    }
  }
}

void Informer::setResourceVersion(const json& object) {
  const auto rv = object.value("metadata", json::object()).value("resourceVersion", "");
  if (rv.empty()) return;
  std::lock_guard lock(mutex_);
  resourceVersion_ = rv;
}

}  // namespace mka::kube
