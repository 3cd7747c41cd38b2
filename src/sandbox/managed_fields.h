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

  // BuildManagerIdentifier: manager, operation, subresource, and apiVersion for Update only
  // (an applier is the same manager whatever version it applies with).
  std::string identity() const;
  // How conflict messages name the manager: `"kubectl" with subresource "status" using v1`.
  std::string describe() const;
};

// Entries that do not decode are dropped (kube-apiserver resets what it cannot read).
std::vector<ManagerEntry> decodeManagedFields(const nlohmann::json& managedFields);
// Sorted as kube-apiserver stores them (operation, time, manager, apiVersion, subresource);
// entries owning nothing are dropped.
nlohmann::json encodeManagedFields(const std::vector<ManagerEntry>& entries);

std::string nowRfc3339();

}  // namespace mka::sandbox::fields
