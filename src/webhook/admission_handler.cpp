#include "mka/webhook/admission_handler.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "mka/common/log.h"
#include "mka/observability/metrics.h"
#include "mka/webhook/admission_review.h"
#include "mka/webhook/child_mutator.h"
#include "mka/webhook/lean_admission_review.h"
#include "mka/webhook/mutator.h"
#include "mka/webhook/validator.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

enum class Webhook { Mutate, Validate, ValidateConfig, MutateChildren };
constexpr std::size_t kWebhooks = 4;

std::optional<Webhook> route(std::string_view path) {
  if (path == "/mutate") return Webhook::Mutate;
  if (path == "/mutate-children") return Webhook::MutateChildren;
  if (path == "/validate") return Webhook::Validate;
  if (path == "/validate-config") return Webhook::ValidateConfig;
  return std::nullopt;
}

std::string_view webhookName(Webhook webhook) {
  switch (webhook) {
    case Webhook::Mutate: return "mutate";
    case Webhook::Validate: return "validate";
    case Webhook::ValidateConfig: return "validate-config";
    case Webhook::MutateChildren: return "mutate-children";
  }
  return "unknown";
}

// The API server appends "?timeout=10s" to the configured path.
std::string_view withoutQuery(std::string_view target) { return target.substr(0, target.find('?')); }

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// "application/json", in any case, optionally followed by parameters ("; charset=utf-8").
bool isJson(std::string_view contentType) {
  std::string_view media = contentType.substr(0, contentType.find(';'));
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  constexpr std::string_view expected = "application/json";
  if (media.size() != expected.size()) return false;
  for (std::size_t i = 0; i < media.size(); ++i) {
    if (lower(media[i]) != expected[i]) return false;
  }
  return true;
}

// The HTTP-level failure, shaped like the metav1.Status the API server itself returns, so
// that it shows up readably in the API server's "failed calling webhook" error.
struct Failure {
  int status;
  std::string_view reason;  // metav1.StatusReason
  std::string message;
};

std::string statusBody(const Failure& failure) {
  const json body = {{"kind", "Status"},      {"apiVersion", "v1"},         {"metadata", json::object()},
                     {"status", "Failure"},   {"message", failure.message}, {"reason", failure.reason},
                     {"code", failure.status}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpResponse fail(std::string_view target, const Failure& failure) {
  log::warn("admission request failed",
            {{"path", target}, {"status", failure.status}, {"reason", failure.reason}, {"message", failure.message}});
  return {failure.status, std::string(kJsonContentType), statusBody(failure)};
}

constexpr std::array<std::string_view, 5> kOperationLabels = {"", "CREATE", "UPDATE", "DELETE", "CONNECT"};
constexpr std::array<std::string_view, 4> kResults = {"allowed", "patched", "denied", "error"};

template <std::size_t N>
std::optional<std::size_t> indexOf(const std::array<std::string_view, N>& values, std::string_view value) {
  for (std::size_t i = 0; i < N; ++i) {
    if (values[i] == value) return i;
  }
  return std::nullopt;
}

// The series of a label set, from the ones this thread used last: one slot per (webhook,
// operation, result), holding the kind it was for, so a request records its metrics without a
// label lookup or a lock while its kind is the slot's (a thread serves few kinds).
observability::Metrics::AdmissionSeries& seriesFor(observability::Metrics& metrics, Webhook webhook,
                                                   std::string_view kind, std::string_view operation,
                                                   std::string_view result) {
  struct Slot {
    std::uint64_t metrics = 0;  // Metrics::id(): a later Metrics at the same address is another
    std::string kind;
    observability::Metrics::AdmissionSeries* series = nullptr;
  };
  thread_local std::array<Slot, kWebhooks * kOperationLabels.size() * kResults.size()> slots;
  const auto operationIndex = indexOf(kOperationLabels, operation);
  const auto resultIndex = indexOf(kResults, result);
  if (!operationIndex || !resultIndex) return metrics.admissionSeries(webhookName(webhook), kind, operation, result);
  Slot& slot = slots[(static_cast<std::size_t>(webhook) * kOperationLabels.size() + *operationIndex) * kResults.size() +
                     *resultIndex];
  if (slot.series == nullptr || slot.metrics != metrics.id() || slot.kind != kind) {
    slot.series = &metrics.admissionSeries(webhookName(webhook), kind, operation, result);
    slot.metrics = metrics.id();
    slot.kind = kind;
  }
  return *slot.series;
}

std::string_view resultOf(const AdmissionResponse& response) {
  if (!response.allowed) return "denied";
  return response.patch && !response.patch->empty() ? "patched" : "allowed";
}

AdmissionRequest decodeRequest(Decoding decoding, Webhook webhook, std::string_view body,
                               const config::Configuration& config) {
  // /validate-config reads the whole ConfigMap, /mutate-children the child's spec: the lean
  // object carries neither.
  if (decoding == Decoding::LeanFirst && webhook != Webhook::ValidateConfig && webhook != Webhook::MutateChildren) {
    if (auto lean = decodeLeanAdmissionReview(body, config)) return std::move(*lean);
  }
  return decodeAdmissionReview(body);
}

}  // namespace

AdmissionHandler::AdmissionHandler(const config::ConfigStore& config, const QueueIndex& queues,
                                   observability::Metrics* metrics, Decoding decoding)
    : config_(config), queues_(queues), metrics_(metrics), decoding_(decoding) {}

HttpResponse AdmissionHandler::handle(const HttpRequest& http) const {
  const auto started = std::chrono::steady_clock::now();
  const auto webhook = route(withoutQuery(http.path));
  if (!webhook) {
    // Not recorded in metrics: arbitrary paths would make arbitrary label values.
    return fail(http.path, {404, "NotFound",
                            "path " + std::string(withoutQuery(http.path)).substr(0, 128) +
                                " not found: send AdmissionReviews to /mutate, /mutate-children, /validate or "
                                "/validate-config"});
  }

  std::string kind;
  std::string operation;
  auto observe = [&](std::string_view result) {
    if (!metrics_) return;
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
    observability::Metrics::observe(seriesFor(*metrics_, *webhook, kind, operation, result), elapsed.count());
  };
  auto failed = [&](const Failure& failure) {
    observe("error");
    return fail(http.path, failure);
  };

  if (http.method != "POST") {
    return failed({405, "MethodNotAllowed",
                   "method " + std::string(http.method.substr(0, 16)) + " not allowed on " +
                       std::string(withoutQuery(http.path)) + ": Allow: POST"});
  }
  if (!isJson(http.contentType)) {
    return failed({415, "UnsupportedMediaType",
                   "Content-Type " + std::string(http.contentType.substr(0, 64)) +
                       " not supported: send the AdmissionReview as application/json"});
  }
  if (http.body.size() > kMaxRequestBytes) {
    return failed({413, "RequestEntityTooLarge",
                   "body of " + std::to_string(http.body.size()) + " bytes exceeds the limit of " +
                       std::to_string(kMaxRequestBytes) + " bytes: Kubernetes objects are at most 1.5 MiB"});
  }

  try {
    // One snapshot per request: a reload in the middle must not mix two configurations.
    const auto config = config_.get();
    const AdmissionRequest request = decodeRequest(decoding_, *webhook, http.body, *config);
    kind = request.kind.kind;
    operation = request.operation;

    AdmissionResponse response;
    switch (*webhook) {
      case Webhook::Mutate: response = mutateJob(request, *config, queues_); break;
      case Webhook::Validate: response = validateJob(request, *config, queues_); break;
      case Webhook::ValidateConfig: response = validateConfigMap(request); break;
      case Webhook::MutateChildren: response = mutateChild(request, *config); break;
    }
    std::string body = encodeAdmissionReview(request, response);

    const auto result = resultOf(response);
    observe(result);
    if (spdlog::should_log(spdlog::level::debug)) {
      log::debug("admission answered", {{"webhook", webhookName(*webhook)},
                                        {"uid", request.uid},
                                        {"kind", kind},
                                        {"object", request.objectKey()},
                                        {"operation", operation},
                                        {"dryRun", request.dryRun},
                                        {"result", result},
                                        {"patchOps", response.patch ? response.patch->size() : 0},
                                        {"warnings", response.warnings.size()}});
    }
    return {200, std::string(kJsonContentType), std::move(body)};
  } catch (const BadRequest& e) {
    return failed({400, "BadRequest", e.what()});
  } catch (const std::exception& e) {
    return failed({500, "InternalError", std::string("internal error while deciding: ") + e.what()});
  } catch (...) {
    return failed({500, "InternalError", "internal error while deciding: unknown exception"});
  }
}

}  // namespace mka::webhook
