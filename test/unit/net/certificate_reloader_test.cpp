#include "mka/net/certificate_reloader.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <vector>

#include "support/eventually.h"
#include "support/secret_volume.h"
#include "support/temp_dir.h"
#include "support/tls.h"

namespace mka::net {
namespace {

using namespace std::chrono_literals;
using test::eventually;

FileWatcher::Options fastWatch() {
  FileWatcher::Options options;
  options.pollInterval = 50ms;
  options.debounce = 10ms;
  return options;
}

class CertificateReloaderTest : public ::testing::Test {
 protected:
  test::TempDir dir_;
  test::TestCa ca_;
  test::CertificateAndKey leaf_ = ca_.issue();
  std::filesystem::path cert_ = dir_ / "tls.crt";
  std::filesystem::path key_ = dir_ / "tls.key";

  void writePair(const std::string& cert, const std::string& key) {
    test::writeFile(cert_, cert);
    test::writeFile(key_, key);
  }
};

TEST_F(CertificateReloaderTest, LoadsAMatchingPair) {
  writePair(leaf_.certPem, leaf_.keyPem);
  CertificateReloader reloader(cert_, key_);
  EXPECT_FALSE(reloader.loaded());
  EXPECT_EQ(reloader.reload(), "");
  EXPECT_TRUE(reloader.loaded());
  EXPECT_EQ(reloader.generation(), 1u);
  EXPECT_EQ(reloader.lastError(), "");
}

TEST_F(CertificateReloaderTest, NotAfterIsTheExpiryOfTheCertificateInUse) {
  CertificateReloader reloader(cert_, key_);
  EXPECT_FALSE(reloader.notAfter().has_value());  // nothing loaded yet
  // The CA sets notAfter to the second it signs plus the validity: between these bounds.
  const auto issued = [&](std::chrono::hours validity) {
    const auto before = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    const auto leaf = ca_.issue({.validity = validity});
    const auto after = std::chrono::system_clock::now();
    writePair(leaf.certPem, leaf.keyPem);
    return std::pair{before + validity, after + validity};
  };
  for (const auto validity : {std::chrono::hours{24 * 7}, std::chrono::hours{24 * 90}}) {
    const auto [earliest, latest] = issued(validity);
    ASSERT_EQ(reloader.reload(), "");
    ASSERT_TRUE(reloader.notAfter().has_value());
    EXPECT_GE(*reloader.notAfter(), earliest) << validity.count() << "h";
    EXPECT_LE(*reloader.notAfter(), latest) << validity.count() << "h";
  }
  // A bad new pair leaves the one in use, and its expiry, in place.
  const auto inUse = reloader.notAfter();
  writePair("not a certificate", leaf_.keyPem);
  EXPECT_NE(reloader.reload(), "");
  EXPECT_EQ(reloader.notAfter(), inUse);
}

TEST_F(CertificateReloaderTest, AcceptsACertificateFollowedByItsChain) {
  writePair(leaf_.certPem + ca_.certPem(), leaf_.keyPem);
  CertificateReloader reloader(cert_, key_);
  EXPECT_EQ(reloader.reload(), "");
}

struct BadFilesCase {
  std::string name;
  std::string cert;      // "" = leave the file missing; "LEAF" = the good certificate
  std::string key;       // "" = leave the file missing; "KEY" = the good key
  std::string file;      // which file the message must name: "tls.crt" or "tls.key"
  std::string expected;  // part of the message
  friend void PrintTo(const BadFilesCase& c, std::ostream* os) { *os << c.name; }
};

class CertificateReloaderErrorTest : public CertificateReloaderTest,
                                     public ::testing::WithParamInterface<BadFilesCase> {};

TEST_P(CertificateReloaderErrorTest, RefusesWithTheFileAndTheFix) {
  const auto& c = GetParam();
  const auto expand = [&](const std::string& v) {
    if (v == "LEAF") return leaf_.certPem;
    if (v == "KEY") return leaf_.keyPem;
    if (v == "OTHERKEY") return test::generateKeyPem();
    if (v == "ENCRYPTEDKEY") return test::encryptKeyPem(leaf_.keyPem, "secret");
    return v;
  };
  if (!c.cert.empty()) test::writeFile(cert_, expand(c.cert));
  if (!c.key.empty()) test::writeFile(key_, expand(c.key));
  CertificateReloader reloader(cert_, key_);
  const std::string error = reloader.reload();
  EXPECT_NE(error.find((dir_ / c.file).string() + ": "), std::string::npos) << error;
  EXPECT_NE(error.find(c.expected), std::string::npos) << error;
  EXPECT_FALSE(reloader.loaded());
  EXPECT_EQ(reloader.lastError(), error);
  EXPECT_EQ(reloader.generation(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Bad, CertificateReloaderErrorTest,
    ::testing::Values(BadFilesCase{"MissingCertificate", "", "KEY", "tls.crt",
                                   "cannot read: No such file or directory: check that the Secret"},
                      BadFilesCase{"MissingKey", "LEAF", "", "tls.key", "cannot read"},
                      BadFilesCase{"CertificateNotPem", "hello", "KEY", "tls.crt", "no PEM certificate found"},
                      BadFilesCase{"KeyInCertificateFile", "KEY", "KEY", "tls.crt", "no PEM certificate found"},
                      BadFilesCase{"KeyNotPem", "LEAF", "hello", "tls.key", "no usable PEM private key"},
                      BadFilesCase{"CertificateInKeyFile", "LEAF", "LEAF", "tls.key", "no usable PEM private key"},
                      // Must fail, not prompt for a password on the terminal.
                      BadFilesCase{"EncryptedKey", "LEAF", "ENCRYPTEDKEY", "tls.key", "unencrypted"},
                      BadFilesCase{"KeyOfAnotherCertificate", "LEAF", "OTHERKEY", "tls.key",
                                   "private key does not match the certificate in"}),
    [](const auto& info) { return info.param.name; });

TEST_F(CertificateReloaderTest, ABadNewPairKeepsThePreviousOne) {
  writePair(leaf_.certPem, leaf_.keyPem);
  CertificateReloader reloader(cert_, key_);
  ASSERT_EQ(reloader.reload(), "");

  const auto next = ca_.issue();
  writePair(next.certPem, test::generateKeyPem());
  EXPECT_NE(reloader.reload(), "");
  EXPECT_TRUE(reloader.loaded());
  EXPECT_EQ(reloader.generation(), 1u);
  EXPECT_NE(reloader.lastError().find("does not match"), std::string::npos);

  writePair(next.certPem, next.keyPem);
  EXPECT_EQ(reloader.reload(), "");
  EXPECT_EQ(reloader.generation(), 2u);
  EXPECT_EQ(reloader.lastError(), "");
}

TEST_F(CertificateReloaderTest, ReportsEveryAttemptToTheListener) {
  writePair(leaf_.certPem, leaf_.keyPem);
  CertificateReloader reloader(cert_, key_);
  std::vector<bool> results;
  reloader.setReloadListener([&](bool ok) { results.push_back(ok); });
  reloader.reload();
  test::writeFile(key_, "garbage");
  reloader.reload();
  EXPECT_EQ(results, (std::vector<bool>{true, false}));
}

TEST_F(CertificateReloaderTest, StartLoadsAndThenFollowsKubeletSwaps) {
  test::SecretVolume volume(dir_ / "secret");
  volume.update({{"tls.crt", leaf_.certPem}, {"tls.key", leaf_.keyPem}});
  CertificateReloader reloader(volume / "tls.crt", volume / "tls.key", fastWatch());
  std::atomic<int> successes{0};
  reloader.setReloadListener([&](bool ok) { successes += ok ? 1 : 0; });
  reloader.start();
  EXPECT_TRUE(reloader.loaded());
  EXPECT_EQ(reloader.generation(), 1u);

  const auto next = ca_.issue();
  volume.update({{"tls.crt", next.certPem}, {"tls.key", next.keyPem}});
  // The listener runs after the new pair is in use, so wait for both.
  EXPECT_TRUE(eventually([&] { return reloader.generation() == 2 && successes == 2; }));
  reloader.stop();
}

TEST_F(CertificateReloaderTest, StartWithoutFilesLogsAndRecoversWhenTheyAppear) {
  CertificateReloader reloader(cert_, key_, fastWatch());
  reloader.start();
  EXPECT_FALSE(reloader.loaded());
  EXPECT_NE(reloader.lastError().find(cert_.string()), std::string::npos);
  writePair(leaf_.certPem, leaf_.keyPem);
  EXPECT_TRUE(eventually([&] { return reloader.loaded(); }));
}

TEST_F(CertificateReloaderTest, ConfiguresTls12MinimumAndTheCertificateCallback) {
  writePair(leaf_.certPem, leaf_.keyPem);
  CertificateReloader reloader(cert_, key_);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  reloader.configure(ctx);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
  SSL_CTX_free(ctx);
}

}  // namespace
}  // namespace mka::net
