#include "mka/multikueue/workload_reconciler.h"

#include <algorithm>
#include <set>

#include "mka/api/views.h"
#include "mka/api/workload_status.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/controller/status_update.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/admission_check_reconciler.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/dependencies.h"
#include "mka/multikueue/generic_adapter.h"

namespace mka::multikueue {

using api::clusterName;
using api::conditionIsTrue;
using api::findCheckState;
using api::findCondition;
using api::hasQuotaReservation;
using api::isEvicted;
using api::isFinished;
using api::isTerminating;
using api::nominatedClusters;
using api::sameSpecAsCopy;
using api::setCheckState;
using api::setCondition;
using api::setNominatedClusters;
using api::transitionTime;
using api::withPreviousState;
using controller::EventRecorder;
using controller::ObjectReader;
using controller::Result;

using nlohmann::json;
using std::chrono::nanoseconds;

namespace {

using json_fields::metadataString;
// The reconciler's writes read nothing of the answer but, for status updates, the revision.
using Answer = kube::WriteOptions::Answer;

std::string clusterQueueOf(const json& workload) {
  return std::string(api::WorkloadView(workload).admittedClusterQueue());
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

// The namespace a create was refused for because the worker lacks it (404 on namespaces);
// nullopt for any other error.
std::optional<std::string> missingNamespaceOf(const kube::ApiError& e) {
  if (e.reason() != kube::Reason::NotFound) return std::nullopt;
  const auto& details = json_fields::objectMember(e.status(), "details");
  if (json_fields::stringView(details, "kind") != "namespaces") return std::nullopt;
  return json_fields::stringMember(details, "name");
}

std::string namespaceMissingMessage(const std::string& cluster, const std::string& ns) {
  return "Worker \"" + cluster + "\" has no namespace \"" + ns +
         "\": it is skipped for this workload until the namespace exists there";
}

}  // namespace

// Everything one reconcile knows about a Workload and its copies (§2.1 step 5).
struct WorkloadReconciler::Group {
  std::string key, ns, name;
  const Adapter* adapter = nullptr;  // the owner's kind (§2.2); null only for a deleted Workload
  std::string ownerName;
  std::optional<json> localJob;
  std::vector<std::string> clusters;  // MultiKueueConfig order
  std::map<std::string, std::shared_ptr<RemoteCluster>> available;
  std::vector<std::string> unavailable;
  std::map<std::string, json> remotes;  // cluster -> remote Workload (available clusters only)
  // Connected workers outside the MultiKueueConfig's list that hold copies of this Workload
  // which did not win (the list changed after they were sent; docs/worker-sets.md).
  std::map<std::string, std::shared_ptr<RemoteCluster>> outside;
  std::string clusterQueue;
};

std::string WorkloadReconciler::jobKey(const Group& group) { return group.ns + "/" + group.ownerName; }

WorkloadReconciler::WorkloadReconciler(kube::Client& manager, const ObjectReader& objects,
                                       const ClusterRegistry& clusters, EventRecorder& events, const Clock& clock,
                                       Options options, DispatchObserver* observer)
    : manager_(manager),
      objects_(objects),
      clusters_(clusters),
      events_(events),
      clock_(clock),
      options_(std::move(options)),
      observer_(observer) {
  for (const auto& adapter : options_.adapters.all())
    syncsDependencies_ = syncsDependencies_ || adapter->kind().syncsDependencies();
}

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

std::optional<json> WorkloadReconciler::cachedRemote(RemoteCluster& remote, const api::GroupVersionKind& gvk,
                                                     const std::string& key) {
  auto object = gvk == api::kWorkloadGvk ? remote.workload(key) : remote.job(gvk, key);
  const auto slot = remote.name() + "|" + gvk.goString() + "|" + key;
  std::lock_guard lock(mutex_);
  auto it = removedRemotes_.find(slot);
  if (it == removedRemotes_.end()) return object;
  if (object && metadataString(*object, "uid") == it->second) return std::nullopt;
  removedRemotes_.erase(it);  // the cache caught up with the delete (or holds a newer object)
  return object;
}

void WorkloadReconciler::forgetRemote(RemoteCluster& remote, const api::GroupVersionKind& gvk, const json& object,
                                      const std::string& workloadKey) {
  const auto slot = remote.name() + "|" + gvk.goString() + "|" + kube::Informer::keyOf(object);
  std::lock_guard lock(mutex_);
  removedRemotes_[slot] = metadataString(object, "uid");
  auto& slots = removedSlotsOf_[workloadKey];
  if (std::find(slots.begin(), slots.end(), slot) == slots.end()) slots.push_back(slot);
}

std::size_t WorkloadReconciler::remembered() const {
  std::lock_guard lock(mutex_);
  return deleted_.size() + removedRemotes_.size() + removedSlotsOf_.size() + incrementalRound_.size() +
         quotaRound_.size() + written_.size();
}

void WorkloadReconciler::rememberDeleted(const json& workload) {
  std::lock_guard lock(mutex_);
  deleted_[kube::Informer::keyOf(workload)] = workload;
}

std::vector<std::string> WorkloadReconciler::workloadsUsingChecks(
    const std::vector<std::string>& checks, const std::function<bool(const std::string& key)>& skip) const {
  std::vector<std::string> keys;
  if (checks.empty()) return keys;
  objects_.forEach(
      api::kWorkloadGvk, "",
      [&](const json& wl) {
        if (std::any_of(checks.begin(), checks.end(),
                        [&](const std::string& check) { return findCheckState(wl, check) != nullptr; }))
          keys.push_back(kube::Informer::keyOf(wl));
      },
      [&](const std::string& key) { return !skip || !skip(key); });
  return keys;
}

std::optional<std::string> WorkloadReconciler::ourCheck(const json& workload) const {
  for (const auto& entry : api::WorkloadView(workload).admissionChecks()) {
    const std::string name(json_fields::stringView(entry, "name"));
    const auto ac = objects_.get(api::kAdmissionCheckGvk, "", name);
    if (ac && isOurCheck(*ac, options_.controllerName)) return name;
  }
  return std::nullopt;
}

bool WorkloadReconciler::updateStatus(kube::Client& client, const json& cached,
                                      const std::function<bool(json&)>& mutate) {
  const auto written = controller::updateStatus(client, cached, mutate, kAdmissionFieldManager);
  if (!written) return false;
  if (&client == &manager_) {
    std::lock_guard lock(mutex_);
    written_[kube::Informer::keyOf(*written)] = revisionOf(*written);
  }
  return true;
}

Result WorkloadReconciler::reject(const json& workload, const std::string& check, const std::string& message) {
  updateStatus(manager_, workload, [&](json& wl) {
    const auto* state = findCheckState(wl, check);
    const std::string old = state ? state->value("state", "") : "";
    if (old == api::check_state::kRejected) return false;
    return setCheckState(wl, check, api::check_state::kRejected, withPreviousState(message, old), clock_.now());
  });
  log::info("workload rejected",
            {{"workload", kube::Informer::keyOf(workload)}, {"check", check}, {"reason", message}});
  return Result::done();
}

Result WorkloadReconciler::reconcile(const std::string& key) {
  auto loaded = loadWorkload(key);
  if (!loaded) return Result::done();
  const json& workload = loaded->object;
  const bool deleted = loaded->deleted;

  const auto ours = ourCheck(workload);
  if (observer_) trackCheckState(key, deleted ? nullptr : &workload, ours);
  const auto check = activeCheck(workload, ours);
  if (!check) {
    if (deleted) forgetWorkload(key);
    return Result::done();
  }

  Group group;
  group.key = key;
  std::tie(group.ns, group.name) = kube::Informer::splitKey(key);
  group.clusterQueue = clusterQueueOf(workload);
  if (auto rejected = resolveAdapter(workload, *check, deleted, group)) return *rejected;
  if (!deleted)
    if (auto rejected = requireManagedOwner(workload, *check, group)) return *rejected;
  readGroup(*check, workload, group);
  if (deleted) return cleanupDeleted(group);
  removeOutsideCopies(group);
  return reconcileGroup(workload, *check, group);
}

std::optional<WorkloadReconciler::Loaded> WorkloadReconciler::loadWorkload(const std::string& key) {
  // (§2.1 step 1) The Workload, or the last copy seen before it was deleted.
  if (auto workload = objects_.getByKey(api::kWorkloadGvk, key)) {
    if (lagsOwnWrite(key, *workload)) return std::nullopt;
    const bool terminating = isTerminating(*workload);
    return Loaded{std::move(*workload), terminating};
  }
  std::lock_guard lock(mutex_);
  auto it = deleted_.find(key);
  if (it == deleted_.end()) return std::nullopt;
  return Loaded{it->second, true};
}

void WorkloadReconciler::forgetWorkload(const std::string& key) {
  std::lock_guard lock(mutex_);
  deleted_.erase(key);
  if (auto it = removedSlotsOf_.find(key); it != removedSlotsOf_.end()) {
    for (const auto& slot : it->second) removedRemotes_.erase(slot);
    removedSlotsOf_.erase(it);
  }
  incrementalRound_.erase(key);
  quotaRound_.erase(key);
  written_.erase(key);
}

std::optional<std::string> WorkloadReconciler::activeCheck(const json& workload,
                                                           const std::optional<std::string>& check) const {
  // (§2.1 step 2) Our check, unless it is Rejected.
  const json* state = check ? findCheckState(workload, *check) : nullptr;
  if (!check || state == nullptr || state->value("state", "") == api::check_state::kRejected) return std::nullopt;
  return check;
}

void WorkloadReconciler::trackCheckState(const std::string& key, const json* workload,
                                         const std::optional<std::string>& check) {
  std::optional<OldestPerState::Entry> entry;
  const json* state = workload != nullptr && check ? findCheckState(*workload, *check) : nullptr;
  // Only a running Workload waits on the dispatch loop: before its quota is reserved it waits
  // on the manager's own queue, and a finished one on nothing.
  if (state != nullptr && hasQuotaReservation(*workload) && !isFinished(*workload)) {
    const auto* reserved = findCondition(*workload, api::condition::kQuotaReserved);
    entry =
        OldestPerState::Entry{state->value("state", ""), std::max(transitionTime(*state), transitionTime(*reserved))};
  }
  std::lock_guard lock(checkStatesMutex_);
  for (const auto& change : checkStates_.set(key, std::move(entry)))
    observer_->oldestInCheckState(change.state, change.oldest);
}

std::optional<Result> WorkloadReconciler::resolveAdapter(const json& workload, const std::string& check, bool deleted,
                                                         Group& group) {
  // (§2.2) The owner: the job-owner annotations when they name a configured kind, else the
  // controller ownerReference, else the first one.
  std::optional<api::GroupVersionKind> ownerGvk;
  const api::WorkloadView view(workload);
  const auto annotatedGvk = view.annotation(api::kJobOwnerGvkAnnotation);
  const auto annotatedName = view.annotation(api::kJobOwnerNameAnnotation);
  if (!annotatedGvk.empty() && !annotatedName.empty())
    for (const auto& adapter : options_.adapters.all())
      if (adapter->gvk().goString() == annotatedGvk) {
        ownerGvk = adapter->gvk();
        group.ownerName = std::string(annotatedName);
      }
  if (!ownerGvk) {
    const auto& refs = view.ownerReferences();
    const json* chosen = nullptr;
    for (const auto& ref : refs)
      if (ref.value("controller", false)) chosen = &ref;
    if (chosen == nullptr && refs.is_array() && !refs.empty()) chosen = &refs[0];
    if (chosen != nullptr) {
      ownerGvk = api::GroupVersionKind::fromApiVersion(chosen->value("apiVersion", ""), chosen->value("kind", ""));
      group.ownerName = chosen->value("name", "");
    }
  }
  if (ownerGvk) group.adapter = options_.adapters.find(*ownerGvk);
  // A deleted Workload is cleaned whatever its owner: only its remote Workloads are known then.
  if (group.adapter != nullptr || deleted) return std::nullopt;
  if (!ownerGvk) return reject(workload, check, std::string(message::kNoAdapter));
  return reject(workload, check, std::string(message::kNoAdapterForKindPrefix) + "\"" + ownerGvk->goString() + "\"");
}

std::optional<Result> WorkloadReconciler::requireManagedOwner(const json& workload, const std::string& check,
                                                              Group& group) {
  // (§2.1 step 4) The owner must be managed by MultiKueue.
  const auto& gvk = group.adapter->gvk();
  group.localJob = objects_.get(gvk, group.ns, group.ownerName);
  if (!group.localJob) group.localJob = manager_.get(gvk, group.ns, group.ownerName);  // throws NotFound
  if (const auto reason = group.adapter->notManaged(*group.localJob))
    return reject(workload, check, std::string(message::kOwnerNotManagedPrefix) + *reason);
  return std::nullopt;
}

void WorkloadReconciler::readGroup(const std::string& check, const json& workload, Group& group) {
  // (§2.1 step 5) The configured workers, split by availability, and their copies.
  const auto ac = objects_.get(api::kAdmissionCheckGvk, "", check);
  const auto reference = ac ? multiKueueConfigOf(*ac) : ConfigReference{"", "admission check not found"};
  if (reference.name.empty())
    throw Error(group.key + ": admission check " + check + ": cannot load its MultiKueueConfig: " + reference.error);
  const auto config = objects_.get(api::kMultiKueueConfigGvk, "", reference.name);
  if (!config)
    throw Error(group.key + ": admission check " + check + ": MultiKueueConfig \"" + reference.name +
                "\" not found; create it or fix spec.parameters.name of the AdmissionCheck");
  group.clusters = clustersOf(*config);
  // The worker that admitted it stays in the group when the config drops it: the job runs to
  // its end there, its status still copied back, its copies removed at the end.
  const auto admittedOn = clusterName(workload);
  if (!admittedOn.empty() &&
      std::find(group.clusters.begin(), group.clusters.end(), admittedOn) == group.clusters.end())
    group.clusters.push_back(admittedOn);
  for (const auto& name : group.clusters) {
    auto remote = clusters_.connected(name);
    if (!remote) {
      group.unavailable.push_back(name);
      continue;
    }
    if (auto copy = cachedRemote(*remote, api::kWorkloadGvk, group.key)) group.remotes[name] = std::move(*copy);
    group.available[name] = std::move(remote);
  }
  // A worker the config lists under another name (two MultiKueueClusters, one server) is not
  // outside: its copies are the group's own.
  const auto servers = clusters_.servers();
  std::set<std::string> groupServers;
  for (const auto& name : group.clusters)
    if (auto it = servers.find(name); it != servers.end() && !it->second.empty()) groupServers.insert(it->second);
  for (const auto& [name, server] : servers) {
    if (std::find(group.clusters.begin(), group.clusters.end(), name) != group.clusters.end()) continue;
    if (groupServers.contains(server)) continue;
    auto remote = clusters_.connected(name);
    if (!remote) continue;  // its copies trigger this reconcile again when it connects
    const bool job = group.adapter != nullptr && !group.ownerName.empty() &&
                     cachedRemote(*remote, group.adapter->gvk(), jobKey(group)).has_value();
    // Evicted but still holding its quota, the Workload waits for its job's status, copied back
    // from the one worker that has the job copy, to say the pods ended (its kind's active rule).
    // Kueue's eviction cleared clusterName, so that worker stays in the group by its job copy:
    // removed now, its status would never come back and the quota never be released.
    if (job && isEvicted(workload) && hasQuotaReservation(workload)) {
      group.clusters.push_back(name);
      if (auto copy = cachedRemote(*remote, api::kWorkloadGvk, group.key)) group.remotes[name] = std::move(*copy);
      group.available[name] = std::move(remote);
      continue;
    }
    if (job || cachedRemote(*remote, api::kWorkloadGvk, group.key)) group.outside[name] = std::move(remote);
  }
}

void WorkloadReconciler::removeOutsideCopies(Group& group) {
  for (auto& [name, remote] : group.outside) {
    log::info("remote copy on a worker no longer in the MultiKueueConfig is removed",
              {{"workload", group.key}, {"cluster", name}});
    removeRemoteObjects(*remote, group);
  }
}

Result WorkloadReconciler::cleanupDeleted(Group& group) {
  // (§2.1 step 6) Deleted: clean every reachable worker; the GC takes the others.
  for (auto& [name, remote] : group.available) removeRemoteObjects(*remote, group);
  for (auto& [name, remote] : group.outside) removeRemoteObjects(*remote, group);
  forgetWorkload(group.key);
  return Result::done();
}

void WorkloadReconciler::removeRemoteObjects(RemoteCluster& remote, const Group& group) {
  // The job first: the GC may already have removed the Workload (§2.6).
  if (group.adapter != nullptr && !group.ownerName.empty()) {
    const auto& gvk = group.adapter->gvk();
    const auto job = cachedRemote(remote, gvk, jobKey(group));
    if (job && ownedByOrigin(*job, options_.origin)) {
      group.adapter->deleteRemoteObject(remote.client(), group.ns, group.ownerName);
      forgetRemote(remote, gvk, *job, group.key);
      log::info("remote job deleted", {{"workload", group.key}, {"cluster", remote.name()}, {"kind", gvk.kind}});
    }
  }
  const auto copy = cachedRemote(remote, api::kWorkloadGvk, group.key);
  if (!copy) {
    releaseDependencies(remote, group);
    return;
  }
  const auto& finalizers = api::ObjectView(*copy).finalizers();
  if (std::find(finalizers.begin(), finalizers.end(), json(api::kResourceInUseFinalizer)) != finalizers.end()) {
    ignoring(kube::Reason::NotFound, [&] {
      kube::retryOnConflict([&] {
        json current = remote.client().get(api::kWorkloadGvk, group.ns, group.name);
        auto& list = current["metadata"]["finalizers"];
        if (!list.is_array()) return;
        list.erase(std::remove(list.begin(), list.end(), json(api::kResourceInUseFinalizer)), list.end());
        remote.client().update(current, {.answer = Answer::None});
      });
    });
  }
  ignoring(kube::Reason::NotFound, [&] { remote.client().remove(api::kWorkloadGvk, group.ns, group.name); });
  forgetRemote(remote, api::kWorkloadGvk, *copy, group.key);
  log::info("remote workload deleted", {{"workload", group.key}, {"cluster", remote.name()}});
  releaseDependencies(remote, group);
}

void WorkloadReconciler::releaseDependencies(RemoteCluster& remote, const Group& group) {
  // After the job and its Workload: the owners annotation then names no copy of this Workload.
  if (!syncsDependencies_) return;
  const auto deleted = multikueue::releaseDependencies(remote.client(), group.ns, group.name, options_.origin);
  if (deleted > 0)
    log::info("remote dependencies deleted", {{"workload", group.key}, {"cluster", remote.name()}, {"count", deleted}});
}

void WorkloadReconciler::syncJob(RemoteCluster& remote, const Group& group, bool freshRead) {
  const auto& gvk = group.adapter->gvk();
  std::optional<json> copy;
  if (freshRead) {
    ignoring(kube::Reason::NotFound, [&] { copy = remote.client().get(gvk, group.ns, group.ownerName); });
  } else {
    copy = cachedRemote(remote, gvk, jobKey(group));
  }
  SyncOutcome outcome{};
  std::vector<std::string> notices;
  try {
    outcome = group.adapter->syncJob({.manager = manager_,
                                      .remote = remote.client(),
                                      .cluster = remote.name(),
                                      .namespace_ = group.ns,
                                      .jobName = group.ownerName,
                                      .workloadName = group.name,
                                      .origin = options_.origin,
                                      .localJob = group.localJob ? &*group.localJob : nullptr,
                                      .remoteJob = copy ? &*copy : nullptr,
                                      .notices = &notices});
  } catch (const RemoteCopyError& e) {
    // The remote Workload was created before the patch stopped applying (the job or the
    // configuration changed since): the user reads why on the job; the retry backs off.
    if (group.localJob) events_.record(*group.localJob, "Warning", kEventRemoteCopyFailed, e.what());
    throw;
  } catch (const DependencyMissing& e) {
    // Deleted on the manager since the nomination: the retry backs off until it is back.
    if (group.localJob) events_.record(*group.localJob, "Warning", kEventDependencyMissing, e.what());
    throw;
  }
  if (group.localJob)
    for (const auto& notice : notices)
      events_.record(*group.localJob, "Warning", kEventDependencyNotCopied, remote.name() + ": " + notice);
  if (outcome == SyncOutcome::Created)
    log::info("remote job created",
              {{"workload", group.key}, {"cluster", remote.name()}, {"kind", gvk.kind}, {"job", group.ownerName}});
}

bool WorkloadReconciler::anyRemoteObject(const Group& group, const std::string& cluster, RemoteCluster& remote) {
  return group.remotes.contains(cluster) || cachedRemote(remote, group.adapter->gvk(), jobKey(group)).has_value();
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

bool WorkloadReconciler::setCheckFromReady(const json& workload, const std::string& check, const std::string& state,
                                           const std::string& message) {
  return updateStatus(manager_, workload, [&](json& wl) {
    const auto* s = findCheckState(wl, check);
    if (s == nullptr || s->value("state", "") != api::check_state::kReady) return false;
    return setCheckState(wl, check, state, message, clock_.now());
  });
}

Result WorkloadReconciler::reconcileGroup(const json& workload, const std::string& check, Group& group) {
  const auto* stateEntry = findCheckState(workload, check);
  const std::string state = stateEntry ? stateEntry->value("state", "") : "";
  if (auto r = cleanupWhenNotRunning(workload, group)) return *r;
  if (auto r = finishFromRemote(workload, check, state, group)) return *r;
  if (auto r = followRemoteEviction(workload, check, state, group)) return *r;
  removeOutOfSyncRemotes(workload, group);
  if (auto r = followAdmittedRemote(workload, check, state, group)) return *r;
  const Result gate = options_.orchestratedPreemption ? Result::after(openPreemptionGate(group)) : Result::done();
  // (§2.3 step 8) Nominate only while the check is Pending and no worker holds it. Nor while it
  // is evicted: it holds its quota only until its job has stopped, and a copy sent now would be
  // deactivated as soon as a worker admitted it (step 6b.2), its job copy created for nothing.
  if (state != api::check_state::kPending || !clusterName(workload).empty() || isEvicted(workload)) return gate;
  return Result::sooner(nominateAndSync(workload, check, group), gate);
}

std::chrono::nanoseconds WorkloadReconciler::openPreemptionGate(Group& group) {
  // (§2.3 step 7) Among the copies whose gate is not open and that are blocked on it, the one
  // blocked longest; but not within the timeout of the last gate opened.
  const std::string* candidate = nullptr;
  std::string blockedSince, lastOpened;  // RFC 3339 in UTC: ordered as text
  for (const auto& [cluster, remote] : group.remotes) {
    const json* gate = nullptr;
    for (const auto& g : json_fields::arrayMember(json_fields::objectMember(remote, "status"), "preemptionGates"))
      if (json_fields::stringView(g, "name") == api::kPreemptionGate) gate = &g;
    if (gate != nullptr && json_fields::stringView(*gate, "position") == api::kGateOpen) {
      const std::string at(json_fields::stringView(*gate, "lastTransitionTime"));
      if (at > lastOpened) lastOpened = at;
      continue;
    }
    const auto* blocked = findCondition(remote, api::condition::kBlockedOnPreemptionGates);
    if (blocked == nullptr || blocked->value("status", "") != "True") continue;
    const auto since = blocked->value("lastTransitionTime", "");
    if (candidate == nullptr || since < blockedSince) {
      candidate = &cluster;
      blockedSince = since;
    }
  }
  if (candidate == nullptr) return nanoseconds::zero();
  const auto now = clock_.now();
  if (!lastOpened.empty()) {
    const auto opened = parseRfc3339(lastOpened);
    const auto left =
        kSingleClusterPreemptionTimeout - std::chrono::duration_cast<nanoseconds>(now - opened.value_or(now));
    if (opened && left > nanoseconds::zero()) return left;
  }
  auto& remote = group.remotes.at(*candidate);
  json copy = remote;
  auto& gates = copy["status"]["preemptionGates"];
  if (!gates.is_array()) gates = json::array();
  json* entry = nullptr;
  for (auto& g : gates)
    if (g.value("name", "") == api::kPreemptionGate) entry = &g;
  if (entry == nullptr) entry = &gates.emplace_back(json{{"name", std::string(api::kPreemptionGate)}});
  (*entry)["position"] = std::string(api::kGateOpen);
  (*entry)["lastTransitionTime"] = toRfc3339(now);
  // The copy as cached, resourceVersion included: a conflict fails the reconcile, retried.
  group.available.at(*candidate)->client().update(copy, {.subresource = "status", .answer = Answer::None});
  remote = std::move(copy);
  log::info("preemption gate opened", {{"workload", group.key}, {"cluster", *candidate}});
  return kSingleClusterPreemptionTimeout;
}

std::optional<Result> WorkloadReconciler::cleanupWhenNotRunning(const json& workload, Group& group) {
  // (§2.3 step 2) Not running: nothing may stay on the workers.
  if (!isFinished(workload) && hasQuotaReservation(workload)) return std::nullopt;
  {
    std::lock_guard lock(mutex_);
    incrementalRound_.erase(group.key);
    quotaRound_.erase(group.key);
  }
  bool any = false;
  for (auto& [name, remote] : group.available) any = any || anyRemoteObject(group, name, *remote);
  if (!any) return group.unavailable.empty() ? Result::done() : Result::after(options_.workerLostTimeout);
  return cleanupAll(group);
}

std::optional<Result> WorkloadReconciler::finishFromRemote(const json& workload, const std::string& check,
                                                           const std::string& state, Group& group) {
  // (§2.3 step 3) A worker finished it.
  const auto* finished = earliestWith(group.remotes, api::condition::kFinished);
  if (finished == nullptr) return std::nullopt;
  const auto& [cluster, remoteWl] = *finished;
  const auto* c = findCondition(remoteWl, api::condition::kFinished);
  const auto reason = c->value("reason", "");
  // Not the job's end: the copy and its job disagree (OutOfSync), or the worker's job went away
  // under its Workload (OwnerNotFound, kueue#14997). Both go back for re-dispatch.
  if (reason == kReasonOutOfSync || reason == kReasonOwnerNotFound) {
    if (state != api::check_state::kReady) return Result::done();
    const auto message =
        withPreviousState("Remote workload on worker cluster \"" + cluster + "\" " +
                              (reason == kReasonOutOfSync ? std::string("is out of sync with its user job")
                                                          : std::string("lost its job there (OwnerNotFound)")) +
                              ", resetting for re-dispatch",
                          api::check_state::kReady);
    if (setCheckFromReady(workload, check, std::string(api::check_state::kRetry), message))
      events_.record(workload, "Warning", kEventReason, message);
    return Result::done();
  }
  // The final status copy reads the worker's job directly: its informer may not have
  // delivered the last status yet, and the copy is deleted right after.
  syncJob(*group.available.at(cluster), group, /*freshRead=*/true);
  updateStatus(manager_, workload, [&](json& wl) {
    if (isFinished(wl)) return false;
    return setCondition(wl, api::condition::kFinished, true, c->value("reason", ""), c->value("message", ""),
                        clock_.now());
  });
  log::info("workload finished on worker",
            {{"workload", group.key}, {"cluster", cluster}, {"reason", c->value("reason", "")}});
  return Result::done();
}

std::optional<Result> WorkloadReconciler::followRemoteEviction(const json& workload, const std::string& check,
                                                               const std::string& state, Group& group) {
  // (§2.3 step 4) A worker evicted it.
  const auto* evicted = earliestWith(group.remotes, api::condition::kEvicted);
  if (evicted == nullptr) return std::nullopt;
  if (isEvicted(workload)) {
    syncJob(*group.available.at(evicted->first), group, false);
    return Result::done();
  }
  if (state != api::check_state::kReady) return std::nullopt;
  const auto message = "Workload evicted on worker cluster: \"" + clusterName(workload) +
                       "\", resetting for re-admission. Previously: \"Ready\"";
  if (setCheckFromReady(workload, check, std::string(api::check_state::kRetry), message))
    events_.record(workload, "Normal", kEventReason, message);
  return Result::done();
}

void WorkloadReconciler::removeOutOfSyncRemotes(const json& workload, Group& group) {
  // (§2.3 step 5) Copies whose spec differs from the manager's go.
  for (auto it = group.remotes.begin(); it != group.remotes.end();) {
    if (sameSpecAsCopy(workload, it->second)) {
      ++it;
      continue;
    }
    log::info("remote workload out of sync, deleting", {{"workload", group.key}, {"cluster", it->first}});
    removeRemoteObjects(*group.available.at(it->first), group);
    it = group.remotes.erase(it);
  }
}

std::optional<Result> WorkloadReconciler::followAdmittedRemote(const json& workload, const std::string& check,
                                                               const std::string& state, Group& group) {
  // (§2.3 step 6) The first worker to admit wins. Once a winner is recorded (status.clusterName)
  // it stays the winner: admission times have one-second resolution, so two workers can tie,
  // and a cache that lags must never flip the choice.
  const auto* admitted = earliestWith(group.remotes, api::condition::kAdmitted);
  if (const auto recorded = clusterName(workload); !recorded.empty()) {
    auto it = group.remotes.find(recorded);
    admitted = it != group.remotes.end() && conditionIsTrue(it->second, api::condition::kAdmitted) ? &*it : nullptr;
  }
  if (admitted != nullptr) return runOnWinner(workload, check, state, admitted->first, admitted->second, group);
  if (state != api::check_state::kReady) return std::nullopt;
  return retryLostAdmission(workload, check, group);
}

Result WorkloadReconciler::retryLostAdmission(const json& workload, const std::string& check, const Group& group) {
  // (§2.3 step 6a) Ready, but no worker shows it admitted.
  const auto now = clock_.now();
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
  setCheckFromReady(workload, check, std::string(api::check_state::kRetry),
                    withPreviousState(message, api::check_state::kReady));
  log::info("workload sent to retry", {{"workload", group.key}, {"cluster", cluster}, {"reason", message}});
  return Result::done();
}

Result WorkloadReconciler::runOnWinner(const json& workload, const std::string& check, const std::string& state,
                                       const std::string& cluster, const json& remoteWl, Group& group) {
  // (§2.3 step 6b.1) The other copies go.
  for (auto& [name, remote] : group.available)
    if (name != cluster && anyRemoteObject(group, name, *remote)) removeRemoteObjects(*remote, group);
  auto& remote = *group.available.at(cluster);
  // (6b.2) Evicted on the manager while running: ask the worker to deactivate its copy.
  if (hasQuotaReservation(workload) && isEvicted(workload)) {
    const auto* localEvicted = findCondition(workload, api::condition::kEvicted);
    const auto message = "Evicted on manager: " + localEvicted->value("message", "");
    updateStatus(remote.client(), remoteWl, [&](json& wl) {
      return setCondition(wl, api::condition::kDeactivationTarget, true, kReasonEvictedOnManagerCluster, message,
                          clock_.now());
    });
    return Result::done();
  }
  // (6b.3-4) Create the job copy, or copy its status back.
  syncJob(remote, group, false);
  // (6b.5) Ready, clusterName, nominations cleared.
  if (state != api::check_state::kRetry && state != api::check_state::kRejected)
    markReady(workload, check, cluster, group);
  return Result::after(options_.workerLostTimeout);
}

void WorkloadReconciler::markReady(const json& workload, const std::string& check, const std::string& cluster,
                                   const Group& group) {
  const auto message = "The workload was admitted on \"" + cluster + "\"";
  bool becameReady = false;
  updateStatus(manager_, workload, [&](json& wl) {
    const auto* s = findCheckState(wl, check);
    const std::string current = s ? s->value("state", "") : "";
    if (current == api::check_state::kRetry || current == api::check_state::kRejected) return false;
    const auto existing = clusterName(wl);
    if (!existing.empty() && existing != cluster)
      throw Error(group.key + ": attempting to change immutable ClusterName from \"" + existing + "\" to \"" + cluster +
                  "\"");
    becameReady = current != api::check_state::kReady;
    bool changed = setCheckState(wl, check, api::check_state::kReady, message, clock_.now());
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
    log::info("workload admitted on worker", {{"workload", group.key}, {"cluster", cluster}});
  }
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
    if (const auto it = group.available.find(name);
        it != group.available.end() &&
        (!it->second->serves(group.adapter->gvk()) || it->second->lacksNamespace(group.ns)))
      continue;
    nominated.push_back(name);
    ++added;
  }
  if (added == 0) log::debug(message::kNoMoreWorkers, {{"workload", group.key}});
  return nominated;
}

void WorkloadReconciler::capacityChanged() { capacityGeneration_.fetch_add(1); }

std::vector<std::string> WorkloadReconciler::waitingForRoom() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [key, round] : quotaRound_)
    if (!round.roomNow) out.push_back(key);
  return out;
}

std::vector<std::string> WorkloadReconciler::quotaAwareNomination(const json& workload, const Group& group,
                                                                  Result& result, std::string& message) {
  const auto current = nominatedClusters(workload);
  const api::WorkloadView view(workload);
  const std::string localQueue = std::string(view.namespace_()) + "/" + std::string(view.queueName());
  const auto podSets = capacity::podSetRequests(workload);
  // One decision at a time, each charged on its workers before the next reads their room: two
  // Workloads must not both take the last free slot of a worker.
  std::lock_guard placement(placementMutex_);

  struct Candidate {
    std::string name;
    capacity::Fit fit;
  };
  std::vector<Candidate> now, ever;
  std::vector<std::string> skipped;
  for (const auto& name : group.clusters) {  // MultiKueueConfig order breaks ties
    const auto it = group.available.find(name);
    if (it == group.available.end()) {
      skipped.push_back(name + ": not connected");
      continue;
    }
    if (!it->second->serves(group.adapter->gvk())) {
      skipped.push_back(name + ": does not serve " + group.adapter->gvk().dotted());
      continue;
    }
    if (it->second->lacksNamespace(group.ns)) {
      skipped.push_back(name + ": has no namespace \"" + group.ns + "\" (skipped until it exists there)");
      continue;
    }
    std::string why;
    const auto snapshot = it->second->capacity(&why);
    if (!snapshot) {
      skipped.push_back(name + ": room unknown, " + why);
      continue;
    }
    auto fit = snapshot->fit(localQueue, podSets, group.key);
    if (fit.now) {
      now.push_back({name, std::move(fit)});
    } else {
      skipped.push_back(name + ": " + fit.why);
      if (fit.ever) ever.push_back({name, std::move(fit)});
    }
  }
  const auto among = [](const std::vector<Candidate>& list, const std::string& name) {
    return std::any_of(list.begin(), list.end(), [&](const Candidate& c) { return c.name == name; });
  };

  const auto clockNow = clock_.now();
  const auto generation = capacityGeneration_.load();
  bool keep = false;
  {
    std::lock_guard lock(mutex_);
    const auto it = quotaRound_.find(group.key);
    if (!current.empty() && it != quotaRound_.end()) {
      // A nominee whose copy holds quota there already has its room (its ClusterQueue's status
      // counts that copy, so a fit would count the Workload against itself).
      const bool roomOnNominated = std::any_of(current.begin(), current.end(), [&](const std::string& n) {
        const auto copy = group.remotes.find(n);
        return among(now, n) || (copy != group.remotes.end() && api::WorkloadView(copy->second).quotaReserved());
      });
      const bool stillPossible =
          std::all_of(current.begin(), current.end(), [&](const std::string& n) { return among(ever, n); });
      const bool roundOver = clockNow - it->second.start >= kIncrementalRoundTimeout;
      // A nominee with room keeps its copy (its Kueue is reserving); a round still waiting for
      // room keeps its nominees until the room changes anywhere or the round times out.
      // A round that started with room keeps its nominee for the round: its copy is being
      // reserved there, and the room others' reservations seem to take (a ClusterQueue's status
      // and our charges overlap for a moment) is no reason to send a second copy elsewhere.
      keep = roomOnNominated ||
             (stillPossible && !roundOver && (it->second.startedWithRoom || it->second.generation == generation));
      if (keep)
        result = Result::after(kIncrementalRoundTimeout -
                               std::chrono::duration_cast<nanoseconds>(clockNow - it->second.start));
    }
  }

  std::vector<std::string> nominated;
  bool roomNow = false;
  if (keep) {
    nominated = current;
    roomNow = std::any_of(current.begin(), current.end(), [&](const std::string& n) { return among(now, n); });
  } else {
    if (!now.empty()) {
      // The best fit only (the worker whose quota the Workload fills the most): it has room, so a
      // second copy would only race it and be deleted.
      std::stable_sort(now.begin(), now.end(),
                       [](const Candidate& a, const Candidate& b) { return a.fit.score < b.fit.score; });
      nominated.push_back(now.front().name);
      roomNow = true;
    } else {
      // Nowhere has room now: queue it where it could run, behind the fewest.
      std::stable_sort(ever.begin(), ever.end(), [](const Candidate& a, const Candidate& b) {
        return a.fit.pendingWorkloads < b.fit.pendingWorkloads;
      });
      for (const auto& c : ever)
        if (nominated.size() < static_cast<std::size_t>(options_.incrementalStepSize)) nominated.push_back(c.name);
    }
    result = Result::after(kIncrementalRoundTimeout);
    std::lock_guard lock(mutex_);
    quotaRound_[group.key] = {clockNow, generation, roomNow, roomNow};
  }
  {
    std::lock_guard lock(mutex_);
    if (auto it = quotaRound_.find(group.key); it != quotaRound_.end()) it->second.roomNow = roomNow;
  }

  for (const auto& name : nominated)
    if (const auto it = group.available.find(name); it != group.available.end() && !group.remotes.contains(name))
      it->second->placed({group.key, localQueue, podSets});

  if (nominated.empty()) {
    message = std::string(message::kNoWorkerCanHold) + (skipped.empty() ? "" : ": " + strings::join(skipped, "; "));
  } else if (!roomNow) {
    message =
        std::string(message::kWaitingForRoom) + strings::join(nominated, ", ") + "; " + strings::join(skipped, "; ");
  } else if (!skipped.empty()) {
    message = "Nominated " + strings::join(nominated, ", ") + "; skipped " + strings::join(skipped, "; ");
  } else {
    message = "Nominated " + strings::join(nominated, ", ");
  }
  return nominated;
}

Result WorkloadReconciler::nominateAndSync(const json& workload, const std::string& check, Group& group) {
  // (9) Every other check must be Ready first.
  for (const auto& entry : api::WorkloadView(workload).admissionChecks())
    if (json_fields::stringView(entry, "name") != check &&
        json_fields::stringView(entry, "state") != api::check_state::kReady)
      return Result::done();

  // A copy that cannot be made would leave remote Workloads holding quota with no job: no worker
  // is nominated until the job or the patch changes (the retry backs off).
  if (group.localJob) {
    if (const auto problem = group.adapter->copyProblem(*group.localJob)) {
      events_.record(*group.localJob, "Warning", kEventRemoteCopyFailed, *problem);
      throw Error(group.key + ": " + *problem);
    }
    // A copy without the objects it names would not start: none is sent until they are all on
    // the manager. The manager's Secrets are not watched (that would cache every Secret of the
    // cluster), so the job looks again after kDependencyRecheck, not after a growing backoff.
    if (const auto missing = group.adapter->missingDependency(manager_, *group.localJob)) {
      events_.record(*group.localJob, "Warning", kEventDependencyMissing, *missing);
      log::info("workload waits for a dependency", {{"workload", group.key}, {"reason", *missing}});
      return Result::after(kDependencyRecheck);
    }
  }

  Result result;
  std::vector<std::string> nominated;
  std::string checkMessage;  // the quota-aware dispatcher says where it looked and why
  bool writeNominated = false;
  // Workers known to lack the namespace (their Namespace watch says so) are skipped until it
  // appears there; the watch brings the Workload back then.
  std::vector<std::string> namespaceSkips;
  for (const auto& [name, remote] : group.available) {
    if (!remote->lacksNamespace(group.ns)) continue;
    namespaceSkips.push_back(namespaceMissingMessage(name, group.ns));
    remote->namespaceMissing(group.ns, group.key);  // this Workload too is taken up when it appears
  }
  const auto differentMessage = [&](const std::string& text) {
    const auto* entry = findCheckState(workload, check);
    return !text.empty() && entry != nullptr && entry->value("message", "") != text;
  };
  if (options_.dispatcherName == config::kDispatcherAllAtOnce) {
    for (const auto& [name, remote] : group.available)  // sorted (std::map)
      if (remote->serves(group.adapter->gvk()) && !remote->lacksNamespace(group.ns)) nominated.push_back(name);
    checkMessage = strings::join(namespaceSkips, "; ");
    writeNominated = !sameSet(nominated, nominatedClusters(workload)) || differentMessage(checkMessage);
  } else if (options_.dispatcherName == config::kDispatcherIncremental) {
    nominated = incrementalNomination(workload, group, result);
    checkMessage = strings::join(namespaceSkips, "; ");
    writeNominated = !sameSet(nominated, nominatedClusters(workload)) || differentMessage(checkMessage);
  } else if (options_.dispatcherName == config::kDispatcherQuotaAware) {
    nominated = quotaAwareNomination(workload, group, result, checkMessage);
    const auto* entry = findCheckState(workload, check);
    writeNominated = !sameSet(nominated, nominatedClusters(workload)) ||
                     (entry != nullptr && entry->value("message", "") != checkMessage);
  } else {
    nominated = nominatedClusters(workload);  // an external dispatcher's choice
  }
  if (writeNominated) {
    updateStatus(manager_, workload, [&](json& wl) {
      if (!clusterName(wl).empty()) return false;
      bool changed = false;
      if (!checkMessage.empty()) {
        const auto* entry = findCheckState(wl, check);
        if (entry != nullptr && entry->value("state", "") == api::check_state::kPending &&
            entry->value("message", "") != checkMessage)
          changed = setCheckState(wl, check, api::check_state::kPending, checkMessage, clock_.now());
      }
      if (!sameSet(nominated, nominatedClusters(wl))) changed = setNominatedClusters(wl, nominated) || changed;
      return changed;
    });
  }

  std::string errors;
  std::vector<std::string> lacking;  // workers whose create just met a missing namespace
  for (const auto& name : nominated)
    if (!group.available.contains(name))
      errors +=
          (errors.empty() ? "" : "; ") + std::string("cluster ") + name + ": no remote client for nominated cluster";
  for (auto& [name, remote] : group.available) {
    const bool isNominated = std::find(nominated.begin(), nominated.end(), name) != nominated.end();
    try {
      if (isNominated && !group.remotes.contains(name) && !remote->serves(group.adapter->gvk())) {
        errors += (errors.empty() ? "" : "; ") + std::string("cluster ") + name + ": does not serve " +
                  group.adapter->gvk().dotted() + " (no CRD there)";
      } else if (isNominated && !group.remotes.contains(name)) {
        bool created = true;
        try {
          remote->client().create(remoteWorkload(workload, options_.origin, options_.orchestratedPreemption),
                                  {.answer = Answer::None});
        } catch (const kube::ApiError& e) {
          if (const auto ns = missingNamespaceOf(e)) {
            // Not an error to retry: the worker's Namespace watch brings the Workload back.
            remote->namespaceMissing(*ns, group.key);
            const auto message = namespaceMissingMessage(name, *ns);
            events_.record(workload, "Warning", kEventNamespaceMissing, message);
            log::info("worker lacks the workload's namespace",
                      {{"workload", group.key}, {"cluster", name}, {"namespace", *ns}});
            lacking.push_back(name);
            namespaceSkips.push_back(message);
            continue;
          }
          if (e.reason() != kube::Reason::AlreadyExists) throw;
          created = false;
        }
        if (created) {
          if (observer_) observer_->workloadDispatched(group.clusterQueue, name);
          log::info("remote workload created", {{"workload", group.key}, {"cluster", name}});
        }
      } else if (!isNominated && group.remotes.contains(name)) {
        removeRemoteObjects(*remote, group);
      }
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string("cluster ") + name + ": " + e.what();
    }
  }
  if (!lacking.empty()) {
    const bool externalDispatcher = options_.dispatcherName != config::kDispatcherAllAtOnce &&
                                    options_.dispatcherName != config::kDispatcherIncremental &&
                                    options_.dispatcherName != config::kDispatcherQuotaAware;
    const auto message = strings::join(namespaceSkips, "; ");
    updateStatus(manager_, workload, [&](json& wl) {
      if (!clusterName(wl).empty()) return false;
      bool changed = false;
      const auto* entry = findCheckState(wl, check);
      if (entry != nullptr && entry->value("state", "") == api::check_state::kPending &&
          entry->value("message", "") != message)
        changed = setCheckState(wl, check, api::check_state::kPending, message, clock_.now());
      // Our dispatchers' nominations drop it; an external dispatcher's stay its own.
      if (!externalDispatcher) {
        auto kept = nominatedClusters(wl);
        std::erase_if(
            kept, [&](const std::string& n) { return std::find(lacking.begin(), lacking.end(), n) != lacking.end(); });
        if (!sameSet(kept, nominatedClusters(wl))) changed = setNominatedClusters(wl, kept) || changed;
      }
      return changed;
    });
  }
  if (!errors.empty()) throw Error(group.key + ": " + errors);
  return result;
}

}  // namespace mka::multikueue
