#pragma once
// The API semantics of one emulated cluster, independent of HTTP: what kube-apiserver does
// between decoding a request and encoding the answer. The HTTP layer (cluster.h) and in-process
// users (the Kueue stand-in, tests) go through the same code, so both see the same behaviour.
//
// Semantics kept (kube-apiserver's, for the resources the registry knows):
// - create: generateName (random 5-char suffix), uid, creationTimestamp, generation 1,
//   namespace from the URL (a mismatching body namespace is 400), namespace must exist for
//   namespaced kinds (404), status dropped on create when the kind has a status subresource;
//   schema defaulting and pruning for CRDs; CRD objects register their resource.
// - update (PUT): optimistic concurrency on metadata.resourceVersion (409 Conflict when stale;
//   an empty resourceVersion is an unconditional update); with a status subresource, the main
//   resource ignores status changes and /status ignores everything but status (and
//   metadata labels/annotations are kept from the stored object on /status); generation bumps
//   when anything but metadata and status changes; immutable uid/creationTimestamp/name.
// - patch: merge, JSON, strategic (built-ins only) and apply (server-side apply with
//   ?fieldManager= and ?force=), on the main resource or /status, same rules as update.
// - delete: with finalizers, sets deletionTimestamp (+ deletionGracePeriodSeconds 0) and keeps
//   the object until an update empties metadata.finalizers; preconditions (uid,
//   resourceVersion) -> 409; propagationPolicy Orphan|Background|Foreground (Foreground adds
//   the foregroundDeletion finalizer); dependents are removed by the garbage collector.
// - dryRun=All: everything runs (admission included) but nothing is stored.
// - list: label and field selectors, limit/continue, resourceVersion of the list.
//
// Threads: any thread; consistency comes from ObjectStore's lock.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/sandbox/object_store.h"
#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox {

struct AdmissionAttributes;  // admission.h
class GarbageCollector;

// Where a request points, parsed from its URL.
struct ResourceRef {
  std::string group;
  std::string version;
  std::string plural;
  std::string namespace_;   // "" = cluster-scoped or all namespaces
  std::string name;         // "" = collection
  std::string subresource;  // "" | "status"
};

struct RequestUser {
  std::string name = "system:admin";
  std::vector<std::string> groups = {"system:masters", "system:authenticated"};
};

// Query parameters that change semantics, as kube-apiserver reads them.
struct WriteOptions {
  bool dryRun = false;          // ?dryRun=All
  std::string fieldManager;     // ?fieldManager=
  bool force = false;           // ?force=true (apply)
  std::string fieldValidation;  // ?fieldValidation=Strict|Warn|Ignore
  RequestUser user;
  // When given, receives the warnings kube-apiserver would send in Warning headers (the unknown
  // fields dropped under fieldValidation=Warn, the default).
  std::vector<std::string>* warnings = nullptr;
};

struct DeleteOptions {
  std::string propagationPolicy;  // "" = the kind's default (Background)
  std::optional<std::string> preconditionUid;
  std::optional<std::string> preconditionResourceVersion;
  bool dryRun = false;
  RequestUser user;
};

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::size_t limit = 0;
  std::string continueToken;
  std::string resourceVersion;       // "" = the latest; "0" = any
  std::string resourceVersionMatch;  // "", "Exact" or "NotOlderThan"
};

class ClusterApi {
 public:
  ClusterApi(std::string clusterName, ResourceRegistry& registry, ObjectStore& store, const Clock& clock);
  ~ClusterApi();

  // Optional collaborators, set before serving. `admit` runs the admission webhooks (usually
  // AdmissionChain::admit) on every create, update, patch and delete, after defaulting; it
  // returns the object to store (mutated) or throws ApiError to refuse. `active`, when given,
  // says whether there are webhooks at all (AdmissionChain::hasWebhooks): when there are none,
  // a write skips admission, and the copies and second schema pass it costs.
  using AdmitFunction = std::function<nlohmann::json(const AdmissionAttributes&)>;
  void setAdmission(AdmitFunction admit, std::function<bool()> active = {}) {
    admit_ = std::move(admit);
    admitActive_ = std::move(active);
  }
  void setGarbageCollector(GarbageCollector* gc) { gc_ = gc; }
  // Told of every object a create or an update stored and every object removed, after the
  // store write, on the writing thread: for the controllers of kube-controller-manager that
  // follow writes (the token controller). It must be quick and must not call the API.
  using WriteObserver = std::function<void(const ResourceType& type, const nlohmann::json& object, bool removed)>;
  void setWriteObserver(WriteObserver observer) { observer_ = std::move(observer); }

  // Each throws ApiError with kube-apiserver's status, reason and message.
  nlohmann::json get(const ResourceRef& ref) const;
  // The same without a copy when the stored object already reads as the version asked for
  // (its apiVersion): for readers that only look.
  StoredObject getShared(const ResourceRef& ref) const;
  nlohmann::json list(const ResourceRef& ref, const ListOptions& options) const;  // a <Kind>List
  // Writes answer the object as stored (dry run: as it would be), shared with the store rather
  // than copied: most callers only serialize it or ignore it.
  StoredObject create(const ResourceRef& ref, nlohmann::json object, const WriteOptions& options = {});
  StoredObject update(const ResourceRef& ref, nlohmann::json object, const WriteOptions& options = {});
  // `contentType`: application/merge-patch+json, application/json-patch+json,
  // application/strategic-merge-patch+json or application/apply-patch+yaml (body in YAML or JSON).
  // `createdByApply`, when given, is set when an apply created the object (answered 201).
  StoredObject patch(const ResourceRef& ref, const std::string& contentType, const std::string& body,
                     const WriteOptions& options = {}, bool* createdByApply = nullptr);
  // Returns the object as stored after the call (with deletionTimestamp when finalizers keep
  // it), or a Status {status: Success} once it is gone, as kube-apiserver does.
  StoredObject remove(const ResourceRef& ref, const DeleteOptions& options = {});
  // deletecollection: deletes every object the selectors pick (those that finalizers keep get
  // their deletionTimestamp) and answers a <Kind>List of them as the deletes left them.
  nlohmann::json removeCollection(const ResourceRef& ref, const ListOptions& selection,
                                  const DeleteOptions& options = {});

  // ?watch=true. `resourceVersion` "" or "0" starts with synthetic ADDED events for what
  // exists (as kube-apiserver does for a watch without a resourceVersion).
  // `watchOptions.bookmarkInterval` > 0 asks for BOOKMARK events (?allowWatchBookmarks=true).
  // Throws ApiError 410 when `resourceVersion` is older than the history kept.
  std::unique_ptr<ObjectStore::Watch> watch(const ResourceRef& ref, const ListOptions& options,
                                            const std::string& resourceVersion,
                                            const ObjectStore::WatchOptions& watchOptions = {});

  // The type a request addresses; throws ApiError 404 as kube-apiserver does for an unknown
  // resource, a namespace on a cluster-scoped one or a subresource the type lacks.
  ResourceTypePtr resolve(const ResourceRef& ref) const;
  // RFC 3339 "now" from the cluster's clock (creationTimestamp, deletionTimestamp, conditions).
  std::string now() const;

  ResourceRegistry& registry() { return registry_; }
  ObjectStore& store() { return store_; }
  const std::string& clusterName() const { return clusterName_; }

 private:
  // What the client wants stored, computed from the current object (update body, patch result).
  struct UpdatePlan {
    nlohmann::json object;
    bool managedFieldsDone = false;  // server-side apply already recorded ownership
  };
  using PlanFunction = std::function<UpdatePlan(const nlohmann::json* current)>;  // null: absent
  StoredObject writeLoop(const ResourceRef& ref, const WriteOptions& options, std::optional<std::uint64_t> precondition,
                         const PlanFunction& plan);
  // `stored`: the stored object the plan was made from (never null); a no-op write answers it.
  StoredObject commitUpdate(const ResourceTypePtr& type, const ResourceVersionInfo& version, const ResourceRef& ref,
                            const StoredObject& stored, nlohmann::json incoming, bool managedFieldsDone,
                            std::optional<std::uint64_t> precondition, const WriteOptions& options);
  StoredObject createWithManagedFields(const ResourceRef& ref, nlohmann::json object, const WriteOptions& options);
  void afterRemoval(const ResourceType& type, const nlohmann::json& removed, const std::string& policy);

  std::string clusterName_;
  ResourceRegistry& registry_;
  ObjectStore& store_;
  const Clock& clock_;
  AdmitFunction admit_;
  std::function<bool()> admitActive_;
  bool admitting() const { return admit_ && (!admitActive_ || admitActive_()); }
  GarbageCollector* gc_ = nullptr;
  WriteObserver observer_;
};

}  // namespace mka::sandbox
