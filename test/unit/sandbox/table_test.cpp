// Table rendering for `kubectl get`: the JSONPath subset printer columns use, kube's human
// durations, and the columns per kind.
#include "table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "mka/sandbox/api_error.h"
#include "support/crd_fixtures.h"

namespace mka::sandbox {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const json kObject = json::parse(R"({
  "metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z", "resourceVersion": "7"},
  "spec": {"queueName": "q", "items": [1, 2, 3]},
  "status": {"conditions": [{"type": "Admitted", "status": "True"}, {"type": "Finished", "status": "False"}],
             "admittedWorkloads": 4}
})");

TEST(JsonPathTest, FieldsIndexesWildcardsAndFilters) {
  EXPECT_EQ(evalJsonPath(kObject, ".spec.queueName"), std::vector<json>{"q"});
  EXPECT_EQ(evalJsonPath(kObject, "{.spec.queueName}"), std::vector<json>{"q"});
  EXPECT_EQ(evalJsonPath(kObject, ".spec.items[1]"), std::vector<json>{2});
  EXPECT_EQ(evalJsonPath(kObject, ".spec.items[-1]"), std::vector<json>{3});
  EXPECT_EQ(evalJsonPath(kObject, ".spec.items[*]"), (std::vector<json>{1, 2, 3}));
  EXPECT_EQ(evalJsonPath(kObject, ".metadata['name']"), std::vector<json>{"x"});
  EXPECT_EQ(evalJsonPath(kObject, ".status.conditions[?(@.type=='Finished')].status"), std::vector<json>{"False"});
  EXPECT_EQ(evalJsonPath(kObject, ".status.conditions[?(@.type==\"Admitted\")].status"), std::vector<json>{"True"});
  EXPECT_EQ(evalJsonPath(kObject, ".status.conditions[?(@.type!=\"Admitted\")].type"), std::vector<json>{"Finished"});
  EXPECT_TRUE(evalJsonPath(kObject, ".status.missing.deeper").empty());
  EXPECT_TRUE(evalJsonPath(kObject, ".spec.items[9]").empty());
}

TEST(JsonPathTest, MalformedPathsSayWhere) {
  try {
    evalJsonPath(kObject, ".spec[");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(".spec["));
  }
  EXPECT_THROW(evalJsonPath(kObject, ".spec.items[x]"), Error);
}

TEST(HumanDurationTest, MatchesKubectl) {
  EXPECT_EQ(humanDuration(-5s), "<invalid>");
  EXPECT_EQ(humanDuration(-1s), "0s");
  EXPECT_EQ(humanDuration(45s), "45s");
  EXPECT_EQ(humanDuration(119s), "119s");
  EXPECT_EQ(humanDuration(200s), "3m20s");
  EXPECT_EQ(humanDuration(300s), "5m");
  EXPECT_EQ(humanDuration(50min), "50m");
  EXPECT_EQ(humanDuration(5h + 30min), "5h30m");
  EXPECT_EQ(humanDuration(30h), "30h");
  EXPECT_EQ(humanDuration(24h * 3 + 2h), "3d2h");
  EXPECT_EQ(humanDuration(24h * 30), "30d");
  EXPECT_EQ(humanDuration(24h * 365 * 3), "3y");
}

TEST(TableTest, IncludeObject) {
  EXPECT_EQ(parseIncludeObject(""), TableObjects::Metadata);
  EXPECT_EQ(parseIncludeObject("None"), TableObjects::None);
  EXPECT_EQ(parseIncludeObject("Object"), TableObjects::Object);
  EXPECT_THROW(parseIncludeObject("All"), ApiError);
}

TEST(TableTest, CustomResourcesUseTheirPrinterColumns) {
  const ResourceType type = parseCrd(test::workloadCrd());
  const auto now = std::chrono::system_clock::time_point{std::chrono::seconds{1767225600 + 300}};  // +5m
  json list = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
               {"kind", "WorkloadList"},
               {"metadata", {{"resourceVersion", "9"}}},
               {"items", json::array({kObject})}};
  const json table = toTable(type, "v1beta1", list, now);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["metadata"]["resourceVersion"], "9");
  std::map<std::string, json> cells;
  for (std::size_t i = 0; i < table["columnDefinitions"].size(); ++i) {
    cells[table["columnDefinitions"][i]["name"]] = table["rows"][0]["cells"][i];
  }
  EXPECT_EQ(cells["Name"], "x");
  EXPECT_EQ(cells["Queue"], "q");
  EXPECT_EQ(cells["Admitted"], "True");
  EXPECT_EQ(cells["Finished"], "False");
  EXPECT_EQ(cells["Age"], "5m");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(table["rows"][0]["object"]["metadata"]["name"], "x");
}

TEST(TableTest, CustomResourcesWithoutColumnsGetAge) {
  json crd = test::argoWorkflowCrd();
  for (auto& v : crd["spec"]["versions"]) v.erase("additionalPrinterColumns");
  const ResourceType type = parseCrd(crd);
  const auto now = std::chrono::system_clock::time_point{std::chrono::seconds{1767225600 + 30}};
  const json table = toTable(type, type.versions.front().name, kObject, now, TableObjects::None);
  ASSERT_EQ(table["columnDefinitions"].size(), 2u);
  EXPECT_EQ(table["columnDefinitions"][1]["name"], "Age");
  EXPECT_EQ(table["rows"][0]["cells"], json::array({"x", "30s"}));
  EXPECT_FALSE(table["rows"][0].contains("object"));
  EXPECT_EQ(table["metadata"]["resourceVersion"], "7");
}

}  // namespace
}  // namespace mka::sandbox
