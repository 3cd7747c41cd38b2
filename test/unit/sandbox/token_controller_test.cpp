// The token controller and its tokens, over a cluster's real HTTPS port: what a kubeconfig built
// from a legacy ServiceAccount token Secret meets on a real cluster.
#include <gtest/gtest.h>

#include "mka/common/base64.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/sandbox.h"
#include "sandbox_http.h"
#include "support/eventually.h"
#include "token_controller.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

const ResourceRef kServiceAccounts{"", "v1", "serviceaccounts", "default", "", ""};
const ResourceRef kSecrets{"", "v1", "secrets", "default", "", ""};

ResourceRef named(ResourceRef ref, const std::string& name) {
  ref.name = name;
  return ref;
}

json serviceAccount(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}}}};
}

json tokenSecret(const std::string& name, const std::string& account) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"annotations", {{std::string(kServiceAccountNameAnnotation), account}}}}},
          {"type", std::string(kServiceAccountTokenType)}};
}

std::optional<json> find(Cluster& c, const ResourceRef& ref) {
  try {
    return c.api().get(ref);
  } catch (const ApiError& e) {
    if (e.code() == 404) return std::nullopt;
    throw;
  }
}

std::string data(const json& secret, const std::string& key) {
  return base64Decode(secret.at("data").at(key).get<std::string>()).value_or("");
}

// The token, once the controller filled the Secret.
std::string awaitToken(Cluster& c, const std::string& secret) {
  std::string token;
  EXPECT_TRUE(mka::test::eventually([&] {
    const auto s = find(c, named(kSecrets, secret));
    if (!s || !s->contains("data") || !s->at("data").contains("token")) return false;
    token = data(*s, "token");
    return true;
  }));
  return token;
}

int statusWith(const Cluster& c, const std::string& token) {
  return test::statusOf(test::clientFor(c, token)->Get("/api/v1/namespaces/default/secrets"));
}

class TokenControllerTest : public ::testing::Test {
 protected:
  Sandbox sandbox_;
  Cluster& cluster_ = sandbox_.addCluster({.name = "worker"});
};

TEST_F(TokenControllerTest, FillsTheSecretAndItsTokenAuthenticatesTheServiceAccount) {
  cluster_.api().create(kServiceAccounts, serviceAccount("robot"));
  cluster_.api().create(kSecrets, tokenSecret("robot-token", "robot"));
  const auto token = awaitToken(cluster_, "robot-token");
  ASSERT_FALSE(token.empty());
  const auto secret = *find(cluster_, named(kSecrets, "robot-token"));
  EXPECT_EQ(data(secret, "ca.crt"), cluster_.caPem());
  EXPECT_EQ(data(secret, "namespace"), "default");
  const auto account = *find(cluster_, named(kServiceAccounts, "robot"));
  EXPECT_EQ(secret["metadata"]["annotations"].value(std::string(kServiceAccountUidAnnotation), ""),
            account["metadata"].value("uid", ""));

  cluster_.recordRequests(true);
  EXPECT_EQ(statusWith(cluster_, token), 200);
  const auto recorded = cluster_.recordedRequests();
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].user, "system:serviceaccount:default:robot");
  EXPECT_EQ(statusWith(cluster_, token + "x"), 401);
}

TEST_F(TokenControllerTest, ATokenStopsWorkingWithItsSecret) {
  cluster_.api().create(kServiceAccounts, serviceAccount("robot"));
  cluster_.api().create(kSecrets, tokenSecret("robot-token", "robot"));
  const auto token = awaitToken(cluster_, "robot-token");
  ASSERT_EQ(statusWith(cluster_, token), 200);
  cluster_.api().remove(named(kSecrets, "robot-token"));
  EXPECT_EQ(statusWith(cluster_, token), 401);
}

TEST_F(TokenControllerTest, DeletingTheServiceAccountDeletesItsTokenSecretsAndRefusesTheToken) {
  cluster_.api().create(kServiceAccounts, serviceAccount("robot"));
  cluster_.api().create(kSecrets, tokenSecret("robot-token", "robot"));
  const auto token = awaitToken(cluster_, "robot-token");
  cluster_.api().remove(named(kServiceAccounts, "robot"));
  EXPECT_EQ(statusWith(cluster_, token), 401);
  EXPECT_TRUE(mka::test::eventually([&] { return !find(cluster_, named(kSecrets, "robot-token")); }));
  // A new ServiceAccount of the same name does not bring the old token back.
  cluster_.api().create(kServiceAccounts, serviceAccount("robot"));
  EXPECT_EQ(statusWith(cluster_, token), 401);
}

TEST_F(TokenControllerTest, ATokenSecretWithoutItsServiceAccountIsDeleted) {
  cluster_.api().create(kSecrets, tokenSecret("ghost-token", "ghost"));
  EXPECT_TRUE(mka::test::eventually([&] { return !find(cluster_, named(kSecrets, "ghost-token")); }));
}

TEST_F(TokenControllerTest, OtherSecretsAreLeftAlone) {
  cluster_.api().create(kSecrets, {{"apiVersion", "v1"},
                                   {"kind", "Secret"},
                                   {"metadata", {{"name", "plain"}}},
                                   {"stringData", {{"key", "value"}}}});
  // The controller works in order: once a later token Secret is filled, it has seen the first.
  cluster_.api().create(kServiceAccounts, serviceAccount("robot"));
  cluster_.api().create(kSecrets, tokenSecret("robot-token", "robot"));
  ASSERT_FALSE(awaitToken(cluster_, "robot-token").empty());
  const auto secret = *find(cluster_, named(kSecrets, "plain"));
  EXPECT_FALSE(secret["data"].contains("token"));
}

}  // namespace
}  // namespace mka::sandbox
