#include "mka/sandbox/api_error.h"

#include <string_view>
#include <utility>

namespace mka::sandbox {
namespace {

using nlohmann::json;

// "pipelineruns.tekton.dev" -> {"pipelineruns", "tekton.dev"}; the core group has no dot.
std::pair<std::string, std::string> splitQualified(const std::string& qualified) {
  const auto dot = qualified.find('.');
  if (dot == std::string::npos) return {qualified, ""};
  return {qualified.substr(0, dot), qualified.substr(dot + 1)};
}

// StatusDetails as Go serialises it: empty fields are omitted (omitempty).
json statusDetails(const std::string& name, const std::string& group, const std::string& kind) {
  json out = json::object();
  if (!name.empty()) out["name"] = name;
  if (!group.empty()) out["group"] = group;
  if (!kind.empty()) out["kind"] = kind;
  return out;
}

// field.ErrorType of a cause, read from the way field.Error words its body, so callers keep
// writing plain FieldErrors ("Required value", "Unsupported value: ..."): clients switch on it.
std::string causeReason(std::string_view problem) {
  static const std::pair<std::string_view, std::string_view> kPrefixes[] = {
      {"Required value", "FieldValueRequired"}, {"Unsupported value", "FieldValueNotSupported"},
      {"Forbidden", "FieldValueForbidden"},     {"Duplicate value", "FieldValueDuplicate"},
      {"Too long", "FieldValueTooLong"},        {"Too many", "FieldValueTooMany"},
      {"Not found", "FieldValueNotFound"},      {"Internal error", "InternalError"},
      {"Invalid value", "FieldValueInvalid"},
  };
  for (const auto& [prefix, reason] : kPrefixes) {
    if (problem.starts_with(prefix)) return std::string(reason);
  }
  return "FieldValueInvalid";
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

}  // namespace

ApiError::ApiError(int code, std::string reason, std::string message, nlohmann::json details)
    : Error(std::move(message)), code_(code), reason_(std::move(reason)), details_(std::move(details)) {}

nlohmann::json ApiError::status() const {
  json out = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", metadata_},
              {"status", "Failure"}, {"message", what()},  {"code", code_}};
  // Go omits an empty reason (StatusReasonUnknown), as for errors that carry no status.
  if (!reason_.empty()) out["reason"] = reason_;
  if (!details_.is_null() && !details_.empty()) out["details"] = details_;
  return out;
}

ApiError ApiError::withMetadata(nlohmann::json metadata) const {
  ApiError copy = *this;
  copy.metadata_ = std::move(metadata);
  return copy;
}

ApiError ApiError::notFound(const std::string& resource, const std::string& name) {
  auto [plural, group] = splitQualified(resource);
  return {404, "NotFound", resource + " \"" + name + "\" not found", statusDetails(name, group, plural)};
}

ApiError ApiError::alreadyExists(const std::string& resource, const std::string& name) {
  auto [plural, group] = splitQualified(resource);
  return {409, "AlreadyExists", resource + " \"" + name + "\" already exists", statusDetails(name, group, plural)};
}

ApiError ApiError::conflict(const std::string& resource, const std::string& name, const std::string& why) {
  auto [plural, group] = splitQualified(resource);
  return {409, "Conflict", "Operation cannot be fulfilled on " + resource + " \"" + name + "\": " + why,
          statusDetails(name, group, plural)};
}

ApiError ApiError::invalid(const std::string& kind, const std::string& name, const FieldErrors& causes) {
  auto [kindName, group] = splitQualified(kind);
  json d = statusDetails(name, group, kindName);
  d["causes"] = json::array();
  // utilerrors.Aggregate: one error alone, several as "[a, b]", duplicates once.
  std::vector<std::string> rendered;
  for (const auto& c : causes) {
    std::string body = c.fix.empty() ? c.problem : c.problem + ": " + c.fix;
    // go-openapi's type and format errors are field.TypeInvalid, the rest is read off the problem.
    const bool typeInvalid =
        c.problem.starts_with("Invalid value") && c.fix.find(" in body must be of type ") != std::string::npos;
    json cause = {{"reason", typeInvalid ? "FieldValueTypeInvalid" : causeReason(c.problem)}, {"message", body}};
    if (!c.path.empty()) cause["field"] = c.path;
    d["causes"].push_back(std::move(cause));
    std::string text = c.toString();
    bool seen = false;
    for (const auto& r : rendered) seen = seen || r == text;
    if (!seen) rendered.push_back(std::move(text));
  }
  const std::string aggregate = rendered.size() == 1 ? rendered.front() : "[" + join(rendered, ", ") + "]";
  return {422, "Invalid", kind + " \"" + name + "\" is invalid: " + aggregate, std::move(d)};
}

ApiError ApiError::badRequest(const std::string& message) { return {400, "BadRequest", message}; }

ApiError ApiError::gone(const std::string& message) { return {410, "Expired", message}; }

ApiError ApiError::notAcceptable(const std::string& message) { return {406, "NotAcceptable", message}; }

ApiError ApiError::methodNotSupported(const std::string& resource, const std::string& verb) {
  auto [plural, group] = splitQualified(resource);
  return {405, "MethodNotAllowed", verb + " is not supported on resources of kind \"" + resource + "\"",
          statusDetails("", group, plural)};
}

ApiError ApiError::unauthorized() { return {401, "Unauthorized", "Unauthorized"}; }

ApiError ApiError::forbidden(const std::string& message) { return {403, "Forbidden", message}; }

ApiError ApiError::internal(const std::string& message) {
  return {500, "InternalError", "Internal error occurred: " + message,
          json{{"causes", json::array({json{{"message", message}}})}}};
}

ApiError ApiError::unsupportedMediaType(const std::string& contentType) {
  // What kube-apiserver's serializers accept for request bodies.
  return unsupportedMediaType(contentType,
                              {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"});
}

ApiError ApiError::unsupportedMediaType(const std::string& /*contentType*/, const std::vector<std::string>& accepted) {
  // kube-apiserver names what it accepts, not what it got.
  return {415, "UnsupportedMediaType",
          "the body of the request was in an unknown format - accepted media types include: " + join(accepted, ", ")};
}

ApiError ApiError::unprocessable(const std::string& cause, const std::string& field) {
  json c = {{"reason", "UnexpectedServerResponse"}, {"message", cause}};
  if (!field.empty()) c["field"] = field;
  return {422, "Invalid", "the server rejected our request due to an error in our request",
          json{{"causes", json::array({std::move(c)})}}};
}

}  // namespace mka::sandbox
