// The TLS server end to end over real sockets on 127.0.0.1, with CAs made in the test.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <future>

#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "support/eventually.h"
#include "support/handshake_cases.h"
#include "support/log_capture.h"
#include "support/serving_certificates.h"
#include "support/temp_dir.h"
#include "support/tls.h"
#include "support/tls_record_proxy.h"

namespace mka::net {
namespace {

using namespace std::chrono_literals;
using test::eventually;

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.name = "webhook";
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, certs_.reloader);
    server_->route("GET", "/conn", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.remote_port), "text/plain");
    });
    server_->route("GET", "/nodelay", [](const httplib::Request& req, httplib::Response& res) {
      int on = 0;
      socklen_t len = sizeof on;
      ::getsockopt(SSL_get_fd(req.ssl), IPPROTO_TCP, TCP_NODELAY, &on, &len);
      res.set_content(on != 0 ? "on" : "off", "text/plain");
    });
    port_ = server_->start();
  }

  void TearDown() override { server_->stop(); }

  std::unique_ptr<httplib::SSLClient> client(const std::filesystem::path& caFile) {
    return certs_.client(port_, caFile);
  }

  test::TlsProbeResult probe(const test::TestCa& ca, test::TlsProbeOptions options = {}) {
    options.caPem = ca.certPem();
    return test::probeTls("127.0.0.1", port_, options);
  }

  // Publishes a new pair the way kubelet updates a Secret volume and waits until it is served.
  void rotate(const test::CertificateAndKey& leaf) { ASSERT_TRUE(certs_.rotate(leaf)); }

  test::ServingCertificates certs_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

TEST_F(TlsServerTest, ServesHttpsVerifiedAgainstTheCa) {
  auto c = client(certs_.ca1File);
  auto res = c->Get("/conn");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);

  auto stranger = client(certs_.ca2File);
  auto refused = stranger->Get("/conn");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error(), httplib::Error::SSLServerVerification);
}

// httplib writes an answer's status line and headers, then its body: two TLS records, two
// sends, unless the server holds them until the answer is complete.
TEST_F(TlsServerTest, AnAnswerLeavesAsOneTlsRecord) {
  test::TlsRecordProxy proxy(port_);
  httplib::SSLClient c("127.0.0.1", proxy.port());
  c.enable_server_certificate_verification(false);
  c.set_keep_alive(true);
  c.set_read_timeout(10, 0);
  ASSERT_TRUE(c.Get("/conn"));  // the handshake and the session tickets
  for (int i = 0; i < 3; ++i) {
    const auto before = proxy.recordsToClient();
    auto res = c.Get("/conn");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_FALSE(res->body.empty());
    EXPECT_EQ(proxy.recordsToClient() - before, 1u);
  }
}

TEST_F(TlsServerTest, RotationKeepsOpenConnectionsAndServesTheNewCertificateToNewOnes) {
  auto c = client(certs_.ca1File);
  auto first = c->Get("/conn");
  ASSERT_TRUE(first) << httplib::to_string(first.error());
  ASSERT_EQ(server_->connectionsAccepted(), 1u);

  rotate(certs_.ca2.issue({.commonName = "serving-two"}));

  // The open connection goes on, unaware: same client port, no new accept, no new handshake.
  auto second = c->Get("/conn");
  ASSERT_TRUE(second) << httplib::to_string(second.error());
  EXPECT_EQ(second->body, first->body);
  EXPECT_EQ(server_->connectionsAccepted(), 1u);

  // New connections get the new certificate...
  const auto seen = probe(certs_.ca2);
  ASSERT_TRUE(seen.ok) << seen.error;
  EXPECT_EQ(seen.peerCommonName, "serving-two");
  auto fresh = client(certs_.ca2File)->Get("/conn");
  ASSERT_TRUE(fresh) << httplib::to_string(fresh.error());
  EXPECT_EQ(fresh->status, 200);
  // ...which a client that trusts only the old CA refuses.
  auto stale = client(certs_.ca1File)->Get("/conn");
  EXPECT_FALSE(stale);
  EXPECT_EQ(stale.error(), httplib::Error::SSLServerVerification);
}

TEST_F(TlsServerTest, ABadNewKeyKeepsServingThePreviousPair) {
  const auto next = certs_.ca2.issue({.commonName = "serving-two"});
  certs_.volume.update({{"tls.crt", next.certPem}, {"tls.key", test::generateKeyPem()}});
  ASSERT_TRUE(eventually([&] { return !certs_.reloader->lastError().empty(); }));
  EXPECT_NE(certs_.reloader->lastError().find("does not match"), std::string::npos) << certs_.reloader->lastError();
  EXPECT_EQ(certs_.reloader->generation(), 1u);

  const auto seen = probe(certs_.ca1);
  ASSERT_TRUE(seen.ok) << seen.error;
  EXPECT_EQ(seen.peerCommonName, "serving-one");

  // Fixing the Secret takes effect without a restart.
  rotate(next);
  const auto fixed = probe(certs_.ca2);
  ASSERT_TRUE(fixed.ok) << fixed.error;
  EXPECT_EQ(fixed.peerCommonName, "serving-two");
}

struct VersionCase {
  std::string name;
  int maxVersion;
  bool accepted;
  std::string negotiated;
  friend void PrintTo(const VersionCase& c, std::ostream* os) { *os << c.name; }
};

class TlsVersionTest : public TlsServerTest, public ::testing::WithParamInterface<VersionCase> {};

TEST_P(TlsVersionTest, AcceptsTls12AndNewerOnly) {
  const auto& v = GetParam();
  test::TlsProbeOptions options;
  options.minVersion = TLS1_VERSION;
  options.maxVersion = v.maxVersion;
  const auto result = probe(certs_.ca1, options);
  EXPECT_EQ(result.ok, v.accepted) << result.error;
  if (v.accepted) {
    EXPECT_EQ(result.version, v.negotiated);
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, TlsVersionTest,
                         ::testing::Values(VersionCase{"Tls10", TLS1_VERSION, false, ""},
                                           VersionCase{"Tls11", TLS1_1_VERSION, false, ""},
                                           VersionCase{"Tls12", TLS1_2_VERSION, true, "TLSv1.2"},
                                           VersionCase{"Tls13", TLS1_3_VERSION, true, "TLSv1.3"}),
                         [](const auto& info) { return info.param.name; });

struct AlpnCase {
  std::string name;
  std::vector<std::string> offered;
  std::string selected;
  friend void PrintTo(const AlpnCase& c, std::ostream* os) { *os << c.name; }
};

class TlsAlpnTest : public TlsServerTest, public ::testing::WithParamInterface<AlpnCase> {};

TEST_P(TlsAlpnTest, SpeaksHttp11Only) {
  test::TlsProbeOptions options;
  options.alpn = GetParam().offered;
  const auto result = probe(certs_.ca1, options);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.alpn, GetParam().selected);
}

INSTANTIATE_TEST_SUITE_P(Alpn, TlsAlpnTest,
                         ::testing::Values(AlpnCase{"KubeApiserver", {"http/1.1"}, "http/1.1"},
                                           AlpnCase{"PrefersH2", {"h2", "http/1.1"}, "http/1.1"},
                                           AlpnCase{"H2Only", {"h2"}, ""}, AlpnCase{"None", {}, ""}),
                         [](const auto& info) { return info.param.name; });

TEST_F(TlsServerTest, AConnectionClosedDuringTheHandshakeIsLoggedAtDebugAndGarbageAtInfo) {
  // A server of its own, started once the capture is in place: no thread logs while the
  // capture adds or removes its sink.
  server_->stop();
  test::LogCapture logs("net");
  ServerOptions options;
  options.name = "webhook";
  options.host = "127.0.0.1";
  server_ = std::make_unique<HttpServer>(options, certs_.reloader);
  port_ = server_->start();
  test::expectHandshakeRecords(port_, logs);
  server_->stop();
}

TEST_F(TlsServerTest, TurnsOffNagleOnAcceptedConnections) {
  auto res = client(certs_.ca1File)->Get("/nodelay");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "on");
}

TEST_F(TlsServerTest, StopClosesAnIdleTlsKeepAliveConnectionPromptly) {
  auto c = client(certs_.ca1File);
  ASSERT_TRUE(c->Get("/conn"));
  ASSERT_EQ(server_->openConnections(), 1u);
  auto stopped = std::async(std::launch::async, [&] { server_->stop(); });
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(server_->openConnections(), 0u);
}

TEST(TlsServerWithoutCertificateTest, HandshakesFailUntilACertificateAppears) {
  test::TempDir dir;
  test::TestCa ca;
  FileWatcher::Options watch;
  watch.pollInterval = 50ms;
  watch.debounce = 10ms;
  auto certificates = std::make_shared<CertificateReloader>(dir / "tls.crt", dir / "tls.key", watch);
  certificates->start();
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  HttpServer server(options, certificates);
  const int port = server.start();
  test::TlsProbeOptions probe;
  probe.caPem = ca.certPem();

  EXPECT_FALSE(test::probeTls("127.0.0.1", port, probe).ok);

  const auto leaf = ca.issue();
  test::writeServingFiles(dir.path(), ca, leaf);
  ASSERT_TRUE(eventually([&] { return certificates->loaded(); }));
  const auto result = test::probeTls("127.0.0.1", port, probe);
  EXPECT_TRUE(result.ok) << result.error;
  server.stop();
  certificates->stop();
}

}  // namespace
}  // namespace mka::net
