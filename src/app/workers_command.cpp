#include "mka/app/workers_command.h"

#include <algorithm>

#include "mka/api/kueue.h"
#include "mka/api/views.h"
#include "mka/app/command_setup.h"
#include "mka/app/worker_client.h"
#include "mka/common/errors.h"
#include "mka/common/quantity.h"
#include "mka/common/strings.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/api_error.h"
#include "mka/kube/kubeconfig.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/capacity.h"

namespace mka::app {

using nlohmann::json;

namespace {

std::string note(const WorkerRow& row) {
  std::vector<std::string> parts;
  if (!row.error.empty()) parts.push_back(row.error);
  if (!row.kindsMissing.empty()) parts.push_back("missing kinds: " + strings::join(row.kindsMissing, ", "));
  return strings::join(parts, "; ");
}

// One worker, read through its MultiKueueCluster's source.
void readWorker(const json& cluster, const controller::ObjectReader& manager, const config::Configuration& cfg,
                std::chrono::milliseconds timeout, WorkerRow& row) {
  auto connection = connectWorker(cluster, manager, cfg, timeout, "multikueue-adapter workers");
  if (!connection.client) {
    row.error = connection.error;
    return;
  }
  auto& client = connection.client;
  // Connected as the dispatch loop is: its copies of this manager's Workloads can be listed.
  kube::ListOptions ours;
  ours.labelSelector = std::string(api::kOriginLabel) + "=" + cfg.multiKueue.origin;
  try {
    for (const auto& wl : client->listAll(api::kWorkloadGvk, "", ours)) {
      const api::WorkloadView view(wl);
      if (view.finished()) continue;
      ++(view.quotaReserved() ? row.admitted : row.pending);
    }
    row.connected = true;
  } catch (const std::exception& e) {
    row.error = "cannot list its Workloads: " + errorText(e);
    return;
  }
  for (const auto& f : cfg.multiKueue.externalFrameworks) {
    try {
      client->discovery().resourceFor(f.gvk);
      row.kindsServed.push_back(f.name);
    } catch (const kube::ApiError& e) {
      if (!kube::isKindNotServed(e)) throw;
      row.kindsMissing.push_back(f.name);
    }
  }
  try {
    for (const auto& object : client->listAll(api::kClusterQueueGvk, "")) {
      const auto cq = multikueue::capacity::ClusterQueue::from(object);
      for (const auto& group : cq.groups)
        for (const auto& flavor : group.flavors)
          for (const auto& resource : group.resources) {
            const auto it = cq.quotas.find({flavor, resource});
            const auto q = it == cq.quotas.end() ? multikueue::capacity::Quota{} : it->second;
            row.quotas.push_back(
                {cq.name, flavor, resource, q.nominal, q.reserved, std::max<std::int64_t>(0, q.nominal - q.reserved)});
          }
    }
  } catch (const std::exception& e) {
    row.error = "cannot list its ClusterQueues: " + errorText(e);
  }
}

void printTable(const std::vector<WorkerRow>& rows, bool wide, std::ostream& out) {
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> header = {"NAME",    "CONNECTED", "KINDS", "QUEUES (FREE/NOMINAL)",
                                     "PENDING", "ADMITTED",  "NOTE"};
  if (wide) header.insert(header.begin() + 2, "ACTIVE");
  table.push_back(header);
  for (const auto& r : rows) {
    std::vector<std::string> queues;
    for (const auto& q : r.quotas)
      queues.push_back(q.clusterQueue + "/" + q.flavor + "/" + q.resource + " " + quantity::formatMilli(q.free) + "/" +
                       quantity::formatMilli(q.nominal));
    std::vector<std::string> kinds;
    for (const auto& k : r.kindsServed) kinds.push_back(k.substr(0, k.find('.')));
    std::vector<std::string> line = {r.name,
                                     r.connected ? "True" : "False",
                                     kinds.empty() ? "-" : strings::join(kinds, ","),
                                     queues.empty() ? "-" : strings::join(queues, ", "),
                                     r.connected ? std::to_string(r.pending) : "-",
                                     r.connected ? std::to_string(r.admitted) : "-",
                                     note(r)};
    if (wide)
      line.insert(line.begin() + 2, r.activeStatus.empty() ? "-" : r.activeStatus + " (" + r.activeReason + ")");
    table.push_back(std::move(line));
  }
  printColumns(table, out);
}

}  // namespace

std::vector<WorkerRow> readWorkers(kube::Client& manager, const config::Configuration& cfg,
                                   std::chrono::milliseconds timeout) {
  controller::ClientReader reader(manager);
  std::vector<WorkerRow> rows;
  for (const auto& cluster : manager.listAll(api::kMultiKueueClusterGvk, "")) {
    WorkerRow row;
    const api::ObjectView view(cluster);
    row.name = std::string(view.name());
    if (const auto* active = view.condition(api::condition::kActive)) {
      row.activeStatus = active->value("status", "");
      row.activeReason = active->value("reason", "");
      row.activeMessage = active->value("message", "");
    }
    try {
      readWorker(cluster, reader, cfg, timeout, row);
    } catch (const std::exception& e) {
      row.error = errorText(e);
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const WorkerRow& a, const WorkerRow& b) { return a.name < b.name; });
  return rows;
}

nlohmann::ordered_json workersJson(const std::vector<WorkerRow>& rows) {
  nlohmann::ordered_json out = {{"workers", nlohmann::ordered_json::array()}};
  for (const auto& r : rows) {
    nlohmann::ordered_json quotas = nlohmann::ordered_json::array();
    for (const auto& q : r.quotas)
      quotas.push_back({{"clusterQueue", q.clusterQueue},
                        {"flavor", q.flavor},
                        {"resource", q.resource},
                        {"nominal", quantity::formatMilli(q.nominal)},
                        {"reserved", quantity::formatMilli(q.reserved)},
                        {"free", quantity::formatMilli(q.free)}});
    out["workers"].push_back(
        {{"name", r.name},
         {"connected", r.connected},
         {"error", r.error},
         {"active", {{"status", r.activeStatus}, {"reason", r.activeReason}, {"message", r.activeMessage}}},
         {"kinds", {{"served", r.kindsServed}, {"missing", r.kindsMissing}}},
         {"quotas", quotas},
         {"workloads", {{"pending", r.pending}, {"admitted", r.admitted}}}});
  }
  return out;
}

int workersCommand(const WorkersCommandOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.output.empty() && options.output != "wide" && options.output != "json") {
    err << "error: -o " << options.output << ": unknown output format: use wide or json\n";
    return 2;
  }
  const auto cfg = loadCommandConfiguration(options.configFile, err);
  if (!cfg) return 1;
  try {
    auto manager =
        managerClient(managerRestConfig({options.managerKubeconfig, options.context}), "multikueue-adapter workers");
    const auto rows = readWorkers(*manager, *cfg, options.timeout);
    if (options.output == "json") {
      out << workersJson(rows).dump(2) << "\n";
    } else if (rows.empty()) {
      err << "No MultiKueueClusters on the manager: add one with add-worker\n";
    } else {
      printTable(rows, options.output == "wide", out);
    }
    return 0;
  } catch (const std::exception& e) {
    err << "error: manager: " << errorText(e) << "\n";
    return 1;
  }
}

}  // namespace mka::app
