#include "mka/app/explain_command.h"

#include "mka/app/job_report.h"
#include "mka/app/worker_client.h"
#include "mka/common/errors.h"
#include "mka/common/strings.h"

namespace mka::app {

namespace {

std::string ago(const std::optional<Clock::TimePoint>& t, Clock::TimePoint now) {
  return t ? " (" + shortDuration(now - *t) + " ago)" : "";
}

void printConditions(const std::vector<ConditionFact>& conditions, const std::string& indent, Clock::TimePoint now,
                     std::ostream& out) {
  if (conditions.empty()) out << indent << "no conditions\n";
  for (const auto& c : conditions)
    out << indent << c.type << "=" << c.status << (c.reason.empty() ? "" : " " + c.reason)
        << (c.message.empty() ? "" : ": " + c.message) << ago(c.since, now) << "\n";
}

void printEvents(const std::vector<EventFact>& events, const std::string& indent, Clock::TimePoint now,
                 std::ostream& out) {
  if (events.empty()) out << indent << "none\n";
  for (const auto& e : events)
    out << indent << e.type << " " << e.reason << " " << e.object << ": " << e.message
        << (e.count > 1 ? " (x" + std::to_string(e.count) + ")" : "") << ago(e.last, now) << "\n";
}

void printFacts(const JobFacts& f, Clock::TimePoint now, std::ostream& out) {
  out << "Job:        " << f.kind << " " << f.namespace_ << "/" << f.name << ago(f.created, now) << "\n";
  if (!f.found) return;
  out << "Marker:     " << f.markerField << "=" << (f.marker.empty() ? "(absent)" : f.marker) << "\n";
  out << "Queue:      " << (f.queue.empty() ? "(no queue label)" : f.queue)
      << (f.clusterQueue.empty() ? "" : " (ClusterQueue " + f.clusterQueue + ")") << "\n";
  if (f.workloadName.empty()) {
    out << "Workload:   (none)\n";
  } else {
    out << "Workload:   " << f.workloadName << "\n";
    printConditions(f.workloadConditions, "  ", now, out);
    out << "Admission checks:\n";
    if (f.checks.empty()) out << "  none\n";
    for (const auto& c : f.checks)
      out << "  " << c.name << ": " << c.state << (c.message.empty() ? "" : ": " + c.message) << ago(c.since, now)
          << "\n";
    out << "Nominated:  " << (f.nominated.empty() ? "-" : strings::join(f.nominated, ", ")) << "\n";
    out << "Chosen:     " << (f.chosen.empty() ? "-" : f.chosen) << "\n";
  }
  out << "Events on the manager:\n";
  printEvents(f.events, "  ", now, out);
  for (const auto& w : f.workers) {
    out << "Worker " << w.name << ": MultiKueueCluster Active="
        << (w.activeStatus.empty() ? "(unset)" : w.activeStatus + (w.activeReason.empty() ? "" : " " + w.activeReason))
        << ago(w.activeSince, now) << "\n";
    if (!w.reached) {
      out << "  not read: " << w.error << "\n";
      continue;
    }
    if (!w.error.empty()) out << "  read in part: " << w.error << "\n";
    if (w.workloadFound) {
      out << "  Workload " << f.workloadName << " (LocalQueue " << w.localQueue
          << (w.localQueueMissing ? ", missing there" : "") << "):\n";
      printConditions(w.workloadConditions, "    ", now, out);
    } else {
      out << "  Workload " << f.workloadName << ": none there\n";
    }
    if (w.jobFound) {
      out << "  Job: " << (w.jobPhase.empty() ? "(no phase)" : "phase " + w.jobPhase)
          << (w.jobSuspended ? ", suspended" : "") << "\n";
    } else {
      out << "  Job: none there\n";
    }
    out << "  Events on " << w.name << ":\n";
    printEvents(w.events, "    ", now, out);
  }
}

}  // namespace

int explainCommand(const ExplainCommandOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.output.empty() && options.output != "json") {
    err << "error: -o " << options.output << ": unknown output format: use json\n";
    return 2;
  }
  std::string kindText = options.target, name = options.name;
  if (name.empty()) {
    const auto slash = kindText.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == kindText.size()) {
      err << "error: " << options.target << ": name the job as KIND/NAME (pipelinerun/hello) or KIND NAME\n";
      return 2;
    }
    name = kindText.substr(slash + 1);
    kindText = kindText.substr(0, slash);
  }
  const auto cfg = loadCommandConfiguration(options.configFile, err);
  if (!cfg) return 1;
  const Clock& clock = commandClock(options.clock);
  try {
    const auto [rest, manager] = connectManager(options.manager, "multikueue-adapter explain");
    const auto ns = !options.namespace_.empty() ? options.namespace_ : rest.namespace_;
    std::optional<jobkind::JobKind> resolved;
    try {
      resolved = resolveKind(kindText, *cfg, *manager);
    } catch (const Error& e) {
      err << "error: " << e.what() << "\n";
      return 2;
    }
    const auto& kind = *resolved;
    ReadOptions read;
    read.timeout = options.timeout;
    const auto facts = readJob(*manager, *cfg, kind, ns, name, read);
    const auto verdict = verdictOf(facts, *cfg, clock.now());
    if (options.output == "json") {
      out << explainJson(facts, verdict).dump(2) << "\n";
    } else {
      printFacts(facts, clock.now(), out);
      out << "\n" << verdict.sentence << "\n";
    }
    return facts.found ? 0 : 1;
  } catch (const std::exception& e) {
    err << "error: manager: " << errorText(e) << "\n";
    return 1;
  }
}

}  // namespace mka::app
