#include "checks.h"

#include <iterator>
#include <string>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "mka/common/errors.h"
#include "mka/config/loader.h"
#include "mka/config/store.h"
#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"
#include "mka/sandbox/protobuf.h"
#include "mka/sandbox/selectors.h"
#include "mka/webhook/admission_handler.h"
#include "mka/webhook/queue_index.h"
#include "mka/yaml/json.h"

namespace mka::fuzz {
namespace {

using nlohmann::json;

void require(bool condition, const char* what) {
  if (!condition) throw CheckFailed(what);
}

config::ExternalFramework framework(std::string name, api::GroupVersionKind gvk, config::ManagedByLocation where) {
  config::ExternalFramework fw;
  fw.name = std::move(name);
  fw.gvk = std::move(gvk);
  fw.managedBy = std::move(where);
  return fw;
}

config::Configuration admissionConfig() {
  config::Configuration cfg;
  config::ManagedByLocation label;
  label.type = config::ManagedByLocation::Type::Label;
  label.path.clear();
  label.labelKey = std::string(config::kArgoInstanceIdLabel);
  label.value = std::string(config::kArgoInstanceIdValue);
  config::ManagedByLocation runPolicy;
  runPolicy.path = "spec.runPolicy.managedBy";
  cfg.multiKueue.externalFrameworks = {
      framework("PipelineRun.v1.tekton.dev", {"tekton.dev", "v1", "PipelineRun"}, {}),
      framework("Workflow.v1alpha1.argoproj.io", {"argoproj.io", "v1alpha1", "Workflow"}, label),
      framework("MPIJob.v2beta1.kubeflow.org", {"kubeflow.org", "v2beta1", "MPIJob"}, runPolicy),
  };
  return cfg;
}

struct AdmissionHarness {
  AdmissionHarness()
      : store(admissionConfig()),
        handler(store, queues, nullptr),
        reference(store, queues, nullptr, webhook::Decoding::DomOnly) {
    queues.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
    queues.upsertClusterQueue("team-a-cq", {"multikueue-ac"});
    queues.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
    queues.upsertLocalQueue("argo-ci", "team-b", "missing-cq");
  }
  config::ConfigStore store;
  webhook::InMemoryQueueIndex queues;
  webhook::AdmissionHandler handler;
  webhook::AdmissionHandler reference;  // reads every body through the DOM
};

constexpr std::string_view kPaths[] = {"/mutate", "/validate", "/validate-config", "/mutate?timeout=10s"};
constexpr std::string_view kContentTypes[] = {"application/json", "application/json; charset=utf-8"};

// The object every sandbox patch applies to: a Pod-like object with lists that strategic merge
// patches merge by key.
const json& patchTarget() {
  static const json target = json::parse(R"({
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "x", "namespace": "default", "labels": {"a": "b"},
                 "ownerReferences": [{"uid": "1", "name": "o", "kind": "Job", "apiVersion": "batch/v1"}],
                 "finalizers": ["f"]},
    "data": {"k": "v"}
  })");
  return target;
}

void quiet() {
  static const bool once = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)once;
}

}  // namespace

void checkConfiguration(std::string_view input) {
  quiet();
  const auto result = config::parseConfiguration(input, "data[config.yaml].");
  require(result.ok() == result.config.has_value(), "a configuration and errors at once, or neither");
  for (const auto& error : result.errors) require(!error.problem.empty(), "an error that does not say what is wrong");
}

void checkKubeconfig(std::string_view input) {
  try {
    const auto config = kube::Kubeconfig::parse(input, "fuzz.kubeconfig");
    for (const auto& cluster : config.clusters) require(!cluster.name.empty(), "a cluster without a name");
    for (const auto& user : config.users) require(!user.name.empty(), "a user without a name");
  } catch (const Error& e) {
    require(std::string_view(e.what()).starts_with("fuzz.kubeconfig: "), "an error that does not name its source");
  }
}

void checkYaml(std::string_view input) {
  std::vector<json> documents;
  try {
    documents = yaml::parseJson(input, yaml::Limits::forManifests());
  } catch (const Error&) {
    return;
  }
  for (const auto& document : documents) {
    const auto text = yaml::toYaml(document);
    const auto again = yaml::parseJson(text, yaml::Limits::forManifests());
    require(again.size() == 1 && again.front() == document, "toYaml does not read back as the same JSON");
  }
}

void checkAdmissionReview(std::string_view input) {
  quiet();
  static AdmissionHarness harness;
  if (input.empty()) return;
  const auto selector = static_cast<unsigned char>(input[0]);
  const std::string_view path = kPaths[selector % std::size(kPaths)];
  const std::string_view contentType = kContentTypes[(selector >> 2) % std::size(kContentTypes)];
  const webhook::HttpRequest request{"POST", path, contentType, input.substr(1)};
  const auto response = harness.handler.handle(request);
  // The lean decoder answers exactly what the DOM decoder answers, or leaves the body to it.
  const auto expected = harness.reference.handle(request);
  require(response.status == expected.status && response.body == expected.body,
          "an answer that differs from the DOM decoder's");
  require(response.status >= 200 && response.status <= 599, "an HTTP status out of range");
  // Whatever the answer, it is JSON the API server can read.
  const auto answer = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  require(!answer.is_discarded(), "an answer that is not JSON");
  require(response.status != 200 || (answer.contains("response") && answer["response"].contains("uid")),
          "a 200 without response.uid");
  // Decisions must not throw on any input that decodes: a 500 here is a bug.
  require(response.status != 500, "a 500");
}

void checkKubeProtobuf(std::string_view input) {
  try {
    const auto object = sandbox::decodeKubernetesProtobuf(input);
    require(object.is_object() && object.contains("kind"), "a decoded body without a kind");
    (void)object.dump();  // throws (and fails the run) on a string that is not UTF-8
  } catch (const sandbox::ApiError& e) {
    require(e.code() == 400 || e.code() == 415, "an ApiError other than 400 or 415");
  }
}

void checkSandboxRequest(std::string_view input) {
  if (input.empty()) return;
  const auto selector = static_cast<unsigned char>(input[0]) % 5;
  const auto rest = input.substr(1);
  try {
    switch (selector) {
      case 0: (void)sandbox::LabelSelector::parse(rest).matches(patchTarget()["metadata"]["labels"]); return;
      case 1: (void)sandbox::FieldSelector::parse(rest).matches(patchTarget()); return;
      default: break;
    }
    // A patch body reaches the patch code only after it parsed as JSON, as in the API server.
    const auto patch = json::parse(rest, nullptr, /*allow_exceptions=*/false);
    if (patch.is_discarded()) return;
    json patched;
    if (selector == 2) patched = sandbox::patch::mergePatch(patchTarget(), patch);
    if (selector == 3) patched = sandbox::patch::jsonPatch(patchTarget(), patch);
    if (selector == 4) patched = sandbox::patch::strategicMergePatch(patchTarget(), patch);
    (void)patched.dump();
  } catch (const sandbox::ApiError& e) {
    require(e.code() >= 400 && e.code() < 500, "an ApiError that is not a client error");
  }
}

}  // namespace mka::fuzz
