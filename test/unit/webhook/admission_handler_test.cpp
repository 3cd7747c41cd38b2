#include "mka/webhook/admission_handler.h"

#include <memory>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "mka/common/base64.h"
#include "mka/common/log.h"
#include "mka/observability/metrics.h"
#include "support/table_test.h"
#include "webhook_test_util.h"

namespace mka::webhook {
namespace {

using nlohmann::json;
using testing::kPipelineRun;
using testing::readFixture;
using testing::reviewBody;

json queuedPipelineRun() {
  return {{"apiVersion", "tekton.dev/v1"},
          {"kind", "PipelineRun"},
          {"metadata",
           {{"name", "build-42"}, {"namespace", "tekton-ci"}, {"labels", {{"kueue.x-k8s.io/queue-name", "team-a"}}}}},
          {"spec", {{"pipelineRef", {{"name", "build-and-push"}}}}}};
}

// Any lookup fails, as a broken informer cache might.
class ThrowingQueueIndex final : public QueueIndex {
 public:
  QueueLookup lookup(std::string_view, std::string_view, std::span<const std::string>) const override {
    throw std::runtime_error("queue cache is corrupt");
  }
  bool hasSynced() const override { return true; }
};

struct HttpCase {
  std::string name{};
  std::string method = "POST";
  std::string path = "/mutate";
  std::string contentType = "application/json";
  std::string body{};
  int status{};
  std::string reason{};   // metav1.StatusReason for errors
  std::string message{};  // the message starts with this
};

struct EchoCase {
  std::string name{};
  std::string fixture{};
  std::string apiVersion{};
  std::string uid{};
};

struct MetricsSeriesCase {
  std::string name{};
  std::vector<std::string> labels{};
  double count{};
};

// The fixture's state and helpers. A table's case runs on a harness of its own, as each TEST_F
// runs on a fixture of its own; its checks are the harness's members below.
class AdmissionHandlerHarness {
 public:
  AdmissionHandlerHarness() : store_(testing::testConfig()), handler_(store_, queues_, &metrics_) {
    queues_.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
    queues_.upsertClusterQueue("team-a-cq", {"multikueue-ac"});
    queues_.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
    queues_.upsertLocalQueue("argo-ci", "team-b", "team-b-cq");
    queues_.upsertClusterQueue("team-b-cq", {"dispatch"});
    queues_.upsertAdmissionCheck("dispatch", "multikueue-adapter.dev/dispatcher");

    previousLogger_ = spdlog::default_logger();
    logSink_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
    logSink_->set_formatter(log::makeFormatter(log::Format::Text));
    auto logger = std::make_shared<spdlog::logger>("webhook-test", logSink_);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~AdmissionHandlerHarness() { spdlog::set_default_logger(previousLogger_); }

  void answersEveryBadRequestWithAClear4xx(const HttpCase& c);
  void acceptsWhatTheApiServerSends(const HttpCase& c);
  void echoesUidAndApiVersion(const EchoCase& c);
  void recordsMetricsPerWebhookKindOperationAndResult(const MetricsSeriesCase& c);

 protected:
  void postRequestsOfEveryResult();

  HttpResponse post(std::string_view path, std::string_view body, std::string_view contentType = "application/json") {
    return handler_.handle({"POST", path, contentType, body});
  }

  // Formatted lines without their end-of-line.
  std::vector<std::string> logLines() const {
    auto lines = logSink_->last_formatted();
    for (auto& line : lines) {
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    }
    return lines;
  }

  bool logged(std::string_view level, const std::vector<std::string>& pieces) const {
    for (const auto& line : logLines()) {
      if (line.find(" level=" + std::string(level) + " ") == std::string::npos) continue;
      bool all = true;
      for (const auto& piece : pieces) all = all && line.find(piece) != std::string::npos;
      if (all) return true;
    }
    return false;
  }

  // The value of the one series of `name` carrying all `labels` (each `key="value"`), or -1.
  double series(std::string_view name, const std::vector<std::string>& labels) const {
    std::istringstream text(metrics_.render());
    double found = -1;
    for (std::string line; std::getline(text, line);) {
      if (line.rfind(std::string(name) + "{", 0) != 0) continue;
      bool all = true;
      for (const auto& label : labels) all = all && line.find(label) != std::string::npos;
      if (!all) continue;
      if (found >= 0) ADD_FAILURE() << "several series match " << name;
      found = std::stod(line.substr(line.rfind(' ') + 1));
    }
    return found;
  }

  config::ConfigStore store_;
  InMemoryQueueIndex queues_;
  observability::Metrics metrics_;
  AdmissionHandler handler_;
  std::shared_ptr<spdlog::logger> previousLogger_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> logSink_;
};

class AdmissionHandlerTest : public ::testing::Test, protected AdmissionHandlerHarness {};

std::vector<HttpCase> answersEveryBadRequestWithAClear4xxCases() {
  const std::string good = reviewBody(kPipelineRun, "CREATE", queuedPipelineRun());
  const std::vector<HttpCase> cases = {
      {.name = "unknown path",
       .path = "/admit",
       .body = good,
       .status = 404,
       .reason = "NotFound",
       .message =
           "path /admit not found: send AdmissionReviews to /mutate, /mutate-children, /validate or /validate-config"},
      {.name = "trailing slash is another path",
       .path = "/mutate/",
       .body = good,
       .status = 404,
       .reason = "NotFound",
       .message = "path /mutate/ not found"},
      {.name = "root", .path = "/", .body = good, .status = 404, .reason = "NotFound", .message = "path / not found"},
      {.name = "GET",
       .method = "GET",
       .body = "",
       .status = 405,
       .reason = "MethodNotAllowed",
       .message = "method GET not allowed on /mutate: Allow: POST"},
      {.name = "PUT on validate",
       .method = "PUT",
       .path = "/validate?timeout=10s",
       .body = good,
       .status = 405,
       .reason = "MethodNotAllowed",
       .message = "method PUT not allowed on /validate: Allow: POST"},
      {.name = "lower-case method",
       .method = "post",
       .body = good,
       .status = 405,
       .reason = "MethodNotAllowed",
       .message = "method post not allowed"},
      {.name = "text/plain",
       .contentType = "text/plain",
       .body = good,
       .status = 415,
       .reason = "UnsupportedMediaType",
       .message = "Content-Type text/plain not supported: send the AdmissionReview as application/json"},
      {.name = "no content type",
       .contentType = "",
       .body = good,
       .status = 415,
       .reason = "UnsupportedMediaType",
       .message = "Content-Type  not supported"},
      {.name = "JSON patch media type",
       .contentType = "application/json-patch+json",
       .body = good,
       .status = 415,
       .reason = "UnsupportedMediaType",
       .message = "Content-Type application/json-patch+json not supported"},
      {.name = "body over the limit",
       .body = std::string(kMaxRequestBytes + 1, ' '),
       .status = 413,
       .reason = "RequestEntityTooLarge",
       .message = "body of 3145729 bytes exceeds the limit of 3145728 bytes"},
      {.name = "malformed JSON",
       .body = "{\"apiVersion\":",
       .status = 400,
       .reason = "BadRequest",
       .message = "body: malformed JSON at byte"},
      {.name = "missing request",
       .path = "/validate",
       .body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
       .status = 400,
       .reason = "BadRequest",
       .message = "request: required"},
      {.name = "missing uid",
       .path = "/validate-config",
       .body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}})",
       .status = 400,
       .reason = "BadRequest",
       .message = "request.uid: required: send an AdmissionReview with request.uid set"},
      {.name = "object not an object",
       .body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",
           "kind":{"group":"tekton.dev","version":"v1","kind":"PipelineRun"},"operation":"CREATE","object":[]}})",
       .status = 400,
       .reason = "BadRequest",
       .message = "request.object: must be a JSON object, got array"},
  };
  return cases;
}

void AdmissionHandlerHarness::answersEveryBadRequestWithAClear4xx(const HttpCase& c) {
  const HttpResponse response = handler_.handle({c.method, c.path, c.contentType, c.body});
  EXPECT_EQ(response.status, c.status);
  EXPECT_EQ(response.contentType, "application/json; charset=utf-8");
  const json body = json::parse(response.body);
  EXPECT_EQ(body["kind"], "Status");
  EXPECT_EQ(body["apiVersion"], "v1");
  EXPECT_EQ(body["status"], "Failure");
  EXPECT_EQ(body["code"], c.status);
  EXPECT_EQ(body["reason"], c.reason);
  EXPECT_EQ(body["message"].get<std::string>().rfind(c.message, 0), 0u) << body["message"];
  EXPECT_TRUE(logged("warn", {"status=" + std::to_string(c.status), "reason=" + c.reason, "path="}))
      << "no warn line for " << c.name;
}

MKA_TABLE_TEST(AdmissionHandlerTest, AnswersEveryBadRequestWithAClear4xx, HttpCase,
               answersEveryBadRequestWithAClear4xxCases()) {
  AdmissionHandlerHarness().answersEveryBadRequestWithAClear4xx(testCase());
}

std::vector<HttpCase> acceptsWhatTheApiServerSendsCases() {
  const std::string good = reviewBody(kPipelineRun, "CREATE", queuedPipelineRun());
  const std::vector<HttpCase> cases = {
      {.name = "plain", .body = good, .status = 200},
      {.name = "timeout query string", .path = "/mutate?timeout=10s", .body = good, .status = 200},
      {.name = "charset parameter", .contentType = "application/json; charset=utf-8", .body = good, .status = 200},
      {.name = "media type case", .contentType = "Application/JSON", .body = good, .status = 200},
      {.name = "validate", .path = "/validate?timeout=30s", .body = good, .status = 200},
      {.name = "validate-config", .path = "/validate-config", .body = good, .status = 200},
      {.name = "mutate-children", .path = "/mutate-children?timeout=3s", .body = good, .status = 200},
      {.name = "a body of exactly the limit",
       .body = good + std::string(kMaxRequestBytes - good.size(), ' '),
       .status = 200},
  };
  return cases;
}

void AdmissionHandlerHarness::acceptsWhatTheApiServerSends(const HttpCase& c) {
  const HttpResponse response = handler_.handle({c.method, c.path, c.contentType, c.body});
  ASSERT_EQ(response.status, c.status) << response.body;
  const json review = json::parse(response.body);
  EXPECT_EQ(review["kind"], "AdmissionReview");
  EXPECT_EQ(review["response"]["uid"], "d4c1e3a2-0f5b-4c7e-9a8d-6b2f1e0c3d4a");
}

MKA_TABLE_TEST(AdmissionHandlerTest, AcceptsWhatTheApiServerSends, HttpCase, acceptsWhatTheApiServerSendsCases()) {
  AdmissionHandlerHarness().acceptsWhatTheApiServerSends(testCase());
}

std::vector<EchoCase> echoesUidAndApiVersionCases() {
  const std::vector<EchoCase> cases = {
      {"v1", "pipelinerun-create-queued.json", "admission.k8s.io/v1", "0c4e5f3a-1b2d-4e6f-8a9b-1c2d3e4f5a60"},
      {"v1beta1", "pipelinerun-create-v1beta1-review.json", "admission.k8s.io/v1beta1",
       "7dbfc0ab-8c9e-4fd6-8abc-8d9eafb0c1d7"},
  };
  return cases;
}

void AdmissionHandlerHarness::echoesUidAndApiVersion(const EchoCase& c) {
  for (std::string path : {"/mutate", "/validate"}) {
    SCOPED_TRACE(path);
    const auto response = post(path, readFixture(c.fixture));
    ASSERT_EQ(response.status, 200) << response.body;
    const json review = json::parse(response.body);
    EXPECT_EQ(review["apiVersion"], c.apiVersion);
    EXPECT_EQ(review["response"]["uid"], c.uid);
  }
}

MKA_TABLE_TEST(AdmissionHandlerTest, EchoesUidAndApiVersion, EchoCase, echoesUidAndApiVersionCases()) {
  AdmissionHandlerHarness().echoesUidAndApiVersion(testCase());
}

TEST_F(AdmissionHandlerTest, DryRunIsAnsweredLikeAnyOtherRequest) {
  json object = queuedPipelineRun();
  json dryRun = json::parse(reviewBody(kPipelineRun, "CREATE", object));
  dryRun["request"]["dryRun"] = true;
  const auto normal = json::parse(post("/mutate", reviewBody(kPipelineRun, "CREATE", object)).body);
  const auto dry = json::parse(post("/mutate", dryRun.dump()).body);
  EXPECT_EQ(dry["response"]["patchType"], "JSONPatch");
  EXPECT_EQ(dry, normal);
}

TEST_F(AdmissionHandlerTest, AnExceptionInADecisionIsA500NotACrash) {
  ThrowingQueueIndex broken;
  AdmissionHandler handler(store_, broken, &metrics_);
  const auto response =
      handler.handle({"POST", "/mutate", "application/json", reviewBody(kPipelineRun, "CREATE", queuedPipelineRun())});
  EXPECT_EQ(response.status, 500);
  const json body = json::parse(response.body);
  EXPECT_EQ(body["reason"], "InternalError");
  EXPECT_EQ(body["message"], "internal error while deciding: queue cache is corrupt");
  EXPECT_TRUE(logged("warn", {"path=/mutate", "status=500", "reason=InternalError"}));
  EXPECT_EQ(series("multikueue_adapter_webhook_requests_total",
                   {R"(webhook="mutate")", R"(kind="PipelineRun")", R"(operation="CREATE")", R"(result="error")"}),
            1);
}

// The handler keeps the series it used last per thread: each Metrics still counts its own
// requests, and a kind after another in the same slot gets its own series.
TEST_F(AdmissionHandlerTest, RecordsIntoTheMetricsOfEachHandlerAndKind) {
  observability::Metrics other;
  AdmissionHandler second(store_, queues_, &other);
  json workflow = {{"apiVersion", "argoproj.io/v1alpha1"},
                   {"kind", "Workflow"},
                   {"metadata", {{"name", "w"}, {"namespace", "argo-ci"}}}};
  const std::string pipelineRun = reviewBody(kPipelineRun, "CREATE", queuedPipelineRun());
  const std::string workflowRun = reviewBody(testing::kWorkflow, "CREATE", workflow);
  for (int i = 0; i < 3; ++i) {
    post("/mutate", pipelineRun);
    second.handle({"POST", "/mutate", "application/json", pipelineRun});
    post("/validate", workflowRun);
    post("/validate", pipelineRun);
  }
  EXPECT_EQ(series("multikueue_adapter_webhook_requests_total", {R"(webhook="mutate")", R"(kind="PipelineRun")"}), 3);
  EXPECT_EQ(series("multikueue_adapter_webhook_requests_total", {R"(webhook="validate")", R"(kind="Workflow")"}), 3);
  EXPECT_EQ(series("multikueue_adapter_webhook_requests_total", {R"(webhook="validate")", R"(kind="PipelineRun")"}), 3);
  EXPECT_NE(
      other.render().find(
          R"(multikueue_adapter_webhook_requests_total{kind="PipelineRun",operation="CREATE",result="patched",webhook="mutate"} 3)"),
      std::string::npos)
      << other.render();
}

TEST_F(AdmissionHandlerTest, TakesTheConfigurationInForceForEachRequest) {
  const std::string body = reviewBody(kPipelineRun, "CREATE", queuedPipelineRun());
  EXPECT_EQ(json::parse(post("/mutate", body).body)["response"].value("patchType", ""), "JSONPatch");
  store_.set(testing::testConfig(config::ManagedByDefaulting::Never));
  EXPECT_FALSE(json::parse(post("/mutate", body).body)["response"].contains("patch"));
}

// The requests the metrics cases count: two patched, one allowed, one denied, one undecodable,
// one with the wrong method and one to an unknown path.
void AdmissionHandlerHarness::postRequestsOfEveryResult() {
  json foreign = queuedPipelineRun();
  foreign["spec"]["managedBy"] = "pipelines.example.com/custom-runner";
  json badQueue = queuedPipelineRun();
  badQueue["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "Team_A";

  post("/mutate", reviewBody(kPipelineRun, "CREATE", queuedPipelineRun()));
  post("/mutate?timeout=10s", reviewBody(kPipelineRun, "CREATE", queuedPipelineRun()));
  post("/mutate", reviewBody(kPipelineRun, "CREATE", foreign));
  post("/validate", reviewBody(kPipelineRun, "CREATE", badQueue));
  post("/validate", "not json");
  handler_.handle({"GET", "/validate-config", "application/json", ""});
  post("/nowhere", "{}");
}

std::vector<MetricsSeriesCase> recordsMetricsPerWebhookKindOperationAndResultCases() {
  const std::vector<MetricsSeriesCase> cases = {
      {"patched", {R"(webhook="mutate")", R"(kind="PipelineRun")", R"(operation="CREATE")", R"(result="patched")"}, 2},
      {"allowed", {R"(webhook="mutate")", R"(kind="PipelineRun")", R"(result="allowed")"}, 1},
      {"denied", {R"(webhook="validate")", R"(kind="PipelineRun")", R"(result="denied")"}, 1},
      {"undecodable body has no kind", {R"(webhook="validate")", R"(kind="")", R"(result="error")"}, 1},
      {"wrong method", {R"(webhook="validate-config")", R"(result="error")"}, 1},
  };
  return cases;
}

void AdmissionHandlerHarness::recordsMetricsPerWebhookKindOperationAndResult(const MetricsSeriesCase& c) {
  postRequestsOfEveryResult();
  EXPECT_EQ(series("multikueue_adapter_webhook_requests_total", c.labels), c.count);
  EXPECT_EQ(series("multikueue_adapter_webhook_request_duration_seconds_count", c.labels), c.count);
}

MKA_TABLE_TEST(AdmissionHandlerTest, RecordsMetricsPerWebhookKindOperationAndResult, MetricsSeriesCase,
               recordsMetricsPerWebhookKindOperationAndResultCases()) {
  AdmissionHandlerHarness().recordsMetricsPerWebhookKindOperationAndResult(testCase());
}

TEST_F(AdmissionHandlerTest, RecordsMetricsPerWebhookKindOperationAndResult) {
  postRequestsOfEveryResult();
  // Unknown paths stay out of the metrics: their label values would be unbounded.
  EXPECT_EQ(metrics_.render().find("nowhere"), std::string::npos);
}

TEST_F(AdmissionHandlerTest, WorksWithoutMetrics) {
  AdmissionHandler handler(store_, queues_, nullptr);
  EXPECT_EQ(
      handler.handle({"POST", "/mutate", "application/json", reviewBody(kPipelineRun, "CREATE", queuedPipelineRun())})
          .status,
      200);
  EXPECT_EQ(handler.handle({"POST", "/mutate", "application/json", "{"}).status, 400);
}

TEST_F(AdmissionHandlerTest, LogsEachAnswerAtDebugWithItsValuesAsFields) {
  const auto response = post("/mutate", readFixture("pipelinerun-create-queued.json"));
  ASSERT_EQ(response.status, 200);
  EXPECT_TRUE(logged(
      "debug", {"webhook=mutate", "uid=0c4e5f3a-1b2d-4e6f-8a9b-1c2d3e4f5a60", "kind=PipelineRun",
                "object=tekton-ci/build-42", "operation=CREATE", "dryRun=false", "result=patched", "patchOps=1"}));
}

TEST_F(AdmissionHandlerTest, QuotesUntrustedValuesInLogRecords) {
  post("/mutate\nlevel=error fake=entry", "{}");
  bool found = false;
  for (const auto& line : logLines()) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    found = found || line.find(R"(path="/mutate\nlevel=error fake=entry")") != std::string::npos;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace mka::webhook
