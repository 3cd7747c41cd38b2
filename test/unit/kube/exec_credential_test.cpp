// client-go's exec credential protocol, with real plugin programs (shell scripts), and the
// refresh rules of ExecCredentialSource on a FakeClock.
#include "mka/kube/exec_credential.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "mka/kube/client.h"
#include "mka/net/pki.h"
#include "mka/sandbox/sandbox.h"
#include "support/table_test.h"
#include "support/temp_dir.h"
#include "support/thrown.h"

namespace mka::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr std::string_view kV1 = "client.authentication.k8s.io/v1";

// What each ExecPluginTest has: a directory for its plugins, and helpers. A table's case makes
// its own.
class ExecPlugins {
 public:
  // An executable script in the test's directory.
  std::string script(const std::string& name, const std::string& body) {
    const auto path = dir.write(name, "#!/bin/sh\n" + body);
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
  api::ExecConfig configFor(const std::string& command) {
    api::ExecConfig c;
    c.command = command;
    c.apiVersion = std::string(kV1);
    c.interactiveMode = "Never";
    return c;
  }
  static std::string credential(const json& status, std::string_view apiVersion = kV1) {
    return json{{"apiVersion", apiVersion}, {"kind", "ExecCredential"}, {"status", status}}.dump();
  }
  std::string error(const api::ExecConfig& config, std::chrono::milliseconds timeout = 30s) {
    return mka::test::messageOf<Error>([&] { runExecPlugin(config, {}, timeout); });
  }

  struct Failure {
    std::string name;
    std::string body;  // the script; "" for a command that does not exist
    std::string expected;
  };
  static std::vector<Failure> failures();
  void expectFailure(const Failure& c);

  test::TempDir dir{"mka-exec"};
};

class ExecPluginTest : public ::testing::Test, public ExecPlugins {};

TEST_F(ExecPluginTest, PassesArgsEnvAndTheClusterAndReadsTheToken) {
  // The plugin records what it was given, then prints its credential.
  auto config =
      configFor(script("plugin",
                       "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$OUT/info\"\n"
                       "printf '%s %s' \"$1\" \"$2\" > \"$OUT/args\"\n"
                       "printf '%s' \"$TEAM\" > \"$OUT/env\"\n"
                       "printf '%s' '" +
                           credential({{"token", "t0k"}, {"expirationTimestamp", "2027-01-15T10:00:00Z"}}) + "'\n"));
  config.args = {"--cluster", "w1"};
  config.env = {{"TEAM", "ml"}, {"OUT", dir.path().string()}};
  config.provideClusterInfo = true;
  const ExecClusterInfo cluster{"https://w1.example:6443", "w1.internal", "CA-PEM", "", json{{"region", "eu"}}};

  const auto c = runExecPlugin(config, cluster);
  EXPECT_EQ(c.token, "t0k");
  EXPECT_TRUE(c.clientCertificatePem.empty());
  ASSERT_TRUE(c.expiration);
  EXPECT_EQ(toRfc3339(*c.expiration), "2027-01-15T10:00:00Z");
  EXPECT_EQ(test::readFile(dir / "args"), "--cluster w1");
  EXPECT_EQ(test::readFile(dir / "env"), "ml");
  const auto info = json::parse(test::readFile(dir / "info"));
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["apiVersion"], kV1);
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"], (json{{"server", "https://w1.example:6443"},
                                           {"tls-server-name", "w1.internal"},
                                           {"certificate-authority-data", "Q0EtUEVN"},
                                           {"config", {{"region", "eu"}}}}));

  // Without provideClusterInfo the plugin is not told which cluster it is for.
  config.provideClusterInfo = false;
  runExecPlugin(config, cluster);
  EXPECT_FALSE(json::parse(test::readFile(dir / "info"))["spec"].contains("cluster"));
}

TEST_F(ExecPluginTest, ReadsAClientCertificate) {
  const auto c = runExecPlugin(
      configFor(script("plugin",
                       "echo '" + credential({{"clientCertificateData", "CERT"}, {"clientKeyData", "KEY"}}) + "'\n")),
      {});
  EXPECT_EQ(c.clientCertificatePem, "CERT");
  EXPECT_EQ(c.clientKeyPem, "KEY");
  EXPECT_TRUE(c.token.empty());
  EXPECT_FALSE(c.expiration);
}

std::vector<ExecPlugins::Failure> ExecPlugins::failures() {
  return {
      {"exit code, with the plugin's stderr", "echo 'token service unreachable' >&2\nexit 3\n",
       "failed with exit code 3: token service unreachable"},
      {"not JSON", "echo hello\n", "exec: decoding stdout: "},
      {"another apiVersion", "echo '" + credential({{"token", "x"}}, "client.authentication.k8s.io/v1beta1") + "'\n",
       "exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin returned version "
       "client.authentication.k8s.io/v1beta1"},
      {"no status", "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"}'\n",
       "exec plugin didn't return a status field"},
      {"nothing in the status", "echo '" + credential(json::object()) + "'\n",
       "exec plugin didn't return a token or cert/key pair"},
      {"a certificate without its key", "echo '" + credential({{"clientCertificateData", "C"}}) + "'\n",
       "exec plugin returned only certificate or key, not both"},
      {"a bad expiry", "echo '" + credential({{"token", "x"}, {"expirationTimestamp", "soon"}}) + "'\n",
       "status.expirationTimestamp \"soon\" is not an RFC 3339 time"},
      {"killed", "kill -9 $$\n", "was killed by signal 9"},
  };
}

// Each case in a directory of its own: one script name does.
void ExecPlugins::expectFailure(const Failure& c) {
  EXPECT_THAT(error(configFor(script("plugin", c.body))), HasSubstr(c.expected));
}

MKA_TABLE_TEST(ExecPluginTest, FailuresSayWhatFailedInClientGosWords, ExecPlugins::Failure, ExecPlugins::failures()) {
  ExecPlugins().expectFailure(testCase());
}

TEST_F(ExecPluginTest, AMissingCommandShowsTheInstallHint) {
  auto config = configFor((dir / "no-such-plugin").string());
  config.installHint = "install it with: apt-get install cp-creds";
  EXPECT_EQ(error(config),
            "exec: executable " + config.command + " not found: install it with: apt-get install cp-creds");
  config.command = "mka-no-such-plugin-on-path";  // looked up on PATH, as client-go does
  config.installHint.clear();
  EXPECT_EQ(error(config), "exec: executable mka-no-such-plugin-on-path not found");
}

TEST_F(ExecPluginTest, APluginThatHangsIsKilledAtTheTimeout) {
  EXPECT_THAT(error(configFor(script("hang", "echo 'still thinking' >&2\nexec sleep 600\n")), 200ms),
              HasSubstr("did not finish within 200 ms and was killed: still thinking"));
}

// --- ExecCredentialSource ------------------------------------------------------------------

ExecCredential tokenUntil(const std::string& token, std::optional<Clock::TimePoint> expiry) {
  return {token, "", "", expiry};
}

struct RefreshCase {
  std::string name;
  std::chrono::seconds lifetime;
  std::chrono::seconds stillCached;  // advanced from the run: the cached credential is used
  std::chrono::seconds refreshed;    // advanced from the run: a new one is fetched
};

std::vector<RefreshCase> refreshCases() {
  return {
      {"short-lived: a fifth before expiry", 100s, 79s, 80s},
      {"an hour: a minute before expiry", 3600s, 3539s, 3540s},
  };
}

MKA_TABLE_TEST(ExecCredentialSource, RefreshesAFifthOfTheLifetimeBeforeExpiryAtMostAMinute, RefreshCase,
               refreshCases()) {
  const RefreshCase& c = testCase();
  FakeClock clock;
  int n = 0;
  ExecCredentialSource source(
      [&] {
        ++n;
        return tokenUntil("t" + std::to_string(n), clock.now() + c.lifetime);
      },
      clock);
  const auto start = clock.now();
  EXPECT_EQ(source.current().token, "t1");
  clock.advance(c.stillCached);
  EXPECT_EQ(source.current().token, "t1");
  clock.advance(c.refreshed - c.stillCached);
  EXPECT_EQ(source.current().token, "t2") << "refreshed before " << toRfc3339(start + c.lifetime);
  EXPECT_EQ(source.runs(), 2);
}

TEST(ExecCredentialSource, WithoutExpiryTheCredentialLastsUntilRefused) {
  FakeClock clock;
  int n = 0;
  ExecCredentialSource source([&] { return tokenUntil("t" + std::to_string(++n), std::nullopt); }, clock);
  const auto first = source.current();
  clock.advance(std::chrono::hours{24 * 365});
  EXPECT_EQ(source.current().token, "t1");
  source.refused(first);
  EXPECT_EQ(source.current().token, "t2");
  // A refusal of a credential already replaced (another thread saw the same 401) runs nothing.
  source.refused(first);
  EXPECT_EQ(source.current().token, "t2");
  EXPECT_EQ(source.runs(), 2);
}

TEST(ExecCredentialSource, AFailedRefreshKeepsAnUnexpiredCredentialThenFails) {
  FakeClock clock;
  bool fail = false;
  ExecCredentialSource source(
      [&] {
        if (fail) throw Error("exec: executable cp-creds failed with exit code 1");
        return tokenUntil("t1", clock.now() + 100s);
      },
      clock);
  EXPECT_EQ(source.current().token, "t1");
  fail = true;
  clock.advance(90s);  // refresh due, the plugin fails, the token is still valid for 10 s
  EXPECT_EQ(source.current().token, "t1");
  clock.advance(10s);  // expired
  EXPECT_EQ(mka::test::messageOf<Error>([&] { source.current(); }),
            "exec: executable cp-creds failed with exit code 1");
  fail = false;
  EXPECT_EQ(source.current().token, "t1");
}

// A REST client of a sandbox cluster whose credentials come from `source`.
class ExecCredentialClient : public ::testing::Test {
 protected:
  RestClient& clientUsing(std::shared_ptr<CredentialSource> source) {
    auto config = restConfigFor(Kubeconfig::parse(cluster.kubeconfig()));
    config.bearerToken.clear();
    config.credentials = std::move(source);
    ClientOptions options;
    options.maxRetries = 0;
    client = std::make_unique<RestClient>(config, options);
    return *client;
  }
  int get() { return client->request("GET", "/api/v1/namespaces/default").status; }

  sandbox::Sandbox sandbox;
  sandbox::Cluster& cluster = sandbox.addCluster({.name = "w1"});
  FakeClock clock;
  std::unique_ptr<RestClient> client;
};

// A refused token is replaced once and the request sent again; a plugin that fails is the
// request's error.
TEST_F(ExecCredentialClient, ARefusedTokenIsReplacedAndTheRequestSentAgain) {
  std::vector<std::string> tokens = {"revoked", cluster.token()};
  std::size_t next = 0;
  auto source = std::make_shared<ExecCredentialSource>(
      [&] {
        if (next >= tokens.size()) throw Error("exec: executable cp-creds failed with exit code 1");
        return tokenUntil(tokens[next++], std::nullopt);
      },
      clock);
  auto& client = clientUsing(source);
  EXPECT_EQ(get(), 200);
  EXPECT_EQ(source->runs(), 2);
  EXPECT_EQ(client.requestsSent(), 2u);
  EXPECT_EQ(get(), 200) << "the new token is kept";
  EXPECT_EQ(source->runs(), 2);

  // Refused twice in a row: the second 401 is the caller's error.
  tokens.insert(tokens.end(), {"revoked-too", "revoked-again"});
  source->refused(source->current());
  try {
    get();
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 401) << e.what();
  }
  // A plugin that fails is the request's error.
  EXPECT_THAT(mka::test::messageOf<ApiError>([&] { get(); }),
              HasSubstr("getting credentials: exec: executable cp-creds failed with exit code 1"));
}

// A plugin that hands out client certificates: a refused one is replaced, and no connection
// keeps the old one (client-go closes them on rotation).
TEST_F(ExecCredentialClient, ARotatedClientCertificateReplacesTheOldOneOnEveryConnection) {
  net::CertificateAuthority strangerCa;
  const std::vector<net::CertificateAndKey> certificates = {
      strangerCa.issue({.commonName = "intruder", .clientAuth = true}), cluster.clientCertificate("adapter")};
  std::size_t next = 0;
  auto source = std::make_shared<ExecCredentialSource>(
      [&] {
        const auto& c = certificates.at(std::min(next++, certificates.size() - 1));
        return ExecCredential{"", c.certPem, c.keyPem, std::nullopt};
      },
      clock);
  clientUsing(source);
  // The stranger's connection is refused; the retry connects with the new certificate.
  EXPECT_EQ(get(), 200);
  EXPECT_EQ(source->runs(), 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(get(), 200);
  EXPECT_EQ(source->runs(), 2);
}

}  // namespace
}  // namespace mka::kube
