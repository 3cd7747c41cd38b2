// The CEL half of kube-apiserver's custom resource validation (apiextensions-apiserver's
// pkg/apiserver/schema/cel): x-kubernetes-validations rules compiled when the CRD is registered
// and evaluated on every write, with kube's field paths and messages.
#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "schema_compiled.h"
#include "schema_node.h"

namespace mka::sandbox::schema {
namespace {

using nlohmann::json;

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::string stringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Reads a rule's fieldPath (".spec.x", ".labels['a.b']") against the schema node it sits on,
// as kube-apiserver's ValidFieldPath does: a property is a child ("spec.x"), an
// additionalProperties key is a key ("labels[a.b]"). Empty optional when it names no field.
std::optional<std::string> normalizeFieldPath(const std::string& written, const json& schema) {
  std::string out;
  const json* at = &schema;
  std::size_t i = 0;
  auto step = [&](const std::string& name) -> bool {
    if (const json* properties = child(*at, "properties"); properties && properties->contains(name)) {
      out += (out.empty() ? "" : ".") + name;
      at = &(*properties)[name];
      return at->is_object();
    }
    if (const json* additional = child(*at, "additionalProperties")) {
      out += "[" + name + "]";
      at = additional;
      return true;
    }
    return false;
  };
  while (i < written.size()) {
    if (written[i] == '.') {
      const std::size_t end = written.find_first_of(".[", i + 1);
      const std::string name = written.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
      if (name.empty() || !step(name)) return std::nullopt;
      i = end == std::string::npos ? written.size() : end;
    } else if (written.compare(i, 2, "['") == 0) {
      const std::size_t end = written.find("']", i + 2);
      if (end == std::string::npos || !step(written.substr(i + 2, end - i - 2))) return std::nullopt;
      i = end + 2;
    } else {
      return std::nullopt;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

class RuleCompiler {
 public:
  explicit RuleCompiler(FieldErrors& errors) : errors_(errors) {}

  // The node for `schema` when it has rules at or below it. `correlatable` is false below a
  // list that is not a list-type map, or an atomic map: there oldSelf has no old value to be.
  std::optional<Compiled::Node> node(const json& schema, const std::string& path, bool correlatable) {
    Compiled::Node n;
    n.type = stringField(schema, "type");
    n.mapList = stringField(schema, "x-kubernetes-list-type") == "map";
    n.atomicMap = stringField(schema, "x-kubernetes-map-type") == "atomic";
    if (auto keys = schema.find("x-kubernetes-list-map-keys"); keys != schema.end() && keys->is_array())
      for (const auto& k : *keys)
        if (k.is_string()) n.mapKeys.push_back(k.get<std::string>());
    if (auto rules = schema.find("x-kubernetes-validations"); rules != schema.end() && rules->is_array()) {
      for (std::size_t i = 0; i < rules->size(); ++i)
        rule((*rules)[i], schema, path + ".x-kubernetes-validations[" + std::to_string(i) + "]", correlatable, n);
    }
    for (const char* combinator : {"allOf", "anyOf", "oneOf", "not"}) {
      if (auto c = schema.find(combinator); c != schema.end() && mentionsRules(*c))
        errors_.push_back({path + "." + combinator, "Forbidden",
                           "the sandbox does not evaluate x-kubernetes-validations under " + std::string(combinator) +
                               "; move the rules to the node itself"});
    }
    const bool below = correlatable && !n.atomicMap;
    if (const json* properties = child(schema, "properties")) {
      for (const auto& [name, sub] : properties->items()) {
        if (!sub.is_object()) continue;
        if (auto c = node(sub, path + ".properties[" + name + "]", below))
          n.properties.emplace_back(name, std::move(*c));
      }
    }
    if (const json* additional = child(schema, "additionalProperties")) {
      if (auto c = node(*additional, path + ".additionalProperties", below))
        n.additionalProperties.push_back(std::move(*c));
    }
    if (const json* items = child(schema, "items")) {
      if (auto c = node(*items, path + ".items", correlatable && n.mapList)) n.items.push_back(std::move(*c));
    }
    if (n.rules.empty() && n.properties.empty() && n.additionalProperties.empty() && n.items.empty())
      return std::nullopt;
    return n;
  }

 private:
  static bool mentionsRules(const json& value) {
    if (value.is_object()) {
      if (value.contains("x-kubernetes-validations")) return true;
      return std::any_of(value.begin(), value.end(), mentionsRules);
    }
    if (value.is_array()) return std::any_of(value.begin(), value.end(), mentionsRules);
    return false;
  }

  void rule(const json& entry, const json& schema, const std::string& path, bool correlatable, Compiled::Node& n) {
    if (!entry.is_object()) return;
    const std::string text = stringField(entry, "rule");
    if (trim(text).empty()) {
      errors_.push_back({path + ".rule", "Required value", ""});
      return;
    }
    try {
      Compiled::Rule r{text, trim(stringField(entry, "message")), stringField(entry, "reason"),
                       "",   cel::Program::compile(text),         std::nullopt};
      if (r.program.usesOldSelf() && !correlatable) {
        errors_.push_back({path + ".rule", "Invalid value: " + json(text).dump(),
                           "oldSelf cannot be used on the uncorrelatable portion of the schema"});
        return;
      }
      if (const auto m = stringField(entry, "messageExpression"); !trim(m).empty()) {
        try {
          r.messageExpression = cel::Program::compile(m);
        } catch (const cel::CompileError& e) {
          errors_.push_back({path + ".messageExpression", "Invalid value: " + json(m).dump(),
                             std::string("messageExpression compilation failed: ") + e.what()});
          return;
        }
      }
      if (const auto written = stringField(entry, "fieldPath"); !written.empty()) {
        auto normalized = normalizeFieldPath(written, schema);
        if (!normalized) {
          errors_.push_back(
              {path + ".fieldPath", "Invalid value: " + json(written).dump(), "fieldPath must be a valid path"});
          return;
        }
        r.fieldPath = *normalized;
      }
      static const std::vector<std::string> kReasons = {"", "FieldValueInvalid", "FieldValueForbidden",
                                                        "FieldValueRequired", "FieldValueDuplicate"};
      if (std::find(kReasons.begin(), kReasons.end(), r.reason) == kReasons.end()) {
        errors_.push_back({path + ".reason", "Unsupported value: " + json(r.reason).dump(),
                           "supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", "
                           "\"FieldValueRequired\""});
        return;
      }
      n.rules.push_back(std::move(r));
    } catch (const cel::CompileError& e) {
      errors_.push_back(
          {path + ".rule", "Invalid value: " + json(text).dump(), std::string("compilation failed: ") + e.what()});
    }
  }

  FieldErrors& errors_;
};

// Collects every `pattern` the OpenAPI validation will read (properties, additionalProperties
// and items, as it walks them).
void collectPatterns(const json& schema, const std::string& path, Compiled& compiled, FieldErrors& errors) {
  if (auto p = schema.find("pattern"); p != schema.end() && p->is_string()) {
    const auto& pattern = p->get_ref<const std::string&>();
    if (!compiled.patterns.count(pattern)) {
      try {
        compiled.patterns.emplace(pattern, cel::Regex::compile(pattern));
      } catch (const cel::RegexError& e) {
        errors.push_back(
            {path + ".pattern", "Invalid value: " + json(pattern).dump(), std::string(e.what()) + ": " + e.fix()});
      }
    }
  }
  if (const json* properties = child(schema, "properties"))
    for (const auto& [name, sub] : properties->items())
      if (sub.is_object()) collectPatterns(sub, path + ".properties[" + name + "]", compiled, errors);
  if (const json* additional = child(schema, "additionalProperties"))
    collectPatterns(*additional, path + ".additionalProperties", compiled, errors);
  if (const json* items = child(schema, "items")) collectPatterns(*items, path + ".items", compiled, errors);
}

// field.Path's rendering: a nil path (the root) prints as "<nil>".
std::string shown(const std::string& path) { return path.empty() ? "<nil>" : path; }

std::string childPath(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

// A value and its old value, for ratcheting; both null on create.
struct Correlated {
  const json* now = nullptr;
  const json* old = nullptr;
  bool unchanged() const { return now && old && *now == *old; }
};

class RuleEvaluator {
 public:
  FieldErrors errors;

  // `old` is the correlated old value (null when there is none); `nearest` the nearest node,
  // this one or an ancestor, that has one, compared with its old value only when a rule fails
  // (ratcheting).
  // nearest node with an old value equals it, for ratcheting.
  void value(const json& v, const json* old, Correlated nearest, const Compiled::Node& n, const std::string& path) {
    if (v.is_null()) return;
    if (old && old->is_null()) old = nullptr;
    if (old) nearest = {&v, old};
    for (const auto& r : n.rules) evaluate(r, v, old, nearest, n, path);
    if (v.is_object()) {
      const bool correlate = old && old->is_object() && !n.atomicMap;
      for (const auto& [name, sub] : n.properties) {
        auto it = v.find(name);
        if (it == v.end() || (path.empty() && isTypeMeta(name))) continue;
        value(*it, correlate ? find(*old, name) : nullptr, nearest, sub, childPath(path, name));
      }
      if (!n.additionalProperties.empty()) {
        for (const auto& [key, field] : v.items())
          value(field, correlate ? find(*old, key) : nullptr, nearest, n.additionalProperties.front(),
                path + "[" + key + "]");
      }
    } else if (v.is_array() && !n.items.empty()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        const json* oldItem = n.mapList && old && old->is_array() ? sameKeys(*old, v[i], n.mapKeys) : nullptr;
        value(v[i], oldItem, nearest, n.items.front(), path + "[" + std::to_string(i) + "]");
      }
    }
  }

  bool ratchet = false;  // an update: errors at unchanged values are dropped

 private:
  static bool isTypeMeta(const std::string& name) {
    return name == "apiVersion" || name == "kind" || name == "metadata";
  }

  static const json* find(const json& object, const std::string& key) {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  static const json* sameKeys(const json& list, const json& item, const std::vector<std::string>& keys) {
    if (!item.is_object()) return nullptr;
    for (const auto& candidate : list) {
      if (!candidate.is_object()) continue;
      bool same = true;
      for (const auto& k : keys) {
        auto a = item.find(k);
        auto b = candidate.find(k);
        same = same && (a == item.end()) == (b == candidate.end()) && (a == item.end() || *a == *b);
      }
      if (same) return &candidate;
    }
    return nullptr;
  }

  void evaluate(const Compiled::Rule& r, const json& v, const json* old, Correlated nearest, const Compiled::Node& n,
                const std::string& path) {
    const bool transition = r.program.usesOldSelf();
    if (transition && !old) return;
    cel::Activation activation;
    activation.variables["self"] = &v;
    if (old) activation.variables["oldSelf"] = old;
    const std::string ruleText = r.message.empty() ? trim(r.rule) : r.message;
    const std::string type = json(n.type).dump();
    json result;
    try {
      result = r.program.evaluate(activation);
    } catch (const cel::EvalError& e) {
      const std::string what = e.what();
      if (what.starts_with("no such overload")) {
        add(path, "Invalid value: " + type,
            "'" + what +
                "': call arguments did not match a supported operator, function or macro signature for rule: " +
                ruleText);
      } else if (what.starts_with("cost limit exceeded")) {
        add(path, "Invalid value: " + type,
            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call "
            "cost "
            "exceeds limit for rule: " +
                ruleText);
      } else {
        add(path, "Invalid value: " + type, what + " evaluating rule: " + ruleText);
      }
      return;
    }
    if (result == true) return;
    // Ratcheting: an unchanged value keeps the errors it was stored with (kube warns instead).
    if (!transition && ratchet && nearest.unchanged()) return;
    std::string detail = r.message.empty() ? "failed rule: " + trim(r.rule) : r.message;
    if (r.messageExpression) {
      try {
        const json message = r.messageExpression->evaluate(activation);
        if (message.is_string() && !trim(message.get<std::string>()).empty()) {
          const std::string text = trim(message.get<std::string>());
          if (text.find('\n') != std::string::npos) {
            add(path, "Invalid value: " + type, "messageExpression should not contain line breaks");
            return;
          }
          detail = text;
        }
      } catch (const cel::EvalError&) {
        // kube-apiserver logs it and falls back to the message.
      }
    }
    const std::string at = r.fieldPath.empty() ? path : childPath(path, r.fieldPath);
    if (r.reason == "FieldValueForbidden") {
      add(at, "Forbidden", detail);
    } else if (r.reason == "FieldValueRequired") {
      add(at, "Required value", detail);
    } else if (r.reason == "FieldValueDuplicate") {
      add(at, "Duplicate value: " + type, "");
    } else {
      add(at, "Invalid value: " + type, detail);
    }
  }

  void add(const std::string& path, std::string problem, std::string detail) {
    errors.push_back({shown(path), std::move(problem), std::move(detail)});
  }
};

}  // namespace

std::shared_ptr<const Compiled> compile(const json& schema, const std::string& path, FieldErrors& errors) {
  // Every sandbox cluster reads the same few CRDs, and one CRD write reads its CRD several times
  // (the 422 check, the status, the registry); compiling a schema's regexes and rules dominated
  // cluster start-up. A Compiled is immutable, so one per distinct (path, schema) is shared.
  struct Entry {
    std::string path;
    json schema;
    std::shared_ptr<const Compiled> compiled;
    FieldErrors errors;
  };
  static std::mutex mutex;
  static std::unordered_multimap<std::size_t, Entry> cache;
  constexpr std::size_t kMaxEntries = 64;

  const std::size_t hash = std::hash<json>{}(schema) ^ std::hash<std::string>{}(path);
  {
    std::lock_guard lock(mutex);
    for (auto [it, end] = cache.equal_range(hash); it != end; ++it) {
      if (it->second.path != path || it->second.schema != schema) continue;
      errors.insert(errors.end(), it->second.errors.begin(), it->second.errors.end());
      return it->second.compiled;
    }
  }
  auto compiled = std::make_shared<Compiled>();
  FieldErrors found;
  if (schema.is_object()) {
    collectPatterns(schema, path, *compiled, found);
    compiled->root = RuleCompiler(found).node(schema, path, /*correlatable=*/true);
  }
  errors.insert(errors.end(), found.begin(), found.end());
  std::lock_guard lock(mutex);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(hash, Entry{path, schema, compiled, std::move(found)});
  return compiled;
}

FieldErrors validateRules(const json& object, const json* old, const Compiled& compiled) {
  RuleEvaluator evaluator;
  if (!compiled.root) return {};
  evaluator.ratchet = old != nullptr;
  evaluator.value(object, old, {}, *compiled.root, "");
  return std::move(evaluator.errors);
}

bool blocksRules(const FieldErrors& errors) {
  return std::any_of(errors.begin(), errors.end(), [](const FieldError& e) {
    return e.problem.starts_with("Required value") || e.problem.starts_with("Unsupported value") ||
           e.problem.starts_with("Too long") || e.problem.starts_with("Too many") ||
           (e.problem.starts_with("Invalid value") && e.fix.find(" in body must be of type ") != std::string::npos);
  });
}

FieldError rulesNotChecked() {
  return {"<nil>", "Invalid value: \"null\"",
          "some validation rules were not checked because the object was invalid; correct the existing errors to "
          "complete validation"};
}

}  // namespace mka::sandbox::schema
