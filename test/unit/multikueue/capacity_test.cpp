// capacity: a Workload's requests, and whether they fit a worker's queues (no cluster needed).
#include "mka/multikueue/capacity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "support/table_test.h"

namespace mka::multikueue::capacity {
namespace {

using nlohmann::json;

json podSet(const std::string& name, int count, const json& spec) {
  return {{"name", name}, {"count", count}, {"template", {{"spec", spec}}}};
}
json workloadOf(const json& podSets) { return {{"spec", {{"podSets", podSets}}}}; }
json container(const json& resources) { return {{"name", "c"}, {"resources", resources}}; }

struct RequestCase {
  std::string name;
  json podSets;
  std::vector<Resources> want;  // per pod set, in thousandths
};
std::vector<RequestCase> requestCases() {
  return {
      {"requests times count",
       json::array({podSet("main", 3, {{"containers", json::array({container({{"requests", {{"cpu", "500m"}}}})})}})}),
       {{{"cpu", 1500}}}},
      {"a limit alone is the request; a request beside it wins",
       json::array({podSet("main", 1,
                           {{"containers", json::array({container({{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}},
                                                                   {"requests", {{"cpu", "1"}}}})})}})}),
       {{{"cpu", 1000}, {"memory", 1073741824000}}}},
      {"containers add up, an init container raises a resource to its own, overhead adds",
       json::array({podSet(
           "main", 2,
           {{"containers",
             json::array({container({{"requests", {{"cpu", "1"}}}}), container({{"requests", {{"cpu", "1"}}}})})},
            {"initContainers", json::array({container({{"requests", {{"cpu", "3"}, {"memory", "1"}}}})})},
            {"overhead", {{"cpu", "100m"}}}})}),
       {{{"cpu", 6200}, {"memory", 2000}}}},
      {"two pod sets, zero requests dropped",
       json::array({podSet("a", 1, {{"containers", json::array({container({{"requests", {{"cpu", "0"}}}})})}}),
                    podSet("b", 2, {{"containers", json::array({container({{"requests", {{"gpu", "1"}}}})})}})}),
       {{}, {{"gpu", 2000}}}},
  };
}
MKA_TABLE_TEST(CapacityTest, PodSetRequests, RequestCase, requestCases()) {
  const auto& c = testCase();
  const auto got = podSetRequests(workloadOf(c.podSets));
  ASSERT_EQ(got.size(), c.want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].total, c.want[i]) << "pod set " << i;
}

TEST(CapacityTest, AQuantityThatDoesNotParseNamesThePodSetAndResource) {
  const auto wl = workloadOf(
      json::array({podSet("main", 1, {{"containers", json::array({container({{"requests", {{"cpu", "lots"}}}})})}})}));
  try {
    podSetRequests(wl);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("pod set main: resources.requests.cpu is not a quantity: \"lots\""));
  }
}

// A ClusterQueue: resource groups of {resources, flavors {name, {resource: {nominal, reserved,
// borrowingLimit, lendingLimit}}}}, in whole units.
struct Q {
  int nominal = 0, reserved = 0;
  std::optional<int> borrowingLimit = std::nullopt, lendingLimit = std::nullopt;
};
ClusterQueue queue(
    const std::string& name, const std::string& cohort,
    const std::vector<
        std::pair<std::vector<std::string>, std::vector<std::pair<std::string, std::map<std::string, Q>>>>>& groups) {
  ClusterQueue cq;
  cq.name = name;
  cq.cohort = cohort;
  for (const auto& [resources, flavors] : groups) {
    ResourceGroup g{resources, {}};
    for (const auto& [flavor, quotas] : flavors) {
      g.flavors.push_back(flavor);
      for (const auto& [resource, q] : quotas) {
        Quota quota{q.nominal * 1000, std::nullopt, std::nullopt, q.reserved * 1000};
        if (q.borrowingLimit) quota.borrowingLimit = *q.borrowingLimit * 1000;
        if (q.lendingLimit) quota.lendingLimit = *q.lendingLimit * 1000;
        cq.quotas[{flavor, resource}] = quota;
      }
    }
    cq.groups.push_back(std::move(g));
  }
  return cq;
}
json localQueueTo(const std::string& cq) {
  return {{"metadata", {{"name", "lq"}, {"namespace", "ns"}}}, {"spec", {{"clusterQueue", cq}}}};
}
std::vector<PodSetRequest> needs(const Resources& perSet, int sets = 1) {
  std::vector<PodSetRequest> out;
  for (int i = 0; i < sets; ++i) out.push_back({"ps" + std::to_string(i), 1, perSet});
  return out;
}

struct FitCase {
  std::string name;
  std::vector<ClusterQueue> queues;
  std::vector<PodSetRequest> request;
  bool now = false, ever = false;
  std::string why;
};
std::vector<FitCase> fitCases() {
  const auto cpuGpu = [](Q cpu, Q gpu) {
    return queue("cq", "", {{{"cpu", "gpu"}, {{"default", {{"cpu", cpu}, {"gpu", gpu}}}}}});
  };
  return {
      {"fits", {cpuGpu({8, 2}, {4, 0})}, needs({{"cpu", 6000}, {"gpu", 4000}}), true, true, ""},
      {"one resource of the group short",
       {cpuGpu({8, 2}, {4, 1})},
       needs({{"cpu", 6000}, {"gpu", 4000}}),
       false,
       true,
       "cq has 3 gpu free, needs 4"},
      {"a resource no group covers",
       {cpuGpu({8, 0}, {4, 0})},
       needs({{"memory", 1000}}),
       false,
       false,
       "cq has no quota for memory"},
      {"all pod sets together or none",
       {cpuGpu({8, 0}, {8, 4})},
       needs({{"gpu", 3000}}, 2),
       false,
       true,
       "cq has 1 gpu free, needs 3"},
      {"the second flavor when the first is short",
       {queue("cq", "", {{{"gpu"}, {{"a", {{"gpu", {4, 4}}}}, {"b", {{"gpu", {4, 0}}}}}}})},
       needs({{"gpu", 4000}}),
       true,
       true,
       ""},
      {"borrows a peer's unused quota",
       {queue("cq", "co", {{{"gpu"}, {{"a", {{"gpu", {2, 0}}}}}}}),
        queue("peer", "co", {{{"gpu"}, {{"a", {{"gpu", {8, 3}}}}}}})},
       needs({{"gpu", 7000}}),
       true,
       true,
       ""},
      {"a peer's lendingLimit bounds what it lends",
       {queue("cq", "co", {{{"gpu"}, {{"a", {{"gpu", {2, 0}}}}}}}),
        queue("peer", "co", {{{"gpu"}, {{"a", {{"gpu", {8, 0, std::nullopt, 2}}}}}}})},
       needs({{"gpu", 5000}}),
       false,
       false,
       "cq has 4 gpu in all, needs 5"},
      {"what a peer borrows is not there to borrow",
       {queue("cq", "co", {{{"gpu"}, {{"a", {{"gpu", {4, 0}}}}}}}),
        queue("peer", "co", {{{"gpu"}, {{"a", {{"gpu", {4, 7}}}}}}})},
       needs({{"gpu", 2000}}),
       false,
       true,
       "cq has 1 gpu free, needs 2"},
  };
}
MKA_TABLE_TEST(CapacityTest, Fit, FitCase, fitCases()) {
  const auto& c = testCase();
  Snapshot snapshot;
  for (const auto& q : c.queues) snapshot.addClusterQueue(q);
  snapshot.addLocalQueue(localQueueTo("cq"));
  const auto fit = snapshot.fit("ns/lq", c.request);
  EXPECT_EQ(fit.now, c.now);
  EXPECT_EQ(fit.ever, c.ever);
  EXPECT_EQ(fit.why, c.why);
  EXPECT_EQ(fit.clusterQueue, "cq");
}

TEST(CapacityTest, PendingCopiesAreChargedExceptTheWorkloadsOwn) {
  Snapshot snapshot;
  snapshot.addClusterQueue(queue("cq", "", {{{"gpu"}, {{"a", {{"gpu", {8, 0}}}}}}}));
  snapshot.addLocalQueue(localQueueTo("cq"));
  snapshot.addPending({"ns/other", "ns/lq", needs({{"gpu", 6000}})});
  snapshot.addPending({"ns/self", "ns/lq", needs({{"gpu", 4000}})});
  const auto fit = snapshot.fit("ns/lq", needs({{"gpu", 4000}}), "ns/self");
  EXPECT_FALSE(fit.now);
  EXPECT_EQ(fit.why, "cq has 2 gpu free, needs 4");
  EXPECT_EQ(fit.pendingWorkloads, 1) << "the other copy waits there; its own does not count";
}

TEST(CapacityTest, AMissingLocalQueueOrClusterQueueCannotEverFit) {
  Snapshot snapshot;
  EXPECT_EQ(snapshot.fit("ns/lq", needs({{"gpu", 1000}})).why, "LocalQueue ns/lq missing");
  snapshot.addLocalQueue(localQueueTo("gone"));
  const auto fit = snapshot.fit("ns/lq", needs({{"gpu", 1000}}));
  EXPECT_FALSE(fit.ever);
  EXPECT_EQ(fit.why, "ClusterQueue gone of LocalQueue ns/lq missing");
}

TEST(CapacityTest, AClusterQueueObjectIsReadAsKueueWritesIt) {
  const json object = {
      {"metadata", {{"name", "cq"}}},
      {"spec",
       {{"cohortName", "co"},
        {"resourceGroups",
         json::array({{{"coveredResources", json::array({"cpu"})},
                       {"flavors", json::array({{{"name", "f"},
                                                 {"resources", json::array({{{"name", "cpu"},
                                                                             {"nominalQuota", "10"},
                                                                             {"borrowingLimit", "2"},
                                                                             {"lendingLimit", "500m"}}})}}})}}})}}},
      {"status",
       {{"pendingWorkloads", 4},
        {"flavorsReservation",
         json::array({{{"name", "f"}, {"resources", json::array({{{"name", "cpu"}, {"total", "1500m"}}})}}})}}}};
  const auto cq = ClusterQueue::from(object);
  EXPECT_EQ(cq.cohort, "co");
  EXPECT_EQ(cq.pendingWorkloads, 4);
  ASSERT_EQ(cq.groups.size(), 1u);
  EXPECT_EQ(cq.groups[0].flavors, std::vector<std::string>{"f"});
  const auto& q = cq.quotas.at({"f", "cpu"});
  EXPECT_EQ(q.nominal, 10000);
  EXPECT_EQ(q.borrowingLimit, 2000);
  EXPECT_EQ(q.lendingLimit, 500);
  EXPECT_EQ(q.reserved, 1500);
}

}  // namespace
}  // namespace mka::multikueue::capacity
