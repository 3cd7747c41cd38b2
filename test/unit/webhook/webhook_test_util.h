#pragma once
// Shared by the webhook tests: a configuration with one framework per managedBy location,
// fixture loading and small JSON helpers.

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"

namespace mka::webhook::testing {

using nlohmann::json;

inline config::ExternalFramework pathFramework(std::string name, api::GroupVersionKind gvk, std::string path) {
  config::ExternalFramework fw;
  fw.name = std::move(name);
  fw.gvk = std::move(gvk);
  fw.managedBy.type = config::ManagedByLocation::Type::Path;
  fw.managedBy.path = std::move(path);
  fw.managedBy.value = std::string(api::kMultiKueueControllerName);
  return fw;
}

inline config::ExternalFramework labelFramework(std::string name, api::GroupVersionKind gvk, std::string key,
                                                std::string value) {
  config::ExternalFramework fw;
  fw.name = std::move(name);
  fw.gvk = std::move(gvk);
  fw.managedBy.type = config::ManagedByLocation::Type::Label;
  fw.managedBy.path.clear();
  fw.managedBy.labelKey = std::move(key);
  fw.managedBy.value = std::move(value);
  return fw;
}

inline const api::GroupVersionKind kPipelineRun{"tekton.dev", "v1", "PipelineRun"};
inline const api::GroupVersionKind kWorkflow{"argoproj.io", "v1alpha1", "Workflow"};
inline const api::GroupVersionKind kMpiJob{"kubeflow.org", "v2beta1", "MPIJob"};
inline const api::GroupVersionKind kConfigMap{"", "v1", "ConfigMap"};
inline constexpr std::string_view kArgoLabel = config::kArgoInstanceIdLabel;

// Tekton (spec.managedBy), Argo (label with a '/' in its key) and an MPIJob-like kind
// (spec.runPolicy.managedBy): one framework per kind of location.
inline config::Configuration testConfig(
    config::ManagedByDefaulting policy = config::ManagedByDefaulting::MultiKueueQueues) {
  config::Configuration cfg;
  cfg.managedByDefaulting = policy;
  cfg.multiKueue.externalFrameworks = {
      pathFramework("PipelineRun.v1.tekton.dev", kPipelineRun, "spec.managedBy"),
      labelFramework("Workflow.v1alpha1.argoproj.io", kWorkflow, std::string(kArgoLabel), "multikueue"),
      pathFramework("MPIJob.v2beta1.kubeflow.org", kMpiJob, "spec.runPolicy.managedBy"),
  };
  return cfg;
}

inline std::string readFixture(const std::string& name) {
  std::ifstream in(std::string(MKA_FIXTURES_DIR) + "/admission/" + name, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read fixture " << name;
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A decoded request as the API server would send it, for the decision functions.
inline AdmissionRequest makeRequest(const api::GroupVersionKind& kind, std::string operation, json object,
                                    json oldObject = nullptr) {
  AdmissionRequest request;
  request.apiVersion = std::string(kAdmissionV1);
  request.uid = "705ab4f5-6393-11e8-b7cc-42010a800002";
  request.kind = kind;
  request.operation = std::move(operation);
  request.object = std::move(object);
  request.oldObject = std::move(oldObject);
  const json& source = request.object.is_object() ? request.object : request.oldObject;
  if (source.is_object() && source.contains("metadata") && source["metadata"].is_object()) {
    request.name = source["metadata"].value("name", "");
    request.namespace_ = source["metadata"].value("namespace", "");
  }
  return request;
}

// The AdmissionReview body the API server would POST for `object`.
inline std::string reviewBody(const api::GroupVersionKind& kind, const std::string& operation, const json& object,
                              const json& oldObject = nullptr, std::string apiVersion = std::string(kAdmissionV1)) {
  json request = {{"uid", "d4c1e3a2-0f5b-4c7e-9a8d-6b2f1e0c3d4a"},
                  {"kind", {{"group", kind.group}, {"version", kind.version}, {"kind", kind.kind}}},
                  {"operation", operation},
                  {"object", object},
                  {"oldObject", oldObject},
                  {"dryRun", false}};
  if (object.is_object() && object.contains("metadata")) {
    request["name"] = object["metadata"].value("name", "");
    request["namespace"] = object["metadata"].value("namespace", "");
  }
  return json{{"apiVersion", apiVersion}, {"kind", "AdmissionReview"}, {"request", request}}.dump();
}

}  // namespace mka::webhook::testing
