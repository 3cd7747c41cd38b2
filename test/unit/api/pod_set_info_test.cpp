// What an admitted Workload gives its pod sets' pods (Kueue's getPodSetsInfoFromStatus and
// podset.Merge; KUEUE-JOBFRAMEWORK.md §4.3): the flavors' node labels and tolerations, Kueue's
// labels and annotation, the admission checks' podSetUpdates, and the conflicts between them.
#include "mka/api/pod_set_info.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::api {

// Failures print the infos readably.
void PrintTo(const PodSetInfo& info, std::ostream* out) {
  *out << "{" << info.name << " x" << info.count << " labels " << info.labels.dump() << " annotations "
       << info.annotations.dump() << " nodeSelector " << info.nodeSelector.dump() << " tolerations "
       << info.tolerations.dump() << "}";
}
void PrintTo(const FlavorNotFound& missing, std::ostream* out) {
  *out << "FlavorNotFound{" << missing.name << ", " << missing.podSet << "}";
}

namespace {

using nlohmann::json;

const json kSpot = {{"key", "spot"}, {"operator", "Exists"}};
const json kGpu = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};

// Admitted for pod set "main" in flavor "spot" (cpu, memory) and "a100" (gpu), with `checks` as
// status.admissionChecks; a Workload a manager created (its origin label).
json admitted(const json& checks) {
  const json assignment = {{"name", "main"}, {"flavors", {{"cpu", "spot"}, {"memory", "spot"}, {"gpu", "a100"}}}};
  const json status = {{"admission", {{"clusterQueue", "cq"}, {"podSetAssignments", json::array({assignment})}}},
                       {"admissionChecks", checks}};
  return {{"metadata", {{"name", "wl"}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}}}}},
          {"spec", {{"queueName", "lq"}, {"podSets", json::array({{{"name", "main"}, {"count", 3}}})}}},
          {"status", status}};
}

std::optional<json> everyFlavor(const std::string& name) {
  if (name == "spot") return json{{"spec", {{"nodeLabels", {{"lifecycle", "spot"}}}, {"tolerations", {kSpot}}}}};
  return json{{"spec", {{"nodeLabels", {{"gpu", "a100"}}}, {"tolerations", {kGpu}}}}};
}

std::optional<json> onlySpot(const std::string& name) {
  if (name == "spot") return json{{"spec", json::object()}};
  return std::nullopt;
}

// The info of pod set "main" in both flavors, with `nodeSelector` added.
PodSetInfo mainInfo(const json& nodeSelector) {
  PodSetInfo info;
  info.name = "main";
  info.count = 3;
  info.labels = {{"kueue.x-k8s.io/podset", "main"},
                 {"kueue.x-k8s.io/local-queue-name", "lq"},
                 {"kueue.x-k8s.io/cluster-queue-name", "cq"},
                 {"kueue.x-k8s.io/multikueue-worker-workload-pod", "true"}};
  info.annotations = {{"kueue.x-k8s.io/workload", "wl"}};
  info.nodeSelector = {{"lifecycle", "spot"}, {"gpu", "a100"}};
  for (const auto& [key, value] : nodeSelector.items()) info.nodeSelector[key] = value;
  info.tolerations = json::array({kSpot, kGpu});
  return info;
}

json check(const std::string& name, const json& update) {
  return {{"name", name}, {"podSetUpdates", json::array({update})}};
}

using Infos = std::variant<std::vector<PodSetInfo>, std::string, FlavorNotFound>;

struct PodSetInfosCase {
  std::string name;
  json checks;  // status.admissionChecks
  FlavorLookup flavors;
  Infos want;
};

std::vector<PodSetInfosCase> podSetInfosCases() {
  const json zoneA = {{"name", "main"}, {"nodeSelector", {{"zone", "a"}}}, {"tolerations", {kSpot}}};
  return {
      {"the flavors' node labels and tolerations, each flavor once, the spec's count and Kueue's labels", json::array(),
       everyFlavor, Infos{std::vector<PodSetInfo>{mainInfo(json::object())}}},
      {"a check's podSetUpdate is added, a toleration held already is not repeated",
       json::array({check("prov", zoneA)}), everyFlavor, Infos{std::vector<PodSetInfo>{mainInfo({{"zone", "a"}})}}},
      {"a podSetUpdate for another pod set changes nothing",
       json::array({check("prov", {{"name", "other"}, {"nodeSelector", {{"zone", "a"}}}})}), everyFlavor,
       Infos{std::vector<PodSetInfo>{mainInfo(json::object())}}},
      {"two checks' podSetUpdates that conflict are Kueue's ErrInvalidPodSetUpdate",
       json::array({check("prov", zoneA), check("second", {{"name", "main"}, {"nodeSelector", {{"zone", "b"}}}})}),
       everyFlavor,
       Infos{std::string("in admission check \"second\": invalid admission check PodSetUpdate: conflict for "
                         "nodeSelector: conflict for key=zone, value1=a, value2=b")}},
      {"a podSetUpdate that contradicts a flavor's node label conflicts",
       json::array({check("prov", {{"name", "main"}, {"nodeSelector", {{"gpu", "t4"}}}})}), everyFlavor,
       Infos{std::string("in admission check \"prov\": invalid admission check PodSetUpdate: conflict for "
                         "nodeSelector: conflict for key=gpu, value1=a100, value2=t4")}},
      // Kueue's FromAssignment answers NotFound: retried, not a conflict that finishes the Workload.
      {"a flavor that is not there is named with its pod set", json::array(), onlySpot,
       Infos{FlavorNotFound{"a100", "main"}}},
  };
}

MKA_TABLE_TEST(PodSetInfo, InfosOfAnAdmittedWorkload, PodSetInfosCase, podSetInfosCases()) {
  const auto& c = testCase();
  SCOPED_TRACE(c.name);
  EXPECT_EQ(podSetInfos(admitted(c.checks), c.flavors), c.want);
}

struct MergeMapCase {
  std::string name;
  json into, from;
  json want;                 // `into` after
  std::string wantConflict;  // "" when none
};

std::vector<MergeMapCase> mergeMapCases() {
  return {
      {"new keys are added beside the held ones",
       {{"disk", "ssd"}},
       {{"gpu", "a100"}},
       {{"disk", "ssd"}, {"gpu", "a100"}},
       ""},
      {"a key held with the same value is no conflict", {{"gpu", "a100"}}, {{"gpu", "a100"}}, {{"gpu", "a100"}}, ""},
      {"absent (null) reads as empty", nullptr, {{"gpu", "a100"}}, {{"gpu", "a100"}}, ""},
      {"a key held with another value is Kueue's conflict",
       {{"gpu", "t4"}},
       {{"gpu", "a100"}},
       {{"gpu", "t4"}},
       "conflict for nodeSelector: conflict for key=gpu, value1=t4, value2=a100"},
  };
}

MKA_TABLE_TEST(PodSetInfo, MergeMap, MergeMapCase, mergeMapCases()) {
  const auto& c = testCase();
  SCOPED_TRACE(c.name);
  json into = c.into;
  EXPECT_EQ(mergeMap(into, c.from, "nodeSelector").value_or(""), c.wantConflict);
  EXPECT_EQ(into, c.want);
}

TEST(PodSetInfo, AppendTolerationsAddsOnlyThoseNotHeld) {
  json into = nullptr;
  appendTolerations(into, json::array({kSpot}));
  EXPECT_EQ(into, json::array({kSpot})) << "absent reads as an empty list";
  appendTolerations(into, json::array({kGpu, kSpot}));
  EXPECT_EQ(into, json::array({kSpot, kGpu}));
}

}  // namespace
}  // namespace mka::api
