#include "mka/api/gvk.h"

#include <array>
#include <cctype>

namespace mka::api {

namespace {

std::string lower(std::string_view text) {
  std::string out;
  for (const char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

}  // namespace

std::string guessResource(std::string_view kind) {
  const std::string singular = lower(kind);
  if (singular.empty() || singular.ends_with("endpoints")) return singular;
  if (singular.back() == 's') return singular + "es";
  if (singular.back() == 'y') return singular.substr(0, singular.size() - 1) + "ies";
  return singular + "s";
}

std::optional<std::string> resourceGuessDoubt(std::string_view kind) {
  const std::string singular = lower(kind);
  const std::string guess = guessResource(kind);
  const auto doubt = [&](std::string_view why) {
    return "kube-apiserver's guess from the kind is " + guess + ", but " + std::string(why);
  };
  if (singular.size() >= 2 && singular.back() == 'y' && vowel(singular[singular.size() - 2]))
    return doubt("a kind ending in a vowel and y usually takes -ys (gateways)");
  for (const std::string_view ending : {"x", "z", "ch", "sh"})
    if (singular.ends_with(ending)) return doubt("a kind ending in -" + std::string(ending) + " usually takes -es");
  for (const std::string_view ending : {"is", "us", "f", "fe", "o", "man", "person", "child", "datum", "index"})
    if (singular.ends_with(ending))
      return doubt("the plural of a kind ending in -" + std::string(ending) + " varies (analyses, statuses, leaves)");
  return std::nullopt;
}

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
