#include "mka/multikueue/dependencies.h"

#include <algorithm>

#include "mka/api/kinds.h"
#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/generic_adapter.h"

namespace mka::multikueue {
namespace {

using nlohmann::json;

// A write that met a concurrent one (another Workload taking or releasing the same object) is
// decided again from a fresh read, at most this many times.
constexpr int kAttempts = 5;

constexpr std::string_view kTokenSecretType = "kubernetes.io/service-account-token";
constexpr std::string_view kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";

// The content fields each kind's copy carries; everything else of the object stays behind.
const std::vector<std::string_view>& contentFields(const std::string& kind) {
  static const std::vector<std::string_view> secret = {"type", "data", "immutable"};
  static const std::vector<std::string_view> configMap = {"data", "binaryData", "immutable"};
  static const std::vector<std::string_view> serviceAccount = {"imagePullSecrets", "automountServiceAccountToken"};
  if (kind == "Secret") return secret;
  if (kind == "ConfigMap") return configMap;
  return serviceAccount;
}

api::GroupVersionKind gvkOf(const std::string& kind) {
  if (kind == "Secret") return api::kSecretGvk;
  if (kind == "ConfigMap") return api::kConfigMapGvk;
  return api::kServiceAccountGvk;
}

std::string describe(const DependencyRef& ref, const std::string& namespace_) {
  return ref.gvk.kind + " \"" + namespace_ + "/" + ref.name + "\" (" + ref.path + ")";
}

std::string jobName(const json& job) {
  return json_fields::metadataString(job, "namespace") + "/" + json_fields::metadataString(job, "name");
}

std::string ownersText(const std::set<std::string>& owners) {
  return strings::join(std::vector<std::string>(owners.begin(), owners.end()), ",");
}

std::string originSelector(const std::string& origin) { return std::string(api::kOriginLabel) + "=" + origin; }

// `object` with its owners annotation set to `owners`, for an update conditioned on its version.
json withOwners(json object, const std::set<std::string>& owners) {
  object["metadata"]["annotations"][std::string(kDependencyOwnersAnnotation)] = ownersText(owners);
  return object;
}

// Deletes `object` unless it changed since read (its resourceVersion). Returns false when it
// changed (the caller reads it again); true when deleted or gone.
bool removeUnchanged(kube::Client& remote, const json& object) {
  const api::GroupVersionKind gvk = gvkOf(json_fields::stringMember(object, "kind"));
  try {
    remote.remove(gvk, json_fields::metadataString(object, "namespace"), json_fields::metadataString(object, "name"),
                  {.uid = json_fields::metadataString(object, "uid"),
                   .resourceVersion = json_fields::metadataString(object, "resourceVersion")});
    return true;
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return true;
    if (e.reason() == kube::Reason::Conflict) return false;
    throw;
  }
}

// Brings one worker object to `owners` (deleting it when empty), re-reading on a conflict.
// Returns whether it was deleted.
bool setOwners(kube::Client& remote, json object,
               const std::function<std::set<std::string>(std::set<std::string>)>& next) {
  const auto gvk = gvkOf(json_fields::stringMember(object, "kind"));
  const auto ns = json_fields::metadataString(object, "namespace");
  const auto name = json_fields::metadataString(object, "name");
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const auto owners = dependencyOwners(object);
    const auto wanted = next(owners);
    if (wanted == owners && !wanted.empty()) return false;
    try {
      if (wanted.empty()) {
        if (removeUnchanged(remote, object)) return true;
      } else {
        remote.update(withOwners(object, wanted), {.answer = kube::WriteOptions::Answer::None});
        return false;
      }
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return false;
      if (e.reason() != kube::Reason::Conflict) throw;
    }
    try {
      object = remote.get(gvk, ns, name);
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return false;
      throw;
    }
  }
  throw Error(gvk.kind + " \"" + ns + "/" + name + "\": its owners changed " + std::to_string(kAttempts) +
              " times while being updated; the next pass tries again");
}

}  // namespace

const std::vector<api::GroupVersionKind>& dependencyKinds() {
  static const std::vector<api::GroupVersionKind> kinds = {api::kSecretGvk, api::kConfigMapGvk,
                                                           api::kServiceAccountGvk};
  return kinds;
}

std::vector<DependencyRef> dependenciesOf(const json& job, const jobkind::JobKind& kind) {
  std::vector<DependencyRef> out;
  for (const auto& path : kind.dependencyPaths()) {
    const auto gvk = gvkOf(path.kind);
    for (auto& name : json_fields::stringsAt(job, path.path)) {
      DependencyRef ref{gvk, std::move(name), path.path};
      if (std::find(out.begin(), out.end(), ref) == out.end()) out.push_back(std::move(ref));
    }
  }
  return out;
}

std::optional<std::string> dependencyRefusal(const DependencyRef& ref, const json* object,
                                             const std::string& namespace_) {
  if (ref.name.find('/') != std::string::npos)
    return ref.gvk.kind + " \"" + ref.name + "\" (" + ref.path +
           ") names another namespace: only objects of the job's namespace \"" + namespace_ + "\" are copied";
  if (object == nullptr) return std::nullopt;
  const auto objectNamespace = json_fields::metadataString(*object, "namespace");
  if (objectNamespace != namespace_)
    return describe(ref, objectNamespace) + " is in another namespace than the job's \"" + namespace_ +
           "\": only objects of the job's namespace are copied";
  if (ref.gvk == api::kSecretGvk && json_fields::stringView(*object, "type") == kTokenSecretType)
    return describe(ref, namespace_) + " is a service-account token Secret: it is never copied (the worker's " +
           "token controller makes its own for its ServiceAccounts)";
  if (const auto size = object->dump().size(); size > kMaxDependencyBytes)
    return describe(ref, namespace_) + " is " + std::to_string(size) +
           " bytes, over the 1 MiB a copied object may have: create it on the worker yourself";
  return std::nullopt;
}

std::set<std::string> dependencyOwners(const json& object) {
  std::set<std::string> out;
  const auto& annotations = json_fields::objectMember(json_fields::objectMember(object, "metadata"), "annotations");
  for (auto& owner : strings::split(json_fields::stringView(annotations, kDependencyOwnersAnnotation), ','))
    if (!owner.empty()) out.insert(std::move(owner));
  return out;
}

json remoteDependency(const json& local, const std::string& origin, const std::set<std::string>& owners) {
  const auto kind = json_fields::stringMember(local, "kind");
  json out = {{"apiVersion", "v1"}, {"kind", kind}};
  const auto& localMeta = json_fields::objectMember(local, "metadata");
  json meta = {{"name", json_fields::stringMember(localMeta, "name")},
               {"namespace", json_fields::stringMember(localMeta, "namespace")}};
  json labels = json_fields::objectMember(localMeta, "labels");
  labels[std::string(api::kOriginLabel)] = origin;
  json annotations = json_fields::objectMember(localMeta, "annotations");
  annotations.erase(std::string(kLastApplied));
  annotations[std::string(kDependencyOwnersAnnotation)] = ownersText(owners);
  meta["labels"] = std::move(labels);
  meta["annotations"] = std::move(annotations);
  out["metadata"] = std::move(meta);
  for (const auto field : contentFields(kind)) {
    const auto it = local.find(field);
    if (it != local.end() && !it->is_null()) out[std::string(field)] = *it;
  }
  return out;
}

bool sameDependency(const json& remote, const json& wanted) {
  const auto kind = json_fields::stringMember(wanted, "kind");
  for (const auto field : contentFields(kind)) {
    const auto r = remote.find(field);
    const auto w = wanted.find(field);
    const bool rSet = r != remote.end() && !r->is_null();
    const bool wSet = w != wanted.end() && !w->is_null();
    if (rSet != wSet || (rSet && *r != *w)) return false;
  }
  const auto& rMeta = json_fields::objectMember(remote, "metadata");
  const auto& wMeta = json_fields::objectMember(wanted, "metadata");
  return json_fields::objectMember(rMeta, "labels") == json_fields::objectMember(wMeta, "labels") &&
         json_fields::objectMember(rMeta, "annotations") == json_fields::objectMember(wMeta, "annotations");
}

std::optional<std::string> missingDependency(kube::Client& manager, const json& job, const jobkind::JobKind& kind,
                                             const std::string& namespace_) {
  for (const auto& ref : dependenciesOf(job, kind)) {
    if (dependencyRefusal(ref, nullptr, namespace_)) continue;
    try {
      (void)manager.get(ref.gvk, namespace_, ref.name);
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::NotFound) throw;
      return describe(ref, namespace_) + ", named by " + kind.gvk().kind + " " + jobName(job) +
             ", is not on the manager: no worker gets the job until it is there; create it in namespace \"" +
             namespace_ + "\" or remove it from the job";
    }
  }
  return std::nullopt;
}

void syncDependencies(kube::Client& manager, kube::Client& remote, const std::string& cluster, const json& job,
                      const jobkind::JobKind& kind, const std::string& namespace_, const std::string& workloadName,
                      const std::string& origin, std::vector<std::string>& notices) {
  for (const auto& ref : dependenciesOf(job, kind)) {
    if (auto refusal = dependencyRefusal(ref, nullptr, namespace_)) {
      notices.push_back(std::move(*refusal));
      continue;
    }
    json local;
    try {
      local = manager.get(ref.gvk, namespace_, ref.name);
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::NotFound) throw;
      throw DependencyMissing(describe(ref, namespace_) + ", named by " + kind.gvk().kind + " " + jobName(job) +
                              ", is not on the manager: no worker gets the job until it is there; create it in "
                              "namespace \"" +
                              namespace_ + "\" or remove it from the job");
    }
    if (auto refusal = dependencyRefusal(ref, &local, namespace_)) {
      notices.push_back(std::move(*refusal));
      continue;
    }
    bool done = false;
    for (int attempt = 0; attempt < kAttempts && !done; ++attempt) {
      std::optional<json> current;
      try {
        current = remote.get(ref.gvk, namespace_, ref.name);
      } catch (const kube::ApiError& e) {
        if (e.reason() != kube::Reason::NotFound) throw;
      }
      try {
        if (!current) {
          remote.create(remoteDependency(local, origin, {workloadName}), {.answer = kube::WriteOptions::Answer::None});
          done = true;
        } else if (!ownedByOrigin(*current, origin)) {
          notices.push_back("worker " + cluster + " has its own " + describe(ref, namespace_) +
                            " (without the origin label " + std::string(api::kOriginLabel) + "=" + origin +
                            "): it is used as it is, never overwritten");
          done = true;
        } else {
          auto owners = dependencyOwners(*current);
          owners.insert(workloadName);
          auto wanted = remoteDependency(local, origin, owners);
          if (!sameDependency(*current, wanted)) {
            wanted["metadata"]["resourceVersion"] = json_fields::metadataString(*current, "resourceVersion");
            remote.update(wanted, {.answer = kube::WriteOptions::Answer::None});
          }
          done = true;
        }
      } catch (const kube::ApiError& e) {
        // Created, changed or deleted meanwhile (another Workload sharing it): decide again.
        if (e.reason() != kube::Reason::AlreadyExists && e.reason() != kube::Reason::Conflict &&
            e.reason() != kube::Reason::NotFound)
          throw;
      }
    }
    if (!done)
      throw Error("worker " + cluster + ": " + describe(ref, namespace_) + " changed " + std::to_string(kAttempts) +
                  " times while being written; the next reconcile tries again");
  }
}

std::size_t releaseDependencies(kube::Client& remote, const std::string& namespace_, const std::string& workloadName,
                                const std::string& origin) {
  std::size_t deleted = 0;
  for (const auto& gvk : dependencyKinds()) {
    for (auto& object : remote.listAll(gvk, namespace_, {.labelSelector = originSelector(origin)})) {
      if (!dependencyOwners(object).contains(workloadName)) continue;
      object["apiVersion"] = "v1";
      object["kind"] = gvk.kind;
      if (setOwners(remote, std::move(object), [&](std::set<std::string> owners) {
            owners.erase(workloadName);
            return owners;
          }))
        ++deleted;
    }
  }
  return deleted;
}

std::size_t collectDependencies(kube::Client& remote, const std::string& origin,
                                const std::function<bool(const std::string& workloadKey)>& live) {
  std::size_t deleted = 0;
  for (const auto& gvk : dependencyKinds()) {
    for (auto& object : remote.listAll(gvk, "", {.labelSelector = originSelector(origin)})) {
      const auto ns = json_fields::metadataString(object, "namespace");
      object["apiVersion"] = "v1";
      object["kind"] = gvk.kind;
      if (setOwners(remote, std::move(object), [&](std::set<std::string> owners) {
            std::erase_if(owners, [&](const std::string& owner) { return !live(ns + "/" + owner); });
            return owners;
          }))
        ++deleted;
    }
  }
  return deleted;
}

}  // namespace mka::multikueue
