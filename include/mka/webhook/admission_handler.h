#pragma once
// The webhook's HTTP-level entry point, independent of any HTTP library so that it can be
// tested and fuzzed directly: routing (/mutate, /mutate-children, /validate,
// /validate-config), method, content type and size checks, decoding, the decision, metrics and
// the log line.
//
// Threads: stateless apart from borrowed collaborators; called concurrently by server threads.

#include <cstddef>
#include <string>
#include <string_view>

#include "mka/config/store.h"
#include "mka/webhook/queue_index.h"

namespace mka::observability {
class Metrics;
}

namespace mka::webhook {

inline constexpr std::size_t kMaxRequestBytes = 3 * 1024 * 1024;
// The charset parameter is deliberate: cpp-httplib gzips a body whose Content-Type is exactly
// "application/json" when the client accepts gzip (Go clients, kube-apiserver included, do by
// default), which costs more CPU than it saves on a 300-byte AdmissionReview.
inline constexpr std::string_view kJsonContentType = "application/json; charset=utf-8";

struct HttpRequest {
  std::string_view method;
  std::string_view path;
  std::string_view contentType;
  std::string_view body;
};

struct HttpResponse {
  int status = 200;
  std::string contentType = std::string(kJsonContentType);
  std::string body;
};

// How /mutate and /validate read a body (/validate-config and /mutate-children read more of
// the object than the lean decoder keeps: always the DOM decoder). LeanFirst: the common
// well-formed review without a DOM of the whole object (lean_admission_review.h), anything else
// through the DOM decoder.
// DomOnly: always the DOM decoder, the reference LeanFirst's answers are tested against.
enum class Decoding { LeanFirst, DomOnly };

class AdmissionHandler {
 public:
  // `metrics` may be null (no metrics recorded).
  AdmissionHandler(const config::ConfigStore& config, const QueueIndex& queues, observability::Metrics* metrics,
                   Decoding decoding = Decoding::LeanFirst);
  HttpResponse handle(const HttpRequest& request) const;

 private:
  const config::ConfigStore& config_;
  const QueueIndex& queues_;
  observability::Metrics* metrics_;
  Decoding decoding_;
};

}  // namespace mka::webhook
