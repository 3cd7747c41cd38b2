// End to end through AdmissionHandler with the AdmissionReviews in test/fixtures/admission,
// built from real Tekton PipelineRun v1, Argo Workflow v1alpha1 and ConfigMap requests.

#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

#include "mka/common/base64.h"
#include "mka/webhook/admission_handler.h"
#include "support/table_test.h"
#include "webhook_test_util.h"

namespace mka::webhook {
namespace {

using nlohmann::json;
using testing::readFixture;

struct Case {
  std::string name{};  // "<fixture> <path>", set by eachFixtureGetsItsAnswerCases()
  std::string fixture{};
  std::string path{};
  std::string expect{};  // patched | allowed | denied
  // patched: the pointer the patch sets, and its value.
  std::string marker{};
  std::string value = "kueue.x-k8s.io/multikueue";
  std::vector<std::string> messageContains{};  // denied: pieces of status.message
  std::string warningContains{};               // "" when no warning is expected
};

// The handler and its queues. Each case runs on a harness of its own, as a TEST_F runs on a
// fixture of its own.
class FixturesHarness {
 public:
  FixturesHarness() : store_(testing::testConfig()), handler_(store_, queues_, nullptr) {
    queues_.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
    queues_.upsertClusterQueue("team-a-cq", {"multikueue-ac"});
    queues_.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
    queues_.upsertLocalQueue("argo-ci", "team-b", "team-b-cq");
    queues_.upsertClusterQueue("team-b-cq", {"dispatch"});
    queues_.upsertAdmissionCheck("dispatch", "multikueue-adapter.dev/dispatcher");
  }

  void eachFixtureGetsItsAnswer(const Case& c);

 private:
  config::ConfigStore store_;
  InMemoryQueueIndex queues_;
  AdmissionHandler handler_;
};

std::vector<Case> eachFixtureGetsItsAnswerCases() {
  const std::string specMarker = "/spec/managedBy";
  const std::string argoMarker = "/metadata/labels/workflows.argoproj.io~1controller-instanceid";
  std::vector<Case> cases = {
      {.fixture = "pipelinerun-create-queued.json", .path = "/mutate", .expect = "patched", .marker = specMarker},
      {.fixture = "pipelinerun-create-queued.json", .path = "/validate", .expect = "allowed"},
      {.fixture = "pipelinerun-create-unqueued.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "pipelinerun-create-no-labels.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "pipelinerun-create-no-spec.json", .path = "/mutate", .expect = "patched", .marker = specMarker},
      {.fixture = "pipelinerun-create-foreign-managedby.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "pipelinerun-create-foreign-managedby.json", .path = "/validate", .expect = "allowed"},
      {.fixture = "pipelinerun-create-generatename.json", .path = "/mutate", .expect = "patched", .marker = specMarker},
      {.fixture = "pipelinerun-create-dryrun.json", .path = "/mutate", .expect = "patched", .marker = specMarker},
      {.fixture = "pipelinerun-create-v1beta1-review.json",
       .path = "/mutate",
       .expect = "patched",
       .marker = specMarker},
      {.fixture = "pipelinerun-create-2.5k.json",
       .path = "/mutate?timeout=10s",
       .expect = "patched",
       .marker = specMarker},
      {.fixture = "pipelinerun-create-2.5k.json", .path = "/validate?timeout=10s", .expect = "allowed"},
      {.fixture = "pipelinerun-create-invalid-queue-name.json",
       .path = "/validate",
       .expect = "denied",
       .messageContains = {"tekton-ci/build-49: metadata.labels[kueue.x-k8s.io/queue-name]: invalid value "
                           "\"Team_A\": a lowercase RFC 1123 subdomain"}},
      {.fixture = "pipelinerun-create-invalid-queue-name.json",
       .path = "/mutate",
       .expect = "allowed",
       .warningContains = "LocalQueue tekton-ci/Team_A not found"},
      {.fixture = "pipelinerun-create-invalid-prebuilt-annotation.json",
       .path = "/validate",
       .expect = "denied",
       .messageContains = {"tekton-ci/build-50: metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: "
                           "invalid value \"PipelineRun_build-50\""}},
      {.fixture = "pipelinerun-create-managedby-without-queue.json",
       .path = "/validate",
       .expect = "allowed",
       .warningContains = "tekton-ci/build-51: spec.managedBy is set without label kueue.x-k8s.io/queue-name"},
      {.fixture = "pipelinerun-create-managedby-without-queue.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "pipelinerun-update-managedby-removed.json",
       .path = "/validate",
       .expect = "denied",
       .messageContains = {"tekton-ci/build-52: spec.managedBy: field is immutable: it was "
                           "\"kueue.x-k8s.io/multikueue\" and the update removes it"}},
      {.fixture = "pipelinerun-update-managedby-removed.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "pipelinerun-update-managedby-unchanged.json", .path = "/validate", .expect = "allowed"},
      {.fixture = "pipelinerun-delete.json", .path = "/validate", .expect = "allowed"},
      {.fixture = "pipelinerun-delete.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "workflow-create-queued.json",
       .path = "/mutate",
       .expect = "patched",
       .marker = argoMarker,
       .value = "multikueue"},
      {.fixture = "workflow-create-queued.json", .path = "/validate", .expect = "allowed"},
      {.fixture = "workflow-create-no-labels.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "workflow-create-foreign-instanceid.json", .path = "/mutate", .expect = "allowed"},
      {.fixture = "workflow-create-foreign-instanceid.json", .path = "/validate", .expect = "allowed"},
      {.fixture = "workflow-update-instanceid-changed.json",
       .path = "/validate",
       .expect = "denied",
       .messageContains = {"argo-ci/dag-diamond-q7m2x: metadata.labels[workflows.argoproj.io/controller-instanceid]: "
                           "field is immutable: it was \"multikueue\" and the update sets \"team-b-controller\""}},
      {.fixture = "configmap-create-adapter-config.json", .path = "/validate-config", .expect = "allowed"},
      {.fixture = "configmap-create-kueue-config.json", .path = "/validate-config", .expect = "allowed"},
      {.fixture = "configmap-update-invalid-config.json",
       .path = "/validate-config",
       .expect = "denied",
       .messageContains = {"kueue-system/multikueue-adapter-config: data[config.yaml].", "managedByDefaulting",
                           "multikueue", "; "}},
      {.fixture = "configmap-create-no-yaml-key.json",
       .path = "/validate-config",
       .expect = "denied",
       .messageContains = {"kueue-system/multikueue-adapter-config: data: no configuration found"}},
      {.fixture = "configmap-create-unlabelled.json", .path = "/validate-config", .expect = "allowed"},
  };
  for (auto& c : cases) c.name = c.fixture + " " + c.path;
  return cases;
}

void FixturesHarness::eachFixtureGetsItsAnswer(const Case& c) {
  SCOPED_TRACE(c.fixture + " " + c.path);
  const std::string body = readFixture(c.fixture);
  const json request = json::parse(body);
  const HttpResponse http = handler_.handle({"POST", c.path, "application/json", body});
  ASSERT_EQ(http.status, 200) << http.body;
  const json review = json::parse(http.body);
  EXPECT_EQ(review["apiVersion"], request["apiVersion"]);
  const json& response = review["response"];
  EXPECT_EQ(response["uid"], request["request"]["uid"]);
  EXPECT_EQ(response["allowed"], c.expect != "denied");
  EXPECT_EQ(response.contains("patch"), c.expect == "patched");
  EXPECT_EQ(response.contains("patchType"), c.expect == "patched");

  if (c.warningContains.empty()) {
    EXPECT_FALSE(response.contains("warnings")) << response["warnings"];
  } else {
    ASSERT_TRUE(response.contains("warnings"));
    ASSERT_EQ(response["warnings"].size(), 1u);
    EXPECT_NE(response["warnings"][0].get<std::string>().find(c.warningContains), std::string::npos)
        << response["warnings"][0];
  }

  if (c.expect == "denied") {
    EXPECT_EQ(response["status"]["code"], 403);
    EXPECT_EQ(response["status"]["reason"], "Forbidden");
    const std::string message = response["status"]["message"];
    for (const auto& piece : c.messageContains) {
      EXPECT_NE(message.find(piece), std::string::npos) << "missing: " << piece << "\nin: " << message;
    }
  }

  if (c.expect == "patched") {
    EXPECT_EQ(response["patchType"], "JSONPatch");
    const auto patchText = base64Decode(response["patch"].get<std::string>());
    ASSERT_TRUE(patchText.has_value());
    const json& object = request["request"]["object"];
    json expected = object;
    expected[json::json_pointer(c.marker)] = c.value;
    EXPECT_EQ(object.patch(json::parse(*patchText)), expected) << *patchText;
  }
}

MKA_TABLE_TEST(FixturesTest, EachFixtureGetsItsAnswer, Case, eachFixtureGetsItsAnswerCases()) {
  FixturesHarness().eachFixtureGetsItsAnswer(testCase());
}

// The fixtures stand for real jobs, so they must keep looking like them.
TEST(WebhookFixtures, LookLikeRealJobs) {
  const std::filesystem::path dir = std::filesystem::path(MKA_FIXTURES_DIR) / "admission";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    const json review = json::parse(readFixture(name));
    const json& request = review.at("request");
    const json& object = request.at("object").is_object() ? request.at("object") : request.at("oldObject");
    if (name.rfind("pipelinerun-", 0) == 0) {
      EXPECT_EQ(object.at("apiVersion"), "tekton.dev/v1");
      EXPECT_EQ(object.at("kind"), "PipelineRun");
      if (name != "pipelinerun-create-no-spec.json") {
        EXPECT_TRUE(object.at("spec").contains("pipelineRef"));
        EXPECT_TRUE(object.at("spec").contains("params"));
        EXPECT_TRUE(object.at("spec").contains("workspaces"));
      }
      ++checked;
    } else if (name.rfind("workflow-", 0) == 0) {
      EXPECT_EQ(object.at("apiVersion"), "argoproj.io/v1alpha1");
      EXPECT_EQ(object.at("kind"), "Workflow");
      EXPECT_TRUE(object.at("spec").contains("entrypoint"));
      EXPECT_FALSE(object.at("spec").at("templates").empty());
      ++checked;
    } else if (name.rfind("configmap-", 0) == 0) {
      EXPECT_EQ(request.at("kind").at("kind"), "ConfigMap");
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
  // The benchmark's request is about 2.5 KB, like a typical PipelineRun.
  const auto size = std::filesystem::file_size(dir / "pipelinerun-create-2.5k.json");
  EXPECT_GE(size, 2300u);
  EXPECT_LE(size, 2700u);
}

}  // namespace
}  // namespace mka::webhook
