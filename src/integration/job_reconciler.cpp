#include "mka/integration/job_reconciler.h"

#include <algorithm>
#include <charconv>

#include "mka/api/kinds.h"
#include "mka/api/kueue.h"
#include "mka/api/pod_set_info.h"
#include "mka/api/views.h"
#include "mka/api/workload_status.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/controller/object_reader.h"
#include "mka/integration/job_rules.h"
#include "mka/integration/priority.h"
#include "mka/integration/workload_builder.h"
#include "mka/kube/api_error.h"

namespace mka::integration {

namespace {

using api::conditionIsTrue;
using api::findCondition;
using api::hasQuotaReservation;
using api::isAdmitted;
using api::isEvicted;
using api::isFinished;
using api::isTerminating;
using json_fields::arrayMember;
using json_fields::metadataString;
using json_fields::objectMember;
using json_fields::stringMember;
using nlohmann::json;

// Kueue's reasons and messages (KUEUE-JOBFRAMEWORK.md §1.3, §1.4, §4.4).
namespace reason {
constexpr std::string_view kCreatedWorkload = "CreatedWorkload";
constexpr std::string_view kDeletedWorkload = "DeletedWorkload";
constexpr std::string_view kUpdatedWorkload = "UpdatedWorkload";
constexpr std::string_view kUpdatedAdmissionCheck = "UpdatedAdmissionCheck";
constexpr std::string_view kStarted = "Started";
constexpr std::string_view kStopped = "Stopped";
constexpr std::string_view kFinishedWorkload = "FinishedWorkload";
// Ours: the job's rules cannot be read, so it gets no Workload.
constexpr std::string_view kInvalidJob = "InvalidJob";
// Ours: the API server refused the Workload built from the job (422), so it gets none until it
// changes.
constexpr std::string_view kInvalidWorkload = "InvalidWorkload";
// Ours: a flavor the admission names is not there; the start is retried with backoff.
constexpr std::string_view kResourceFlavorNotFound = "ResourceFlavorNotFound";
constexpr std::string_view kWorkloadPriorityClassNotFound = "WorkloadPriorityClassNotFound";
constexpr std::string_view kSucceeded = "Succeeded";
constexpr std::string_view kFailed = "Failed";
constexpr std::string_view kOutOfSync = "OutOfSync";
constexpr std::string_view kOwnerNotFound = "OwnerNotFound";
constexpr std::string_view kFailedToStart = "FailedToStart";
constexpr std::string_view kDeleted = "Deleted";
constexpr std::string_view kPendingEvaluation = "PendingEvaluation";
constexpr std::string_view kNoReservation = "NoReservation";
// Why a job is stopped (the reason its Stopped Event and the log carry).
constexpr std::string_view kWorkloadDeleted = "WorkloadDeleted";
constexpr std::string_view kNoMatchingWorkload = "NoMatchingWorkload";
constexpr std::string_view kWorkloadEvicted = "WorkloadEvicted";
constexpr std::string_view kNotAdmitted = "NotAdmitted";
}  // namespace reason

namespace message {
constexpr std::string_view kOutOfSync = "The prebuilt workload is out of sync with its user job";
constexpr std::string_view kOwnerNotFound = "The workload's owner no longer exists";
constexpr std::string_view kWorkloadDeleted = "Workload is deleted";
constexpr std::string_view kRetentionExpired = "Deleted job: deactivation retention period expired";
constexpr std::string_view kNotAdmitted = "Not admitted by cluster queue";
constexpr std::string_view kMissingWorkload = "missing workload";
constexpr std::string_view kNoMatchRestore =
    "No matching Workload; restoring pod templates according to existent Workload";
constexpr std::string_view kNoMatchMissing = "Missing Workload; unable to restore pod templates";
constexpr std::string_view kNoReservation = "The workload has no reservation";
}  // namespace message

std::string keyOf(const json& object) { return kube::Informer::keyOf(object); }

std::string prebuiltName(const json& job) {
  const auto& meta = objectMember(job, "metadata");
  std::string name = stringMember(objectMember(meta, "annotations"), api::kPrebuiltWorkloadNameKey);
  return name.empty() ? stringMember(objectMember(meta, "labels"), api::kPrebuiltWorkloadNameKey) : name;
}

const json* controllerRef(const json& object) {
  for (const auto& ref : arrayMember(objectMember(object, "metadata"), "ownerReferences"))
    if (ref.value("controller", false)) return &ref;
  return nullptr;
}

bool hasFinalizer(const json& object, std::string_view finalizer) {
  const auto& list = arrayMember(objectMember(object, "metadata"), "finalizers");
  return std::find(list.begin(), list.end(), json(finalizer)) != list.end();
}

// Whether every field the job's side sets is equal on the Workload's side. The Workload's copy
// has been through its CRD's defaulting (container ports get protocol TCP, for example) while a
// template in a custom resource with preserved unknown fields has not: Kueue's semantic equality
// compares two defaulted objects, so fields only the Workload has are not a difference here.
bool coveredBy(const json& jobSide, const json& workloadSide) {
  if (jobSide.is_object()) {
    if (!workloadSide.is_object()) return false;
    for (const auto& [key, value] : jobSide.items()) {
      auto it = workloadSide.find(key);
      if (it == workloadSide.end()) {
        if (!value.is_null()) return false;
        continue;
      }
      if (!coveredBy(value, *it)) return false;
    }
    return true;
  }
  if (jobSide.is_array()) {
    if (!workloadSide.is_array() || workloadSide.size() != jobSide.size()) return false;
    for (std::size_t i = 0; i < jobSide.size(); ++i)
      if (!coveredBy(jobSide[i], workloadSide[i])) return false;
    return true;
  }
  return jobSide == workloadSide;
}

// A field of the job's Workload as the job's field it comes from: inside a pod set's
// template, the rule's template path ("spec.podSets[0].template.spec.containers" ->
// "spec.template.spec.containers"); else the Workload's own field, said to be one.
std::string jobFieldOf(const std::string& field, const config::IntegratedFramework& rules) {
  constexpr std::string_view prefix = "spec.podSets[";
  if (!field.starts_with(prefix)) return "Workload " + field;
  const auto close = field.find(']', prefix.size());
  const std::string index = field.substr(prefix.size(), close == std::string::npos ? 0 : close - prefix.size());
  const std::string_view rest = close == std::string::npos ? "" : std::string_view(field).substr(close + 1);
  constexpr std::string_view kTemplate = ".template";
  std::size_t i = 0;
  const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
  const bool indexed = !index.empty() && ec == std::errc{} && end == index.data() + index.size();
  if (!indexed || !rest.starts_with(kTemplate) || i >= rules.podSets.size() || rules.podSets[i].templatePath.empty())
    return "Workload " + field;
  return rules.podSets[i].templatePath + std::string(rest.substr(kTemplate.size()));
}

// kube-apiserver's note that follows a schema error: it names no field and no fix of its own.
constexpr std::string_view kRulesNotChecked = "some validation rules were not checked because the object was invalid";

// What the API server said of a refused Workload, each cause at the job's field it comes from.
std::string refusalText(const kube::ApiError& e, const config::IntegratedFramework& rules) {
  std::string out;
  for (const auto& cause : arrayMember(objectMember(e.status(), "details"), "causes")) {
    if (stringMember(cause, "message").find(kRulesNotChecked) != std::string::npos) continue;
    const std::string field = stringMember(cause, "field");
    out += (out.empty() ? "" : "; ") + (field.empty() ? "" : jobFieldOf(field, rules) + ": ") +
           stringMember(cause, "message");
  }
  return out.empty() ? stringMember(e.status(), "message") : out;
}

std::int64_t countOr(const json& object, std::string_view key, std::int64_t absent) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : absent;
}

}  // namespace

// ---- WorkloadOwners -------------------------------------------------------------------------

std::optional<std::string> WorkloadOwners::controllerOf(const json& workload, const api::GroupVersionKind& gvk) {
  const json* ref = controllerRef(workload);
  if (ref == nullptr || stringMember(*ref, "kind") != gvk.kind) return std::nullopt;
  const std::string apiVersion = stringMember(*ref, "apiVersion");
  const auto slash = apiVersion.find('/');
  const std::string group = slash == std::string::npos ? "" : apiVersion.substr(0, slash);
  if (group != gvk.group) return std::nullopt;
  return metadataString(workload, "namespace") + "/" + stringMember(*ref, "name");
}

void WorkloadOwners::set(const json& workload, const api::GroupVersionKind& gvk) {
  owners_.link(keyOf(workload), controllerOf(workload, gvk).value_or(""));
}

void WorkloadOwners::remove(const json& workload) { owners_.unlink(keyOf(workload)); }

std::vector<std::string> WorkloadOwners::workloadsOf(const std::string& jobKey) const { return owners_.keysTo(jobKey); }

// ---- PrebuiltNames --------------------------------------------------------------------------

void PrebuiltNames::set(const json& job) {
  const std::string name = prebuiltName(job);
  names_.link(keyOf(job), name.empty() ? "" : metadataString(job, "namespace") + "/" + name);
}

void PrebuiltNames::remove(const json& job) { names_.unlink(keyOf(job)); }

std::vector<std::string> PrebuiltNames::jobsNaming(const std::string& workloadKey) const {
  return names_.keysTo(workloadKey);
}

// ---- JobReconciler --------------------------------------------------------------------------

struct JobReconciler::Ensured {
  std::optional<json> workload;
  std::optional<Result> done;  // the reconcile ends here
};

JobReconciler::JobReconciler(kube::Client& client, const jobkind::JobKind& kind,
                             const controller::ObjectReader& objects, const WorkloadOwners& owners,
                             controller::EventRecorder& events, const Clock& clock, IntegrationObserver* observer)
    : client_(client),
      kind_(kind),
      rules_(*kind.integration()),
      objects_(objects),
      owners_(owners),
      events_(events),
      clock_(clock),
      observer_(observer) {}

std::optional<json> JobReconciler::cachedWorkload(const std::string& key) const {
  return objects_.getByKey(api::kWorkloadGvk, key);
}

Result JobReconciler::reconcile(const std::string& jobKey) {
  // 1. Load; a job gone or terminating is finalized (3).
  const auto cached = objects_.getByKey(kind_.gvk(), jobKey);
  if (!cached || isTerminating(*cached)) return finalize(jobKey);
  // The job as this reconcile leaves it: a stop in step 9 makes it inactive for step 15.
  json job = *cached;

  // 4. A job in a namespace the selector leaves out is not Kueue's, queue name or not.
  if (!inManagedNamespace(job)) return Result::done();

  // 6. Only jobs queued by name, or linked to a prebuilt Workload, are Kueue's.
  const std::string prebuilt = prebuiltName(job);
  if (prebuilt.empty() &&
      stringMember(objectMember(objectMember(job, "metadata"), "labels"), api::kQueueNameLabel).empty())
    return Result::done();

  // 9. One matching Workload, or none.
  Ensured ensured = prebuilt.empty() ? ensureOwn(job) : ensurePrebuilt(job, prebuilt);
  if (ensured.done) return *ensured.done;
  const std::optional<json>& workload = ensured.workload;

  if (workload && isFinished(*workload)) {  // 11: Kueue announces it on every pass (aggregated into one Event)
    events_.record(job, "Normal", reason::kFinishedWorkload,
                   "Workload '" + keyOf(*workload) + "' is declared finished");
    if (hasFinalizer(*workload, api::kResourceInUseFinalizer)) removeFinalizer(*workload);
    return Result::done();
  }
  if (workload && isTerminating(*workload)) {  // 12
    stop(job, &*workload, std::string(reason::kWorkloadDeleted), std::string(message::kWorkloadDeleted));
    if (hasFinalizer(*workload, api::kResourceInUseFinalizer)) removeFinalizer(*workload);
    return Result::done();
  }
  if (const auto done = finished(job, rules_)) {  // 14
    if (workload && !isFinished(*workload)) {
      finishWorkload(*workload, std::string(done->succeeded ? reason::kSucceeded : reason::kFailed), done->message);
      events_.record(job, "Normal", reason::kFinishedWorkload,
                     "Workload '" + keyOf(*workload) + "' is declared finished");
      if (observer_) observer_->workloadFinished(kind_.name(), done->succeeded ? "Succeeded" : "Failed");
    }
    return Result::done();
  }
  if (!workload) {  // 15
    if (!prebuilt.empty()) {
      stop(job, nullptr, std::string(reason::kNoMatchingWorkload), std::string(message::kMissingWorkload));
      throw Error("prebuilt workload not found: " + metadataString(job, "namespace") + "/" + prebuilt);
    }
    if (isActive(job, rules_)) return Result::done();
    return createWorkload(job);
  }
  // 17. While waitForPodsReady is on; a written condition brings the Workload back here.
  if (rules_.waitForPodsReady && syncPodsReady(job, *workload)) return Result::done();
  if (isEvicted(*workload)) {  // 18
    const auto* evicted = findCondition(*workload, api::condition::kEvicted);
    const bool stopped =
        stop(job, &*workload, std::string(reason::kWorkloadEvicted), stringMember(*evicted, "message"));
    // Stopped, but pods that still run hold their capacity: by the active rule, the reservation
    // stays until the job's status says they ended (its update brings the job back here). On
    // a MultiKueue manager that status is the worker's, which the dispatch loop keeps copying
    // back while the copies are evicted and removes them only after this releases the quota
    // (but not after an admission check's eviction: byActiveRule).
    // Without one, a job this pass stopped counts as ended: its stop value (Tekton's
    // StoppedRunFinally) may leave it neither suspended nor finished.
    const bool stillActive = byActiveRule(job, *evicted)
                                 ? isActive(job, rules_)
                                 : !stopped && !isSuspended(job, rules_) && !finished(job, rules_);
    if (hasQuotaReservation(*workload)) {
      if (!stillActive) {
        clearReservation(*workload);
      } else {
        log::debug("evicted job still has pods running, its Workload keeps its reservation",
                   {{"kind", kind_.gvk().kind}, {"job", keyOf(job)}, {"workload", keyOf(*workload)}});
      }
    }
    return afterDeactivation(job, *workload, *evicted);
  }
  if (isSuspended(job, rules_)) {  // 20
    if (isAdmitted(*workload)) return start(job, *workload);
    if (hasQuotaReservation(*workload)) {
      // What the pending checks say, in one Event (aggregated while it does not change).
      std::string messages;
      for (const auto& check : api::WorkloadView(*workload).admissionChecks()) {
        const std::string text = stringMember(check, "message");
        if (stringMember(check, "state") != api::check_state::kPending || text.empty()) continue;
        messages += (messages.empty() ? "" : "; ") + stringMember(check, "name") + ": " + text;
      }
      if (!messages.empty()) events_.record(job, "Normal", reason::kUpdatedAdmissionCheck, messages);
    }
    const std::string queue = stringMember(objectMember(objectMember(job, "metadata"), "labels"), api::kQueueNameLabel);
    if (prebuilt.empty() && !hasQuotaReservation(*workload) && api::WorkloadView(*workload).queueName() != queue) {
      json updated = *workload;
      updated["spec"]["queueName"] = queue;
      client_.update(updated, {.answer = kube::WriteOptions::Answer::None});
    }
    return Result::done();
  }
  if (!isAdmitted(*workload))  // 21
    stop(job, &*workload, std::string(reason::kNotAdmitted), std::string(message::kNotAdmitted));
  return Result::done();
}

Result JobReconciler::finalize(const std::string& jobKey) {
  forgetRefused(jobKey);
  for (const auto& key : owners_.workloadsOf(jobKey)) {
    auto workload = cachedWorkload(key);
    if (!workload) continue;
    if (!isFinished(*workload) && !isTerminating(*workload) && controllerRef(*workload) != nullptr) {
      (*workload)["metadata"]["resourceVersion"] =
          finishWorkload(*workload, std::string(reason::kOwnerNotFound), std::string(message::kOwnerNotFound));
    }
    if (hasFinalizer(*workload, api::kResourceInUseFinalizer)) removeFinalizer(*workload);
    if (!isTerminating(*workload)) deleteWorkload(*workload);
  }
  return Result::done();
}

std::optional<json> JobReconciler::podSetsOrWarn(const json& job) {
  PodSetsResult result = podSetsFor(job, rules_);
  if (!result.error) return std::move(result.podSets);
  events_.record(job, "Warning", reason::kInvalidJob,
                 result.error->field + ": " + result.error->problem +
                     "; the job stays suspended without a Workload until this is fixed");
  return std::nullopt;
}

Result JobReconciler::afterDeactivation(const json& job, const json& workload, const json& evicted) {
  // 19. Only a Workload Kueue deactivated (reason DeactivatedDueTo...), not one a user did.
  const auto& retention = rules_.deleteAfterDeactivatedByKueue;
  const bool active = api::WorkloadView(workload).active();
  if (!retention || active || !stringMember(evicted, "reason").starts_with(api::evicted_reason::kDeactivatedPrefix))
    return Result::done();
  const auto since = parseRfc3339(stringMember(evicted, "lastTransitionTime"));
  const auto now = clock_.now();
  if (since && now < *since + *retention) return Result::after(*since + *retention - now);
  client_.remove(kind_.gvk(), metadataString(job, "namespace"), metadataString(job, "name"),
                 {.propagationPolicy = "Background"});
  log::info("job deleted",
            {{"kind", kind_.gvk().kind}, {"job", keyOf(job)}, {"reason", "deactivation retention period expired"}});
  events_.record(job, "Normal", reason::kDeleted, std::string(message::kRetentionExpired));
  return Result::done();
}

bool JobReconciler::inManagedNamespace(const json& job) const {
  const auto& selector = rules_.namespaceSelector;
  if (selector.matchLabels.empty() && selector.matchExpressions.empty()) return true;
  const std::string name = metadataString(job, "namespace");
  const auto ns = objects_.get(api::kNamespaceGvk, "", name);
  return ns && selector.matches(objectMember(objectMember(*ns, "metadata"), "labels"));
}

Priority JobReconciler::priorityFor(const json& job, const json& podSets) {
  // WorkloadPriorityClasses are read from the API server: rare, and no informer follows them.
  const controller::ClientReader server(client_);
  PriorityLookups lookups;
  lookups.workloadPriorityClass = [&](const std::string& name) {
    return server.get(api::kWorkloadPriorityClassGvk, "", name);
  };
  lookups.priorityClass = [&](const std::string& name) { return objects_.get(api::kPriorityClassGvk, "", name); };
  lookups.priorityClasses = [&] { return objects_.list(api::kPriorityClassGvk, ""); };
  auto resolved = resolvePriority(job, podSets, lookups);
  if (auto* missing = std::get_if<PriorityNotFound>(&resolved)) {
    if (missing->workloadPriorityClass)
      events_.record(job, "Warning", reason::kWorkloadPriorityClassNotFound, missing->message);
    throw Error(keyOf(job) + ": " + missing->message + "; the job gets no Workload until the class exists");
  }
  return std::get<Priority>(resolved);
}

void JobReconciler::followPriorityLabel(const json& job, json& workload) {
  if (!followsPriorityLabel(job, workload)) return;
  const Priority priority = priorityFor(job, api::WorkloadView(workload).podSets());
  if (priorityOf(workload) == priority) return;
  json updated = workload;
  setPriority(updated["spec"], priority);
  workload = client_.update(updated);
  events_.record(job, "Normal", reason::kUpdatedWorkload, "Updated workload priority class: " + keyOf(workload));
}

bool JobReconciler::matches(const json& job, const json& podSets, const json& workload) const {
  const json* owner = controllerRef(workload);
  if (owner == nullptr || stringMember(*owner, "name") != metadataString(job, "name") ||
      stringMember(*owner, "uid") != metadataString(job, "uid"))
    return false;
  const json expected = newWorkload(job, kind_.gvk(), podSets, std::nullopt);
  const api::WorkloadView view(workload);
  const auto& spec = objectMember(workload, "spec");
  if (countOr(expected["spec"], "maximumExecutionTimeSeconds", -1) != countOr(spec, "maximumExecutionTimeSeconds", -1))
    return false;
  const auto& actual = view.podSets();
  if (actual.size() != podSets.size()) return false;
  const auto& assignments = view.podSetAssignments();
  const bool reserved = hasQuotaReservation(workload);
  for (std::size_t i = 0; i < podSets.size(); ++i) {
    std::int64_t count = countOr(actual[i], "count", 1);
    if (reserved && i < assignments.size()) count = countOr(assignments[i], "count", count);
    if (countOr(podSets[i], "count", 1) != count) return false;
    if (countOr(podSets[i], "minCount", -1) != countOr(actual[i], "minCount", -1)) return false;
    const auto& want = objectMember(objectMember(podSets[i], "template"), "spec");
    const auto& have = objectMember(objectMember(actual[i], "template"), "spec");
    for (const char* field : {"containers", "initContainers"})
      if (!coveredBy(arrayMember(want, field), arrayMember(have, field))) return false;
    if (!isAdmitted(workload) && !coveredBy(arrayMember(want, "tolerations"), arrayMember(have, "tolerations")))
      return false;
  }
  return true;
}

JobReconciler::Ensured JobReconciler::ensureOwn(json& job) {
  auto podSets = podSetsOrWarn(job);
  if (!podSets) return {std::nullopt, Result::done()};
  std::optional<json> match;
  std::vector<json> others;
  for (const auto& key : owners_.workloadsOf(keyOf(job))) {
    auto workload = cachedWorkload(key);
    if (!workload) continue;
    if (!match && matches(job, *podSets, *workload)) {
      match = std::move(*workload);
    } else {
      others.push_back(std::move(*workload));
    }
  }
  std::optional<json> toUpdate;
  if (!match && isSuspended(job, rules_) && !others.empty() && !hasQuotaReservation(others.front())) {
    toUpdate = std::move(others.front());
    others.erase(others.begin());
  }
  if (!match && !isSuspended(job, rules_) && !finished(job, rules_)) {
    if (others.size() == 1) {
      stop(job, &others.front(), std::string(reason::kNoMatchingWorkload), std::string(message::kNoMatchRestore));
    } else {
      stop(job, nullptr, std::string(reason::kNoMatchingWorkload), std::string(message::kNoMatchMissing));
    }
  }
  int deleted = 0;
  for (const auto& workload : others) {
    if (hasFinalizer(workload, api::kResourceInUseFinalizer)) removeFinalizer(workload);
    if (isTerminating(workload)) continue;
    deleteWorkload(workload);
    events_.record(job, "Normal", reason::kDeletedWorkload, "Deleted not matching Workload: " + keyOf(workload));
    ++deleted;
  }
  if (deleted > 0) {
    throw Error(std::string(match ? "extra workloads" : "no matching workloads") + ": deleted " +
                std::to_string(deleted) + " workloads");
  }
  if (toUpdate) {
    const Priority priority = priorityFor(job, *podSets);
    const json fresh = newWorkload(job, kind_.gvk(), std::move(*podSets), priority);
    json updated = *toUpdate;
    const json active = objectMember(*toUpdate, "spec").value("active", json());
    updated["spec"] = fresh["spec"];
    if (!active.is_null()) updated["spec"]["active"] = active;
    json written;
    if (!writeUnlessRefused(job, updated, [&] { written = client_.update(updated); }))
      return {std::nullopt, Result::done()};
    events_.record(job, "Normal", reason::kUpdatedWorkload,
                   "Updated not matching Workload for suspended job: " + keyOf(*toUpdate));
    return {std::move(written), std::nullopt};
  }
  if (match) followPriorityLabel(job, *match);
  return {std::move(match), std::nullopt};
}

JobReconciler::Ensured JobReconciler::ensurePrebuilt(json& job, const std::string& name) {
  auto workload = cachedWorkload(metadataString(job, "namespace") + "/" + name);
  if (!workload) return {};
  const json* owner = controllerRef(*workload);
  const std::string uid = metadataString(job, "uid");
  if (owner != nullptr && stringMember(*owner, "uid") != uid) {
    log::warn("prebuilt workload controlled by another object, not adopted",
              {{"workload", metadataString(job, "namespace") + "/" + name},
               {"ownerUID", stringMember(*owner, "uid")},
               {"kind", kind_.gvk().kind},
               {"job", keyOf(job)}});
    return {};
  }
  if (owner == nullptr) {
    json adopted = *workload;
    adopted["metadata"]["ownerReferences"].push_back({{"apiVersion", kind_.gvk().apiVersion()},
                                                      {"kind", kind_.gvk().kind},
                                                      {"name", metadataString(job, "name")},
                                                      {"uid", uid},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}});
    if (!uid.empty() && uid.size() <= api::kMaxLabelValueLength)
      adopted["metadata"]["labels"][std::string(api::kJobUidLabel)] = uid;
    workload = client_.update(adopted);
  }
  auto podSets = podSetsOrWarn(job);
  if (!podSets) return {std::nullopt, Result::done()};
  if (!isFinished(*workload) && !matches(job, *podSets, *workload)) {
    finishWorkload(*workload, std::string(reason::kOutOfSync), std::string(message::kOutOfSync));
    return {};
  }
  return {std::move(workload), std::nullopt};
}

Result JobReconciler::createWorkload(const json& job) {
  auto podSets = podSetsOrWarn(job);
  if (!podSets) return Result::done();
  const Priority priority = priorityFor(job, *podSets);
  const json workload = newWorkload(job, kind_.gvk(), std::move(*podSets), priority, rules_.labelKeysToCopy);
  bool created = false;
  const bool written = writeUnlessRefused(job, workload, [&] {
    try {
      client_.create(workload, {.answer = kube::WriteOptions::Answer::None});
      created = true;
    } catch (const kube::ApiError& e) {
      // Created by an earlier reconcile whose result the cache has not shown yet: its event
      // brings the job back.
      if (e.reason() != kube::Reason::AlreadyExists) throw;
    }
  });
  if (!written || !created) return Result::done();
  events_.record(job, "Normal", reason::kCreatedWorkload, "Created Workload: " + keyOf(workload));
  if (observer_) observer_->workloadCreated(kind_.name());
  return Result::done();
}

bool JobReconciler::byActiveRule(const json& job, const json& evicted) const {
  if (!rules_.active) return false;
  if (!markedForMultiKueue(job)) return true;
  const std::string reason = stringMember(evicted, "reason");
  return reason != api::evicted_reason::kAdmissionCheck &&
         reason != api::evicted_reason::kDeactivatedDueToAdmissionCheck;
}

bool JobReconciler::writeUnlessRefused(const json& job, const json& workload, const std::function<void()>& write) {
  const std::string jobKey = keyOf(job);
  const std::size_t digest = std::hash<std::string>{}(workload.dump());
  {
    std::lock_guard lock(refusedMutex_);
    if (auto it = refused_.find(jobKey); it != refused_.end() && it->second == digest) return false;
  }
  try {
    write();
  } catch (const kube::ApiError& e) {
    if (e.reason() != kube::Reason::Invalid) throw;
    rememberRefusal(job, workload, digest, e);
    return false;
  }
  forgetRefused(jobKey);
  return true;
}

void JobReconciler::rememberRefusal(const json& job, const json& workload, std::size_t digest,
                                    const kube::ApiError& refusal) {
  const std::string jobKey = keyOf(job);
  {
    std::lock_guard lock(refusedMutex_);
    refused_[jobKey] = digest;
  }
  log::warn("Workload refused by the API server, not sent again until the job changes",
            {{"kind", kind_.gvk().kind}, {"job", jobKey}, {"workload", keyOf(workload)}, {"error", refusal.what()}});
  events_.record(job, "Warning", reason::kInvalidWorkload,
                 "the API server refused the job's Workload: " + refusalText(refusal, rules_) +
                     "; correct the job (a pod template must be a valid PodTemplateSpec): it stays suspended "
                     "without a Workload until it changes");
}

void JobReconciler::forgetRefused(const std::string& jobKey) {
  std::lock_guard lock(refusedMutex_);
  refused_.erase(jobKey);
}

bool JobReconciler::markedForMultiKueue(const json& job) const {
  return kind_.managedByValue(job) == kind_.managedBy().value;
}

Result JobReconciler::start(const json& job, const json& workload) {
  if (markedForMultiKueue(job)) return Result::done();
  // Flavors are read from the API server: one GET per start, and no informer follows them.
  const controller::ClientReader server(client_);
  auto infos = api::podSetInfos(workload,
                                [&](const std::string& name) { return server.get(api::kResourceFlavorGvk, "", name); });
  if (const auto* missing = std::get_if<api::FlavorNotFound>(&infos)) {
    // As Kueue: not permanent, the start is retried with backoff until the flavor is there.
    const std::string message = "ResourceFlavor \"" + missing->name + "\" of pod set " + missing->podSet +
                                " in the admission of Workload " + keyOf(workload) +
                                " is not there: create it, or remove it from the ClusterQueue; the job stays "
                                "suspended and its start is retried with backoff";
    events_.record(job, "Warning", reason::kResourceFlavorNotFound, message);
    throw Error(keyOf(job) + ": " + message);
  }
  std::variant<json, std::string> running = std::string();
  if (auto* error = std::get_if<std::string>(&infos)) {
    running = *error;
  } else {
    running = started(job, rules_, std::get<std::vector<api::PodSetInfo>>(infos));
  }
  if (auto* error = std::get_if<std::string>(&running)) {
    finishWorkload(workload, std::string(reason::kFailedToStart), *error);
    return Result::done();
  }
  client_.update(std::get<json>(running), {.answer = kube::WriteOptions::Answer::None});
  events_.record(job, "Normal", reason::kStarted,
                 "Admitted by clusterQueue " + std::string(api::WorkloadView(workload).admittedClusterQueue()));
  if (observer_) observer_->jobResumed(kind_.name());
  return Result::done();
}

bool JobReconciler::stop(json& job, const json* workload, const std::string& why, const std::string& message) {
  const auto& rule = rules_.stopRule();
  const json* stopValue = json_fields::fieldAt(job, rule.path);
  if (isSuspended(job, rules_) || (stopValue != nullptr && *stopValue == rule.value)) return false;
  const json podSets = workload ? api::WorkloadView(*workload).podSets() : json();
  // Nothing of a job marked for MultiKueue runs here (its framework controller leaves it to the
  // dispatch loop), so a stop that cannot be undone (Tekton's StoppedRunFinally) would only end
  // the run the workers are about to make: such a job is suspended instead.
  if (markedForMultiKueue(job)) {
    auto suspendOnly = rules_;
    suspendOnly.stop.reset();
    job = stopped(job, suspendOnly, podSets);
  } else {
    job = stopped(job, rules_, podSets);
  }
  client_.update(job, {.answer = kube::WriteOptions::Answer::None});
  log::info("job stopped", {{"kind", kind_.gvk().kind}, {"job", keyOf(job)}, {"reason", why}, {"message", message}});
  events_.record(job, "Normal", reason::kStopped, message);
  if (observer_) observer_->jobStopped(kind_.name());
  return true;
}

std::string JobReconciler::finishWorkload(const json& workload, const std::string& why, const std::string& message) {
  json updated = workload;
  api::setCondition(updated, api::condition::kFinished, true, why, message, clock_.now());
  const json written =
      client_.update(updated, {.subresource = "status", .answer = kube::WriteOptions::Answer::Metadata});
  return json_fields::metadataString(written, "resourceVersion");
}

bool JobReconciler::syncPodsReady(const json& job, const json& workload) {
  const auto wanted = podsReadyCondition(workload, podsReady(job, rules_));
  const json* current = findCondition(workload, api::condition::kPodsReady);
  // Kueue compares type, status and reason only.
  if (current != nullptr && stringMember(*current, "status") == (wanted.status ? "True" : "False") &&
      stringMember(*current, "reason") == wanted.reason)
    return false;
  json updated = workload;
  api::setCondition(updated, api::condition::kPodsReady, wanted.status, wanted.reason, wanted.message, clock_.now());
  client_.update(updated, {.subresource = "status", .answer = kube::WriteOptions::Answer::None});
  return true;
}

void JobReconciler::clearReservation(const json& workload) {
  json updated = workload;
  const auto* evicted = findCondition(workload, api::condition::kEvicted);
  const std::string why = stringMember(*evicted, "reason");
  const std::string message = stringMember(*evicted, "message");
  const auto now = clock_.now();
  api::setCondition(updated, api::condition::kRequeued,
                    why == api::evicted_reason::kPreempted || why == api::evicted_reason::kNodeFailures, why, message,
                    now);
  api::setCondition(updated, api::condition::kQuotaReserved, false, reason::kPendingEvaluation, message, now);
  api::setCondition(updated, api::condition::kAdmitted, false, reason::kNoReservation, message::kNoReservation, now);
  updated["status"].erase("admission");
  client_.update(updated, {.subresource = "status", .answer = kube::WriteOptions::Answer::None});
}

void JobReconciler::removeFinalizer(const json& workload) {
  const auto& list = api::ObjectView(workload).finalizers();
  json remaining = json::array();
  for (const auto& f : list)
    if (f != api::kResourceInUseFinalizer) remaining.push_back(f);
  if (remaining.size() == list.size()) return;
  // Conditioned on the revision read: a finalizer list that changed meanwhile is a 409 and a
  // retry on the fresh object, never another writer's finalizer dropped.
  const json patch = {{"metadata",
                       {{"finalizers", remaining.empty() ? json(nullptr) : remaining},
                        {"resourceVersion", json_fields::metadataString(workload, "resourceVersion")}}}};
  try {
    client_.patch(api::kWorkloadGvk, metadataString(workload, "namespace"), metadataString(workload, "name"),
                  kube::PatchType::Merge, patch, {.answer = kube::WriteOptions::Answer::None});
  } catch (const kube::ApiError& e) {
    if (e.reason() != kube::Reason::NotFound) throw;
  }
}

void JobReconciler::deleteWorkload(const json& workload) {
  try {
    client_.remove(api::kWorkloadGvk, metadataString(workload, "namespace"), metadataString(workload, "name"),
                   {.uid = metadataString(workload, "uid")});
  } catch (const kube::ApiError& e) {
    if (e.reason() != kube::Reason::NotFound) throw;
  }
}

}  // namespace mka::integration
