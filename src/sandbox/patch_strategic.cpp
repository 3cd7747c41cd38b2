#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

// Strategic merge patch for the built-in kinds the sandbox serves. Kubernetes derives the list
// strategies from Go struct tags (patchStrategy/patchMergeKey); the sandbox has no Go types,
// so the few lists that merge are named here. Every other list is replaced, like a merge patch.
//
// Directives: `$patch: replace|delete|merge` on maps and list items, `$deleteFromPrimitiveList/
// <field>` and `$retainKeys` are honoured; `$setElementOrder/<field>` is accepted and dropped
// (items keep the order of the live list, new ones are appended).

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;
using Path = std::vector<std::string>;

struct ListStrategy {
  enum class Kind { Replace, MergeByKey, MergePrimitives };
  Kind kind = Kind::Replace;
  std::string key;
};

// The patchStrategy/patchMergeKey tags of the served built-ins, by kind and field path.
ListStrategy strategyFor(const std::string& kind, const Path& path) {
  using K = ListStrategy::Kind;
  if (path == Path{"metadata", "ownerReferences"}) return {K::MergeByKey, "uid"};
  if (path == Path{"metadata", "finalizers"}) return {K::MergePrimitives, ""};
  if ((kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration") &&
      path == Path{"webhooks"}) {
    return {K::MergeByKey, "name"};
  }
  if (kind == "Service" && path == Path{"spec", "ports"}) return {K::MergeByKey, "port"};
  if ((kind == "Service" || kind == "Namespace") && path == Path{"status", "conditions"}) {
    return {K::MergeByKey, "type"};
  }
  return {};
}

bool isDirective(std::string_view key) { return key.starts_with("$"); }

class StrategicMerger {
 public:
  explicit StrategicMerger(std::string kind) : kind_(std::move(kind)) {}

  // Merges `patch` into `target` (both maps); nullopt when the patch deletes the map itself.
  std::optional<json> mergeMap(const json& target, const json& patch, const Path& path) const {
    if (auto d = patch.find("$patch"); d != patch.end()) {
      const std::string directive = d->is_string() ? d->get<std::string>() : "";
      if (directive == "delete") return std::nullopt;
      if (directive == "replace") return clean(patch, path);
      if (directive != "merge")
        throw ApiError::badRequest("unknown patch type: " + directive + " in map: " + patch.dump());
    }
    json result = target.is_object() ? target : json::object();
    std::vector<std::pair<std::string, const json*>> deletions;
    for (const auto& [key, value] : patch.items()) {
      if (key.starts_with("$deleteFromPrimitiveList/")) {
        deletions.emplace_back(key.substr(std::string_view("$deleteFromPrimitiveList/").size()), &value);
        continue;
      }
      if (isDirective(key)) continue;  // $patch, $retainKeys, $setElementOrder/...
      Path child = path;
      child.push_back(key);
      if (value.is_null()) {
        result.erase(key);
      } else if (value.is_object()) {
        auto merged = mergeMap(result.contains(key) ? result[key] : json::object(), value, child);
        if (merged) {
          result[key] = std::move(*merged);
        } else {
          result.erase(key);
        }
      } else if (value.is_array()) {
        result[key] = mergeList(result.contains(key) ? result[key] : json::array(), value, child);
      } else {
        result[key] = value;
      }
    }
    for (const auto& [field, values] : deletions) {
      auto it = result.find(field);
      if (it == result.end() || !it->is_array() || !values->is_array()) continue;
      json kept = json::array();
      for (const auto& v : *it) {
        if (std::find(values->begin(), values->end(), v) == values->end()) kept.push_back(v);
      }
      *it = std::move(kept);
    }
    if (auto r = patch.find("$retainKeys"); r != patch.end()) {
      if (!r->is_array()) throw ApiError::badRequest("doesn't support $retainKeys with a non-list value");
      for (auto it = result.begin(); it != result.end();) {
        if (std::find(r->begin(), r->end(), it.key()) == r->end()) {
          it = result.erase(it);
        } else {
          ++it;
        }
      }
    }
    return result;
  }

 private:
  // A patch value placed where the target has nothing: nulls and directives go.
  json clean(const json& patch, const Path& path) const {
    auto merged = mergeMap(json::object(), patch.is_object() ? withoutDirective(patch) : patch, path);
    return merged ? *merged : json::object();
  }

  static json withoutDirective(json map) {
    map.erase("$patch");
    return map;
  }

  json mergeList(const json& target, const json& patch, const Path& path) const {
    const auto strategy = strategyFor(kind_, path);
    if (strategy.kind == ListStrategy::Kind::Replace) return patch;
    const json original = target.is_array() ? target : json::array();

    // {"$patch": "replace"} as an item replaces the whole list with the other items.
    const bool replace = std::any_of(patch.begin(), patch.end(), [](const json& item) {
      return item.is_object() && item.value("$patch", "") == "replace";
    });
    if (strategy.kind == ListStrategy::Kind::MergePrimitives) {
      json result = replace ? json::array() : original;
      for (const auto& item : patch) {
        if (item.is_object() && item.contains("$patch")) continue;
        if (std::find(result.begin(), result.end(), item) == result.end()) result.push_back(item);
      }
      return result;
    }

    json result = replace ? json::array() : original;
    for (const auto& item : patch) {
      if (!item.is_object()) {
        throw ApiError::badRequest("the items of " + path.back() + " must be objects with the merge key " +
                                   strategy.key);
      }
      if (item.size() == 1 && item.value("$patch", "") == "replace") continue;
      auto keyIt = item.find(strategy.key);
      if (keyIt == item.end()) {
        throw ApiError::badRequest("map: " + item.dump() + " does not contain declared merge key: " + strategy.key);
      }
      auto match = std::find_if(result.begin(), result.end(), [&](const json& existing) {
        return existing.is_object() && existing.contains(strategy.key) && existing[strategy.key] == *keyIt;
      });
      auto merged = mergeMap(match != result.end() ? *match : json::object(), item, path);
      if (!merged) {
        if (match != result.end()) result.erase(match);
      } else if (match != result.end()) {
        *match = std::move(*merged);
      } else {
        result.push_back(std::move(*merged));
      }
    }
    return result;
  }

  std::string kind_;
};

}  // namespace

nlohmann::json strategicMergePatch(const nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_object()) throw ApiError::badRequest("invalid JSON document");
  std::string kind = target.is_object() ? target.value("kind", "") : "";
  if (kind.empty()) kind = patch.value("kind", "");
  auto merged = StrategicMerger(kind).mergeMap(target, patch, {});
  return merged ? *merged : nlohmann::json::object();
}

}  // namespace mka::sandbox::patch
