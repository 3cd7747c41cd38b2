#include "mka/common/json_fields.h"

#include <utility>

#include "mka/common/strings.h"

namespace mka::json_fields {

std::string stringMember(const nlohmann::json& object, std::string_view key, std::string_view fallback) {
  if (!object.is_object()) return std::string(fallback);
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

std::string_view stringView(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                               : std::string_view();
}

std::string metadataString(const nlohmann::json& object, std::string_view field) {
  if (!object.is_object()) return {};
  const auto meta = object.find("metadata");
  return meta == object.end() ? std::string() : stringMember(*meta, field);
}

namespace {

const nlohmann::json* memberOf(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

const nlohmann::json& objectMember(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const auto* member = memberOf(object, key);
  return member != nullptr && member->is_object() ? *member : kEmpty;
}

const nlohmann::json& arrayMember(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const auto* member = memberOf(object, key);
  return member != nullptr && member->is_array() ? *member : kEmpty;
}

const nlohmann::json* fieldAt(const nlohmann::json& object, std::string_view path) {
  const nlohmann::json* node = &object;
  for (const auto& key : strings::split(path, '.')) {
    node = memberOf(*node, key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

nlohmann::json* fieldAt(nlohmann::json& object, std::string_view path) {
  return const_cast<nlohmann::json*>(fieldAt(std::as_const(object), path));
}

void setFieldAt(nlohmann::json& object, std::string_view path, nlohmann::json value) {
  nlohmann::json* node = &object;
  for (const auto& key : strings::split(path, '.')) {
    if (!node->is_object()) *node = nlohmann::json::object();
    node = &(*node)[key];
  }
  *node = std::move(value);
}

nlohmann::json& fieldOrEmpty(nlohmann::json& object, std::string_view path, const nlohmann::json& empty) {
  if (nlohmann::json* existing = fieldAt(object, path); existing != nullptr && !existing->is_null()) return *existing;
  setFieldAt(object, path, empty);
  return *fieldAt(object, path);
}

nlohmann::json setFieldPatch(const nlohmann::json& object, const std::vector<std::string>& keys, nlohmann::json value) {
  auto patch = nlohmann::json::array();
  if (!object.is_object() || keys.empty()) return patch;
  const nlohmann::json* node = &object;
  std::size_t depth = 0;  // keys[0..depth) exist as objects
  while (depth + 1 < keys.size()) {
    auto it = node->find(keys[depth]);
    if (it == node->end() || it->is_null()) break;
    if (!it->is_object()) return patch;
    node = &*it;
    ++depth;
  }
  for (std::size_t i = keys.size() - 1; i > depth; --i) value = nlohmann::json{{keys[i], std::move(value)}};
  std::string pointer;
  for (std::size_t i = 0; i <= depth; ++i) pointer += "/" + strings::escapeJsonPointer(keys[i]);
  patch.push_back({{"op", "add"}, {"path", pointer}, {"value", std::move(value)}});
  return patch;
}

bool eraseFieldAt(nlohmann::json& object, std::string_view path) {
  const auto keys = strings::split(path, '.');
  nlohmann::json* node = &object;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    if (!node->is_object()) return false;
    auto it = node->find(keys[i]);
    if (it == node->end()) return false;
    node = &*it;
  }
  return node->is_object() && node->erase(keys.back()) > 0;
}

const nlohmann::json* findInStatusList(const nlohmann::json& object, std::string_view list, std::string_view key,
                                       std::string_view value) {
  for (const auto& item : arrayMember(objectMember(object, "status"), list))
    if (item.is_object() && stringView(item, key) == value) return &item;
  return nullptr;
}

nlohmann::json& statusList(nlohmann::json& object, std::string_view list) {
  auto& status = object["status"];
  if (!status.is_object()) status = nlohmann::json::object();
  auto& items = status[std::string(list)];
  if (!items.is_array()) items = nlohmann::json::array();
  return items;
}

namespace {

constexpr std::string_view kEach = "[*]";

// `segment` without its trailing [*], and whether it had one.
std::pair<std::string_view, bool> splitEach(std::string_view segment) {
  if (segment.ends_with(kEach)) return {segment.substr(0, segment.size() - kEach.size()), true};
  return {segment, false};
}

void collectStrings(const nlohmann::json& node, const std::vector<std::string>& segments, std::size_t at,
                    std::vector<std::string>& out) {
  if (at == segments.size()) {
    if (node.is_string() && !node.get_ref<const std::string&>().empty()) out.push_back(node.get<std::string>());
    return;
  }
  const auto [key, each] = splitEach(segments[at]);
  const auto* member = memberOf(node, key);
  if (member == nullptr) return;
  if (!each) return collectStrings(*member, segments, at + 1, out);
  if (!member->is_array()) return;
  for (const auto& item : *member) collectStrings(item, segments, at + 1, out);
}

}  // namespace

std::optional<std::string> listPathProblem(std::string_view path) {
  if (path.empty()) return "is empty";
  for (const auto& segment : strings::split(path, '.')) {
    const auto [key, each] = splitEach(segment);
    if (key.empty()) return "has an empty segment in \"" + std::string(path) + "\"";
    if (key.find_first_of("[]*") != std::string_view::npos)
      return "segment \"" + std::string(segment) +
             "\" may end in [*] (each item of a list) and hold no other "
             "brackets or *";
  }
  return std::nullopt;
}

std::vector<std::string> stringsAt(const nlohmann::json& object, std::string_view path) {
  std::vector<std::string> out;
  if (listPathProblem(path)) return out;
  std::vector<std::string> segments;
  for (const auto& segment : strings::split(path, '.')) segments.emplace_back(segment);
  collectStrings(object, segments, 0, out);
  return out;
}

}  // namespace mka::json_fields
