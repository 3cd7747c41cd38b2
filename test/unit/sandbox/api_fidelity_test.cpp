// Answers where the sandbox once diverged from kube-apiserver (issue 27, item 3): each as
// kube-apiserver 1.32 gives it. test/integration/python_client_fidelity.sh checks the same
// through the official Python client.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "support/thrown.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

class ApiFidelity : public ::testing::Test {
 protected:
  ApiFidelity() : store(/*historyLimit=*/20), api("test", registry, store, clock) {
    api.create(nsRef(), json{{"metadata", {{"name", "default"}}}});
  }

  static ResourceRef nsRef() { return {"", "v1", "namespaces", "", "", ""}; }
  static ResourceRef cmRef(const std::string& name = "") { return {"", "v1", "configmaps", "default", name, ""}; }
  static json configMap(const std::string& name, const json& data = json::object()) {
    return {{"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}}, {"data", data}};
  }

  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
};

TEST_F(ApiFidelity, AReplaceWithAnotherUidIsAConflict) {
  auto cm = *api.create(cmRef(), configMap("cm"));
  const std::string uid = cm["metadata"]["uid"];
  cm["metadata"]["uid"] = "not-the-uid";
  const auto error = mka::test::thrownBy<ApiError>([&] { api.update(cmRef("cm"), cm); });
  EXPECT_EQ(error.code(), 409);
  EXPECT_EQ(std::string(error.what()),
            "Operation cannot be fulfilled on configmaps \"cm\": StorageError: invalid object, Code: 4, Key: "
            "/registry/configmaps/default/cm, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in "
            "precondition: not-the-uid, UID in object meta: " +
                uid);
  cm["metadata"]["uid"] = uid;
  EXPECT_NO_THROW(api.update(cmRef("cm"), cm));
}

TEST_F(ApiFidelity, APatchCannotRenameOrMoveTheObject) {
  api.create(cmRef(), configMap("cm"));
  const auto renamed = mka::test::thrownBy<ApiError>(
      [&] { api.patch(cmRef("cm"), "application/merge-patch+json", R"({"metadata":{"name":"other"}})"); });
  EXPECT_EQ(renamed.code(), 400);
  EXPECT_EQ(std::string(renamed.what()), "the name of the object (other) does not match the name on the URL (cm)");
  const auto moved = mka::test::thrownBy<ApiError>(
      [&] { api.patch(cmRef("cm"), "application/merge-patch+json", R"({"metadata":{"namespace":"elsewhere"}})"); });
  EXPECT_EQ(moved.code(), 400);
}

TEST_F(ApiFidelity, FinalizerNamesAndDataKeysAreValidated) {
  auto withFinalizer = configMap("f");
  withFinalizer["metadata"]["finalizers"] = {"bad finalizer!", "example.com/fine", "kubernetes"};
  const auto finalizer = mka::test::thrownBy<ApiError>([&] { api.create(cmRef(), withFinalizer); });
  EXPECT_EQ(finalizer.code(), 422);
  EXPECT_EQ(std::string(finalizer.what()),
            "ConfigMap \"f\" is invalid: [metadata.finalizers: Invalid value: \"bad finalizer!\": name part must "
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), metadata.finalizers[0]: Invalid value: \"bad finalizer!\": "
            "name is neither a standard finalizer name nor is it fully qualified]");

  const auto key = mka::test::thrownBy<ApiError>([&] { api.create(cmRef(), configMap("k", {{"bad key", "v"}})); });
  EXPECT_EQ(key.code(), 422);
  EXPECT_EQ(std::string(key.what()),
            "ConfigMap \"k\" is invalid: data[bad key]: Invalid value: \"bad key\": a valid config key must consist of "
            "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
            "for validation is '[-._a-zA-Z0-9]+')");
  EXPECT_NO_THROW(api.create(cmRef(), configMap("good", {{"key.name", "v"}, {"KEY_NAME", "v"}})));
}

TEST_F(ApiFidelity, EmptyMetadataListsAndMapsAreNotStored) {
  auto cm = configMap("cm");
  cm["metadata"]["finalizers"] = {"example.com/hold"};
  cm["metadata"]["annotations"] = json::object();
  const auto created = *api.create(cmRef(), cm);
  EXPECT_FALSE(created["metadata"].contains("annotations")) << "Go's omitempty";
  const auto patched =
      *api.patch(cmRef("cm"), "application/json-patch+json", R"([{"op": "remove", "path": "/metadata/finalizers/0"}])");
  EXPECT_FALSE(patched["metadata"].contains("finalizers"));
  const auto merged =
      *api.patch(cmRef("cm"), "application/merge-patch+json", R"({"metadata":{"labels":{"app":null}}})");
  EXPECT_FALSE(merged["metadata"].contains("labels"));
  EXPECT_EQ(api.get(cmRef("cm"))["metadata"], merged["metadata"]);
}

TEST_F(ApiFidelity, AnExactListShowsTheStoreAsItWasAtThatRevision) {
  auto cm = *api.create(cmRef(), configMap("cm", {{"v", "1"}}));
  const std::string first = cm["metadata"]["resourceVersion"];
  cm["data"]["v"] = "2";
  api.update(cmRef("cm"), cm);
  api.create(cmRef(), configMap("later"));

  ListOptions exact;
  exact.resourceVersion = first;
  exact.resourceVersionMatch = "Exact";
  const auto then = api.list(cmRef(), exact);
  EXPECT_EQ(then["metadata"]["resourceVersion"], first);
  ASSERT_EQ(then["items"].size(), 1u) << "\"later\" did not exist yet";
  EXPECT_EQ(then["items"][0]["data"]["v"], "1");

  ListOptions notOlder = exact;
  notOlder.resourceVersionMatch = "NotOlderThan";
  EXPECT_EQ(api.list(cmRef(), notOlder)["items"].size(), 2u) << "the latest state is not older";

  // Too old for the history kept (20 events): 410; ahead of the store: 504.
  for (int i = 0; i < 25; ++i) api.create(cmRef(), configMap("filler-" + std::to_string(i)));
  const auto gone = mka::test::thrownBy<ApiError>([&] { api.list(cmRef(), exact); });
  EXPECT_EQ(gone.code(), 410);
  EXPECT_EQ(std::string(gone.what()), "The resourceVersion for the provided list is too old.");
  exact.resourceVersion = std::to_string(store.resourceVersion() + 5);
  const auto ahead = mka::test::thrownBy<ApiError>([&] { api.list(cmRef(), exact); });
  EXPECT_EQ(ahead.code(), 504);
  EXPECT_EQ(ahead.reason(), "Timeout");

  ListOptions withoutVersion;
  withoutVersion.resourceVersionMatch = "Exact";
  const auto invalid = mka::test::thrownBy<ApiError>([&] { api.list(cmRef(), withoutVersion); });
  EXPECT_EQ(invalid.code(), 422);
  EXPECT_EQ(std::string(invalid.what()),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is "
            "forbidden unless resourceVersion is provided");
}

TEST_F(ApiFidelity, DeleteCollectionDeletesWhatTheSelectorPicks) {
  api.create(cmRef(), configMap("a"));
  api.create(cmRef(), configMap("b"));
  auto other = configMap("c");
  other["metadata"]["labels"]["app"] = "y";
  api.create(cmRef(), other);
  ListOptions selection;
  selection.labelSelector = "app=x";
  const auto deleted = api.removeCollection(cmRef(), selection);
  EXPECT_EQ(deleted["kind"], "ConfigMapList");
  ASSERT_EQ(deleted["items"].size(), 2u);
  EXPECT_EQ(deleted["items"][0]["metadata"]["name"], "a");
  const auto left = api.list(cmRef(), {});
  ASSERT_EQ(left["items"].size(), 1u);
  EXPECT_EQ(left["items"][0]["metadata"]["name"], "c");
  EXPECT_EQ(mka::test::thrownBy<ApiError>([&] { api.removeCollection(nsRef(), {}); }).code(), 405)
      << "namespaces do not serve deletecollection";
}

}  // namespace
}  // namespace mka::sandbox
