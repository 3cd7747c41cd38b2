#include "mka/multikueue/garbage_collector.h"

#include "mka/api/workload_status.h"
#include "mka/common/log.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/adapter.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/dependencies.h"
#include "mka/multikueue/generic_adapter.h"

namespace mka::multikueue {

using api::isTerminating;

using nlohmann::json;

OrphanCollector::OrphanCollector(kube::Client& manager, kube::Informer& workloads, const ClusterRegistry& clusters,
                                 Options options)
    : manager_(manager), workloads_(workloads), clusters_(clusters), options_(std::move(options)) {}

OrphanCollector::~OrphanCollector() { stop(); }

bool OrphanCollector::syncsDependencies() const {
  for (const auto& adapter : options_.adapters.all())
    if (adapter->kind().syncsDependencies()) return true;
  return false;
}

bool OrphanCollector::liveLocally(const std::string& key) {
  if (const auto cached = workloads_.get(key)) return !isTerminating(*cached);
  // Not cached: confirm with the API before deleting anything (the cache may lag a create).
  const auto [ns, name] = kube::Informer::splitKey(key);
  try {
    const auto object = manager_.get(api::kWorkloadGvk, std::string(ns), std::string(name));
    return !isTerminating(object);
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return false;
    throw;
  }
}

OrphanCollector::Stats OrphanCollector::collect() {
  Stats stats;
  for (const auto& name : clusters_.clusterNames()) {
    auto remote = clusters_.connected(name);
    if (!remote) continue;
    auto removeJob = [&](const Adapter& adapter, const std::string& ns, const std::string& jobName) {
      const auto job = remote->job(adapter.gvk(), ns + "/" + jobName);
      if (!job || !ownedByOrigin(*job, options_.origin)) return;
      if (!adapter.deleteRemoteObject(remote->client(), ns, jobName)) return;
      ++stats.jobsDeleted;
      log::info("gc deleted orphan job",
                {{"cluster", name}, {"kind", adapter.gvk().kind}, {"job", ns + "/" + jobName}});
    };
    remote->forEachWorkload([&](const json& wl) {
      const auto key = kube::Informer::keyOf(wl);
      try {
        if (!ownedByOrigin(wl, options_.origin) || liveLocally(key)) return;
        const auto meta = wl.value("metadata", json::object());
        for (const auto& ref : meta.value("ownerReferences", json::array())) {
          if (!ref.value("controller", false)) continue;
          const auto gvk = api::GroupVersionKind::fromApiVersion(ref.value("apiVersion", ""), ref.value("kind", ""));
          if (const auto* adapter = options_.adapters.find(gvk))
            removeJob(*adapter, meta.value("namespace", ""), ref.value("name", ""));
        }
        try {
          remote->client().remove(api::kWorkloadGvk, meta.value("namespace", ""), meta.value("name", ""));
          ++stats.workloadsDeleted;
          log::info("gc deleted orphan workload", {{"cluster", name}, {"workload", key}});
        } catch (const kube::ApiError& e) {
          if (e.reason() != kube::Reason::NotFound) throw;
        }
      } catch (const std::exception& e) {
        log::warn("gc skipped workload", {{"cluster", name}, {"workload", key}, {"error", e.what()}});
      }
    });
    // Job copies whose Workload copy is gone and whose manager Workload is not live.
    for (const auto& adapter : options_.adapters.all()) {
      remote->forEachJob(adapter->gvk(), [&](const json& job) {
        const auto ns = job.value("metadata", json::object()).value("namespace", "");
        const auto jobName = job.value("metadata", json::object()).value("name", "");
        try {
          const auto key = adapter->workloadKeyFor(job);
          if (!key) return;
          if (remote->workload(*key) || liveLocally(*key)) return;
          removeJob(*adapter, ns, jobName);
        } catch (const std::exception& e) {
          log::warn("gc skipped job", {{"cluster", name}, {"job", ns + "/" + jobName}, {"error", e.what()}});
        }
      });
    }
    // Dependency copies none of whose owners has a live Workload copy here (the adapter stopped
    // between a copy's removal and releasing what it used).
    if (syncsDependencies()) {
      try {
        stats.dependenciesDeleted += collectDependencies(
            remote->client(), options_.origin,
            [&](const std::string& key) { return remote->workload(key).has_value() && liveLocally(key); });
      } catch (const std::exception& e) {
        log::warn("gc skipped dependencies", {{"cluster", name}, {"error", e.what()}});
      }
    }
  }
  return stats;
}

void OrphanCollector::start() {
  if (options_.interval <= std::chrono::nanoseconds::zero()) {
    log::info("Garbage Collection is disabled");
    return;
  }
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    nameThisThread("mk-gc");
    disableThreadCache();  // one pass per gcInterval: not worth a cache held in between
    while (true) {
      {
        std::unique_lock lock(mutex_);
        if (wake_.wait_for(lock, options_.interval, [&] { return stopping_; })) return;
      }
      try {
        const auto stats = collect();
        if (stats.workloadsDeleted + stats.jobsDeleted + stats.dependenciesDeleted > 0)
          log::info("gc pass done", {{"workloadsDeleted", stats.workloadsDeleted},
                                     {"jobsDeleted", stats.jobsDeleted},
                                     {"dependenciesDeleted", stats.dependenciesDeleted}});
      } catch (const std::exception& e) {
        log::warn("gc pass failed", {{"error", e.what()}});
      }
    }
  });
}

void OrphanCollector::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace mka::multikueue
