#include "mka/multikueue/generic_adapter.h"

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/config/managed_by.h"
#include "mka/multikueue/api.h"

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

json& mapAt(json& meta, const char* field) {
  auto& map = meta[field];
  if (!map.is_object()) map = json::object();
  return map;
}

}  // namespace

json remoteWorkload(const json& local, const std::string& origin) {
  json out = reducedCopy(local);
  auto& labels = mapAt(out["metadata"], "labels");
  labels.erase(std::string(kJobUidLabel));
  labels[std::string(kOriginLabel)] = origin;
  return out;
}

json remoteJob(const json& local, const config::ExternalFramework& framework, const std::string& workloadName,
               const std::string& origin, PrebuiltLink link) {
  json out = reducedCopy(local);
  config::removeManagedBy(out, framework.managedBy);
  auto& meta = out["metadata"];
  auto& labels = mapAt(meta, "labels");
  labels[std::string(kOriginLabel)] = origin;
  mapAt(meta, "annotations")[std::string(kPrebuiltWorkloadNameKey)] = workloadName;
  if (link == PrebuiltLink::AnnotationAndLabel && workloadName.size() <= kMaxLabelValueLength)
    labels[std::string(kPrebuiltWorkloadNameKey)] = workloadName;
  return out;
}

std::optional<json> statusPatch(const json& local, const json& remote) {
  const auto remoteStatus = remote.find("status");
  if (remoteStatus == remote.end() || remoteStatus->is_null()) return std::nullopt;
  const json localStatus = local.value("status", json(nullptr));
  if (localStatus == *remoteStatus) return std::nullopt;
  return json{{"status", mergePatchBetween(localStatus, *remoteStatus)}};
}

std::optional<std::string> prebuiltWorkloadName(const json& job) {
  const auto& meta = json_fields::objectMember(job, "metadata");
  for (const char* field : {"annotations", "labels"}) {
    const auto& map = json_fields::objectMember(meta, field);
    auto it = map.find(std::string(kPrebuiltWorkloadNameKey));
    if (it != map.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  }
  return std::nullopt;
}

bool ownedByOrigin(const json& object, const std::string& origin) {
  if (origin.empty()) throw Error("multikueue origin is empty");
  const auto& labels = json_fields::objectMember(json_fields::objectMember(object, "metadata"), "labels");
  auto it = labels.find(std::string(kOriginLabel));
  return it != labels.end() && it->is_string() && it->get<std::string>() == origin;
}

}  // namespace mka::multikueue
