// The lean decoder against the DOM decoder: for every input, a handler reading bodies the lean
// way first answers byte for byte what a handler reading them through the DOM answers, for
// /mutate and /validate, under configurations that read every field the decisions read.
#include "mka/webhook/lean_admission_review.h"

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "mka/config/store.h"
#include "mka/webhook/admission_handler.h"
#include "webhook_test_util.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

// testConfig's three marker locations, and the integration rules of the built-in profiles plus
// an MPIJob rule whose suspend field shares a parent with its marker.
config::Configuration integratedConfig(config::ManagedByDefaulting policy) {
  auto cfg = testing::testConfig(policy);
  auto mpi = *config::integrationProfile(testing::kPipelineRun);
  mpi.name = "MPIJob.v2beta1.kubeflow.org";
  mpi.gvk = testing::kMpiJob;
  mpi.suspend = config::FieldValue{"spec.runPolicy.suspend", true};
  cfg.integrations.frameworks = {*config::integrationProfile(testing::kPipelineRun),
                                 *config::integrationProfile(testing::kWorkflow), mpi};
  return cfg;
}

struct Served {
  std::string name;
  config::Configuration config;
};

std::vector<Served> allSetups() {
  return {{"MultiKueueQueues", testing::testConfig()},
          {"QueueLabeled", testing::testConfig(config::ManagedByDefaulting::QueueLabeled)},
          {"IntegratedMultiKueueQueues", integratedConfig(config::ManagedByDefaulting::MultiKueueQueues)},
          {"IntegratedNever", integratedConfig(config::ManagedByDefaulting::Never)}};
}

// Two setups that between them read every field: for the long lists of inputs (a Debug build
// decodes a few thousand reviews a second).
std::vector<Served> twoSetups() {
  return {{"QueueLabeled", testing::testConfig(config::ManagedByDefaulting::QueueLabeled)},
          {"IntegratedMultiKueueQueues", integratedConfig(config::ManagedByDefaulting::MultiKueueQueues)}};
}

class LeanAdmissionReviewTest : public ::testing::Test {
 protected:
  LeanAdmissionReviewTest() {
    queues_.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
    queues_.upsertClusterQueue("team-a-cq", {"multikueue-ac"});
    queues_.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
    queues_.upsertLocalQueue("tekton-ci", "default", "team-a-cq");
    queues_.upsertLocalQueue("argo-ci", "team-b", "missing-cq");
    previousLevel_ = spdlog::get_level();
    spdlog::set_level(spdlog::level::off);
  }
  ~LeanAdmissionReviewTest() override { spdlog::set_level(previousLevel_); }

  // Every input through both handlers under every setup, on both job webhooks; returns how many
  // answers the lean decoder gave itself.
  int expectSameAnswers(const std::vector<std::string>& bodies, const std::vector<Served>& setups = allSetups()) {
    int lean = 0;
    for (const auto& setup : setups) {
      config::ConfigStore store(setup.config);
      const AdmissionHandler leanFirst(store, queues_, nullptr, Decoding::LeanFirst);
      const AdmissionHandler domOnly(store, queues_, nullptr, Decoding::DomOnly);
      for (const auto& body : bodies) {
        // A body the lean decoder declines goes down the one DOM path in both handlers.
        if (!decodeLeanAdmissionReview(body, setup.config)) continue;
        ++lean;
        for (const std::string_view path : {"/mutate", "/validate?timeout=10s"}) {
          const HttpRequest request{"POST", path, "application/json", body};
          const auto expected = domOnly.handle(request);
          const auto actual = leanFirst.handle(request);
          if (actual.status != expected.status || actual.body != expected.body) {
            ADD_FAILURE() << setup.name << " " << path << "\nbody:     " << body << "\nexpected: " << expected.status
                          << " " << expected.body << "\nactual:   " << actual.status << " " << actual.body;
            return lean;
          }
        }
      }
    }
    return lean;
  }

  webhook::InMemoryQueueIndex queues_;
  spdlog::level::level_enum previousLevel_;
};

std::vector<std::string> fixtureBodies() {
  std::vector<std::string> bodies;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MKA_FIXTURES_DIR) + "/admission")) {
    bodies.push_back(testing::readFixture(entry.path().filename().string()));
  }
  return bodies;
}

json fixture(const std::string& name) { return json::parse(testing::readFixture(name)); }

// The UPDATE of `review`'s object to itself, and to a copy changed by `edit`.
json asUpdate(json review) {
  review["request"]["operation"] = "UPDATE";
  review["request"]["oldObject"] = review["request"]["object"];
  return review;
}

// The reviews the edits start from: a CREATE and an UPDATE per marker location, and a job owned
// by another queued kind. Small ones: the 2.5 KB fixture is in the other tests.
std::vector<json> baseReviews() {
  json mpi = fixture("pipelinerun-create-queued.json");
  mpi["request"]["kind"] = {{"group", "kubeflow.org"}, {"version", "v2beta1"}, {"kind", "MPIJob"}};
  mpi["request"]["object"]["spec"] = {{"runPolicy", {{"cleanPodPolicy", "None"}}}};
  json owned = fixture("pipelinerun-create-queued.json");
  owned["request"]["object"]["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  owned["request"]["object"]["metadata"]["ownerReferences"] = {{{"apiVersion", "argoproj.io/v1alpha1"},
                                                                {"kind", "Workflow"},
                                                                {"name", "w"},
                                                                {"uid", "1"},
                                                                {"controller", true}}};
  return {fixture("pipelinerun-create-queued.json"),
          asUpdate(fixture("pipelinerun-create-queued.json")),
          fixture("workflow-create-queued.json"),
          asUpdate(fixture("workflow-create-queued.json")),
          mpi,
          asUpdate(mpi),
          owned};
}

// Where the edits go: every field the decoder or a decision reads, and their parents.
const std::vector<std::string> kEditedPointers = {
    "/apiVersion",
    "/kind",
    "/request",
    "/request/uid",
    "/request/kind",
    "/request/kind/group",
    "/request/kind/version",
    "/request/kind/kind",
    "/request/resource",
    "/request/resource/resource",
    "/request/subResource",
    "/request/operation",
    "/request/name",
    "/request/namespace",
    "/request/dryRun",
    "/request/object",
    "/request/oldObject",
    "/request/object/metadata",
    "/request/object/metadata/name",
    "/request/object/metadata/namespace",
    "/request/object/metadata/generateName",
    "/request/object/metadata/labels",
    "/request/object/metadata/annotations",
    "/request/object/metadata/ownerReferences",
    "/request/object/metadata/ownerReferences/0/controller",
    "/request/object/metadata/labels/kueue.x-k8s.io~1queue-name",
    "/request/object/metadata/labels/kueue.x-k8s.io~1prebuilt-workload-name",
    "/request/object/metadata/labels/kueue.x-k8s.io~1priority-class",
    "/request/object/metadata/labels/kueue.x-k8s.io~1max-exec-time-seconds",
    "/request/object/metadata/labels/workflows.argoproj.io~1controller-instanceid",
    "/request/object/metadata/annotations/kueue.x-k8s.io~1prebuilt-workload-name",
    "/request/object/spec",
    "/request/object/spec/managedBy",
    "/request/object/spec/status",
    "/request/object/spec/suspend",
    "/request/object/spec/runPolicy",
    "/request/object/spec/runPolicy/managedBy",
    "/request/object/spec/runPolicy/suspend",
    "/request/oldObject/metadata",
    "/request/oldObject/metadata/labels",
    "/request/oldObject/metadata/labels/kueue.x-k8s.io~1queue-name",
    "/request/oldObject/metadata/labels/kueue.x-k8s.io~1priority-class",
    "/request/oldObject/spec/managedBy",
    "/request/oldObject/spec/runPolicy/managedBy",
    "/request/oldObject/metadata/labels/workflows.argoproj.io~1controller-instanceid",
};

const std::vector<json> kEditedValues = {nullptr,
                                         0,
                                         "",
                                         "team-a",
                                         "Bad_Name",
                                         "kueue.x-k8s.io/multikueue",
                                         "multikueue",
                                         "UPDATE",
                                         "DELETE",
                                         "admission.k8s.io/v1beta1",
                                         true,
                                         false,
                                         json::object(),
                                         {{"a", "b"}},
                                         json::array({1})};

// Each base review with each edited field set to each value, and removed.
std::vector<std::string> editedBodies() {
  std::vector<std::string> bodies;
  for (const auto& base : baseReviews()) {
    for (const auto& pointer : kEditedPointers) {
      const json::json_pointer at(pointer);
      if (!base.contains(at.parent_pointer())) continue;
      for (const auto& value : kEditedValues) {
        json edited = base;
        edited[at] = value;
        bodies.push_back(edited.dump());
      }
      if (base.contains(at)) {
        json removed = base;
        removed[at.parent_pointer()].erase(at.back());
        bodies.push_back(removed.dump());
      }
    }
  }
  return bodies;
}

void replaceFirst(std::string& text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

// Text the JSON model cannot write: where simdjson and nlohmann could part ways.
std::vector<std::string> textEdits() {
  const std::string base = fixture("pipelinerun-create-2.5k.json").dump();
  std::vector<std::pair<std::string_view, std::string>> edits = {
      {"\"apiVersion\"", "\"\\u0061piVersion\""},
      {"\"request\":{", "\"request\":{\"uid\":\"first\","},
      {"\"request\":{", "\"request\":{\"operation\":\"DELETE\","},
      {"\"request\":{", "\"request\":{\"object\":null,"},
      {"\"metadata\":{", "\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"other\"},"},
      {"\"metadata\":{", "\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":1},"},
      {"\"labels\":{", "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"first\","},
      {"\"labels\":{", "\"labels\":{\"kueue.x-k8s.io/queue-name\":7,"},
      {"\"annotations\":{",
       "\"annotations\":{\"kueue.x-k8s.io/prebuilt-workload-name\":\"a\",\"kueue.x-k8s.io/"
       "prebuilt-workload-name\":\"B\","},
      {"\"spec\":{", "\"spec\":{\"managedBy\":\"x\",\"managedBy\":\"\","},
      {"\"spec\":{", "\"spec\":{\"big\":123456789012345678901234567890,"},
      {"\"spec\":{", "\"spec\":{\"huge\":1e400,"},
      {"\"spec\":{", "\"spec\":{\"tiny\":1e-400,\"neg\":-0,\"max\":18446744073709551615,"},
      {"\"spec\":{", "\"spec\":{\"lone\":\"\\udc00\","},
      {"\"spec\":{", "\"spec\":{\"high\":\"\\ud800x\","},
      {"\"spec\":{", "\"spec\":{\"pair\":\"\\ud83d\\ude00\","},
      {"\"spec\":{", "\"spec\":{\"bad\":\"\xff\","},
      {"\"spec\":{", "\"spec\":{\"overlong\":\"\xc0\xaf\","},
      {"\"spec\":{", "\"spec\":{\"escape\":\"\\x\","},
      {"\"spec\":{", "\"spec\":{\"control\":\"a\tb\","},
      {"\"spec\":{", "\"spec\":{\"nul\":\"\\u0000\","},
      {"\"managedFields\":[", "\"managedFields\":[01,"},
      {"\"managedFields\":[", "\"managedFields\":[tru,"},
      {"\"managedFields\":[", "\"managedFields\":[\"\\ud800\","},
      {"\"uid\":\"", "\"uid\":\"\\u0001\\u001f\\\"\\\\/\\b\\f\\n\\r\\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f"},
      {"\"name\":\"build-1042\"", "\"name\":\"\\u00e9\\\"x\""},
  };
  std::vector<std::string> bodies;
  for (const auto& [from, to] : edits) {
    std::string body = base;
    replaceFirst(body, from, to);
    bodies.push_back(body);
  }
  bodies.push_back("\xef\xbb\xbf" + base);
  bodies.push_back(base + " x");
  bodies.push_back(base + " \n\t\r");
  bodies.push_back(base + std::string(1, '\0'));
  bodies.push_back(" " + base);
  bodies.push_back(base.substr(0, base.size() - 1));
  // Nesting up to the limit and beyond, in the spec (4 levels down: 510 to 513 in all) and in
  // managedFields (5 levels down, cut by the DOM decoder: 511 to 514).
  for (const std::size_t depth : {506, 507, 508, 509}) {
    std::string nested = std::string(depth, '[') + std::string(depth, ']');
    std::string body = base;
    replaceFirst(body, "\"spec\":{", "\"spec\":{\"deep\":" + nested + ",");
    bodies.push_back(body);
    body = base;
    replaceFirst(body, "\"managedFields\":[", "\"managedFields\":[" + nested + ",");
    bodies.push_back(body);
  }
  // A big body: buffers of its own.
  std::string big = base;
  replaceFirst(big, "\"spec\":{", "\"spec\":{\"padding\":\"" + std::string(64 * 1024, 'p') + "\",");
  bodies.push_back(big);
  replaceFirst(big, "\"padding\":", "\"deep\":" + std::string(600, '[') + std::string(600, ']') + ",\"padding\":");
  bodies.push_back(big);
  return bodies;
}

// Seeded byte edits of every fixture: deleted, inserted and replaced bytes, mostly where JSON's
// own characters are.
std::vector<std::string> byteEdits() {
  std::mt19937 random(20261128);
  constexpr std::string_view kBytes = "{}[]\":,\\ 0-1eE.tfnu\x01\xff";
  std::vector<std::string> bodies;
  for (const auto& base : fixtureBodies()) {
    for (int i = 0; i < 40; ++i) {
      std::string body = base;
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, body.size() - 1)(random);
      const char byte = kBytes[std::uniform_int_distribution<std::size_t>(0, kBytes.size() - 1)(random)];
      switch (i % 3) {
        case 0: body.erase(at, 1); break;
        case 1: body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), byte); break;
        default: body[at] = byte; break;
      }
      bodies.push_back(std::move(body));
    }
  }
  return bodies;
}

TEST_F(LeanAdmissionReviewTest, DecodesTheWellFormedFixturesItself) {
  const auto config = integratedConfig(config::ManagedByDefaulting::MultiKueueQueues);
  for (const std::string name :
       {"pipelinerun-create-2.5k.json", "pipelinerun-create-queued.json", "pipelinerun-update-managedby-removed.json",
        "pipelinerun-delete.json", "workflow-create-queued.json", "workflow-update-instanceid-changed.json",
        "pipelinerun-create-v1beta1-review.json"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(decodeLeanAdmissionReview(testing::readFixture(name), config));
  }
}

TEST_F(LeanAdmissionReviewTest, CarriesOnlyWhatTheDecisionsRead) {
  const auto config = integratedConfig(config::ManagedByDefaulting::MultiKueueQueues);
  json review = fixture("pipelinerun-create-2.5k.json");
  review["request"]["object"]["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"] = "wl";
  const auto request = decodeLeanAdmissionReview(review.dump(), config);
  ASSERT_TRUE(request);
  const json& metadata = request->object["metadata"];
  EXPECT_FALSE(metadata.contains("managedFields"));
  EXPECT_EQ(metadata["annotations"], json({{"kueue.x-k8s.io/prebuilt-workload-name", "wl"}}));
  EXPECT_EQ(metadata["labels"], review["request"]["object"]["metadata"]["labels"]);
  EXPECT_EQ(request->object["spec"], json::object()) << "spec's parent kept, none of its fields";
  EXPECT_EQ(request->uid, review["request"]["uid"]);
  EXPECT_EQ(request->objectKey(), "tekton-ci/build-1042");
}

TEST_F(LeanAdmissionReviewTest, LeavesDuplicateKeysItReadsToTheDomDecoder) {
  std::string body = fixture("pipelinerun-create-2.5k.json").dump();
  replaceFirst(body, "\"request\":{", "\"request\":{\"uid\":\"first\",");
  EXPECT_FALSE(decodeLeanAdmissionReview(body, testing::testConfig()));
}

// kMaxJsonDepth in all (the spec is 4 levels down), in a thread's kept buffers and in a big
// body's own.
TEST_F(LeanAdmissionReviewTest, DeclinesWhatIsNestedBeyondTheDomDecodersLimit) {
  const auto config = testing::testConfig();
  for (const std::size_t padding : {std::size_t{0}, 2 * kLeanReusedBufferBytes}) {
    SCOPED_TRACE(padding);
    for (const std::size_t depth : {kMaxJsonDepth - 4, kMaxJsonDepth - 3}) {
      std::string body = fixture("pipelinerun-create-2.5k.json").dump();
      replaceFirst(body, "\"spec\":{",
                   "\"spec\":{\"pad\":\"" + std::string(padding, 'p') + "\",\"deep\":" + std::string(depth, '[') +
                       std::string(depth, ']') + ",");
      const bool withinLimit = depth + 4 <= kMaxJsonDepth;
      EXPECT_EQ(decodeLeanAdmissionReview(body, config).has_value(), withinLimit) << depth;
      if (withinLimit) {
        EXPECT_NO_THROW(decodeAdmissionReview(body));
      } else {
        EXPECT_THROW(decodeAdmissionReview(body), BadRequest);
      }
    }
  }
}

TEST_F(LeanAdmissionReviewTest, AnswersTheFixturesAsTheDomDecoderDoes) {
  EXPECT_GT(expectSameAnswers(fixtureBodies()), 0);
}

TEST_F(LeanAdmissionReviewTest, AnswersEditedFieldsAsTheDomDecoderDoes) {
  EXPECT_GT(expectSameAnswers(editedBodies(), twoSetups()), 0);
}

TEST_F(LeanAdmissionReviewTest, AnswersTextEditsAsTheDomDecoderDoes) { EXPECT_GT(expectSameAnswers(textEdits()), 0); }

TEST_F(LeanAdmissionReviewTest, AnswersByteEditsAsTheDomDecoderDoes) { expectSameAnswers(byteEdits(), twoSetups()); }

}  // namespace
}  // namespace mka::webhook
