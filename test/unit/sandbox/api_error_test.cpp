#include "mka/sandbox/api_error.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

struct Case {
  std::string name;
  ApiError error;
  json status;  // the whole metav1.Status kube-apiserver would send
};

std::vector<Case> rendersStatusCases() {
  return {
      {"not found, core group",
       ApiError::notFound("configmaps", "x"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "configmaps \"x\" not found"},
        {"reason", "NotFound"},
        {"details", {{"name", "x"}, {"kind", "configmaps"}}},
        {"code", 404}}},
      {"not found, named group",
       ApiError::notFound("pipelineruns.tekton.dev", "build-1"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "pipelineruns.tekton.dev \"build-1\" not found"},
        {"reason", "NotFound"},
        {"details", {{"name", "build-1"}, {"group", "tekton.dev"}, {"kind", "pipelineruns"}}},
        {"code", 404}}},
      {"already exists",
       ApiError::alreadyExists("workloads.kueue.x-k8s.io", "w"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "workloads.kueue.x-k8s.io \"w\" already exists"},
        {"reason", "AlreadyExists"},
        {"details", {{"name", "w"}, {"group", "kueue.x-k8s.io"}, {"kind", "workloads"}}},
        {"code", 409}}},
      {"conflict",
       ApiError::conflict("pipelineruns.tekton.dev", "x",
                          "the object has been modified; please apply your changes to the latest version and try "
                          "again"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message",
         "Operation cannot be fulfilled on pipelineruns.tekton.dev \"x\": the object has been modified; please "
         "apply your changes to the latest version and try again"},
        {"reason", "Conflict"},
        {"details", {{"name", "x"}, {"group", "tekton.dev"}, {"kind", "pipelineruns"}}},
        {"code", 409}}},
      {"invalid with one cause",
       ApiError::invalid("PipelineRun.tekton.dev", "x",
                         {{"spec.managedBy", "Invalid value: \"a\": field is immutable", ""}}),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message",
         "PipelineRun.tekton.dev \"x\" is invalid: spec.managedBy: Invalid value: \"a\": field is immutable"},
        {"reason", "Invalid"},
        {"details",
         {{"name", "x"},
          {"group", "tekton.dev"},
          {"kind", "PipelineRun"},
          {"causes",
           {{{"reason", "FieldValueInvalid"},
             {"message", "Invalid value: \"a\": field is immutable"},
             {"field", "spec.managedBy"}}}}}},
        {"code", 422}}},
      {"invalid with several causes, typed by their wording",
       ApiError::invalid("ConfigMap", "cm",
                         {{"metadata.name", "Required value: name or generateName is required", ""},
                          {"data.a", "Unsupported value: \"b\"", "use c"}}),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message",
         "ConfigMap \"cm\" is invalid: [metadata.name: Required value: name or generateName is required, data.a: "
         "Unsupported value: \"b\": use c]"},
        {"reason", "Invalid"},
        {"details",
         {{"name", "cm"},
          {"kind", "ConfigMap"},
          {"causes",
           {{{"reason", "FieldValueRequired"},
             {"message", "Required value: name or generateName is required"},
             {"field", "metadata.name"}},
            {{"reason", "FieldValueNotSupported"},
             {"message", "Unsupported value: \"b\": use c"},
             {"field", "data.a"}}}}}},
        {"code", 422}}},
      {"bad request",
       ApiError::badRequest("nope"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "nope"},
        {"reason", "BadRequest"},
        {"code", 400}}},
      {"gone is Expired",
       ApiError::gone("too old resource version: 1 (5)"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "too old resource version: 1 (5)"},
        {"reason", "Expired"},
        {"code", 410}}},
      {"method not allowed",
       ApiError::methodNotSupported("pipelineruns.tekton.dev", "deletecollection"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "deletecollection is not supported on resources of kind \"pipelineruns.tekton.dev\""},
        {"reason", "MethodNotAllowed"},
        {"details", {{"group", "tekton.dev"}, {"kind", "pipelineruns"}}},
        {"code", 405}}},
      {"unauthorized",
       ApiError::unauthorized(),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "Unauthorized"},
        {"reason", "Unauthorized"},
        {"code", 401}}},
      {"forbidden",
       ApiError::forbidden("configmaps \"x\" is forbidden: nope"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "configmaps \"x\" is forbidden: nope"},
        {"reason", "Forbidden"},
        {"code", 403}}},
      {"internal",
       ApiError::internal("failed calling webhook \"w\": boom"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "Internal error occurred: failed calling webhook \"w\": boom"},
        {"reason", "InternalError"},
        {"details", {{"causes", {{{"message", "failed calling webhook \"w\": boom"}}}}}},
        {"code", 500}}},
      {"unsupported media type for a patch",
       ApiError::unsupportedMediaType(
           "application/strategic-merge-patch+json",
           {"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message",
         "the body of the request was in an unknown format - accepted media types include: "
         "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"},
        {"reason", "UnsupportedMediaType"},
        {"code", 415}}},
      {"unprocessable (failing JSON patch)",
       ApiError::unprocessable("testing value /a failed: test failed", "[0]"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "the server rejected our request due to an error in our request"},
        {"reason", "Invalid"},
        {"details",
         {{"causes",
           {{{"reason", "UnexpectedServerResponse"},
             {"message", "testing value /a failed: test failed"},
             {"field", "[0]"}}}}}},
        {"code", 422}}},
      {"no reason (a plain server error)",
       ApiError(500, "", "failed to create typed patch object"),
       {{"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "failed to create typed patch object"},
        {"code", 500}}},
  };
}

MKA_TABLE_TEST(ApiErrorTest, RendersStatusLikeKubeApiserver, Case, rendersStatusCases()) {
  const Case& c = testCase();
  EXPECT_EQ(c.error.status(), c.status);
  EXPECT_EQ(c.error.code(), c.status["code"].get<int>());
  EXPECT_EQ(std::string(c.error.what()), c.status["message"].get<std::string>());
}

TEST(ApiErrorTest, MetadataCarriesAContinueToken) {
  const auto error = ApiError::gone("expired").withMetadata({{"continue", "abc"}});
  EXPECT_EQ(error.status()["metadata"], (json{{"continue", "abc"}}));
  EXPECT_EQ(error.reason(), "Expired");
}

TEST(ApiErrorTest, IsAnMkaError) {
  try {
    throw ApiError::notFound("configmaps", "x");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "configmaps \"x\" not found");
  }
}

}  // namespace
}  // namespace mka::sandbox
