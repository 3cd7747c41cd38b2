#include "mka/webhook/lean_admission_review.h"

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <simdjson.h>

#include "mka/api/kueue.h"
#include "mka/common/strings.h"
#include "mka/jobkind/job_kind.h"

namespace mka::webhook {
namespace {

namespace dom = simdjson::dom;
using nlohmann::json;

// The annotations a decision reads (mutator.cpp, validator.cpp); the lean object carries no
// others, so a kubectl last-applied-configuration annotation is never copied.
constexpr std::array<std::string_view, 1> kReadAnnotations = {api::kPrebuiltWorkloadNameKey};
// First allocation of a thread's parser; it grows with the bodies up to kLeanReusedBufferBytes.
constexpr std::size_t kInitialBufferBytes = 4096;

// Reads members as decodeAdmissionReview reads them, but gives up (failed()) where it would
// refuse, or where simdjson and nlohmann could read the same text differently: a key that
// appears twice (nlohmann keeps the last, simdjson finds the first).
class Reader {
 public:
  bool failed() const { return failed_; }

  // The member `key` of `parent`; nullopt when absent.
  std::optional<dom::element> member(dom::object parent, std::string_view key) {
    std::optional<dom::element> found;
    for (const dom::key_value_pair field : parent) {
      if (field.key != key) continue;
      if (found) {
        failed_ = true;
        return std::nullopt;
      }
      found = field.value;
    }
    return found;
  }

  // As member(), with a null read as absent.
  std::optional<dom::element> nonNull(dom::object parent, std::string_view key) {
    auto value = member(parent, key);
    return value && value->is_null() ? std::nullopt : value;
  }

  // Absent or null read as "", as decodeAdmissionReview's optionalString does.
  std::string optionalString(dom::object parent, std::string_view key) {
    const auto value = nonNull(parent, key);
    return value ? string(*value) : std::string();
  }

  // Present, a string and not empty.
  std::string requiredString(dom::object parent, std::string_view key) {
    auto text = optionalString(parent, key);
    if (text.empty()) failed_ = true;
    return text;
  }

  std::string string(dom::element value) {
    std::string_view text;
    if (value.get_string().get(text)) failed_ = true;
    return std::string(text);
  }

  // nullopt (and failed()) when `value` is not an object.
  std::optional<dom::object> object(dom::element value) {
    dom::object object;
    if (value.get_object().get(object)) {
      failed_ = true;
      return std::nullopt;
    }
    return object;
  }

 private:
  bool failed_ = false;
};

// The value as nlohmann's parser would have built it from the same text: a repeated key keeps
// its last value, a non-negative integer is unsigned.
json toJson(dom::element value) {
  switch (value.type()) {
    case dom::element_type::OBJECT: {
      json out = json::object();
      for (const dom::key_value_pair field : dom::object(value)) out[std::string(field.key)] = toJson(field.value);
      return out;
    }
    case dom::element_type::ARRAY: {
      json out = json::array();
      for (const dom::element item : dom::array(value)) out.push_back(toJson(item));
      return out;
    }
    case dom::element_type::INT64: {
      const std::int64_t number = value.get_int64().value_unsafe();
      return number >= 0 ? json(static_cast<std::uint64_t>(number)) : json(number);
    }
    case dom::element_type::UINT64: return json(value.get_uint64().value_unsafe());
    case dom::element_type::DOUBLE: return json(value.get_double().value_unsafe());
    case dom::element_type::STRING: return json(std::string(value.get_string().value_unsafe()));
    case dom::element_type::BOOL: return json(value.get_bool().value_unsafe());
    case dom::element_type::NULL_VALUE: return json(nullptr);
  }
  return json(nullptr);
}

bool allStrings(dom::object map) {
  for (const dom::key_value_pair field : map) {
    if (!field.value.is_string()) return false;
  }
  return true;
}

bool readAnnotation(std::string_view key) {
  for (const auto read : kReadAnnotations) {
    if (key == read) return true;
  }
  return false;
}

// labels or annotations as checkObject accepts them (null, or an object of strings); `keep`
// picks the entries the lean object carries.
bool projectStringMap(Reader& reader, dom::object metadata, std::string_view key, bool (*keep)(std::string_view),
                      json& out) {
  const auto value = reader.member(metadata, key);
  if (reader.failed()) return false;
  if (!value) return true;
  if (value->is_null()) {
    out[key] = nullptr;
    return true;
  }
  const auto map = reader.object(*value);
  if (!map || !allStrings(*map)) return false;
  json& entries = out[key] = json::object();
  for (const dom::key_value_pair field : *map) {
    if (keep == nullptr || keep(field.key))
      entries[std::string(field.key)] = std::string(field.value.get_string().value_unsafe());
  }
  return true;
}

// metadata as checkObject accepts it, with only what the decisions and the messages read.
bool projectMetadata(Reader& reader, dom::element value, json& out) {
  if (value.is_null()) {
    out = nullptr;
    return true;
  }
  const auto metadata = reader.object(value);
  if (!metadata) return false;
  out = json::object();
  for (const std::string_view key : {"name", "namespace", "generateName"}) {
    const auto field = reader.member(*metadata, key);
    if (reader.failed()) return false;
    if (!field) continue;
    if (!field->is_null() && !field->is_string()) return false;
    out[key] = toJson(*field);
  }
  if (!projectStringMap(reader, *metadata, "labels", nullptr, out)) return false;
  if (!projectStringMap(reader, *metadata, "annotations", readAnnotation, out)) return false;
  // Read by the LocalQueue defaulting (a job owned by a queued kind is not queued itself).
  const auto owners = reader.member(*metadata, "ownerReferences");
  if (reader.failed()) return false;
  if (owners) out["ownerReferences"] = toJson(*owners);
  return true;
}

// Copies the field at `keys` and every parent on the way into `out`, as far as they exist: a
// parent that is not an object is copied whole, as the decisions read it (not an object: no
// patch there, no value below it).
bool projectPath(Reader& reader, dom::object source, std::span<const std::string> keys, json& out) {
  dom::object node = source;
  json* target = &out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto value = reader.member(node, keys[i]);
    if (reader.failed()) return false;
    if (!value) return true;
    dom::object child;
    if (i + 1 == keys.size() || value->get_object().get(child)) {
      (*target)[keys[i]] = toJson(*value);
      return true;
    }
    json& next = (*target)[keys[i]];
    if (!next.is_object()) next = json::object();
    node = child;
    target = &next;
  }
  return true;
}

using Paths = std::vector<std::vector<std::string>>;

// The fields of the request's kind a decision reads besides metadata: its marker (when it is
// a field, not a label) and its suspend field. None when the configuration lists no such kind:
// the decisions then allow without reading the object.
Paths decisionPaths(const config::Configuration& config, const api::GroupVersionKind& gvk) {
  Paths paths;
  const auto kind = jobkind::kindOf(config, gvk);
  if (!kind) return paths;
  if (kind->managedBy().type == config::ManagedByLocation::Type::Path) {
    paths.push_back(strings::split(kind->managedBy().path, '.'));
  }
  if (kind->integration() != nullptr && kind->integration()->suspend) {
    paths.push_back(strings::split(kind->integration()->suspend->path, '.'));
  }
  return paths;
}

// request.object or request.oldObject as takeObject accepts it (an object whose metadata
// checkObject accepts), projected.
bool projectObject(Reader& reader, dom::element value, const Paths& paths, json& out) {
  const auto object = reader.object(value);
  if (!object) return false;
  out = json::object();
  const auto metadata = reader.member(*object, "metadata");
  if (reader.failed()) return false;
  if (metadata && !projectMetadata(reader, *metadata, out["metadata"])) return false;
  for (const auto& keys : paths) {
    if (!projectPath(reader, *object, keys, out)) return false;
  }
  return true;
}

bool readKind(Reader& reader, dom::object request, api::GroupVersionKind& gvk) {
  const auto kind = reader.nonNull(request, "kind");
  if (!kind) return false;
  const auto fields = reader.object(*kind);
  if (!fields) return false;
  const auto group = reader.nonNull(*fields, "group");  // "" for the core group, but present
  if (!group) return false;
  gvk.group = reader.string(*group);
  gvk.version = reader.requiredString(*fields, "version");
  gvk.kind = reader.requiredString(*fields, "kind");
  return !reader.failed();
}

bool knownOperation(std::string_view operation) {
  return operation == "CREATE" || operation == "UPDATE" || operation == "DELETE" || operation == "CONNECT";
}

bool decodeRequestFields(Reader& reader, dom::object in, AdmissionRequest& request) {
  request.uid = reader.requiredString(in, "uid");
  if (reader.failed() || !readKind(reader, in, request.kind)) return false;
  if (const auto resource = reader.nonNull(in, "resource")) {
    const auto fields = reader.object(*resource);
    if (!fields) return false;
    request.resource = reader.optionalString(*fields, "resource");
  }
  request.subResource = reader.optionalString(in, "subResource");
  request.operation = reader.requiredString(in, "operation");
  if (reader.failed() || !knownOperation(request.operation)) return false;
  request.name = reader.optionalString(in, "name");
  request.namespace_ = reader.optionalString(in, "namespace");
  if (const auto dryRun = reader.nonNull(in, "dryRun")) {
    if (dryRun->get_bool().get(request.dryRun)) return false;
  }
  return !reader.failed();
}

// `required`: the operation needs this object (CREATE/UPDATE need `object`, UPDATE `oldObject`).
bool decodeObject(Reader& reader, dom::object in, std::string_view key, bool required, const Paths& paths, json& out) {
  const auto value = reader.nonNull(in, key);
  if (reader.failed()) return false;
  if (!value) return !required;
  return projectObject(reader, *value, paths, out);
}

// The parser for `body`, with buffers for it and nesting limited to kMaxJsonDepth; nullptr when
// memory cannot be had (the DOM path then decides). `own` holds a big body's parser.
dom::parser* parserFor(std::string_view body, std::unique_ptr<dom::parser>& own) {
  thread_local dom::parser reused;
  dom::parser* parser = &reused;
  if (body.size() > kLeanReusedBufferBytes) {
    own = std::make_unique<dom::parser>();
    parser = own.get();
  }
  // A parser grows its buffers to a bigger body by itself, keeping its depth limit.
  if (parser->max_depth() != kMaxJsonDepth &&
      parser->allocate(std::max(body.size(), kInitialBufferBytes), kMaxJsonDepth) != simdjson::SUCCESS) {
    return nullptr;
  }
  return parser;
}

}  // namespace

std::optional<AdmissionRequest> decodeLeanAdmissionReview(std::string_view body, const config::Configuration& config) {
  // The root element points into the parser's buffers: `own` lives as long as it is read.
  std::unique_ptr<dom::parser> own;
  dom::parser* parser = parserFor(body, own);
  if (parser == nullptr) return std::nullopt;
  // simdjson refuses what nlohmann refuses (malformed text, invalid UTF-8, lone surrogates,
  // numbers beyond double range, nesting deeper than kMaxJsonDepth) and more (integers beyond
  // 64 bits, a byte-order mark): either way the DOM path decides.
  dom::element root;
  if (parser->parse(body.data(), body.size()).get(root)) return std::nullopt;

  Reader reader;
  const auto review = reader.object(root);
  if (!review) return std::nullopt;
  AdmissionRequest request;
  request.apiVersion = reader.requiredString(*review, "apiVersion");
  if (reader.failed() || (request.apiVersion != kAdmissionV1 && request.apiVersion != kAdmissionV1beta1)) {
    return std::nullopt;
  }
  if (reader.requiredString(*review, "kind") != "AdmissionReview") return std::nullopt;
  const auto in = reader.nonNull(*review, "request");
  if (!in) return std::nullopt;
  const auto fields = reader.object(*in);
  if (!fields || !decodeRequestFields(reader, *fields, request)) return std::nullopt;

  const bool create = request.operation == "CREATE";
  const bool update = request.operation == "UPDATE";
  const Paths paths = decisionPaths(config, request.kind);
  if (!decodeObject(reader, *fields, "object", create || update, paths, request.object) ||
      !decodeObject(reader, *fields, "oldObject", update, paths, request.oldObject)) {
    return std::nullopt;
  }
  if (reader.failed()) return std::nullopt;
  return request;
}

}  // namespace mka::webhook
