// Orchestrated preemption end to end (KEP-8303, on by default in Kueue 0.20): two workers whose
// ClusterQueue (one PipelineRun at a time, withinClusterQueue: LowerPriority) is held by a
// low-priority Workload of their own. A high-priority job from the manager would preempt on both;
// its copies carry the gate kueue.x-k8s.io/multikueue, both block on it, and the dispatch loop
// opens exactly one. The holder there is evicted but never released (no job integration owns
// it), so that worker never admits: the other gate stays closed for 5 minutes of the fake clock,
// and opens after.

#include <gtest/gtest.h>

#include "dispatch_fixture.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

const sandbox::ResourceRef kClusterQueue{"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""};
const sandbox::ResourceRef kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", "default", "", ""};

class OrchestratedPreemptionE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }

  // The worker's ClusterQueue preempts lower priority; a Workload of the worker's own holds its
  // one slot.
  void holdTheOnlySlot(const std::string& worker) {
    auto& api = env_->cluster(worker).api();
    auto cq = api.get(kClusterQueue);
    cq["spec"]["preemption"] = {{"withinClusterQueue", "LowerPriority"}};
    api.update(kClusterQueue, cq);
    api.create(
        kWorkloads,
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "Workload"},
         {"metadata", {{"name", "holder"}, {"namespace", "default"}}},
         {"spec",
          {{"queueName", "user-queue"},
           {"priority", 0},
           {"podSets",
            json::array(
                {{{"name", "main"},
                  {"count", 1},
                  {"template",
                   {{"spec",
                     {{"containers",
                       json::array({{{"name", "c"},
                                     {"image", "busybox"},
                                     {"resources", {{"requests", {{"tekton.dev/pipelineruns", "1"}}}}}}})}}}}}}})}}}});
    ASSERT_TRUE(eventually([&] {
      const auto holder = get(worker, api::kWorkloadGvk, "holder");
      return holder && api::hasQuotaReservation(*holder);
    })) << worker;
  }

  // The position of the copy's kueue.x-k8s.io/multikueue gate ("" without a copy or an entry).
  std::string gate(const std::string& worker, const std::string& workload) {
    const auto copy = get(worker, api::kWorkloadGvk, workload);
    if (!copy) return "";
    for (const auto& g : copy->value("status", json::object()).value("preemptionGates", json::array()))
      if (g.value("name", "") == "kueue.x-k8s.io/multikueue") return g.value("position", "");
    return "";
  }
  bool blocked(const std::string& worker, const std::string& workload) {
    const auto copy = get(worker, api::kWorkloadGvk, workload);
    const auto* c = copy ? api::findCondition(*copy, "BlockedOnPreemptionGates") : nullptr;
    return c != nullptr && c->value("status", "") == "True";
  }
};

TEST_F(OrchestratedPreemptionE2E, OneGateOpensAndTheOtherStaysClosedForFiveMinutes) {
  DispatchFixture::Setup setup;
  setup.workerJobQuota = {{"worker1", 1}, {"worker2", 1}};
  setUpEnvironment(setup);
  env_->create("manager", {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                           {"kind", "WorkloadPriorityClass"},
                           {"metadata", {{"name", "urgent"}}},
                           {"value", 1000}});
  for (const auto* w : {"worker1", "worker2"}) holdTheOnlySlot(w);
  startAdapter();
  ASSERT_TRUE(settled());

  createJob(kPipelineRun, "urgent", true,
            [](json& job) { job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"; });
  const auto wl = awaitWorkload(kPipelineRun, "urgent");
  ASSERT_TRUE(eventually([&] { return blocked("worker1", wl) && blocked("worker2", wl); }))
      << "both copies would preempt, behind a closed gate";
  ASSERT_TRUE(eventually([&] { return (gate("worker1", wl) == "Open") != (gate("worker2", wl) == "Open"); }))
      << "exactly one gate opens";
  const std::string opened = gate("worker1", wl) == "Open" ? "worker1" : "worker2";
  const std::string other = opened == "worker1" ? "worker2" : "worker1";
  // The opened worker evicts its holder, which nothing releases: it never admits the copy.
  ASSERT_TRUE(eventually([&] {
    const auto holder = get(opened, api::kWorkloadGvk, "holder");
    return holder && api::findCondition(*holder, "Evicted") != nullptr;
  }));

  for (int minute = 0; minute < 4; ++minute) {
    advance(std::chrono::minutes{1});
    ASSERT_TRUE(settled());
    EXPECT_NE(gate(other, wl), "Open") << "opened " << minute + 1 << " minutes after the first";
  }
  advance(std::chrono::seconds{59});
  ASSERT_TRUE(settled());
  EXPECT_NE(gate(other, wl), "Open") << "4m59s after the first";
  advance(std::chrono::seconds{1});
  EXPECT_TRUE(eventually([&] { return gate(other, wl) == "Open"; })) << "5 minutes after the first";
  EXPECT_FALSE(blocked(opened, wl) && gate(opened, wl) != "Open") << "the first stays open";
}

}  // namespace
}  // namespace mka::e2e
