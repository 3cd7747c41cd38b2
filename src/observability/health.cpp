#include "mka/observability/health.h"

#include <httplib.h>

#include <exception>

#include "mka/net/http_server.h"
#include "mka/observability/metrics.h"

namespace mka::observability {

void Health::addLivenessCheck(std::string name, Check check) {
  liveness_.emplace_back(std::move(name), std::move(check));
}

void Health::addReadinessCheck(std::string name, Check check) {
  readiness_.emplace_back(std::move(name), std::move(check));
}

// Same shape as Kubernetes components: "[+]name ok" / "[-]name failed: reason" per check;
// a failure always lists every check, so the kubelet event shows what is wrong.
Health::Report Health::evaluate(const std::vector<std::pair<std::string, Check>>& checks, bool verbose) {
  Report report;
  std::string listing;
  for (const auto& [name, check] : checks) {
    std::optional<std::string> problem;
    try {
      problem = check();
    } catch (const std::exception& e) {
      problem = std::string("check threw: ") + e.what();
    } catch (...) {
      problem = "check threw an unknown exception";
    }
    if (problem) {
      report.ok = false;
      listing += "[-]" + name + " failed: " + *problem + "\n";
    } else {
      listing += "[+]" + name + " ok\n";
    }
  }
  report.body = (verbose || !report.ok) ? listing : "ok";
  return report;
}

namespace {

Health::Report finish(Health::Report report, bool verbose, const char* probe) {
  if (!report.ok) {
    report.body += std::string(probe) + " check failed\n";
  } else if (verbose) {
    report.body += std::string(probe) + " check passed\n";
  }
  return report;
}

}  // namespace

Health::Report Health::live(bool verbose) const { return finish(evaluate(liveness_, verbose), verbose, "healthz"); }

Health::Report Health::ready(bool verbose) const { return finish(evaluate(readiness_, verbose), verbose, "readyz"); }

void installProbeRoutes(net::HttpServer& server, const Health& health) {
  const auto route = [&health](bool ready) {
    return [&health, ready](const httplib::Request& req, httplib::Response& res) {
      const bool verbose = req.has_param("verbose");
      const Health::Report report = ready ? health.ready(verbose) : health.live(verbose);
      res.status = report.ok ? 200 : 500;
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Cache-Control", "no-store");
      res.set_content(report.body, "text/plain; charset=utf-8");
    };
  };
  server.route("GET", "/healthz", route(false));
  server.route("GET", "/readyz", route(true));
}

void installMetricsRoute(net::HttpServer& server, const Metrics& metrics, MetricsGuard allow) {
  server.route("GET", "/metrics", [&metrics, allow](const httplib::Request& req, httplib::Response& res) {
    if (allow) {
      auto [status, message] = allow(req.get_header_value("Authorization"), req.path);
      if (status != 200) {
        res.status = status;
        res.set_content(message + "\n", "text/plain; charset=utf-8");
        return;
      }
    }
    res.set_content(metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

}  // namespace mka::observability
