// certs/gen-dev-certs.sh output, served by the real TLS server: the names kube-apiserver
// checks, a CA clients can use, and idempotent reruns.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "support/table_test.h"
#include "support/temp_dir.h"
#include "support/tls.h"

namespace mka::net {
namespace {

int runScript(const std::string& args) {
  const std::string command = "bash " MKA_SOURCE_DIR "/certs/gen-dev-certs.sh " + args + " >/dev/null 2>&1";
  return std::system(command.c_str());
}

bool opensslInstalled() { return std::system("command -v openssl >/dev/null 2>&1") == 0; }

class DevCertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!opensslInstalled()) GTEST_SKIP() << "the openssl command is not installed";
  }
  test::TempDir dir_;
  std::filesystem::path out_ = dir_ / "out";
};

// The script's certificate for Service hook in team-a, served by the TLS server once for every
// name a table's cases verify.
class DevCertsServed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!opensslInstalled()) return;
    dir_ = std::make_unique<test::TempDir>();
    const auto out = *dir_ / "out";
    ASSERT_EQ(runScript("--out " + out.string() + " --service hook --namespace team-a"), 0);
    auto certificates = std::make_shared<CertificateReloader>(out / "tls.crt", out / "tls.key");
    ASSERT_EQ(certificates->reload(), "");
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, certificates);
    port_ = server_->start();
    caPem_ = test::readFile(out / "ca.crt");
  }
  static void TearDownTestSuite() {
    server_.reset();
    dir_.reset();
    port_ = 0;
  }
  void SetUp() override {
    if (!opensslInstalled()) GTEST_SKIP() << "the openssl command is not installed";
    ASSERT_NE(port_, 0) << "the certificates are not served (SetUpTestSuite failed)";
  }

  // Whether a client trusting the script's CA verifies the server as `name`.
  static test::TlsProbeResult probeAs(const std::string& name) {
    test::TlsProbeOptions probe;
    probe.caPem = caPem_;
    probe.verifyHost = name;
    return test::probeTls("127.0.0.1", port_, probe);
  }

  inline static std::unique_ptr<test::TempDir> dir_;
  inline static std::unique_ptr<HttpServer> server_;
  inline static int port_ = 0;
  inline static std::string caPem_;
};

struct DevCertsName {
  std::string name;  // the name the client verifies the server as
};
std::vector<DevCertsName> devCertsNames() {
  return {{"127.0.0.1"}, {"localhost"}, {"hook.team-a.svc"}, {"hook.team-a.svc.cluster.local"}};
}

MKA_TABLE_TEST_F(DevCertsServed, ServingCertificateVerifiesForTheServiceNamesAndLocalhost, DevCertsName,
                 devCertsNames()) {
  const auto result = probeAs(testCase().name);
  EXPECT_TRUE(result.ok) << result.error;
}

TEST_F(DevCertsServed, ServingCertificateDoesNotVerifyForOtherNames) {
  EXPECT_FALSE(probeAs("hook.team-b.svc").ok) << "a name that was not asked for must not verify";
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
