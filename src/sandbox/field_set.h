#pragma once
// Sets of field paths in the shape of metadata.managedFields[].fieldsV1, and the two ways
// server-side apply derives them from objects: the fields an applied configuration sets, and
// the fields one write added, changed or removed. Private to the sandbox's patch code.
//
// A path is a list of FieldsV1 elements from the root: "f:<field>" for a map field,
// "k:<JSON of the key fields>" for an item of a map list (`k:{"type":"Ready"}`), and
// "v:<JSON value>" for an item of a set list (`v:"x"`). Ownership is tracked at leaf granularity
// (scalars, atomic lists, set items, empty maps) plus the list items themselves (the "."
// entry of FieldsV1), which is what conflicts and pruning need.
//
// Threads: plain values, no shared state.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schema.h"

namespace mka::sandbox::fields {

using FieldPath = std::vector<std::string>;
// How the list at an object-key path (no list indices: {"status","conditions"}) merges.
using ListTypeOf = std::function<schema::ListType(const std::vector<std::string>& objectPath)>;

class FieldSet {
 public:
  static FieldSet fromFieldsV1(const nlohmann::json& fieldsV1);
  nlohmann::json toFieldsV1() const;

  bool empty() const { return !root_.member && root_.children.empty(); }
  void insert(const FieldPath& path);
  bool contains(const FieldPath& path) const;
  // True when `path` or anything below it is in the set.
  bool coversAtOrBelow(const FieldPath& path) const;
  void erase(const FieldPath& path);

  // Each says whether the set changed (a path added; a path removed).
  bool unite(const FieldSet& other);
  bool subtract(const FieldSet& other);  // exact paths only, as fieldpath.Set.Difference
  FieldSet intersection(const FieldSet& other) const;
  std::vector<FieldPath> members() const;  // in FieldsV1 key order

  bool operator==(const FieldSet& other) const = default;

 private:
  struct Node {
    bool member = false;
    std::map<std::string, Node> children;
    bool operator==(const Node&) const = default;
  };
  static void parse(const nlohmann::json& json, Node& node);
  static nlohmann::json render(const Node& node);
  static bool unite(Node& into, const Node& other);  // true when a path was added
  // True when `from` became empty; `removed` is set when a path was removed.
  static bool subtract(Node& from, const Node& other, bool& removed);
  static void intersect(const Node& a, const Node& b, Node& out);
  static void collect(const Node& node, FieldPath& prefix, std::vector<FieldPath>& out);

  Node root_;
};

// "f:spec"/"f:replicas" -> ".spec.replicas"; `k:{"type":"Ready"}` -> `[type="Ready"]`;
// `v:"x"` -> `[="x"]`: structured-merge-diff's spelling in conflict messages.
std::string pathString(const FieldPath& path);

// The FieldsV1 element naming `item` of a map list keyed by `keys`; throws ApiError (500, as
// kube-apiserver answers a malformed applied configuration) when a key field is missing.
std::string itemElement(const nlohmann::json& item, const std::vector<std::string>& keys, const std::string& where);

// The fields an applied configuration sets (ToFieldSet): leaves, map-list items with their
// fields, set items, atomic lists, empty maps and nulls.
FieldSet fieldsOf(const nlohmann::json& object, const ListTypeOf& listTypeOf);

struct Comparison {
  FieldSet added, modified, removed;
  bool empty() const { return added.empty() && modified.empty() && removed.empty(); }
};
// What changed from `before` to `after`. New maps and lists count as added themselves too
// (kube-apiserver's Update entries show them as ".").
Comparison compare(const nlohmann::json& before, const nlohmann::json& after, const ListTypeOf& listTypeOf);
// compare() of the top-level member `key` alone: the same result as compare() when the two
// objects are equal everywhere else (a status write changes status only), without walking the
// rest.
Comparison compareMember(const nlohmann::json& before, const nlohmann::json& after, const std::string& key,
                         const ListTypeOf& listTypeOf);

// Removes the fields kube-apiserver never tracks (apiVersion, kind, metadata.name, uid,
// resourceVersion, managedFields, ...).
void stripUntracked(FieldSet& set);

}  // namespace mka::sandbox::fields
