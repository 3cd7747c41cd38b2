// The OpenAPI half of kube-apiserver's custom resource validation (k8s.io/kube-openapi's
// validator, as apiextensions-apiserver turns its results into field errors).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "mka/common/base64.h"
#include "mka/common/clock.h"
#include "schema.h"
#include "schema_compiled.h"
#include "schema_node.h"

namespace mka::sandbox::schema {
namespace {

using nlohmann::json;

// The JSON type of a value as go-openapi names it in its messages.
std::string typeName(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    default: return "object";
  }
}

bool isInteger(const json& value) {
  if (value.is_number_integer()) return true;
  if (!value.is_number_float()) return false;
  const double d = value.get<double>();
  return std::isfinite(d) && std::floor(d) == d;  // 2.0 decodes as an integer in kube-openapi too
}

bool hasType(const json& value, std::string_view type) {
  if (type == "integer") return isInteger(value);
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  return true;
}

// Go's %v of a number from a schema or a decoded body: 1 for 1.0, 1.5, 1e+21.
std::string goNumber(const json& n) {
  if (n.is_number_integer()) return std::to_string(n.get<std::int64_t>());
  if (n.is_number_unsigned()) return std::to_string(n.get<std::uint64_t>());
  const double d = n.get<double>();
  if (std::floor(d) == d && std::fabs(d) < 1e21) return std::to_string(static_cast<std::int64_t>(d));
  return json(d).dump();
}

// field.Error's rendering of a bad value: strings quoted, numbers and booleans plain.
std::string badValue(const json& value) {
  if (value.is_null()) return "\"null\"";
  if (value.is_string()) return json(value.get<std::string>()).dump();
  if (value.is_number()) return goNumber(value);
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

// Go's %#v of a decoded JSON object (a list-map entry's keys, in Duplicate value messages).
std::string goMap(const json& object) {
  std::string out = "map[string]interface {}{";
  bool first = true;
  for (const auto& [key, value] : object.items()) {
    out += (first ? "" : ", ") + json(key).dump() + ":" + (value.is_string() ? json(value).dump() : badValue(value));
    first = false;
  }
  return out + "}";
}

std::size_t codePoints(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The formats kube-apiserver checks on custom resources that the shipped CRDs use; every other
// format is accepted, as kube-apiserver accepts formats it does not know.
bool formatValid(std::string_view format, const std::string& text) {
  if (format == "date-time") return parseRfc3339(text).has_value();
  if (format == "byte") return base64Decode(text).has_value();
  return true;
}

class Validator {
 public:
  explicit Validator(const Compiled* compiled) : compiled_(compiled) {}

  FieldErrors errors;

  void value(const json& v, const json& s, const std::string& path) {
    if (v.is_null()) {
      if (flag(s, "nullable")) return;
    }
    if (!typeMatches(v, s, path)) return;
    if (const auto e = s.find("enum"); e != s.end() && e->is_array() && !v.is_null()) {
      if (std::find(e->begin(), e->end(), v) == e->end()) {
        std::string values;
        for (const auto& allowed : *e)
          values += (values.empty() ? "" : ", ") + json(allowed.is_string() ? allowed : json(allowed.dump())).dump();
        add(path, "Unsupported value: " + badValue(v), "supported values: " + values);
      }
    }
    if (v.is_string()) string(v.get_ref<const std::string&>(), v, s, path);
    if (v.is_number()) number(v, s, path);
    if (v.is_array()) array(v, s, path);
    if (v.is_object()) object(v, s, path);
  }

  void object(const json& v, const json& s, const std::string& path, bool root = false) {
    if (const auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (const auto& name : *r) {
        if (!name.is_string()) continue;
        const auto& key = name.get_ref<const std::string&>();
        auto it = v.find(key);
        if (it == v.end() || (it->is_null() && !nullableProperty(s, key))) add(join(path, key), "Required value", "");
      }
    }
    minMaxProperties(v, s, path);
    const json* properties = child(s, "properties");
    const json* additional = child(s, "additionalProperties");
    for (const auto& [key, field] : v.items()) {
      // apiVersion, kind and metadata of a resource are the API server's own to check.
      if ((root || flag(s, "x-kubernetes-embedded-resource")) &&
          (key == "apiVersion" || key == "kind" || key == "metadata"))
        continue;
      const json* fieldSchema = nullptr;
      if (properties) {
        auto p = properties->find(key);
        if (p != properties->end() && p->is_object()) fieldSchema = &*p;
      }
      if (!fieldSchema) fieldSchema = additional;
      // A null the schema does not allow is dropped before validation (pruneNulls).
      if (fieldSchema && field.is_null() && !flag(*fieldSchema, "nullable")) continue;
      if (fieldSchema) value(field, *fieldSchema, join(path, key));
    }
  }

 private:
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  static bool nullableProperty(const json& s, const std::string& key) {
    const json* properties = child(s, "properties");
    if (!properties) return false;
    auto p = properties->find(key);
    return p != properties->end() && p->is_object() && flag(*p, "nullable");
  }

  void add(const std::string& path, std::string problem, std::string detail) {
    errors.push_back({path, std::move(problem), std::move(detail)});
  }

  void inBody(const std::string& path, const json& bad, const std::string& rule) {
    add(path, "Invalid value: " + badValue(bad), path + " in body " + rule);
  }

  bool typeMatches(const json& v, const json& s, const std::string& path) {
    if (flag(s, "x-kubernetes-int-or-string")) {
      if (isInteger(v) || v.is_string()) return true;
      typeInvalid(path, v, "integer,string");
      return false;
    }
    const auto t = s.find("type");
    if (t == s.end() || !t->is_string()) return true;
    const auto& type = t->get_ref<const std::string&>();
    if (!v.is_null() && hasType(v, type)) return true;
    typeInvalid(path, v, type);
    return false;
  }

  void typeInvalid(const std::string& path, const json& v, const std::string& type) {
    const auto actual = typeName(v);
    add(path, "Invalid value: " + json(actual).dump(),
        path + " in body must be of type " + type + ": " + json(actual).dump());
  }

  void string(const std::string& text, const json& v, const json& s, const std::string& path) {
    if (const auto n = s.find("maxLength");
        n != s.end() && n->is_number() && codePoints(text) > n->get<std::uint64_t>())
      add(path, "Too long: may not be more than " + goNumber(*n) + " bytes", "");
    if (const auto n = s.find("minLength");
        n != s.end() && n->is_number() && codePoints(text) < n->get<std::uint64_t>())
      inBody(path, v, "should be at least " + goNumber(*n) + " chars long");
    if (const auto p = s.find("pattern"); p != s.end() && p->is_string()) {
      if (!patternMatches(p->get_ref<const std::string&>(), text))
        inBody(path, v, "should match '" + p->get<std::string>() + "'");
    }
    if (const auto f = s.find("format"); f != s.end() && f->is_string()) {
      if (!formatValid(f->get_ref<const std::string&>(), text))
        add(path, "Invalid value: " + badValue(v),
            path + " in body must be of type " + f->get<std::string>() + ": " + json(text).dump());
    }
  }

  void number(const json& v, const json& s, const std::string& path) {
    const double d = v.get<double>();
    if (const auto m = s.find("minimum"); m != s.end() && m->is_number()) {
      const bool exclusive = flag(s, "exclusiveMinimum");
      const double min = m->get<double>();
      if (exclusive ? d <= min : d < min)
        inBody(path, v, std::string("should be greater than ") + (exclusive ? "" : "or equal to ") + goNumber(*m));
    }
    if (const auto m = s.find("maximum"); m != s.end() && m->is_number()) {
      const bool exclusive = flag(s, "exclusiveMaximum");
      const double max = m->get<double>();
      if (exclusive ? d >= max : d > max)
        inBody(path, v, std::string("should be less than ") + (exclusive ? "" : "or equal to ") + goNumber(*m));
    }
    if (const auto m = s.find("multipleOf"); m != s.end() && m->is_number() && m->get<double>() > 0) {
      const double q = d / m->get<double>();
      if (std::floor(q) != q) inBody(path, v, "should be a multiple of " + goNumber(*m));
    }
  }

  void minMaxProperties(const json& v, const json& s, const std::string& path) {
    const auto size = static_cast<std::int64_t>(v.size());
    if (const auto n = s.find("maxProperties"); n != s.end() && n->is_number() && size > n->get<std::int64_t>())
      add(path, "Too many: " + std::to_string(size), "must have at most " + goNumber(*n) + " items");
    if (const auto n = s.find("minProperties"); n != s.end() && n->is_number() && size < n->get<std::int64_t>())
      inBody(path, *n, "should have at least " + goNumber(*n) + " properties");
  }

  void array(const json& v, const json& s, const std::string& path) {
    const auto size = static_cast<std::int64_t>(v.size());
    if (const auto n = s.find("maxItems"); n != s.end() && n->is_number() && size > n->get<std::int64_t>())
      add(path, "Too many: " + std::to_string(size), "must have at most " + goNumber(*n) + " items");
    if (const auto n = s.find("minItems"); n != s.end() && n->is_number() && size < n->get<std::int64_t>())
      inBody(path, json(size), "should have at least " + goNumber(*n) + " items");
    if (const json* items = child(s, "items")) {
      for (std::size_t i = 0; i < v.size(); ++i) value(v[i], *items, path + "[" + std::to_string(i) + "]");
    }
    const auto listType = s.find("x-kubernetes-list-type");
    if (listType == s.end() || !listType->is_string()) return;
    if (*listType == "set") {
      for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (v[i] == v[j]) {
            add(path + "[" + std::to_string(i) + "]", "Duplicate value: " + badValue(v[i]), "");
            break;
          }
    } else if (*listType == "map") {
      std::vector<std::string> keys;
      if (const auto k = s.find("x-kubernetes-list-map-keys"); k != s.end() && k->is_array())
        for (const auto& key : *k)
          if (key.is_string()) keys.push_back(key.get<std::string>());
      std::vector<json> seen;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_object()) continue;
        json entry = json::object();
        for (const auto& key : keys)
          if (auto it = v[i].find(key); it != v[i].end()) entry[key] = *it;
        if (std::find(seen.begin(), seen.end(), entry) != seen.end()) {
          add(path + "[" + std::to_string(i) + "]", "Duplicate value: " + goMap(entry), "");
        } else {
          seen.push_back(std::move(entry));
        }
      }
    }
  }

  // Schema patterns are ECMA-262 regular expressions; kube-apiserver reads them with Go's
  // regexp (RE2), which cel::Regex stands in for. compile() refuses a CRD with a pattern it
  // cannot read, so a pattern missing here comes from a schema validated without compile().
  bool patternMatches(const std::string& pattern, const std::string& text) {
    if (compiled_) {
      if (auto it = compiled_->patterns.find(pattern); it != compiled_->patterns.end()) return it->second.search(text);
    }
    auto it = patterns_.find(pattern);
    if (it == patterns_.end()) it = patterns_.emplace(pattern, cel::Regex::compile(pattern)).first;
    return it->second.search(text);
  }

  const Compiled* compiled_;
  std::map<std::string, cel::Regex, std::less<>> patterns_;
};

}  // namespace

FieldErrors validate(const json& object, const json& schema, const Compiled* compiled) {
  Validator v(compiled);
  if (!schema.is_object() || !object.is_object()) return v.errors;
  v.object(object, schema, "", /*root=*/true);
  return std::move(v.errors);
}

void pruneNulls(json& value, const json& schema) {
  if (value.is_object()) {
    const json* properties = child(schema, "properties");
    const json* additional = child(schema, "additionalProperties");
    for (auto it = value.begin(); it != value.end();) {
      const json* fieldSchema = nullptr;
      if (properties) {
        auto p = properties->find(it.key());
        if (p != properties->end() && p->is_object()) fieldSchema = &*p;
      }
      if (!fieldSchema) fieldSchema = additional;
      if (fieldSchema && it->is_null() && !flag(*fieldSchema, "nullable")) {
        it = value.erase(it);
        continue;
      }
      if (fieldSchema) pruneNulls(*it, *fieldSchema);
      ++it;
    }
  } else if (value.is_array()) {
    if (const json* items = child(schema, "items"))
      for (auto& item : value) pruneNulls(item, *items);
  }
}

}  // namespace mka::sandbox::schema
