#include "mka/standin/kueue_standin.h"

#include <algorithm>
#include <compare>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "kueue_quota.h"
#include "log.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/quantity.h"
#include "mka/common/thread_name.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"

namespace mka::standin {
namespace {

using sandbox::ApiError;
using sandbox::ClusterApi;
using sandbox::EventType;
using sandbox::ObjectStore;
using sandbox::ResourceRef;
using sandbox::StoredObject;
using sandbox::WriteOptions;

using nlohmann::json;
using TimePoint = Clock::TimePoint;

// Kueue's strings, kept here on purpose (see the header): the adapter has its own copy.
constexpr const char* kKueueGroup = "kueue.x-k8s.io";
constexpr const char* kKueueVersion = "v1beta2";
constexpr const char* kFieldManager = "kueue-standin";

constexpr const char* kQuotaReserved = "QuotaReserved";
constexpr const char* kAdmitted = "Admitted";
constexpr const char* kEvicted = "Evicted";
constexpr const char* kFinished = "Finished";
constexpr const char* kDeactivationTarget = "DeactivationTarget";
constexpr const char* kPreempted = "Preempted";
constexpr const char* kBlockedOnPreemptionGates = "BlockedOnPreemptionGates";
constexpr const char* kPodsReady = "PodsReady";
constexpr const char* kRequeued = "Requeued";
constexpr const char* kPodsReadyTimeout = "PodsReadyTimeout";

// Why a pending Workload has no quota (QuotaReserved=False): Kueue's scheduler writes the
// granular reasons of UnadmittedWorkloadsObservability (Beta, on since 0.20; "Pending" before),
// kueue_quota.cpp those of an assignment that does not fit.
constexpr const char* kWaitingForQuota = "WaitingForQuota";
constexpr const char* kWaitingForPreemptedWorkloads = "WaitingForPreemptedWorkloads";
constexpr const char* kAdmissionGated = "AdmissionGated";
constexpr const char* kPreemptionGated = "PreemptionGated";  // BlockedOnPreemptionGates=True
constexpr const char* kNoReservation = "NoReservation";      // Admitted=False
constexpr const char* kInClusterQueue = "InClusterQueue";    // Preempted=True
constexpr const char* kGatedMessage = "Workload requires preemption, but it's gated";
constexpr const char* kOverlappingTargetsMessage = "Workload has overlapping preemption targets with another workload";
constexpr const char* kJobUidLabel = "kueue.x-k8s.io/job-uid";

// Conflicts are retried on the next poll; a key that keeps failing for another reason is
// retried too (the stand-in must converge, as a controller does), but logged each time.
constexpr int kEvictAttempts = 10;

ResourceRef workloadRef(const std::string& ns, const std::string& name = "", const std::string& sub = "") {
  return {kKueueGroup, kKueueVersion, "workloads", ns, name, sub};
}
ResourceRef localQueueRef(const std::string& ns, const std::string& name) {
  return {kKueueGroup, kKueueVersion, "localqueues", ns, name, ""};
}
ResourceRef clusterQueueRef(const std::string& name, const std::string& sub = "") {
  return {kKueueGroup, kKueueVersion, "clusterqueues", "", name, sub};
}
ResourceRef admissionCheckRef(const std::string& name) {
  return {kKueueGroup, kKueueVersion, "admissionchecks", "", name, ""};
}

// Every write names the stand-in as field manager, as Kueue's controllers name themselves.
WriteOptions asStandIn() {
  WriteOptions options;
  options.fieldManager = kFieldManager;
  return options;
}

// The stored object itself (null when absent): the stand-in reads far more than it writes, and
// copies only what it writes.
StoredObject getIfExists(const ClusterApi& api, const ResourceRef& ref) {
  try {
    return api.getShared(ref);
  } catch (const ApiError& e) {
    if (e.code() == 404) return nullptr;
    throw;
  }
}

// What a write to /status needs of `object`: the type, the name, the resourceVersion read (a
// concurrent writer makes the write a 409, retried) and the new status. The API server takes
// everything else from the stored object, so there is nothing else to copy.
json statusWrite(const json& object, json status) {
  const auto& meta = object.at("metadata");
  json out = {{"apiVersion", object.value("apiVersion", "")},
              {"kind", object.value("kind", "")},
              {"metadata",
               {{"name", meta.value("name", "")},
                {"namespace", meta.value("namespace", "")},
                {"resourceVersion", meta.value("resourceVersion", "")}}},
              {"status", std::move(status)}};
  if (out["metadata"]["namespace"] == "") out["metadata"].erase("namespace");
  return out;
}

std::string stringAtPointer(const json& object, const json::json_pointer& pointer) {
  if (!object.contains(pointer)) return "";
  const auto& value = object.at(pointer);
  return value.is_string() ? value.get<std::string>() : "";
}

std::string nsOf(const json& object) { return stringAtPointer(object, json::json_pointer("/metadata/namespace")); }
std::string nameOf(const json& object) { return stringAtPointer(object, json::json_pointer("/metadata/name")); }

bool deleting(const json& object) {
  return object.contains("metadata") && object["metadata"].contains("deletionTimestamp");
}

const json* findCondition(const json& object, const std::string& type) {
  const auto pointer = json::json_pointer("/status/conditions");
  if (!object.contains(pointer) || !object.at(pointer).is_array()) return nullptr;
  for (const auto& c : object.at(pointer))
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

bool conditionTrue(const json& object, const std::string& type) {
  const auto* c = findCondition(object, type);
  return c != nullptr && c->value("status", "") == "True";
}

// The AdmissionChecks a ClusterQueue lists (in v1beta2, the version the stand-in reads, only
// spec.admissionChecksStrategy does).
std::vector<std::string> checkNamesOf(const json& clusterQueue) {
  std::vector<std::string> names;
  const auto& strategy =
      json_fields::objectMember(json_fields::objectMember(clusterQueue, "spec"), "admissionChecksStrategy");
  for (const auto& rule : json_fields::arrayMember(strategy, "admissionChecks"))
    if (rule.is_object()) names.push_back(rule.value("name", ""));
  return names;
}

// metav1.Condition semantics (apimeta.SetStatusCondition): lastTransitionTime moves only when
// the status changes. No generation: no observedGeneration (Kueue's Preempted condition).
void setCondition(json& status, const std::string& type, const std::string& value, const std::string& reason,
                  const std::string& message, const std::string& now, std::optional<std::int64_t> generation) {
  auto& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (auto& c : conditions) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = now;
    c["status"] = value;
    c["reason"] = reason;
    c["message"] = message;
    if (generation) {
      c["observedGeneration"] = *generation;
    } else {
      c.erase("observedGeneration");
    }
    return;
  }
  json condition = {
      {"type", type}, {"status", value}, {"reason", reason}, {"message", message}, {"lastTransitionTime", now}};
  if (generation) condition["observedGeneration"] = *generation;
  conditions.push_back(std::move(condition));
}

// apimeta.RemoveStatusCondition.
void removeCondition(json& status, const std::string& type) {
  auto& conditions = status["conditions"];
  if (!conditions.is_array()) return;
  conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                  [&](const json& c) { return c.is_object() && c.value("type", "") == type; }),
                   conditions.end());
}

// Kueue's resetActiveCondition: a condition that is True turns False ("Previously: ...").
void resetActiveCondition(json& status, const json& wl, const std::string& type, const std::string& reason,
                          const std::string& now, std::int64_t generation) {
  const auto* previous = findCondition(wl, type);
  if (previous == nullptr || previous->value("status", "") != "True") return;
  setCondition(status, type, "False", reason, "Previously: " + previous->value("message", ""), now, generation);
}

std::int64_t generationOf(const json& object) {
  const auto pointer = json::json_pointer("/metadata/generation");
  return object.contains(pointer) && object.at(pointer).is_number_integer() ? object.at(pointer).get<std::int64_t>()
                                                                            : 0;
}

// RFC 3339 as ClusterApi::now() writes it ("2027-01-15T08:00:00Z", fractions ignored);
// nullopt when unreadable.
std::optional<TimePoint> parseTime(const std::string& text) {
  std::tm tm{};
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec) != 6)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::time_point_cast<TimePoint::duration>(std::chrono::system_clock::from_time_t(timegm(&tm)));
}

// spec.priority; absent is Kueue's default priority, 0.
std::int64_t priorityOf(const json& wl) {
  const auto pointer = json::json_pointer("/spec/priority");
  return wl.contains(pointer) && wl.at(pointer).is_number_integer() ? wl.at(pointer).get<std::int64_t>() : 0;
}

// Kueue's queue order timestamp (Ordering.GetQueueOrderTimestamp): the creation, or the
// eviction for a Workload an admission check evicted. RFC 3339 as stored, so it sorts as text.
std::string queuedAt(const json& wl) {
  if (const auto* evicted = findCondition(wl, kEvicted);
      evicted != nullptr && evicted->value("status", "") == "True" && evicted->value("reason", "") == "AdmissionCheck")
    return evicted->value("lastTransitionTime", "");
  return stringAtPointer(wl, json::json_pointer("/metadata/creationTimestamp"));
}

// Kueue's HasClosedPreemptionGate: a gate in spec.preemptionGates whose status.preemptionGates
// entry is missing or not Open.
bool hasClosedPreemptionGate(const json& wl) {
  const auto& spec = json_fields::objectMember(wl, "spec");
  const auto& states = json_fields::arrayMember(json_fields::objectMember(wl, "status"), "preemptionGates");
  for (const auto& gate : json_fields::arrayMember(spec, "preemptionGates")) {
    const auto name = json_fields::stringMember(gate, "name");
    const auto state = std::find_if(states.begin(), states.end(),
                                    [&](const json& s) { return json_fields::stringMember(s, "name") == name; });
    if (state == states.end() || json_fields::stringMember(*state, "position") != "Open") return true;
  }
  return false;
}

// What the worker thread reconciles: a Workload.
struct Key {
  std::string namespace_;
  std::string name;
  auto operator<=>(const Key&) const = default;
};

// A watch the worker thread polls, and what its events mean.
struct WatchSlot {
  enum class Kind { Workload, Queue };
  Kind kind;
  ResourceRef ref;
  std::unique_ptr<ObjectStore::Watch> watch;
};

}  // namespace

struct KueueStandIn::Impl {
  Impl(ClusterApi& a, const Clock& c, Options o) : api(a), clock(c), options(std::move(o)) {
    slots.push_back({WatchSlot::Kind::Workload, workloadRef(""), nullptr});
    slots.push_back({WatchSlot::Kind::Queue, localQueueRef("", ""), nullptr});
    slots.push_back({WatchSlot::Kind::Queue, clusterQueueRef(""), nullptr});
    slots.push_back({WatchSlot::Kind::Queue, admissionCheckRef(""), nullptr});
  }

  ClusterApi& api;
  const Clock& clock;
  const Options options;
  std::vector<WatchSlot> slots;  // worker thread only
  // The Workloads as the watch delivered them (worker thread only), as Kueue's cache keeps them:
  // a scheduling pass reads these shared objects instead of listing (copying) every Workload.
  std::map<Key, sandbox::StoredObject> workloads;

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Key> queue;
  std::set<Key> queued;
  std::set<Key> retry;  // failed (conflict): tried again next round
  // Workloads to look at again at a time: after readmitDelay or at requeueAt (evicted), or when
  // their PodsReady timeout runs out.
  std::map<Key, TimePoint> readmitAt;
  bool scheduleDue = true;          // something changed: the scheduler looks at every queue
  bool scheduleFailed = false;      // a write of the last pass conflicted: look again next round
  std::uint64_t quietRevision = 0;  // store revision every event up to which was handled
  bool poked = false;
  bool busy = false;
  bool running = false;
  bool stopping = false;
  std::thread worker;

  const std::string& cluster() const { return api.clusterName(); }
  bool manager() const { return options.role == Role::Manager; }

  void enqueueLocked(const Key& key) {
    if (queued.insert(key).second) queue.push_back(key);
  }

  // ---- the worker thread's loop -------------------------------------------------------------

  void run() {
    while (true) {
      {
        std::lock_guard lock(mutex);
        if (stopping) return;
      }
      const auto revision = api.store().resourceVersion();
      bool events = drainWatches();
      enqueueDueTimers();
      events = processQueue() || events;
      schedule();
      std::unique_lock lock(mutex);
      const bool retrying = !retry.empty() || scheduleFailed;
      if (!events && queue.empty() && !retrying) quietRevision = revision;
      // After work, look again at once: what was written is already waiting in the watches.
      // A failed key waits a poll interval, so a lasting error does not spin.
      if (!poked && !stopping && (!events || retrying)) wake.wait_for(lock, options.pollInterval);
      poked = false;
      for (const auto& key : retry) enqueueLocked(key);
      retry.clear();
      scheduleDue = scheduleDue || scheduleFailed;
      scheduleFailed = false;
    }
  }

  // Opens missing watches (a CRD may appear later) and turns events into keys. Returns
  // whether anything arrived.
  bool drainWatches() {
    bool any = false;
    for (auto& slot : slots) {
      if (!slot.watch || slot.watch->closed()) {
        try {
          // "0": synthetic ADDED events for what exists, so a (re)opened watch is a relist.
          slot.watch = api.watch(slot.ref, {}, "0");
          if (slot.kind == WatchSlot::Kind::Workload) workloads.clear();
        } catch (const ApiError& e) {
          if (e.code() != 404)
            log::warn(
                logger(), "kueue-standin watch failed",
                {{"cluster", cluster()}, {"resource", slot.ref.plural + "." + slot.ref.group}, {"error", e.what()}});
          slot.watch.reset();
          continue;  // the CRD is not there yet: try again next round
        }
      }
      while (auto event = slot.watch->next(std::chrono::milliseconds{0})) {
        any = true;
        if (event->type == EventType::Error) {
          slot.watch.reset();  // 410: reopen (relist) next round
          break;
        }
        if (event->type == EventType::Bookmark) continue;
        if (slot.kind == WatchSlot::Kind::Workload) {
          const Key key{nsOf(*event->object), nameOf(*event->object)};
          if (event->type == EventType::Deleted) {
            workloads.erase(key);
          } else {
            workloads[key] = event->object;
          }
        }
        onEvent(slot, *event->object);
      }
    }
    return any;
  }

  // Any change may free or take quota, or unblock a Workload (a LocalQueue, ClusterQueue or
  // AdmissionCheck appearing or changing): the scheduler looks again.
  void onEvent(const WatchSlot& slot, const json& object) {
    std::lock_guard lock(mutex);
    if (slot.kind == WatchSlot::Kind::Workload) enqueueLocked({nsOf(object), nameOf(object)});
    scheduleDue = true;
  }

  void enqueueDueTimers() {
    const auto now = clock.now();
    std::lock_guard lock(mutex);
    for (auto it = readmitAt.begin(); it != readmitAt.end();) {
      if (it->second <= now) {
        enqueueLocked(it->first);
        scheduleDue = true;
        it = readmitAt.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Returns whether any key was handled.
  bool processQueue() {
    bool any = false;
    while (true) {
      Key key;
      {
        std::lock_guard lock(mutex);
        if (queue.empty() || stopping) return any;
        key = queue.front();
        queue.pop_front();
        queued.erase(key);
        busy = true;
      }
      any = true;
      bool failed = false;
      try {
        reconcileWorkload(key);
      } catch (const ApiError& e) {
        failed = true;
        // 409: a write raced another writer; 404: the object went away between the read and the
        // write (the dispatcher deletes the copies that lost). Both are expected: the retry
        // rereads, and finds the newer object or nothing to do.
        if (e.code() != 409 && e.code() != 404)
          log::warn(logger(), "kueue-standin reconcile failed, retrying",
                    {{"cluster", cluster()}, {"namespace", key.namespace_}, {"name", key.name}, {"error", e.what()}});
      } catch (const std::exception& e) {
        failed = true;
        log::warn(logger(), "kueue-standin reconcile failed, retrying",
                  {{"cluster", cluster()}, {"namespace", key.namespace_}, {"name", key.name}, {"error", e.what()}});
      }
      std::lock_guard lock(mutex);
      busy = false;
      if (failed) retry.insert(key);
    }
  }

  std::vector<json> listWorkloads() const {
    try {
      auto list = api.list(workloadRef(""), {});
      return list.value("items", json::array()).get<std::vector<json>>();
    } catch (const ApiError&) {
      return {};  // the Workload CRD is not there yet
    }
  }

  static bool holdsQuota(const json& wl) {
    return conditionTrue(wl, kQuotaReserved) && !conditionTrue(wl, kFinished) && !deleting(wl);
  }

  std::size_t countHoldingQuota() const {
    const auto all = listWorkloads();
    return static_cast<std::size_t>(std::count_if(all.begin(), all.end(), holdsQuota));
  }

  // ---- Workloads ----------------------------------------------------------------------------

  void reconcileWorkload(const Key& key) {
    const auto found = getIfExists(api, workloadRef(key.namespace_, key.name));
    if (!found) {
      std::lock_guard lock(mutex);
      readmitAt.erase(key);
      return;
    }
    const json& wl = *found;
    // Being deleted: its resource-in-use finalizer is the job integration's to remove.
    if (deleting(wl)) return;
    if (conditionTrue(wl, kFinished)) return;  // finished (by the integration or the dispatcher): left as is

    const bool active = wl.contains("spec") ? wl["spec"].value("active", true) : true;
    const bool reserved = conditionTrue(wl, kQuotaReserved);
    if (active) {
      const auto rejected = checksIn(wl, "Rejected");
      if (conditionTrue(wl, kDeactivationTarget) || (manager() && reserved && !rejected.empty())) {
        deactivate(wl, rejected);
        return;
      }
    }
    const bool evicted = conditionTrue(wl, kEvicted);
    if (!active) {
      // Kueue's workload.Evict, as for any eviction: every check reset to Pending, so a later
      // reactivation dispatches afresh. The reason and message take the DeactivationTarget's,
      // which goes then, with the requeue state, as Kueue's deactivation clears both (a target
      // left would deactivate the Workload again once reactivated).
      const auto clear = [](json& status) {
        status.erase("requeueState");
        removeCondition(status, kDeactivationTarget);
      };
      if (reserved && !evicted) {
        evictWorkload(wl, deactivationReason(wl), deactivationMessage(wl), clear);
      } else if (findCondition(wl, kDeactivationTarget) != nullptr ||
                 json_fields::objectMember(wl, "status").contains("requeueState")) {
        json status = wl.value("status", json::object());
        clear(status);
        writeStatus(wl, std::move(status));
      }
      return;
    }
    if (!reserved && options.waitForPodsReady && backoffPending(wl)) return;
    if (!reserved) return;  // the scheduler's (schedule())
    if (evicted) return;    // reserved until the job integration has stopped the job and released it
    if (manager()) {
      const auto retry = checksIn(wl, "Retry");
      if (!retry.empty()) {
        evictWorkload(wl, "AdmissionCheck", retryMessage(retry));
        return;
      }
    }
    if (!conditionTrue(wl, kAdmitted) && (!manager() || allChecksReady(wl))) {
      admit(wl);
      return;
    }
    if (options.waitForPodsReady && conditionTrue(wl, kAdmitted)) timeOutPodsReady(wl);
  }

  // ---- waitForPodsReady (Kueue's reconcileNotReadyTimeout, triggerDeactivation) ------------

  // Calls `key` back at `at` (the earliest of its timers).
  void wakeAt(const json& wl, TimePoint at) {
    std::lock_guard lock(mutex);
    const Key key{nsOf(wl), nameOf(wl)};
    auto [it, inserted] = readmitAt.emplace(key, at);
    if (!inserted) it->second = std::min(it->second, at);
  }

  // How long the admitted `wl` has left to become PodsReady (zero: timed out), or nullopt when
  // no timeout runs (ready, or recovering with no recovery timeout).
  std::optional<TimePoint::duration> podsReadyTimeLeft(const json& wl) const {
    const auto& settings = *options.waitForPodsReady;
    const auto* ready = findCondition(wl, kPodsReady);
    if (ready != nullptr && ready->value("status", "") == "True") return std::nullopt;
    const std::string reason = ready != nullptr ? ready->value("reason", "") : "";
    std::chrono::nanoseconds limit = settings.timeout;
    const json* since = findCondition(wl, kAdmitted);
    if (ready != nullptr && reason == "WaitForRecovery") {
      limit = settings.recoveryTimeout.value_or(settings.timeout);
      if (limit.count() <= 0) return std::nullopt;
      since = ready;
    } else if (ready != nullptr && reason != "WaitForStart" && reason != "PodsReady") {  // Kueue's older reason
      return std::nullopt;
    }
    const auto from = parseTime(since != nullptr ? since->value("lastTransitionTime", "") : "");
    const auto deadline = from.value_or(clock.now()) + std::chrono::duration_cast<TimePoint::duration>(limit);
    return std::max(deadline - clock.now(), TimePoint::duration::zero());
  }

  // An admitted Workload not PodsReady in time is evicted with its requeue state, or past the
  // requeuing limit marked for deactivation; before its time, it is looked at again then.
  void timeOutPodsReady(const json& wl) {
    const auto left = podsReadyTimeLeft(wl);
    if (!left) return;
    if (left->count() > 0) {
      wakeAt(wl, clock.now() + *left);
      return;
    }
    const auto& settings = *options.waitForPodsReady;
    const std::int64_t count = requeueCount(wl) + 1;
    if (settings.backoffLimitCount && count > *settings.backoffLimitCount) {
      json status = wl.value("status", json::object());
      setCondition(status, kDeactivationTarget, "True", "RequeuingLimitExceeded",
                   "exceeding the maximum number of re-queuing retries", api.now(), generationOf(wl));
      writeStatus(wl, status);
      log::info(logger(), "kueue-standin requeuing limit exceeded",
                {{"cluster", cluster()}, {"namespace", nsOf(wl)}, {"workload", nameOf(wl)}});
      return;
    }
    const auto requeueAt = clock.now() + std::chrono::duration_cast<TimePoint::duration>(requeueBackoff(
                                             count, settings.backoffBaseSeconds, settings.backoffMaxSeconds));
    evictWorkload(wl, kPodsReadyTimeout, "Exceeded the PodsReady timeout " + nsOf(wl) + "/" + nameOf(wl),
                  [&](json& evicted) {
                    evicted["requeueState"] = {{"count", count}, {"requeueAt", toRfc3339(requeueAt)}};
                  });
  }

  static std::int64_t requeueCount(const json& wl) {
    const auto pointer = json::json_pointer("/status/requeueState/count");
    return wl.contains(pointer) && wl.at(pointer).is_number_integer() ? wl.at(pointer).get<std::int64_t>() : 0;
  }

  // Kueue's backoff for the count-th requeue: base * 2^(count - 1) seconds, at most max.
  static std::chrono::seconds requeueBackoff(std::int64_t count, std::int64_t baseSeconds, std::int64_t maxSeconds) {
    std::int64_t seconds = baseSeconds;
    for (std::int64_t i = 1; i < count && seconds < maxSeconds; ++i) seconds *= 2;
    return std::chrono::seconds{std::min(seconds, maxSeconds)};
  }

  // status.requeueState.requeueAt, when set and readable.
  static std::optional<TimePoint> requeueAtOf(const json& wl) {
    return parseTime(stringAtPointer(wl, json::json_pointer("/status/requeueState/requeueAt")));
  }

  // A released Workload evicted for PodsReadyTimeout waits until requeueAt; then Kueue clears
  // requeueAt and records Requeued=True BackoffFinished. True while it waits (or just wrote).
  bool backoffPending(const json& wl) {
    const auto* requeued = findCondition(wl, kRequeued);
    if (requeued == nullptr || requeued->value("status", "") != "False" ||
        requeued->value("reason", "") != kPodsReadyTimeout)
      return false;
    if (const auto at = requeueAtOf(wl); at && *at > clock.now()) {
      wakeAt(wl, *at);
      return true;
    }
    json status = wl.value("status", json::object());
    if (status.contains("requeueState") && status["requeueState"].is_object())
      status["requeueState"].erase("requeueAt");
    setCondition(status, kRequeued, "True", "BackoffFinished", "The workload backoff was finished", api.now(),
                 generationOf(wl));
    writeStatus(wl, status);
    return true;
  }

  static std::vector<json> checksIn(const json& wl, const std::string& state) {
    std::vector<json> out;
    const auto pointer = json::json_pointer("/status/admissionChecks");
    if (!wl.contains(pointer) || !wl.at(pointer).is_array()) return out;
    for (const auto& c : wl.at(pointer))
      if (c.is_object() && c.value("state", "") == state) out.push_back(c);
    std::sort(out.begin(), out.end(),
              [](const json& a, const json& b) { return a.value("name", "") < b.value("name", ""); });
    return out;
  }

  static bool allChecksReady(const json& wl) {
    const auto pointer = json::json_pointer("/status/admissionChecks");
    if (!wl.contains(pointer) || !wl.at(pointer).is_array()) return true;
    for (const auto& c : wl.at(pointer))
      if (c.value("state", "") != "Ready") return false;
    return true;
  }

  // Kueue's wording (KUEUE-MULTIKUEUE.md §2.8): the plural when several checks, sorted by name.
  static std::string checkList(const std::vector<json>& checks) {
    std::string out;
    for (const auto& c : checks) {
      if (!out.empty()) out += "; ";
      out += "\"" + c.value("name", "") + "\" (" + c.value("message", "") + ")";
    }
    return out;
  }
  static std::string retryMessage(const std::vector<json>& checks) {
    return std::string("Evicted due to ") + (checks.size() > 1 ? "AdmissionChecks" : "AdmissionCheck") +
           " in Retry state: " + checkList(checks);
  }
  // Kueue's eviction reason for an inactive Workload: Deactivated, with the DeactivationTarget's
  // reason appended when there is one (DeactivatedDueToRequeuingLimitExceeded).
  static std::string deactivationReason(const json& wl) {
    const auto* target = findCondition(wl, kDeactivationTarget);
    if (target != nullptr) return "DeactivatedDueTo" + target->value("reason", "");
    return "Deactivated";
  }
  static std::string deactivationMessage(const json& wl) {
    const auto* target = findCondition(wl, kDeactivationTarget);
    if (target != nullptr) return "The workload is deactivated due to " + target->value("message", "");
    return "The workload is deactivated";
  }

  void writeStatus(const json& wl, json status) {
    api.update(workloadRef(nsOf(wl), nameOf(wl), "status"), statusWrite(wl, std::move(status)), asStandIn());
  }

  void writeMain(const json& object, const ResourceRef& ref) { api.update(ref, object, asStandIn()); }

  // The first AdmissionCheck the ClusterQueue lists that is missing or not Active=True ("" when
  // there is none): Kueue keeps such a ClusterQueue inactive (AdmissionCheckNotFound,
  // AdmissionCheckInactive).
  std::string inactiveCheck(const json& clusterQueue) const {
    for (const auto& name : checkNamesOf(clusterQueue)) {
      const auto check = getIfExists(api, admissionCheckRef(name));
      if (!check || !conditionTrue(*check, "Active")) return name;
    }
    return "";
  }

  // QuotaReserved=False, reason Inadmissible, as Kueue's Workload controller writes it on a
  // pending Workload it cannot admit; written only when it changes.
  void markInadmissible(const json& wl, const std::string& message) {
    if (const auto* reserved = findCondition(wl, kQuotaReserved);
        reserved != nullptr && reserved->value("status", "") == "False" &&
        reserved->value("reason", "") == "Inadmissible" && reserved->value("message", "") == message)
      return;
    json status = wl.value("status", json::object());
    setCondition(status, kQuotaReserved, "False", "Inadmissible", message, api.now(), generationOf(wl));
    writeStatus(wl, std::move(status));
  }

  // ---- the scheduler: quota reservation, preemption, ClusterQueue status --------------------
  //
  // One pass looks at every Workload, as one of Kueue's scheduling cycles does once its queues
  // have settled: the usage of those holding quota, then the pending ones in queue order, each
  // reserved where it fits (BestEffortFIFO: one that does not fit does not hold back the next),
  // then each ClusterQueue's status. A pass runs after any change, so a pending Workload is
  // reconsidered whenever quota is released.

  // A pending Workload: active, not finished, holding no quota.
  struct Pending {
    const json* wl;
    std::string clusterQueue;  // "" when its LocalQueue or ClusterQueue is missing
    std::int64_t priority;
    std::string queuedAt;
  };

  // What a ClusterQueue's status counts.
  struct QueueCounts {
    kueue_quota::Amounts reserved;  // by Workloads holding quota
    kueue_quota::Amounts admitted;  // by those of them Admitted
    std::vector<const json*> holding;
    std::int64_t reservingWorkloads = 0;
    std::int64_t admittedWorkloads = 0;
    std::int64_t pendingWorkloads = 0;
  };

  // What one pass reads and updates as it reserves.
  struct Pass {
    std::map<std::string, const json*> clusterQueues;
    std::map<std::string, std::string> inactive;  // ClusterQueue -> its first inactive check
    kueue_quota::Snapshot snapshot;               // usage, and that of preemptors waiting
    std::map<std::string, QueueCounts> counts;
    std::size_t holding = 0;        // Workloads holding quota (Options::capacity)
    std::set<std::string> claimed;  // preemption targets already claimed in this pass
    bool clean = true;              // false: a write conflicted, look again
  };

  void schedule() {
    {
      std::lock_guard lock(mutex);
      if (!scheduleDue || stopping) return;
      scheduleDue = false;
      busy = true;
    }
    bool clean = false;
    try {
      clean = schedulePass();
    } catch (const std::exception& e) {
      log::warn(logger(), "kueue-standin scheduling failed, retrying", {{"cluster", cluster()}, {"error", e.what()}});
    }
    std::lock_guard lock(mutex);
    busy = false;
    if (!clean) scheduleFailed = true;
  }

  std::vector<json> listItems(const ResourceRef& ref) const {
    try {
      return api.list(ref, {}).value("items", json::array()).get<std::vector<json>>();
    } catch (const ApiError&) {
      return {};  // the CRD is not there yet
    }
  }

  // Returns false when a write conflicted with another writer (the next pass rereads).
  bool schedulePass() {
    const auto clusterQueues = listItems(clusterQueueRef(""));
    std::map<std::string, std::string> localQueues;  // namespace/name -> ClusterQueue
    for (const auto& lq : listItems(localQueueRef("", "")))
      localQueues[nsOf(lq) + "/" + nameOf(lq)] = stringAtPointer(lq, json::json_pointer("/spec/clusterQueue"));

    Pass pass;
    for (const auto& cq : clusterQueues) {
      pass.clusterQueues[nameOf(cq)] = &cq;
      pass.inactive[nameOf(cq)] = inactiveCheck(cq);
      pass.snapshot.addQueue(kueue_quota::ClusterQueue::from(cq));
      pass.counts[nameOf(cq)];
    }
    std::vector<Pending> pending;
    for (const auto& [key, stored] : workloads) {
      const json& wl = *stored;
      if (deleting(wl) || conditionTrue(wl, kFinished)) continue;
      if (holdsQuota(wl)) {
        const auto cq = stringAtPointer(wl, json::json_pointer("/status/admission/clusterQueue"));
        const auto usage = kueue_quota::admittedUsage(wl);
        ++pass.holding;
        pass.snapshot.add(cq, usage);
        auto& counts = pass.counts[cq];
        add(counts.reserved, usage);
        ++counts.reservingWorkloads;
        if (conditionTrue(wl, kAdmitted)) {
          add(counts.admitted, usage);
          ++counts.admittedWorkloads;
        }
        counts.holding.push_back(&wl);
        continue;
      }
      if (!(wl.contains("spec") ? wl["spec"].value("active", true) : true)) continue;
      std::string cq;
      if (auto lq = localQueues.find(nsOf(wl) + "/" + stringAtPointer(wl, json::json_pointer("/spec/queueName")));
          lq != localQueues.end() && pass.clusterQueues.count(lq->second) != 0) {
        cq = lq->second;
        ++pass.counts[cq].pendingWorkloads;
      }
      pending.push_back({&wl, cq, priorityOf(wl), queuedAt(wl)});
    }
    std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.queuedAt != b.queuedAt) return a.queuedAt < b.queuedAt;
      return std::make_pair(nsOf(*a.wl), nameOf(*a.wl)) < std::make_pair(nsOf(*b.wl), nameOf(*b.wl));
    });

    for (const auto& p : pending) {
      try {
        schedulePending(p, pass);
      } catch (const ApiError& e) {
        // 409: someone wrote the Workload since the list; 404: it is gone. The next pass rereads.
        if (e.code() != 409 && e.code() != 404) throw;
        pass.clean = false;
      }
    }
    writeClusterQueueStatuses(clusterQueues, pass);
    return pass.clean;
  }

  static void add(kueue_quota::Amounts& to, const kueue_quota::Amounts& amounts) {
    for (const auto& [fr, amount] : amounts) to[fr] += amount;
  }

  // Kueue requeues an evicted Workload after a backoff: here one fixed Options::readmitDelay,
  // and with waitForPodsReady also status.requeueState.requeueAt.
  bool waitingToReadmit(const json& wl) {
    if (const auto at = requeueAtOf(wl); options.waitForPodsReady && at && *at > clock.now()) {
      wakeAt(wl, *at);
      return true;
    }
    const auto* evicted = findCondition(wl, kEvicted);
    if (evicted == nullptr || evicted->value("status", "") != "True" || options.readmitDelay.count() <= 0) return false;
    const auto now = clock.now();
    const auto since = parseTime(evicted->value("lastTransitionTime", ""));
    const auto notBefore = since.value_or(now) + std::chrono::duration_cast<TimePoint::duration>(options.readmitDelay);
    if (now >= notBefore) return false;
    std::lock_guard lock(mutex);
    readmitAt[{nsOf(wl), nameOf(wl)}] = notBefore;
    return true;
  }

  void schedulePending(const Pending& p, Pass& pass) {
    const json& wl = *p.wl;
    if (waitingToReadmit(wl)) return;
    if (p.clusterQueue.empty()) {
      const auto queueName = stringAtPointer(wl, json::json_pointer("/spec/queueName"));
      if (options.requireQueues) {
        log::debug(logger(), "kueue-standin workload waits for its queues",
                   {{"cluster", cluster()}, {"namespace", nsOf(wl)}, {"workload", nameOf(wl)}, {"queue", queueName}});
        return;  // a LocalQueue/ClusterQueue event brings it back
      }
      if (overCapacity(pass)) return;
      // No ClusterQueue to count against: reserved as is, without flavors.
      kueue_quota::Assignment unassigned;
      for (const auto& podSet : kueue_quota::podSetRequests(wl))
        unassigned.podSets.push_back({podSet.name, podSet.count, {}, podSet.total});
      reserve(wl, queueName, json::object(), unassigned);
      ++pass.holding;
      return;
    }
    const json& cq = *pass.clusterQueues.at(p.clusterQueue);
    if (const auto& inactive = pass.inactive.at(p.clusterQueue); !inactive.empty()) {
      // Kueue's scheduler skips the Workloads of an inactive ClusterQueue, and its Workload
      // controller says so on each pending one. An AdmissionCheck event brings them back.
      log::debug(logger(), "kueue-standin workload waits for its ClusterQueue's admission checks",
                 {{"cluster", cluster()},
                  {"namespace", nsOf(wl)},
                  {"workload", nameOf(wl)},
                  {"clusterQueue", p.clusterQueue},
                  {"admissionCheck", inactive}});
      markInadmissible(wl, "ClusterQueue " + p.clusterQueue + " is inactive");
      return;
    }
    if (overCapacity(pass)) return;

    const auto& queue = *pass.snapshot.queue(p.clusterQueue);
    auto& counts = pass.counts[p.clusterQueue];
    const auto candidates = preemptionCandidates(p, queue, counts);
    // SimulatePreemption for one flavor and resource: room once every candidate using it is gone.
    const kueue_quota::PreemptionOracle mayPreempt = [&](const kueue_quota::FlavorResource& fr,
                                                         kueue_quota::Milli amount) {
      auto without = pass.snapshot;
      for (const auto& [candidate, holder] : candidates)
        if (candidate.usage.count(fr) != 0) without.remove(queue.name, candidate.usage);
      return !candidates.empty() && amount <= without.available(queue, fr);
    };
    const auto assignment =
        kueue_quota::assignFlavors(pass.snapshot, queue, kueue_quota::podSetRequests(wl), mayPreempt);
    switch (assignment.mode) {
      case kueue_quota::Mode::Fit: {
        const bool admitted = reserve(wl, p.clusterQueue, cq, assignment);
        pass.snapshot.add(p.clusterQueue, assignment.usage);
        ++pass.holding;
        add(counts.reserved, assignment.usage);
        ++counts.reservingWorkloads;
        --counts.pendingWorkloads;
        if (admitted) {
          add(counts.admitted, assignment.usage);
          ++counts.admittedWorkloads;
        }
        return;
      }
      case kueue_quota::Mode::NoFit: markPending(wl, assignment.noFitReason, assignment.message); return;
      case kueue_quota::Mode::Preempt: preempt(wl, queue, assignment, candidates, pass); return;
    }
  }

  // Options::capacity, not Kueue's: a Workload over it stays pending without a word.
  bool overCapacity(const Pass& pass) const {
    return !manager() && options.capacity > 0 && pass.holding >= options.capacity;
  }

  // The Workloads holding quota in the ClusterQueue that the pending one may preempt: with
  // spec.preemption.withinClusterQueue LowerPriority, those of strictly lower priority.
  std::vector<std::pair<kueue_quota::Candidate, const json*>> preemptionCandidates(
      const Pending& p, const kueue_quota::ClusterQueue& queue, const QueueCounts& counts) const {
    std::vector<std::pair<kueue_quota::Candidate, const json*>> out;
    if (queue.withinClusterQueue != "LowerPriority") return out;
    for (const auto* wl : counts.holding) {
      if (priorityOf(*wl) >= p.priority) continue;
      const auto* reserved = findCondition(*wl, kQuotaReserved);
      out.push_back({{nsOf(*wl) + "/" + nameOf(*wl), kueue_quota::admittedUsage(*wl), conditionTrue(*wl, kEvicted),
                      priorityOf(*wl), reserved != nullptr ? reserved->value("lastTransitionTime", "") : ""},
                     wl});
    }
    return out;
  }

  // Kueue's scheduler on a Workload that fits only by preemption (processEntry): no candidates
  // -> it waits for quota; a closed preemption gate -> blocked (KEP-8303, MultiKueue's
  // orchestrated preemption); targets another preemptor of this pass claimed -> it waits;
  // else the targets are evicted and it waits for them, its request counted for the rest of
  // the pass so that no one behind it takes the room.
  void preempt(const json& wl, const kueue_quota::ClusterQueue& queue, const kueue_quota::Assignment& assignment,
               const std::vector<std::pair<kueue_quota::Candidate, const json*>>& candidates, Pass& pass) {
    std::vector<kueue_quota::Candidate> usable;  // those using a resource that needs preemption
    std::vector<const json*> usableWorkloads;
    for (const auto& [candidate, candidateWl] : candidates) {
      const bool uses = std::any_of(assignment.needPreemption.begin(), assignment.needPreemption.end(),
                                    [&](const auto& fr) { return candidate.usage.count(fr) != 0; });
      if (!uses) continue;
      usable.push_back(candidate);
      usableWorkloads.push_back(candidateWl);
    }
    const auto targets = kueue_quota::preemptionTargets(pass.snapshot, queue, assignment.usage, usable);
    if (targets.empty()) {
      markPending(wl, kWaitingForQuota, assignment.message);
      return;
    }
    if (options.orchestratedPreemption && hasClosedPreemptionGate(wl)) {
      markPending(wl, kAdmissionGated, kGatedMessage, /*blockedOnGates=*/true);
      return;
    }
    for (const auto t : targets) {
      if (pass.claimed.count(usable[t].key) != 0) {
        markPending(wl, kWaitingForQuota, kOverlappingTargetsMessage);
        return;
      }
    }
    for (const auto t : targets) pass.claimed.insert(usable[t].key);
    pass.snapshot.add(queue.name, assignment.usage);
    for (const auto t : targets)
      if (!usable[t].evicted) evictForPreemption(*usableWorkloads[t], wl, queue);
    markPending(wl, kWaitingForPreemptedWorkloads,
                assignment.message + ". Pending the preemption of " + std::to_string(targets.size()) + " workload(s)");
  }

  // Kueue's preemption of one target (Preemptor.IssuePreemptions): Preempted=True reason
  // InClusterQueue, then evicted (reason Preempted) with the same message.
  void evictForPreemption(const json& victim, const json& preemptor, const kueue_quota::ClusterQueue& queue) {
    const auto uid = json_fields::metadataString(preemptor, "uid");
    const auto jobUid = json_fields::stringMember(
        json_fields::objectMember(json_fields::objectMember(preemptor, "metadata"), "labels"), kJobUidLabel);
    const auto message = "Preempted to accommodate a workload (UID: " + (uid.empty() ? "UNKNOWN" : uid) +
                         ", JobUID: " + (jobUid.empty() ? "UNKNOWN" : jobUid) +
                         ") due to prioritization in the ClusterQueue; preemptor path: " + queue.path() +
                         "; preemptee path: " + queue.path();
    const auto stamp = api.now();
    json prepared = victim;
    setCondition(prepared["status"], kPreempted, "True", kInClusterQueue, message, stamp, std::nullopt);
    writeStatus(victim, evictedStatus(prepared, "Preempted", message, stamp));
    log::info(logger(), "kueue-standin preempted",
              {{"cluster", cluster()},
               {"namespace", nsOf(victim)},
               {"workload", nameOf(victim)},
               {"preemptor", nsOf(preemptor) + "/" + nameOf(preemptor)},
               {"clusterQueue", queue.name}});
  }

  // A pending Workload's status as Kueue's scheduler leaves it (requeueAndUpdate,
  // UnsetQuotaReservationWithCondition): QuotaReserved=False with the reason and message, and
  // Admitted=False NoReservation; a gated preemptor also BlockedOnPreemptionGates=True. Written
  // only when it changes.
  void markPending(const json& wl, const std::string& reason, const std::string& message, bool blockedOnGates = false) {
    const auto stamp = api.now();
    const auto generation = generationOf(wl);
    const json current = wl.value("status", json::object());
    json status = current;
    setCondition(status, kQuotaReserved, "False", reason, message, stamp, generation);
    status.erase("admission");
    setCondition(status, kAdmitted, "False", kNoReservation, "The workload has no reservation", stamp, generation);
    if (blockedOnGates)
      setCondition(status, kBlockedOnPreemptionGates, "True", kPreemptionGated, message, stamp, generation);
    if (status == current) return;
    writeStatus(wl, std::move(status));
    log::debug(logger(), "kueue-standin workload pending",
               {{"cluster", cluster()},
                {"namespace", nsOf(wl)},
                {"workload", nameOf(wl)},
                {"reason", reason},
                {"message", message}});
  }

  // Kueue's quota reservation (SetQuotaReservation): status.admission, QuotaReserved=True, a
  // standing eviction, preemption or gate block turned into history; on a manager one Pending
  // admission check state per check the ClusterQueue lists. Admitted at once when no check is
  // pending (always on a worker). Returns whether it was admitted.
  bool reserve(const json& wl, const std::string& cqName, const json& cq, const kueue_quota::Assignment& assignment) {
    const auto stamp = api.now();
    const auto generation = generationOf(wl);
    json status = wl.value("status", json::object());
    json podSets = json::array();
    for (const auto& podSet : assignment.podSets) {
      json usage = json::object();
      for (const auto& [resource, milli] : podSet.usage) usage[resource] = quantity::formatMilli(milli);
      podSets.push_back(
          {{"name", podSet.name}, {"count", podSet.count}, {"flavors", podSet.flavors}, {"resourceUsage", usage}});
    }
    status["admission"] = {{"clusterQueue", cqName}, {"podSetAssignments", podSets}};
    setCondition(status, kQuotaReserved, "True", "QuotaReserved", "Quota reserved in ClusterQueue " + cqName, stamp,
                 generation);
    for (const auto* type : {kEvicted, kPreempted, kBlockedOnPreemptionGates})
      resetActiveCondition(status, wl, type, "QuotaReserved", stamp, generation);

    bool checksPending = false;
    if (manager()) {
      // One state per check the ClusterQueue lists; a state already there (reset to Pending by
      // an eviction, with its retryCount) is kept.
      json states = json::array();
      const auto& existing = json_fields::arrayMember(status, "admissionChecks");
      for (const auto& name : checkNamesOf(cq)) {
        auto it =
            std::find_if(existing.begin(), existing.end(), [&](const json& s) { return s.value("name", "") == name; });
        states.push_back(
            it != existing.end()
                ? *it
                : json{{"name", name}, {"state", "Pending"}, {"lastTransitionTime", stamp}, {"message", ""}});
        checksPending = checksPending || states.back().value("state", "") != "Ready";
      }
      if (states.empty()) {
        status.erase("admissionChecks");
      } else {
        status["admissionChecks"] = states;
      }
    }
    if (!checksPending)
      setCondition(status, kAdmitted, "True", "Admitted", "The workload is admitted", stamp, generation);
    writeStatus(wl, status);
    log::info(logger(), "kueue-standin reserved quota",
              {{"cluster", cluster()},
               {"namespace", nsOf(wl)},
               {"workload", nameOf(wl)},
               {"clusterQueue", cqName},
               {"admitted", !checksPending}});
    return !checksPending;
  }

  // The ClusterQueue status Kueue's ClusterQueue controller writes (updateCqStatusIfChanged,
  // Cache.Usage): per flavor of each resource group, per covered resource (by name), the total
  // reserved (flavorsReservation) and admitted (flavorsUsage), and what of it is borrowed from the
  // cohort; and the Workloads pending, reserving and admitted. Written only when it changes.
  void writeClusterQueueStatuses(const std::vector<json>& clusterQueues, Pass& pass) {
    for (const auto& cq : clusterQueues) {
      const auto name = nameOf(cq);
      const auto& queue = *pass.snapshot.queue(name);
      const auto& counts = pass.counts[name];
      const json current = cq.value("status", json::object());
      json status = current;
      for (const auto& [field, amounts] :
           {std::pair<const char*, const kueue_quota::Amounts*>{"flavorsReservation", &counts.reserved},
            {"flavorsUsage", &counts.admitted}}) {
        auto usage = flavorUsage(queue, *amounts);
        if (usage.empty()) {
          status.erase(field);
        } else {
          status[field] = std::move(usage);
        }
      }
      status["pendingWorkloads"] = counts.pendingWorkloads;
      status["reservingWorkloads"] = counts.reservingWorkloads;
      status["admittedWorkloads"] = counts.admittedWorkloads;
      if (status == current) continue;
      try {
        api.update(clusterQueueRef(name, "status"), statusWrite(cq, std::move(status)), asStandIn());
      } catch (const ApiError& e) {
        if (e.code() != 409 && e.code() != 404) throw;
        pass.clean = false;
      }
    }
  }

  static json flavorUsage(const kueue_quota::ClusterQueue& queue, const kueue_quota::Amounts& amounts) {
    json out = json::array();
    for (const auto& group : queue.resourceGroups) {
      auto resources = group.coveredResources;
      std::sort(resources.begin(), resources.end());
      for (const auto& flavor : group.flavors) {
        json usage = json::array();
        for (const auto& resource : resources) {
          const kueue_quota::FlavorResource fr{flavor, resource};
          const auto used = amounts.count(fr) != 0 ? amounts.at(fr) : 0;
          const auto quota = queue.quotas.find(fr);
          const auto nominal = quota != queue.quotas.end() ? quota->second.nominal : 0;
          // Kueue writes borrowed as 0 outside a cohort.
          const auto borrowed = queue.cohort.empty() ? 0 : std::max<kueue_quota::Milli>(0, used - nominal);
          usage.push_back({{"name", resource},
                           {"total", kueue_quota::formatQuantity(resource, used)},
                           {"borrowed", kueue_quota::formatQuantity(resource, borrowed)}});
        }
        out.push_back({{"name", flavor}, {"resources", usage}});
      }
    }
    return out;
  }

  void admit(const json& wl) {
    json status = wl.value("status", json::object());
    setCondition(status, kAdmitted, "True", "Admitted", "The workload is admitted", api.now(), generationOf(wl));
    writeStatus(wl, status);
    log::info(logger(), "kueue-standin admitted",
              {{"cluster", cluster()}, {"namespace", nsOf(wl)}, {"workload", nameOf(wl)}});
  }

  // Kueue's eviction (evict.Evict): Evicted=True, MultiKueue's placement fields cleared, every
  // check not Pending reset to Pending (retryCount + 1 for a Retry), a BlockedOnPreemptionGates
  // lifted and every preemption gate closed again. The reservation is the job integration's to
  // release once the job has stopped (jobframework step 18), so Kueue core keeps it.
  // `prepare` changes the status written too (Kueue's WithCustomPrepare: the requeue state).
  void evictWorkload(const json& wl, const std::string& reason, const std::string& message,
                     const std::function<void(json& status)>& prepare = nullptr) {
    json status = evictedStatus(wl, reason, message, api.now());
    if (prepare) prepare(status);
    writeStatus(wl, status);
    log::info(logger(), "kueue-standin evicted",
              {{"cluster", cluster()},
               {"namespace", nsOf(wl)},
               {"workload", nameOf(wl)},
               {"reason", reason},
               {"message", message}});
  }

  static json evictedStatus(const json& wl, const std::string& reason, const std::string& message,
                            const std::string& stamp) {
    json status = wl.value("status", json::object());
    setCondition(status, kEvicted, "True", reason, message, stamp, generationOf(wl));
    status.erase("clusterName");
    status.erase("nominatedClusterNames");
    if (conditionTrue(wl, kBlockedOnPreemptionGates))
      setCondition(status, kBlockedOnPreemptionGates, "False", reason, message, stamp, generationOf(wl));
    if (status.contains("preemptionGates") && status["preemptionGates"].is_array())
      for (auto& gate : status["preemptionGates"]) {
        gate["position"] = "Closed";
        gate["lastTransitionTime"] = stamp;
      }
    if (status.contains("admissionChecks") && status["admissionChecks"].is_array()) {
      for (auto& check : status["admissionChecks"]) {
        const auto old = check.value("state", "");
        if (old == "Pending") continue;
        if (old == "Retry") check["retryCount"] = check.value("retryCount", 0) + 1;
        check["state"] = "Pending";
        check["lastTransitionTime"] = stamp;
        check["message"] = "Reset to Pending after eviction. Previously: " + old;
      }
    }
    return status;
  }

  // Rejected check (manager) or DeactivationTarget (worker, set by the dispatcher): Kueue
  // records DeactivationTarget and sets spec.active=false; the next pass evicts the inactive
  // Workload (reason Deactivated).
  void deactivate(const json& wl, const std::vector<json>& rejected) {
    json current = wl;
    if (!rejected.empty() && !conditionTrue(wl, kDeactivationTarget)) {
      json status = wl.value("status", json::object());
      setCondition(status, kDeactivationTarget, "True", "AdmissionCheck",
                   "AdmissionCheck in Rejected state: " + checkList(rejected), api.now(), generationOf(wl));
      current =
          *api.update(workloadRef(nsOf(wl), nameOf(wl), "status"), statusWrite(wl, std::move(status)), asStandIn());
    }
    current["spec"]["active"] = false;
    writeMain(current, workloadRef(nsOf(wl), nameOf(wl)));
    log::info(logger(), "kueue-standin deactivated",
              {{"cluster", cluster()}, {"namespace", nsOf(wl)}, {"workload", nameOf(wl)}});
  }
};

KueueStandIn::KueueStandIn(ClusterApi& api, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(api, clock, std::move(options))) {}

KueueStandIn::~KueueStandIn() { stop(); }

void KueueStandIn::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->running) return;
  impl_->running = true;
  impl_->stopping = false;
  impl_->worker = std::thread([this] {
    nameThisThread("kueue-" + impl_->cluster());
    impl_->run();
  });
  log::info(logger(), "kueue-standin started",
            {{"cluster", impl_->cluster()}, {"role", impl_->manager() ? "manager" : "worker"}});
}

void KueueStandIn::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->running) return;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->worker.join();
  std::lock_guard lock(impl_->mutex);
  impl_->running = false;
  for (auto& slot : impl_->slots) slot.watch.reset();
}

void KueueStandIn::evict(const std::string& namespace_, const std::string& name) {
  for (int attempt = 0; attempt < kEvictAttempts; ++attempt) {
    auto wl = impl_->api.get(workloadRef(namespace_, name));
    if (!Impl::holdsQuota(wl) || conditionTrue(wl, kEvicted))
      throw Error("kueue stand-in on cluster " + impl_->cluster() + ": cannot evict Workload " + namespace_ + "/" +
                  name +
                  ": it holds no quota or is being evicted already (QuotaReserved is not True, or Evicted is "
                  "True, or it is Finished or being deleted); wait until it is admitted");
    try {
      impl_->evictWorkload(wl, "Preempted", "Preempted by the sandbox's Kueue stand-in (KueueStandIn::evict)");
      poke();
      return;
    } catch (const ApiError& e) {
      if (e.code() != 409) throw;  // stale read: read again
    }
  }
  throw Error("kueue stand-in on cluster " + impl_->cluster() + ": evicting Workload " + namespace_ + "/" + name +
              " kept conflicting with other writers " + std::to_string(kEvictAttempts) + " times; try again");
}

void KueueStandIn::poke() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->poked = true;
  }
  impl_->wake.notify_all();
}

bool KueueStandIn::idle() const {
  const auto revision = impl_->api.store().resourceVersion();
  const auto now = impl_->clock.now();
  std::lock_guard lock(impl_->mutex);
  if (!impl_->queue.empty() || !impl_->retry.empty() || impl_->busy || impl_->scheduleDue || impl_->scheduleFailed ||
      impl_->quietRevision < revision)
    return false;
  for (const auto& [key, at] : impl_->readmitAt)
    if (at <= now) return false;
  return true;
}

std::size_t KueueStandIn::admittedCount() const { return impl_->countHoldingQuota(); }

}  // namespace mka::standin
