#include "mka/standin/kueue_standin.h"

#include <algorithm>
#include <compare>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

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

// Conflicts are retried on the next poll; a key that keeps failing for another reason is
// retried too (the stand-in must converge, as a controller does), but logged each time.
constexpr int kEvictAttempts = 10;

ResourceRef workloadRef(const std::string& ns, const std::string& name = "", const std::string& sub = "") {
  return {kKueueGroup, kKueueVersion, "workloads", ns, name, sub};
}
ResourceRef localQueueRef(const std::string& ns, const std::string& name) {
  return {kKueueGroup, kKueueVersion, "localqueues", ns, name, ""};
}
ResourceRef clusterQueueRef(const std::string& name) {
  return {kKueueGroup, kKueueVersion, "clusterqueues", "", name, ""};
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
// the status changes.
void setCondition(json& status, const std::string& type, const std::string& value, const std::string& reason,
                  const std::string& message, const std::string& now, std::int64_t generation) {
  auto& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (auto& c : conditions) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = now;
    c["status"] = value;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = generation;
    return;
  }
  conditions.push_back({{"type", type},
                        {"status", value},
                        {"reason", reason},
                        {"message", message},
                        {"lastTransitionTime", now},
                        {"observedGeneration", generation}});
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

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Key> queue;
  std::set<Key> queued;
  std::set<Key> retry;                 // failed (conflict): tried again next round
  std::map<Key, TimePoint> readmitAt;  // evicted Workloads waiting for readmitDelay
  std::set<Key> waitingForCapacity;    // worker: Workloads over capacity, oldest first on retry
  std::uint64_t quietRevision = 0;     // store revision every event up to which was handled
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
      std::unique_lock lock(mutex);
      const bool retrying = !retry.empty();
      if (!events && queue.empty() && !retrying) quietRevision = revision;
      // After work, look again at once: what was written is already waiting in the watches.
      // A failed key waits a poll interval, so a lasting error does not spin.
      if (!poked && !stopping && (!events || retrying)) wake.wait_for(lock, options.pollInterval);
      poked = false;
      for (const auto& key : retry) enqueueLocked(key);
      retry.clear();
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
        onEvent(slot, *event->object);
      }
    }
    return any;
  }

  void onEvent(const WatchSlot& slot, const json& object) {
    const auto ns = nsOf(object);
    const auto name = nameOf(object);
    // Read before taking the lock: the API is never called under it.
    const auto workloads = slot.kind == WatchSlot::Kind::Queue ? listWorkloads() : std::vector<json>{};
    std::lock_guard lock(mutex);
    switch (slot.kind) {
      case WatchSlot::Kind::Workload:
        enqueueLocked({ns, name});
        // A Workload changing may free capacity.
        for (const auto& waiting : waitingForCapacity) enqueueLocked(waiting);
        break;
      case WatchSlot::Kind::Queue:
        // A LocalQueue, ClusterQueue or AdmissionCheck appearing or changing may unblock any
        // Workload.
        for (const auto& wl : workloads) enqueueLocked({nsOf(wl), nameOf(wl)});
        break;
    }
  }

  void enqueueDueTimers() {
    const auto now = clock.now();
    std::lock_guard lock(mutex);
    for (auto it = readmitAt.begin(); it != readmitAt.end();) {
      if (it->second <= now) {
        enqueueLocked(it->first);
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

  // Worker capacity, oldest first (creationTimestamp, then name), as Kueue's FIFO queues
  // order: the Workload gets a free slot only when fewer older ones are waiting for one.
  bool fitsCapacity(const Key& key, const json& wl) {
    const auto all = listWorkloads();
    const auto holding = static_cast<std::size_t>(std::count_if(all.begin(), all.end(), holdsQuota));
    if (holding >= options.capacity) return false;
    const auto order = [](const json& o) {
      return std::make_pair(stringAtPointer(o, json::json_pointer("/metadata/creationTimestamp")),
                            nsOf(o) + "/" + nameOf(o));
    };
    std::set<Key> waiting;
    {
      std::lock_guard lock(mutex);
      waiting = waitingForCapacity;
    }
    std::size_t older = 0;
    for (const auto& other : all) {
      const Key otherKey{nsOf(other), nameOf(other)};
      if (otherKey != key && waiting.count(otherKey) != 0 && !holdsQuota(other) && !deleting(other) &&
          !conditionTrue(other, kFinished) && order(other) < order(wl))
        ++older;
    }
    return older < options.capacity - holding;
  }

  // ---- Workloads ----------------------------------------------------------------------------

  void reconcileWorkload(const Key& key) {
    const auto found = getIfExists(api, workloadRef(key.namespace_, key.name));
    if (!found) {
      std::lock_guard lock(mutex);
      waitingForCapacity.erase(key);
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
      // The checks keep their states (a Rejected one tells the dispatcher to leave it alone).
      if (reserved && !evicted) evictWorkload(wl, "Deactivated", deactivationMessage(wl), false);
      return;
    }
    if (!reserved) {
      reserve(key, wl);
      return;
    }
    if (evicted) return;  // reserved until the job integration has stopped the job and released it
    if (manager()) {
      const auto retry = checksIn(wl, "Retry");
      if (!retry.empty()) {
        evictWorkload(wl, "AdmissionCheck", retryMessage(retry));
        return;
      }
    }
    if (!conditionTrue(wl, kAdmitted) && (!manager() || allChecksReady(wl))) admit(wl);
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
  static std::string deactivationMessage(const json& wl) {
    const auto* target = findCondition(wl, kDeactivationTarget);
    if (target != nullptr) return "The workload is deactivated due to " + target->value("message", "");
    return "The workload is deactivated";
  }

  void writeStatus(const json& wl, json status) {
    api.update(workloadRef(nsOf(wl), nameOf(wl), "status"), statusWrite(wl, std::move(status)), asStandIn());
  }

  void writeMain(const json& object, const ResourceRef& ref) { api.update(ref, object, asStandIn()); }

  // The ClusterQueue the Workload's LocalQueue points to; "" when either is missing.
  std::string clusterQueueOf(const json& wl, json* clusterQueue) const {
    const auto queueName = stringAtPointer(wl, json::json_pointer("/spec/queueName"));
    if (queueName.empty()) return "";
    auto lq = getIfExists(api, localQueueRef(nsOf(wl), queueName));
    if (!lq) return "";
    const auto cqName = stringAtPointer(*lq, json::json_pointer("/spec/clusterQueue"));
    if (cqName.empty()) return "";
    auto cq = getIfExists(api, clusterQueueRef(cqName));
    if (!cq) return "";
    if (clusterQueue != nullptr) *clusterQueue = std::move(*cq);
    return cqName;
  }

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

  void reserve(const Key& key, const json& wl) {
    const auto now = clock.now();
    if (const auto* evicted = findCondition(wl, kEvicted);
        evicted != nullptr && evicted->value("status", "") == "True" && options.readmitDelay.count() > 0) {
      const auto since = parseTime(evicted->value("lastTransitionTime", ""));
      const auto notBefore =
          since.value_or(now) + std::chrono::duration_cast<TimePoint::duration>(options.readmitDelay);
      if (now < notBefore) {
        std::lock_guard lock(mutex);
        readmitAt[key] = notBefore;
        return;
      }
    }
    json cq;
    auto cqName = clusterQueueOf(wl, &cq);
    if (cqName.empty()) {
      if (options.requireQueues) {
        log::debug(logger(), "kueue-standin workload waits for its queues",
                   {{"cluster", cluster()},
                    {"namespace", key.namespace_},
                    {"workload", key.name},
                    {"queue", stringAtPointer(wl, json::json_pointer("/spec/queueName"))}});
        return;  // a LocalQueue/ClusterQueue event brings it back
      }
      cqName = stringAtPointer(wl, json::json_pointer("/spec/queueName"));
    }
    if (const auto inactive = inactiveCheck(cq); !inactive.empty()) {
      // Kueue's scheduler skips the Workloads of an inactive ClusterQueue, and its Workload
      // controller says so on each pending one. An AdmissionCheck event brings them back.
      log::debug(logger(), "kueue-standin workload waits for its ClusterQueue's admission checks",
                 {{"cluster", cluster()},
                  {"namespace", key.namespace_},
                  {"workload", key.name},
                  {"clusterQueue", cqName},
                  {"admissionCheck", inactive}});
      markInadmissible(wl, "ClusterQueue " + cqName + " is inactive");
      return;
    }
    if (!manager() && options.capacity > 0 && !fitsCapacity(key, wl)) {
      std::lock_guard lock(mutex);
      waitingForCapacity.insert(key);
      return;
    }
    {
      std::lock_guard lock(mutex);
      waitingForCapacity.erase(key);
    }

    const auto stamp = api.now();
    const auto generation = generationOf(wl);
    json status = wl.value("status", json::object());
    json assignments = json::array();
    for (const auto& podSet : json_fields::arrayMember(json_fields::objectMember(wl, "spec"), "podSets"))
      assignments.push_back(assignFlavors(podSet, cq));
    status["admission"] = {{"clusterQueue", cqName}, {"podSetAssignments", assignments}};
    setCondition(status, kQuotaReserved, "True", "QuotaReserved", "Quota reserved in ClusterQueue " + cqName, stamp,
                 generation);
    // Kueue's SetQuotaReservation turns a standing eviction into history.
    if (const auto* evicted = findCondition(wl, kEvicted); evicted != nullptr && evicted->value("status", "") == "True")
      setCondition(status, kEvicted, "False", "QuotaReserved", "Previously: " + evicted->value("message", ""), stamp,
                   generation);

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
               {"namespace", key.namespace_},
               {"workload", key.name},
               {"clusterQueue", cqName},
               {"admitted", !checksPending}});
  }

  // Kueue's flavor assignment without quotas: each resource a pod of the set requests gets the
  // first flavor of the ClusterQueue's resource group covering it (Kueue takes the first whose
  // quota fits), and the set's usage is the pod's requests times its count. No ClusterQueue
  // (Options::requireQueues off) or no covering group: no flavor for that resource.
  static json assignFlavors(const json& podSet, const json& clusterQueue) {
    const auto count = podSet.value("count", 1);
    std::map<std::string, std::int64_t> perPod;  // thousandths
    const auto& podSpec = json_fields::objectMember(json_fields::objectMember(podSet, "template"), "spec");
    for (const auto& container : json_fields::arrayMember(podSpec, "containers")) {
      const auto& resources = json_fields::objectMember(container, "resources");
      json requests = json_fields::objectMember(resources, "limits");  // a limit alone is the request
      requests.update(json_fields::objectMember(resources, "requests"));
      for (const auto& [resource, value] : requests.items())
        if (value.is_string() || value.is_number())
          if (auto milli = quantity::parseMilli(value.is_string() ? value.get<std::string>() : value.dump()))
            perPod[resource] += *milli;
    }
    json flavors = json::object();
    json usage = json::object();
    const auto& groups = json_fields::arrayMember(json_fields::objectMember(clusterQueue, "spec"), "resourceGroups");
    for (const auto& [resource, milli] : perPod) {
      usage[resource] = quantity::formatMilli(milli * count);
      for (const auto& group : groups) {
        const auto& covered = json_fields::arrayMember(group, "coveredResources");
        const auto& groupFlavors = json_fields::arrayMember(group, "flavors");
        if (std::find(covered.begin(), covered.end(), json(resource)) == covered.end() || groupFlavors.empty())
          continue;
        flavors[resource] = groupFlavors.front().value("name", "");
        break;
      }
    }
    return {{"name", podSet.value("name", "main")}, {"count", count}, {"flavors", flavors}, {"resourceUsage", usage}};
  }

  void admit(const json& wl) {
    json status = wl.value("status", json::object());
    setCondition(status, kAdmitted, "True", "Admitted", "The workload is admitted", api.now(), generationOf(wl));
    writeStatus(wl, status);
    log::info(logger(), "kueue-standin admitted",
              {{"cluster", cluster()}, {"namespace", nsOf(wl)}, {"workload", nameOf(wl)}});
  }

  // Kueue's eviction (evict.Evict): Evicted=True, MultiKueue's placement fields cleared and
  // every check not Pending reset to Pending (retryCount + 1 for a Retry). The reservation is
  // the job integration's to release once the job has stopped (jobframework step 18), so Kueue
  // core keeps it.
  void evictWorkload(const json& wl, const std::string& reason, const std::string& message, bool resetChecks = true) {
    json status = evictedStatus(wl, reason, message, api.now(), resetChecks);
    writeStatus(wl, status);
    log::info(logger(), "kueue-standin evicted",
              {{"cluster", cluster()},
               {"namespace", nsOf(wl)},
               {"workload", nameOf(wl)},
               {"reason", reason},
               {"message", message}});
  }

  static json evictedStatus(const json& wl, const std::string& reason, const std::string& message,
                            const std::string& stamp, bool resetChecks) {
    json status = wl.value("status", json::object());
    setCondition(status, kEvicted, "True", reason, message, stamp, generationOf(wl));
    status.erase("clusterName");
    status.erase("nominatedClusterNames");
    if (resetChecks && status.contains("admissionChecks") && status["admissionChecks"].is_array()) {
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
  if (!impl_->queue.empty() || !impl_->retry.empty() || impl_->busy || impl_->quietRevision < revision) return false;
  for (const auto& [key, at] : impl_->readmitAt)
    if (at <= now) return false;
  return true;
}

std::size_t KueueStandIn::admittedCount() const { return impl_->countHoldingQuota(); }

}  // namespace mka::standin
