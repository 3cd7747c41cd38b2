#pragma once
// Reading, setting and removing a job's managedBy marker wherever its framework keeps it
// (a field path or a label), and the RFC 6902 patch that sets it. Used by the webhook
// (defaulting, immutability) and by the dispatcher (the remote copy has the marker removed).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"

namespace mka::jobkind {

using config::ManagedByLocation;

// The marker's current value; nullopt when absent or not a string.
std::optional<std::string> readManagedBy(const nlohmann::json& object, const ManagedByLocation& where);

// RFC 6902 operations that set the marker to `where.value` on `object`: a single "add". When
// parents are missing (e.g. /spec, /spec/runPolicy, /metadata/labels) the "add" creates the
// first missing one as an object that already holds the marker, so existing maps are never
// replaced. Keys are '~1'/'~0'-escaped. Nothing else is touched. Empty array when the marker
// cannot be placed (the object, or a parent on the way, is neither an object nor null).
nlohmann::json managedByPatch(const nlohmann::json& object, const ManagedByLocation& where);

// Removes the marker from `object` in place (no-op when absent).
void removeManagedBy(nlohmann::json& object, const ManagedByLocation& where);

}  // namespace mka::jobkind
