#include "field_set.h"

#include <optional>
#include <set>

#include "mka/sandbox/api_error.h"

namespace mka::sandbox::fields {
namespace {

using nlohmann::json;

enum class Shape { Map, List, Scalar };
Shape shapeOf(const json& v) { return v.is_object() ? Shape::Map : v.is_array() ? Shape::List : Shape::Scalar; }

std::optional<std::string> tryItemElement(const json& item, const std::vector<std::string>& keys) {
  if (!item.is_object()) return std::nullopt;
  json fields = json::object();  // nlohmann sorts keys, as structured-merge-diff does
  for (const auto& k : keys) {
    auto it = item.find(k);
    if (it == item.end()) return std::nullopt;
    fields[k] = *it;
  }
  return "k:" + fields.dump();
}

std::string valueElement(const json& item) { return "v:" + item.dump(); }

// metadata.managedFields is the bookkeeping itself, never a tracked field: skipping it here
// spares callers a copy of each object without it.
bool isManagedFields(const std::vector<std::string>& kp, const std::string& key) {
  return kp.size() == 1 && kp[0] == "metadata" && key == "managedFields";
}

// Paths of the fields an applied configuration sets.
class ConfigWalker {
 public:
  explicit ConfigWalker(const ListTypeOf& listTypeOf) : listTypeOf_(listTypeOf) {}

  FieldSet walk(const json& object) {
    FieldPath fp;
    std::vector<std::string> kp;
    if (object.is_object()) walkMap(object, fp, kp);
    return std::move(set_);
  }

 private:
  void walkMap(const json& map, FieldPath& fp, std::vector<std::string>& kp) {
    for (const auto& [key, value] : map.items()) {
      if (isManagedFields(kp, key)) continue;
      fp.push_back("f:" + key);
      kp.push_back(key);
      if (value.is_null() || (value.is_object() && value.empty())) {
        set_.insert(fp);
      } else if (value.is_object()) {
        walkMap(value, fp, kp);
      } else if (value.is_array()) {
        walkList(value, fp, kp);
      } else {
        set_.insert(fp);
      }
      fp.pop_back();
      kp.pop_back();
    }
  }

  void walkList(const json& list, FieldPath& fp, std::vector<std::string>& kp) {
    const auto type = listTypeOf_(kp);
    switch (type.kind) {
      case schema::ListType::Kind::Atomic: set_.insert(fp); return;
      case schema::ListType::Kind::Set:
        for (const auto& item : list) {
          fp.push_back(valueElement(item));
          set_.insert(fp);
          fp.pop_back();
        }
        return;
      case schema::ListType::Kind::Map:
        for (std::size_t i = 0; i < list.size(); ++i) {
          fp.push_back(itemElement(list[i], type.mapKeys, pathString(fp) + ": element " + std::to_string(i)));
          set_.insert(fp);
          if (list[i].is_object()) walkMap(list[i], fp, kp);
          fp.pop_back();
        }
        return;
    }
  }

  const ListTypeOf& listTypeOf_;
  FieldSet set_;
};

// What one write changed.
class Comparer {
 public:
  explicit Comparer(const ListTypeOf& listTypeOf) : listTypeOf_(listTypeOf) {}

  Comparison run(const json& before, const json& after) {
    FieldPath fp;
    std::vector<std::string> kp;
    walk(before, after, fp, kp);
    return std::move(out_);
  }

  // walk() of two objects, for the one member `key`.
  Comparison runMember(const json& before, const json& after, const std::string& key) {
    FieldPath fp;
    std::vector<std::string> kp;
    const auto old = before.find(key);
    const auto now = after.find(key);
    const bool hadIt = old != before.end(), hasIt = now != after.end();
    if (hadIt && hasIt && *old == *now) return std::move(out_);
    descend(key, fp, kp, [&] {
      if (hadIt && hasIt) {
        walk(*old, *now, fp, kp);
      } else if (hasIt) {
        addAll(*now, fp, kp, out_.added);
      } else if (hadIt) {
        addAll(*old, fp, kp, out_.removed);
      }
    });
    return std::move(out_);
  }

 private:
  void walk(const json& b, const json& a, FieldPath& fp, std::vector<std::string>& kp) {
    if (shapeOf(b) != shapeOf(a)) {
      addAll(b, fp, kp, out_.removed);
      addAll(a, fp, kp, out_.added);
      return;
    }
    if (a.is_object()) {
      // Named references, not structured bindings, where a lambda uses them: clang 14 cannot
      // capture a structured binding.
      for (const auto& field : b.items()) {
        const auto& key = field.key();
        const auto& value = field.value();
        if (a.contains(key) || isManagedFields(kp, key)) continue;
        descend(key, fp, kp, [&] { addAll(value, fp, kp, out_.removed); });
      }
      for (const auto& field : a.items()) {
        const auto& key = field.key();
        const auto& value = field.value();
        if (isManagedFields(kp, key)) continue;
        auto old = b.find(key);
        // Most of an object is the same after a write (a status write leaves spec and metadata
        // alone): an equal field changed nothing, and comparing is cheaper than walking it.
        if (old != b.end() && *old == value) continue;
        descend(key, fp, kp, [&] {
          if (old == b.end()) {
            addAll(value, fp, kp, out_.added);
          } else {
            walk(*old, value, fp, kp);
          }
        });
      }
    } else if (a.is_array()) {
      walkList(b, a, fp, kp);
    } else if (a != b) {
      out_.modified.insert(fp);
    }
  }

  void walkList(const json& b, const json& a, FieldPath& fp, std::vector<std::string>& kp) {
    const auto type = listTypeOf_(kp);
    if (type.kind == schema::ListType::Kind::Set) {
      std::set<std::string> before, after;
      for (const auto& item : b) before.insert(valueElement(item));
      for (const auto& item : a) after.insert(valueElement(item));
      for (const auto& e : after) {
        if (!before.contains(e)) insertChild(out_.added, fp, e);
      }
      for (const auto& e : before) {
        if (!after.contains(e)) insertChild(out_.removed, fp, e);
      }
      return;
    }
    if (type.kind == schema::ListType::Kind::Map) {
      auto before = index(b, type.mapKeys);
      auto after = index(a, type.mapKeys);
      if (before && after) {
        for (const auto& [element, item] : *after) {
          fp.push_back(element);
          auto old = before->find(element);
          if (old == before->end()) {
            addAll(*item, fp, kp, out_.added, true);
          } else {
            walk(*old->second, *item, fp, kp);
          }
          fp.pop_back();
        }
        for (const auto& [element, item] : *before) {
          if (after->contains(element)) continue;
          fp.push_back(element);
          addAll(*item, fp, kp, out_.removed, true);
          fp.pop_back();
        }
        return;
      }
      // Items without their keys (or with duplicates) cannot be told apart: compare as atomic.
    }
    if (a != b) out_.modified.insert(fp);
  }

  // Every path of `value` at `fp`, containers included (a new map or list is owned as a whole
  // as well as through its fields).
  void addAll(const json& value, FieldPath& fp, std::vector<std::string>& kp, FieldSet& into, bool item = false) {
    if (!fp.empty()) into.insert(fp);
    if (value.is_object()) {
      for (const auto& field : value.items()) {
        const auto& key = field.key();
        const auto& child = field.value();
        if (isManagedFields(kp, key)) continue;
        descend(key, fp, kp, [&] { addAll(child, fp, kp, into); });
      }
    } else if (value.is_array() && !item) {
      const auto type = listTypeOf_(kp);
      if (type.kind == schema::ListType::Kind::Set) {
        for (const auto& v : value) insertChild(into, fp, valueElement(v));
      } else if (type.kind == schema::ListType::Kind::Map) {
        if (auto items = index(value, type.mapKeys)) {
          for (const auto& [element, child] : *items) {
            fp.push_back(element);
            addAll(*child, fp, kp, into, true);
            fp.pop_back();
          }
        }
      }
    }
  }

  template <typename F>
  static void descend(const std::string& key, FieldPath& fp, std::vector<std::string>& kp, F&& f) {
    fp.push_back("f:" + key);
    kp.push_back(key);
    f();
    fp.pop_back();
    kp.pop_back();
  }

  static void insertChild(FieldSet& into, FieldPath& fp, const std::string& element) {
    fp.push_back(element);
    into.insert(fp);
    fp.pop_back();
  }

  // Items of a map list by their FieldsV1 element; nullopt when keys are missing or repeat.
  static std::optional<std::map<std::string, const json*>> index(const json& list,
                                                                 const std::vector<std::string>& keys) {
    std::map<std::string, const json*> out;
    for (const auto& item : list) {
      auto element = tryItemElement(item, keys);
      if (!element || !out.emplace(*element, &item).second) return std::nullopt;
    }
    return out;
  }

  const ListTypeOf& listTypeOf_;
  Comparison out_;
};

}  // namespace

// ---- FieldSet ------------------------------------------------------------------------------

FieldSet FieldSet::fromFieldsV1(const nlohmann::json& fieldsV1) {
  FieldSet out;
  if (fieldsV1.is_object()) parse(fieldsV1, out.root_);
  return out;
}

void FieldSet::parse(const nlohmann::json& json, Node& node) {
  for (const auto& [key, value] : json.items()) {
    if (key == ".") {
      node.member = true;
      continue;
    }
    Node& child = node.children[key];
    if (!value.is_object() || value.empty()) {
      child.member = true;
    } else {
      parse(value, child);
    }
  }
}

nlohmann::json FieldSet::toFieldsV1() const { return render(root_); }

nlohmann::json FieldSet::render(const Node& node) {
  json out = json::object();
  if (node.member && !node.children.empty()) out["."] = json::object();
  for (const auto& [key, child] : node.children) out[key] = render(child);
  return out;
}

void FieldSet::insert(const FieldPath& path) {
  Node* node = &root_;
  for (const auto& element : path) node = &node->children[element];
  node->member = true;
}

bool FieldSet::contains(const FieldPath& path) const {
  const Node* node = &root_;
  for (const auto& element : path) {
    auto it = node->children.find(element);
    if (it == node->children.end()) return false;
    node = &it->second;
  }
  return node->member;
}

bool FieldSet::coversAtOrBelow(const FieldPath& path) const {
  const Node* node = &root_;
  for (const auto& element : path) {
    auto it = node->children.find(element);
    if (it == node->children.end()) return false;
    node = &it->second;
  }
  return node->member || !node->children.empty();
}

void FieldSet::erase(const FieldPath& path) {
  // subtract() with a set of one path, without building that set: down the path, then the
  // nodes it leaves empty are dropped on the way back up.
  std::vector<std::pair<Node*, std::map<std::string, Node>::iterator>> trail;
  Node* node = &root_;
  for (const auto& element : path) {
    auto it = node->children.find(element);
    if (it == node->children.end()) return;
    trail.emplace_back(node, it);
    node = &it->second;
  }
  node->member = false;
  for (auto step = trail.rbegin(); step != trail.rend(); ++step) {
    const Node& child = step->second->second;
    if (child.member || !child.children.empty()) break;
    step->first->children.erase(step->second);
  }
}

bool FieldSet::unite(const FieldSet& other) { return unite(root_, other.root_); }

bool FieldSet::unite(Node& into, const Node& other) {
  bool added = other.member && !into.member;
  into.member = into.member || other.member;
  for (const auto& [key, child] : other.children) added = unite(into.children[key], child) || added;
  return added;
}

bool FieldSet::subtract(const FieldSet& other) {
  bool removed = false;
  subtract(root_, other.root_, removed);
  return removed;
}

bool FieldSet::subtract(Node& from, const Node& other, bool& removed) {
  if (other.member && from.member) {
    from.member = false;
    removed = true;
  }
  for (const auto& [key, child] : other.children) {
    auto it = from.children.find(key);
    if (it != from.children.end() && subtract(it->second, child, removed)) from.children.erase(it);
  }
  return !from.member && from.children.empty();
}

FieldSet FieldSet::intersection(const FieldSet& other) const {
  FieldSet out;
  intersect(root_, other.root_, out.root_);
  return out;
}

void FieldSet::intersect(const Node& a, const Node& b, Node& out) {
  out.member = a.member && b.member;
  for (const auto& [key, child] : a.children) {
    auto it = b.children.find(key);
    if (it == b.children.end()) continue;
    Node sub;
    intersect(child, it->second, sub);
    if (sub.member || !sub.children.empty()) out.children.emplace(key, std::move(sub));
  }
}

std::vector<FieldPath> FieldSet::members() const {
  std::vector<FieldPath> out;
  FieldPath prefix;
  collect(root_, prefix, out);
  return out;
}

void FieldSet::collect(const Node& node, FieldPath& prefix, std::vector<FieldPath>& out) {
  if (node.member) out.push_back(prefix);
  for (const auto& [key, child] : node.children) {
    prefix.push_back(key);
    collect(child, prefix, out);
    prefix.pop_back();
  }
}

// ---- paths ---------------------------------------------------------------------------------

std::string pathString(const FieldPath& path) {
  std::string out;
  for (const auto& element : path) {
    const std::string body = element.size() >= 2 ? element.substr(2) : element;
    if (element.starts_with("f:")) {
      out += "." + body;
    } else if (element.starts_with("k:")) {
      const auto keys = json::parse(body, nullptr, false);
      std::string inner;
      if (keys.is_object()) {
        for (const auto& [k, v] : keys.items()) inner += (inner.empty() ? "" : ",") + k + "=" + v.dump();
      }
      out += "[" + inner + "]";
    } else if (element.starts_with("v:")) {
      out += "[=" + body + "]";
    } else if (element.starts_with("i:")) {
      out += "[" + body + "]";
    } else {
      out += element;
    }
  }
  return out;
}

std::string itemElement(const nlohmann::json& item, const std::vector<std::string>& keys, const std::string& where) {
  if (auto element = tryItemElement(item, keys)) return *element;
  if (!item.is_object()) throw ApiError(500, "", where + ": expected map, got " + item.type_name());
  std::string missing;
  for (const auto& k : keys) {
    if (!item.contains(k)) {
      missing = k;
      break;
    }
  }
  throw ApiError(500, "",
                 where + ": associative list with keys has an element that omits key field \"" + missing +
                     "\" (and doesn't have default value)");
}

FieldSet fieldsOf(const nlohmann::json& object, const ListTypeOf& listTypeOf) {
  return ConfigWalker(listTypeOf).walk(object);
}

Comparison compare(const nlohmann::json& before, const nlohmann::json& after, const ListTypeOf& listTypeOf) {
  // References, not `cond ? json::object() : before` (a prvalue: it copied both objects).
  static const json kNothing = json::object();
  return Comparer(listTypeOf).run(before.is_null() ? kNothing : before, after.is_null() ? kNothing : after);
}

Comparison compareMember(const nlohmann::json& before, const nlohmann::json& after, const std::string& key,
                         const ListTypeOf& listTypeOf) {
  static const json kNothing = json::object();
  const json& b = before.is_object() ? before : kNothing;
  const json& a = after.is_object() ? after : kNothing;
  return Comparer(listTypeOf).runMember(b, a, key);
}

void stripUntracked(FieldSet& set) {
  static const FieldPath kUntracked[] = {
      {"f:apiVersion"},
      {"f:kind"},
      {"f:metadata"},
      {"f:metadata", "f:name"},
      {"f:metadata", "f:namespace"},
      {"f:metadata", "f:creationTimestamp"},
      {"f:metadata", "f:selfLink"},
      {"f:metadata", "f:uid"},
      {"f:metadata", "f:clusterName"},
      {"f:metadata", "f:generation"},
      {"f:metadata", "f:managedFields"},
      {"f:metadata", "f:resourceVersion"},
  };
  for (const auto& path : kUntracked) set.erase(path);
}

}  // namespace mka::sandbox::fields
