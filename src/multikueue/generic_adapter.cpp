#include "mka/multikueue/generic_adapter.h"

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/dependencies.h"

namespace mka::multikueue {
namespace {

using nlohmann::json;

// apiVersion, kind and metadata {name, namespace, labels, annotations} of `local`: what Kueue
// keeps of an object it copies. Ownership, finalizers, uid, resourceVersion and managedFields
// stay behind: an ownerReference to a manager uid would have the worker's GC delete the copy
// at once.
json reducedCopy(const json& local) {
  json out = json::object();
  for (const char* field : {"apiVersion", "kind"})
    if (local.contains(field)) out[field] = local[field];
  json meta = json::object();
  const auto& localMeta = json_fields::objectMember(local, "metadata");
  for (const char* field : {"name", "namespace", "labels", "annotations"}) {
    auto it = localMeta.find(field);
    if (it != localMeta.end() && !it->is_null()) meta[field] = *it;
  }
  out["metadata"] = std::move(meta);
  if (local.contains("spec")) out["spec"] = local["spec"];
  return out;
}

// RFC 7386 patch turning `before` into `after` (jsonpatch.CreateMergePatch): removed keys
// become null, changed objects are diffed key by key, anything else is replaced whole.
json mergePatchBetween(const json& before, const json& after) {
  if (!before.is_object() || !after.is_object()) return after;
  json patch = json::object();
  for (auto it = before.begin(); it != before.end(); ++it)
    if (!after.contains(it.key())) patch[it.key()] = nullptr;
  for (auto it = after.begin(); it != after.end(); ++it) {
    auto old = before.find(it.key());
    if (old == before.end()) {
      patch[it.key()] = it.value();
    } else if (*old != it.value()) {
      patch[it.key()] = mergePatchBetween(*old, it.value());
    }
  }
  return patch;
}

// Removes the field `pointer` names from `object` when it is there.
void removeAt(json& object, const json::json_pointer& pointer) {
  if (pointer.empty() || !object.contains(pointer)) return;
  auto& parent = object[pointer.parent_pointer()];
  if (parent.is_object()) {
    parent.erase(pointer.back());
  } else if (parent.is_array()) {
    parent.erase(static_cast<std::size_t>(std::stoul(pointer.back())));
  }
}

// The kind's removals, then its patches, one operation at a time so a failure names its own.
void applyRemoteCopy(json& copy, const jobkind::JobKind& kind) {
  for (const auto& field : kind.remoteCopyRemovals()) removeAt(copy, json::json_pointer(field));
  const auto& patches = kind.remoteCopyPatches();
  for (std::size_t i = 0; i < patches.size(); ++i) {
    try {
      copy = copy.patch(json::array({patches[i]}));
    } catch (const json::exception& e) {
      const auto& meta = json_fields::objectMember(copy, "metadata");
      throw RemoteCopyError(kind.gvk().kind + " " + std::string(json_fields::stringView(meta, "namespace")) + "/" +
                            std::string(json_fields::stringView(meta, "name")) + ": remoteCopy.patches[" +
                            std::to_string(i) + "] (" + patches[i].value("op", "") + " " +
                            patches[i].value("path", "") + ") of " + kind.name() + " does not apply: " + e.what() +
                            "; no worker gets a copy until the job or the patch changes");
    }
  }
}

json& mapAt(json& meta, const char* field) {
  auto& map = meta[field];
  if (!map.is_object()) map = json::object();
  return map;
}

}  // namespace

json remoteWorkload(const json& local, const std::string& origin, bool preemptionGated) {
  json out = reducedCopy(local);
  auto& labels = mapAt(out["metadata"], "labels");
  labels.erase(std::string(api::kJobUidLabel));
  labels[std::string(api::kOriginLabel)] = origin;
  // The manager's gates are the manager's: the copy gets only ours, opened by the dispatch loop.
  if (preemptionGated) out["spec"]["preemptionGates"] = json::array({{{"name", std::string(api::kPreemptionGate)}}});
  return out;
}

json remoteJob(const json& local, const jobkind::JobKind& kind, const std::string& workloadName,
               const std::string& origin, PrebuiltLink link) {
  json out = reducedCopy(local);
  kind.removeManagedBy(out);
  applyRemoteCopy(out, kind);
  auto& meta = out["metadata"];
  auto& labels = mapAt(meta, "labels");
  labels[std::string(api::kOriginLabel)] = origin;
  mapAt(meta, "annotations")[std::string(api::kPrebuiltWorkloadNameKey)] = workloadName;
  if (link == PrebuiltLink::AnnotationAndLabel && workloadName.size() <= api::kMaxLabelValueLength)
    labels[std::string(api::kPrebuiltWorkloadNameKey)] = workloadName;
  return out;
}

std::optional<json> statusPatch(const json& local, const json& remote, const std::vector<std::string>& exclude) {
  const auto remoteStatus = remote.find("status");
  if (remoteStatus == remote.end() || remoteStatus->is_null()) return std::nullopt;
  const json localStatus = local.value("status", json(nullptr));
  const json* wanted = &*remoteStatus;
  json filtered;  // copied only when something is left out
  if (!exclude.empty()) {
    filtered = *remoteStatus;
    for (const auto& field : exclude) removeAt(filtered, json::json_pointer(field));
    wanted = &filtered;
  }
  if (localStatus == *wanted) return std::nullopt;
  return json{{"status", mergePatchBetween(localStatus, *wanted)}};
}

std::optional<std::string> prebuiltWorkloadName(const json& job) {
  const auto& meta = json_fields::objectMember(job, "metadata");
  for (const char* field : {"annotations", "labels"}) {
    const auto& map = json_fields::objectMember(meta, field);
    auto it = map.find(std::string(api::kPrebuiltWorkloadNameKey));
    if (it != map.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  }
  return std::nullopt;
}

bool ownedByOrigin(const json& object, const std::string& origin) {
  if (origin.empty()) throw Error("multikueue origin is empty");
  const auto& labels = json_fields::objectMember(json_fields::objectMember(object, "metadata"), "labels");
  auto it = labels.find(std::string(api::kOriginLabel));
  return it != labels.end() && it->is_string() && it->get<std::string>() == origin;
}

GenericAdapter::GenericAdapter(jobkind::JobKind kind, PrebuiltLink link) : kind_(std::move(kind)), link_(link) {}

std::optional<std::string> GenericAdapter::copyProblem(const json& localJob) const {
  if (kind_.remoteCopyPatches().empty()) return std::nullopt;  // removals always apply
  json copy = reducedCopy(localJob);
  kind_.removeManagedBy(copy);
  try {
    applyRemoteCopy(copy, kind_);
  } catch (const RemoteCopyError& e) {
    return e.what();
  }
  return std::nullopt;
}

std::optional<std::string> GenericAdapter::missingDependency(kube::Client& manager, const json& localJob) const {
  if (!kind_.syncsDependencies()) return std::nullopt;
  return multikueue::missingDependency(manager, localJob, kind_, json_fields::metadataString(localJob, "namespace"));
}

std::optional<std::string> GenericAdapter::notManaged(const json& localJob) const {
  return kind_.notManagedByMultiKueue(localJob);
}

SyncOutcome GenericAdapter::syncJob(const SyncRequest& r) const {
  const auto& gvk = kind_.gvk();
  // §2.6: a job of that name without our origin label is someone else's; never touch it.
  const auto notOwned = [&] {
    return Error(r.namespace_ + "/" + r.workloadName + ": cluster " + r.cluster +
                 ": remote object is not owned by MultiKueue: expected \"" + std::string(api::kOriginLabel) + "\"=\"" +
                 r.origin + "\" on " + gvk.kind + " \"" + r.namespace_ + "/" + r.jobName +
                 "\"; delete or rename that object on the worker");
  };
  std::vector<std::string> ignored;
  auto& notices = r.notices != nullptr ? *r.notices : ignored;
  if (r.remoteJob == nullptr) {
    if (r.localJob == nullptr) return SyncOutcome::NoLocalJob;
    // The objects the job names first: a copy without them would not start there.
    if (kind_.syncsDependencies())
      syncDependencies(r.manager, r.remote, r.cluster, *r.localJob, kind_, r.namespace_, r.workloadName, r.origin,
                       notices);
    try {
      r.remote.create(remoteJob(*r.localJob, kind_, r.workloadName, r.origin, link_),
                      {.answer = kube::WriteOptions::Answer::None});
      return SyncOutcome::Created;
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::AlreadyExists) throw;
      // Ours, created earlier and not in the caller's cache yet; or someone else's: refuse.
      if (!ownedByOrigin(r.remote.get(gvk, r.namespace_, r.jobName), r.origin)) throw notOwned();
      return SyncOutcome::Unchanged;
    }
  }
  if (!ownedByOrigin(*r.remoteJob, r.origin)) throw notOwned();
  if (r.localJob == nullptr) return SyncOutcome::NoLocalJob;
  if (kind_.syncsDependencies()) {
    // Kept equal to the manager's while the job runs; one deleted on the manager meanwhile stays
    // as it was on the worker (the job runs with it), and its status still comes back.
    try {
      syncDependencies(r.manager, r.remote, r.cluster, *r.localJob, kind_, r.namespace_, r.workloadName, r.origin,
                       notices);
    } catch (const DependencyMissing& e) {
      notices.push_back(std::string(e.what()) + " (the job's copy runs already: the worker keeps what it has)");
    }
  }
  const auto patch = statusPatch(*r.localJob, *r.remoteJob, kind_.remoteStatusExclude());
  if (!patch) return SyncOutcome::Unchanged;
  const auto resource = r.manager.discovery().resourceFor(gvk);
  r.manager.patch(gvk, r.namespace_, r.jobName, kube::PatchType::Merge, *patch,
                  {.subresource = resource.hasStatus ? "status" : "", .answer = kube::WriteOptions::Answer::None});
  return SyncOutcome::StatusCopied;
}

bool GenericAdapter::deleteRemoteObject(kube::Client& remote, const std::string& namespace_,
                                        const std::string& name) const {
  try {
    remote.remove(kind_.gvk(), namespace_, name, {.propagationPolicy = "Background"});
    return true;
  } catch (const kube::ApiError& e) {
    if (e.reason() != kube::Reason::NotFound) throw;
    return false;
  }
}

std::optional<std::string> GenericAdapter::workloadKeyFor(const json& remoteJob) const {
  auto workload = prebuiltWorkloadName(remoteJob);
  if (!workload) return std::nullopt;
  return json_fields::metadataString(remoteJob, "namespace") + "/" + *workload;
}

Adapters genericAdapters(const config::Configuration& configuration, PrebuiltLink link) {
  std::vector<std::shared_ptr<const Adapter>> adapters;
  for (auto& kind : jobkind::kindsOf(configuration))
    adapters.push_back(std::make_shared<GenericAdapter>(std::move(kind), link));
  return Adapters(std::move(adapters));
}

}  // namespace mka::multikueue
