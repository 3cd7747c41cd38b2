// TokenReview and SubjectAccessReview over a cluster's HTTPS port, as a delegating authenticator
// and authorizer (controller-runtime's secure metrics filter) send them.
#include <gtest/gtest.h>

#include "mka/common/base64.h"
#include "mka/sandbox/sandbox.h"
#include "sandbox_http.h"
#include "support/eventually.h"
#include "token_controller.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

class ReviewsTest : public ::testing::Test {
 protected:
  ReviewsTest() : cluster_(sandbox_.addCluster({.name = "c"})) {}

  json post(const std::string& path, const json& review) {
    auto client = test::clientFor(cluster_);
    auto res = client->Post(path, review.dump(), "application/json");
    EXPECT_EQ(test::statusOf(res), 201) << (res ? res->body : "no answer");
    return test::bodyOf(res);
  }
  json tokenReview(const std::string& token) {
    return post("/apis/authentication.k8s.io/v1/tokenreviews",
                {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", token}}}});
  }
  json access(const std::string& user, const std::vector<std::string>& groups, const json& attributes) {
    json spec = {{"user", user}, {"groups", groups}};
    spec.update(attributes);
    return post("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
  }
  void create(const json& object) {
    auto client = test::clientFor(cluster_);
    const auto apiVersion = object.value("apiVersion", "");
    const auto kind = object.value("kind", "");
    std::string plural = kind;
    for (auto& c : plural) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    plural += "s";
    const auto ns = object["metadata"].value("namespace", "");
    const std::string path = (apiVersion == "v1" ? "/api/v1" : "/apis/" + apiVersion) +
                             (ns.empty() ? "" : "/namespaces/" + ns) + "/" + plural;
    auto res = client->Post(path, object.dump(), "application/json");
    ASSERT_EQ(test::statusOf(res), 201) << path << ": " << (res ? res->body : "no answer");
  }
  // A ServiceAccount in `ns` and its token, once the token controller filled its Secret.
  std::string serviceAccountToken(const std::string& ns, const std::string& name) {
    create({{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}, {"namespace", ns}}}});
    create({{"apiVersion", "v1"},
            {"kind", "Secret"},
            {"metadata",
             {{"name", name + "-token"},
              {"namespace", ns},
              {"annotations", {{std::string(kServiceAccountNameAnnotation), name}}}}},
            {"type", std::string(kServiceAccountTokenType)}});
    std::string token;
    EXPECT_TRUE(mka::test::eventually([&] {
      const auto s = cluster_.api().get({"", "v1", "secrets", ns, name + "-token", ""});
      if (!s.contains("data") || !s["data"].contains("token")) return false;
      token = base64Decode(s["data"]["token"].get<std::string>()).value_or("");
      return true;
    }));
    return token;
  }
  void bind(const std::string& kind, const std::string& ns, const std::string& name, const json& rules,
            const json& subject) {
    const bool cluster = kind == "ClusterRole";
    json meta = {{"name", name}};
    if (!cluster) meta["namespace"] = ns;
    create({{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", kind}, {"metadata", meta}, {"rules", rules}});
    create({{"apiVersion", "rbac.authorization.k8s.io/v1"},
            {"kind", cluster ? "ClusterRoleBinding" : "RoleBinding"},
            {"metadata", meta},
            {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", kind}, {"name", name}}},
            {"subjects", json::array({subject})}});
  }

  Sandbox sandbox_;
  Cluster& cluster_;
};

TEST_F(ReviewsTest, ATokenReviewNamesTheTokensUserAndGroups) {
  const auto admin = tokenReview(cluster_.token());
  EXPECT_EQ(admin["status"].value("authenticated", false), true) << admin.dump();
  EXPECT_EQ(admin["status"]["user"].value("username", ""), "system:admin");
  EXPECT_FALSE(admin["spec"].contains("token")) << "the token is not echoed";

  const auto token = serviceAccountToken("default", "prometheus");
  const auto account = tokenReview(token);
  EXPECT_EQ(account["status"].value("authenticated", false), true) << account.dump();
  EXPECT_EQ(account["status"]["user"].value("username", ""), "system:serviceaccount:default:prometheus");
  EXPECT_EQ(account["status"]["user"]["groups"],
            json::array({"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}));

  const auto bogus = tokenReview("not-a-token");
  EXPECT_EQ(bogus["status"].value("authenticated", true), false) << bogus.dump();
  EXPECT_FALSE(bogus["status"].contains("user"));
}

TEST_F(ReviewsTest, ASubjectAccessReviewFollowsTheStoredRbac) {
  const json metrics = {{"nonResourceAttributes", {{"path", "/metrics"}, {"verb", "get"}}}};
  const std::string reader = "system:serviceaccount:monitoring:prometheus";
  const std::vector<std::string> saGroups = {"system:serviceaccounts", "system:authenticated"};
  EXPECT_FALSE(access(reader, saGroups, metrics)["status"].value("allowed", true)) << "nothing granted yet";

  bind("ClusterRole", "", "metrics-reader", json::array({{{"nonResourceURLs", {"/metrics"}}, {"verbs", {"get"}}}}),
       {{"kind", "ServiceAccount"}, {"name", "prometheus"}, {"namespace", "monitoring"}});
  const auto allowed = access(reader, saGroups, metrics);
  EXPECT_TRUE(allowed["status"].value("allowed", false)) << allowed.dump();
  EXPECT_NE(allowed["status"].value("reason", "").find("metrics-reader"), std::string::npos) << allowed.dump();
  EXPECT_FALSE(access("system:serviceaccount:monitoring:other", saGroups, metrics)["status"].value("allowed", true));
  EXPECT_FALSE(
      access(reader, saGroups, {{"nonResourceAttributes", {{"path", "/metrics"}, {"verb", "post"}}}})["status"].value(
          "allowed", true));
  EXPECT_FALSE(
      access(reader, saGroups, {{"nonResourceAttributes", {{"path", "/debug"}, {"verb", "get"}}}})["status"].value(
          "allowed", true));

  // A Role grants in its namespace only; a Group subject matches the user's groups.
  create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}});
  bind("Role", "team", "pods", json::array({{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list"}}}}),
       {{"kind", "Group"}, {"name", "developers"}});
  const auto pods = [](const std::string& ns) {
    return json{{"resourceAttributes", {{"namespace", ns}, {"verb", "list"}, {"group", ""}, {"resource", "pods"}}}};
  };
  EXPECT_TRUE(access("alice", {"developers"}, pods("team"))["status"].value("allowed", false));
  EXPECT_FALSE(access("alice", {"developers"}, pods("default"))["status"].value("allowed", true));
  EXPECT_FALSE(access("bob", {"testers"}, pods("team"))["status"].value("allowed", true));
  EXPECT_TRUE(access("root", {"system:masters"}, pods("default"))["status"].value("allowed", false));
}

}  // namespace
}  // namespace mka::sandbox
