#include "mka/kube/client.h"

#include <spdlog/spdlog.h>

#include "mka/common/json_fields.h"
#include "mka/kube/json_text.h"

namespace mka::kube {
namespace {

using nlohmann::json;

json parseBody(const Response& response, const std::string& what) {
  auto parsed = json::parse(response.body, nullptr, false);
  if (parsed.is_discarded()) throw ApiError(Reason::Unknown, response.status, what + ": the answer is not JSON");
  return parsed;
}

// parseBody's answer reduced to apiVersion, kind and metadata without managedFields. The
// parser's callback refuses the other members' keys and containers, so nothing inside them is
// built (only their scalars directly under a refused key are made, then dropped).
json parseMetadata(const Response& response, const std::string& what) {
  int skipFrom = 0;  // > 0: inside a refused member whose key was at this depth
  const json::parser_callback_t keep = [&skipFrom](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::key: {
        if (skipFrom > 0 && depth > skipFrom) return false;
        skipFrom = 0;
        const auto& key = parsed.get_ref<const std::string&>();
        const bool kept = depth == 1 ? key == "apiVersion" || key == "kind" || key == "metadata"
                                     : !(depth == 2 && key == "managedFields");
        if (!kept) skipFrom = depth;
        return kept;
      }
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: return skipFrom == 0 || depth < skipFrom;
      default: return true;
    }
  };
  auto parsed = json::parse(response.body, keep, false);
  if (parsed.is_discarded()) throw ApiError(Reason::Unknown, response.status, what + ": the answer is not JSON");
  return parsed;
}

// A write's answer is the written object; kube-apiserver renders it as PartialObjectMetadata when
// asked, as it does reads (client-go's metadata client asks so for its patches). JSON of the
// object last: a server without that rendering answers the object.
constexpr const char* kMetadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

std::string acceptFor(const WriteOptions& options) {
  return options.answer == WriteOptions::Answer::Object ? "application/json" : kMetadataOnly;
}

json parseAnswer(const Response& response, const std::string& what, const WriteOptions& options) {
  switch (options.answer) {
    case WriteOptions::Answer::Metadata: return parseMetadata(response, what);
    case WriteOptions::Answer::None: return nullptr;
    default: return parseBody(response, what);
  }
}

using json_fields::metadataString;

api::GroupVersionKind gvkOf(const json& object) {
  const auto apiVersion = object.value("apiVersion", "");
  const auto kind = object.value("kind", "");
  if (apiVersion.empty() || kind.empty())
    throw Error("the object has no apiVersion or kind: set both (e.g. apiVersion: tekton.dev/v1, kind: PipelineRun)");
  return api::GroupVersionKind::fromApiVersion(apiVersion, kind);
}

void appendQuery(std::string& target, const std::string& key, const std::string& value) {
  if (value.empty()) return;
  target += target.find('?') == std::string::npos ? '?' : '&';
  target += key + "=" + encodeQueryValue(value);
}

}  // namespace

std::string encodeQueryValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Discovery::Discovery(RestClient& rest) : rest_(rest) {}

ResourceInfo Discovery::resourceFor(const api::GroupVersionKind& gvk, std::stop_token stop) {
  const auto apiVersion = gvk.apiVersion();
  {
    std::lock_guard lock(mutex_);
    auto gv = byGroupVersion_.find(apiVersion);
    if (gv != byGroupVersion_.end()) {
      auto it = gv->second.find(gvk.kind);
      if (it != gv->second.end()) return it->second;
    }
  }
  // A miss refreshes that group-version: a CRD may have been installed since.
  const std::string path = gvk.group.empty() ? "/api/" + gvk.version : "/apis/" + apiVersion;
  std::map<std::string, ResourceInfo> kinds;
  try {
    auto list = parseBody(rest_.request("GET", path, "", "application/json", "application/json", stop), "GET " + path);
    std::map<std::string, bool> statusOf;
    for (const auto& r : list.value("resources", json::array())) {
      const auto name = r.value("name", "");
      const auto slash = name.find('/');
      if (slash != std::string::npos) {
        if (name.substr(slash + 1) == "status") statusOf[name.substr(0, slash)] = true;
        continue;
      }
      ResourceInfo info{api::GroupVersionKind{gvk.group, gvk.version, r.value("kind", "")}, name,
                        r.value("namespaced", true), false};
      kinds[info.gvk.kind] = info;
    }
    for (auto& [kind, info] : kinds) info.hasStatus = statusOf.contains(info.plural);
  } catch (const ApiError& e) {
    if (e.reason() != Reason::NotFound) throw;
  }
  std::lock_guard lock(mutex_);
  byGroupVersion_[apiVersion] = kinds;
  auto it = kinds.find(gvk.kind);
  if (it == kinds.end())
    throw ApiError(Reason::NotFound, 404,
                   "no matches for kind \"" + gvk.kind + "\" in version \"" + apiVersion +
                       "\": is the CRD installed on " +
                       (rest_.config().cluster.empty() ? rest_.config().host : rest_.config().cluster) + "?");
  return it->second;
}

void Discovery::invalidate() {
  std::lock_guard lock(mutex_);
  byGroupVersion_.clear();
}

Client::Client(std::shared_ptr<RestClient> rest) : rest_(std::move(rest)), discovery_(*rest_) {}

std::string Client::path(const ResourceInfo& resource, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string out = resource.gvk.group.empty() ? "/api/" + resource.gvk.version
                                               : "/apis/" + resource.gvk.group + "/" + resource.gvk.version;
  if (resource.namespaced && !ns.empty()) out += "/namespaces/" + ns;
  out += "/" + resource.plural;
  if (!name.empty()) out += "/" + name;
  if (!subresource.empty()) out += "/" + subresource;
  return out;
}

std::string Client::objectPath(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name,
                               const std::string& subresource) {
  const auto info = discovery_.resourceFor(gvk);
  if (info.namespaced && ns.empty() && !name.empty())
    throw Error(gvk.kind + " " + name + ": metadata.namespace is required: " + gvk.kind + " is namespaced");
  if (subresource == "status" && !info.hasStatus)
    throw Error(gvk.kind + " has no status subresource on " + rest_->config().host + ": write status with the object");
  return path(info, ns, name, subresource);
}

json Client::get(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name) {
  const auto target = objectPath(gvk, ns, name, "");
  return parseBody(rest_->request("GET", target), "GET " + target);
}

json Client::list(const api::GroupVersionKind& gvk, const std::string& ns, const ListOptions& options,
                  std::stop_token stop) {
  auto target = path(discovery_.resourceFor(gvk, stop), ns);
  appendQuery(target, "labelSelector", options.labelSelector);
  appendQuery(target, "fieldSelector", options.fieldSelector);
  if (options.limit > 0) appendQuery(target, "limit", std::to_string(options.limit));
  appendQuery(target, "continue", options.continueToken);
  appendQuery(target, "resourceVersion", options.resourceVersion);
  auto response = rest_->request("GET", target, "", "application/json", "application/json", stop);
  if (options.withoutManagedFields)
    response.body = json_text::withoutMember(response.body, {"items", "[]", "metadata", "managedFields"}, false);
  return parseBody(response, "GET " + target);
}

void Client::listEach(const api::GroupVersionKind& gvk, const std::string& ns, ListOptions options,
                      const std::function<void(json& item)>& onItem, std::string* resourceVersion,
                      std::stop_token stop) {
  while (true) {
    auto page = list(gvk, ns, options, stop);
    if (auto items = page.find("items"); items != page.end() && items->is_array()) {
      for (auto& item : *items) {
        // Lists may leave out each item's kind and apiVersion (built-ins do); informers want them.
        if (!item.contains("kind")) item["kind"] = gvk.kind;
        if (!item.contains("apiVersion")) item["apiVersion"] = gvk.apiVersion();
        onItem(item);
        item = json();  // free each item once seen
      }
    }
    const auto meta = page.value("metadata", json::object());
    options.continueToken = meta.value("continue", "");
    if (resourceVersion) *resourceVersion = meta.value("resourceVersion", "");
    if (options.continueToken.empty()) return;
    options.resourceVersion.clear();  // the token carries it
  }
}

std::vector<json> Client::listAll(const api::GroupVersionKind& gvk, const std::string& ns, ListOptions options,
                                  std::string* resourceVersion) {
  std::vector<json> items;
  listEach(
      gvk, ns, std::move(options), [&](json& item) { items.push_back(std::move(item)); }, resourceVersion);
  return items;
}

json Client::create(const json& object, const WriteOptions& options) {
  const auto gvk = gvkOf(object);
  auto target = path(discovery_.resourceFor(gvk), metadataString(object, "namespace"));
  appendQuery(target, "fieldManager", options.fieldManager);
  if (options.dryRun) appendQuery(target, "dryRun", "All");
  return parseAnswer(rest_->request("POST", target, object.dump(), "application/json", acceptFor(options)),
                     "POST " + target, options);
}

json Client::update(const json& object, const WriteOptions& options) {
  const auto gvk = gvkOf(object);
  auto target =
      objectPath(gvk, metadataString(object, "namespace"), metadataString(object, "name"), options.subresource);
  appendQuery(target, "fieldManager", options.fieldManager);
  if (options.dryRun) appendQuery(target, "dryRun", "All");
  return parseAnswer(rest_->request("PUT", target, object.dump(), "application/json", acceptFor(options)),
                     "PUT " + target, options);
}

json Client::patch(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name, PatchType type,
                   const json& patch, const WriteOptions& options) {
  auto target = objectPath(gvk, ns, name, options.subresource);
  appendQuery(target, "fieldManager", options.fieldManager);
  if (options.dryRun) appendQuery(target, "dryRun", "All");
  const char* contentType = type == PatchType::Merge ? "application/merge-patch+json" : "application/json-patch+json";
  return parseAnswer(rest_->request("PATCH", target, patch.dump(), contentType, acceptFor(options)), "PATCH " + target,
                     options);
}

json Client::apply(const json& object, const ApplyOptions& options) {
  if (options.fieldManager.empty())
    throw Error("server-side apply needs a field manager: set ApplyOptions.fieldManager to the controller's name");
  const auto gvk = gvkOf(object);
  auto target =
      objectPath(gvk, metadataString(object, "namespace"), metadataString(object, "name"), options.subresource);
  appendQuery(target, "fieldManager", options.fieldManager);
  if (options.force) appendQuery(target, "force", "true");
  // JSON is YAML: the apply content type takes either.
  return parseBody(rest_->request("PATCH", target, object.dump(), "application/apply-patch+yaml"), "PATCH " + target);
}

void Client::remove(const api::GroupVersionKind& gvk, const std::string& ns, const std::string& name,
                    const DeleteOptions& options) {
  const auto target = objectPath(gvk, ns, name, "");
  json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!options.propagationPolicy.empty()) body["propagationPolicy"] = options.propagationPolicy;
  if (options.uid) body["preconditions"]["uid"] = *options.uid;
  if (options.resourceVersion) body["preconditions"]["resourceVersion"] = *options.resourceVersion;
  rest_->request("DELETE", target, body.dump(), "application/json", kMetadataOnly);  // the answer is not read
}

void Client::watch(const api::GroupVersionKind& gvk, const std::string& ns, const WatchOptions& options,
                   const std::function<bool(WatchEvent&)>& onEvent, std::stop_token stop) {
  auto target = path(discovery_.resourceFor(gvk, stop), ns);
  appendQuery(target, "watch", "true");
  appendQuery(target, "labelSelector", options.labelSelector);
  appendQuery(target, "fieldSelector", options.fieldSelector);
  appendQuery(target, "resourceVersion", options.resourceVersion);
  if (options.allowBookmarks) appendQuery(target, "allowWatchBookmarks", "true");
  if (options.timeoutSeconds > 0) appendQuery(target, "timeoutSeconds", std::to_string(options.timeoutSeconds));
  const auto readTimeout = std::chrono::seconds{(options.timeoutSeconds > 0 ? options.timeoutSeconds : 1800) + 30};
  std::optional<ApiError> failure;
  rest_->stream(
      target,
      [&](std::string_view line) {
        auto parsed = options.withoutManagedFields
                          ? json::parse(json_text::withoutMember(line, {"object", "metadata", "managedFields"}, true),
                                        nullptr, false)
                          : json::parse(line, nullptr, false);
        if (!parsed.is_object()) {
          failure = ApiError(Reason::Unknown, 200, "GET " + target + ": a watch event is not JSON");
          return false;
        }
        WatchEvent event{parsed.value("type", ""), std::move(parsed["object"])};
        if (event.type == "ERROR") {
          const int code = event.object.is_object() ? event.object.value("code", 500) : 500;
          failure = ApiError::fromResponse(code, event.object.dump(), "GET " + target);
          return false;
        }
        return onEvent(event);
      },
      stop, readTimeout);
  if (failure) throw *failure;
}

}  // namespace mka::kube
