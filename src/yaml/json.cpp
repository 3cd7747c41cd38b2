#include "mka/yaml/json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace mka::yaml {
namespace {

using nlohmann::json;

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";
bool isOneOf(std::string_view s, std::initializer_list<std::string_view> words) {
  for (auto w : words)
    if (s == w) return true;
  return false;
}

// strconv.ParseInt/ParseUint with base 0, as go-yaml v2 calls them: 0x, 0o and 0b prefixes, and
// a leading 0 meaning octal.
struct GoInt {
  bool negative = false;
  std::uint64_t magnitude = 0;
};

std::optional<GoInt> parseGoInt(std::string_view s) {
  GoInt out;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    out.negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    if (p == 'x') {
      base = 16;
      s.remove_prefix(2);
    } else if (p == 'o') {
      base = 8;
      s.remove_prefix(2);
    } else if (p == 'b') {
      base = 2;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out.magnitude, base);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return out;
}

std::optional<json> resolveInteger(const std::string& plain) {
  auto parsed = parseGoInt(plain);
  if (!parsed) return std::nullopt;
  constexpr auto kMaxInt = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!parsed->negative && parsed->magnitude <= kMaxInt) return json(static_cast<std::int64_t>(parsed->magnitude));
  if (parsed->negative && parsed->magnitude <= kMaxInt + 1) {
    return json(parsed->magnitude == kMaxInt + 1 ? std::numeric_limits<std::int64_t>::min()
                                                 : -static_cast<std::int64_t>(parsed->magnitude));
  }
  // ParseUint takes no sign.
  if (!parsed->negative && plain[0] != '+') return json(parsed->magnitude);
  return std::nullopt;
}

// Go writes an integral float64 as an integer in JSON ("1.0" -> 1), which the API server then
// reads back as an integer; doing the same here keeps 1.0 and 1 equal as they are there.
json floatValue(double v) {
  if (std::trunc(v) == v && std::fabs(v) < 9.2e18) return json(static_cast<std::int64_t>(v));
  return json(v);
}

std::size_t skipDigits(std::string_view s, std::size_t i) {
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i;
}

// go-yaml's float syntax: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool isYamlFloat(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    const std::size_t end = skipDigits(s, i + 1);
    if (end == i + 1) return false;
    i = end;
  } else {
    const std::size_t end = skipDigits(s, i);
    if (end == i) return false;
    i = end;
    if (i < s.size() && s[i] == '.') i = skipDigits(s, i + 1);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t end = skipDigits(s, i);
    if (end == i) return false;
    i = end;
  }
  return i == s.size();
}

std::optional<json> resolveFloat(const std::string& plain) {
  if (!isYamlFloat(plain)) return std::nullopt;
  const std::string digits = plain[0] == '+' ? plain.substr(1) : plain;
  double v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  // Out of range is an error for strconv.ParseFloat, and go-yaml then keeps the string.
  if (ec != std::errc{} || end != digits.data() + digits.size() || std::isinf(v)) return std::nullopt;
  return floatValue(v);
}

[[noreturn]] void unsupported(const std::string& what, const Node* node) {
  if (!node) throw ConversionError("yaml: " + what);
  throw ConversionError("yaml: line " + std::to_string(node->mark().line + 1) + ": " + what);
}
[[noreturn]] void unsupported(const std::string& what, const Node& node) { unsupported(what, &node); }

// A plain (unquoted, untagged) scalar, resolved as go-yaml v2 resolves it.
json resolvePlainAt(const std::string& s, const Node* node) {
  if (isOneOf(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (isOneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) return true;
  if (isOneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) return false;
  if (isOneOf(s,
              {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"})) {
    unsupported("json: unsupported value: " + s, node);
  }
  const char first = s[0];
  if ((first >= '0' && first <= '9') || first == '+' || first == '-' || first == '.') {
    std::string plain;
    for (char c : s)
      if (c != '_') plain += c;
    if (plain.empty()) return s;
    if (first != '.') {
      if (auto i = resolveInteger(plain)) return *i;
    }
    if (auto f = resolveFloat(plain)) return *f;
  }
  return s;
}

json resolveTagged(std::string_view name, const std::string& value, const Node& node) {
  if (name == "str") return value;
  if (name == "null") return nullptr;
  json resolved = resolvePlainAt(value, &node);
  const bool fits = (name == "bool" && resolved.is_boolean()) || (name == "int" && resolved.is_number_integer()) ||
                    (name == "float" && resolved.is_number());
  if (!fits && (name == "bool" || name == "int" || name == "float")) {
    unsupported("cannot decode !!" + std::string(name) + " `" + value + "`", node);
  }
  return resolved;
}

std::string keyString(const Node& key) {
  if (!key.isScalar()) unsupported("unsupported map key: a collection", key);
  const json k = scalarToJson(key);
  if (k.is_string()) return k.get<std::string>();
  if (k.is_boolean()) return k.get<bool>() ? "true" : "false";
  if (k.is_number()) return k.dump();
  unsupported("unsupported map key: null", key);
}

bool isMergeKey(const Node& key) { return key.isPlain() && key.scalar() == "<<"; }

// Keys merged in with "<<" never override keys the mapping writes itself; of several merged
// mappings, the first to set a key wins.
void mergeInto(json& out, const Node& source) {
  auto mergeOne = [&](const Node& map) {
    if (!map.isMapping()) unsupported("map merge requires map or sequence of maps as the value", map);
    json merged = toJson(map);
    for (auto& [k, v] : merged.items())
      if (!out.contains(k)) out[k] = std::move(v);
  };
  if (source.isSequence()) {
    for (const auto& item : source.items()) mergeOne(*item);
  } else {
    mergeOne(source);
  }
}

}  // namespace

json scalarToJson(const Node& node) {
  const std::string& tag = node.tag();
  const std::string& value = node.scalar();
  if (node.isPlain()) return resolvePlainAt(value, &node);
  if (tag.starts_with(kTagPrefix)) return resolveTagged(std::string_view(tag).substr(kTagPrefix.size()), value, node);
  return value;  // quoted and block scalars, "!" and application tags read as strings
}

json resolvePlain(const std::string& text) { return resolvePlainAt(text, nullptr); }

json toJson(const Node& node) {
  switch (node.kind()) {
    case Node::Kind::Scalar: return scalarToJson(node);
    case Node::Kind::Sequence: {
      json out = json::array();
      for (const auto& item : node.items()) out.push_back(toJson(*item));
      return out;
    }
    case Node::Kind::Mapping: {
      json out = json::object();
      std::vector<const Node*> merges;
      for (const auto& entry : node.entries()) {
        if (isMergeKey(*entry.key)) {
          merges.push_back(entry.value.get());
          continue;
        }
        out[keyString(*entry.key)] = toJson(*entry.value);
      }
      for (const auto* m : merges) mergeInto(out, *m);
      return out;
    }
  }
  return nullptr;
}

std::vector<json> parseJson(std::string_view text, const Limits& limits) {
  std::vector<json> documents;
  for (const auto& node : parse(text, limits)) {
    json doc = toJson(*node);
    if (!doc.is_null()) documents.push_back(std::move(doc));
  }
  return documents;
}

}  // namespace mka::yaml
