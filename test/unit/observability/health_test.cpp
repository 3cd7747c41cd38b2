#include "mka/observability/health.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <stdexcept>

#include "mka/net/http_server.h"
#include "mka/observability/metrics.h"

namespace mka::observability {
namespace {

Health::Check ok() {
  return [] { return std::nullopt; };
}
Health::Check failing(std::string reason) {
  return [reason] { return std::optional<std::string>(reason); };
}

struct Case {
  std::string name;
  std::vector<std::pair<std::string, Health::Check>> checks;
  bool verbose;
  bool healthy;
  std::string body;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
};

class HealthReportTest : public ::testing::TestWithParam<Case> {};

TEST_P(HealthReportTest, RendersLikeKubernetes) {
  const auto& c = GetParam();
  Health health;
  for (const auto& [name, check] : c.checks) health.addReadinessCheck(name, check);
  const auto report = health.ready(c.verbose);
  EXPECT_EQ(report.ok, c.healthy);
  EXPECT_EQ(report.body, c.body);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HealthReportTest,
    ::testing::Values(
        Case{"NoChecks", {}, false, true, "ok"}, Case{"NoChecksVerbose", {}, true, true, "readyz check passed\n"},
        Case{"AllOk", {{"certificate", ok()}, {"informers", ok()}}, false, true, "ok"},
        Case{"AllOkVerbose",
             {{"certificate", ok()}, {"informers", ok()}},
             true,
             true,
             "[+]certificate ok\n[+]informers ok\nreadyz check passed\n"},
        // A failure lists every check even without ?verbose, so the probe event says why.
        Case{"OneFails",
             {{"certificate", failing("not loaded: /certs/tls.crt: cannot read")}, {"informers", ok()}},
             false,
             false,
             "[-]certificate failed: not loaded: /certs/tls.crt: cannot read\n[+]informers ok\nreadyz check failed\n"},
        Case{"Throws",
             {{"config", []() -> std::optional<std::string> { throw std::runtime_error("boom"); }}},
             false,
             false,
             "[-]config failed: check threw: boom\nreadyz check failed\n"}),
    [](const auto& info) { return info.param.name; });

TEST(HealthTest, LivenessAndReadinessAreSeparate) {
  Health health;
  health.addLivenessCheck("ping", ok());
  health.addReadinessCheck("certificate", failing("not loaded"));
  EXPECT_TRUE(health.live(false).ok);
  EXPECT_FALSE(health.ready(false).ok);
  EXPECT_EQ(health.live(true).body, "[+]ping ok\nhealthz check passed\n");
}

TEST(HealthTest, ChecksRunOnEveryEvaluation) {
  Health health;
  std::atomic<bool> loaded{false};
  health.addReadinessCheck("certificate", [&]() -> std::optional<std::string> {
    if (loaded) return std::nullopt;
    return "not loaded";
  });
  EXPECT_FALSE(health.ready(false).ok);
  loaded = true;
  EXPECT_TRUE(health.ready(false).ok);
}

class ProbeRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    health_.addLivenessCheck("ping", ok());
    health_.addReadinessCheck("certificate", [this]() -> std::optional<std::string> {
      if (certificateLoaded_) return std::nullopt;
      return "/certs/tls.crt: cannot read";
    });
    net::ServerOptions options;
    options.name = "probes";
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<net::HttpServer>(options);
    installProbeRoutes(*server_, health_);
    installMetricsRoute(*server_, metrics_);
    port_ = server_->start();
  }

  httplib::Client client() { return httplib::Client("127.0.0.1", port_); }

  Health health_;
  Metrics metrics_;
  std::atomic<bool> certificateLoaded_{false};
  std::unique_ptr<net::HttpServer> server_;
  int port_ = 0;
};

TEST_F(ProbeRoutesTest, HealthzIsOk) {
  auto res = client().Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; charset=utf-8");
}

TEST_F(ProbeRoutesTest, ReadyzFailsWithTheReasonThenRecovers) {
  auto res = client().Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_EQ(res->body, "[-]certificate failed: /certs/tls.crt: cannot read\nreadyz check failed\n");

  certificateLoaded_ = true;
  res = client().Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok");
}

TEST_F(ProbeRoutesTest, VerboseListsEveryCheck) {
  certificateLoaded_ = true;
  auto res = client().Get("/readyz?verbose");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "[+]certificate ok\nreadyz check passed\n");
  res = client().Get("/healthz?verbose=true");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "[+]ping ok\nhealthz check passed\n");
}

TEST_F(ProbeRoutesTest, MetricsAreServedAsPrometheusText) {
  metrics_.observeAdmission("mutate", "Job", "CREATE", "patched", 0.0001);
  auto res = client().Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(
      res->body.find(
          R"(multikueue_adapter_webhook_requests_total{kind="Job",operation="CREATE",result="patched",webhook="mutate"} 1)"),
      std::string::npos)
      << res->body;
}

TEST_F(ProbeRoutesTest, UnknownPathIs404) {
  auto res = client().Get("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

}  // namespace
}  // namespace mka::observability
