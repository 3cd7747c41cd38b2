#include "mka/app/jobs_command.h"

#include <algorithm>

#include "mka/api/views.h"
#include "mka/app/worker_client.h"
#include "mka/common/errors.h"
#include "mka/kube/api_error.h"

namespace mka::app {

std::vector<JobRow> readJobs(kube::Client& manager, const config::Configuration& cfg,
                             const std::vector<jobkind::JobKind>& kinds, const std::string& ns, Clock::TimePoint now,
                             std::vector<std::string>& problems) {
  const auto index = indexManager(manager, ns);
  std::vector<JobRow> rows;
  for (const auto& kind : kinds) {
    std::vector<nlohmann::json> jobs;
    try {
      jobs = manager.listAll(kind.gvk(), ns);
    } catch (const std::exception& e) {
      if (!kube::isKindNotServed(e)) throw;
      problems.push_back(kind.name() + ": not served by the manager (its CRD is not installed)");
      continue;
    }
    std::vector<JobRow> ofKind;
    for (const auto& job : jobs) {
      const auto facts = factsOf(job, kind, index);
      ofKind.push_back({facts.namespace_, facts.name, kind.gvk().kind, facts.queue, facts.workloadName,
                        verdictOf(facts, cfg, now), facts.created});
    }
    std::sort(ofKind.begin(), ofKind.end(), [](const JobRow& a, const JobRow& b) {
      return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
    });
    rows.insert(rows.end(), ofKind.begin(), ofKind.end());
  }
  return rows;
}

nlohmann::ordered_json jobsJson(const std::vector<JobRow>& rows) {
  nlohmann::ordered_json out = {{"jobs", nlohmann::ordered_json::array()}};
  for (const auto& r : rows)
    out["jobs"].push_back({{"namespace", r.namespace_},
                           {"name", r.name},
                           {"kind", r.kind},
                           {"queue", r.queue},
                           {"workload", r.workload},
                           {"state", r.verdict.state},
                           {"worker", r.verdict.worker},
                           {"sentence", r.verdict.sentence},
                           {"creationTimestamp", r.created ? nlohmann::ordered_json(toRfc3339(*r.created))
                                                           : nlohmann::ordered_json(nullptr)}});
  return out;
}

int jobsCommand(const JobsCommandOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.output.empty() && options.output != "wide" && options.output != "json") {
    err << "error: -o " << options.output << ": unknown output format: use wide or json\n";
    return 2;
  }
  if (options.allNamespaces && !options.namespace_.empty()) {
    err << "error: -A and -n " << options.namespace_ << " together: pass one of them\n";
    return 2;
  }
  const auto cfg = loadCommandConfiguration(options.configFile, err);
  if (!cfg) return 1;
  const Clock& clock = commandClock(options.clock);
  try {
    const auto [rest, manager] = connectManager(options.manager, "multikueue-adapter jobs");
    std::vector<jobkind::JobKind> kinds;
    try {
      kinds = options.kind.empty() ? configuredKinds(*cfg)
                                   : std::vector<jobkind::JobKind>{resolveKind(options.kind, *cfg, *manager)};
    } catch (const Error& e) {
      err << "error: " << e.what() << "\n";
      return 2;
    }
    if (kinds.empty()) {
      err << "error: no configured kinds: pass the adapter's configuration with --config\n";
      return 2;
    }
    const auto ns = options.allNamespaces         ? std::string()
                    : !options.namespace_.empty() ? options.namespace_
                                                  : rest.namespace_;
    std::vector<std::string> problems;
    const auto now = clock.now();
    const auto rows = readJobs(*manager, *cfg, kinds, ns, now, problems);
    for (const auto& p : problems) err << "warning: " << p << "\n";
    if (options.output == "json") {
      out << jobsJson(rows).dump(2) << "\n";
      return 0;
    }
    if (rows.empty()) {
      err << "No jobs of the configured kinds in " << (ns.empty() ? "any namespace" : "namespace " + ns) << "\n";
      return 0;
    }
    const bool wide = options.output == "wide";
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> header = {"NAME", "KIND", "QUEUE", "STATE", "WORKER", "AGE"};
    if (options.allNamespaces) header.insert(header.begin(), "NAMESPACE");
    if (wide) header.insert(header.end(), {"WORKLOAD", "WHY"});
    table.push_back(header);
    for (const auto& r : rows) {
      std::vector<std::string> line = {r.name,
                                       r.kind,
                                       r.queue.empty() ? "-" : r.queue,
                                       r.verdict.state,
                                       r.verdict.worker.empty() ? "-" : r.verdict.worker,
                                       r.created ? shortDuration(now - *r.created) : "-"};
      if (options.allNamespaces) line.insert(line.begin(), r.namespace_);
      if (wide) line.insert(line.end(), {r.workload.empty() ? "-" : r.workload, r.verdict.sentence});
      table.push_back(std::move(line));
    }
    printColumns(table, out);
    return 0;
  } catch (const std::exception& e) {
    err << "error: manager: " << errorText(e) << "\n";
    return 1;
  }
}

}  // namespace mka::app
