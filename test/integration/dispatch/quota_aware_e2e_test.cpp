// The quota-aware dispatcher end to end (issue 43): three workers whose ClusterQueues hold 3, 10
// and 20 PipelineRuns, 30 jobs at once. No worker ever holds more copies than its quota (no
// copy goes where there is no room, even while the ClusterQueues' status lags the
// reservations), every job runs exactly once, and the manager's view of each worker's queues
// (what its metrics export) matches the worker's ClusterQueue.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "dispatch_fixture.h"
#include "mka/common/thread_name.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

const std::map<std::string, std::int64_t> kQuota = {{"worker1", 3}, {"worker2", 10}, {"worker3", 20}};
constexpr int kJobs = 30;

// Live Workload copies on one worker and the most there ever were, from an in-process watch
// (every write as it is committed).
class CopyCounter {
 public:
  explicit CopyCounter(sandbox::Cluster& cluster) {
    watch_ = cluster.store().watch("kueue.x-k8s.io", "workloads", "", 0, nullptr);
    thread_ = std::thread([this] {
      nameThisThread("copy-counter");
      while (!stop_) {
        auto event = watch_->next(std::chrono::milliseconds{100});
        if (!event || event->type == sandbox::EventType::Bookmark) continue;
        const auto name = event->object->at("metadata").value("name", "");
        std::lock_guard lock(mutex_);
        if (event->type == sandbox::EventType::Deleted) {
          live_.erase(name);
        } else {
          if (live_.insert(name).second) ++created_;
        }
        max_ = std::max(max_, live_.size());
      }
    });
  }
  ~CopyCounter() {
    stop_ = true;
    thread_.join();
  }
  std::size_t max() const {
    std::lock_guard lock(mutex_);
    return max_;
  }
  int created() const {
    std::lock_guard lock(mutex_);
    return created_;
  }

 private:
  std::unique_ptr<sandbox::ObjectStore::Watch> watch_;
  mutable std::mutex mutex_;
  std::set<std::string> live_;
  std::size_t max_ = 0;
  int created_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The last view of each worker's queues the dispatch loop published (what /metrics shows).
class CapacityViews final : public multikueue::DispatchObserver {
 public:
  void workloadDispatched(const std::string&, const std::string&) override {}
  void workloadAdmitted(const std::string&, const std::string&) override {}
  void workerCapacity(const std::string& cluster, std::shared_ptr<const multikueue::capacity::Snapshot> s) override {
    std::lock_guard lock(mutex_);
    views_[cluster] = std::move(s);
  }
  // Reserved PipelineRuns in the worker's cluster-queue, in the last view (-1: none).
  std::int64_t reserved(const std::string& cluster) const {
    std::lock_guard lock(mutex_);
    const auto it = views_.find(cluster);
    if (it == views_.end() || !it->second) return -1;
    const auto& queues = it->second->clusterQueues();
    const auto cq = queues.find("cluster-queue");
    if (cq == queues.end()) return -1;
    for (const auto& [key, quota] : cq->second.quotas)
      if (key.second == "tekton.dev/pipelineruns") return quota.reserved / 1000;
    return -1;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const multikueue::capacity::Snapshot>> views_;
};

class QuotaAwareE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
};

// The worker ClusterQueue's reserved PipelineRuns, as its Kueue wrote them.
std::int64_t reservedOn(demo::Environment& env, const std::string& worker) {
  const auto cq =
      env.cluster(worker).api().get({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""});
  for (const auto& flavor : cq.value("status", json::object()).value("flavorsReservation", json::array()))
    for (const auto& r : flavor.value("resources", json::array()))
      if (r.value("name", "") == "tekton.dev/pipelineruns") return std::stoll(r.value("total", "0"));
  return 0;
}

TEST_F(QuotaAwareE2E, NoCopyWhereThereIsNoRoomEveryJobOnceAndTheViewMatchesTheWorkers) {
  CapacityViews views;
  DispatchFixture::Setup setup;
  setup.workers = {"worker1", "worker2", "worker3"};
  setup.workerJobQuota = kQuota;
  setup.observer = &views;
  setup.configure = [](config::Configuration& c) {
    c.multiKueue.dispatcherName = std::string(config::kDispatcherQuotaAware);
  };
  setUpEnvironment(setup);
  std::map<std::string, std::unique_ptr<CopyCounter>> counters;
  for (const auto& [w, quota] : kQuota) counters[w] = std::make_unique<CopyCounter>(env_->cluster(w));
  startAdapter();
  ASSERT_TRUE(settled());

  for (int i = 0; i < kJobs; ++i) createJob(kPipelineRun, "job-" + std::to_string(i));
  // Every job admitted on a worker and started there (room for all 30 at once: 33 slots).
  ASSERT_TRUE(eventually(
      [&] {
        int started = 0;
        for (int i = 0; i < kJobs; ++i)
          for (const auto& [w, quota] : kQuota) started += startsOn(w, kPipelineRun, "job-" + std::to_string(i));
        return started == kJobs;
      },
      std::chrono::seconds{60}));
  ASSERT_TRUE(settled());

  for (const auto& [w, quota] : kQuota) {
    EXPECT_LE(counters[w]->max(), static_cast<std::size_t>(quota)) << w << ": a copy was sent where there was no room";
    // The manager's view of the worker's queue, as /metrics exports it, is the worker's own.
    const bool same = eventually([&] { return views.reserved(w) == reservedOn(*env_, w); });
    EXPECT_TRUE(same) << w << ": the manager sees " << views.reserved(w) << " reserved, the worker "
                      << reservedOn(*env_, w);
  }
  int copies = 0;
  for (const auto& [w, quota] : kQuota) copies += counters[w]->created();
  EXPECT_EQ(copies, kJobs) << "one copy per job: the dispatcher knew where there was room";
  for (int i = 0; i < kJobs; ++i) {
    int starts = 0;
    for (const auto& [w, quota] : kQuota) starts += startsOn(w, kPipelineRun, "job-" + std::to_string(i));
    EXPECT_EQ(starts, 1) << "job-" << i;
  }
}

}  // namespace
}  // namespace mka::e2e
