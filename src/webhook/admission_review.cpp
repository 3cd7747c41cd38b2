#include "mka/webhook/admission_review.h"

#include <array>

#include <simdjson.h>

#include "mka/common/base64.h"
#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/kube/json_text.h"
#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kOperations = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
// Values we echo in messages are the sender's; keep a message readable whatever they sent.
constexpr std::size_t kMaxParserDetailChars = 200;

[[noreturn]] void badRequest(std::string message) { throw BadRequest(std::move(message)); }

std::string typeOf(const json& value) { return value.type_name(); }

// Refuses documents nested deeper than kMaxJsonDepth before the parser builds them. The scan
// only has to be right for well-formed JSON: anything else fails to parse right after.
void checkDepth(std::string_view body) {
  std::size_t depth = 0;
  bool inString = false;
  bool escaped = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) {
        badRequest("body: JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at byte " +
                   std::to_string(i) + ": send a Kubernetes object, which nests far less");
      }
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
}

json parseText(std::string_view body);

// The review without the objects' metadata.managedFields, which no decision reads and which
// is often a large part of them: cut from the text before parsing (kube/json_text.h), a good
// part of the parse saved. Malformed text is parsed as it came, so errors name its own bytes.
json parseBody(std::string_view body) {
  checkDepth(body);
  auto lean = kube::json_text::withoutMember(body, {"request", "object", "metadata", "managedFields"}, true);
  lean = kube::json_text::withoutMember(lean, {"request", "oldObject", "metadata", "managedFields"}, true);
  auto parsed = json::parse(lean, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  return parseText(body);
}

json parseText(std::string_view body) {
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    // what() is "[json.exception.parse_error.N] parse error at line L, column C: <detail>";
    // the byte offset is more useful to whoever looks at a raw body.
    std::string detail = e.what();
    if (auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
    if (detail.size() > kMaxParserDetailChars) detail = detail.substr(0, kMaxParserDetailChars) + "...";
    badRequest("body: malformed JSON at byte " + std::to_string(e.byte) + ": " + detail +
               ": send a JSON-encoded AdmissionReview");
  } catch (const json::exception& e) {
    // Not every parser error is a parse_error: a number beyond double range is out_of_range.
    std::string detail = e.what();
    if (auto bracket = detail.find("] "); bracket != std::string::npos) detail.erase(0, bracket + 2);
    if (detail.size() > kMaxParserDetailChars) detail = detail.substr(0, kMaxParserDetailChars) + "...";
    badRequest("body: malformed JSON: " + detail + ": send a JSON-encoded AdmissionReview");
  }
}

const json* member(const json& parent, std::string_view key) {
  auto it = parent.find(key);
  return it == parent.end() ? nullptr : &*it;
}

// A string field that may be absent or null (read as "").
std::string optionalString(const json& parent, std::string_view key, std::string_view path) {
  const json* value = member(parent, key);
  if (!value || value->is_null()) return {};
  if (!value->is_string()) {
    badRequest(std::string(path) + ": must be a string, got " + typeOf(*value) + ": send the field as JSON text");
  }
  return value->get<std::string>();
}

std::string requiredString(const json& parent, std::string_view key, std::string_view path, std::string_view fix) {
  const json* value = member(parent, key);
  if (!value || value->is_null()) badRequest(std::string(path) + ": required: " + std::string(fix));
  if (!value->is_string()) {
    badRequest(std::string(path) + ": must be a string, got " + typeOf(*value) + ": " + std::string(fix));
  }
  auto text = value->get<std::string>();
  if (text.empty()) badRequest(std::string(path) + ": must not be empty: " + std::string(fix));
  return text;
}

api::GroupVersionKind decodeKind(const json& request) {
  const json* kind = member(request, "kind");
  constexpr std::string_view fix =
      "send request.kind as {\"group\":\"tekton.dev\",\"version\":\"v1\",\"kind\":\"PipelineRun\"}";
  if (!kind || kind->is_null()) badRequest("request.kind: required: " + std::string(fix));
  if (!kind->is_object()) badRequest("request.kind: must be an object, got " + typeOf(*kind) + ": " + std::string(fix));
  api::GroupVersionKind gvk;
  // The group is "" for the core group but Kubernetes always sends the key.
  const json* group = member(*kind, "group");
  if (!group || !group->is_string()) {
    badRequest("request.kind.group: required (\"\" for the core group): " + std::string(fix));
  }
  gvk.group = group->get<std::string>();
  gvk.version = requiredString(*kind, "version", "request.kind.version", fix);
  gvk.kind = requiredString(*kind, "kind", "request.kind.kind", fix);
  return gvk;
}

void checkStringMap(const json& meta, std::string_view key, const std::string& path) {
  const json* map = member(meta, key);
  if (!map || map->is_null()) return;
  const std::string where = path + "." + std::string(key);
  if (!map->is_object()) {
    badRequest(where + ": must be an object of strings, got " + typeOf(*map) + ": send a valid Kubernetes object");
  }
  for (const auto& [k, v] : map->items()) {
    if (!v.is_string()) {
      badRequest(where + "[" + k + "]: must be a string, got " + typeOf(v) + ": send a valid Kubernetes object");
    }
  }
}

// Checks the parts of an object we read, so that deciding never trips over a mistyped field.
void checkObject(const json& object, const std::string& path) {
  const json* meta = member(object, "metadata");
  if (!meta || meta->is_null()) return;
  const std::string metaPath = path + ".metadata";
  if (!meta->is_object()) {
    badRequest(metaPath + ": must be an object, got " + typeOf(*meta) + ": send a valid Kubernetes object");
  }
  for (std::string_view field : {"name", "namespace", "generateName"}) {
    optionalString(*meta, field, metaPath + "." + std::string(field));
  }
  checkStringMap(*meta, "labels", metaPath);
  checkStringMap(*meta, "annotations", metaPath);
}

// `required`: the operation needs this object (CREATE/UPDATE need `object`, UPDATE `oldObject`).
json takeObject(json& request, std::string_view key, bool required, const std::string& operation) {
  const std::string path = "request." + std::string(key);
  auto it = request.find(key);
  if (it == request.end() || it->is_null()) {
    if (required) {
      badRequest(path + ": required for " + operation + ": send the " +
                 (key == "object" ? "object being admitted" : "object as it was before the update"));
    }
    return nullptr;
  }
  if (!it->is_object()) {
    badRequest(path + ": must be a JSON object, got " + typeOf(*it) + ": send the Kubernetes object itself");
  }
  checkObject(*it, path);
  return std::move(*it);
}

bool validUtf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

bool allValidUtf8(const AdmissionRequest& request, const AdmissionResponse& response) {
  if (!validUtf8(request.apiVersion) || !validUtf8(request.uid)) return false;
  if (response.status && (!validUtf8(response.status->reason) || !validUtf8(response.status->message))) return false;
  for (const auto& warning : response.warnings) {
    if (!validUtf8(warning)) return false;
  }
  return true;
}

// A JSON string as nlohmann's serializer writes valid UTF-8 (no ASCII escaping): the short
// escapes, other control characters as lower-case \u00xx.
void appendString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out.push_back(kHex[(c >> 4) & 0xf]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// The bytes encodeAdmissionReviewThroughDom writes for the same answer (its objects' keys in sorted order),
// written straight into one buffer. Every string must be valid UTF-8.
std::string writeReview(const AdmissionRequest& request, const AdmissionResponse& response) {
  std::string out;
  out.reserve(256 + request.uid.size());
  out += "{\"apiVersion\":";
  appendString(out, request.apiVersion.empty() ? kAdmissionV1 : std::string_view(request.apiVersion));
  out += ",\"kind\":\"AdmissionReview\",\"response\":{\"allowed\":";
  out += response.allowed ? "true" : "false";
  if (response.allowed && response.patch && !response.patch->empty()) {
    out += ",\"patch\":\"";
    out += base64Encode(response.patch->dump(-1, ' ', false, json::error_handler_t::replace));
    out += "\",\"patchType\":\"JSONPatch\"";
  }
  if (!response.allowed) {
    const AdmissionStatus status = response.status.value_or(AdmissionStatus{});
    out += ",\"status\":{\"code\":";
    out += std::to_string(status.code);
    out += ",\"message\":";
    appendString(out, status.message);
    out += ",\"metadata\":{},\"reason\":";
    appendString(out, status.reason);
    out += ",\"status\":\"Failure\"}";
  }
  out += ",\"uid\":";
  appendString(out, request.uid);
  if (!response.warnings.empty()) {
    out += ",\"warnings\":[";
    for (std::size_t i = 0; i < response.warnings.size(); ++i) {
      if (i > 0) out.push_back(',');
      appendString(out, response.warnings[i]);
    }
    out.push_back(']');
  }
  out += "}}";
  return out;
}

}  // namespace

std::string AdmissionRequest::objectNamespace() const {
  const json& source = object.is_object() ? object : oldObject;
  return namespace_.empty() ? json_fields::metadataString(source, "namespace") : namespace_;
}

std::string AdmissionRequest::objectKey() const {
  const json& source = object.is_object() ? object : oldObject;
  const std::string ns = objectNamespace();
  std::string key = name.empty() ? json_fields::metadataString(source, "name") : name;
  if (key.empty()) key = json_fields::metadataString(source, "generateName") + "*";
  return ns.empty() ? key : ns + "/" + key;
}

AdmissionResponse AdmissionResponse::deny(std::string message, int code, std::string reason) {
  AdmissionResponse response;
  response.allowed = false;
  response.status = AdmissionStatus{code, std::move(reason), std::move(message)};
  return response;
}

AdmissionRequest decodeAdmissionReview(std::string_view body) {
  json review = parseBody(body);
  if (!review.is_object()) {
    badRequest("body: must be a JSON object (an AdmissionReview), got " + typeOf(review) + ": send an AdmissionReview");
  }

  AdmissionRequest request;
  constexpr std::string_view versionFix = "send apiVersion admission.k8s.io/v1 (or admission.k8s.io/v1beta1)";
  request.apiVersion = requiredString(review, "apiVersion", "apiVersion", versionFix);
  if (request.apiVersion != kAdmissionV1 && request.apiVersion != kAdmissionV1beta1) {
    badRequest("apiVersion: unsupported value " + strings::quotedExcerpt(request.apiVersion) + ": " +
               std::string(versionFix) + "; list v1 in the webhook's admissionReviewVersions");
  }
  const auto kind = requiredString(review, "kind", "kind", "send kind AdmissionReview");
  if (kind != "AdmissionReview") {
    badRequest("kind: unsupported value " + strings::quotedExcerpt(kind) + ": send kind AdmissionReview");
  }

  auto requestIt = review.find("request");
  if (requestIt == review.end() || requestIt->is_null()) {
    badRequest("request: required: send an AdmissionReview with a request object");
  }
  if (!requestIt->is_object()) {
    badRequest("request: must be an object, got " + typeOf(*requestIt) +
               ": send an AdmissionReview with a request object");
  }
  json& in = *requestIt;

  request.uid = requiredString(in, "uid", "request.uid", "send an AdmissionReview with request.uid set");
  request.kind = decodeKind(in);
  if (const json* resource = member(in, "resource"); resource && !resource->is_null()) {
    if (!resource->is_object()) {
      badRequest("request.resource: must be an object, got " + typeOf(*resource) +
                 ": send request.resource as {\"group\",\"version\",\"resource\"}");
    }
    request.resource = optionalString(*resource, "resource", "request.resource.resource");
  }
  request.subResource = optionalString(in, "subResource", "request.subResource");

  request.operation =
      requiredString(in, "operation", "request.operation", "send one of CREATE, UPDATE, DELETE, CONNECT");
  bool known = false;
  for (auto op : kOperations) known = known || request.operation == op;
  if (!known) {
    badRequest("request.operation: unsupported value " + strings::quotedExcerpt(request.operation) +
               ": send one of CREATE, UPDATE, DELETE, CONNECT");
  }

  request.name = optionalString(in, "name", "request.name");
  request.namespace_ = optionalString(in, "namespace", "request.namespace");
  if (const json* dryRun = member(in, "dryRun"); dryRun && !dryRun->is_null()) {
    if (!dryRun->is_boolean()) {
      badRequest("request.dryRun: must be a boolean, got " + typeOf(*dryRun) + ": send true or false");
    }
    request.dryRun = dryRun->get<bool>();
  }

  const bool create = request.operation == "CREATE";
  const bool update = request.operation == "UPDATE";
  request.object = takeObject(in, "object", create || update, request.operation);
  request.oldObject = takeObject(in, "oldObject", update, request.operation);
  return request;
}

// The answer through a DOM, whose serializer replaces bytes that are not UTF-8: messages may
// quote cut input, and a stray byte must never turn an answer into an exception.
std::string encodeAdmissionReviewThroughDom(const AdmissionRequest& request, const AdmissionResponse& response) {
  json out = {{"uid", request.uid}, {"allowed", response.allowed}};
  if (!response.allowed) {
    const AdmissionStatus status = response.status.value_or(AdmissionStatus{});
    out["status"] = {{"metadata", json::object()},
                     {"status", "Failure"},
                     {"code", status.code},
                     {"reason", status.reason},
                     {"message", status.message}};
  } else if (response.patch && !response.patch->empty()) {
    out["patchType"] = "JSONPatch";
    out["patch"] = base64Encode(response.patch->dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (!response.warnings.empty()) out["warnings"] = response.warnings;
  const json review = {{"apiVersion", request.apiVersion.empty() ? std::string(kAdmissionV1) : request.apiVersion},
                       {"kind", "AdmissionReview"},
                       {"response", std::move(out)}};
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encodeAdmissionReview(const AdmissionRequest& request, const AdmissionResponse& response) {
  if (allValidUtf8(request, response)) return writeReview(request, response);
  return encodeAdmissionReviewThroughDom(request, response);
}

}  // namespace mka::webhook
