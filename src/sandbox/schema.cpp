#include "schema.h"

#include <set>

#include "schema_node.h"

namespace mka::sandbox::schema {
namespace {

using nlohmann::json;

// metav1.ObjectMeta's fields: kube-apiserver decodes metadata into that struct, so any other key
// under metadata is dropped whatever the CRD's schema says.
const std::set<std::string, std::less<>> kObjectMetaFields = {"name",
                                                              "generateName",
                                                              "namespace",
                                                              "selfLink",
                                                              "uid",
                                                              "resourceVersion",
                                                              "generation",
                                                              "creationTimestamp",
                                                              "deletionTimestamp",
                                                              "deletionGracePeriodSeconds",
                                                              "labels",
                                                              "annotations",
                                                              "ownerReferences",
                                                              "finalizers",
                                                              "managedFields"};

// Where pruning is, for naming what it removed ("spec.containers[0].bogus"); paths are built
// only when a caller asks for them.
struct PrunePath {
  std::vector<std::string>* removed = nullptr;
  std::vector<std::string> parts;  // "spec", ".containers", "[0]"

  void add(const std::string& key) const {
    if (!removed) return;
    std::string path;
    for (const auto& p : parts) path += p;
    removed->push_back(path.empty() ? key : path + "." + key);
  }
  void push(const std::string& key) {
    if (removed) parts.push_back(parts.empty() ? key : "." + key);
  }
  void pushIndex(std::size_t i) {
    if (removed) parts.push_back("[" + std::to_string(i) + "]");
  }
  void pop() {
    if (removed) parts.pop_back();
  }
};

void pruneValue(json& value, const json* schema, bool embeddedResource, PrunePath& path);

void pruneObjectMeta(json& metadata, PrunePath& path) {
  if (!metadata.is_object()) return;
  path.push("metadata");
  for (auto it = metadata.begin(); it != metadata.end();) {
    if (kObjectMetaFields.count(it.key())) {
      ++it;
    } else {
      path.add(it.key());
      it = metadata.erase(it);
    }
  }
  path.pop();
}

// Keeps what a (possibly absent) schema allows of an object, as structural pruning does.
void pruneObject(json& object, const json* schema, bool embeddedResource, PrunePath& path) {
  const json* properties = schema ? child(*schema, "properties") : nullptr;
  const json* additional = nullptr;
  bool keepUnknown = schema && flag(*schema, "x-kubernetes-preserve-unknown-fields");
  if (schema) {
    auto it = schema->find("additionalProperties");
    if (it != schema->end() && it->is_object()) additional = &*it;
    if (it != schema->end() && it->is_boolean() && it->get<bool>()) keepUnknown = true;
  }
  for (auto it = object.begin(); it != object.end();) {
    const std::string& key = it.key();
    if (embeddedResource && (key == "apiVersion" || key == "kind") && it->is_string()) {
      ++it;
      continue;
    }
    if (embeddedResource && key == "metadata") {
      pruneObjectMeta(*it, path);
      ++it;
      continue;
    }
    const json* property = nullptr;
    if (properties) {
      auto p = properties->find(key);
      if (p != properties->end() && p->is_object()) property = &*p;
    }
    if (property || additional) {
      path.push(key);
      pruneValue(*it, property ? property : additional, false, path);
      path.pop();
    } else if (!keepUnknown) {
      path.add(key);
      it = object.erase(it);
      continue;
    }
    ++it;
  }
}

void pruneValue(json& value, const json* schema, bool embeddedResource, PrunePath& path) {
  if (value.is_object()) {
    const bool embedded = embeddedResource || (schema && flag(*schema, "x-kubernetes-embedded-resource"));
    pruneObject(value, schema, embedded, path);
  } else if (value.is_array()) {
    // Without an items schema there is nothing to prune against: kube-apiserver keeps the items.
    const json* items = schema ? child(*schema, "items") : nullptr;
    if (!items) return;
    for (std::size_t i = 0; i < value.size(); ++i) {
      path.pushIndex(i);
      pruneValue(value[i], items, false, path);
      path.pop();
    }
  }
}

bool isNonNullableNull(const json& value, const json& schema) { return value.is_null() && !flag(schema, "nullable"); }

void defaultValue(json& value, const json& schema) {
  if (value.is_object()) {
    if (const json* properties = child(schema, "properties")) {
      for (const auto& [key, property] : properties->items()) {
        if (!property.is_object() || !property.contains("default")) continue;
        auto found = value.find(key);
        if (found == value.end() || isNonNullableNull(*found, property)) value[key] = property["default"];
      }
      for (auto& [key, field] : value.items()) {
        auto p = properties->find(key);
        if (p != properties->end() && p->is_object()) defaultValue(field, *p);
      }
      return;
    }
    if (const json* additional = child(schema, "additionalProperties")) {
      for (auto& [key, field] : value.items()) defaultValue(field, *additional);
    }
  } else if (value.is_array()) {
    if (const json* items = child(schema, "items")) {
      for (auto& item : value) defaultValue(item, *items);
    }
  }
}

ListType fromSchema(const json& list) {
  ListType out;
  auto type = list.find("x-kubernetes-list-type");
  if (type == list.end() || !type->is_string()) return out;
  if (*type == "set") out.kind = ListType::Kind::Set;
  if (*type == "map") {
    out.kind = ListType::Kind::Map;
    auto keys = list.find("x-kubernetes-list-map-keys");
    if (keys != list.end() && keys->is_array()) {
      for (const auto& k : *keys)
        if (k.is_string()) out.mapKeys.push_back(k.get<std::string>());
    }
  }
  return out;
}

}  // namespace

void prune(json& object, const json& schema, std::vector<std::string>* removed) {
  if (schema.is_null() || !object.is_object()) return;
  // The root is always a resource: apiVersion, kind and metadata are the API server's.
  PrunePath path{removed, {}};
  pruneObject(object, &schema, true, path);
}

void applyDefaults(json& object, const json& schema) {
  if (schema.is_object()) defaultValue(object, schema);
}

ListType listTypeAt(const json& schema, const std::vector<std::string>& path) {
  if (path.size() == 2 && path[0] == "metadata") {
    if (path[1] == "finalizers") return {ListType::Kind::Set, {}};
    if (path[1] == "ownerReferences") return {ListType::Kind::Map, {"uid"}};
    if (path[1] == "managedFields") return {};
  }
  const json* node = schema.is_object() ? &schema : nullptr;
  for (const auto& key : path) {
    if (!node) return {};
    // Lists of objects are walked through: {"spec","podSets","template"} passes podSets' items.
    while (const json* items = child(*node, "items")) node = items;
    const json* properties = child(*node, "properties");
    const json* next = nullptr;
    if (properties) {
      auto p = properties->find(key);
      if (p != properties->end() && p->is_object()) next = &*p;
    }
    if (!next) next = child(*node, "additionalProperties");
    node = next;
  }
  return node ? fromSchema(*node) : ListType{};
}

}  // namespace mka::sandbox::schema
