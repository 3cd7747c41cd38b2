#include "mka/multikueue/workload_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/config/managed_by.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/admission_check_reconciler.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/workload_status.h"

namespace mka::multikueue {

using nlohmann::json;
using std::chrono::nanoseconds;

namespace {

using json_fields::arrayMember;
using json_fields::metadataString;
using json_fields::objectMember;
// The reconciler's writes read nothing of the answer but, for status updates, the revision.
using Answer = kube::WriteOptions::Answer;

std::string clusterQueueOf(const json& workload) {
  return json_fields::stringMember(objectMember(objectMember(workload, "status"), "admission"), "clusterQueue");
}

// The remote Workload with condition `type` True and the earliest lastTransitionTime.
const std::pair<const std::string, json>* earliestWith(const std::map<std::string, json>& remotes,
                                                       std::string_view type) {
  const std::pair<const std::string, json>* best = nullptr;
  Clock::TimePoint bestTime{};
  for (const auto& entry : remotes) {
    if (!conditionIsTrue(entry.second, type)) continue;
    const auto t = transitionTime(*findCondition(entry.second, type));
    if (best == nullptr || t < bestTime) {
      best = &entry;
      bestTime = t;
    }
  }
  return best;
}

bool sameSet(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

template <typename F>
void ignoring(kube::Reason reason, F&& f) {
  try {
    f();
  } catch (const kube::ApiError& e) {
    if (e.reason() != reason) throw;
  }
}

}  // namespace

// Who owns the Workload, and the adapter (framework) that handles that kind (§2.2).
struct WorkloadReconciler::Owner {
  std::optional<kube::GroupVersionKind> gvk;  // nullopt: no owner at all
  std::string name;
};

// Everything one reconcile knows about a Workload and its copies (§2.1 step 5).
struct WorkloadReconciler::Group {
  std::string key, ns, name;
  const config::ExternalFramework* framework = nullptr;
  std::string ownerName;
  std::optional<json> localJob;
  std::vector<std::string> clusters;  // MultiKueueConfig order
  std::map<std::string, std::shared_ptr<RemoteCluster>> available;
  std::vector<std::string> unavailable;
  std::map<std::string, json> remotes;  // cluster -> remote Workload (available clusters only)
  std::string clusterQueue;
};

WorkloadReconciler::WorkloadReconciler(kube::Client& manager, ManagerCaches caches, const ClusterRegistry& clusters,
                                       EventRecorder& events, const Clock& clock, Options options,
                                       DispatchObserver* observer)
    : manager_(manager),
      caches_(std::move(caches)),
      clusters_(clusters),
      events_(events),
      clock_(clock),
      options_(std::move(options)),
      observer_(observer) {}

namespace {

// metadata.resourceVersion as a number (the sandbox's and etcd's are revisions); -1 if not.
long long revisionOf(const json& object) {
  const auto text = metadataString(object, "resourceVersion");
  try {
    return text.empty() ? -1 : std::stoll(text);
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

bool WorkloadReconciler::lagsOwnWrite(const std::string& key, const json& cached) {
  std::lock_guard lock(mutex_);
  auto it = written_.find(key);
  if (it == written_.end()) return false;
  if (it->second > revisionOf(cached)) return true;
  written_.erase(it);  // the cache caught up
  return false;
}

std::optional<json> WorkloadReconciler::cachedRemote(RemoteCluster& remote, const kube::GroupVersionKind& gvk,
                                                     const std::string& key) {
  auto object = gvk == kWorkloadGvk ? remote.workload(key) : remote.job(gvk, key);
  const auto slot = remote.name() + "|" + gvk.goString() + "|" + key;
  std::lock_guard lock(mutex_);
  auto it = removedRemotes_.find(slot);
  if (it == removedRemotes_.end()) return object;
  if (object && metadataString(*object, "uid") == it->second) return std::nullopt;
  removedRemotes_.erase(it);  // the cache caught up with the delete (or holds a newer object)
  return object;
}

void WorkloadReconciler::forgetRemote(RemoteCluster& remote, const kube::GroupVersionKind& gvk, const json& object) {
  const auto slot = remote.name() + "|" + gvk.goString() + "|" + kube::Informer::keyOf(object);
  std::lock_guard lock(mutex_);
  removedRemotes_[slot] = metadataString(object, "uid");
}

void WorkloadReconciler::rememberDeleted(const json& workload) {
  std::lock_guard lock(mutex_);
  deleted_[kube::Informer::keyOf(workload)] = workload;
}

std::vector<std::string> WorkloadReconciler::workloadsUsingChecks(
    const std::vector<std::string>& checks, const std::function<bool(const std::string& key)>& skip) const {
  std::vector<std::string> keys;
  if (checks.empty()) return keys;
  caches_.workloads->forEach(
      [&](const json& wl) {
        if (std::any_of(checks.begin(), checks.end(),
                        [&](const std::string& check) { return findCheckState(wl, check) != nullptr; }))
          keys.push_back(kube::Informer::keyOf(wl));
      },
      [&](const std::string& key) { return !skip || !skip(key); });
  return keys;
}

std::optional<std::string> WorkloadReconciler::ourCheck(const json& workload) const {
  for (const auto& entry : arrayMember(objectMember(workload, "status"), "admissionChecks")) {
    const std::string name = entry.value("name", "");
    const auto ac = caches_.admissionChecks->get(name);
    if (ac && json_fields::stringMember(objectMember(*ac, "spec"), "controllerName") == options_.controllerName)
      return name;
  }
  return std::nullopt;
}

bool WorkloadReconciler::updateStatus(kube::Client& client, const json& cached,
                                      const std::function<bool(json&)>& mutate) {
  json object = cached;
  for (int attempt = 1;; ++attempt) {
    if (!mutate(object)) return false;
    try {
      auto written = client.update(object, {.fieldManager = std::string(kAdmissionFieldManager),
                                            .subresource = "status",
                                            .answer = Answer::Metadata});
      if (&client == &manager_) {
        const auto key = kube::Informer::keyOf(written);
        std::lock_guard lock(mutex_);
        written_[key] = revisionOf(written);
      }
      return true;
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return false;
      if (e.reason() != kube::Reason::Conflict || attempt >= 5) throw;
    }
    object = client.get(kube::GroupVersionKind::fromApiVersion(cached.value("apiVersion", ""), cached.value("kind", "")),
                        metadataString(cached, "namespace"), metadataString(cached, "name"));
  }
}

Result WorkloadReconciler::reject(const json& workload, const std::string& check, const std::string& message) {
  updateStatus(manager_, workload, [&](json& wl) {
    const auto* state = findCheckState(wl, check);
    const std::string old = state ? state->value("state", "") : "";
    if (old == check_state::kRejected) return false;
    return setCheckState(wl, check, check_state::kRejected, withPreviousState(message, old), clock_.now());
  });
  spdlog::info("workload rejected workload={} check={} reason=\"{}\"", kube::Informer::keyOf(workload), check, message);
  return Result::done();
}

Result WorkloadReconciler::reconcile(const std::string& key) {
  // (§2.1 step 1) The Workload, or the last copy seen before it was deleted.
  std::optional<json> workload = caches_.workloads->get(key);
  if (workload && lagsOwnWrite(key, *workload)) return Result::done();
  bool deleted = false;
  if (!workload) {
    std::lock_guard lock(mutex_);
    auto it = deleted_.find(key);
    if (it == deleted_.end()) return Result::done();
    workload = it->second;
    deleted = true;
  } else if (isTerminating(*workload)) {
    deleted = true;
  }
  auto forgetDeleted = [&] {
    std::lock_guard lock(mutex_);
    deleted_.erase(key);
    incrementalRound_.erase(key);
    written_.erase(key);
  };

  // (step 2) Our check, unless it is Rejected.
  const auto check = ourCheck(*workload);
  const json* state = check ? findCheckState(*workload, *check) : nullptr;
  if (!check || state == nullptr || state->value("state", "") == check_state::kRejected) {
    if (deleted) forgetDeleted();
    return Result::done();
  }

  Group group;
  group.key = key;
  std::tie(group.ns, group.name) = kube::Informer::splitKey(key);
  group.clusterQueue = clusterQueueOf(*workload);

  // (step 3) The adapter, from the owner (§2.2).
  Owner owner;
  const auto& annotations = objectMember(objectMember(*workload, "metadata"), "annotations");
  const auto ownerGvk = json_fields::stringMember(annotations, kJobOwnerGvkAnnotation);
  const auto ownerName = json_fields::stringMember(annotations, kJobOwnerNameAnnotation);
  for (const auto& f : options_.frameworks)
    if (!ownerGvk.empty() && !ownerName.empty() && f.gvk.goString() == ownerGvk) owner = {f.gvk, ownerName};
  if (!owner.gvk) {
    const auto& refs = arrayMember(objectMember(*workload, "metadata"), "ownerReferences");
    const json* chosen = nullptr;
    for (const auto& ref : refs)
      if (ref.value("controller", false)) chosen = &ref;
    if (chosen == nullptr && refs.is_array() && !refs.empty()) chosen = &refs[0];
    if (chosen != nullptr)
      owner = {kube::GroupVersionKind::fromApiVersion(chosen->value("apiVersion", ""), chosen->value("kind", "")),
               chosen->value("name", "")};
  }
  if (owner.gvk) {
    for (const auto& f : options_.frameworks)
      if (f.gvk == *owner.gvk) group.framework = &f;
  }
  if (group.framework == nullptr && !deleted) {
    if (!owner.gvk) return reject(*workload, *check, std::string(message::kNoAdapter));
    return reject(*workload, *check,
                  std::string(message::kNoAdapterForKindPrefix) + "\"" + owner.gvk->goString() + "\"");
  }
  group.ownerName = owner.name;

  // (step 4) The owner must be managed by MultiKueue (skipped once deleted: it may be gone).
  if (!deleted) {
    const auto jobKey = group.ns + "/" + group.ownerName;
    auto cache = caches_.jobs.find(group.framework->gvk);
    if (cache != caches_.jobs.end() && cache->second != nullptr) group.localJob = cache->second->get(jobKey);
    if (!group.localJob) group.localJob = manager_.get(group.framework->gvk, group.ns, group.ownerName);  // throws NotFound
    const auto& where = group.framework->managedBy;
    const auto value = config::readManagedBy(*group.localJob, where).value_or("");
    if (value != where.value) {
      const auto field = where.type == config::ManagedByLocation::Type::Path ? "." + where.path : where.fieldPath();
      return reject(*workload, *check,
                    std::string(message::kOwnerNotManagedPrefix) + "Expecting " + field + " to be \"" + where.value +
                        "\" not \"" + value + "\"");
    }
  }

  // (step 5) The group: the configured workers, split by availability, and their copies.
  const auto ac = caches_.admissionChecks->get(*check);
  const auto reference = ac ? multiKueueConfigOf(*ac) : ConfigReference{"", "admission check not found"};
  if (reference.name.empty())
    throw Error(key + ": admission check " + *check + ": cannot load its MultiKueueConfig: " + reference.error);
  const auto config = caches_.configs->get(reference.name);
  if (!config)
    throw Error(key + ": admission check " + *check + ": MultiKueueConfig \"" + reference.name +
                "\" not found; create it or fix spec.parameters.name of the AdmissionCheck");
  for (const auto& c : arrayMember(objectMember(*config, "spec"), "clusters"))
    if (c.is_string()) group.clusters.push_back(c.get<std::string>());
  for (const auto& name : group.clusters) {
    auto remote = clusters_.connected(name);
    if (!remote) {
      group.unavailable.push_back(name);
      continue;
    }
    if (auto copy = cachedRemote(*remote, kWorkloadGvk, key)) group.remotes[name] = std::move(*copy);
    group.available[name] = std::move(remote);
  }

  // (step 6) Deleted: clean every reachable worker; the GC takes the others.
  if (deleted) {
    for (auto& [name, remote] : group.available) removeRemoteObjects(*remote, group);
    forgetDeleted();
    return Result::done();
  }
  return reconcileGroup(*workload, *check, group);
}

void WorkloadReconciler::removeRemoteObjects(RemoteCluster& remote, const Group& group) {
  // The job first: the GC may already have removed the Workload (§2.6).
  if (group.framework != nullptr && !group.ownerName.empty()) {
    const auto job = cachedRemote(remote, group.framework->gvk, group.ns + "/" + group.ownerName);
    if (job && ownedByOrigin(*job, options_.origin)) {
      ignoring(kube::Reason::NotFound, [&] {
        remote.client().remove(group.framework->gvk, group.ns, group.ownerName, {.propagationPolicy = "Background"});
      });
      forgetRemote(remote, group.framework->gvk, *job);
      spdlog::info("remote job deleted workload={} cluster={} kind={}", group.key, remote.name(),
                   group.framework->gvk.kind);
    }
  }
  const auto copy = cachedRemote(remote, kWorkloadGvk, group.key);
  if (!copy) return;
  const auto& finalizers = arrayMember(objectMember(*copy, "metadata"), "finalizers");
  if (std::find(finalizers.begin(), finalizers.end(), json(kResourceInUseFinalizer)) != finalizers.end()) {
    ignoring(kube::Reason::NotFound, [&] {
      kube::retryOnConflict([&] {
        json current = remote.client().get(kWorkloadGvk, group.ns, group.name);
        auto& list = current["metadata"]["finalizers"];
        if (!list.is_array()) return;
        list.erase(std::remove(list.begin(), list.end(), json(kResourceInUseFinalizer)), list.end());
        remote.client().update(current, {.answer = Answer::None});
      });
    });
  }
  ignoring(kube::Reason::NotFound, [&] { remote.client().remove(kWorkloadGvk, group.ns, group.name); });
  forgetRemote(remote, kWorkloadGvk, *copy);
  spdlog::info("remote workload deleted workload={} cluster={}", group.key, remote.name());
}

void WorkloadReconciler::syncJob(RemoteCluster& remote, const Group& group, bool freshRead) {
  const auto& gvk = group.framework->gvk;
  std::optional<json> copy;
  if (freshRead) {
    ignoring(kube::Reason::NotFound, [&] { copy = remote.client().get(gvk, group.ns, group.ownerName); });
  } else {
    copy = cachedRemote(remote, gvk, group.ns + "/" + group.ownerName);
  }
  // §2.6: a job of that name without our origin label is someone else's; never touch it.
  const auto notOwned = [&] {
    return Error(group.key + ": cluster " + remote.name() + ": remote object is not owned by MultiKueue: expected \"" +
                 std::string(kOriginLabel) + "\"=\"" + options_.origin + "\" on " + gvk.kind + " \"" + group.ns + "/" +
                 group.ownerName + "\"; delete or rename that object on the worker");
  };
  if (!copy) {
    if (!group.localJob) return;
    try {
      remote.client().create(
          remoteJob(*group.localJob, *group.framework, group.name, options_.origin, options_.prebuiltLink),
          {.answer = Answer::None});
      spdlog::info("remote job created workload={} cluster={} kind={} job={}", group.key, remote.name(), gvk.kind,
                   group.ownerName);
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::AlreadyExists) throw;
      // Ours, created earlier and not in the cache yet; or someone else's: refuse.
      if (!ownedByOrigin(remote.client().get(gvk, group.ns, group.ownerName), options_.origin)) throw notOwned();
    }
    return;
  }
  if (!ownedByOrigin(*copy, options_.origin)) throw notOwned();
  if (!group.localJob) return;
  const auto patch = statusPatch(*group.localJob, *copy);
  if (!patch) return;
  const auto resource = manager_.discovery().resourceFor(gvk);
  manager_.patch(gvk, group.ns, group.ownerName, kube::PatchType::Merge, *patch,
                 {.subresource = resource.hasStatus ? "status" : "", .answer = Answer::None});
}

Result WorkloadReconciler::cleanupAll(Group& group) {
  std::string errors;
  for (auto& [name, remote] : group.available) {
    try {
      removeRemoteObjects(*remote, group);
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string("cluster ") + name + ": " + e.what();
    }
  }
  if (!errors.empty()) throw Error(group.key + ": removing remote objects: " + errors);
  if (!group.unavailable.empty()) return Result::after(options_.workerLostTimeout);
  return Result::done();
}

Result WorkloadReconciler::reconcileGroup(const json& workload, const std::string& check, Group& group) {
  const auto now = clock_.now();
  const auto* stateEntry = findCheckState(workload, check);
  const std::string state = stateEntry ? stateEntry->value("state", "") : "";

  // (2) Not running: nothing may stay on the workers.
  if (isFinished(workload) || !hasQuotaReservation(workload)) {
    {
      std::lock_guard lock(mutex_);
      incrementalRound_.erase(group.key);
    }
    bool any = false;
    for (auto& [name, remote] : group.available)
      any = any || group.remotes.contains(name) ||
            cachedRemote(*remote, group.framework->gvk, group.ns + "/" + group.ownerName).has_value();
    if (!any) return group.unavailable.empty() ? Result::done() : Result::after(options_.workerLostTimeout);
    return cleanupAll(group);
  }

  // (3) A worker finished it.
  if (const auto* finished = earliestWith(group.remotes, condition::kFinished)) {
    const auto& [cluster, remoteWl] = *finished;
    const auto* c = findCondition(remoteWl, condition::kFinished);
    if (c->value("reason", "") == kReasonOutOfSync) {
      if (state != check_state::kReady) return Result::done();
      const auto message = "Remote workload on worker cluster \"" + cluster +
                           "\" is out of sync with its user job, resetting for re-dispatch";
      if (updateStatus(manager_, workload, [&](json& wl) {
            const auto* s = findCheckState(wl, check);
            if (s == nullptr || s->value("state", "") != check_state::kReady) return false;
            return setCheckState(wl, check, check_state::kRetry, withPreviousState(message, check_state::kReady), now);
          }))
        events_.record(workload, "Warning", kEventReason, withPreviousState(message, check_state::kReady));
      return Result::done();
    }
    // The final status copy reads the worker's job directly: its informer may not have
    // delivered the last status yet, and the copy is deleted right after.
    syncJob(*group.available.at(cluster), group, /*freshRead=*/true);
    updateStatus(manager_, workload, [&](json& wl) {
      if (isFinished(wl)) return false;
      return setCondition(wl, condition::kFinished, true, c->value("reason", ""), c->value("message", ""), now);
    });
    spdlog::info("workload finished on worker workload={} cluster={} reason={}", group.key, cluster,
                 c->value("reason", ""));
    return Result::done();
  }

  // (4) A worker evicted it.
  if (const auto* evicted = earliestWith(group.remotes, condition::kEvicted)) {
    const auto& cluster = evicted->first;
    if (isEvicted(workload)) {
      syncJob(*group.available.at(cluster), group, false);
      return Result::done();
    }
    if (state == check_state::kReady) {
      const auto message = "Workload evicted on worker cluster: \"" + clusterName(workload) +
                           "\", resetting for re-admission. Previously: \"Ready\"";
      if (updateStatus(manager_, workload, [&](json& wl) {
            const auto* s = findCheckState(wl, check);
            if (s == nullptr || s->value("state", "") != check_state::kReady) return false;
            return setCheckState(wl, check, check_state::kRetry, message, now);
          }))
        events_.record(workload, "Normal", kEventReason, message);
      return Result::done();
    }
  }

  // (5) Copies whose spec no longer matches the manager's go.
  for (auto it = group.remotes.begin(); it != group.remotes.end();) {
    if (sameSpecAsCopy(workload, it->second)) {
      ++it;
      continue;
    }
    spdlog::info("remote workload out of sync, deleting workload={} cluster={}", group.key, it->first);
    removeRemoteObjects(*group.available.at(it->first), group);
    it = group.remotes.erase(it);
  }

  // (6) The first worker to admit wins. Once a winner is recorded (status.clusterName) it stays
  // the winner: admission times have one-second resolution, so two workers can tie, and a
  // cache that lags must never flip the choice.
  const auto* admitted = earliestWith(group.remotes, condition::kAdmitted);
  if (const auto recorded = clusterName(workload); !recorded.empty()) {
    auto it = group.remotes.find(recorded);
    admitted = it != group.remotes.end() && conditionIsTrue(it->second, condition::kAdmitted) ? &*it : nullptr;
  }
  if (admitted == nullptr && state == check_state::kReady) {
    const auto cluster = clusterName(workload);
    std::string message;
    if (cluster.empty()) {
      message = std::string(message::kReadyWithoutCluster);
    } else if (!group.available.contains(cluster)) {
      const auto since = clusters_.disconnectedSince(cluster).value_or(now);
      const auto remaining = options_.workerLostTimeout - std::chrono::duration_cast<nanoseconds>(now - since);
      if (remaining > nanoseconds::zero()) return Result::after(remaining);
      message = std::string(message::kAdmittingRemoteLost);
    } else {
      message = std::string(message::kAdmittingRemoteGone);
    }
    updateStatus(manager_, workload, [&](json& wl) {
      const auto* s = findCheckState(wl, check);
      if (s == nullptr || s->value("state", "") != check_state::kReady) return false;
      return setCheckState(wl, check, check_state::kRetry, withPreviousState(message, check_state::kReady), now);
    });
    spdlog::info("workload sent to retry workload={} cluster={} reason=\"{}\"", group.key, cluster, message);
    return Result::done();
  }
  if (admitted != nullptr) {
    const auto& [cluster, remoteWl] = *admitted;
    // 6b.1: the other copies go.
    for (auto& [name, remote] : group.available)
      if (name != cluster &&
          (group.remotes.contains(name) ||
           cachedRemote(*remote, group.framework->gvk, group.ns + "/" + group.ownerName)))
        removeRemoteObjects(*remote, group);
    auto& remote = *group.available.at(cluster);
    // 6b.2: evicted on the manager while running: ask the worker to deactivate its copy.
    if (hasQuotaReservation(workload) && isEvicted(workload)) {
      const auto* localEvicted = findCondition(workload, condition::kEvicted);
      const auto message = "Evicted on manager: " + localEvicted->value("message", "");
      updateStatus(remote.client(), remoteWl, [&](json& wl) {
        return setCondition(wl, condition::kDeactivationTarget, true, kReasonEvictedOnManagerCluster, message, now);
      });
      return Result::done();
    }
    // 6b.3-4: create the job copy, or copy its status back.
    syncJob(remote, group, false);
    // 6b.5: Ready, clusterName, nominations cleared.
    if (state != check_state::kRetry && state != check_state::kRejected) {
      const auto message = "The workload was admitted on \"" + cluster + "\"";
      bool becameReady = false;
      updateStatus(manager_, workload, [&](json& wl) {
        const auto* s = findCheckState(wl, check);
        const std::string current = s ? s->value("state", "") : "";
        if (current == check_state::kRetry || current == check_state::kRejected) return false;
        const auto existing = clusterName(wl);
        if (!existing.empty() && existing != cluster)
          throw Error(group.key + ": attempting to change immutable ClusterName from \"" + existing + "\" to \"" +
                      cluster + "\"");
        becameReady = current != check_state::kReady;
        bool changed = setCheckState(wl, check, check_state::kReady, message, now);
        if (existing.empty()) {
          wl["status"]["clusterName"] = cluster;
          changed = true;
        }
        changed = setNominatedClusters(wl, {}) || changed;
        return changed;
      });
      if (becameReady) {
        events_.record(workload, "Normal", kEventReason, message);
        if (observer_) observer_->workloadAdmitted(group.clusterQueue, cluster);
        spdlog::info("workload admitted on worker workload={} cluster={}", group.key, cluster);
      }
    }
    return Result::after(options_.workerLostTimeout);
  }

  // (8) Nominate only while the check is Pending and no worker holds it.
  if (state != check_state::kPending || !clusterName(workload).empty()) return Result::done();
  return nominateAndSync(workload, check, group);
}

std::vector<std::string> WorkloadReconciler::incrementalNomination(const json& workload, const Group& group,
                                                                   Result& result) {
  auto nominated = nominatedClusters(workload);
  const auto now = clock_.now();
  bool newRound = false;
  {
    std::lock_guard lock(mutex_);
    auto it = incrementalRound_.find(group.key);
    if (nominated.empty() || it == incrementalRound_.end() || now - it->second >= kIncrementalRoundTimeout) {
      newRound = true;
      incrementalRound_[group.key] = now;
      result = Result::after(kIncrementalRoundTimeout);
    } else {
      result = Result::after(kIncrementalRoundTimeout - std::chrono::duration_cast<nanoseconds>(now - it->second));
    }
  }
  if (!newRound) return nominated;
  int added = 0;
  for (const auto& name : group.clusters) {
    if (added >= options_.incrementalStepSize) break;
    if (std::find(nominated.begin(), nominated.end(), name) != nominated.end()) continue;
    nominated.push_back(name);
    ++added;
  }
  if (added == 0) spdlog::debug("{} workload={}", message::kNoMoreWorkers, group.key);
  return nominated;
}

Result WorkloadReconciler::nominateAndSync(const json& workload, const std::string& check, Group& group) {
  // (9) Every other check must be Ready first.
  for (const auto& entry : arrayMember(objectMember(workload, "status"), "admissionChecks"))
    if (entry.value("name", "") != check && entry.value("state", "") != check_state::kReady) return Result::done();

  Result result;
  std::vector<std::string> nominated;
  bool writeNominated = false;
  if (options_.dispatcherName == config::kDispatcherAllAtOnce) {
    for (const auto& [name, remote] : group.available) nominated.push_back(name);  // sorted (std::map)
    writeNominated = !sameSet(nominated, nominatedClusters(workload));
  } else if (options_.dispatcherName == config::kDispatcherIncremental) {
    nominated = incrementalNomination(workload, group, result);
    writeNominated = !sameSet(nominated, nominatedClusters(workload));
  } else {
    nominated = nominatedClusters(workload);  // an external dispatcher's choice
  }
  if (writeNominated) {
    updateStatus(manager_, workload, [&](json& wl) {
      if (!clusterName(wl).empty()) return false;
      if (sameSet(nominated, nominatedClusters(wl))) return false;
      return setNominatedClusters(wl, nominated);
    });
  }

  std::string errors;
  for (const auto& name : nominated)
    if (!group.available.contains(name))
      errors += (errors.empty() ? "" : "; ") + std::string("cluster ") + name + ": no remote client for nominated cluster";
  for (auto& [name, remote] : group.available) {
    const bool isNominated = std::find(nominated.begin(), nominated.end(), name) != nominated.end();
    try {
      if (isNominated && !group.remotes.contains(name)) {
        bool created = true;
        try {
          remote->client().create(remoteWorkload(workload, options_.origin), {.answer = Answer::None});
        } catch (const kube::ApiError& e) {
          if (e.reason() != kube::Reason::AlreadyExists) throw;
          created = false;
        }
        if (created) {
          if (observer_) observer_->workloadDispatched(group.clusterQueue, name);
          spdlog::info("remote workload created workload={} cluster={}", group.key, name);
        }
      } else if (!isNominated && group.remotes.contains(name)) {
        removeRemoteObjects(*remote, group);
      }
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string("cluster ") + name + ": " + e.what();
    }
  }
  if (!errors.empty()) throw Error(group.key + ": " + errors);
  return result;
}

}  // namespace mka::multikueue
