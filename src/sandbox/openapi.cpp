// OpenAPI v3 documents, shaped as kube-apiserver serves them. kubectl depends on three details:
// - `kubectl apply` decides whether the server validates fields itself by finding a PATCH
//   operation whose x-kubernetes-group-version-kind (an object) is the kind and whose
//   parameters name `fieldValidation`; for a CRD kind it checks the document of the CRD's
//   group-version (falling back to Namespace's). Without it kubectl validates client-side with
//   OpenAPI v2, which the sandbox does not serve.
// - it computes strategic merge patches from the schema whose x-kubernetes-group-version-kind
//   (a list) names the kind, when the PATCH requestBody offers
//   application/strategic-merge-patch+json; otherwise it sends a JSON merge patch.
// - the root lists every group-version with a serverRelativeURL whose hash changes with the
//   document, since kubectl caches documents by URL.

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include "builtin_resources.h"
#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

const std::string kMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.";
const std::string kRefPrefix = "#/components/schemas/";

json schemaRef(const std::string& name) { return {{"$ref", kRefPrefix + name}}; }

json queryParameter(const std::string& name, const char* type, const std::string& description) {
  return {{"name", name},
          {"in", "query"},
          {"description", description},
          {"schema", {{"type", type}, {"uniqueItems", true}}}};
}

const json& parameter(const std::string& name) {
  static const json parameters = {
      {"dryRun", queryParameter("dryRun", "string",
                                "When present, indicates that modifications should not be persisted. Valid values "
                                "are: - All: all dry run stages will be processed")},
      {"fieldManager", queryParameter("fieldManager", "string",
                                      "fieldManager is a name associated with the actor or entity that is making "
                                      "these changes. It is required for apply requests (application/apply-patch).")},
      {"fieldValidation",
       queryParameter("fieldValidation", "string",
                      "fieldValidation instructs the server on how to handle objects in the request containing "
                      "unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict")},
      {"force", queryParameter("force", "boolean",
                               "Force is going to \"force\" Apply requests. It means user will re-acquire "
                               "conflicting fields owned by other people.")},
      {"pretty", queryParameter("pretty", "string", "If 'true', then the output is pretty printed.")},
      {"labelSelector", queryParameter("labelSelector", "string",
                                       "A selector to restrict the list of returned objects by their labels.")},
      {"fieldSelector", queryParameter("fieldSelector", "string",
                                       "A selector to restrict the list of returned objects by their fields.")},
      {"limit",
       queryParameter("limit", "integer", "limit is a maximum number of responses to return for a list call.")},
      {"continue", queryParameter("continue", "string",
                                  "The continue option should be set when retrieving more results from the server.")},
      {"resourceVersion", queryParameter("resourceVersion", "string",
                                         "resourceVersion sets a constraint on what resource versions a request may "
                                         "be served from.")},
      {"resourceVersionMatch", queryParameter("resourceVersionMatch", "string",
                                              "resourceVersionMatch determines how resourceVersion is applied to "
                                              "list calls.")},
      {"timeoutSeconds", queryParameter("timeoutSeconds", "integer", "Timeout for the list/watch call.")},
      {"watch", queryParameter("watch", "boolean",
                               "Watch for changes to the described resources and return them as a stream of add, "
                               "update, and remove notifications.")},
      {"allowWatchBookmarks", queryParameter("allowWatchBookmarks", "boolean",
                                             "allowWatchBookmarks requests watch events with type \"BOOKMARK\".")},
      {"sendInitialEvents",
       queryParameter("sendInitialEvents", "boolean", "sendInitialEvents=true may be set together with watch=true.")},
      {"gracePeriodSeconds",
       queryParameter("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted.")},
      {"orphanDependents",
       queryParameter("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy.")},
      {"propagationPolicy", queryParameter("propagationPolicy", "string",
                                           "Whether and how garbage collection will be performed: Orphan, "
                                           "Background or Foreground.")},
  };
  return parameters.at(name);
}

json parameters(std::initializer_list<const char*> names) {
  json out = json::array();
  for (const char* n : names) out.push_back(parameter(n));
  return out;
}

json pathParameter(const std::string& name, const std::string& description) {
  return {{"name", name},
          {"in", "path"},
          {"required", true},
          {"description", description},
          {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

json content(const json& schema, std::initializer_list<const char*> types) {
  json out = json::object();
  for (const char* t : types) out[t] = {{"schema", schema}};
  return out;
}

json responses(const std::string& schemaName, std::initializer_list<const char*> codes) {
  const json body = content(schemaRef(schemaName), {"application/json", "application/yaml"});
  json out = json::object();
  for (const char* code : codes) {
    const std::string c = code;
    out[c] = {{"description", c == "200" ? "OK" : c == "201" ? "Created" : "Accepted"}, {"content", body}};
  }
  out["401"] = {{"description", "Unauthorized"}};
  return out;
}

// "Core", "Coordination", "TektonDev", "KueueXK8sIo": the group part of kube's operationIds.
std::string groupCamel(const std::string& group) {
  if (group.empty()) return "Core";
  std::string g = group;
  if (g.ends_with(".k8s.io")) g.resize(g.size() - 7);
  std::string out;
  bool upper = true;
  for (char c : g) {
    if (c == '.' || c == '-') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

std::string capitalized(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string reversedGroup(const std::string& group) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto dot = group.find('.', start);
    parts.push_back(group.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : ".") + *it;
  return out;
}

std::string schemaName(const ResourceType& t, const std::string& version, const std::string& kind) {
  if (t.builtin) return detail::builtinSchemaName(t.group, version, kind);
  return reversedGroup(t.group) + "." + version + "." + kind;
}

// The paths of one resource in one group-version document.
// Threads: lives for one document build on the calling thread.
struct PathBuilder {
  const ResourceType& type;
  const std::string& version;
  std::string schema;      // the kind's component name
  std::string listSchema;  // its list's
  json gvk;
  json patchBody;
  std::string idStem;  // "CoreV1Namespaced" or "CoreV1"
  std::string tag;

  bool can(const char* verb) const { return std::find(type.verbs.begin(), type.verbs.end(), verb) != type.verbs.end(); }

  json operation(const std::string& action, const std::string& id, const std::string& description, json params) const {
    json op = {{"operationId", id},
               {"description", description},
               {"tags", json::array({tag})},
               {"x-kubernetes-action", action},
               {"x-kubernetes-group-version-kind", gvk}};
    if (!params.empty()) op["parameters"] = std::move(params);
    return op;
  }

  json writeBody() const { return {{"required", true}, {"content", content(schemaRef(schema), {"*/*"})}}; }

  json deleteBody() const { return {{"content", content(schemaRef(kMeta + "DeleteOptions"), {"*/*"})}}; }

  json collection() const {
    json item = json::object();
    if (can("list")) {
      item["get"] = operation(
          "list", "list" + idStem + type.kind, "list or watch objects of kind " + type.kind,
          parameters({"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
                      "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}));
      item["get"]["responses"] = responses(listSchema, {"200"});
    }
    if (can("create")) {
      item["post"] = operation("post", "create" + idStem + type.kind, "create a " + type.kind,
                               parameters({"dryRun", "fieldManager", "fieldValidation"}));
      item["post"]["requestBody"] = writeBody();
      item["post"]["responses"] = responses(schema, {"200", "201", "202"});
    }
    if (can("deletecollection")) {
      const std::string id = "delete" + groupCamel(type.group) + capitalized(version) + "Collection" +
                             (type.namespaced ? "Namespaced" : "") + type.kind;
      item["delete"] =
          operation("deletecollection", id, "delete collection of " + type.kind,
                    parameters({"continue", "dryRun", "fieldSelector", "gracePeriodSeconds", "labelSelector", "limit",
                                "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
                                "sendInitialEvents", "timeoutSeconds"}));
      item["delete"]["requestBody"] = deleteBody();
      item["delete"]["responses"] = responses(kMeta + "Status", {"200"});
    }
    json params = json::array();
    if (type.namespaced) params.push_back(pathParameter("namespace", "object name and auth scope"));
    params.push_back(parameter("pretty"));
    item["parameters"] = std::move(params);
    return item;
  }

  // The object, or its /status when `suffix` is "Status".
  json object(const std::string& suffix) const {
    const std::string what = suffix.empty() ? "the specified " + type.kind : "status of the specified " + type.kind;
    json item = json::object();
    if (can("get")) {
      item["get"] = operation("get", "read" + idStem + type.kind + suffix, "read " + what, json::array());
      item["get"]["responses"] = responses(schema, {"200"});
    }
    if (can("update")) {
      item["put"] = operation("put", "replace" + idStem + type.kind + suffix, "replace " + what,
                              parameters({"dryRun", "fieldManager", "fieldValidation"}));
      item["put"]["requestBody"] = writeBody();
      item["put"]["responses"] = responses(schema, {"200", "201"});
    }
    if (can("patch")) {
      item["patch"] = operation("patch", "patch" + idStem + type.kind + suffix, "partially update " + what,
                                parameters({"dryRun", "fieldManager", "fieldValidation", "force"}));
      item["patch"]["requestBody"] = patchBody;
      item["patch"]["responses"] = responses(schema, {"200", "201"});
    }
    if (suffix.empty() && can("delete")) {
      item["delete"] = operation("delete", "delete" + idStem + type.kind, "delete a " + type.kind,
                                 parameters({"dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"}));
      item["delete"]["requestBody"] = deleteBody();
      item["delete"]["responses"] = responses(kMeta + "Status", {"200", "202"});
    }
    json params = json::array({pathParameter("name", "name of the " + type.kind)});
    if (type.namespaced) params.push_back(pathParameter("namespace", "object name and auth scope"));
    params.push_back(parameter("pretty"));
    item["parameters"] = std::move(params);
    return item;
  }

  void addTo(json& paths) const {
    const std::string prefix = type.group.empty() ? "/api/" + version : "/apis/" + type.group + "/" + version;
    const std::string collectionPath =
        type.namespaced ? prefix + "/namespaces/{namespace}/" + type.plural : prefix + "/" + type.plural;
    paths[collectionPath] = collection();
    paths[collectionPath + "/{name}"] = object("");
    if (type.version(version)->hasStatus) paths[collectionPath + "/{name}/status"] = object("Status");
    if (type.namespaced && can("list")) {
      json all = {{"parameters", json::array({parameter("pretty")})}};
      all["get"] = operation(
          "list", "list" + groupCamel(type.group) + capitalized(version) + type.kind + "ForAllNamespaces",
          "list or watch objects of kind " + type.kind,
          parameters({"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
                      "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}));
      all["get"]["responses"] = responses(listSchema, {"200"});
      paths[prefix + "/" + type.plural] = std::move(all);
    }
  }
};

json patchBody(bool strategicMerge) {
  std::vector<const char*> types = {"application/apply-patch+yaml", "application/json-patch+json",
                                    "application/merge-patch+json"};
  if (strategicMerge) types.push_back("application/strategic-merge-patch+json");
  json body = json::object();
  for (const char* t : types) body[t] = {{"schema", schemaRef(kMeta + "Patch")}};
  return {{"required", true}, {"content", std::move(body)}};
}

json gvkObject(const ResourceType& t, const std::string& version, const std::string& kind) {
  return {{"group", t.group}, {"kind", kind}, {"version", version}};
}

// The version's openAPIV3Schema as kube-apiserver publishes it: apiVersion, kind and metadata
// (ObjectMeta) declared, and the kind named.
json customResourceSchema(const ResourceType& t, const ResourceVersionInfo& v) {
  json s = v.schema.is_object() ? v.schema : json{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  if (!s.contains("properties") || !s["properties"].is_object()) s["properties"] = json::object();
  s["properties"]["apiVersion"] = {
      {"type", "string"},
      {"description", "APIVersion defines the versioned schema of this representation of an object."}};
  s["properties"]["kind"] = {
      {"type", "string"},
      {"description", "Kind is a string value representing the REST resource this object represents."}};
  s["properties"]["metadata"] = schemaRef(kMeta + "ObjectMeta");
  s["x-kubernetes-group-version-kind"] = json::array({gvkObject(t, v.name, t.kind)});
  return s;
}

json customResourceListSchema(const ResourceType& t, const std::string& version, const std::string& itemSchema) {
  return {{"type", "object"},
          {"required", json::array({"items"})},
          {"properties",
           {{"apiVersion", {{"type", "string"}}},
            {"kind", {{"type", "string"}}},
            {"metadata", schemaRef(kMeta + "ListMeta")},
            {"items", {{"type", "array"}, {"items", schemaRef(itemSchema)}}}}},
          {"x-kubernetes-group-version-kind", json::array({gvkObject(t, version, t.listKind)})}};
}

void collectRefs(const json& node, std::set<std::string>& out) {
  if (node.is_object()) {
    auto it = node.find("$ref");
    if (it != node.end() && it->is_string()) {
      const auto& r = it->get_ref<const std::string&>();
      if (r.starts_with(kRefPrefix)) out.insert(r.substr(kRefPrefix.size()));
    }
    for (const auto& [k, v] : node.items()) collectRefs(v, out);
  } else if (node.is_array()) {
    for (const auto& v : node) collectRefs(v, out);
  }
}

// Adds the built-in schemas `names` refer to, and those they refer to, transitively.
void addBuiltinClosure(json& schemas, std::set<std::string> names) {
  const json& builtins = detail::builtinSchemas();
  std::vector<std::string> pending(names.begin(), names.end());
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    if (schemas.contains(name)) continue;
    auto it = builtins.find(name);
    if (it == builtins.end()) continue;
    schemas[name] = *it;
    std::set<std::string> more;
    collectRefs(*it, more);
    for (const auto& m : more)
      if (!schemas.contains(m)) pending.push_back(m);
  }
}

std::optional<json> buildDocument(const std::vector<ResourceTypePtr>& types, const std::string& group,
                                  const std::string& version) {
  json paths = json::object();
  json schemas = json::object();
  std::set<std::string> wanted = {kMeta + "Status", kMeta + "DeleteOptions", kMeta + "Patch"};
  bool any = false;
  for (const auto& entry : types) {
    const ResourceType& t = *entry;
    if (t.group != group) continue;
    const auto* v = t.version(version);
    if (!v) continue;
    any = true;
    const std::string kindSchema = schemaName(t, version, t.kind);
    const std::string listSchema = schemaName(t, version, t.listKind);
    if (t.builtin) {
      wanted.insert(kindSchema);
      wanted.insert(listSchema);
    } else {
      schemas[kindSchema] = customResourceSchema(t, *v);
      schemas[listSchema] = customResourceListSchema(t, version, kindSchema);
      wanted.insert(kMeta + "ObjectMeta");
      wanted.insert(kMeta + "ListMeta");
    }
    PathBuilder builder{t,
                        version,
                        kindSchema,
                        listSchema,
                        gvkObject(t, version, t.kind),
                        patchBody(t.builtin),
                        groupCamel(t.group) + capitalized(version) + (t.namespaced ? "Namespaced" : ""),
                        (group.empty() ? std::string("core") : groupCamel(group)) + "_" + version};
    builder.addTo(paths);
  }
  if (!any) return std::nullopt;
  addBuiltinClosure(schemas, wanted);
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", std::move(paths)},
              {"components",
               {{"schemas", std::move(schemas)},
                {"securitySchemes",
                 {{"BearerToken",
                   {{"type", "apiKey"},
                    {"name", "authorization"},
                    {"in", "header"},
                    {"description", "Bearer Token authentication"}}}}}}},
              {"security", json::array({{{"BearerToken", json::array()}}})}};
}

std::string sha512Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha512(), nullptr);
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string docPath(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

}  // namespace

std::optional<json> ResourceRegistry::openApiV3(const std::string& group, const std::string& version) const {
  return buildDocument(snapshot(), group, version);
}

json ResourceRegistry::openApiV3Root() const {
  // Held throughout, so a CRD change (which clears the cache after updating the types) cannot
  // interleave and leave a hash of an older document behind.
  std::lock_guard hashLock(openApiHashMutex_);
  const auto types = snapshot();
  std::set<std::pair<std::string, std::string>> groupVersions;
  for (const auto& t : types)
    for (const auto& v : t->versions)
      if (v.served) groupVersions.insert({t->group, v.name});

  json paths = json::object();
  for (const auto& gv : groupVersions) {
    auto it = openApiHashes_.find(gv);
    if (it == openApiHashes_.end()) {
      auto doc = buildDocument(types, gv.first, gv.second);
      if (!doc) continue;
      it = openApiHashes_.emplace(gv, sha512Hex(doc->dump())).first;
    }
    const std::string path = docPath(gv.first, gv.second);
    paths[path] = {{"serverRelativeURL", "/openapi/v3/" + path + "?hash=" + it->second}};
  }
  return {{"paths", std::move(paths)}};
}

}  // namespace mka::sandbox
