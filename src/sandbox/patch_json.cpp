#include <optional>
#include <string>
#include <vector>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"

// RFC 6902 as kube-apiserver applies it (evanphx/json-patch v4): a body that is not a list of
// operations is 400; an operation that cannot apply is 422 with the library's message, which
// we also point at the failing operation ("[i]").

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;

// Failure of one operation; turned into the 422 with the operation's index by the caller.
struct OpError {
  std::string message;
};

std::vector<std::string> parsePointer(const std::string& pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer.front() != '/') throw OpError{"JSON pointer must start with '/': " + pointer};
  std::string token;
  for (std::size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(std::move(token));
      token.clear();
    } else if (pointer[i] == '~' && i + 1 < pointer.size() && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
      token += pointer[++i] == '0' ? '~' : '/';
    } else {
      token += pointer[i];
    }
  }
  return tokens;
}

std::optional<std::size_t> arrayIndex(const std::string& token) {
  if (token.empty() || token.size() > 9) return std::nullopt;
  std::size_t out = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return std::nullopt;
    out = out * 10 + static_cast<std::size_t>(c - '0');
  }
  return out;
}

// The node `tokens` name, or null when a step is missing.
json* findByTokens(json& doc, const std::vector<std::string>& tokens, std::size_t count) {
  json* node = &doc;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& t = tokens[i];
    if (node->is_object()) {
      auto it = node->find(t);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array()) {
      auto index = arrayIndex(t);
      if (!index || *index >= node->size()) return nullptr;
      node = &(*node)[*index];
    } else {
      return nullptr;
    }
  }
  return node;
}

std::string invalidIndex(const std::string& token) {
  return "Unable to access invalid index: " + token + ": invalid index referenced";
}

void add(json& doc, const std::string& path, json value) {
  const auto tokens = parsePointer(path);
  if (tokens.empty()) {
    doc = std::move(value);
    return;
  }
  json* parent = findByTokens(doc, tokens, tokens.size() - 1);
  if (!parent || !(parent->is_object() || parent->is_array())) {
    throw OpError{"add operation does not apply: doc is missing path: \"" + path + "\": missing value"};
  }
  const auto& key = tokens.back();
  if (parent->is_object()) {
    (*parent)[key] = std::move(value);
    return;
  }
  if (key == "-") {
    parent->push_back(std::move(value));
    return;
  }
  auto index = arrayIndex(key);
  if (!index || *index > parent->size()) throw OpError{invalidIndex(key)};
  parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(*index), std::move(value));
}

json remove(json& doc, const std::string& path, const std::string& op) {
  const auto tokens = parsePointer(path);
  if (tokens.empty()) throw OpError{op + " operation does not apply: doc is missing path: \"\": missing value"};
  json* parent = findByTokens(doc, tokens, tokens.size() - 1);
  if (!parent || !(parent->is_object() || parent->is_array())) {
    throw OpError{op + " operation does not apply: doc is missing path: \"" + path + "\": missing value"};
  }
  const auto& key = tokens.back();
  if (parent->is_object()) {
    auto it = parent->find(key);
    if (it == parent->end()) {
      throw OpError{"error in " + op + " for path: '" + path + "': Unable to remove nonexistent key: " + key +
                    ": missing value"};
    }
    json out = std::move(*it);
    parent->erase(it);
    return out;
  }
  auto index = arrayIndex(key);
  if (!index || *index >= parent->size()) {
    throw OpError{"error in " + op + " for path: '" + path + "': " + invalidIndex(key)};
  }
  json out = std::move((*parent)[*index]);
  parent->erase(*index);
  return out;
}

const json& member(const json& op, const char* name, const std::string& kind) {
  auto it = op.find(name);
  if (it == op.end()) throw OpError{kind + " operation missing '" + name + "' field"};
  return *it;
}

std::string pathOf(const json& op, const char* name, const std::string& kind) {
  const auto& p = member(op, name, kind);
  if (!p.is_string()) throw OpError{kind + " operation has a non-string '" + name + "'"};
  return p.get<std::string>();
}

void apply(json& doc, const json& op) {
  if (!op.is_object()) throw OpError{"operation must be an object"};
  const auto kindIt = op.find("op");
  const std::string kind = kindIt != op.end() && kindIt->is_string() ? kindIt->get<std::string>() : "";
  if (kind == "add") {
    add(doc, pathOf(op, "path", kind), member(op, "value", kind));
  } else if (kind == "remove") {
    remove(doc, pathOf(op, "path", kind), kind);
  } else if (kind == "replace") {
    const auto path = pathOf(op, "path", kind);
    const auto tokens = parsePointer(path);
    json* parent = tokens.empty() ? nullptr : findByTokens(doc, tokens, tokens.size() - 1);
    if (!tokens.empty() && (!parent || !(parent->is_object() || parent->is_array()))) {
      throw OpError{"replace operation does not apply: doc is missing path: " + path + ": missing value"};
    }
    json* target = findByTokens(doc, tokens, tokens.size());
    if (!target) throw OpError{"replace operation does not apply: doc is missing key: " + path + ": missing value"};
    *target = member(op, "value", kind);
  } else if (kind == "move" || kind == "copy") {
    const auto from = pathOf(op, "from", kind);
    const auto fromTokens = parsePointer(from);
    json* source = findByTokens(doc, fromTokens, fromTokens.size());
    if (!source) {
      throw OpError{kind + " operation does not apply: doc is missing from path: " + from + ": missing value"};
    }
    json value = kind == "copy" ? *source : remove(doc, from, kind);
    add(doc, pathOf(op, "path", kind), std::move(value));
  } else if (kind == "test") {
    const auto path = pathOf(op, "path", kind);
    const auto tokens = parsePointer(path);
    json* target = findByTokens(doc, tokens, tokens.size());
    const auto& expected = member(op, "value", kind);
    // A missing member equals a test for null, as in evanphx/json-patch.
    const bool equal = target ? *target == expected : expected.is_null();
    if (!equal) throw OpError{"testing value " + path + " failed: test failed"};
  } else {
    throw OpError{"Unexpected kind: " + kind};
  }
}

}  // namespace

nlohmann::json jsonPatch(const nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_array()) {
    throw ApiError::badRequest(std::string("json: cannot unmarshal ") +
                               (patch.is_object()   ? "object"
                                : patch.is_string() ? "string"
                                                    : patch.type_name()) +
                               " into Go value of type jsonpatch.Patch");
  }
  json doc = target;
  for (std::size_t i = 0; i < patch.size(); ++i) {
    try {
      apply(doc, patch[i]);
    } catch (const OpError& e) {
      throw ApiError::unprocessable(e.message, "[" + std::to_string(i) + "]");
    }
  }
  return doc;
}

}  // namespace mka::sandbox::patch
