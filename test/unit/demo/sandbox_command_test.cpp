// `multikueue-adapter sandbox` through the real binary: clusters start, kubeconfigs appear and
// work, one line per cluster is printed, SIGTERM ends it with exit code 0. And the CRD path
// helpers in-process.
#include "mka/demo/sandbox_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <optional>
#include <sstream>

#include "mka/common/errors.h"
#include "support/child_process.h"
#include "support/eventually.h"
#include "support/temp_dir.h"
#include "support/yaml_file.h"

namespace mka::demo {
namespace {

using namespace std::chrono_literals;
using mka::test::readYamlFile;
using test::eventually;
using ::testing::HasSubstr;

std::string decodeBase64(const std::string& text) {
  std::string out(text.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

TEST(SandboxCommandTest, ServesClustersUntilSigterm) {
  test::TempDir dir;
  test::ChildProcess child(MKA_BINARY,
                           {"sandbox", "--dir", (dir / "kube").string(), "--clusters", "manager, worker1", "--no-crds"},
                           dir / "out.txt", dir / "err.txt");
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(eventually(
      [&] {
        const std::string out = test::readFile(dir / "out.txt");
        return std::count(out.begin(), out.end(), '\n') == 2 || child.exitCode().has_value();
      },
      60s))
      << test::readFile(dir / "err.txt");
  ASSERT_FALSE(child.exitCode().has_value()) << test::readFile(dir / "err.txt");

  std::istringstream lines(test::readFile(dir / "out.txt"));
  for (const std::string name : {"manager", "worker1"}) {
    std::string cluster, path, server;
    lines >> cluster >> path >> server;
    EXPECT_EQ(cluster, name);
    EXPECT_EQ(std::filesystem::path(path), std::filesystem::absolute(dir / "kube" / (name + ".kubeconfig")));
    EXPECT_THAT(server, HasSubstr("https://127.0.0.1:"));

    // The kubeconfig alone gets a client in: server, CA and token.
    auto config = readYamlFile(path);
    EXPECT_EQ(config["clusters"][0]["cluster"]["server"].get<std::string>(), server);
    const std::string ca =
        decodeBase64(config["clusters"][0]["cluster"]["certificate-authority-data"].get<std::string>());
    const std::string token = config["users"][0]["user"]["token"].get<std::string>();
    const int port = std::stoi(server.substr(server.rfind(':') + 1));
    httplib::SSLClient client("127.0.0.1", port);
    BIO* bio = BIO_new_mem_buf(ca.data(), static_cast<int>(ca.size()));
    X509* caCert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    ASSERT_NE(caCert, nullptr);
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, caCert);
    X509_free(caCert);
    client.set_ca_cert_store(store);
    client.enable_server_certificate_verification(true);
    client.set_bearer_token_auth(token);
    auto res = client.Get("/api/v1/namespaces/default");
    ASSERT_TRUE(res) << name;
    EXPECT_EQ(res->status, 200) << name;
  }

  ASSERT_EQ(::kill(child.pid(), SIGTERM), 0);
  ASSERT_TRUE(eventually([&] { return child.exitCode().has_value(); }, 30s));
  EXPECT_EQ(child.exitCode(), 0) << test::readFile(dir / "err.txt");
}

TEST(SandboxCommandTest, FailsWithExitCode1OnABadClusterName) {
  test::TempDir dir;
  test::ChildProcess child(MKA_BINARY,
                           {"sandbox", "--dir", (dir / "kube").string(), "--clusters", "Bad_Name", "--no-crds"},
                           dir / "out.txt", dir / "err.txt");
  ASSERT_TRUE(eventually([&] { return child.exitCode().has_value(); }, 30s));
  EXPECT_EQ(child.exitCode(), 1);
  const std::string log = test::readFile(dir / "out.txt") + test::readFile(dir / "err.txt");
  EXPECT_THAT(log, HasSubstr("Bad_Name"));
  EXPECT_THAT(log, HasSubstr("DNS label"));
}

TEST(SandboxCommandTest, HelpExplainsTheCrdDefaults) {
  test::TempDir dir;
  test::ChildProcess child(MKA_BINARY, {"sandbox", "--help"}, dir / "out.txt", dir / "err.txt");
  ASSERT_TRUE(eventually([&] { return child.exitCode().has_value(); }, 30s));
  EXPECT_EQ(child.exitCode(), 0);
  const std::string help = test::readFile(dir / "out.txt");
  EXPECT_THAT(help, HasSubstr("--crds"));
  EXPECT_THAT(help, HasSubstr("../shared/crds"));
  EXPECT_THAT(help, HasSubstr("test/fixtures/crds"));
  EXPECT_THAT(help, HasSubstr("--clusters"));
}

TEST(SandboxCommandTest, CrdDirectoriesExpandToTheirYamlFilesSorted) {
  test::TempDir dir;
  dir.write("crds/b.yaml", "x");
  dir.write("crds/a.yml", "x");
  dir.write("crds/SOURCES.md", "x");
  const auto single = dir.write("single.yaml", "x");
  const auto files = crdFilesFrom({dir / "crds", single});
  EXPECT_EQ(files, (std::vector<std::filesystem::path>{dir / "crds" / "a.yml", dir / "crds" / "b.yaml", single}));
  EXPECT_THROW(crdFilesFrom({dir / "missing"}), Error);
  dir.write("empty/README", "x");
  EXPECT_THROW(crdFilesFrom({dir / "empty"}), Error);
}

TEST(SandboxCommandTest, DefaultCrdDirectoryPrefersSharedThenFixtures) {
  test::TempDir dir;
  EXPECT_FALSE(defaultCrdDirectory(dir / "repo"));
  dir.write("repo/test/fixtures/crds/x.yaml", "x");
  EXPECT_EQ(defaultCrdDirectory(dir / "repo"), (dir / "repo" / "test" / "fixtures" / "crds").lexically_normal());
  dir.write("shared/crds/x.yaml", "x");
  EXPECT_EQ(defaultCrdDirectory(dir / "repo"), (dir / "shared" / "crds").lexically_normal());
}

}  // namespace
}  // namespace mka::demo
