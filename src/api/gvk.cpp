#include "mka/api/gvk.h"

namespace mka::api {

std::string GroupVersionKind::apiVersion() const { return group.empty() ? version : group + "/" + version; }

std::string GroupVersionKind::dotted() const { return kind + "." + version + "." + group; }

std::string GroupVersionKind::goString() const { return group + "/" + version + ", Kind=" + kind; }

std::optional<GroupVersionKind> GroupVersionKind::parseDotted(std::string_view text) {
  auto first = text.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  auto second = text.find('.', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  return GroupVersionKind{std::string(text.substr(second + 1)), std::string(text.substr(first + 1, second - first - 1)),
                          std::string(text.substr(0, first))};
}

GroupVersionKind GroupVersionKind::fromApiVersion(std::string_view apiVersion, std::string_view kind) {
  auto slash = apiVersion.find('/');
  if (slash == std::string_view::npos) return {"", std::string(apiVersion), std::string(kind)};
  return {std::string(apiVersion.substr(0, slash)), std::string(apiVersion.substr(slash + 1)), std::string(kind)};
}

}  // namespace mka::api
