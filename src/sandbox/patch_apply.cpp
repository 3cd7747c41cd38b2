#include <map>
#include <string>
#include <vector>

#include "field_set.h"
#include "managed_fields.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"
#include "schema.h"

// Server-side apply, after structured-merge-diff's Updater.Apply, kept simple:
//   1. merge the applied configuration into the live object (maps recursively, map lists item
//      by key, set lists as a union, atomic lists and scalars replaced);
//   2. every other manager owning a field this changed is a conflict (409) unless force, which
//      moves the field to the applier;
//   3. the applier now owns exactly what it applied; what it applied last time and no longer
//      does is removed, unless some manager (any operation) still owns it or something below it;
//   4. managers lose the fields that the write removed.
// List order: live items keep their places, new items are appended (smd interleaves them by
// the applied order; no client in this project depends on that).

namespace mka::sandbox::patch {
namespace {

using fields::FieldPath;
using fields::FieldSet;
using fields::ListTypeOf;
using fields::ManagerEntry;
using nlohmann::json;

// Metadata an applied configuration cannot set: the API server's own bookkeeping.
constexpr const char* kServerMetadata[] = {
    "managedFields",     "resourceVersion",           "uid", "creationTimestamp", "generation", "selfLink",
    "deletionTimestamp", "deletionGracePeriodSeconds"};

json effectiveConfig(const json& applied, const ResourceVersionInfo& version, const std::string& subresource) {
  if (subresource == "status") {
    json only = json::object();
    if (auto it = applied.find("status"); it != applied.end()) only["status"] = *it;
    return only;
  }
  json config = applied;
  if (version.hasStatus) config.erase("status");
  if (auto meta = config.find("metadata"); meta != config.end() && meta->is_object()) {
    for (const char* field : kServerMetadata) meta->erase(field);
  }
  return config;
}

class Merger {
 public:
  explicit Merger(const ListTypeOf& listTypeOf) : listTypeOf_(listTypeOf) {}

  json merge(const json& live, const json& config) {
    std::vector<std::string> kp;
    return mergeValue(live, config, kp);
  }

 private:
  json mergeValue(const json& live, const json& config, std::vector<std::string>& kp) {
    if (config.is_object() && live.is_object()) {
      json out = live;
      for (const auto& [key, value] : config.items()) {
        if (value.is_null()) {
          out.erase(key);
          continue;
        }
        kp.push_back(key);
        auto old = out.find(key);
        out[key] = old == out.end() ? value : mergeValue(*old, value, kp);
        kp.pop_back();
      }
      return out;
    }
    if (config.is_array() && live.is_array()) return mergeList(live, config, kp);
    return config;
  }

  json mergeList(const json& live, const json& config, std::vector<std::string>& kp) {
    const auto type = listTypeOf_(kp);
    if (type.kind == schema::ListType::Kind::Set) {
      json out = live;
      for (const auto& item : config) {
        if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
      }
      return out;
    }
    if (type.kind != schema::ListType::Kind::Map) return config;
    json out = live;
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < out.size(); ++i) {
      try {
        at.emplace(fields::itemElement(out[i], type.mapKeys, ""), i);
      } catch (const ApiError&) {
        return config;  // a live list without keys cannot be merged by key: take the applied one
      }
    }
    for (const auto& item : config) {
      const auto element = fields::itemElement(item, type.mapKeys, "");
      if (auto it = at.find(element); it != at.end()) {
        out[it->second] = mergeValue(out[it->second], item, kp);
      } else {
        at.emplace(element, out.size());
        out.push_back(item);
      }
    }
    return out;
  }

  const ListTypeOf& listTypeOf_;
};

// ---- pruning -------------------------------------------------------------------------------

bool matchesElement(const json& item, const std::string& element) {
  const auto body = json::parse(element.substr(2), nullptr, false);
  if (element.starts_with("v:")) return item == body;
  if (!item.is_object() || !body.is_object()) return false;
  for (const auto& [k, v] : body.items()) {
    auto it = item.find(k);
    if (it == item.end() || *it != v) return false;
  }
  return true;
}

// The child of `node` named by a FieldsV1 element, or nullptr.
json* child(json& node, const std::string& element) {
  if (element.starts_with("f:")) {
    if (!node.is_object()) return nullptr;
    auto it = node.find(element.substr(2));
    return it == node.end() ? nullptr : &*it;
  }
  if (!node.is_array()) return nullptr;
  for (auto& item : node) {
    if (matchesElement(item, element)) return &item;
  }
  return nullptr;
}

json* find(json& root, const FieldPath& path, std::size_t count) {
  json* node = &root;
  for (std::size_t i = 0; i < count && node; ++i) node = child(*node, path[i]);
  return node;
}

void eraseChild(json& parent, const std::string& element) {
  if (element.starts_with("f:")) {
    if (parent.is_object()) parent.erase(element.substr(2));
    return;
  }
  if (!parent.is_array()) return;
  for (auto it = parent.begin(); it != parent.end(); ++it) {
    if (matchesElement(*it, element)) {
      parent.erase(it);
      return;
    }
  }
}

// A key field of a map-list item stays as long as the item does: it is the item's identity.
bool isKeyOfItem(const FieldPath& path) {
  if (path.size() < 2 || !path.back().starts_with("f:") || !path[path.size() - 2].starts_with("k:")) return false;
  const auto keys = json::parse(path[path.size() - 2].substr(2), nullptr, false);
  return keys.is_object() && keys.contains(path.back().substr(2));
}

// Removes what `applier` applied last time (`last`) that nobody owns any more (`kept`), and the
// maps and lists left empty by that.
void prune(json& object, const FieldSet& last, const FieldSet& kept) {
  for (const auto& path : last.members()) {
    if (path.empty() || kept.coversAtOrBelow(path) || isKeyOfItem(path)) continue;
    json* parent = find(object, path, path.size() - 1);
    if (!parent || !child(*parent, path.back())) continue;
    eraseChild(*parent, path.back());
    for (auto depth = path.size() - 1; depth > 0; --depth) {
      const FieldPath ancestor(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(depth));
      if (kept.coversAtOrBelow(ancestor)) break;
      json* node = find(object, ancestor, depth);
      if (!node || !(node->is_object() || node->is_array()) || !node->empty()) break;
      eraseChild(*find(object, ancestor, depth - 1), ancestor.back());
    }
  }
}

// ---- conflicts ------------------------------------------------------------------------------

struct Conflict {
  const ManagerEntry* manager;
  FieldPath path;
};

ApiError conflictError(const std::vector<Conflict>& conflicts) {
  json causes = json::array();
  for (const auto& c : conflicts) {
    causes.push_back({{"reason", "FieldManagerConflict"},
                      {"message", "conflict with " + c.manager->describe()},
                      {"field", fields::pathString(c.path)}});
  }
  std::string message;
  if (conflicts.size() == 1) {
    message = "Apply failed with 1 conflict: conflict with " + conflicts[0].manager->describe() + ": " +
              fields::pathString(conflicts[0].path);
  } else {
    // Grouped by manager, managers in the order of their identities, as kube-apiserver prints.
    std::map<std::string, std::vector<const Conflict*>> byManager;
    for (const auto& c : conflicts) byManager[c.manager->identity()].push_back(&c);
    std::string lines;
    for (const auto& [id, list] : byManager) {
      lines += (lines.empty() ? "" : "\n") + std::string("conflicts with ") + list.front()->manager->describe() + ":";
      for (const auto* c : list) lines += "\n- " + fields::pathString(c->path);
    }
    message = "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: " + lines;
  }
  return ApiError(409, "Conflict", message, json{{"causes", std::move(causes)}});
}

std::string gvkOf(const json& applied) {
  const std::string apiVersion = applied.value("apiVersion", "");
  return (apiVersion.find('/') == std::string::npos ? "/" : "") + apiVersion + ", Kind=" + applied.value("kind", "");
}

}  // namespace

nlohmann::json serverSideApply(const nlohmann::json& live, const nlohmann::json& applied,
                               const ResourceVersionInfo& version, const ApplyOptions& options) {
  if (options.manager.empty()) {
    throw ApiError::invalid("PatchOptions.meta.k8s.io", "",
                            {{"fieldManager", "Required value: is required for apply patch", ""}});
  }
  if (!applied.is_object()) throw ApiError::badRequest("the applied configuration must be an object");
  if (auto meta = applied.find("metadata"); meta != applied.end() && meta->is_object()) {
    // The server keeps this bookkeeping; an applier may not write it.
    if (auto managed = meta->find("managedFields"); managed != meta->end() && !managed->is_null()) {
      throw ApiError::badRequest("metadata.managedFields must be nil");
    }
  }
  const ListTypeOf listTypeOf = [&](const std::vector<std::string>& path) {
    return schema::listTypeAt(version.schema, path);
  };
  const json base = live.is_object() ? live : json::object();
  const json config = effectiveConfig(applied, version, options.subresource);

  FieldSet applying;
  json merged;
  try {
    applying = fields::fieldsOf(config, listTypeOf);
    merged = Merger(listTypeOf).merge(base, config);
  } catch (const ApiError& e) {
    throw ApiError(500, "", "failed to create typed patch object (" + gvkOf(applied) + "): " + e.what());
  }
  fields::stripUntracked(applying);

  const auto meta = base.find("metadata");
  auto entries = fields::decodeManagedFields(
      meta != base.end() && meta->is_object() ? meta->value("managedFields", json()) : json());
  if (entries.empty() && !base.empty()) {
    // An object nobody tracked yet belongs to "before-first-apply", so a first apply that
    // changes it still conflicts (kube-apiserver does the same).
    auto all = fields::compare(json::object(), base, listTypeOf).added;
    fields::stripUntracked(all);
    entries.push_back({"before-first-apply", "Update", options.apiVersion, "", "", std::move(all)});
  }
  const auto original = entries;

  ManagerEntry mine{options.manager, "Apply", options.apiVersion, "", options.subresource, {}};

  auto diff = fields::compare(base, merged, listTypeOf);
  auto changed = diff.added;
  changed.unite(diff.modified);
  fields::stripUntracked(changed);
  std::vector<Conflict> conflicts;
  std::vector<std::pair<ManagerEntry*, FieldSet>> taken;
  for (auto& e : entries) {
    if (e.sameManagerAs(mine)) continue;
    auto overlap = e.set.intersection(changed);
    if (overlap.empty()) continue;
    for (auto& path : overlap.members()) conflicts.push_back({&e, std::move(path)});
    taken.emplace_back(&e, std::move(overlap));
  }
  if (!conflicts.empty() && !options.force) throw conflictError(conflicts);
  for (auto& [entry, overlap] : taken) entry->set.subtract(overlap);

  ManagerEntry* me = nullptr;
  for (auto& e : entries) {
    if (e.sameManagerAs(mine)) me = &e;
  }
  if (!me) {
    entries.push_back(std::move(mine));
    me = &entries.back();
  }
  const FieldSet last = std::move(me->set);
  me->set = applying;

  FieldSet kept;
  for (const auto& e : entries) kept.unite(e.set);
  prune(merged, last, kept);

  const auto result = fields::compare(base, merged, listTypeOf);
  auto removed = result.removed;
  fields::stripUntracked(removed);
  for (auto& e : entries) {
    if (&e != me) e.set.subtract(removed);
  }

  bool setsChanged = entries.size() != original.size();
  for (std::size_t i = 0; !setsChanged && i < original.size(); ++i) setsChanged = !(entries[i].set == original[i].set);
  if (result.empty() && !setsChanged && live.is_object()) return live;  // a no-op keeps even the times

  me->time = options.time.empty() ? fields::nowRfc3339() : options.time;
  me->apiVersion = options.apiVersion;
  auto& mergedMeta = merged["metadata"];
  if (!mergedMeta.is_object()) mergedMeta = json::object();
  auto encoded = fields::encodeManagedFields(entries);
  if (encoded.empty()) {
    mergedMeta.erase("managedFields");
  } else {
    mergedMeta["managedFields"] = std::move(encoded);
  }
  return merged;
}

}  // namespace mka::sandbox::patch
