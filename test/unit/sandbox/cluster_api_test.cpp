#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/admission.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "support/crd_fixtures.h"
#include "support/table_test.h"
#include "support/thrown.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct ClusterApiCreateRefusal {
  std::string name;
  std::function<void(ClusterApi& api)> call;
  int code;
  std::string message;
};

class ClusterApiTest : public ::testing::Test {
 public:
  static std::vector<ClusterApiCreateRefusal> createRefusals();

 protected:
  ClusterApiTest() : api("test", registry, store, clock) {
    api.create(nsRef(), json{{"metadata", {{"name", "default"}}}});
    api.create(crdRef(), test::pipelineRunCrd());
    api.create(crdRef(), test::workloadCrd());
  }

  static ResourceRef nsRef(const std::string& name = "") { return {"", "v1", "namespaces", "", name, ""}; }
  static ResourceRef crdRef(const std::string& name = "") {
    return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", name, ""};
  }
  static ResourceRef cmRef(const std::string& name = "", const std::string& ns = "default") {
    return {"", "v1", "configmaps", ns, name, ""};
  }
  static ResourceRef prRef(const std::string& name = "", const std::string& sub = "") {
    return {"tekton.dev", "v1", "pipelineruns", "default", name, sub};
  }
  static ResourceRef wlRef(const std::string& name = "", const std::string& sub = "") {
    return {"kueue.x-k8s.io", "v1beta1", "workloads", "default", name, sub};
  }
  static json pipelineRun(const std::string& name) {
    return {{"apiVersion", "tekton.dev/v1"},
            {"kind", "PipelineRun"},
            {"metadata", {{"name", name}, {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
            {"spec", {{"pipelineRef", {{"name", "build"}}}}}};
  }
  static std::string rv(const json& object) { return object["metadata"]["resourceVersion"].get<std::string>(); }

  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
};

TEST_F(ClusterApiTest, CreateFillsServerFields) {
  auto created = *api.create(prRef(), json{{"metadata", {{"generateName", "build-"}}},
                                           {"spec", {{"pipelineRef", {{"name", "b"}}}}},
                                           {"status", {{"conditions", json::array()}}}});
  const auto& meta = created["metadata"];
  EXPECT_THAT(meta["name"].get<std::string>(), ::testing::MatchesRegex("build-[a-z0-9]{5}"));
  EXPECT_EQ(meta["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(meta["creationTimestamp"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(meta["generation"], 1);
  EXPECT_EQ(meta["namespace"], "default");
  EXPECT_FALSE(rv(created).empty());
  EXPECT_EQ(created["apiVersion"], "tekton.dev/v1");
  EXPECT_EQ(created["kind"], "PipelineRun");
  EXPECT_FALSE(created.contains("status")) << "status is dropped on create with a status subresource";
  ASSERT_TRUE(meta.contains("managedFields"));
  EXPECT_EQ(meta["managedFields"][0]["operation"], "Update");
  EXPECT_EQ(api.get(prRef(meta["name"])), created);
}

std::vector<ClusterApiCreateRefusal> ClusterApiTest::createRefusals() {
  return {
      {"duplicate", [](ClusterApi& api) { api.create(prRef(), pipelineRun("taken")); }, 409,
       "pipelineruns.tekton.dev \"taken\" already exists"},
      {"missing namespace",
       [](ClusterApi& api) {
         api.create({"tekton.dev", "v1", "pipelineruns", "nowhere", "", ""}, pipelineRun("x"));
       },
       404, "namespaces \"nowhere\" not found"},
      {"namespace mismatch",
       [](ClusterApi& api) {
         auto o = pipelineRun("x");
         o["metadata"]["namespace"] = "other";
         api.create(prRef(), o);
       },
       400, "does not match the namespace sent on the request"},
      {"bad name", [](ClusterApi& api) { api.create(prRef(), pipelineRun("Bad_Name")); }, 422,
       "metadata.name: Invalid value: \"Bad_Name\""},
      {"no name",
       [](ClusterApi& api) {
         api.create(prRef(), json{{"spec", json::object()}});
       },
       422, "metadata.name: Required value"},
      {"wrong kind",
       [](ClusterApi& api) {
         auto o = pipelineRun("x");
         o["kind"] = "TaskRun";
         api.create(prRef(), o);
       },
       400, "does not match the expected kind"},
      {"resourceVersion set",
       [](ClusterApi& api) {
         auto o = pipelineRun("x");
         o["metadata"]["resourceVersion"] = "5";
         api.create(prRef(), o);
       },
       400, "resourceVersion should not be set on objects to be created"},
      {"unknown resource",
       [](ClusterApi& api) {
         api.create({"tekton.dev", "v1", "taskruns", "default", "", ""}, pipelineRun("x"));
       },
       404, "the server could not find the requested resource"},
      {"bad label value",
       [](ClusterApi& api) {
         auto o = pipelineRun("x");
         o["metadata"]["labels"]["a"] = "not valid!";
         api.create(prRef(), o);
       },
       422, "metadata.labels: Invalid value: \"not valid!\""},
  };
}

MKA_TABLE_TEST_F(ClusterApiTest, CreateRefusesWhatKubeApiserverRefuses, ClusterApiCreateRefusal,
                 ClusterApiTest::createRefusals()) {
  const auto& c = testCase();
  api.create(prRef(), pipelineRun("taken"));
  auto e = mka::test::thrownBy<ApiError>([&] { c.call(api); });
  EXPECT_EQ(e.code(), c.code);
  EXPECT_THAT(e.what(), HasSubstr(c.message));
}

TEST_F(ClusterApiTest, DryRunStoresNothing) {
  WriteOptions dry;
  dry.dryRun = true;
  auto answer = *api.create(prRef(), pipelineRun("dry"), dry);
  EXPECT_EQ(answer["metadata"]["name"], "dry");
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.get(prRef("dry")); }).code(), 404);
}

TEST_F(ClusterApiTest, StrictFieldValidationNamesTheUnknownField) {
  auto o = pipelineRun("strict");
  o["spec"]["notAField"] = 1;
  WriteOptions strict;
  strict.fieldValidation = "Strict";
  auto e = mka::test::thrownBy<ApiError>([&] { api.create(prRef(), o, strict); });
  EXPECT_EQ(e.code(), 400);
  EXPECT_THAT(e.what(), HasSubstr("unknown field \"spec.notAField\""));
  // Without Strict the field is pruned silently.
  auto created = *api.create(prRef(), o);
  EXPECT_FALSE(created["spec"].contains("notAField"));
}

TEST_F(ClusterApiTest, ListFiltersByLabelAndFieldSelectors) {
  for (const auto& [name, team] :
       std::vector<std::pair<std::string, std::string>>{{"a", "x"}, {"b", "y"}, {"c", "x"}}) {
    auto o = pipelineRun(name);
    o["metadata"]["labels"]["team"] = team;
    api.create(prRef(), o);
  }
  auto names = [](const json& list) {
    std::vector<std::string> out;
    for (const auto& i : list["items"]) out.push_back(i["metadata"]["name"]);
    return out;
  };
  auto all = api.list(prRef(), {});
  EXPECT_EQ(all["kind"], "PipelineRunList");
  EXPECT_EQ(all["apiVersion"], "tekton.dev/v1");
  EXPECT_EQ(all["metadata"]["resourceVersion"], std::to_string(store.resourceVersion()));
  EXPECT_EQ(names(all), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(names(api.list(prRef(), {"team=x", "", 0, ""})), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(names(api.list(prRef(), {"team=x", "metadata.name!=a", 0, ""})), (std::vector<std::string>{"c"}));
  auto e = mka::test::thrownBy<ApiError>([&] { api.list(prRef(), {"", "spec.pipelineRef.name=b", 0, ""}); });
  EXPECT_EQ(e.code(), 400);
  EXPECT_THAT(e.what(), HasSubstr("field label not supported: spec.pipelineRef.name"));
  auto allNamespaces = api.list({"tekton.dev", "v1", "pipelineruns", "", "", ""}, {});
  EXPECT_EQ(allNamespaces["items"].size(), 3u);
}

TEST_F(ClusterApiTest, UpdateIsOptimisticAndIgnoresStatusOnTheMainResource) {
  auto created = *api.create(prRef(), pipelineRun("u"));
  auto stale = created;

  auto changed = created;
  changed["spec"]["timeouts"] = {{"pipeline", "1h"}};
  changed["status"] = {{"startTime", "2027-01-01T00:00:00Z"}};
  auto updated = *api.update(prRef("u"), changed);
  EXPECT_EQ(updated["metadata"]["generation"], 2);
  EXPECT_FALSE(updated.contains("status")) << "the main resource ignores status";
  EXPECT_NE(rv(updated), rv(created));

  stale["metadata"]["labels"]["x"] = "y";
  auto e = mka::test::thrownBy<ApiError>([&] { api.update(prRef("u"), stale); });
  EXPECT_EQ(e.code(), 409);
  EXPECT_EQ(e.reason(), "Conflict");
  EXPECT_THAT(e.what(), HasSubstr("Operation cannot be fulfilled on pipelineruns.tekton.dev \"u\": the object has "
                                  "been modified"));

  // An empty resourceVersion is an unconditional update; metadata-only changes keep the generation.
  auto unconditional = updated;
  unconditional["metadata"].erase("resourceVersion");
  unconditional["metadata"]["labels"]["x"] = "z";
  auto labelled = *api.update(prRef("u"), unconditional);
  EXPECT_EQ(labelled["metadata"]["labels"]["x"], "z");
  EXPECT_EQ(labelled["metadata"]["generation"], 2);

  // Writing the same object again stores nothing.
  EXPECT_EQ(rv(*api.update(prRef("u"), labelled)), rv(labelled));

  // Dropping a whole top-level member other than metadata and status is a spec change too.
  auto specless = labelled;
  specless.erase("spec");
  EXPECT_EQ((*api.update(prRef("u"), specless))["metadata"]["generation"], 3);

  auto renamed = labelled;
  renamed["metadata"]["name"] = "other";
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.update(prRef("u"), renamed); }).code(), 400);
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.update(prRef("missing"), pipelineRun("missing")); }).code(), 404);
}

TEST_F(ClusterApiTest, StatusSubresourceWritesOnlyStatus) {
  auto created = *api.create(prRef(), pipelineRun("s"));
  auto withStatus = created;
  withStatus["status"] = {{"startTime", "2027-01-01T00:00:00Z"}};
  withStatus["spec"]["timeouts"] = {{"pipeline", "1h"}};
  withStatus["metadata"]["labels"]["ignored"] = "yes";
  auto stored = *api.update(prRef("s", "status"), withStatus);
  EXPECT_EQ(stored["status"]["startTime"], "2027-01-01T00:00:00Z");
  EXPECT_FALSE(stored["spec"].contains("timeouts")) << "status writes ignore spec";
  EXPECT_FALSE(stored["metadata"]["labels"].contains("ignored")) << "status writes ignore metadata";
  EXPECT_EQ(stored["metadata"]["generation"], 1);

  auto merged = *api.patch(prRef("s", "status"), "application/merge-patch+json",
                           R"({"status":{"completionTime":"2027-01-01T01:00:00Z"},"spec":{"status":"Cancelled"}})");
  EXPECT_EQ(merged["status"]["completionTime"], "2027-01-01T01:00:00Z");
  EXPECT_EQ(merged["status"]["startTime"], "2027-01-01T00:00:00Z");
  EXPECT_FALSE(merged["spec"].contains("status"));

  auto e = mka::test::thrownBy<ApiError>([&] {
    api.update({"", "v1", "configmaps", "default", "x", "status"}, json::object());
  });
  EXPECT_EQ(e.code(), 404) << "configmaps have no status subresource";
}

TEST_F(ClusterApiTest, StatusWritesKeepOtherManagersEntriesAndStoreNothingWhenNothingChanged) {
  api.create(prRef(), pipelineRun("m"), WriteOptions{.fieldManager = "creator"});
  const auto before = api.get(prRef("m"));
  const json creatorEntry = before["metadata"]["managedFields"][0];

  // A status writer that sends only the status, as Kueue's controllers do.
  json body = {{"apiVersion", "tekton.dev/v1"},
               {"kind", "PipelineRun"},
               {"metadata", {{"name", "m"}, {"namespace", "default"}}},
               {"status", {{"startTime", "2027-01-01T00:00:00Z"}}}};
  const auto written = api.update(prRef("m", "status"), body, WriteOptions{.fieldManager = "runner"});
  const auto& entries = (*written)["metadata"]["managedFields"];
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], creatorEntry) << "the creator's entry, fieldsV1 and time included, stays as stored";
  EXPECT_EQ(entries[1]["manager"], "runner");
  EXPECT_EQ(entries[1]["subresource"], "status");
  EXPECT_EQ(entries[1]["fieldsV1"], json::parse(R"({"f:status":{".":{},"f:startTime":{}}})"));
  EXPECT_EQ((*written)["spec"], before["spec"]);
  EXPECT_EQ((*written)["metadata"]["generation"], 1);

  const auto again = api.update(prRef("m", "status"), body, WriteOptions{.fieldManager = "runner"});
  EXPECT_EQ(again, written) << "the same status again is a no-op: the stored object, its resourceVersion kept";

  body.erase("status");
  const auto cleared = api.update(prRef("m", "status"), body, WriteOptions{.fieldManager = "runner"});
  EXPECT_FALSE(cleared->contains("status"));
  ASSERT_EQ((*cleared)["metadata"]["managedFields"].size(), 1u) << "the runner owned only what it removed";
  EXPECT_EQ((*cleared)["metadata"]["managedFields"][0], creatorEntry);
}

TEST_F(ClusterApiTest, PatchTypes) {
  api.create(prRef(), pipelineRun("p"));
  auto merged = *api.patch(prRef("p"), "application/merge-patch+json; charset=utf-8",
                           R"({"metadata":{"labels":{"kueue.x-k8s.io/queue-name":null,"a":"b"}}})");
  EXPECT_EQ(merged["metadata"]["labels"], json({{"a", "b"}}));

  auto patched = *api.patch(prRef("p"), "application/json-patch+json",
                            R"([{"op":"add","path":"/spec/managedBy","value":"kueue.x-k8s.io/multikueue"}])");
  EXPECT_EQ(patched["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
  EXPECT_EQ(patched["metadata"]["generation"], 2);

  auto e =
      mka::test::thrownBy<ApiError>([&] { api.patch(prRef("p"), "application/strategic-merge-patch+json", "{}"); });
  EXPECT_EQ(e.code(), 415) << "custom resources take no strategic merge patch";

  auto failedTest = mka::test::thrownBy<ApiError>([&] {
    api.patch(prRef("p"), "application/json-patch+json", R"([{"op":"test","path":"/spec/managedBy","value":"x"}])");
  });
  EXPECT_EQ(failedTest.code(), 422);

  auto stale = mka::test::thrownBy<ApiError>(
      [&] { api.patch(prRef("p"), "application/merge-patch+json", R"({"metadata":{"resourceVersion":"1"}})"); });
  EXPECT_EQ(stale.code(), 409);
  EXPECT_EQ(
      mka::test::thrownBy<ApiError>([&] { api.patch(prRef("p"), "application/merge-patch+json", "{not json"); }).code(),
      400);
  EXPECT_EQ(
      mka::test::thrownBy<ApiError>([&] { api.patch(prRef("nope"), "application/merge-patch+json", "{}"); }).code(),
      404);

  api.create(cmRef(), json{{"metadata", {{"name", "cm"}}}, {"data", {{"a", "1"}}}});
  auto smp = *api.patch(cmRef("cm"), "application/strategic-merge-patch+json", R"({"data":{"b":"2"}})");
  EXPECT_EQ(smp["data"], json({{"a", "1"}, {"b", "2"}}));
}

TEST_F(ClusterApiTest, ServerSideApplyMergesWorkloadStatusListsByKey) {
  WriteOptions kueue;
  kueue.fieldManager = "kueue-admission";
  const std::string wl = R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"Workload","metadata":{"name":"wl"},
    "spec":{"queueName":"q","podSets":[{"name":"main","count":1,"template":{"spec":{"containers":[]}}}]}})";
  auto created = *api.patch(wlRef("wl"), "application/apply-patch+yaml", wl, kueue);
  EXPECT_EQ(created["metadata"]["generation"], 1);
  EXPECT_EQ(created["metadata"]["managedFields"][0]["manager"], "kueue-admission");
  EXPECT_EQ(created["metadata"]["managedFields"][0]["operation"], "Apply");

  WriteOptions one;
  one.fieldManager = "check-one";
  api.patch(wlRef("wl", "status"), "application/apply-patch+yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: wl}
status:
  admissionChecks:
  - {name: multikueue, state: Pending, message: "", lastTransitionTime: "2027-01-01T00:00:00Z"}
)",
            one);
  WriteOptions two;
  two.fieldManager = "check-two";
  auto both = *api.patch(wlRef("wl", "status"), "application/apply-patch+yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: wl}
status:
  admissionChecks:
  - {name: provisioning, state: Ready, message: "", lastTransitionTime: "2027-01-01T00:00:00Z"}
)",
                         two);
  ASSERT_EQ(both["status"]["admissionChecks"].size(), 2u) << both["status"].dump();
  EXPECT_EQ(both["status"]["admissionChecks"][0]["name"], "multikueue");
  EXPECT_EQ(both["status"]["admissionChecks"][1]["name"], "provisioning");
  EXPECT_EQ(both["spec"]["queueName"], "q") << "a status apply leaves spec alone";

  WriteOptions noManager;
  auto e =
      mka::test::thrownBy<ApiError>([&] { api.patch(wlRef("wl"), "application/apply-patch+yaml", wl, noManager); });
  EXPECT_EQ(e.code(), 400);
  EXPECT_THAT(e.what(), HasSubstr("fieldManager"));
}

TEST_F(ClusterApiTest, FinalizersHoldADeletionUntilRemoved) {
  auto o = pipelineRun("f");
  o["metadata"]["finalizers"] = {"example.com/keep"};
  auto created = *api.create(prRef(), o);

  auto deleting = *api.remove(prRef("f"));
  EXPECT_EQ(deleting["metadata"]["deletionTimestamp"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(deleting["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(api.get(prRef("f"))["metadata"]["deletionTimestamp"], "2027-01-15T08:00:00Z");

  auto more = api.get(prRef("f"));
  more["metadata"]["finalizers"].push_back("example.com/another");
  auto e = mka::test::thrownBy<ApiError>([&] { api.update(prRef("f"), more); });
  EXPECT_EQ(e.code(), 422);
  EXPECT_THAT(e.what(), HasSubstr("no new finalizers can be added if the object is being deleted"));

  api.patch(prRef("f"), "application/json-patch+json", R"([{"op":"remove","path":"/metadata/finalizers"}])");
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.get(prRef("f")); }).code(), 404);
}

TEST_F(ClusterApiTest, DeleteAnswersStatusAndHonoursPreconditions) {
  auto created = *api.create(prRef(), pipelineRun("d"));
  DeleteOptions wrongUid;
  wrongUid.preconditionUid = "not-the-uid";
  auto e = mka::test::thrownBy<ApiError>([&] { api.remove(prRef("d"), wrongUid); });
  EXPECT_EQ(e.code(), 409);
  EXPECT_THAT(e.what(), HasSubstr("Precondition failed: UID in precondition: not-the-uid"));

  auto status = *api.remove(prRef("d"));
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["status"], "Success");
  EXPECT_EQ(status["details"]["name"], "d");
  EXPECT_EQ(status["details"]["group"], "tekton.dev");
  EXPECT_EQ(status["details"]["uid"], created["metadata"]["uid"]);
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.remove(prRef("d")); }).code(), 404);
}

TEST_F(ClusterApiTest, WatchWithoutResourceVersionStartsWithWhatExists) {
  api.create(prRef(), pipelineRun("before"));
  auto watch = api.watch(prRef(), {}, "");
  auto first = watch->next(std::chrono::milliseconds{0});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->type, EventType::Added);
  EXPECT_EQ(first->object->at("metadata").at("name"), "before");

  api.create(prRef(), pipelineRun("after"));
  auto second = watch->next(std::chrono::seconds{5});
  ASSERT_TRUE(second);
  EXPECT_EQ(second->type, EventType::Added);
  EXPECT_EQ(second->object->at("metadata").at("name"), "after");
  EXPECT_EQ(second->object->at("apiVersion"), "tekton.dev/v1");
}

// Watch events share the stored object; a watch at another served version gets its own copy
// with its apiVersion, and the others (and the store) keep theirs.
TEST_F(ClusterApiTest, WatchesAtDifferentVersionsEachSeeTheirOwnApiVersion) {
  ResourceRef v1beta1 = prRef();
  v1beta1.version = "v1beta1";
  auto atV1 = api.watch(prRef(), {}, "");
  auto atV1beta1 = api.watch(v1beta1, {}, "");
  api.create(prRef(), pipelineRun("r"));
  auto a = atV1->next(std::chrono::seconds{5});
  auto b = atV1beta1->next(std::chrono::seconds{5});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->object->at("apiVersion"), "tekton.dev/v1");
  EXPECT_EQ(b->object->at("apiVersion"), "tekton.dev/v1beta1");
  EXPECT_EQ(api.get(prRef("r"))["apiVersion"], "tekton.dev/v1");
}

TEST_F(ClusterApiTest, WatchFromATrimmedResourceVersionIsGone) {
  auto created = *api.create(prRef(), pipelineRun("old"));
  api.patch(prRef("old"), "application/merge-patch+json", R"({"metadata":{"labels":{"n":"1"}}})");
  store.compact();
  auto e = mka::test::thrownBy<ApiError>([&] { api.watch(prRef(), {}, rv(created)); });
  EXPECT_EQ(e.code(), 410);
  EXPECT_EQ(e.reason(), "Expired");
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.watch(prRef(), {}, "abc"); }).code(), 400);
}

TEST_F(ClusterApiTest, CrdLifecycleRegistersAndRemovesTheResource) {
  EXPECT_TRUE(registry.find("tekton.dev", "v1", "pipelineruns"));
  auto crd = api.get(crdRef("pipelineruns.tekton.dev"));
  bool established = false;
  for (const auto& c : crd["status"]["conditions"]) established |= c["type"] == "Established" && c["status"] == "True";
  EXPECT_TRUE(established);
  api.create(prRef(), pipelineRun("goes-with-the-crd"));

  api.remove(crdRef("pipelineruns.tekton.dev"));
  EXPECT_FALSE(registry.find("tekton.dev", "v1", "pipelineruns"));
  EXPECT_TRUE(store.list("tekton.dev", "pipelineruns", "", nullptr).items.empty());

  auto bad = test::pipelineRunCrd();
  bad["spec"]["names"].erase("plural");
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.create(crdRef(), bad); }).code(), 422);
}

// Without webhooks (AdmissionChain::hasWebhooks false) writes skip admission altogether.
TEST_F(ClusterApiTest, AnInactiveAdmissionIsNotCalled) {
  bool active = false;
  int calls = 0;
  api.setAdmission(
      [&](const AdmissionAttributes& a) {
        ++calls;
        return a.operation == "DELETE" ? a.oldObject : a.object;
      },
      [&] { return active; });
  api.create(prRef(), pipelineRun("quiet"));
  api.patch(prRef("quiet"), "application/merge-patch+json", R"({"metadata":{"labels":{"a":"b"}}})");
  api.remove(prRef("quiet"));
  EXPECT_EQ(calls, 0);
  active = true;
  api.create(prRef(), pipelineRun("heard"));
  EXPECT_EQ(calls, 1);
}

TEST_F(ClusterApiTest, AdmissionSeesEveryWriteAndCanMutateOrRefuse) {
  std::vector<std::string> seen;
  api.setAdmission([&](const AdmissionAttributes& a) {
    seen.push_back(a.operation + " " + a.ref.name);
    if (a.operation == "DELETE") return a.oldObject;
    json out = a.object;
    if (out["metadata"]["name"] == "refused") throw ApiError::forbidden("admission webhook \"x\" denied the request");
    out["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
    return out;
  });
  auto created = *api.create(prRef(), pipelineRun("admitted"));
  EXPECT_EQ(created["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.create(prRef(), pipelineRun("refused")); }).code(), 403);
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.get(prRef("refused")); }).code(), 404);
  api.patch(prRef("admitted"), "application/merge-patch+json", R"({"metadata":{"labels":{"a":"b"}}})");
  api.remove(prRef("admitted"));
  EXPECT_EQ(seen,
            (std::vector<std::string>{"CREATE admitted", "CREATE refused", "UPDATE admitted", "DELETE admitted"}));
}

TEST_F(ClusterApiTest, NamespacesGetTheirLabelAndPhase) {
  auto ns = api.get(nsRef("default"));
  EXPECT_EQ(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "default");
  EXPECT_EQ(ns["status"]["phase"], "Active");
  EXPECT_FALSE(ns["metadata"].contains("generation"));
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] {
              api.create(nsRef(), json{{"metadata", {{"name", "a.b"}}}});
            }).code(),
            422)
      << "namespace names are DNS labels";
}

}  // namespace
}  // namespace mka::sandbox

namespace mka::sandbox {
namespace {

// A custom resource is checked against its version's schema on every write, the status
// subresource included, and refused with kube-apiserver's 422.
TEST_F(ClusterApiTest, CustomResourcesAreValidatedAgainstTheirSchema) {
  const ResourceRef workloads{"kueue.x-k8s.io", "v1beta2", "workloads", "default", "", ""};
  json wl = {{"metadata", {{"name", "wl"}}},
             {"spec",
              {{"queueName", "q"},
               {"podSets",
                {{{"name", "main"},
                  {"count", 1},
                  {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}}}}}}}}};
  json noPodSets = wl;
  noPodSets["spec"]["podSets"] = json::array();
  const auto refused = mka::test::thrownBy<ApiError>([&] { api.create(workloads, noPodSets); });
  EXPECT_EQ(refused.code(), 422);
  EXPECT_EQ(refused.reason(), "Invalid");
  EXPECT_EQ(std::string(refused.what()),
            "Workload.kueue.x-k8s.io \"wl\" is invalid: spec.podSets: Invalid value: 0: spec.podSets in body should "
            "have at least 1 items");
  EXPECT_EQ(refused.details()["causes"][0],
            json({{"reason", "FieldValueInvalid"},
                  {"message", "Invalid value: 0: spec.podSets in body should have at least 1 items"},
                  {"field", "spec.podSets"}}));

  auto stored = *api.create(workloads, wl);
  stored["status"] = {{"conditions",
                       {{{"type", "Finished"},
                         {"status", "True"},
                         {"message", "done"},
                         {"lastTransitionTime", "2026-11-26T10:00:00Z"}}}}};
  ResourceRef status = workloads;
  status.name = "wl";
  status.subresource = "status";
  const auto statusRefused = mka::test::thrownBy<ApiError>([&] { api.update(status, stored); });
  EXPECT_EQ(std::string(statusRefused.what()),
            "Workload.kueue.x-k8s.io \"wl\" is invalid: [status.conditions[0].reason: Required value, <nil>: Invalid "
            "value: \"null\": some validation rules were not checked because the object was invalid; correct the "
            "existing errors to complete validation]");
  stored["status"]["conditions"][0]["reason"] = "Succeeded";
  EXPECT_NO_THROW(api.update(status, stored));
}

}  // namespace
}  // namespace mka::sandbox

namespace mka::sandbox {
namespace {

TEST_F(ClusterApiTest, WithoutAStatusSubresourceAStatusChangeBumpsTheGeneration) {
  api.create(crdRef(), test::argoWorkflowCrd());
  const ResourceRef workflows{"argoproj.io", "v1alpha1", "workflows", "default", "", ""};
  auto wf = *api.create(workflows, json{{"metadata", {{"name", "wf"}}}, {"spec", {{"entrypoint", "main"}}}});
  EXPECT_EQ(wf["metadata"]["generation"], 1);
  wf["status"] = {{"phase", "Running"}};
  ResourceRef named = workflows;
  named.name = "wf";
  wf = *api.update(named, wf);
  EXPECT_EQ(wf["metadata"]["generation"], 2) << "kube-apiserver counts status when the CRD has no status subresource";
  wf["metadata"]["labels"] = {{"a", "b"}};
  wf = *api.update(named, wf);
  EXPECT_EQ(wf["metadata"]["generation"], 2) << "metadata never counts";

  // With a status subresource, status is not the main resource's to change: nothing counts.
  auto run = *api.create(prRef(), pipelineRun("run"));
  run["status"] = {{"startTime", "2026-11-26T10:00:00Z"}};
  run = *api.update(prRef("run"), run);
  EXPECT_EQ(run["metadata"]["generation"], 1);
}

TEST_F(ClusterApiTest, GeneratedNamesFitInSixtyThreeCharacters) {
  const std::string prefix(70, 'a');
  auto created = *api.create(cmRef(), json{{"metadata", {{"generateName", prefix}}}});
  const auto name = created["metadata"]["name"].get<std::string>();
  EXPECT_EQ(name.size(), 63u);
  EXPECT_EQ(name.substr(0, 58), prefix.substr(0, 58));
}

}  // namespace
}  // namespace mka::sandbox
