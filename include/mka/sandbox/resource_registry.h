#pragma once
// The API resources one emulated cluster serves: built-in kinds and CustomResourceDefinitions,
// and the discovery and OpenAPI v3 documents kubectl reads.
//
// Threads: read by every request thread, written when a CRD is created or deleted
// (reader/writer lock inside).

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::sandbox {

namespace schema {
struct Compiled;  // src/sandbox/schema.h
}

struct ResourceVersionInfo {
  std::string name;  // "v1"
  bool served = true;
  bool storage = false;
  nlohmann::json schema;  // openAPIV3Schema of a CRD version; null for built-ins without one
  nlohmann::json printerColumns = nlohmann::json::array();  // additionalPrinterColumns
  bool hasStatus = false;                                   // status subresource
  // The schema's patterns and x-kubernetes-validations rules, compiled when the CRD was read;
  // null for built-ins.
  std::shared_ptr<const schema::Compiled> compiled;
};

struct ResourceType {
  std::string group;  // "" for the core group
  std::string kind, listKind, plural, singular;
  std::vector<std::string> shortNames, categories;
  bool namespaced = true;
  bool builtin = false;
  std::vector<ResourceVersionInfo> versions;
  std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};

  // "pipelineruns.tekton.dev", or "configmaps" for the core group (error-message spelling).
  std::string qualifiedResource() const;
  // "PipelineRun.tekton.dev", or "ConfigMap" (422 message spelling).
  std::string qualifiedKind() const;
  const ResourceVersionInfo* version(const std::string& name) const;  // served versions only
  const ResourceVersionInfo& storageVersion() const;
};

// An object's apiVersion: "tekton.dev/v1", or "v1" for the core group.
std::string apiVersionOf(const std::string& group, const std::string& version);

// A registry entry: immutable once registered (a CRD update registers a new one), so holders
// may keep it without a lock.
using ResourceTypePtr = std::shared_ptr<const ResourceType>;

// Kubernetes' version priority (GA > beta > alpha, then higher major, then higher minor; versions
// that do not look like v1, v2beta1 or v1alpha3 come last, alphabetically): > 0 when `a` has
// the higher priority, 0 when equal, < 0 otherwise. Discovery lists versions in this order and
// prefers the first.
int compareVersionPriority(std::string_view a, std::string_view b);

// Reads and validates a CustomResourceDefinition (apiextensions.k8s.io/v1) without registering
// it, with kube-apiserver's defaults (singular = lower-case kind, listKind = <Kind>List). Throws
// ApiError 422 naming every bad field.
ResourceType parseCrd(const nlohmann::json& crd);
// parseCrd, shared: a CRD read once (by metadata.name and spec) is handed out again to every
// cluster of the process that serves it, because compiling the schema of a large CRD (Kueue's
// Workload) is most of what starting a sandbox cluster costs. Throws like parseCrd; a CRD that
// fails is read again next time.
std::shared_ptr<const ResourceType> readCrd(const nlohmann::json& crd);
// The status kube-apiserver gives a CRD it serves: acceptedNames, NamesAccepted and Established
// conditions (transition times kept from `crd`'s current status when unchanged) and
// storedVersions (the storage version appended to those already recorded). Throws like parseCrd.
nlohmann::json crdStatus(const nlohmann::json& crd, const std::string& now);
// crdStatus for a CRD already read into `type`.
nlohmann::json crdStatus(const ResourceType& type, const nlohmann::json& crd, const std::string& now);

class ResourceRegistry {
 public:
  // Registers the built-ins: namespaces, secrets, configmaps, events (core and events.k8s.io),
  // services, leases, customresourcedefinitions, mutating/validating webhook configurations.
  ResourceRegistry();

  std::optional<ResourceType> byResource(const std::string& group, const std::string& version,
                                         const std::string& plural) const;
  std::optional<ResourceType> byKind(const std::string& group, const std::string& version,
                                     const std::string& kind) const;
  std::vector<ResourceType> all() const;
  // The same without copying: byResource, byKind and all copy whole CRD schemas (hundreds of KB
  // for Kueue's Workload), too slow for every request.
  ResourceTypePtr find(const std::string& group, const std::string& version, const std::string& plural) const;
  ResourceTypePtr findKind(const std::string& group, const std::string& version, const std::string& kind) const;
  std::vector<ResourceTypePtr> snapshot() const;

  // Adds or replaces the resource a CRD object defines; throws ApiError (422) naming the field
  // when the CRD is malformed.
  void applyCrd(const nlohmann::json& crd);
  void applyCrd(ResourceTypePtr type);  // a CRD already read (readCrd)
  void removeCrd(const std::string& group, const std::string& plural);

  // Discovery documents, as kube-apiserver serves them (legacy, non-aggregated form).
  nlohmann::json apiVersions() const;  // GET /api
  // With serverAddressByClientCIDRs naming `serverAddress` ("127.0.0.1:6443").
  nlohmann::json apiVersions(const std::string& serverAddress) const;
  nlohmann::json apiGroupList() const;                                     // GET /apis
  std::optional<nlohmann::json> apiGroup(const std::string& group) const;  // GET /apis/<g>
  std::optional<nlohmann::json> apiResourceList(const std::string& group, const std::string& version) const;
  // OpenAPI v3: GET /openapi/v3 and GET /openapi/v3/<api|apis/g>/<v>.
  nlohmann::json openApiV3Root() const;
  std::optional<nlohmann::json> openApiV3(const std::string& group, const std::string& version) const;

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::pair<std::string, std::string>, ResourceTypePtr> byGroupPlural_;

  // Content hashes of the OpenAPI documents by (group, version), computed on demand and
  // forgotten when a CRD changes: the root lists them in every serverRelativeURL.
  mutable std::mutex openApiHashMutex_;
  mutable std::map<std::pair<std::string, std::string>, std::string> openApiHashes_;
};

}  // namespace mka::sandbox
