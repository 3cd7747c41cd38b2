#include "mka/app/job_report.h"

#include <algorithm>

#include "mka/api/conditions.h"
#include "mka/api/kueue.h"
#include "mka/api/views.h"
#include "mka/app/worker_client.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/quantity.h"
#include "mka/common/strings.h"
#include "mka/controller/object_reader.h"
#include "mka/integration/job_rules.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/capacity.h"

namespace mka::app {

using json_fields::arrayMember;
using json_fields::fieldAt;
using json_fields::objectMember;
using json_fields::stringMember;
using nlohmann::json;

namespace {

const api::GroupVersionKind kEventGvk{"", "v1", "Event"};

std::optional<Clock::TimePoint> timeAt(const json& object, std::string_view key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return parseRfc3339(it->get<std::string>());
}

std::vector<ConditionFact> conditionsOf(const json& object) {
  std::vector<ConditionFact> out;
  for (const auto& c : arrayMember(objectMember(object, "status"), "conditions"))
    out.push_back({stringMember(c, "type"), stringMember(c, "status"), stringMember(c, "reason"),
                   stringMember(c, "message"), timeAt(c, "lastTransitionTime")});
  return out;
}

const ConditionFact* conditionIn(const std::vector<ConditionFact>& conditions, std::string_view type) {
  for (const auto& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool isTrue(const std::vector<ConditionFact>& conditions, std::string_view type) {
  const auto* c = conditionIn(conditions, type);
  return c != nullptr && c->status == "True";
}

std::string keyOf(std::string_view ns, std::string_view name) { return std::string(ns) + "/" + std::string(name); }

std::string kindOnly(const jobkind::JobKind& kind) { return kind.gvk().kind; }

// The last `keep` Events about any of `objects` ({uid, "Kind/name"}) in `ns`, oldest first.
std::vector<EventFact> eventsAbout(kube::Client& client, const std::string& ns,
                                   const std::vector<std::pair<std::string, std::string>>& objects, std::size_t keep) {
  std::vector<EventFact> out;
  for (const auto& e : client.listAll(kEventGvk, ns)) {
    const auto& involved = objectMember(e, "involvedObject");
    const auto uid = stringMember(involved, "uid");
    const auto label = stringMember(involved, "kind") + "/" + stringMember(involved, "name");
    const bool about = std::any_of(objects.begin(), objects.end(), [&](const auto& o) {
      return (!uid.empty() && uid == o.first) || (uid.empty() && label == o.second);
    });
    if (!about) continue;
    EventFact fact{label, stringMember(e, "type"), stringMember(e, "reason"), stringMember(e, "message"), 1, {}};
    if (const auto count = e.find("count"); count != e.end() && count->is_number_integer())
      fact.count = count->get<std::int64_t>();
    fact.last = timeAt(e, "lastTimestamp");
    if (!fact.last) fact.last = timeAt(e, "eventTime");
    if (!fact.last) fact.last = timeAt(e, "firstTimestamp");
    out.push_back(std::move(fact));
  }
  std::stable_sort(out.begin(), out.end(), [](const EventFact& a, const EventFact& b) {
    return a.last.value_or(Clock::TimePoint{}) < b.last.value_or(Clock::TimePoint{});
  });
  if (out.size() > keep) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(keep));
  return out;
}

// The kind's finished rule: the integration's, else its built-in profile's, else none.
std::optional<config::IntegratedFramework> rulesOf(const jobkind::JobKind& kind) {
  if (kind.integration() != nullptr) return *kind.integration();
  return config::integrationProfile(kind.gvk());
}

// A job's phase as its finished rule reads it: the phase field, or the condition's reason
// (Tekton's Succeeded condition reads Running, Succeeded, Failed, ...).
std::string phaseOf(const json& job, const std::optional<config::IntegratedFramework>& rules) {
  if (!rules || !rules->finished) return "";
  const auto& rule = *rules->finished;
  if (rule.type == config::FinishedRule::Type::Phase) {
    const auto* phase = fieldAt(job, rule.phasePath);
    return phase != nullptr && phase->is_string() ? phase->get<std::string>() : "";
  }
  for (const auto& c : arrayMember(objectMember(job, "status"), "conditions"))
    if (stringMember(c, "type") == rule.conditionType) {
      const auto reason = stringMember(c, "reason");
      return reason.empty() ? rule.conditionType + "=" + stringMember(c, "status") : reason;
    }
  return "";
}

void setActive(WorkerFacts& worker, const ManagerIndex& index) {
  const auto it = index.clusterActive.find(worker.name);
  if (it == index.clusterActive.end()) return;
  worker.activeStatus = it->second.status;
  worker.activeReason = it->second.reason;
  worker.activeMessage = it->second.message;
  worker.activeSince = it->second.since;
}

// Each MultiKueueCluster's Active condition, else its last Event (ManagerIndex::clusterActive).
void indexClusterActive(kube::Client& manager, ManagerIndex& index) {
  bool anyWithout = false;
  for (const auto& [name, cluster] : index.clusters) {
    const auto* active = api::ObjectView(cluster).condition(api::condition::kActive);
    if (active == nullptr) {
      anyWithout = true;
      continue;
    }
    index.clusterActive[name] = {std::string(api::condition::kActive), stringMember(*active, "status"),
                                 stringMember(*active, "reason"), stringMember(*active, "message"),
                                 timeAt(*active, "lastTransitionTime")};
  }
  if (!anyWithout) return;
  // Events about a cluster-scoped object are in namespace default, as client-go records them.
  // The dispatch loop records one per change of the condition, each failure to connect with its
  // own message: the worker is unreachable since the first Warning after the last Normal.
  struct Seen {
    Clock::TimePoint first, last;
    ConditionFact fact;
  };
  std::map<std::string, std::vector<Seen>> seen;
  for (const auto& e : manager.listAll(kEventGvk, "default")) {
    const auto& involved = objectMember(e, "involvedObject");
    if (stringMember(involved, "kind") != "MultiKueueCluster") continue;
    const auto name = stringMember(involved, "name");
    const auto cluster = index.clusters.find(name);
    if (cluster == index.clusters.end() || index.clusterActive.contains(name)) continue;
    if (stringMember(involved, "uid") != api::ObjectView(cluster->second).uid()) continue;
    const auto last = timeAt(e, "lastTimestamp").value_or(Clock::TimePoint{});
    const auto first = timeAt(e, "firstTimestamp").value_or(last);
    seen[name].push_back(
        {first,
         last,
         {std::string(api::condition::kActive), stringMember(e, "type") == "Warning" ? "False" : "True",
          stringMember(e, "reason"), stringMember(e, "message"), first}});
  }
  for (auto& [name, events] : seen) {
    std::sort(events.begin(), events.end(), [](const Seen& a, const Seen& b) { return a.last < b.last; });
    auto fact = events.back().fact;
    for (auto it = events.rbegin(); it != events.rend() && it->fact.status == fact.status; ++it)
      fact.since = std::min(*fact.since, it->first);
    index.clusterActive[name] = std::move(fact);
  }
}

// The first resource the Workload requests more of than any flavor of `clusterQueue` has free.
void findShortage(const json& workload, const json& clusterQueue, JobFacts& facts) {
  multikueue::capacity::Resources needs;
  for (const auto& podSet : multikueue::capacity::podSetRequests(workload))
    for (const auto& [resource, amount] : podSet.total) needs[resource] += amount;
  const auto cq = multikueue::capacity::ClusterQueue::from(clusterQueue);
  for (const auto& [resource, amount] : needs) {
    std::int64_t best = 0;
    for (const auto& group : cq.groups) {
      if (std::find(group.resources.begin(), group.resources.end(), resource) == group.resources.end()) continue;
      for (const auto& flavor : group.flavors) {
        const auto it = cq.quotas.find({flavor, resource});
        if (it != cq.quotas.end()) best = std::max(best, it->second.nominal - it->second.reserved);
      }
    }
    if (amount > best) {
      facts.shortResource = resource;
      facts.shortNeeds = amount;
      facts.shortFree = std::max<std::int64_t>(0, best);
      return;
    }
  }
}

void readWorker(const json* cluster, const controller::ObjectReader& managerReader, const config::Configuration& cfg,
                const jobkind::JobKind& kind, const JobFacts& facts, const ReadOptions& options, WorkerFacts& worker) {
  worker.probed = true;
  if (cluster == nullptr) {
    worker.error = "no MultiKueueCluster " + worker.name + " on the manager";
    return;
  }
  auto connection = connectWorker(*cluster, managerReader, cfg, options.timeout, options.userAgent);
  if (!connection.client) {
    worker.error = connection.error;
    return;
  }
  auto& client = *connection.client;
  std::vector<std::pair<std::string, std::string>> about;
  try {
    try {
      const auto wl = client.get(api::kWorkloadGvk, facts.namespace_, facts.workloadName);
      worker.workloadFound = true;
      worker.workloadConditions = conditionsOf(wl);
      const api::WorkloadView view(wl);
      about.emplace_back(std::string(view.uid()), "Workload/" + facts.workloadName);
      worker.localQueue = keyOf(facts.namespace_, view.queueName());
      if (!view.quotaReserved() && !view.queueName().empty()) {
        try {
          client.get(api::kLocalQueueGvk, facts.namespace_, std::string(view.queueName()));
        } catch (const std::exception& e) {
          if (!kube::isNotFound(e)) throw;
          worker.localQueueMissing = true;
        }
      }
    } catch (const std::exception& e) {
      if (!kube::isNotFound(e)) throw;
    }
    worker.reached = true;
    try {
      const auto job = client.get(kind.gvk(), facts.namespace_, facts.name);
      worker.jobFound = true;
      const auto rules = rulesOf(kind);
      worker.jobPhase = phaseOf(job, rules);
      worker.jobSuspended = rules && rules->suspend && integration::isSuspended(job, *rules);
      worker.jobStatus = job.contains("status") ? job["status"] : json(nullptr);
      about.emplace_back(std::string(api::ObjectView(job).uid()), kindOnly(kind) + "/" + facts.name);
    } catch (const std::exception& e) {
      if (!kube::isNotFound(e) && !kube::isKindNotServed(e)) throw;
    }
    if (!about.empty()) worker.events = eventsAbout(client, facts.namespace_, about, options.events);
  } catch (const std::exception& e) {
    worker.error = errorText(e);
  }
}

}  // namespace

std::vector<jobkind::JobKind> configuredKinds(const config::Configuration& cfg) {
  auto kinds = jobkind::kindsOf(cfg);
  for (auto& integrated : jobkind::integratedKindsOf(cfg))
    if (std::none_of(kinds.begin(), kinds.end(), [&](const auto& k) { return k.is(integrated.gvk()); }))
      kinds.push_back(std::move(integrated));
  return kinds;
}

jobkind::JobKind resolveKind(const std::string& typed, const config::Configuration& cfg, kube::Client& manager) {
  const auto want = strings::toLower(typed);
  const auto kinds = configuredKinds(cfg);
  std::vector<std::string> names;
  for (const auto& kind : kinds) {
    const auto& gvk = kind.gvk();
    const auto lower = strings::toLower(gvk.kind);
    std::vector<std::string> spellings = {lower, lower + "." + gvk.group, strings::toLower(kind.name())};
    if (want.find('.') == std::string::npos || want.starts_with(lower + "s")) {
      try {
        const auto plural = manager.discovery().resourceFor(gvk).plural;
        spellings.push_back(plural);
        spellings.push_back(plural + "." + gvk.group);
      } catch (const std::exception&) {
        // A kind the manager does not serve is still matched by its Kind.
      }
    }
    if (std::find(spellings.begin(), spellings.end(), want) != spellings.end()) return kind;
    names.push_back(kind.name());
  }
  throw Error("kind " + typed + ": not a configured kind (configured: " +
              (names.empty() ? std::string("none") : strings::join(names, ", ")) +
              "): name one of them, or pass the adapter's configuration with --config");
}

ManagerIndex indexManager(kube::Client& manager, const std::string& ns) {
  ManagerIndex index;
  for (auto& wl : manager.listAll(api::kWorkloadGvk, ns)) {
    const api::ObjectView view(wl);
    for (const auto& owner : view.ownerReferences())
      if (owner.value("controller", false)) index.workloadsByOwner[stringMember(owner, "uid")] = wl;
    auto key = keyOf(view.namespace_(), view.name());  // before the move below empties `wl`
    index.workloadsByKey[std::move(key)] = std::move(wl);
  }
  for (const auto& lq : manager.listAll(api::kLocalQueueGvk, ns)) {
    const api::LocalQueueView view(lq);
    index.localQueues[keyOf(view.namespace_(), view.name())] = std::string(view.clusterQueue());
  }
  for (auto& cq : manager.listAll(api::kClusterQueueGvk, "")) {
    std::string name(api::ObjectView(cq).name());
    index.clusterQueues[std::move(name)] = std::move(cq);
  }
  try {
    for (auto& cluster : manager.listAll(api::kMultiKueueClusterGvk, "")) {
      std::string name(api::ObjectView(cluster).name());
      index.clusters[std::move(name)] = std::move(cluster);
    }
  } catch (const std::exception& e) {
    if (!kube::isKindNotServed(e)) throw;  // a single cluster: no MultiKueue objects
  }
  indexClusterActive(manager, index);
  return index;
}

JobFacts factsOf(const json& job, const jobkind::JobKind& kind, const ManagerIndex& index) {
  const api::ObjectView view(job);
  JobFacts facts;
  facts.kind = kind.name();
  facts.namespace_ = std::string(view.namespace_());
  facts.name = std::string(view.name());
  facts.found = true;
  facts.created = timeAt(objectMember(job, "metadata"), "creationTimestamp");
  facts.markerField = kind.managedByField();
  facts.marker = kind.managedByValue(job).value_or("");
  facts.queue = std::string(view.label(api::kQueueNameLabel));

  const json* workload = nullptr;
  if (const auto it = index.workloadsByOwner.find(std::string(view.uid())); it != index.workloadsByOwner.end())
    workload = &it->second;
  auto prebuilt = std::string(view.label(api::kPrebuiltWorkloadNameKey));
  if (prebuilt.empty()) prebuilt = std::string(view.annotation(api::kPrebuiltWorkloadNameKey));
  if (workload == nullptr && !prebuilt.empty())
    if (const auto it = index.workloadsByKey.find(keyOf(facts.namespace_, prebuilt)); it != index.workloadsByKey.end())
      workload = &it->second;

  const auto queue = workload != nullptr ? std::string(api::WorkloadView(*workload).queueName()) : facts.queue;
  if (!queue.empty()) {
    const auto lq = index.localQueues.find(keyOf(facts.namespace_, queue));
    facts.localQueueMissing = lq == index.localQueues.end();
    if (!facts.localQueueMissing) facts.clusterQueue = lq->second;
  }
  if (workload == nullptr) return facts;

  const api::WorkloadView wl(*workload);
  facts.workloadName = std::string(wl.name());
  facts.workloadConditions = conditionsOf(*workload);
  for (const auto& check : wl.admissionChecks())
    facts.checks.push_back({stringMember(check, "name"), stringMember(check, "state"), stringMember(check, "message"),
                            timeAt(check, "lastTransitionTime")});
  if (!wl.admittedClusterQueue().empty()) facts.clusterQueue = std::string(wl.admittedClusterQueue());
  facts.nominated = wl.nominatedClusterNames();
  facts.chosen = std::string(wl.clusterName());
  if (!wl.quotaReserved() && !facts.clusterQueue.empty()) {
    const auto cq = index.clusterQueues.find(facts.clusterQueue);
    facts.clusterQueueMissing = cq == index.clusterQueues.end();
    // A Workload whose quantities do not parse is one Kueue's webhook refuses: Kueue's own
    // QuotaReserved message (the sentence's fallback) says more than a shortage could.
    if (!facts.clusterQueueMissing) {
      try {
        findShortage(*workload, cq->second, facts);
      } catch (const Error&) {
        facts.shortResource.clear();
      }
    }
  }
  const auto addWorker = [&](const std::string& name) {
    WorkerFacts worker;
    worker.name = name;
    setActive(worker, index);
    facts.workers.push_back(std::move(worker));
  };
  if (!facts.chosen.empty()) {
    addWorker(facts.chosen);
  } else {
    for (const auto& name : facts.nominated) addWorker(name);
  }
  return facts;
}

JobFacts readJob(kube::Client& manager, const config::Configuration& cfg, const jobkind::JobKind& kind,
                 const std::string& ns, const std::string& name, const ReadOptions& options) {
  json job;
  try {
    job = manager.get(kind.gvk(), ns, name);
  } catch (const std::exception& e) {
    if (!kube::isNotFound(e)) throw;
    JobFacts facts;
    facts.kind = kind.name();
    facts.namespace_ = ns;
    facts.name = name;
    return facts;
  }
  const auto index = indexManager(manager, ns);
  auto facts = factsOf(job, kind, index);
  std::vector<std::pair<std::string, std::string>> about = {
      {std::string(api::ObjectView(job).uid()), kindOnly(kind) + "/" + name}};
  if (!facts.workloadName.empty())
    about.emplace_back(std::string(api::ObjectView(index.workloadsByKey.at(keyOf(ns, facts.workloadName))).uid()),
                       "Workload/" + facts.workloadName);
  facts.events = eventsAbout(manager, ns, about, options.events);
  if (!options.readWorkers) return facts;
  controller::ClientReader reader(manager);
  for (auto& worker : facts.workers) {
    const auto it = index.clusters.find(worker.name);
    readWorker(it == index.clusters.end() ? nullptr : &it->second, reader, cfg, kind, facts, options, worker);
  }
  return facts;
}

std::string shortDuration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto s = std::max<std::int64_t>(0, duration_cast<seconds>(d).count());
  const auto part = [](std::int64_t big, const char* bigUnit, std::int64_t small, const char* smallUnit) {
    return std::to_string(big) + bigUnit + (small == 0 ? std::string() : std::to_string(small) + smallUnit);
  };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return part(s / 60, "m", s % 60, "s");
  if (s < 86400) return part(s / 3600, "h", s % 3600 / 60, "m");
  return part(s / 86400, "d", s % 86400 / 3600, "h");
}

Verdict verdictOf(const JobFacts& f, const config::Configuration& cfg, Clock::TimePoint now) {
  const auto since = [&](const std::optional<Clock::TimePoint>& t) { return shortDuration(t ? now - *t : now - now); };
  const auto lostTimeout = " (workerLostTimeout " + shortDuration(cfg.multiKueue.workerLostTimeout) + ")";
  const auto lqKey = keyOf(f.namespace_, f.queue);
  if (!f.found)
    return {"NotFound", "", "NotFound: " + f.kind + " " + keyOf(f.namespace_, f.name) + " is not on the manager"};
  if (f.workloadName.empty()) {
    if (f.queue.empty())
      return {"NotQueued", "",
              "NotQueued: no " + std::string(api::kQueueNameLabel) + " label, so Kueue does not queue it"};
    if (f.localQueueMissing) return {"NotQueued", "", "NotQueued: LocalQueue " + lqKey + " missing on the manager"};
    return {"NotQueued", "",
            "NotQueued: no Workload yet in LocalQueue " + lqKey +
                " (the job integration makes it: the job's Events say why not)"};
  }
  if (const auto* done = conditionIn(f.workloadConditions, api::condition::kFinished);
      done != nullptr && done->status == "True") {
    const auto result = done->reason.empty() ? done->message : done->reason;
    return {"Finished", f.chosen, f.chosen.empty() ? "Finished: " + result : "Finished on " + f.chosen + ": " + result};
  }
  for (const auto& check : f.checks)
    if (check.state == api::check_state::kRejected)
      return {"Rejected", "", "Rejected by admission check " + check.name + ": " + check.message};
  if (!isTrue(f.workloadConditions, api::condition::kQuotaReserved)) {
    if (f.localQueueMissing) return {"Pending", "", "Pending: LocalQueue " + lqKey + " missing on the manager"};
    if (f.clusterQueueMissing)
      return {"Pending", "", "Pending: ClusterQueue " + f.clusterQueue + " missing on the manager"};
    if (!f.shortResource.empty())
      return {"Pending", "",
              "Pending: ClusterQueue " + f.clusterQueue + " on the manager has no room: needs " +
                  quantity::formatMilli(f.shortNeeds) + " " + f.shortResource + ", " +
                  quantity::formatMilli(f.shortFree) + " free"};
    const auto* reserved = conditionIn(f.workloadConditions, api::condition::kQuotaReserved);
    if (reserved != nullptr && !reserved->message.empty())
      return {"Pending", "", "Pending: ClusterQueue " + f.clusterQueue + " on the manager: " + reserved->message};
    return {"Pending", "",
            "Pending: waiting for Kueue on the manager to reserve quota in ClusterQueue " + f.clusterQueue};
  }
  const auto* admitted = conditionIn(f.workloadConditions, api::condition::kAdmitted);
  // Admitted without a worker: no MultiKueue check (a single cluster, a queue without one).
  if (f.chosen.empty() && admitted != nullptr && admitted->status == "True")
    return {
        "Running", "",
        "Running on the manager for " + since(admitted->since) + " (admitted in ClusterQueue " + f.clusterQueue + ")"};
  if (f.chosen.empty()) {
    std::vector<std::string> notes;
    for (const auto& w : f.workers) {
      if (w.probed && !w.reached) {
        notes.push_back(w.name + ": unreachable: " + w.error);
      } else if (!w.probed && w.activeStatus == "False") {
        notes.push_back(w.name + ": inactive since " + since(w.activeSince) + " (" + w.activeReason + ")");
      } else if (w.probed && !w.workloadFound) {
        notes.push_back(w.name + ": no copy yet");
      } else if (w.localQueueMissing) {
        notes.push_back(w.name + ": LocalQueue " + w.localQueue + " missing");
      } else if (const auto* r = conditionIn(w.workloadConditions, api::condition::kQuotaReserved);
                 r != nullptr && r->status == "False" && !r->message.empty()) {
        notes.push_back(w.name + ": " + r->message);
      }
    }
    if (f.nominated.empty()) {
      std::string sentence = "Dispatching: no worker nominated yet";
      for (const auto& check : f.checks)
        if (!check.message.empty()) sentence += " (" + check.name + " " + check.state + ": " + check.message + ")";
      return {"Dispatching", "", sentence};
    }
    return {"Dispatching", "",
            "Dispatching: copies on " + strings::join(f.nominated, ", ") + "; none admitted yet" +
                (notes.empty() ? "" : " (" + strings::join(notes, "; ") + ")")};
  }
  const auto& w = f.workers.front();  // factsOf lists the chosen worker alone
  if (w.activeStatus == "False")
    return {"Waiting", w.name, "Waiting for " + w.name + ": unreachable since " + since(w.activeSince) + lostTimeout};
  if (w.probed && !w.reached)
    return {"Waiting", w.name, "Waiting for " + w.name + ": unreachable from here: " + w.error + lostTimeout};
  if (w.probed && !w.workloadFound)
    return {"Waiting", w.name,
            "Waiting for " + w.name + ": its Workload copy is gone; the dispatch loop dispatches the job again" +
                lostTimeout};
  std::optional<Clock::TimePoint> start =
      admitted != nullptr && admitted->status == "True" ? admitted->since : std::nullopt;
  if (!start)
    if (const auto* remote = conditionIn(w.workloadConditions, api::condition::kAdmitted)) start = remote->since;
  std::string sentence = "Running on " + w.name + " for " + since(start);
  if (w.probed && !w.jobFound) {
    sentence += " (job copy not created yet)";
  } else if (w.jobSuspended) {
    sentence += " (remote job suspended: the job integration there resumes it once its Workload is admitted)";
  } else if (!w.jobPhase.empty()) {
    sentence += " (remote phase " + w.jobPhase + ")";
  }
  return {"Running", w.name, sentence};
}

namespace {

json timeJson(const std::optional<Clock::TimePoint>& t) { return t ? json(toRfc3339(*t)) : json(nullptr); }

nlohmann::ordered_json conditionsJson(const std::vector<ConditionFact>& conditions) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& c : conditions)
    out.push_back({{"type", c.type},
                   {"status", c.status},
                   {"reason", c.reason},
                   {"message", c.message},
                   {"lastTransitionTime", timeJson(c.since)}});
  return out;
}

nlohmann::ordered_json eventsJson(const std::vector<EventFact>& events) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& e : events)
    out.push_back({{"object", e.object},
                   {"type", e.type},
                   {"reason", e.reason},
                   {"message", e.message},
                   {"count", e.count},
                   {"lastTimestamp", timeJson(e.last)}});
  return out;
}

}  // namespace

nlohmann::ordered_json explainJson(const JobFacts& f, const Verdict& verdict) {
  nlohmann::ordered_json out;
  out["job"] = {{"kind", f.kind},
                {"namespace", f.namespace_},
                {"name", f.name},
                {"found", f.found},
                {"creationTimestamp", timeJson(f.created)},
                {"marker", {{"field", f.markerField}, {"value", f.marker}}},
                {"queue", f.queue}};
  if (f.workloadName.empty()) {
    out["workload"] = nullptr;
  } else {
    auto checks = nlohmann::ordered_json::array();
    for (const auto& c : f.checks)
      checks.push_back(
          {{"name", c.name}, {"state", c.state}, {"message", c.message}, {"lastTransitionTime", timeJson(c.since)}});
    out["workload"] = {{"name", f.workloadName},
                       {"clusterQueue", f.clusterQueue},
                       {"conditions", conditionsJson(f.workloadConditions)},
                       {"admissionChecks", checks},
                       {"nominatedClusterNames", f.nominated},
                       {"clusterName", f.chosen}};
  }
  out["events"] = eventsJson(f.events);
  auto workers = nlohmann::ordered_json::array();
  for (const auto& w : f.workers) {
    nlohmann::ordered_json worker = {{"name", w.name},
                                     {"active",
                                      {{"status", w.activeStatus},
                                       {"reason", w.activeReason},
                                       {"message", w.activeMessage},
                                       {"lastTransitionTime", timeJson(w.activeSince)}}},
                                     {"reached", w.reached},
                                     {"error", w.error}};
    if (w.workloadFound)
      worker["workload"] = {{"conditions", conditionsJson(w.workloadConditions)},
                            {"localQueue", w.localQueue},
                            {"localQueueMissing", w.localQueueMissing}};
    else
      worker["workload"] = nullptr;
    if (w.jobFound)
      worker["job"] = {{"phase", w.jobPhase}, {"suspended", w.jobSuspended}, {"status", w.jobStatus}};
    else
      worker["job"] = nullptr;
    worker["events"] = eventsJson(w.events);
    workers.push_back(std::move(worker));
  }
  out["workers"] = workers;
  out["state"] = verdict.state;
  out["worker"] = verdict.worker;
  out["sentence"] = verdict.sentence;
  return out;
}

}  // namespace mka::app
