#include "builtin_types.h"

#include <cctype>
#include <map>
#include <mutex>

#include "builtin_resources.h"
#include "mka/common/base64.h"
#include "mka/sandbox/api_error.h"

namespace mka::sandbox::detail {
namespace {

using nlohmann::json;

// The kinds typed here, by group and plural.
const std::map<std::pair<std::string, std::string>, std::string> kTyped = {
    {{"", "configmaps"}, "ConfigMap"},
    {{"", "secrets"}, "Secret"},
    {{"", "namespaces"}, "Namespace"},
    {{"", "serviceaccounts"}, "ServiceAccount"},
    {{"", "services"}, "Service"},
    {{"", "events"}, "Event"},
    {{"events.k8s.io", "events"}, "Event"},
    {{"coordination.k8s.io", "leases"}, "Lease"},
    {{"scheduling.k8s.io", "priorityclasses"}, "PriorityClass"},
    {{"rbac.authorization.k8s.io", "clusterroles"}, "ClusterRole"},
    {{"rbac.authorization.k8s.io", "clusterrolebindings"}, "ClusterRoleBinding"},
    {{"rbac.authorization.k8s.io", "roles"}, "Role"},
    {{"rbac.authorization.k8s.io", "rolebindings"}, "RoleBinding"},
};

constexpr int kMaxDepth = 16;  // the typed kinds nest far less; a guard against a recursive schema

// Resolves $refs into a self-contained schema; every object schema named by a $ref keeps its Go
// type name ("v1.ObjectReference") for decoding errors.
json inlineRefs(const json& schema, const json& components, int depth) {
  if (!schema.is_object()) return schema;
  if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    const std::string name = ref->get<std::string>().substr(std::string("#/components/schemas/").size());
    if (depth > kMaxDepth || !components.contains(name)) return {{"x-kubernetes-preserve-unknown-fields", true}};
    json resolved = inlineRefs(components[name], components, depth + 1);
    const auto lastDot = name.rfind('.');
    const auto versionDot = name.rfind('.', lastDot - 1);
    if (resolved.is_object() && resolved.contains("properties")) resolved["x-go-type"] = name.substr(versionDot + 1);
    return resolved;
  }
  json out = schema;
  if (auto p = out.find("properties"); p != out.end() && p->is_object())
    for (auto& [key, sub] : p->items()) sub = inlineRefs(sub, components, depth + 1);
  for (const char* key : {"items", "additionalProperties"})
    if (auto c = out.find(key); c != out.end() && c->is_object()) *c = inlineRefs(*c, components, depth + 1);
  return out;
}

std::string jsonType(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "number";
  if (v.is_array()) return "array";
  return "object";
}

// Go's name of the type a schema decodes into, as encoding/json's errors print it.
std::string goType(const json& s) {
  if (auto t = s.find("x-go-type"); t != s.end()) return t->get<std::string>();
  if (s.value("x-kubernetes-int-or-string", false)) return "intstr.IntOrString";
  const std::string type = s.value("type", "");
  const std::string format = s.value("format", "");
  if (type == "string") return format == "byte" ? "[]uint8" : "string";
  if (type == "integer") return format.empty() ? "int64" : format;
  if (type == "number") return "float64";
  if (type == "boolean") return "bool";
  if (type == "array") return "[]" + (s.contains("items") ? goType(s["items"]) : std::string("interface {}"));
  if (type == "object" && s.contains("additionalProperties")) return "map[string]" + goType(s["additionalProperties"]);
  return "struct";
}

// Where Go's standard base64 decoding fails, or npos.
std::size_t base64Error(const std::string& text) {
  auto valid = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/'; };
  std::size_t i = 0;
  while (i < text.size() && valid(text[i])) ++i;
  std::size_t pad = 0;
  while (i + pad < text.size() && text[i + pad] == '=') ++pad;
  if (i + pad < text.size()) return i + pad;  // a character outside the alphabet, or data after padding
  if (pad > 2 || (i + pad) % 4 != 0) return (i + pad) - (i + pad) % 4;
  return base64Decode(text) ? std::string::npos : i;
}

class Decoder {
 public:
  explicit Decoder(const ResourceType& type) : type_(type) {}

  void value(const json& v, const json& s, const std::string& structName, const std::string& field) {
    if (v.is_null()) return;  // Go leaves the zero value
    if (s.value("x-kubernetes-preserve-unknown-fields", false) && !s.contains("type")) return;
    if (s.value("x-kubernetes-int-or-string", false)) {
      if (!v.is_string() && !v.is_number_integer()) mismatch(v, s, structName, field);
      return;
    }
    const std::string type = s.value("type", "");
    if (type == "string") {
      if (!v.is_string()) return mismatch(v, s, structName, field);
      if (s.value("format", "") == "byte") {
        const auto at = base64Error(v.get<std::string>());
        if (at != std::string::npos) fail("illegal base64 data at input byte " + std::to_string(at));
      }
    } else if (type == "integer") {
      if (!v.is_number_integer()) return mismatch(v, s, structName, field);
    } else if (type == "number") {
      if (!v.is_number()) return mismatch(v, s, structName, field);
    } else if (type == "boolean") {
      if (!v.is_boolean()) return mismatch(v, s, structName, field);
    } else if (type == "array") {
      if (!v.is_array()) return mismatch(v, s, structName, field);
      if (auto items = s.find("items"); items != s.end())
        for (const auto& item : v) value(item, *items, structName, field);
    } else if (type == "object") {
      if (!v.is_object()) return mismatch(v, s, structName, field);
      const std::string inner = s.contains("x-go-type") ? goStructName(s) : structName;
      const auto properties = s.find("properties");
      const auto additional = s.find("additionalProperties");
      for (const auto& [key, sub] : v.items()) {
        if (field.empty() && (key == "metadata" || key == "apiVersion" || key == "kind")) continue;
        if (properties != s.end() && properties->contains(key)) {
          value(sub, (*properties)[key], inner, field.empty() ? key : field + "." + key);
        } else if (additional != s.end() && additional->is_object()) {
          value(sub, *additional, structName, field);  // map keys are not in Go's field path
        }
      }
    }
  }

 private:
  static std::string goStructName(const json& s) {
    const std::string t = s["x-go-type"].get<std::string>();
    return t.substr(t.find('.') + 1);
  }

  void mismatch(const json& v, const json& s, const std::string& structName, const std::string& field) {
    fail("json: cannot unmarshal " + jsonType(v) + " into Go struct field " + structName + "." + field + " of type " +
         goType(s));
  }

  [[noreturn]] void fail(const std::string& why) {
    throw ApiError::badRequest(type_.kind + " in version \"v1\" cannot be handled as a " + type_.kind + ": " + why);
  }

  const ResourceType& type_;
};

}  // namespace

const json* builtinTypeSchema(const ResourceType& type) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, json> cache;
  const auto key = std::make_pair(type.group, type.plural);
  const auto typed = kTyped.find(key);
  if (!type.builtin || typed == kTyped.end()) return nullptr;
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const json& components = builtinSchemas();
    const std::string name = builtinSchemaName(type.group, "v1", typed->second);
    json schema = inlineRefs(json{{"$ref", "#/components/schemas/" + name}}, components, 0);
    it = cache.emplace(key, std::move(schema)).first;
  }
  return &it->second;  // std::map nodes stay put
}

void decodeBuiltin(json& object, const ResourceType& type, const json& schema) {
  Decoder(type).value(object, schema, type.kind, "");
  if (type.group.empty() && type.plural == "secrets") {
    // The v1 -> internal conversion: stringData wins over data for the same key.
    if (auto sd = object.find("stringData"); sd != object.end()) {
      if (sd->is_object()) {
        auto& data = object["data"];
        if (!data.is_object()) data = json::object();
        for (const auto& [key, value] : sd->items())
          if (value.is_string()) data[key] = base64Encode(value.get<std::string>());
      }
      object.erase("stringData");
    }
  }
}

}  // namespace mka::sandbox::detail
