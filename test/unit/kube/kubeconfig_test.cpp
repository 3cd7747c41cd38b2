#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/kube/kubeconfig.h"
#include "support/table_test.h"
#include "support/temp_dir.h"
#include "support/thrown.h"

namespace mka::kube {
namespace {

using ::testing::HasSubstr;

const std::string kCa = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

std::string kubeconfig(const std::string& clusterExtra = "", const std::string& userExtra = "  user:\n    token: abc\n",
                       const std::string& server = "https://127.0.0.1:6443") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\nclusters:\n- name: c1\n  cluster:\n    server: " +
         server + "\n    certificate-authority-data: " + base64Encode(kCa) + "\n" + clusterExtra +
         "contexts:\n- name: ctx\n  context: {cluster: c1, user: u1, namespace: team-a}\nusers:\n- name: u1\n" +
         userExtra;
}

std::string errorOf(const std::function<void()>& f) { return mka::test::messageOf<Error>(f); }

TEST(Kubeconfig, InlineCredentialsOfTheCurrentContext) {
  auto config = restConfigFor(Kubeconfig::parse(kubeconfig()));
  EXPECT_EQ(config.host, "https://127.0.0.1:6443");
  EXPECT_EQ(config.caPem, kCa);
  EXPECT_EQ(config.bearerToken, "abc");
  EXPECT_EQ(config.namespace_, "team-a");
  EXPECT_EQ(config.context, "ctx");

  auto withCert =
      restConfigFor(Kubeconfig::parse(kubeconfig("", "  user:\n    client-certificate-data: " + base64Encode("CERT") +
                                                         "\n    client-key-data: " + base64Encode("KEY") + "\n")));
  EXPECT_EQ(withCert.clientCertificatePem, "CERT");
  EXPECT_EQ(withCert.clientKeyPem, "KEY");
  EXPECT_TRUE(withCert.bearerToken.empty());
}

TEST(Kubeconfig, ErrorsNameTheSourceAndTheFix) {
  EXPECT_THAT(errorOf([] { Kubeconfig::parse("clusters: {a: b}", "f.yaml"); }),
              HasSubstr("f.yaml: clusters: must be a list"));
  EXPECT_THAT(errorOf([] { Kubeconfig::parse("clusters:\n- cluster: {server: x}\n", "f.yaml"); }),
              HasSubstr("f.yaml: clusters[0].name: Required value"));
  EXPECT_THAT(
      errorOf([] { Kubeconfig::parse("clusters:\n- name: a\n  cluster: {certificate-authority-data: '!!'}\n"); }),
      HasSubstr("clusters[0].cluster.certificate-authority-data: is not valid base64"));
  EXPECT_THAT(errorOf([] { Kubeconfig::parse("[unclosed", "f.yaml"); }), HasSubstr("f.yaml: not valid YAML"));
  EXPECT_THAT(
      errorOf([] { Kubeconfig::parse(",w,", "Secret ns/worker1"); }),
      HasSubstr("Secret ns/worker1: not valid YAML: yaml: line 1, column 1: did not find expected node content"));
  EXPECT_THAT(errorOf([] { Kubeconfig::parse(std::string(200'000, '['), "f.yaml"); }),
              HasSubstr("f.yaml: not a kubeconfig: yaml: line 1: nested deeper than 100 levels (the depth limit"));
  EXPECT_THAT(errorOf([] { restConfigFor(Kubeconfig::parse(kubeconfig()), "nope"); }),
              HasSubstr("context \"nope\" does not exist"));
  auto noUser = kubeconfig();
  noUser.replace(noUser.find("- name: u1"), 10, "- name: u2");
  EXPECT_THAT(errorOf([&] { restConfigFor(Kubeconfig::parse(noUser)); }), HasSubstr("user \"u1\" does not exist"));
  EXPECT_THAT(errorOf([] { restConfigFor(Kubeconfig::parse("apiVersion: v1\n")); }),
              HasSubstr("no current-context is set"));
}

class LoadingTest : public ::testing::Test {
 protected:
  LoadingTest() {
    rules.home = dir / "home";
    rules.serviceAccountDir = dir / "sa";
  }
  std::filesystem::path write(const std::string& name, const std::string& content) {
    auto path = dir / name;
    std::filesystem::create_directories(path.parent_path());
    test::writeFile(path, content);
    return path;
  }
  static std::string named(const std::string& context, const std::string& server) {
    return "current-context: " + context + "\nclusters:\n- name: " + context + "\n  cluster: {server: '" + server +
           "'}\ncontexts:\n- name: " + context + "\n  context: {cluster: " + context + "}\n";
  }
  test::TempDir dir;
  LoadingRules rules;
};

TEST_F(LoadingTest, ExplicitPathWinsAndMustExist) {
  write("home/.kube/config", named("home", "https://home:6443"));
  auto explicitFile = write("explicit", named("explicit", "https://explicit:6443"));
  rules.explicitPath = explicitFile.string();
  rules.kubeconfigEnv = (dir / "home/.kube/config").string();
  EXPECT_EQ(loadRestConfig(rules).host, "https://explicit:6443");
  rules.explicitPath = (dir / "missing").string();
  EXPECT_THAT(errorOf([&] { loadRestConfig(rules); }), HasSubstr("cannot read"));
}

TEST_F(LoadingTest, KubeconfigEnvListIsMergedFirstFileWins) {
  auto a = write("a", named("a", "https://a:6443"));
  auto b = write("b", named("b", "https://b:6443") + "users:\n- name: u\n  user: {token: t}\n");
  rules.kubeconfigEnv = (dir / "missing").string() + ":" + a.string() + ":" + b.string();
  EXPECT_EQ(loadRestConfig(rules).host, "https://a:6443") << "first current-context wins";
  rules.context = "b";
  EXPECT_EQ(loadRestConfig(rules).host, "https://b:6443") << "contexts of later files are merged in";
}

TEST_F(LoadingTest, HomeConfigThenInCluster) {
  write("home/.kube/config", named("home", "https://home:6443"));
  EXPECT_EQ(loadRestConfig(rules).host, "https://home:6443");
  std::filesystem::remove(dir / "home/.kube/config");

  EXPECT_THAT(errorOf([&] { loadRestConfig(rules); }), HasSubstr("no Kubernetes configuration found"));
  write("sa/token", "sa-token\n");
  write("sa/ca.crt", kCa);
  write("sa/namespace", "kueue-system");
  rules.serviceHost = "10.0.0.1";
  rules.servicePort = "443";
  auto config = loadRestConfig(rules);
  EXPECT_EQ(config.host, "https://10.0.0.1:443");
  EXPECT_EQ(config.bearerToken, "sa-token");
  EXPECT_EQ(config.bearerTokenFile, (dir / "sa/token").string());
  EXPECT_EQ(config.caPem, kCa);
  EXPECT_EQ(config.namespace_, "kueue-system");
  rules.serviceHost = "fd00::1";
  EXPECT_EQ(loadRestConfig(rules).host, "https://[fd00::1]:443");
}

TEST_F(LoadingTest, FileReferencesAreRelativeToTheirKubeconfig) {
  write("conf/ca.pem", kCa);
  write("conf/token", "from-file");
  auto file = write("conf/config",
                    "current-context: x\nclusters:\n- name: x\n  cluster: {server: 'https://x:1', "
                    "certificate-authority: ca.pem}\nusers:\n- name: x\n  user: {tokenFile: token}\n"
                    "contexts:\n- name: x\n  context: {cluster: x, user: x}\n");
  rules.explicitPath = file.string();
  auto config = loadRestConfig(rules);
  EXPECT_EQ(config.caPem, kCa);
  EXPECT_EQ(config.bearerToken, "from-file");
}

TEST(KubeconfigSecurity, AcceptsInlineCredentials) {
  EXPECT_EQ(validateKubeconfigSecurity(kubeconfig()), std::nullopt);
  EXPECT_EQ(validateKubeconfigSecurity(kubeconfig("", "  user:\n    token: t\n", "https://worker-1.example.com")),
            std::nullopt);
  EXPECT_EQ(validateKubeconfigSecurity(kubeconfig("", "  user:\n    token: t\n", "https://[fd00::1]:6443")),
            std::nullopt);
}

struct InsecureKubeconfig {
  std::string name;
  std::string kubeconfig;
  std::string message;
};

std::vector<InsecureKubeconfig> insecureKubeconfigs() {
  return {
      {"not yaml", "clusters: [", "failed to parse kubeconfig(apiconfig): "},
      {"tokenFile", kubeconfig("", "  user:\n    tokenFile: /var/run/token\n"), "tokenFile is not allowed"},
      {"insecure", kubeconfig("    insecure-skip-tls-verify: true\n"),
       "insecure TLS verification is not allowed for cluster c1"},
      {"CA path", kubeconfig("    certificate-authority: /etc/ca.crt\n"),
       "certificate-authority file paths are not allowed, use certificate-authority-data for cluster c1"},
      {"empty server", kubeconfig("", "  user:\n    token: t\n", "''"), "server URL is required for cluster c1"},
      {"untrusted endpoint", kubeconfig("", "  user:\n    token: t\n", "https://bad_host!:6443"),
       "untrusted server endpoint"},
      {"not a URL", kubeconfig("", "  user:\n    token: t\n", "worker:6443"), "untrusted server endpoint"},
      {"basic auth", kubeconfig("", "  user:\n    username: admin\n    password: secret\n"),
       "basic auth is not allowed"},
      {"exec", kubeconfig("", "  user:\n    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}\n"),
       "exec plugins are not allowed"},
      {"auth provider", kubeconfig("", "  user:\n    auth-provider: {name: gcp}\n"), "auth providers are not allowed"},
      {"client cert path", kubeconfig("", "  user:\n    client-certificate: /etc/cert\n    client-key: /etc/key\n"),
       "client certificate file paths are not allowed"},
  };
}

MKA_TABLE_TEST(KubeconfigSecurity, RejectsWithKueuesMessages, InsecureKubeconfig, insecureKubeconfigs()) {
  const InsecureKubeconfig& c = testCase();
  auto message = validateKubeconfigSecurity(c.kubeconfig);
  ASSERT_TRUE(message.has_value());
  EXPECT_THAT(*message, ::testing::StartsWith(c.message));
}

TEST(KubeconfigSecurity, EveryClusterIsCheckedNotOnlyTheCurrentOne) {
  auto config = kubeconfig() + "";
  config.replace(config.find("contexts:"), 0,
                 "- name: other\n  cluster:\n    server: https://other:6443\n    insecure-skip-tls-verify: true\n");
  EXPECT_EQ(validateKubeconfigSecurity(config), "insecure TLS verification is not allowed for cluster other");
}

TEST(KubeconfigSecret, ReadsDataKubeconfig) {
  nlohmann::json secret = {{"metadata", {{"name", "worker1"}, {"namespace", "kueue-system"}}},
                           {"data", {{"kubeconfig", base64Encode("apiVersion: v1\n")}}}};
  EXPECT_EQ(kubeconfigFromSecret(secret), "apiVersion: v1\n");
  secret["data"].erase("kubeconfig");
  EXPECT_EQ(errorOf([&] { kubeconfigFromSecret(secret); }), "key \"kubeconfig\" not found in secret \"worker1\"");
  secret["data"]["kubeconfig"] = "***";
  EXPECT_THAT(errorOf([&] { kubeconfigFromSecret(secret); }), HasSubstr("data.kubeconfig is not valid base64"));
}

}  // namespace
}  // namespace mka::kube
