#pragma once
// Liveness and readiness checks, rendered like Kubernetes components do (/healthz, /readyz,
// "?verbose" lists each check as "[+]name ok" or "[-]name failed: reason").
//
// Threads: add checks before serving; evaluate() is safe from any thread afterwards.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mka::net {
class HttpServer;
}

namespace mka::observability {

class Metrics;

class Health {
 public:
  // nullopt when healthy, else the reason (e.g. "certificate not loaded: /certs/tls.crt: ...").
  using Check = std::function<std::optional<std::string>()>;

  void addLivenessCheck(std::string name, Check check);
  void addReadinessCheck(std::string name, Check check);

  struct Report {
    bool ok = true;
    std::string body;  // "ok", or the verbose listing
  };
  Report live(bool verbose) const;
  Report ready(bool verbose) const;

 private:
  static Report evaluate(const std::vector<std::pair<std::string, Check>>& checks, bool verbose);
  std::vector<std::pair<std::string, Check>> liveness_;
  std::vector<std::pair<std::string, Check>> readiness_;
};

// GET /healthz and /readyz (200 or 500, text/plain).
void installProbeRoutes(net::HttpServer& server, const Health& health);
// GET /metrics (text/plain; version=0.0.4).
// `allow` (when given) decides each request first: {200, ""} serves it, any other status is
// answered with that status and message (secure metrics: 401 without a valid token, 403 without
// access).
using MetricsGuard =
    std::function<std::pair<int, std::string>(std::string_view authorization, const std::string& path)>;
void installMetricsRoute(net::HttpServer& server, const Metrics& metrics, MetricsGuard allow = {});

}  // namespace mka::observability
