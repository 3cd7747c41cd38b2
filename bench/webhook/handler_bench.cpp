// handler_bench: AdmissionHandler::handle on its own, without TLS or HTTP (see bench/README.md,
// "handler_bench"). The request is the 2.5 KB fixture webhook_bench sends, as a CREATE and as
// an UPDATE (the same object before and after), to /mutate and /validate, with the configuration
// webhook_bench serves and real metrics.
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "bench_configuration.h"
#include "mka/api/gvk.h"
#include "mka/config/configuration.h"
#include "mka/config/store.h"
#include "mka/observability/metrics.h"
#include "mka/webhook/admission_handler.h"
#include "mka/webhook/admission_review.h"
#include "mka/webhook/lean_admission_review.h"
#include "mka/webhook/queue_index.h"

namespace {

using namespace mka;

// The fixture as compact JSON, the way kube-apiserver sends it; `update` turns it into the
// UPDATE of the same object.
std::string requestBody(bool update) {
  std::ifstream in(MKA_BENCH_FIXTURE);
  if (!in) throw std::runtime_error("cannot read " MKA_BENCH_FIXTURE);
  std::stringstream text;
  text << in.rdbuf();
  auto review = nlohmann::json::parse(text.str());
  if (update) {
    review["request"]["operation"] = "UPDATE";
    review["request"]["oldObject"] = review["request"]["object"];
  }
  return review.dump();
}

struct Harness {
  Harness() : store(mka::bench::webhookBenchConfiguration()), handler(store, queues, &metrics) {
    spdlog::set_level(spdlog::level::warn);  // as webhook_bench runs the server
  }
  config::ConfigStore store;
  webhook::InMemoryQueueIndex queues;
  observability::Metrics metrics;
  webhook::AdmissionHandler handler;
};

void handle(benchmark::State& state, std::string_view path, bool update) {
  static Harness harness;
  const std::string body = requestBody(update);
  const webhook::HttpRequest request{"POST", path, "application/json", body};
  const auto first = harness.handler.handle(request);
  if (first.status != 200) throw std::runtime_error("unexpected answer: " + first.body);
  for (auto _ : state) {
    auto response = harness.handler.handle(request);
    benchmark::DoNotOptimize(response.body.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}

// The decoding alone: the lean decoder, and the DOM decoder it replaces for such requests.
void decodeLean(benchmark::State& state) {
  const std::string body = requestBody(false);
  const auto config = mka::bench::webhookBenchConfiguration();
  if (!webhook::decodeLeanAdmissionReview(body, config)) throw std::runtime_error("the lean decoder declined");
  for (auto _ : state) {
    auto request = webhook::decodeLeanAdmissionReview(body, config);
    benchmark::DoNotOptimize(request->uid.data());
  }
}

void decodeDom(benchmark::State& state) {
  const std::string body = requestBody(false);
  for (auto _ : state) {
    auto request = webhook::decodeAdmissionReview(body);
    benchmark::DoNotOptimize(request.uid.data());
  }
}

}  // namespace

BENCHMARK(decodeLean);
BENCHMARK(decodeDom);
BENCHMARK_CAPTURE(handle, mutate_create, "/mutate?timeout=10s", false);
BENCHMARK_CAPTURE(handle, mutate_update, "/mutate?timeout=10s", true);
BENCHMARK_CAPTURE(handle, validate_create, "/validate?timeout=10s", false);
BENCHMARK_CAPTURE(handle, validate_update, "/validate?timeout=10s", true);

BENCHMARK_MAIN();
