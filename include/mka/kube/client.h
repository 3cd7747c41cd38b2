#pragma once
// Unstructured access to any kind an API server serves, as client-go's dynamic client and
// discovery do: objects are nlohmann::json, kinds are resolved to their resource (plural,
// scope, status subresource) through discovery, cached and refreshed on a miss.
//
// Threads: any thread; Discovery's cache is guarded by its own lock. The calls that take a
// std::stop_token end soon after stop is requested on its source (see RestClient): a reader
// that stops (an informer) is not held by a request in flight or its retries.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/kube/rest_client.h"

namespace mka::kube {

struct ResourceInfo {
  api::GroupVersionKind gvk;
  std::string plural;
  bool namespaced = true;
  bool hasStatus = false;
};

class Discovery {
 public:
  explicit Discovery(RestClient& rest);
  // Throws ApiError NotFound `no matches for kind "X" in version "g/v"` when the server does
  // not serve it (after one refresh of that group-version); Cancelled when stop is requested
  // on `stop` during the refresh.
  ResourceInfo resourceFor(const api::GroupVersionKind& gvk, std::stop_token stop = {});
  void invalidate();

 private:
  RestClient& rest_;
  std::mutex mutex_;
  std::map<std::string, std::map<std::string, ResourceInfo>> byGroupVersion_;  // apiVersion -> kind -> info
};

// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay).
std::string encodeQueryValue(std::string_view value);

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::int64_t limit = 0;
  std::string continueToken;
  std::string resourceVersion;
  // Parse the items without metadata.managedFields: they are cut from the answer's text first
  // (json_text.h), which is much cheaper than parsing them and erasing them afterwards.
  bool withoutManagedFields = false;
};

struct WriteOptions {
  std::string fieldManager;
  bool dryRun = false;
  std::string subresource;  // "" or "status"
  // What the call returns of the server's answer (the written object). A controller's writes
  // answer several KB each, mostly unread, and parsing them costs CPU for every byte:
  // - Object: all of it;
  // - Metadata: apiVersion, kind and metadata without managedFields (for the new
  //   resourceVersion or uid). The server is asked for the metadata only (Accept:
  //   ...;as=PartialObjectMetadata, so apiVersion and kind are meta.k8s.io/v1
  //   PartialObjectMetadata); a server that answers the whole object anyway is read the same way;
  // - None: not parsed at all; the call returns null JSON (success is the 2xx status). The
  //   server is asked for the metadata only, which it serializes and sends instead of the object.
  enum class Answer { Object, Metadata, None };
  Answer answer = Answer::Object;
};

struct ApplyOptions {
  std::string fieldManager;  // required
  bool force = false;
  std::string subresource;
};

struct DeleteOptions {
  std::string propagationPolicy;                    // "" (server default), Background, Foreground, Orphan
  std::optional<std::string> uid, resourceVersion;  // preconditions
};

enum class PatchType { Merge, Json };

struct WatchOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;
  int timeoutSeconds = 0;  // 0: the server's default
  bool allowBookmarks = true;
  // Parse each event's object without metadata.managedFields, as ListOptions::withoutManagedFields.
  bool withoutManagedFields = false;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  nlohmann::json object;
};

class Client {
 public:
  explicit Client(std::shared_ptr<RestClient> rest);

  nlohmann::json get(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name);
  // One page (a <Kind>List).
  nlohmann::json list(const api::GroupVersionKind& gvk, const std::string& ns, const ListOptions& options = {},
                      std::stop_token stop = {});
  // Every page, following `continue`, item by item: a page is dropped once its items were seen,
  // so a large list never sits in memory whole. `resourceVersion` receives the list's revision.
  void listEach(const api::GroupVersionKind& gvk, const std::string& ns, ListOptions options,
                const std::function<void(nlohmann::json& item)>& onItem, std::string* resourceVersion = nullptr,
                std::stop_token stop = {});
  // Every page, following `continue`; `resourceVersion` receives the list's revision.
  std::vector<nlohmann::json> listAll(const api::GroupVersionKind& gvk, const std::string& ns, ListOptions options = {},
                                      std::string* resourceVersion = nullptr);
  nlohmann::json create(const nlohmann::json& object, const WriteOptions& options = {});
  // PUT, conditioned on the object's metadata.resourceVersion (409 Conflict when stale).
  nlohmann::json update(const nlohmann::json& object, const WriteOptions& options = {});
  nlohmann::json patch(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name, PatchType type,
                       const nlohmann::json& patch, const WriteOptions& options = {});
  // Server-side apply of `object` (its apiVersion, kind and metadata.name say where).
  nlohmann::json apply(const nlohmann::json& object, const ApplyOptions& options);
  void remove(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name,
              const DeleteOptions& options = {});

  // One watch request: `onEvent` gets every event until the stream ends (returns normally:
  // resume from the last resourceVersion seen), `onEvent` returns false, or stop is requested
  // on `stop` (returns normally too). Throws ApiError; a 410 (as an HTTP answer or an ERROR
  // event) is Reason::Gone.
  void watch(const api::GroupVersionKind& gvk, const std::string& ns, const WatchOptions& options,
             const std::function<bool(WatchEvent&)>& onEvent, std::stop_token stop = {});

  RestClient& rest() { return *rest_; }
  Discovery& discovery() { return discovery_; }

  // "/apis/g/v/namespaces/ns/plural[/name][/sub]" for a resolved kind.
  static std::string path(const ResourceInfo& resource, const std::string& ns, const std::string& name = "",
                          const std::string& subresource = "");

 private:
  std::string objectPath(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name,
                         const std::string& subresource);
  std::shared_ptr<RestClient> rest_;
  Discovery discovery_;
};

// client-go's retry.RetryOnConflict with retry.DefaultRetry (5 attempts, 10 ms apart): runs a
// read-modify-write `f` again while it fails with 409 Conflict; any other error, or the last
// conflict, propagates.
template <typename F>
auto retryOnConflict(F&& f, int attempts = 5) -> decltype(f()) {
  for (int attempt = 1;; ++attempt) {
    try {
      return f();
    } catch (const ApiError& e) {
      if (e.reason() != Reason::Conflict || attempt >= attempts) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
}

}  // namespace mka::kube
