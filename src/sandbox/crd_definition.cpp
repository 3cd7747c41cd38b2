// Reading a CustomResourceDefinition the way apiextensions-apiserver validates and defaults it.

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/resource_registry.h"
#include "schema.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

const std::string kCrdKind = "CustomResourceDefinition.apiextensions.k8s.io";

std::string quoted(const std::string& s) { return json(s).dump(); }

using json_fields::stringMember;

// Collects field errors in kube-apiserver's wording ("Required value", "Invalid value: ...").
// Threads: lives for one parseCrd call on the calling thread.
class CrdReader {
 public:
  explicit CrdReader(const json& crd) : crd_(crd) {}

  void required(const std::string& path, const std::string& detail = "") {
    errors_.push_back({path, detail.empty() ? "Required value" : "Required value: " + detail, ""});
  }
  void invalid(const std::string& path, const json& value, const std::string& detail) {
    errors_.push_back({path, "Invalid value: " + value.dump() + ": " + detail, ""});
  }
  void unsupported(const std::string& path, const std::string& value, const std::string& supported) {
    errors_.push_back({path, "Unsupported value: " + quoted(value) + ": supported values: " + supported, ""});
  }
  void duplicate(const std::string& path, const std::string& value) {
    errors_.push_back({path, "Duplicate value: " + quoted(value), ""});
  }

  // The object at `path` (dotted, from the root), or an empty object when absent; a value of
  // another type is reported.
  const json& object(const json& parent, const std::string& key, const std::string& path) {
    static const json kEmpty = json::object();
    auto it = parent.is_object() ? parent.find(key) : parent.end();
    if (it == parent.end() || it->is_null()) return kEmpty;
    if (!it->is_object()) {
      invalid(path, *it, "must be an object");
      return kEmpty;
    }
    return *it;
  }
  std::string string(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.is_object() ? parent.find(key) : parent.end();
    if (it == parent.end() || it->is_null()) return "";
    if (!it->is_string()) {
      invalid(path, *it, "must be a string");
      return "";
    }
    return it->get<std::string>();
  }
  bool boolean(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return false;
    if (!it->is_boolean()) {
      invalid(path, *it, "must be a boolean");
      return false;
    }
    return it->get<bool>();
  }
  std::vector<std::string> strings(const json& parent, const std::string& key, const std::string& path) {
    std::vector<std::string> out;
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return out;
    if (!it->is_array()) {
      invalid(path, *it, "must be a list of strings");
      return out;
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        invalid(path + "[" + std::to_string(i) + "]", (*it)[i], "must be a string");
        continue;
      }
      out.push_back((*it)[i].get<std::string>());
    }
    return out;
  }

  ResourceType read();

 private:
  void readNames(ResourceType& type, const json& spec);
  void readVersions(ResourceType& type, const json& spec);
  void checkLabel(const std::string& path, const std::string& value);

  const json& crd_;
  FieldErrors errors_;
};

void CrdReader::checkLabel(const std::string& path, const std::string& value) {
  if (!validation::dns1123Label(value).empty()) {
    invalid(path, value,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
  }
}

void CrdReader::readNames(ResourceType& type, const json& spec) {
  const json& names = object(spec, "names", "spec.names");
  type.plural = string(names, "plural", "spec.names.plural");
  type.singular = string(names, "singular", "spec.names.singular");
  type.kind = string(names, "kind", "spec.names.kind");
  type.listKind = string(names, "listKind", "spec.names.listKind");
  type.shortNames = strings(names, "shortNames", "spec.names.shortNames");
  type.categories = strings(names, "categories", "spec.names.categories");

  if (type.plural.empty()) {
    required("spec.names.plural");
  } else {
    checkLabel("spec.names.plural", type.plural);
  }
  if (type.kind.empty()) required("spec.names.kind");
  if (type.singular.empty()) type.singular = strings::toLower(type.kind);
  if (!type.singular.empty()) checkLabel("spec.names.singular", type.singular);
  if (type.listKind.empty() && !type.kind.empty()) type.listKind = type.kind + "List";
  for (std::size_t i = 0; i < type.shortNames.size(); ++i) {
    checkLabel("spec.names.shortNames[" + std::to_string(i) + "]", type.shortNames[i]);
  }
}

void CrdReader::readVersions(ResourceType& type, const json& spec) {
  auto it = spec.find("versions");
  if (it == spec.end() || it->is_null() || (it->is_array() && it->empty())) {
    required("spec.versions", "must have exactly one version marked as storage version");
    return;
  }
  if (!it->is_array()) {
    invalid("spec.versions", *it, "must be a list of versions");
    return;
  }
  std::set<std::string> seen;
  std::vector<std::string> storage;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string path = "spec.versions[" + std::to_string(i) + "]";
    const json& entry = (*it)[i];
    if (!entry.is_object()) {
      invalid(path, entry, "must be an object");
      continue;
    }
    ResourceVersionInfo v;
    v.name = string(entry, "name", path + ".name");
    v.served = boolean(entry, "served", path + ".served");
    v.storage = boolean(entry, "storage", path + ".storage");
    if (v.name.empty()) {
      required(path + ".name");
    } else {
      checkLabel(path + ".name", v.name);
      if (!seen.insert(v.name).second) duplicate(path + ".name", v.name);
    }
    if (v.storage) storage.push_back(v.name);

    const json& schema =
        object(object(entry, "schema", path + ".schema"), "openAPIV3Schema", path + ".schema.openAPIV3Schema");
    if (schema.empty()) {
      required(path + ".schema.openAPIV3Schema", "schemas are required");
    } else if (!schema.contains("type")) {
      required(path + ".schema.openAPIV3Schema.type", "must not be empty at the root");
    } else if (schema["type"] != "object") {
      unsupported(path + ".schema.openAPIV3Schema.type",
                  schema["type"].is_string() ? schema["type"].get<std::string>() : schema["type"].dump(), "\"object\"");
    }
    v.schema = schema.empty() ? json(nullptr) : schema;
    if (!schema.empty()) v.compiled = schema::compile(schema, path + ".schema.openAPIV3Schema", errors_);

    const json& subresources = object(entry, "subresources", path + ".subresources");
    auto status = subresources.find("status");
    v.hasStatus = status != subresources.end() && !status->is_null();
    auto columns = entry.find("additionalPrinterColumns");
    if (columns != entry.end() && columns->is_array()) v.printerColumns = *columns;
    type.versions.push_back(std::move(v));
  }
  if (storage.size() != 1) {
    invalid("spec.versions", storage, "must have exactly one version marked as storage version");
  }
}

ResourceType CrdReader::read() {
  ResourceType type;
  type.builtin = false;
  const json& spec = object(crd_, "spec", "spec");
  type.group = string(spec, "group", "spec.group");
  if (type.group.empty()) {
    required("spec.group");
  } else if (type.group.find('.') == std::string::npos) {
    invalid("spec.group", type.group, "should be a domain with at least one dot");
  }
  readNames(type, spec);

  const std::string scope = string(spec, "scope", "spec.scope");
  if (scope.empty()) {
    required("spec.scope");
  } else if (scope != "Namespaced" && scope != "Cluster") {
    unsupported("spec.scope", scope, "\"Cluster\", \"Namespaced\"");
  }
  type.namespaced = scope != "Cluster";
  readVersions(type, spec);

  const json& metadata = object(crd_, "metadata", "metadata");
  const std::string name = string(metadata, "name", "metadata.name");
  if (name.empty()) {
    required("metadata.name", "name or generateName is required");
  } else if (!type.plural.empty() && !type.group.empty() && name != type.plural + "." + type.group) {
    invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group");
  }
  if (!errors_.empty()) throw ApiError::invalid(kCrdKind, name, errors_);
  return type;
}

json condition(const json& previous, const std::string& type, const std::string& reason, const std::string& message,
               const std::string& now) {
  std::string since = now;
  if (previous.is_object() && previous.contains("conditions") && previous["conditions"].is_array()) {
    for (const auto& c : previous["conditions"]) {
      if (c.is_object() && stringMember(c, "type") == type && stringMember(c, "status") == "True" &&
          !stringMember(c, "lastTransitionTime").empty()) {
        since = stringMember(c, "lastTransitionTime");
      }
    }
  }
  return {{"type", type}, {"status", "True"}, {"lastTransitionTime", since}, {"reason", reason}, {"message", message}};
}

}  // namespace

ResourceType parseCrd(const json& crd) {
  if (!crd.is_object()) {
    throw ApiError::invalid(kCrdKind, "", {{"", "Invalid value: " + crd.dump() + ": must be an object", ""}});
  }
  return CrdReader(crd).read();
}

std::shared_ptr<const ResourceType> readCrd(const json& crd) {
  if (!crd.is_object()) return std::make_shared<const ResourceType>(parseCrd(crd));
  static const json kNull;
  const auto metadata = crd.find("metadata");
  const auto specAt = crd.find("spec");
  const json& name =
      metadata != crd.end() && metadata->is_object() && metadata->contains("name") ? metadata->at("name") : kNull;
  const json& spec = specAt != crd.end() ? *specAt : kNull;
  // Hashing and comparing the spec costs a fraction of serialising it, which matters for
  // Kueue's Workload CRD (0.7 MB) in unoptimised sanitizer builds.
  const std::size_t hash = std::hash<json>{}(name)*31 + std::hash<json>{}(spec);

  struct Entry {
    json name, spec;
    std::shared_ptr<const ResourceType> type;
  };
  // Shared by every cluster of the process; the lock is held for lookups only, so two threads
  // reading the same new CRD may both compile it (both results are equal).
  static std::mutex mutex;
  static std::unordered_multimap<std::size_t, Entry> cache;
  constexpr std::size_t kMaxEntries = 256;
  {
    std::lock_guard lock(mutex);
    for (auto [it, end] = cache.equal_range(hash); it != end; ++it)
      if (it->second.name == name && it->second.spec == spec) return it->second.type;
  }
  auto type = std::make_shared<const ResourceType>(parseCrd(crd));
  std::lock_guard lock(mutex);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(hash, Entry{name, spec, type});
  return type;
}

json crdStatus(const json& crd, const std::string& now) { return crdStatus(*readCrd(crd), crd, now); }

json crdStatus(const ResourceType& type, const json& crd, const std::string& now) {
  const json previous = crd.contains("status") ? crd["status"] : json(nullptr);

  json accepted = {
      {"plural", type.plural}, {"singular", type.singular}, {"kind", type.kind}, {"listKind", type.listKind}};
  if (!type.shortNames.empty()) accepted["shortNames"] = type.shortNames;
  if (!type.categories.empty()) accepted["categories"] = type.categories;

  json stored = json::array();
  if (previous.is_object() && previous.contains("storedVersions") && previous["storedVersions"].is_array()) {
    for (const auto& v : previous["storedVersions"])
      if (v.is_string()) stored.push_back(v);
  }
  const std::string storage = type.storageVersion().name;
  if (std::find(stored.begin(), stored.end(), json(storage)) == stored.end()) stored.push_back(storage);

  return {{"acceptedNames", accepted},
          {"conditions", json::array({condition(previous, "NamesAccepted", "NoConflicts", "no conflicts found", now),
                                      condition(previous, "Established", "InitialNamesAccepted",
                                                "the initial names have been accepted", now)})},
          {"storedVersions", stored}};
}

}  // namespace mka::sandbox
