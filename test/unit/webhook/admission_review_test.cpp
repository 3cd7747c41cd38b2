#include "mka/webhook/admission_review.h"

#include <functional>

#include <gtest/gtest.h>

#include "mka/common/base64.h"
#include "support/table_test.h"
#include "webhook_test_util.h"

namespace mka::webhook {
namespace {

using nlohmann::json;
using testing::readFixture;

json validReview() {
  return json::parse(R"({
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
      "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
      "kind": {"group": "tekton.dev", "version": "v1", "kind": "PipelineRun"},
      "resource": {"group": "tekton.dev", "version": "v1", "resource": "pipelineruns"},
      "name": "build-42",
      "namespace": "tekton-ci",
      "operation": "CREATE",
      "userInfo": {"username": "alice"},
      "object": {"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
                 "metadata": {"name": "build-42", "namespace": "tekton-ci",
                              "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
                 "spec": {"pipelineRef": {"name": "build-and-push"}}},
      "oldObject": null,
      "dryRun": false
    }
  })");
}

std::string withChange(const std::function<void(json&)>& change) {
  json review = validReview();
  change(review);
  return review.dump();
}

std::string nested(std::size_t depth) {
  std::string body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","x":)";
  body += std::string(depth, '[') + std::string(depth, ']') + "}}";
  return body;
}

struct BadCase {
  std::string name{};
  std::string body{};
  std::string field{};    // the message starts with "<field>: "
  std::string problem{};  // and contains this
};

std::vector<BadCase> rejectsBadInputNamingTheFieldAndTheFixCases() {
  const std::vector<BadCase> cases = {
      {"empty body", "", "body", "malformed JSON at byte 1"},
      {"malformed JSON reports the byte offset", R"({"apiVersion": x})", "body", "malformed JSON at byte 16"},
      {"truncated JSON", R"({"apiVersion":"admission.k8s.io/v1","kind":)", "body", "malformed JSON"},
      {"number beyond double range", R"({"apiVersion":"admission.k8s.io/v1","x":1e400})", "body",
       "malformed JSON: number overflow parsing '1e400'"},
      {"invalid UTF-8", "{\"apiVersion\":\"\xff\xfe\"}", "body", "malformed JSON"},
      {"top level array", "[1,2]", "body", "must be a JSON object (an AdmissionReview), got array"},
      {"top level string", R"("AdmissionReview")", "body", "got string"},
      {"nesting deeper than the limit", nested(kMaxJsonDepth + 1), "body", "nested deeper than 512 levels"},
      {"missing apiVersion", withChange([](json& r) { r.erase("apiVersion"); }), "apiVersion", "required"},
      {"apiVersion not a string", withChange([](json& r) { r["apiVersion"] = 1; }), "apiVersion",
       "must be a string, got number"},
      {"other apiVersion", withChange([](json& r) { r["apiVersion"] = "admission.k8s.io/v2"; }), "apiVersion",
       "unsupported value \"admission.k8s.io/v2\""},
      {"missing kind", withChange([](json& r) { r.erase("kind"); }), "kind", "required"},
      {"other kind", withChange([](json& r) { r["kind"] = "AdmissionRequest"; }), "kind",
       "unsupported value \"AdmissionRequest\""},
      {"missing request", withChange([](json& r) { r.erase("request"); }), "request", "required"},
      {"null request", withChange([](json& r) { r["request"] = nullptr; }), "request", "required"},
      {"request not an object", withChange([](json& r) { r["request"] = json::array(); }), "request",
       "must be an object, got array"},
      {"missing uid", withChange([](json& r) { r["request"].erase("uid"); }), "request.uid", "required"},
      {"empty uid", withChange([](json& r) { r["request"]["uid"] = ""; }), "request.uid", "must not be empty"},
      {"uid not a string", withChange([](json& r) { r["request"]["uid"] = 42; }), "request.uid",
       "must be a string, got number"},
      {"missing request.kind", withChange([](json& r) { r["request"].erase("kind"); }), "request.kind", "required"},
      {"request.kind not an object", withChange([](json& r) { r["request"]["kind"] = "PipelineRun"; }), "request.kind",
       "must be an object, got string"},
      {"request.kind without group", withChange([](json& r) { r["request"]["kind"].erase("group"); }),
       "request.kind.group", "required"},
      {"request.kind with empty version", withChange([](json& r) { r["request"]["kind"]["version"] = ""; }),
       "request.kind.version", "must not be empty"},
      {"request.kind without kind", withChange([](json& r) { r["request"]["kind"].erase("kind"); }),
       "request.kind.kind", "required"},
      {"request.resource not an object", withChange([](json& r) { r["request"]["resource"] = "pipelineruns"; }),
       "request.resource", "must be an object"},
      {"missing operation", withChange([](json& r) { r["request"].erase("operation"); }), "request.operation",
       "required"},
      {"unknown operation", withChange([](json& r) { r["request"]["operation"] = "PATCH"; }), "request.operation",
       "unsupported value \"PATCH\""},
      {"name not a string", withChange([](json& r) { r["request"]["name"] = json::object(); }), "request.name",
       "must be a string, got object"},
      {"dryRun not a boolean", withChange([](json& r) { r["request"]["dryRun"] = "true"; }), "request.dryRun",
       "must be a boolean, got string"},
      {"object missing on CREATE", withChange([](json& r) { r["request"].erase("object"); }), "request.object",
       "required for CREATE"},
      {"object null on UPDATE", withChange([](json& r) {
         r["request"]["operation"] = "UPDATE";
         r["request"]["oldObject"] = r["request"]["object"];
         r["request"]["object"] = nullptr;
       }),
       "request.object", "required for UPDATE"},
      {"object a string", withChange([](json& r) { r["request"]["object"] = "{\"kind\":\"PipelineRun\"}"; }),
       "request.object", "must be a JSON object, got string"},
      {"object an array on DELETE", withChange([](json& r) {
         r["request"]["operation"] = "DELETE";
         r["request"]["object"] = json::array();
       }),
       "request.object", "must be a JSON object, got array"},
      {"oldObject missing on UPDATE", withChange([](json& r) { r["request"]["operation"] = "UPDATE"; }),
       "request.oldObject", "required for UPDATE"},
      {"oldObject a number on UPDATE", withChange([](json& r) {
         r["request"]["operation"] = "UPDATE";
         r["request"]["oldObject"] = 7;
       }),
       "request.oldObject", "must be a JSON object, got number"},
      {"metadata not an object", withChange([](json& r) { r["request"]["object"]["metadata"] = "build-42"; }),
       "request.object.metadata", "must be an object, got string"},
      {"metadata.name not a string", withChange([](json& r) { r["request"]["object"]["metadata"]["name"] = 1; }),
       "request.object.metadata.name", "must be a string"},
      {"labels not an object",
       withChange([](json& r) { r["request"]["object"]["metadata"]["labels"] = json::array({"a"}); }),
       "request.object.metadata.labels", "must be an object of strings, got array"},
      {"label value not a string",
       withChange([](json& r) { r["request"]["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = 3; }),
       "request.object.metadata.labels[kueue.x-k8s.io/queue-name]", "must be a string, got number"},
      {"annotation value not a string", withChange([](json& r) {
         r["request"]["object"]["metadata"]["annotations"] = {{"a", true}};
       }),
       "request.object.metadata.annotations[a]", "must be a string, got boolean"},
  };
  return cases;
}

MKA_TABLE_TEST(DecodeAdmissionReview, RejectsBadInputNamingTheFieldAndTheFix, BadCase,
               rejectsBadInputNamingTheFieldAndTheFixCases()) {
  const BadCase& c = testCase();
  try {
    decodeAdmissionReview(c.body);
    ADD_FAILURE() << "decoded without error";
  } catch (const BadRequest& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(c.field + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.problem), std::string::npos) << message;
    // Every message ends with what to do about it: "<field>: <problem>: <fix>".
    EXPECT_NE(message.find(": ", c.field.size() + 2), std::string::npos) << message;
  }
}

TEST(DecodeAdmissionReview, AcceptsNestingUpToTheLimit) {
  // The request is incomplete, so decoding fails later, but not because of the depth.
  try {
    decodeAdmissionReview(nested(kMaxJsonDepth - 2));
    FAIL() << "expected BadRequest";
  } catch (const BadRequest& e) {
    EXPECT_EQ(std::string(e.what()).find("nested"), std::string::npos) << e.what();
  }
  // Brackets inside strings do not count.
  json review = validReview();
  review["request"]["object"]["spec"]["params"] = std::string(2000, '[');
  EXPECT_NO_THROW(decodeAdmissionReview(review.dump()));
}

TEST(DecodeAdmissionReview, ReadsEveryFieldWeUse) {
  json review = validReview();
  review["request"]["subResource"] = "status";
  review["request"]["dryRun"] = true;
  const AdmissionRequest request = decodeAdmissionReview(review.dump());
  EXPECT_EQ(request.apiVersion, "admission.k8s.io/v1");
  EXPECT_EQ(request.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(request.kind, (api::GroupVersionKind{"tekton.dev", "v1", "PipelineRun"}));
  EXPECT_EQ(request.resource, "pipelineruns");
  EXPECT_EQ(request.subResource, "status");
  EXPECT_EQ(request.operation, "CREATE");
  EXPECT_EQ(request.name, "build-42");
  EXPECT_EQ(request.namespace_, "tekton-ci");
  EXPECT_TRUE(request.dryRun);
  EXPECT_EQ(request.object, review["request"]["object"]);
  EXPECT_TRUE(request.oldObject.is_null());
}

// No decision reads managedFields: they are left out of both objects, everything else is kept.
TEST(DecodeAdmissionReview, LeavesOutTheObjectsManagedFields) {
  json review = validReview();
  review["request"]["operation"] = "UPDATE";
  review["request"]["object"]["metadata"]["managedFields"] =
      json::array({{{"manager", "kubectl"}, {"fieldsV1", {{"f:spec", {{"f:x", json::object()}}}}}}});
  review["request"]["object"]["metadata"]["annotations"] = {{"managedFields", "kept"}};
  review["request"]["oldObject"] = review["request"]["object"];
  const AdmissionRequest request = decodeAdmissionReview(review.dump());
  for (const json* object : {&request.object, &request.oldObject}) {
    json expected = review["request"]["object"];
    expected["metadata"].erase("managedFields");
    EXPECT_EQ(*object, expected);
  }
}

// Bad JSON is reported at its own byte, whatever was to be cut before it.
TEST(DecodeAdmissionReview, MalformedJsonAfterManagedFieldsIsReportedAtItsOwnByte) {
  const std::string body =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":{"metadata":)"
      R"({"managedFields":[{"manager":"kubectl"}]},"spec":x}}})";
  try {
    decodeAdmissionReview(body);
    FAIL() << "accepted malformed JSON";
  } catch (const BadRequest& e) {
    EXPECT_NE(std::string(e.what()).find("malformed JSON at byte " + std::to_string(body.find("x}") + 1)),
              std::string::npos)
        << e.what();
  }
}

struct GoodCase {
  std::string name{};
  std::string body{};
  std::string apiVersion{};
  std::string operation{};
  bool hasObject{};
  bool hasOldObject{};
};

std::vector<GoodCase> acceptsEveryShapeTheApiServerSendsCases() {
  const std::vector<GoodCase> cases = {
      {"v1 CREATE", validReview().dump(), "admission.k8s.io/v1", "CREATE", true, false},
      {"v1beta1 has the same shape", withChange([](json& r) { r["apiVersion"] = "admission.k8s.io/v1beta1"; }),
       "admission.k8s.io/v1beta1", "CREATE", true, false},
      {"UPDATE carries both objects", withChange([](json& r) {
         r["request"]["operation"] = "UPDATE";
         r["request"]["oldObject"] = r["request"]["object"];
       }),
       "admission.k8s.io/v1", "UPDATE", true, true},
      {"DELETE has a null object", withChange([](json& r) {
         r["request"]["operation"] = "DELETE";
         r["request"]["oldObject"] = r["request"]["object"];
         r["request"]["object"] = nullptr;
       }),
       "admission.k8s.io/v1", "DELETE", false, true},
      {"CONNECT may omit both", withChange([](json& r) {
         r["request"]["operation"] = "CONNECT";
         r["request"].erase("object");
         r["request"].erase("oldObject");
       }),
       "admission.k8s.io/v1", "CONNECT", false, false},
      {"optional fields absent or null", withChange([](json& r) {
         r["request"].erase("resource");
         r["request"].erase("name");
         r["request"]["namespace"] = nullptr;
         r["request"]["dryRun"] = nullptr;
         r["request"]["object"]["metadata"]["labels"] = nullptr;
       }),
       "admission.k8s.io/v1", "CREATE", true, false},
      {"core group is the empty string", withChange([](json& r) {
         r["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}};
       }),
       "admission.k8s.io/v1", "CREATE", true, false},
      {"object without metadata", withChange([](json& r) { r["request"]["object"].erase("metadata"); }),
       "admission.k8s.io/v1", "CREATE", true, false},
      {"real fixture", readFixture("pipelinerun-create-queued.json"), "admission.k8s.io/v1", "CREATE", true, false},
  };
  return cases;
}

MKA_TABLE_TEST(DecodeAdmissionReview, AcceptsEveryShapeTheApiServerSends, GoodCase,
               acceptsEveryShapeTheApiServerSendsCases()) {
  const GoodCase& c = testCase();
  AdmissionRequest request;
  ASSERT_NO_THROW(request = decodeAdmissionReview(c.body));
  EXPECT_EQ(request.apiVersion, c.apiVersion);
  EXPECT_EQ(request.operation, c.operation);
  EXPECT_EQ(request.object.is_object(), c.hasObject);
  EXPECT_EQ(request.oldObject.is_object(), c.hasOldObject);
}

struct ObjectKeyCase {
  std::string name{};
  std::string ns{};
  std::string requestName{};
  json object{};
  json oldObject{};
  std::string expected{};
};

std::vector<ObjectKeyCase> objectKeyCases() {
  const std::vector<ObjectKeyCase> cases = {
      {"request name and namespace", "tekton-ci", "build-42", json::object(), nullptr, "tekton-ci/build-42"},
      {"from the object's metadata",
       "",
       "",
       {{"metadata", {{"name", "build-7"}, {"namespace", "ci"}}}},
       nullptr,
       "ci/build-7"},
      {"generateName before the name exists",
       "tekton-ci",
       "",
       {{"metadata", {{"generateName", "build-"}}}},
       nullptr,
       "tekton-ci/build-*"},
      {"cluster-scoped object", "", "cluster-wide", json::object(), nullptr, "cluster-wide"},
      {"DELETE reads the old object",
       "",
       "",
       nullptr,
       {{"metadata", {{"name", "old"}, {"namespace", "ns"}}}},
       "ns/old"},
  };
  return cases;
}

MKA_TABLE_TEST(AdmissionRequest, ObjectKey, ObjectKeyCase, objectKeyCases()) {
  const ObjectKeyCase& c = testCase();
  AdmissionRequest request;
  request.namespace_ = c.ns;
  request.name = c.requestName;
  request.object = c.object;
  request.oldObject = c.oldObject;
  EXPECT_EQ(request.objectKey(), c.expected);
}

json encoded(const AdmissionRequest& request, const AdmissionResponse& response) {
  return json::parse(encodeAdmissionReview(request, response));
}

AdmissionRequest requestFor(std::string apiVersion) {
  AdmissionRequest request;
  request.apiVersion = std::move(apiVersion);
  request.uid = "3f1b6a2c-8d4e-4f5a-9b0c-1d2e3f4a5b6c";
  return request;
}

TEST(EncodeAdmissionReview, EchoesUidAndApiVersion) {
  for (std::string version : {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"}) {
    SCOPED_TRACE(version);
    const json out = encoded(requestFor(version), AdmissionResponse::allow());
    EXPECT_EQ(out["apiVersion"], version);
    EXPECT_EQ(out["kind"], "AdmissionReview");
    EXPECT_EQ(out["response"]["uid"], "3f1b6a2c-8d4e-4f5a-9b0c-1d2e3f4a5b6c");
    EXPECT_EQ(out["response"]["allowed"], true);
  }
}

struct ResponseShapesCase {
  std::string name{};
  AdmissionResponse response{};
  json expected{};  // the whole "response" object, with "patch" decoded
};

std::vector<ResponseShapesCase> responseShapesCases() {
  const json patch = json::parse(R"([{"op":"add","path":"/spec/managedBy","value":"kueue.x-k8s.io/multikueue"}])");
  AdmissionResponse patched;
  patched.patch = patch;
  AdmissionResponse emptyPatch;
  emptyPatch.patch = json::array();
  AdmissionResponse warned;
  warned.warnings = {"LocalQueue tekton-ci/team-a not found"};
  AdmissionResponse deniedWithPatch = AdmissionResponse::deny("ns/x: spec.managedBy: field is immutable");
  deniedWithPatch.patch = patch;
  const std::vector<ResponseShapesCase> cases = {
      {"allowed without anything else", AdmissionResponse::allow(), {{"allowed", true}}},
      {"patch as base64 JSONPatch", patched, {{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", patch}}},
      {"an empty patch is no patch", emptyPatch, {{"allowed", true}}},
      {"warnings only when there are some",
       warned,
       {{"allowed", true}, {"warnings", {"LocalQueue tekton-ci/team-a not found"}}}},
      {"denied carries a metav1.Status",
       AdmissionResponse::deny("ns/x: bad"),
       {{"allowed", false},
        {"status",
         {{"metadata", json::object()},
          {"status", "Failure"},
          {"code", 403},
          {"reason", "Forbidden"},
          {"message", "ns/x: bad"}}}}},
      {"denied with another code",
       AdmissionResponse::deny("too big", 422, "Invalid"),
       {{"allowed", false},
        {"status",
         {{"metadata", json::object()},
          {"status", "Failure"},
          {"code", 422},
          {"reason", "Invalid"},
          {"message", "too big"}}}}},
      {"a denial never carries a patch",
       deniedWithPatch,
       {{"allowed", false},
        {"status",
         {{"metadata", json::object()},
          {"status", "Failure"},
          {"code", 403},
          {"reason", "Forbidden"},
          {"message", "ns/x: spec.managedBy: field is immutable"}}}}},
  };
  return cases;
}

MKA_TABLE_TEST(EncodeAdmissionReview, ResponseShapes, ResponseShapesCase, responseShapesCases()) {
  const ResponseShapesCase& c = testCase();
  json response = encoded(requestFor("admission.k8s.io/v1"), c.response)["response"];
  EXPECT_EQ(response["uid"], "3f1b6a2c-8d4e-4f5a-9b0c-1d2e3f4a5b6c");
  response.erase("uid");
  if (response.contains("patch")) {
    auto bytes = base64Decode(response["patch"].get<std::string>());
    ASSERT_TRUE(bytes.has_value());
    response["patch"] = json::parse(*bytes);
  }
  EXPECT_EQ(response, c.expected);
}

TEST(EncodeAdmissionReview, SurvivesInvalidUtf8InAMessage) {
  std::string encodedText;
  ASSERT_NO_THROW(encodedText = encodeAdmissionReview(requestFor("admission.k8s.io/v1"),
                                                      AdmissionResponse::deny("cut \xe2\x82 in half")));
  EXPECT_FALSE(json::parse(encodedText)["response"]["allowed"].get<bool>());
}

TEST(EncodeAdmissionReview, WritesTheBytesADomSerializerWrites) {
  // Every escape class, multi-byte UTF-8, DEL, and bytes that are not UTF-8 (replaced).
  const std::vector<std::string> texts = {"",
                                          "3f1b6a2c-8d4e-4f5a-9b0c-1d2e3f4a5b6c",
                                          "quote \" backslash \\ slash /",
                                          std::string("\x00\x01\x1f\b\f\n\r\t\x7f", 10),
                                          "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                                          "cut \xe2\x82 in half",
                                          "\xff\xfe",
                                          "\xc0\xaf overlong",
                                          "\xed\xa0\x80 surrogate"};
  const json patch = json::parse(R"([{"op":"add","path":"/spec/managedBy","value":"kueue.x-k8s.io/multikueue"}])");
  for (const auto& text : texts) {
    SCOPED_TRACE(json(text).dump(-1, ' ', true, json::error_handler_t::replace));
    for (const std::string& apiVersion : std::vector<std::string>{"admission.k8s.io/v1", "", text}) {
      AdmissionRequest request = requestFor(apiVersion);
      request.uid = text;
      AdmissionResponse patched;
      patched.patch = patch;
      patched.warnings = {text, "second"};
      AdmissionResponse emptyPatch;
      emptyPatch.patch = json::array();
      AdmissionResponse denied = AdmissionResponse::deny(text, 422, text);
      denied.warnings = {text};
      denied.patch = patch;
      AdmissionResponse deniedWithoutStatus;
      deniedWithoutStatus.allowed = false;
      for (const auto& response : {AdmissionResponse::allow(), patched, emptyPatch, denied, deniedWithoutStatus}) {
        EXPECT_EQ(encodeAdmissionReview(request, response), encodeAdmissionReviewThroughDom(request, response));
      }
    }
  }
}

struct Base64VectorCase {
  std::string name;
  std::string plain;
  std::string encodedText;
};

std::vector<Base64VectorCase> rfc4648VectorsCases() {
  const std::vector<Base64VectorCase> vectors = {
      {"empty", "", ""},
      {"f", "f", "Zg=="},
      {"fo", "fo", "Zm8="},
      {"foo", "foo", "Zm9v"},
      {"foob", "foob", "Zm9vYg=="},
      {"fooba", "fooba", "Zm9vYmE="},
      {"foobar", "foobar", "Zm9vYmFy"},
      {"bytes that are not text", std::string("\xff\x00\xfe", 3), "/wD+"},
  };
  return vectors;
}

MKA_TABLE_TEST(Base64, Rfc4648Vectors, Base64VectorCase, rfc4648VectorsCases()) {
  const auto& [name, plain, encodedText] = testCase();
  SCOPED_TRACE(encodedText);
  EXPECT_EQ(base64Encode(plain), encodedText);
  EXPECT_EQ(base64Decode(encodedText), plain);
}

TEST(Base64, RejectsWhatIsNotPaddedStandardBase64) {
  for (std::string text : {"Zg=", "Z===", "Zm9v!A==", "=Zg=", "Zg==Zg==", "Zm9v\n", "Zm-_"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(base64Decode(text).has_value());
  }
}

}  // namespace
}  // namespace mka::webhook
