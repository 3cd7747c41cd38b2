#include "mka/sandbox/cluster_api.h"

#include "ids.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <deque>
#include <mutex>
#include <random>
#include <set>

#include "builtin_types.h"
#include "match_conditions.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/sandbox/admission.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/garbage_collector.h"
#include "mka/sandbox/patch.h"
#include "mka/sandbox/selectors.h"
#include "mka/yaml/json.h"
#include "schema.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

constexpr std::string_view kCrdGroup = "apiextensions.k8s.io";
constexpr std::string_view kForegroundFinalizer = "foregroundDeletion";
constexpr std::string_view kOrphanFinalizer = "orphan";
// How often a write retries after a concurrent change when the client set no resourceVersion
// (kube-apiserver's GuaranteedUpdate retries the same way).
constexpr int kWriteAttempts = 16;

ApiError resourceNotFound() { return {404, "NotFound", "the server could not find the requested resource"}; }

std::string formatTime(Clock::TimePoint t) {
  const auto seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine;
}

// The alphabet and length of apiserver's generateName suffix (no vowels, no look-alikes).
std::string randomSuffix() {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<std::size_t> pick(0, kAlphabet.size() - 1);
  std::string out;
  for (int i = 0; i < 5; ++i) out += kAlphabet[pick(rng())];
  return out;
}

bool isCrd(const ResourceType& type) { return type.group == kCrdGroup && type.plural == "customresourcedefinitions"; }
bool isWebhookConfiguration(const ResourceType& type) {
  return type.builtin && type.group == "admissionregistration.k8s.io" &&
         (type.plural == "mutatingwebhookconfigurations" || type.plural == "validatingwebhookconfigurations");
}
bool isNamespace(const ResourceType& type) { return type.group.empty() && type.plural == "namespaces"; }

// metadata.generation exists for custom resources and CRDs (kinds with a spec); kube-apiserver
// leaves it unset on ConfigMaps, Secrets and the like.
bool tracksGeneration(const ResourceType& type) { return !type.builtin || isCrd(type); }

std::string stringAt(const json& object, const char* section, const char* field) {
  if (!object.is_object()) return {};
  auto s = object.find(section);
  if (s == object.end() || !s->is_object()) return {};
  auto f = s->find(field);
  return f != s->end() && f->is_string() ? f->get<std::string>() : std::string{};
}

json& metadataOf(json& object) {
  auto& meta = object["metadata"];
  if (!meta.is_object()) meta = json::object();
  return meta;
}

std::vector<std::string> finalizersOf(const json& object) {
  std::vector<std::string> out;
  if (!object.contains("metadata")) return out;
  const auto& meta = object["metadata"];
  if (!meta.is_object() || !meta.contains("finalizers") || !meta["finalizers"].is_array()) return out;
  for (const auto& f : meta["finalizers"])
    if (f.is_string()) out.push_back(f.get<std::string>());
  return out;
}

bool beingDeleted(const json& object) { return !stringAt(object, "metadata", "deletionTimestamp").empty(); }

std::optional<std::uint64_t> parseResourceVersion(const std::string& text, const char* where) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw ApiError::badRequest(std::string(where) + ": invalid resource version \"" + text +
                               "\": send the metadata.resourceVersion the server returned, or none");
  return value;
}

// A copy of a stored object for a status write: all but status and metadata.managedFields
// (often half of an object), which the write replaces.
json withoutStatusAndManagedFields(const json& object) {
  if (!object.is_object()) return object;
  json out = json::object();
  auto& members = out.get_ref<json::object_t&>();
  for (const auto& [key, value] : object.get_ref<const json::object_t&>()) {
    if (key == "status") continue;
    if (key != "metadata" || !value.is_object()) {
      members.emplace_hint(members.end(), key, value);
      continue;
    }
    json meta = json::object();
    auto& fields = meta.get_ref<json::object_t&>();
    for (const auto& [field, v] : value.get_ref<const json::object_t&>())
      if (field != "managedFields") fields.emplace_hint(fields.end(), field, v);
    members.emplace_hint(members.end(), key, std::move(meta));
  }
  return out;
}

// a == b, status first: most writes change it, and a difference there settles the question
// without walking metadata (managedFields) and spec.
bool sameObject(const json& a, const json& b) {
  if (a.is_object() && b.is_object()) {
    const auto sa = a.find("status");
    const auto sb = b.find("status");
    if ((sa == a.end()) != (sb == b.end())) return false;
    if (sa != a.end() && *sa != *sb) return false;
  }
  return a == b;
}

// Whether anything but metadata and status differs (what bumps metadata.generation), compared
// in place: copying both objects to drop those two would be a noticeable share of every write.
// Whether an update changes what metadata.generation counts: everything but metadata and
// status, or everything but metadata for a custom resource without a status subresource (its
// status is written like the rest: Argo's Workflows live this way).
bool generationChanges(const json& a, const json& b, bool statusCounts) {
  const auto skipped = [statusCounts](const std::string& key) {
    return key == "metadata" || (!statusCounts && key == "status");
  };
  const auto counted = [&](const json& object) {
    std::size_t n = 0;
    for (const auto& [key, value] : object.items())
      if (!skipped(key)) ++n;
    return n;
  };
  if (!a.is_object() || !b.is_object()) return a != b;
  for (const auto& [key, value] : a.items()) {
    if (skipped(key)) continue;
    const auto other = b.find(key);
    if (other == b.end() || *other != value) return true;
  }
  return counted(a) != counted(b);
}

std::string baseMediaType(const std::string& contentType) {
  auto semi = contentType.find(';');
  return strings::toLower(std::string(strings::trim(std::string_view(contentType).substr(0, semi))));
}

json parseJsonBody(const std::string& body, const char* what) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    throw ApiError::badRequest(std::string("error decoding ") + what + ": " + e.what() +
                               ": send a valid JSON document");
  }
}

// Metadata checks kube-apiserver makes on every kind (ValidateObjectMeta).
FieldErrors validateMetadata(const ResourceType& type, const json& object) {
  FieldErrors errors;
  const auto& meta = object.at("metadata");
  const std::string name = meta.value("name", "");
  if (name.empty()) {
    errors.push_back({"metadata.name", "Required value", "name or generateName is required"});
  } else {
    auto problems = isNamespace(type) ? validation::dns1123Label(name) : validation::dns1123Subdomain(name);
    for (const auto& p : problems) errors.push_back({"metadata.name", "Invalid value: \"" + name + "\"", p});
  }
  for (const char* field : {"labels", "annotations"}) {
    if (!meta.contains(field)) continue;
    const auto& map = meta[field];
    if (map.is_null()) continue;
    if (!map.is_object()) {
      errors.push_back({std::string("metadata.") + field, "Invalid value", "must be a map of strings"});
      continue;
    }
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string path = std::string("metadata.") + field;
      for (const auto& p : validation::qualifiedName(it.key()))
        errors.push_back({path, "Invalid value: \"" + it.key() + "\"", p});
      if (!it.value().is_string()) {
        errors.push_back({path + "." + it.key(), "Invalid value", "must be a string"});
      } else if (std::string_view(field) == "labels") {
        for (const auto& p : validation::labelValue(it.value().get<std::string>()))
          errors.push_back({path, "Invalid value: \"" + it.value().get<std::string>() + "\"", p});
      }
    }
  }
  // Finalizer names: qualified names (apimachinery, on the list), and for built-in kinds either
  // domain-qualified or one of Kubernetes' own (the core validation, on the entry).
  if (const auto f = meta.find("finalizers"); f != meta.end() && f->is_array()) {
    for (std::size_t i = 0; i < f->size(); ++i) {
      if (!(*f)[i].is_string()) continue;
      const auto& finalizer = (*f)[i].get_ref<const std::string&>();
      for (const auto& p : validation::qualifiedName(finalizer))
        errors.push_back({"metadata.finalizers", "Invalid value: " + json(finalizer).dump(), p});
      static const std::set<std::string, std::less<>> kStandard = {"kubernetes", "orphan", "foregroundDeletion"};
      if (type.builtin && finalizer.find('/') == std::string::npos && !kStandard.count(finalizer))
        errors.push_back({"metadata.finalizers[" + std::to_string(i) + "]", "Invalid value: " + json(finalizer).dump(),
                          "name is neither a standard finalizer name nor is it fully qualified"});
    }
  }
  // ConfigMap and Secret keys (ValidateConfigMap, ValidateSecret).
  if (type.builtin && type.group.empty() && (type.plural == "configmaps" || type.plural == "secrets")) {
    for (const char* field : {"data", "binaryData"}) {
      const auto d = object.find(field);
      if (d == object.end() || !d->is_object()) continue;
      for (const auto& [key, value] : d->items()) {
        for (const auto& p : validation::configMapKey(key))
          errors.push_back({std::string(field) + "[" + key + "]", "Invalid value: " + json(key).dump(), p});
      }
    }
  }
  return errors;
}

// Thrown by the store when another writer got there first; the write is retried.
struct ConcurrentChange {
  ApiError error;
};

}  // namespace

ClusterApi::ClusterApi(std::string clusterName, ResourceRegistry& registry, ObjectStore& store, const Clock& clock)
    : clusterName_(std::move(clusterName)), registry_(registry), store_(store), clock_(clock) {}

ClusterApi::~ClusterApi() = default;

std::string ClusterApi::now() const { return formatTime(clock_.now()); }

ResourceTypePtr ClusterApi::resolve(const ResourceRef& ref) const {
  auto type = registry_.find(ref.group, ref.version, ref.plural);
  if (!type) throw resourceNotFound();
  if (!type->namespaced && !ref.namespace_.empty()) throw resourceNotFound();
  if (type->namespaced && ref.namespace_.empty() && !ref.name.empty()) throw resourceNotFound();
  if (!ref.subresource.empty()) {
    const auto* version = type->version(ref.version);
    if (ref.subresource != "status" || !version || !version->hasStatus || ref.name.empty()) throw resourceNotFound();
  }
  return type;
}

namespace {

// What every write path shares: the type, the served version and the store key.
struct Target {
  ResourceTypePtr type;
  const ResourceVersionInfo* version;
  ObjectKey key;
  std::string apiVersion;
};

void setTypeMeta(json& object, const Target& t) {
  object["apiVersion"] = t.apiVersion;
  object["kind"] = t.type->kind;
}

// The client's apiVersion and kind must name the URL's (kube-apiserver decodes with them).
void checkTypeMeta(const json& object, const Target& t) {
  if (!object.is_object())
    throw ApiError::badRequest("the body of the request must be a JSON object (a " + t.type->kind + ")");
  if (auto av = object.find("apiVersion"); av != object.end() && !av->is_null() && *av != t.apiVersion)
    throw ApiError::badRequest("the API version in the data (" + av->dump() +
                               ") does not match the expected API version (" + t.apiVersion + ")");
  if (auto k = object.find("kind"); k != object.end() && !k->is_null() && *k != t.type->kind)
    throw ApiError::badRequest("the kind in the data (" + k->dump() + ") does not match the expected kind (" +
                               t.type->kind + ")");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reads

json ClusterApi::get(const ResourceRef& ref) const { return *getShared(ref); }

StoredObject ClusterApi::getShared(const ResourceRef& ref) const {
  auto type = resolve(ref);
  if (ref.name.empty()) throw resourceNotFound();
  auto object = store_.getShared({type->group, type->plural, type->namespaced ? ref.namespace_ : "", ref.name});
  if (!object) throw ApiError::notFound(type->qualifiedResource(), ref.name);
  auto apiVersion = apiVersionOf(type->group, ref.version);
  if (const auto stored = object->find("apiVersion"); stored != object->end() && *stored == apiVersion) return object;
  json copy = *object;
  copy["apiVersion"] = std::move(apiVersion);
  return std::make_shared<const json>(std::move(copy));
}

namespace {

ObjectStore::Filter makeFilter(const ResourceType& type, const ListOptions& options, const std::string& onlyName) {
  auto labels = LabelSelector::parse(options.labelSelector);
  auto fields = FieldSelector::parse(options.fieldSelector);
  for (const auto& f : fields.fields()) {
    const bool allowed = f == "metadata.name" || (type.namespaced && f == "metadata.namespace") ||
                         (type.group.empty() && type.plural == "secrets" && f == "type") ||
                         (type.group.empty() && type.plural == "namespaces" && f == "status.phase") ||
                         (type.plural == "events" &&
                          (f.starts_with("involvedObject.") || f == "reason" || f == "type" || f == "source"));
    if (!allowed) throw ApiError::badRequest("field label not supported: " + f);
  }
  if (labels.empty() && fields.empty() && onlyName.empty()) return nullptr;
  return [labels = std::move(labels), fields = std::move(fields), onlyName](const json& object) {
    if (!onlyName.empty() && stringAt(object, "metadata", "name") != onlyName) return false;
    // Pointers into the object: `cond ? object["metadata"] : json()` would copy it (a prvalue),
    // managedFields and all, for every event a watch looks at.
    static const json kNoLabels;
    const json* labelMap = &kNoLabels;
    if (const auto meta = object.find("metadata"); meta != object.end() && meta->is_object())
      if (const auto l = meta->find("labels"); l != meta->end()) labelMap = &*l;
    return labels.matches(*labelMap) && fields.matches(object);
  };
}

}  // namespace

namespace {

// kube-apiserver's reading of a list's resourceVersion and resourceVersionMatch: the revision
// to list at when it must be exact. A resourceVersion ahead of the store is 504 either way.
std::optional<std::uint64_t> listRevision(const ListOptions& options, std::uint64_t current) {
  const auto& rv = options.resourceVersion;
  const auto& match = options.resourceVersionMatch;
  FieldErrors causes;
  if (!match.empty() && match != "Exact" && match != "NotOlderThan")
    causes.push_back({"resourceVersionMatch", "Unsupported value: " + json(match).dump(),
                      "supported values: \"Exact\", \"NotOlderThan\""});
  if (!match.empty() && rv.empty())
    causes.push_back(
        {"resourceVersionMatch", "Forbidden", "resourceVersionMatch is forbidden unless resourceVersion is provided"});
  if (!match.empty() && !options.continueToken.empty())
    causes.push_back(
        {"resourceVersionMatch", "Forbidden", "resourceVersionMatch is forbidden when continue is provided"});
  if (match == "Exact" && rv == "0")
    causes.push_back(
        {"resourceVersionMatch", "Forbidden", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""});
  if (!causes.empty()) throw ApiError::invalid("ListOptions.meta.k8s.io", "", causes);
  if (rv.empty() || rv == "0" || !options.continueToken.empty()) return std::nullopt;
  const auto revision = parseResourceVersion(rv, "resourceVersion");
  if (!revision) return std::nullopt;
  if (match == "Exact") return revision;
  if (*revision > current) return revision;  // the store answers 504
  return std::nullopt;
}

}  // namespace

json ClusterApi::list(const ResourceRef& ref, const ListOptions& options) const {
  auto type = resolve(ref);
  auto filter = makeFilter(*type, options, "");
  auto result = store_.list(type->group, type->plural, type->namespaced ? ref.namespace_ : "", filter, options.limit,
                            options.continueToken, listRevision(options, store_.resourceVersion()));
  const auto gv = apiVersionOf(type->group, ref.version);
  json items = json::array();
  for (auto& item : result.items) {
    item["apiVersion"] = gv;
    items.push_back(std::move(item));
  }
  json meta = {{"resourceVersion", std::to_string(result.resourceVersion)}};
  if (!result.continueToken.empty()) meta["continue"] = result.continueToken;
  if (result.remainingItemCount >= 0) meta["remainingItemCount"] = result.remainingItemCount;
  return {{"apiVersion", gv}, {"kind", type->listKind}, {"metadata", std::move(meta)}, {"items", std::move(items)}};
}

namespace {

// Serves synthetic ADDED events for what exists, then the store's events from the list's
// revision on (a watch without a resourceVersion), and gives every object the requested
// apiVersion. Consumed by one thread; close() comes from any other (a server stopping, a
// fault dropping every watch), hence the lock around the initial events.
class ApiWatch final : public ObjectStore::Watch {
 public:
  ApiWatch(std::deque<WatchEvent> initial, std::unique_ptr<ObjectStore::Watch> inner, std::string apiVersion)
      : initial_(std::move(initial)), inner_(std::move(inner)), apiVersion_(std::move(apiVersion)) {}

  std::optional<WatchEvent> next(std::chrono::milliseconds timeout) override {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return std::nullopt;
      if (!initial_.empty()) {
        auto event = std::move(initial_.front());
        initial_.pop_front();
        return event;
      }
    }
    auto event = inner_->next(timeout);
    if (event && event->type != EventType::Error && event->type != EventType::Bookmark && event->object->is_object()) {
      // Copy on write: the stored object is shared, and usually has the requested version already.
      const auto current = event->object->find("apiVersion");
      if (current == event->object->end() || *current != apiVersion_) {
        auto converted = std::make_shared<json>(*event->object);
        (*converted)["apiVersion"] = apiVersion_;
        event->object = std::move(converted);
      }
    }
    return event;
  }
  bool closed() const override {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return true;
      if (!initial_.empty()) return false;
    }
    return inner_->closed();
  }
  void close() override {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      initial_.clear();
    }
    inner_->close();
  }

 private:
  mutable std::mutex mutex_;
  bool closed_ = false;
  std::deque<WatchEvent> initial_;
  std::unique_ptr<ObjectStore::Watch> inner_;
  std::string apiVersion_;
};

}  // namespace

std::unique_ptr<ObjectStore::Watch> ClusterApi::watch(const ResourceRef& ref, const ListOptions& options,
                                                      const std::string& resourceVersion,
                                                      const ObjectStore::WatchOptions& watchOptions) {
  auto type = resolve(ref);
  auto filter = makeFilter(*type, options, ref.name);
  const std::string ns = type->namespaced ? ref.namespace_ : "";
  const auto gv = apiVersionOf(type->group, ref.version);
  const auto from = parseResourceVersion(resourceVersion, "resourceVersion");
  std::deque<WatchEvent> initial;
  std::uint64_t start = from.value_or(0);
  if (start == 0) {
    auto existing = store_.list(type->group, type->plural, ns, filter);
    for (auto& item : existing.items) {
      item["apiVersion"] = gv;
      const auto rv = parseResourceVersion(stringAt(item, "metadata", "resourceVersion"), "stored object").value_or(0);
      initial.push_back({EventType::Added, rv, std::make_shared<const json>(std::move(item))});
    }
    start = existing.resourceVersion;
  }
  auto inner = store_.watch(type->group, type->plural, ns, start, std::move(filter), watchOptions);
  return std::make_unique<ApiWatch>(std::move(initial), std::move(inner), gv);
}

// ---------------------------------------------------------------------------------------------
// Writes

namespace {

Target target(const ClusterApi& api, const ResourceRef& ref) {
  auto type = api.resolve(ref);
  const auto* version = type->version(ref.version);
  if (!version) throw resourceNotFound();
  return {type,
          version,
          {type->group, type->plural, type->namespaced ? ref.namespace_ : "", ref.name},
          apiVersionOf(type->group, ref.version)};
}

// What decoding does to a body before anything else looks at it: a built-in kind is typed
// (detail::decodeBuiltin), a custom resource pruned and defaulted by its version's schema, and
// an unknown field dropped, refused with fieldValidation=Strict, or named in `warnings` (the
// default, Warn) as kube-apiserver does.
void applySchema(json& object, const Target& t, const std::string& fieldValidation,
                 std::vector<std::string>* warnings = nullptr) {
  const json* schema = nullptr;
  if (t.type->builtin) {
    schema = detail::builtinTypeSchema(*t.type);
    if (!schema) return;
    detail::decodeBuiltin(object, *t.type, *schema);
  } else if (!t.version->schema.is_null()) {
    schema = &t.version->schema;
  } else {
    return;
  }
  const bool strict = fieldValidation == "Strict";
  const bool warn = warnings && (fieldValidation.empty() || fieldValidation == "Warn");
  std::vector<std::string> unknown;
  schema::prune(object, *schema, strict || warn ? &unknown : nullptr);
  if (strict && !unknown.empty()) {
    std::vector<std::string> quoted;
    for (const auto& u : unknown) quoted.push_back("unknown field \"" + u + "\"");
    throw ApiError::badRequest("strict decoding error: " + strings::join(quoted, ", "));
  }
  if (warn)
    for (const auto& u : unknown) warnings->push_back("unknown field \"" + u + "\"");
  if (t.type->builtin) return;
  schema::applyDefaults(object, *schema);
  schema::pruneNulls(object, *schema);
}

// ObjectMeta's list and map fields are `omitempty` in Go: an empty one (a patch that removed the
// last finalizer, an update with `labels: {}`) is not stored and never read back.
void omitEmptyMetadata(json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return;
  for (const char* key : {"labels", "annotations", "finalizers", "ownerReferences"}) {
    auto it = meta->find(key);
    if (it != meta->end() && (it->is_null() || ((it->is_array() || it->is_object()) && it->empty()))) meta->erase(it);
  }
}

// What kube-apiserver checks before it stores an object: its metadata, a webhook
// configuration's matchConditions, and a custom resource against its version's schema and then
// its rules (`old` is the stored object on an update, null on create), all problems in one
// answer.
FieldErrors validateObject(const Target& t, const json& object, const json* old) {
  auto errors = validateMetadata(*t.type, object);
  if (isWebhookConfiguration(*t.type)) {
    auto conditionErrors = detail::validateMatchConditions(object, old != nullptr ? *old : json(nullptr));
    errors.insert(errors.end(), conditionErrors.begin(), conditionErrors.end());
  }
  if (!t.type->builtin && !t.version->schema.is_null()) {
    auto schemaErrors = schema::validate(object, t.version->schema, t.version->compiled.get());
    errors.insert(errors.end(), schemaErrors.begin(), schemaErrors.end());
    if (t.version->compiled) {
      if (schema::blocksRules(errors)) {
        errors.push_back(schema::rulesNotChecked());
      } else {
        auto ruleErrors = schema::validateRules(object, old, *t.version->compiled);
        errors.insert(errors.end(), ruleErrors.begin(), ruleErrors.end());
      }
    }
  }
  return errors;
}

std::string managerOf(const WriteOptions& options, const char* fallback) {
  return options.fieldManager.empty() ? std::string(fallback) : options.fieldManager;
}

}  // namespace

StoredObject ClusterApi::create(const ResourceRef& ref, json object, const WriteOptions& options) {
  if (!ref.name.empty() || !ref.subresource.empty()) {
    auto type = resolve(ref);
    throw ApiError::methodNotSupported(type->qualifiedResource(), "create");
  }
  auto t = target(*this, ref);
  checkTypeMeta(object, t);
  setTypeMeta(object, t);
  auto& meta = metadataOf(object);

  const std::string bodyNs = meta.value("namespace", "");
  if (t.type->namespaced) {
    if (ref.namespace_.empty())
      throw ApiError::badRequest("the namespace of the object is required: create " + t.type->plural +
                                 " under /namespaces/<namespace>/");
    if (!bodyNs.empty() && bodyNs != ref.namespace_)
      throw ApiError::badRequest(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    meta["namespace"] = ref.namespace_;
    auto ns = store_.get({"", "namespaces", "", ref.namespace_});
    if (!ns) throw ApiError::notFound("namespaces", ref.namespace_);
    if (beingDeleted(*ns))
      throw ApiError::forbidden(t.type->plural + " \"" + meta.value("name", meta.value("generateName", "")) +
                                "\" is forbidden: unable to create new content in namespace " + ref.namespace_ +
                                " because it is being terminated");
  } else {
    meta.erase("namespace");
  }
  if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_null() && meta["resourceVersion"] != "")
    throw ApiError::badRequest("resourceVersion should not be set on objects to be created");

  std::string name = meta.value("name", "");
  // apiserver's SimpleNameGenerator: the prefix cut to 58 characters, so that the name with its
  // 5-character suffix fits in 63.
  if (name.empty() && meta.value("generateName", "") != "")
    name = meta["generateName"].get<std::string>().substr(0, 58) + randomSuffix();
  if (!name.empty()) meta["name"] = name;
  meta["uid"] = detail::newUid();
  meta["creationTimestamp"] = now();
  meta.erase("resourceVersion");
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (tracksGeneration(*t.type)) {
    meta["generation"] = 1;
  } else {
    meta.erase("generation");
  }
  if (t.version->hasStatus && !isCrd(*t.type)) object.erase("status");
  if (isNamespace(*t.type)) {
    auto& labels = meta["labels"];
    if (!labels.is_object()) labels = json::object();
    labels["kubernetes.io/metadata.name"] = name;
    object["spec"] = {{"finalizers", {"kubernetes"}}};
    object["status"] = {{"phase", "Active"}};
  }
  applySchema(object, t, options.fieldValidation, options.warnings);
  t.key.name = name;

  if (admitting()) {
    AdmissionAttributes attributes{"CREATE",          t.type.get(), ref.version,    ref,
                                   std::move(object), nullptr,      options.dryRun, options.user};
    attributes.ref.name = name;
    object = admit_(attributes);
    setTypeMeta(object, t);
    applySchema(object, t, "");
  }
  omitEmptyMetadata(object);
  if (auto errors = validateObject(t, object, nullptr); !errors.empty())
    throw ApiError::invalid(t.type->qualifiedKind(), name, errors);
  ResourceTypePtr definedType;  // what a CRD defines; reading it gives a 422 naming a bad field
  if (isCrd(*t.type)) {
    definedType = readCrd(object);
    object["status"] = crdStatus(*definedType, object, now());
  }
  patch::UpdateOptions record{managerOf(options, "unknown"), t.apiVersion, "", &t.version->schema, now()};
  patch::recordUpdate(json(nullptr), object, record);
  if (options.dryRun) return std::make_shared<const json>(std::move(object));

  auto stored = store_.create(t.key, std::move(object));
  if (definedType) registry_.applyCrd(definedType);
  if (observer_) observer_(*t.type, *stored, false);
  log::debug("sandbox created", {{"cluster", clusterName_},
                                 {"resource", t.type->qualifiedResource()},
                                 {"namespace", t.key.namespace_},
                                 {"name", name},
                                 {"rv", stringAt(*stored, "metadata", "resourceVersion")}});
  return stored;
}

// The write shared by update and patch: `compute` builds the object the client wants from the
// current one; what follows is kube-apiserver's update path (subresource rules, server-managed
// metadata, generation, schema, managedFields, admission, finalizers) and a store write
// conditioned on the revision read, retried when someone else wrote in between.

StoredObject ClusterApi::update(const ResourceRef& ref, json object, const WriteOptions& options) {
  auto t = target(*this, ref);
  if (ref.name.empty()) throw ApiError::methodNotSupported(t.type->qualifiedResource(), "update");
  checkTypeMeta(object, t);
  static const json kNoMetadata;
  const auto metaAt = object.find("metadata");
  const json& meta = metaAt != object.end() && metaAt->is_object() ? *metaAt : kNoMetadata;  // no copy
  const std::string bodyName = meta.is_object() ? meta.value("name", "") : "";
  if (!bodyName.empty() && bodyName != ref.name)
    throw ApiError::badRequest("the name of the object (" + bodyName + ") does not match the name on the URL (" +
                               ref.name + ")");
  const std::string bodyNs = meta.is_object() ? meta.value("namespace", "") : "";
  if (t.type->namespaced && !bodyNs.empty() && bodyNs != ref.namespace_)
    throw ApiError::badRequest(
        "the namespace of the provided object does not match the namespace sent on the "
        "request");
  const auto precondition =
      parseResourceVersion(meta.is_object() ? meta.value("resourceVersion", "") : "", "metadata.resourceVersion");
  return writeLoop(ref, options, precondition, [&](const json* current) {
    if (!current) throw ApiError::notFound(t.type->qualifiedResource(), ref.name);
    return UpdatePlan{object, false};
  });
}

StoredObject ClusterApi::patch(const ResourceRef& ref, const std::string& contentType, const std::string& body,
                               const WriteOptions& options, bool* createdByApply) {
  auto t = target(*this, ref);
  if (ref.name.empty()) throw ApiError::methodNotSupported(t.type->qualifiedResource(), "patch");
  const auto media = baseMediaType(contentType);
  static const std::vector<std::string> kBuiltinTypes = {"application/json-patch+json", "application/merge-patch+json",
                                                         "application/strategic-merge-patch+json",
                                                         "application/apply-patch+yaml"};
  static const std::vector<std::string> kCustomTypes = {"application/json-patch+json", "application/merge-patch+json",
                                                        "application/apply-patch+yaml"};
  const auto& accepted = t.type->builtin ? kBuiltinTypes : kCustomTypes;
  if (std::find(accepted.begin(), accepted.end(), media) == accepted.end())
    throw ApiError::unsupportedMediaType(contentType, accepted);

  json patchDoc;
  if (media == "application/apply-patch+yaml") {
    if (options.fieldManager.empty())
      throw ApiError::badRequest(
          "PATCH, application/apply-patch+yaml requires the fieldManager query parameter: "
          "send ?fieldManager=<your controller's name>");
    std::vector<json> docs;
    try {
      docs = yaml::parseJson(body, yaml::Limits::forManifests());
    } catch (const Error& e) {
      throw ApiError::badRequest(std::string("error decoding YAML: ") + e.what());
    }
    if (docs.size() != 1 || !docs.front().is_object())
      throw ApiError::badRequest("an apply patch must be exactly one YAML or JSON object");
    patchDoc = std::move(docs.front());
    checkTypeMeta(patchDoc, t);
    if (!patchDoc.contains("apiVersion") || !patchDoc.contains("kind"))
      throw ApiError::badRequest("an apply patch must set apiVersion and kind (" + t.apiVersion + ", " + t.type->kind +
                                 ")");
    const auto name = stringAt(patchDoc, "metadata", "name");
    if (!name.empty() && name != ref.name)
      throw ApiError::badRequest("the name of the object (" + name + ") does not match the name on the URL (" +
                                 ref.name + ")");
  } else {
    patchDoc = parseJsonBody(body, "the patch");
    if (media == "application/json-patch+json" ? !patchDoc.is_array() : !patchDoc.is_object())
      throw ApiError::badRequest(media == "application/json-patch+json"
                                     ? "a JSON patch (application/json-patch+json) must be a JSON array of operations"
                                     : "a merge patch must be a JSON object");
  }
  // A resourceVersion in a merge or apply patch is a precondition, as in kube-apiserver.
  std::optional<std::uint64_t> precondition;
  if (patchDoc.is_object())
    precondition = parseResourceVersion(stringAt(patchDoc, "metadata", "resourceVersion"), "metadata.resourceVersion");

  if (media == "application/apply-patch+yaml") {
    // Apply to an absent object creates it.
    for (int attempt = 0;; ++attempt) {
      auto current = store_.get(t.key);
      if (current) break;
      if (!ref.subresource.empty()) throw ApiError::notFound(t.type->qualifiedResource(), ref.name);
      json live = json::object();
      patch::ApplyOptions apply{options.fieldManager, options.force, "", t.apiVersion, now()};
      json created = patch::serverSideApply(live, patchDoc, *t.version, apply);
      metadataOf(created)["name"] = ref.name;
      if (t.type->namespaced) metadataOf(created)["namespace"] = ref.namespace_;
      ResourceRef collection = ref;
      collection.name.clear();
      WriteOptions createOptions = options;
      try {
        auto stored = createWithManagedFields(collection, std::move(created), createOptions);
        if (createdByApply) *createdByApply = true;
        return stored;
      } catch (const ApiError& e) {
        if (e.code() != 409 || e.reason() != "AlreadyExists" || attempt >= kWriteAttempts) throw;
      }
    }
  }

  return writeLoop(ref, options, precondition, [&](const json* current) -> UpdatePlan {
    if (!current) throw ApiError::notFound(t.type->qualifiedResource(), ref.name);
    if (media == "application/merge-patch+json") return {patch::mergePatch(*current, patchDoc), false};
    if (media == "application/json-patch+json") return {patch::jsonPatch(*current, patchDoc), false};
    if (media == "application/strategic-merge-patch+json")
      return {patch::strategicMergePatch(*current, patchDoc), false};
    patch::ApplyOptions apply{options.fieldManager, options.force, ref.subresource, t.apiVersion, now()};
    return {patch::serverSideApply(*current, patchDoc, *t.version, apply), true};
  });
}

StoredObject ClusterApi::createWithManagedFields(const ResourceRef& ref, json object, const WriteOptions& options) {
  // create() records the creator as an Update manager; an apply-create keeps the Apply entry
  // server-side apply wrote instead.
  const json managed = object["metadata"].value("managedFields", json::array());
  auto created =
      create(ref, std::move(object), WriteOptions{options.dryRun, "", false, options.fieldValidation, options.user});
  const auto& createdMeta = created->at("metadata");
  if (createdMeta.value("managedFields", json::array()) == managed) return created;
  if (options.dryRun) {
    json answer = *created;
    answer["metadata"]["managedFields"] = managed;
    return std::make_shared<const json>(std::move(answer));
  }
  auto t = target(*this, ref);
  t.key.name = createdMeta.at("name").get<std::string>();
  auto rv = parseResourceVersion(createdMeta.value("resourceVersion", ""), "stored object");
  json fixed = *created;
  fixed["metadata"]["managedFields"] = managed;
  try {
    return store_.update(t.key, std::move(fixed), rv);
  } catch (const ApiError&) {
    return created;  // changed meanwhile: the other writer's managedFields are the truth now
  }
}

StoredObject ClusterApi::writeLoop(const ResourceRef& ref, const WriteOptions& options,
                                   std::optional<std::uint64_t> precondition, const PlanFunction& plan) {
  auto t = target(*this, ref);
  for (int attempt = 1;; ++attempt) {
    const auto current = store_.getShared(t.key);  // shared, not copied: plan and commit only read it
    auto planned = plan(current.get());
    try {
      return commitUpdate(t.type, *t.version, ref, current, std::move(planned.object), planned.managedFieldsDone,
                          precondition, options);
    } catch (const ConcurrentChange& change) {
      if (attempt >= kWriteAttempts) throw change.error;
    }
  }
}

StoredObject ClusterApi::commitUpdate(const ResourceTypePtr& type, const ResourceVersionInfo& version,
                                      const ResourceRef& ref, const StoredObject& stored, json incoming,
                                      bool managedFieldsDone, std::optional<std::uint64_t> precondition,
                                      const WriteOptions& options) {
  const json& current = *stored;
  const Target t{type,
                 &version,
                 {type->group, type->plural, type->namespaced ? ref.namespace_ : "", ref.name},
                 apiVersionOf(type->group, ref.version)};
  checkTypeMeta(incoming, t);
  const auto currentRv = parseResourceVersion(stringAt(current, "metadata", "resourceVersion"), "stored object");
  if (precondition && precondition != currentRv)
    throw ApiError::conflict(type->qualifiedResource(), ref.name,
                             "the object has been modified; please apply your changes to the latest version and try "
                             "again");
  if (const auto meta = incoming.find("metadata"); meta != incoming.end() && meta->is_object()) {
    // A patch may rename or move the object; kube-apiserver refuses it as it refuses such a body.
    const std::string name = meta->value("name", "");
    if (!name.empty() && name != ref.name)
      throw ApiError::badRequest("the name of the object (" + name + ") does not match the name on the URL (" +
                                 ref.name + ")");
    const std::string ns = meta->value("namespace", "");
    if (type->namespaced && !ns.empty() && ns != ref.namespace_)
      throw ApiError::badRequest("the namespace of the object (" + ns +
                                 ") does not match the namespace on the request (" + ref.namespace_ + ")");
    // The uid a client sends is a precondition (kube-apiserver's defaultUpdatedObjectInfo),
    // checked by the storage layer, whose error the 409 wraps.
    const std::string uid = meta->value("uid", "");
    const std::string storedUid = stringAt(current, "metadata", "uid");
    if (!uid.empty() && uid != storedUid) {
      std::string key = "/registry/" + (type->group.empty() ? "" : type->group + "/") + type->plural + "/" +
                        (type->namespaced ? ref.namespace_ + "/" : "") + ref.name;
      throw ApiError::conflict(
          type->qualifiedResource(), ref.name,
          "StorageError: invalid object, Code: 4, Key: " + key +
              ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: " + uid +
              ", UID in object meta: " + storedUid);
    }
  }
  setTypeMeta(incoming, t);
  json next;
  if (ref.subresource == "status") {
    // Status writes change status (and managedFields) only. Neither is copied from the stored
    // object: status comes from the body, managedFields from the body or recordUpdate.
    next = withoutStatusAndManagedFields(current);
    if (auto status = incoming.find("status"); status != incoming.end()) next["status"] = std::move(*status);
    if (auto meta = incoming.find("metadata"); meta != incoming.end() && meta->is_object())
      if (auto managed = meta->find("managedFields"); managed != meta->end())
        metadataOf(next)["managedFields"] = std::move(*managed);
  } else {
    next = std::move(incoming);
    if (version.hasStatus && !isCrd(*type)) {
      if (current.contains("status")) {
        next["status"] = current["status"];
      } else {
        next.erase("status");
      }
    }
    auto& meta = metadataOf(next);
    const auto& old = current["metadata"];
    for (const char* field : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                              "generation", "name", "namespace"}) {
      if (old.contains(field)) {
        meta[field] = old[field];
      } else {
        meta.erase(field);
      }
    }
    if (meta.contains("generateName") && meta["generateName"].is_null()) meta.erase("generateName");
  }
  metadataOf(next)["resourceVersion"] = current["metadata"].value("resourceVersion", "");
  applySchema(next, t, ref.subresource.empty() ? options.fieldValidation : "", options.warnings);
  if (isNamespace(*type) && ref.subresource.empty()) {
    auto& labels = metadataOf(next)["labels"];
    if (!labels.is_object()) labels = json::object();
    labels["kubernetes.io/metadata.name"] = ref.name;
  }

  bool admitted = false;
  if (admitting()) {
    AdmissionAttributes attributes{"UPDATE",        type.get(), ref.version,    ref,
                                   std::move(next), current,    options.dryRun, options.user};
    next = admit_(attributes);
    setTypeMeta(next, t);
    applySchema(next, t, "");
    admitted = true;
  }
  // A status write leaves all but status and managedFields as stored (unless a webhook changed
  // more): the generation stays, and managedFields need only compare status.
  const bool statusOnly = ref.subresource == "status" && !admitted && !isCrd(*type);
  if (tracksGeneration(*type) && !statusOnly) {
    const auto generation = current["metadata"].value("generation", std::int64_t{1});
    const bool statusCounts = !t.version->hasStatus && !isCrd(*type);
    metadataOf(next)["generation"] = generationChanges(next, current, statusCounts) ? generation + 1 : generation;
  }
  if (beingDeleted(current)) {
    const auto before = finalizersOf(current);
    std::vector<std::string> added;
    for (const auto& f : finalizersOf(next))
      if (std::find(before.begin(), before.end(), f) == before.end()) added.push_back("\"" + f + "\"");
    if (!added.empty())
      throw ApiError::invalid(type->qualifiedKind(), ref.name,
                              FieldErrors{{"metadata.finalizers", "Forbidden",
                                           "no new finalizers can be added if the object is being deleted, found new "
                                           "finalizers []string{" +
                                               strings::join(added, ", ") + "}"}});
  }
  omitEmptyMetadata(next);
  if (auto errors = validateObject(t, next, &current); !errors.empty())
    throw ApiError::invalid(type->qualifiedKind(), ref.name, errors);
  ResourceTypePtr definedType;  // as in create
  if (isCrd(*type)) {
    definedType = readCrd(next);
    next["status"] = crdStatus(*definedType, next, now());
  }
  if (!managedFieldsDone) {
    patch::UpdateOptions record{managerOf(options, "unknown"), t.apiVersion, ref.subresource, &version.schema, now()};
    if (statusOnly) record.onlyChanged = "status";
    patch::recordUpdate(current, next, record);
  }
  if (sameObject(next, current)) return stored;  // a no-op write stores nothing and keeps the resourceVersion
  if (options.dryRun) return std::make_shared<const json>(std::move(next));

  // The last finalizer of an object being deleted is gone: the deletion completes.
  if (beingDeleted(next) && finalizersOf(next).empty()) {
    try {
      store_.remove(t.key, currentRv);
    } catch (const ApiError& e) {
      if (e.code() == 409 || e.code() == 404) throw ConcurrentChange{e};
      throw;
    }
    afterRemoval(*type, next, "");
    return std::make_shared<const json>(std::move(next));
  }
  try {
    auto written = store_.update(t.key, std::move(next), currentRv);
    if (definedType) registry_.applyCrd(definedType);
    if (observer_) observer_(*type, *written, false);
    return written;
  } catch (const ApiError& e) {
    if (e.code() == 409 || e.code() == 404) throw ConcurrentChange{e};
    throw;
  }
}

// ---------------------------------------------------------------------------------------------
// Delete

json ClusterApi::removeCollection(const ResourceRef& ref, const ListOptions& selection, const DeleteOptions& options) {
  auto type = resolve(ref);
  if (!ref.name.empty() || !ref.subresource.empty() ||
      std::find(type->verbs.begin(), type->verbs.end(), "deletecollection") == type->verbs.end())
    throw ApiError::methodNotSupported(type->qualifiedResource(), "deletecollection");
  ListOptions all = selection;
  all.limit = 0;
  all.continueToken.clear();
  json listed = list(ref, all);
  json deleted = json::array();
  for (auto& item : listed["items"]) {
    ResourceRef one = ref;
    one.name = stringAt(item, "metadata", "name");
    if (type->namespaced) one.namespace_ = stringAt(item, "metadata", "namespace");
    try {
      auto after = remove(one, options);
      deleted.push_back(after->value("kind", "") == "Status" ? std::move(item) : *after);
    } catch (const ApiError& e) {
      if (e.code() != 404) throw;  // deleted by someone else meanwhile
    }
  }
  listed["items"] = std::move(deleted);
  listed["metadata"] = {{"resourceVersion", std::to_string(store_.resourceVersion())}};
  return listed;
}

StoredObject ClusterApi::remove(const ResourceRef& ref, const DeleteOptions& options) {
  auto t = target(*this, ref);
  if (ref.name.empty() || !ref.subresource.empty())
    throw ApiError::methodNotSupported(t.type->qualifiedResource(), "delete");
  const auto& policy = options.propagationPolicy;
  if (!policy.empty() && policy != "Orphan" && policy != "Background" && policy != "Foreground")
    throw ApiError::badRequest("propagationPolicy: Unsupported value: \"" + policy +
                               "\": supported values: \"Background\", \"Foreground\", \"Orphan\"");
  for (int attempt = 1;; ++attempt) {
    const auto current = store_.getShared(t.key);
    if (!current) throw ApiError::notFound(t.type->qualifiedResource(), ref.name);
    static const json kNoMetadata = json::object();
    const auto metaAt = current->find("metadata");
    const json& meta = metaAt != current->end() && metaAt->is_object() ? *metaAt : kNoMetadata;
    if (options.preconditionUid && *options.preconditionUid != meta.value("uid", ""))
      throw ApiError::conflict(t.type->qualifiedResource(), ref.name,
                               "Precondition failed: UID in precondition: " + *options.preconditionUid +
                                   ", UID in object meta: " + meta.value("uid", ""));
    if (options.preconditionResourceVersion &&
        *options.preconditionResourceVersion != meta.value("resourceVersion", ""))
      throw ApiError::conflict(
          t.type->qualifiedResource(), ref.name,
          "Precondition failed: ResourceVersion in precondition: " + *options.preconditionResourceVersion +
              ", ResourceVersion in object meta: " + meta.value("resourceVersion", ""));
    if (admitting()) {
      AdmissionAttributes attributes{"DELETE", t.type.get(), ref.version,    ref,
                                     nullptr,  *current,     options.dryRun, options.user};
      admit_(attributes);
    }
    const auto currentRv = parseResourceVersion(meta.value("resourceVersion", ""), "stored object");

    // Finalizers (and foreground deletion, and a namespace's content) keep the object: it only
    // gets a deletionTimestamp now and goes once they are removed.
    auto finalizers = finalizersOf(*current);
    bool finalizerAdded = false;
    auto addFinalizer = [&](std::string_view f) {
      if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end()) {
        finalizers.emplace_back(f);
        finalizerAdded = true;
      }
    };
    if (!beingDeleted(*current)) {
      if (policy == "Foreground") addFinalizer(kForegroundFinalizer);
      if (policy == "Orphan") addFinalizer(kOrphanFinalizer);
    }
    const bool namespaceContent = isNamespace(*t.type);
    if (!finalizers.empty() || namespaceContent) {
      json next = *current;  // a copy only for the object that stays
      auto& nextMeta = metadataOf(next);
      if (finalizerAdded) nextMeta["finalizers"] = finalizers;
      if (beingDeleted(*current) && next == *current) return current;
      if (!beingDeleted(*current)) {
        nextMeta["deletionTimestamp"] = now();
        nextMeta["deletionGracePeriodSeconds"] = 0;
      }
      if (namespaceContent) next["status"]["phase"] = "Terminating";
      if (options.dryRun) return std::make_shared<const json>(std::move(next));
      try {
        auto stored = store_.update(t.key, std::move(next), currentRv);
        if (gc_) {
          if (namespaceContent) gc_->namespaceDeleted(ref.name);
          if (std::find(finalizers.begin(), finalizers.end(), kForegroundFinalizer) != finalizers.end() ||
              std::find(finalizers.begin(), finalizers.end(), kOrphanFinalizer) != finalizers.end())
            gc_->ownerDeleting(t.key, meta.value("uid", ""));
        }
        return stored;
      } catch (const ApiError& e) {
        if ((e.code() != 409 && e.code() != 404) || attempt >= kWriteAttempts) throw;
        continue;
      }
    }
    if (options.dryRun) return current;
    try {
      store_.remove(t.key, currentRv);
    } catch (const ApiError& e) {
      if ((e.code() != 409 && e.code() != 404) || attempt >= kWriteAttempts) throw;
      continue;
    }
    afterRemoval(*t.type, *current, policy);
    json details = {{"name", ref.name}, {"kind", t.type->plural}, {"uid", meta.value("uid", "")}};
    if (!t.type->group.empty()) details["group"] = t.type->group;
    return std::make_shared<const json>(json{{"kind", "Status"},
                                             {"apiVersion", "v1"},
                                             {"metadata", json::object()},
                                             {"status", "Success"},
                                             {"details", std::move(details)}});
  }
}

void ClusterApi::afterRemoval(const ResourceType& type, const json& removed, const std::string& policy) {
  const auto uid = stringAt(removed, "metadata", "uid");
  if (isCrd(type)) {
    // Deleting a CRD deletes its objects and stops serving the resource.
    try {
      const auto defined = readCrd(removed);
      for (auto& [key, object] : store_.snapshot()) {
        if (key.group != defined->group || key.plural != defined->plural) continue;
        try {
          store_.remove(key);
        } catch (const ApiError&) {
          // removed meanwhile
        }
      }
      registry_.removeCrd(defined->group, defined->plural);
    } catch (const ApiError& e) {
      log::warn("sandbox could not unregister a deleted CRD",
                {{"cluster", clusterName_}, {"name", stringAt(removed, "metadata", "name")}, {"error", e.what()}});
    }
  }
  if (gc_ && !uid.empty()) gc_->ownerDeleted(uid, policy.empty() ? "Background" : policy);
  if (observer_) observer_(type, removed, true);
}

}  // namespace mka::sandbox
