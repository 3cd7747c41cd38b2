#include "managed_fields.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "mka/sandbox/patch.h"
#include "schema.h"

namespace mka::sandbox {
namespace fields {

using nlohmann::json;

std::string ManagerEntry::identity() const {
  // The JSON Go writes for the entry with time and fields cleared, in struct field order.
  std::string s = "{\"manager\":" + json(manager).dump() + ",\"operation\":" + json(operation).dump();
  if (operation != "Apply" && !apiVersion.empty()) s += ",\"apiVersion\":" + json(apiVersion).dump();
  if (!subresource.empty()) s += ",\"subresource\":" + json(subresource).dump();
  return s + "}";
}

bool ManagerEntry::sameManagerAs(const ManagerEntry& other) const {
  return manager == other.manager && operation == other.operation && subresource == other.subresource &&
         (operation == "Apply" || apiVersion == other.apiVersion);
}

std::string ManagerEntry::describe() const {
  std::string out = json(manager).dump();
  if (!subresource.empty()) out += " with subresource " + json(subresource).dump();
  if (operation == "Update") out += " using " + apiVersion;
  return out;
}

std::vector<ManagerEntry> decodeManagedFields(const json& managedFields) {
  std::vector<ManagerEntry> out;
  if (!managedFields.is_array()) return out;
  for (std::size_t i = 0; i < managedFields.size(); ++i) {
    const auto& e = managedFields[i];
    if (!e.is_object()) continue;
    auto str = [&](const char* key) {
      auto it = e.find(key);
      return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    ManagerEntry entry{str("manager"), str("operation"), str("apiVersion"), str("time"), str("subresource"), {}};
    entry.decodedFrom = i;
    if (entry.operation != "Apply" && entry.operation != "Update") continue;
    if (auto f = e.find("fieldsV1"); f != e.end()) entry.set = FieldSet::fromFieldsV1(*f);
    out.push_back(std::move(entry));
  }
  return out;
}

namespace {

// `Decoded` is json (the kept fieldsV1 are moved out) or const json (they are copied).
template <typename Decoded>
json encode(const std::vector<ManagerEntry>& entries, Decoded* decoded) {
  std::vector<const ManagerEntry*> sorted;
  for (const auto& e : entries) {
    if (!e.set.empty()) sorted.push_back(&e);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const ManagerEntry* p, const ManagerEntry* q) {
    return std::tie(p->operation, p->time, p->manager, p->apiVersion, p->subresource) <
           std::tie(q->operation, q->time, q->manager, q->apiVersion, q->subresource);
  });
  // An entry whose set is as decoded takes its fieldsV1 from `decoded`: rendering a set again
  // would be a large part of the cost of recording a write.
  const auto reusable = [&](const ManagerEntry& e) -> Decoded* {
    if (decoded == nullptr || !decoded->is_array() || e.decodedFrom >= decoded->size()) return nullptr;
    auto& item = (*decoded)[e.decodedFrom];
    auto it = item.is_object() ? item.find("fieldsV1") : item.end();
    return it != item.end() && it->is_object() ? &*it : nullptr;
  };
  json out = json::array();
  for (const auto* e : sorted) {
    Decoded* kept = reusable(*e);
    json entry = {{"manager", e->manager},
                  {"operation", e->operation},
                  {"apiVersion", e->apiVersion},
                  {"fieldsType", "FieldsV1"},
                  {"fieldsV1", kept ? json(std::move(*kept)) : e->set.toFieldsV1()}};
    if (!e->time.empty()) entry["time"] = e->time;
    if (!e->subresource.empty()) entry["subresource"] = e->subresource;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

json encodeManagedFields(const std::vector<ManagerEntry>& entries, json* decoded) { return encode(entries, decoded); }

json encodeManagedFields(const std::vector<ManagerEntry>& entries, const json& decoded) {
  return encode(entries, &decoded);
}

std::string nowRfc3339() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace fields

namespace patch {
namespace {

using fields::ManagerEntry;
using nlohmann::json;

const json* managedFieldsOf(const json& object) {
  if (!object.is_object()) return nullptr;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  auto managed = meta->find("managedFields");
  return managed == meta->end() ? nullptr : &*managed;
}

void record(const json& before, json& after, const UpdateOptions& options) {
  if (!after.is_object()) return;
  auto& meta = after["metadata"];
  if (!meta.is_object()) meta = json::object();
  const json* previous = managedFieldsOf(before);
  static const json kEmpty = json::array();
  const json& beforeManaged = previous ? *previous : kEmpty;

  const auto suppliedAt = meta.find("managedFields");
  json* supplied = suppliedAt == meta.end() ? nullptr : &*suppliedAt;
  if (supplied && supplied->is_array() && supplied->size() == 1 && supplied->front() == json::object()) {
    meta.erase("managedFields");  // [{}]: the caller asks for no managedFields at all
    return;
  }
  const bool resent = supplied && *supplied == beforeManaged;  // what a client sends back after a read
  const bool override =
      supplied && supplied->is_array() && !supplied->empty() && options.subresource.empty() && !resent;
  // The entries to start from: the body's when it carries them (it is ours to change, and they
  // are replaced below in every case), else the stored ones, which are only read.
  json* const movable = override || resent ? supplied : nullptr;
  const json& base = movable ? *movable : beforeManaged;

  const auto listTypeOf = [&](const std::vector<std::string>& path) {
    static const json kNoSchema;
    return schema::listTypeAt(options.schema ? *options.schema : kNoSchema, path);
  };
  auto diff = options.onlyChanged.empty() ? fields::compare(before, after, listTypeOf)
                                          : fields::compareMember(before, after, options.onlyChanged, listTypeOf);
  fields::stripUntracked(diff.added);
  fields::stripUntracked(diff.modified);
  fields::stripUntracked(diff.removed);
  if (diff.empty()) {
    if (base.empty()) {
      meta.erase("managedFields");
    } else {
      // Entries a client supplied are stored as kube-apiserver stores them: decoded and encoded
      // again, so every stored entry is in the encoder's form (see below).
      if (override) {
        meta["managedFields"] = fields::encodeManagedFields(fields::decodeManagedFields(base));
      } else if (!movable) {
        meta["managedFields"] = base;  // unchanged: as stored
      }                                // else resent: the body's copy is already in place
    }
    return;
  }

  auto entries = fields::decodeManagedFields(base);
  ManagerEntry mine{options.manager, "Update", options.apiVersion, "", options.subresource, {}};
  auto changed = diff.added;
  changed.unite(diff.modified);
  bool found = false;
  for (auto& e : entries) {
    bool touched;
    if (e.sameManagerAs(mine)) {
      found = true;
      touched = e.set.subtract(diff.removed);
      touched = e.set.unite(changed) || touched;
      e.apiVersion = options.apiVersion;
      e.time = options.time.empty() ? fields::nowRfc3339() : options.time;
    } else {
      // An update takes what it changed from everyone (force) and drops what it removed.
      touched = e.set.subtract(changed);
      touched = e.set.subtract(diff.removed) || touched;
    }
    // A stored entry is in the encoder's form, so an unchanged set keeps its fieldsV1 as it
    // is; a client's own entries (override) are rendered again, as kube-apiserver does.
    if (touched || override) e.decodedFrom = ManagerEntry::kNotDecoded;
  }
  if (!found) {
    mine.set = std::move(changed);
    mine.time = options.time.empty() ? fields::nowRfc3339() : options.time;
    entries.push_back(std::move(mine));
  }
  auto encoded = movable ? fields::encodeManagedFields(entries, movable) : fields::encodeManagedFields(entries, base);
  if (encoded.empty()) {
    meta.erase("managedFields");
  } else {
    meta["managedFields"] = std::move(encoded);
  }
}

}  // namespace

void recordUpdate(const nlohmann::json& before, nlohmann::json& after, const UpdateOptions& options) {
  try {
    record(before, after, options);
  } catch (const std::exception&) {
    // kube-apiserver's UpdateNoErrors: a write never fails over its bookkeeping.
    if (after.is_object() && after.contains("metadata") && after["metadata"].is_object()) {
      after["metadata"].erase("managedFields");
    }
  }
}

void recordUpdate(const nlohmann::json& before, nlohmann::json& after, const std::string& manager,
                  const std::string& apiVersion, const std::string& subresource) {
  recordUpdate(before, after, UpdateOptions{manager, apiVersion, subresource, nullptr, ""});
}

}  // namespace patch
}  // namespace mka::sandbox
