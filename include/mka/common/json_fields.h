#pragma once
// Tolerant readers of JSON object members, for code that reads fields it does not validate:
// a missing member, a parent that is not an object, or a member of another type all read as
// the fallback. Code that must refuse such input validates it first and says where.
//
// Threads: pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::json_fields {

// object[key] when it is a string, else `fallback`.
std::string stringMember(const nlohmann::json& object, std::string_view key, std::string_view fallback = {});

// object[key] when it is a string, else "": a view into `object`, no copy.
std::string_view stringView(const nlohmann::json& object, std::string_view key);

// object.metadata[field] when it is a string, else "".
std::string metadataString(const nlohmann::json& object, std::string_view field);

// object[key] when it is an object (an array), else an empty one: a reference into `object`,
// where `object.value(key, json::object())` returns a copy of the whole member.
const nlohmann::json& objectMember(const nlohmann::json& object, std::string_view key);
const nlohmann::json& arrayMember(const nlohmann::json& object, std::string_view key);

// The item of a list of objects whose `key` member equals `value` (a condition by type, an
// admission-check state by name): object.status.<list>[key == value], or nullptr.
const nlohmann::json* findInStatusList(const nlohmann::json& object, std::string_view list, std::string_view key,
                                       std::string_view value);
// object.status.<list> for writing, made an empty array (and status an object) when it is not one.
nlohmann::json& statusList(nlohmann::json& object, std::string_view list);

// Dotted field paths below an object's root ("spec.template", "status.phase"), as the
// configuration writes them: each segment an object member.
// The value at `path`, or nullptr when a segment is missing or its parent is not an object.
const nlohmann::json* fieldAt(const nlohmann::json& object, std::string_view path);
nlohmann::json* fieldAt(nlohmann::json& object, std::string_view path);
// Sets the value at `path`, creating missing parents as objects; a parent of another type is
// replaced by an object.
void setFieldAt(nlohmann::json& object, std::string_view path, nlohmann::json value);
// The value at `path` for writing into: set to `empty` first when absent or null.
nlohmann::json& fieldOrEmpty(nlohmann::json& object, std::string_view path, const nlohmann::json& empty);
// RFC 6902 operations that set the value at the keys' path in `object`: one "add" at the
// deepest existing parent, carrying the missing parents inside-out. Empty when a list or a
// scalar is in the way (nothing sane to write there).
nlohmann::json setFieldPatch(const nlohmann::json& object, const std::vector<std::string>& keys, nlohmann::json value);
// Removes the value at `path`; false when it was absent.
bool eraseFieldAt(nlohmann::json& object, std::string_view path);

// Dotted paths whose segments may end in [*] ("spec.workspaces[*].secret.secretName"): each
// item of that list, as a configuration names the fields a job refers to other objects by.
// Why `path` is not such a path (an empty segment, a bracket other than a trailing [*]);
// nullopt when it is one.
std::optional<std::string> listPathProblem(std::string_view path);
// The non-empty strings at `path` in `object`, in document order: a missing segment, a parent
// of another type or a value that is not a string yields nothing for that branch.
std::vector<std::string> stringsAt(const nlohmann::json& object, std::string_view path);

}  // namespace mka::json_fields
