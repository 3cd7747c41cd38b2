#pragma once
// The four patch types of the API server. All throw ApiError (400 for a malformed patch,
// 422 for a patch that cannot apply, 409 for a server-side-apply conflict).

#include <string>

#include <nlohmann/json.hpp>

#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox::patch {

// application/merge-patch+json (RFC 7386).
nlohmann::json mergePatch(const nlohmann::json& target, const nlohmann::json& patch);
// application/json-patch+json (RFC 6902), including "test".
nlohmann::json jsonPatch(const nlohmann::json& target, const nlohmann::json& patch);
// application/strategic-merge-patch+json, for built-in kinds: a merge patch whose lists merge
// by their patch merge key where Kubernetes defines one (e.g. ownerReferences by uid), with the
// $patch: delete/replace directives and $setElementOrder/$deleteFromPrimitiveList dropped or
// honoured as kube-apiserver does for the fields our built-ins have. CRDs reject it (415).
nlohmann::json strategicMergePatch(const nlohmann::json& target, const nlohmann::json& patch);

// application/apply-patch+yaml (server-side apply). `applied` is the caller's intent (parsed
// YAML or JSON). Lists merge by the schema's list-type (map lists by their keys, e.g.
// status.conditions by type). metadata.managedFields records what each manager owns
// (FieldsV1); fields that `manager` applied before and no longer applies are removed unless
// another manager owns them; a field owned by another manager with a different value is a 409
// Conflict naming the field and the manager, unless `force`.
struct ApplyOptions {
  std::string manager;  // ?fieldManager=, required
  bool force = false;
  std::string subresource;  // "" or "status": which part of the object the apply may change
  std::string apiVersion;   // written in the managedFields entry
  std::string time;         // the entry's time (RFC 3339); "" = now
};
nlohmann::json serverSideApply(const nlohmann::json& live, const nlohmann::json& applied,
                               const ResourceVersionInfo& version, const ApplyOptions& options);

// Records an Update operation (create, update, non-apply patch) by `manager` in managedFields:
// the fields that changed between `before` and `after` move to that manager.
void recordUpdate(const nlohmann::json& before, nlohmann::json& after, const std::string& manager,
                  const std::string& apiVersion, const std::string& subresource);

// The same with the version's schema, so map lists (status.conditions by type) are tracked per
// item as server-side apply sees them; without it every list but metadata's is atomic.
// As kube-apiserver does: `after` carrying managedFields that differ from `before`'s replaces
// them (the caller's own bookkeeping, ignored for a subresource); `[]` keeps `before`'s; `[{}]`
// strips them all and records nothing. An unchanged object keeps its managedFields as they
// were (no new time). Never throws: on a malformed object the managedFields are cleared.
struct UpdateOptions {
  std::string manager;
  std::string apiVersion;
  std::string subresource;
  // The version's openAPIV3Schema (nullptr: built-in). Borrowed, not copied: a CRD's schema is
  // hundreds of KB and copying it would be a large share of the sandbox's CPU per write.
  const nlohmann::json* schema = nullptr;
  std::string time;  // RFC 3339; "" = now
  // Set when the caller knows that the objects differ in this top-level field only (besides
  // metadata.managedFields): "status" for a status write. Only that field is compared then.
  std::string onlyChanged;
};
void recordUpdate(const nlohmann::json& before, nlohmann::json& after, const UpdateOptions& options);

}  // namespace mka::sandbox::patch
