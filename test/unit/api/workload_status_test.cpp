#include "mka/api/workload_status.h"

#include <gtest/gtest.h>

namespace mka::api {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const Clock::TimePoint kT0{std::chrono::seconds{1'800'000'000}};

json workload() {
  return json::parse(R"({"metadata": {"name": "wl", "namespace": "ns", "generation": 3},
    "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                               "message": "", "lastTransitionTime": "2027-01-15T08:00:00Z"}],
               "admissionChecks": [{"name": "ac1", "state": "Pending", "message": "",
                                    "lastTransitionTime": "2027-01-15T08:00:00Z"}]}})");
}

TEST(WorkloadStatusTest, ConditionsAreFoundByType) {
  const auto wl = workload();
  EXPECT_TRUE(hasQuotaReservation(wl));
  EXPECT_FALSE(isAdmitted(wl));
  EXPECT_FALSE(isFinished(wl));
  EXPECT_EQ(findCondition(wl, "Missing"), nullptr);
  EXPECT_EQ(transitionTime(*findCondition(wl, "QuotaReserved")), *parseRfc3339("2027-01-15T08:00:00Z"));
}

TEST(WorkloadStatusTest, SetConditionMovesTheTransitionTimeOnlyWhenTheStatusChanges) {
  auto wl = workload();
  EXPECT_TRUE(setCondition(wl, "Finished", true, "Succeeded", "done", kT0));
  const auto* c = findCondition(wl, "Finished");
  EXPECT_EQ(c->value("lastTransitionTime", ""), toRfc3339(kT0));
  EXPECT_EQ(c->value("observedGeneration", 0), 3);
  EXPECT_FALSE(setCondition(wl, "Finished", true, "Succeeded", "done", kT0 + 5s)) << "nothing changed";
  EXPECT_TRUE(setCondition(wl, "Finished", true, "Succeeded", "done again", kT0 + 5s));
  EXPECT_EQ(findCondition(wl, "Finished")->value("lastTransitionTime", ""), toRfc3339(kT0)) << "same status";
  EXPECT_TRUE(setCondition(wl, "Finished", false, "Reset", "", kT0 + 9s));
  EXPECT_EQ(findCondition(wl, "Finished")->value("lastTransitionTime", ""), toRfc3339(kT0 + 9s));
}

TEST(WorkloadStatusTest, CheckStateKeepsItsTransitionTimeWhenOnlyTheMessageChanges) {
  auto wl = workload();
  EXPECT_TRUE(setCheckState(wl, "ac1", "Ready", "admitted", kT0));
  EXPECT_EQ(findCheckState(wl, "ac1")->value("lastTransitionTime", ""), toRfc3339(kT0));
  EXPECT_TRUE(setCheckState(wl, "ac1", "Ready", "admitted again", kT0 + 1s));
  EXPECT_EQ(findCheckState(wl, "ac1")->value("lastTransitionTime", ""), toRfc3339(kT0));
  EXPECT_FALSE(setCheckState(wl, "ac1", "Ready", "admitted again", kT0 + 2s));
  EXPECT_EQ(findCheckState(wl, "other"), nullptr);
}

TEST(WorkloadStatusTest, ACopysSpecIsComparedWithoutPreemptionGatesAndActive) {
  const json local = {{"spec", {{"queueName", "q"}, {"podSets", {{{"name", "main"}, {"count", 1}}}}}}};
  json copy = local;
  EXPECT_TRUE(sameSpecAsCopy(local, copy));
  copy["spec"]["active"] = false;                                 // the worker deactivated it
  copy["spec"]["preemptionGates"] = {{{"name", "worker-gate"}}};  // the worker's business
  EXPECT_TRUE(sameSpecAsCopy(local, copy));
  EXPECT_TRUE(sameSpecAsCopy(copy, local));

  json changed = copy;
  changed["spec"]["podSets"][0]["count"] = 2;
  EXPECT_FALSE(sameSpecAsCopy(local, changed));
  json extra = local;
  extra["spec"]["priority"] = 5;  // after the last key
  EXPECT_FALSE(sameSpecAsCopy(local, extra));
  EXPECT_FALSE(sameSpecAsCopy(extra, local));
  json fewer = local;
  fewer["spec"].erase("podSets");
  EXPECT_FALSE(sameSpecAsCopy(local, fewer));
  EXPECT_TRUE(sameSpecAsCopy(json::object(), json{{"spec", {{"active", true}}}})) << "no spec reads as empty";
}

TEST(WorkloadStatusTest, PreviousStateSuffixIsKueues) {
  EXPECT_EQ(withPreviousState("No multikueue adapter found", "Pending"),
            "No multikueue adapter found, Previously: \"Pending\"");
}

TEST(WorkloadStatusTest, MessagesAreCutAt32KiBWithAnEllipsis) {
  const std::string longMessage(40'000, 'x');
  const auto cut = truncateMessage(longMessage, 32 * 1024);
  EXPECT_EQ(cut.size(), 32u * 1024);
  EXPECT_EQ(cut.substr(cut.size() - 4), " ...");
  EXPECT_EQ(truncateMessage("short", 32 * 1024), "short");
}

TEST(WorkloadStatusTest, NominatedClustersAndClusterName) {
  auto wl = workload();
  EXPECT_TRUE(nominatedClusters(wl).empty());
  EXPECT_TRUE(setNominatedClusters(wl, {"worker1", "worker2"}));
  EXPECT_FALSE(setNominatedClusters(wl, {"worker1", "worker2"}));
  EXPECT_EQ(nominatedClusters(wl), (std::vector<std::string>{"worker1", "worker2"}));
  EXPECT_TRUE(setNominatedClusters(wl, {}));
  EXPECT_FALSE(wl["status"].contains("nominatedClusterNames")) << "cleared, not an empty list";
  EXPECT_EQ(clusterName(wl), "");
  wl["status"]["clusterName"] = "worker2";
  EXPECT_EQ(clusterName(wl), "worker2");
}

TEST(WorkloadStatusTest, TerminatingMeansADeletionTimestamp) {
  auto wl = workload();
  EXPECT_FALSE(isTerminating(wl));
  wl["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  EXPECT_TRUE(isTerminating(wl));
}

TEST(Rfc3339Test, RoundTripsAndAcceptsFractionsAndOffsets) {
  EXPECT_EQ(toRfc3339(kT0), "2027-01-15T08:00:00Z");
  EXPECT_EQ(parseRfc3339("2027-01-15T08:00:00Z"), kT0);
  EXPECT_EQ(parseRfc3339("2027-01-15T09:00:00+01:00"), kT0);
  EXPECT_EQ(parseRfc3339("2027-01-15T08:00:00.5Z"), kT0 + 500ms);
  EXPECT_FALSE(parseRfc3339("yesterday"));
  EXPECT_FALSE(parseRfc3339("2027-01-15T08:00:00"));
}

}  // namespace
}  // namespace mka::api
