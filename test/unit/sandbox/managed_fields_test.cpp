#include <gtest/gtest.h>

#include "mka/sandbox/patch.h"

#include "support/table_test.h"

namespace mka::sandbox::patch {
namespace {

using nlohmann::json;

const json kConditionsSchema = json::parse(R"({"type":"object","properties":{"status":{"type":"object","properties":{
  "conditions":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["type"],
                "items":{"type":"object"}}}}}})");

json configMap(json data, json labels = nullptr) {
  json out = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cm"}, {"namespace", "ns"}}}};
  if (!labels.is_null()) out["metadata"]["labels"] = std::move(labels);
  if (!data.is_null()) out["data"] = std::move(data);
  return out;
}

UpdateOptions by(const std::string& manager, const std::string& time = "2030-01-01T00:00:00Z") {
  return {manager, "v1", "", nullptr, time};
}

json managed(const json& object) { return object["metadata"].value("managedFields", json()); }

TEST(ManagedFieldsTest, CreateOwnsEverythingTheObjectSets) {
  json created = configMap({{"k", "v"}}, {{"app", "x"}});
  recordUpdate(nullptr, created, by("kubectl-create"));
  EXPECT_EQ(managed(created), json::parse(R"([{"manager":"kubectl-create","operation":"Update","apiVersion":"v1",
    "time":"2030-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{
      "f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}}])"));
}

struct MoveCase {
  std::string name;
  json next;           // the object the second manager writes
  json creatorFields;  // creator's fieldsV1 afterwards (null: entry gone)
  json editorFields;   // editor's fieldsV1 afterwards (null: no entry)
};

std::vector<MoveCase> managedFieldsMoveCases() {
  return {
      {"changed value moves", configMap({{"k", "v2"}, {"other", "o"}}),
       json::parse(R"({"f:data":{".":{},"f:other":{}}})"), json::parse(R"({"f:data":{"f:k":{}}})")},
      {"added field goes to the editor", configMap({{"k", "v"}, {"other", "o"}, {"new", "n"}}),
       json::parse(R"({"f:data":{".":{},"f:k":{},"f:other":{}}})"), json::parse(R"({"f:data":{"f:new":{}}})")},
      {"removed field leaves everyone", configMap({{"k", "v"}}), json::parse(R"({"f:data":{".":{},"f:k":{}}})"),
       nullptr},
      {"removed map", configMap(nullptr), nullptr, nullptr},
  };
}

MKA_TABLE_TEST(ManagedFieldsTest, UpdatesMoveChangedFieldsAndDropRemovedOnes, MoveCase, managedFieldsMoveCases()) {
  const MoveCase& c = testCase();
  json created = configMap({{"k", "v"}, {"other", "o"}});
  recordUpdate(nullptr, created, by("creator"));
  json next = c.next;
  next["metadata"]["managedFields"] = created["metadata"]["managedFields"];  // as a client sends it back
  recordUpdate(created, next, by("editor", "2030-01-02T00:00:00Z"));
  json creator, editor;
  for (const auto& e : managed(next).is_array() ? managed(next) : json::array()) {
    if (e["manager"] == "creator") creator = e["fieldsV1"];
    if (e["manager"] == "editor") editor = e["fieldsV1"];
  }
  EXPECT_EQ(creator, c.creatorFields);
  EXPECT_EQ(editor, c.editorFields);
}

TEST(ManagedFieldsTest, AnUnchangedObjectKeepsItsManagedFields) {
  json created = configMap({{"k", "v"}});
  recordUpdate(nullptr, created, by("creator"));
  json same = created;
  same["metadata"].erase("managedFields");  // a client that does not send them back
  recordUpdate(created, same, by("someone-else", "2031-01-01T00:00:00Z"));
  EXPECT_EQ(managed(same), managed(created));
}

struct RequestCase {
  std::string name;
  json sent;  // metadata.managedFields in the request (null: absent)
  std::string subresource;
  std::vector<std::string> managers;  // afterwards, in order
};

std::vector<RequestCase> managedFieldsRequestCases() {
  const json userSupplied = json::parse(R"([{"manager":"mine","operation":"Update","apiVersion":"v1",
    "fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}])");
  return {
      {"absent keeps the stored ones", nullptr, "", {"creator", "editor"}},
      {"an empty list keeps the stored ones", json::array(), "", {"creator", "editor"}},
      {"a single empty entry strips them", json::array({json::object()}), "", {}},
      {"a different list replaces them", userSupplied, "", {"mine", "editor"}},
      {"a subresource ignores them", userSupplied, "status", {"creator", "editor"}},
  };
}

MKA_TABLE_TEST(ManagedFieldsTest, WhatTheRequestSaysAboutManagedFields, RequestCase, managedFieldsRequestCases()) {
  const RequestCase& c = testCase();
  json created = configMap({{"k", "v"}});
  recordUpdate(nullptr, created, by("creator"));
  json next = configMap({{"k", "v"}, {"added", "a"}});
  if (!c.sent.is_null()) next["metadata"]["managedFields"] = c.sent;
  auto options = by("editor", "2030-01-02T00:00:00Z");
  options.subresource = c.subresource;
  recordUpdate(created, next, options);
  std::vector<std::string> managers;
  for (const auto& e : managed(next).is_array() ? managed(next) : json::array()) {
    managers.push_back(e["manager"].get<std::string>());
  }
  EXPECT_EQ(managers, c.managers);
}

// Entries a client supplies are stored as kube-apiserver stores them, decoded and encoded
// again (keys it does not know dropped, fieldsV1 in canonical form), whether or not the write
// changed what they own. (Stored entries are then always in that form, which lets a later
// write keep an unchanged entry's fieldsV1 as it is.)
struct SuppliedCase {
  std::string name;
  bool changes;
};

std::vector<SuppliedCase> managedFieldsSuppliedCases() {
  return {{"the write changes nothing", false}, {"the write changes a field", true}};
}

MKA_TABLE_TEST(ManagedFieldsTest, SuppliedEntriesAreStoredInTheEncodersForm, SuppliedCase,
               managedFieldsSuppliedCases()) {
  const bool changes = testCase().changes;
  json created = configMap({{"k", "v"}});
  recordUpdate(nullptr, created, by("creator"));
  const json supplied = json::parse(R"([{"manager":"mine","operation":"Update","apiVersion":"v1","extra":true,
    "fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{".":{}}}}}])");
  json next = configMap(changes ? json{{"k", "v"}, {"added", "a"}} : json{{"k", "v"}});
  next["metadata"]["managedFields"] = supplied;
  recordUpdate(created, next, by("editor", "2030-01-02T00:00:00Z"));
  json mine;
  for (const auto& e : managed(next)) {
    if (e["manager"] == "mine") mine = e;
  }
  ASSERT_TRUE(mine.is_object());
  EXPECT_FALSE(mine.contains("extra"));
  EXPECT_EQ(mine["fieldsV1"], json::parse(R"({"f:data":{"f:k":{}}})"));
}

TEST(ManagedFieldsTest, SubresourceUpdatesAreSeparateEntries) {
  json live = configMap(nullptr);
  recordUpdate(nullptr, live, by("creator"));
  json next = live;
  next["status"] = {{"phase", "Done"}};
  recordUpdate(live, next, UpdateOptions{"creator", "v1", "status", nullptr, "2030-01-02T00:00:00Z"});
  const auto entries = managed(next);
  ASSERT_EQ(entries.size(), 1u);  // the creator's main entry owned nothing tracked
  EXPECT_EQ(entries[0]["subresource"], "status");
  EXPECT_EQ(entries[0]["fieldsV1"], json::parse(R"({"f:status":{".":{},"f:phase":{}}})"));
}

struct SchemaCase {
  std::string name;
  json schema;
  json fields;
};

std::vector<SchemaCase> managedFieldsSchemaCases() {
  return {
      {"map list per item", kConditionsSchema,
       json::parse(
           R"({"f:status":{"f:conditions":{"k:{\"type\":\"Admitted\"}":{".":{},"f:status":{},"f:type":{}}}}})")},
      {"without a schema the list is atomic", nullptr, json::parse(R"({"f:status":{"f:conditions":{}}})")},
  };
}

MKA_TABLE_TEST(ManagedFieldsTest, ListsFollowTheSchema, SchemaCase, managedFieldsSchemaCases()) {
  const SchemaCase& c = testCase();
  const json before = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
                       {"kind", "Workload"},
                       {"metadata", {{"name", "w"}}},
                       {"status", {{"conditions", json::array()}}}};
  json after = before;
  after["status"]["conditions"] = {{{"type", "Admitted"}, {"status", "True"}}};
  json out = after;
  recordUpdate(before, out, UpdateOptions{"kueue", "kueue.x-k8s.io/v1beta1", "status", &c.schema, "t"});
  EXPECT_EQ(managed(out)[0]["fieldsV1"], c.fields);
}

TEST(ManagedFieldsTest, OnlyChangedComparesThatFieldAlone) {
  json live = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
               {"kind", "Workload"},
               {"metadata", {{"name", "w"}, {"labels", {{"app", "x"}}}}},
               {"spec", {{"queueName", "q"}}},
               {"status", {{"conditions", {{{"type", "QuotaReserved"}, {"status", "True"}}}}}}};
  recordUpdate(nullptr, live, UpdateOptions{"creator", "kueue.x-k8s.io/v1beta1", "", &kConditionsSchema, "t0"});
  json next = live;
  next["metadata"].erase("managedFields");  // as a status writer sends it: no managedFields
  next["status"]["conditions"].push_back({{"type", "Admitted"}, {"status", "True"}});
  next["status"]["conditions"][0]["status"] = "False";

  json whole = next, statusOnly = next;
  UpdateOptions options{"kueue", "kueue.x-k8s.io/v1beta1", "status", &kConditionsSchema, "t1"};
  recordUpdate(live, whole, options);
  options.onlyChanged = "status";
  recordUpdate(live, statusOnly, options);
  EXPECT_EQ(managed(statusOnly), managed(whole)) << "the rest is equal: the same entries either way";
  ASSERT_EQ(managed(statusOnly).size(), 2u);
  EXPECT_EQ(managed(statusOnly)[0]["fieldsV1"], json::parse(R"({"f:metadata":{"f:labels":{".":{},"f:app":{}}},
    "f:spec":{".":{},"f:queueName":{}},"f:status":{".":{},"f:conditions":{".":{},
    "k:{\"type\":\"QuotaReserved\"}":{".":{},"f:type":{}}}}})"))
      << "the creator loses the one field changed";
  EXPECT_EQ(managed(statusOnly)[1]["fieldsV1"], json::parse(R"({"f:status":{"f:conditions":{
    "k:{\"type\":\"Admitted\"}":{".":{},"f:status":{},"f:type":{}},"k:{\"type\":\"QuotaReserved\"}":{"f:status":{}}}}})"));

  // The caller's promise is taken at its word: a difference elsewhere is not looked at.
  json labelled = live;
  labelled["metadata"]["labels"]["app"] = "y";
  recordUpdate(live, labelled, options);
  EXPECT_EQ(managed(labelled), managed(live));
}

TEST(ManagedFieldsTest, EntriesAreSortedAsKubeApiserverStoresThem) {
  json live = configMap({{"a", "1"}});
  recordUpdate(nullptr, live, by("zeta", "2030-01-01T00:00:00Z"));
  live = serverSideApply(live, configMap({{"b", "2"}}), ResourceVersionInfo{},
                         ApplyOptions{"applier", false, "", "v1", "2030-01-03T00:00:00Z"});
  json next = live;
  next["data"]["c"] = "3";
  recordUpdate(live, next, by("alpha", "2030-01-02T00:00:00Z"));
  std::vector<std::string> order;
  for (const auto& e : managed(next))
    order.push_back(e["operation"].get<std::string>() + ":" + e["manager"].get<std::string>());
  EXPECT_EQ(order, (std::vector<std::string>{"Apply:applier", "Update:zeta", "Update:alpha"}));
}

TEST(ManagedFieldsTest, TheFiveArgumentFormIsSchemaless) {
  json created = configMap({{"k", "v"}});
  recordUpdate(nullptr, created, "creator", "v1", "");
  ASSERT_EQ(managed(created).size(), 1u);
  EXPECT_EQ(managed(created)[0]["manager"], "creator");
  EXPECT_FALSE(managed(created)[0]["time"].get<std::string>().empty());
}

TEST(ManagedFieldsTest, MalformedStoredManagedFieldsAreIgnored) {
  json live = configMap({{"k", "v"}});
  live["metadata"]["managedFields"] = "garbage";
  json next = configMap({{"k", "v2"}});
  recordUpdate(live, next, by("editor"));
  ASSERT_EQ(managed(next).size(), 1u);
  EXPECT_EQ(managed(next)[0]["manager"], "editor");
}

}  // namespace
}  // namespace mka::sandbox::patch
