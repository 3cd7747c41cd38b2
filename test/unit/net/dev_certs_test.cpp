// certs/gen-dev-certs.sh output, served by the real TLS server: the names kube-apiserver
// checks, a CA clients can use, and idempotent reruns.
#include <gtest/gtest.h>

#include <cstdlib>

#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "support/temp_dir.h"
#include "support/tls.h"

namespace mka::net {
namespace {

int runScript(const std::string& args) {
  const std::string command = "bash " MKA_SOURCE_DIR "/certs/gen-dev-certs.sh " + args + " >/dev/null 2>&1";
  return std::system(command.c_str());
}

class DevCertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "the openssl command is not installed";
  }
  test::TempDir dir_;
  std::filesystem::path out_ = dir_ / "out";
};

TEST_F(DevCertsTest, ServingCertificateVerifiesForTheServiceNamesAndLocalhost) {
  ASSERT_EQ(runScript("--out " + out_.string() + " --service hook --namespace team-a"), 0);
  auto certificates = std::make_shared<CertificateReloader>(out_ / "tls.crt", out_ / "tls.key");
  ASSERT_EQ(certificates->reload(), "");
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  HttpServer server(options, certificates);
  const int port = server.start();

  test::TlsProbeOptions probe;
  probe.caPem = test::readFile(out_ / "ca.crt");
  for (const std::string name : {"127.0.0.1", "localhost", "hook.team-a.svc", "hook.team-a.svc.cluster.local"}) {
    SCOPED_TRACE(name);
    probe.verifyHost = name;
    const auto result = test::probeTls("127.0.0.1", port, probe);
    EXPECT_TRUE(result.ok) << result.error;
  }
  probe.verifyHost = "hook.team-b.svc";
  EXPECT_FALSE(test::probeTls("127.0.0.1", port, probe).ok) << "a name that was not asked for must not verify";
}

TEST_F(DevCertsTest, RerunKeepsTheCaAndTheCertificate) {
  ASSERT_EQ(runScript("--out " + out_.string()), 0);
  const std::string ca = test::readFile(out_ / "ca.crt");
  const std::string cert = test::readFile(out_ / "tls.crt");
  ASSERT_EQ(runScript("--out " + out_.string()), 0);
  EXPECT_EQ(test::readFile(out_ / "ca.crt"), ca);
  EXPECT_EQ(test::readFile(out_ / "tls.crt"), cert);

  // Other names: same CA, new certificate. --force: new CA.
  ASSERT_EQ(runScript("--out " + out_.string() + " --san DNS:extra.local"), 0);
  EXPECT_EQ(test::readFile(out_ / "ca.crt"), ca);
  EXPECT_NE(test::readFile(out_ / "tls.crt"), cert);
  ASSERT_EQ(runScript("--out " + out_.string() + " --force"), 0);
  EXPECT_NE(test::readFile(out_ / "ca.crt"), ca);
}

TEST_F(DevCertsTest, RejectsBadArguments) {
  EXPECT_NE(runScript("--out " + out_.string() + " --service Not_A_Name"), 0);
  EXPECT_NE(runScript("--out " + out_.string() + " --san example.com"), 0);
  EXPECT_NE(runScript("--no-such-flag"), 0);
  EXPECT_FALSE(std::filesystem::exists(out_ / "tls.key"));
}

}  // namespace
}  // namespace mka::net
