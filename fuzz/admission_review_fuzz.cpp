// libFuzzer target: any bytes POSTed to any of the three webhooks must get an HTTP answer
// (never a crash, hang or sanitizer report), and a 200 must carry a well-formed AdmissionReview.
//
// The first input byte picks the path and content type, the rest is the body, so the corpus
// can reach every route. Seeds: test/fixtures/admission/*.json (prefix one byte).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "mka/config/store.h"
#include "mka/webhook/admission_handler.h"
#include "mka/webhook/queue_index.h"

namespace {

using namespace mka;

config::ExternalFramework framework(std::string name, kube::GroupVersionKind gvk, config::ManagedByLocation where) {
  config::ExternalFramework fw;
  fw.name = std::move(name);
  fw.gvk = std::move(gvk);
  fw.managedBy = std::move(where);
  return fw;
}

config::Configuration fuzzConfig() {
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

struct Harness {
  Harness() : store(fuzzConfig()), handler(store, queues, nullptr) {
    spdlog::set_level(spdlog::level::off);
    queues.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
    queues.upsertClusterQueue("team-a-cq", {"multikueue-ac"});
    queues.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
    queues.upsertLocalQueue("argo-ci", "team-b", "missing-cq");
  }
  config::ConfigStore store;
  webhook::InMemoryQueueIndex queues;
  webhook::AdmissionHandler handler;
};

constexpr std::string_view kPaths[] = {"/mutate", "/validate", "/validate-config", "/mutate?timeout=10s"};
constexpr std::string_view kContentTypes[] = {"application/json", "application/json; charset=utf-8"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness harness;
  if (size == 0) return 0;
  const std::string_view path = kPaths[data[0] % std::size(kPaths)];
  const std::string_view contentType = kContentTypes[(data[0] >> 2) % std::size(kContentTypes)];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  const webhook::HttpResponse response = harness.handler.handle({"POST", path, contentType, body});
  if (response.status < 200 || response.status > 599) std::abort();
  // Whatever the answer, it is JSON the API server can read.
  const auto answer = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded()) std::abort();
  if (response.status == 200 && (!answer.contains("response") || !answer["response"].contains("uid"))) std::abort();
  // Decisions must not throw on any input that decodes: a 500 here is a bug.
  if (response.status == 500) std::abort();
  return 0;
}
