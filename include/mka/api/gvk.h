#pragma once
// Group/version/kind of a Kubernetes object, and the three spellings users and Kueue use.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace mka::api {

struct GroupVersionKind {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;

  // "tekton.dev/v1", or "v1" for the core group.
  std::string apiVersion() const;
  // Kueue's external-framework spelling: "PipelineRun.v1.tekton.dev".
  std::string dotted() const;
  // Go's schema.GroupVersionKind.String(): "tekton.dev/v1, Kind=PipelineRun" ("/v1, Kind=Pod").
  std::string goString() const;

  // Parses "Kind.version.group" the way Kueue does: split at the first two dots, so the group
  // keeps its own dots. Returns nullopt when there are fewer than two dots. Does not check
  // that the parts are non-empty or well formed (config validation does that).
  static std::optional<GroupVersionKind> parseDotted(std::string_view text);
  // From an object's apiVersion ("group/version" or "version") and kind.
  static GroupVersionKind fromApiVersion(std::string_view apiVersion, std::string_view kind);

  auto operator<=>(const GroupVersionKind&) const = default;
};

}  // namespace mka::api
