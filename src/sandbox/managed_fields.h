#pragma once
// metadata.managedFields entries: decoding, the manager identity kube-apiserver keys them by,
// and encoding in its order. Private to the sandbox's patch code.
//
// Threads: plain values, no shared state.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "field_set.h"

namespace mka::sandbox::fields {

struct ManagerEntry {
  std::string manager;
  std::string operation;  // "Apply" | "Update"
  std::string apiVersion;
  std::string time;
  std::string subresource;
  FieldSet set;
  // The index of the managedFields item the entry was decoded from, as long as `set` is as
  // decoded; kNotDecoded for a new entry, and to be set by whoever changes `set` and wants
  // encodeManagedFields(entries, decoded) to use it.
  static constexpr std::size_t kNotDecoded = static_cast<std::size_t>(-1);
  std::size_t decodedFrom = kNotDecoded;

  // BuildManagerIdentifier: manager, operation, subresource, and apiVersion for Update only
  // (an applier is the same manager whatever version it applies with).
  std::string identity() const;
  // identity() == other.identity(), without building either string.
  bool sameManagerAs(const ManagerEntry& other) const;
  // How conflict messages name the manager: `"kubectl" with subresource "status" using v1`.
  std::string describe() const;
};

// Entries that do not decode are dropped (kube-apiserver resets what it cannot read).
std::vector<ManagerEntry> decodeManagedFields(const nlohmann::json& managedFields);
// Sorted as kube-apiserver stores them (operation, time, manager, apiVersion, subresource);
// entries owning nothing are dropped. With `decoded` (the array the entries were decoded from),
// an entry whose decodedFrom is set takes its fieldsV1 from there (moved out) instead of
// rendering its set: only right when that fieldsV1 is in the encoder's form and the set is
// unchanged.
nlohmann::json encodeManagedFields(const std::vector<ManagerEntry>& entries, nlohmann::json* decoded = nullptr);
// The same with `decoded` left as it is: the fieldsV1 taken from it are copied.
nlohmann::json encodeManagedFields(const std::vector<ManagerEntry>& entries, const nlohmann::json& decoded);

std::string nowRfc3339();

}  // namespace mka::sandbox::fields
