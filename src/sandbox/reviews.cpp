#include "reviews.h"

#include <algorithm>

#include "mka/common/strings.h"
#include "mka/sandbox/cluster_api.h"

namespace mka::sandbox::detail {

namespace {

using nlohmann::json;

bool contains(const json& list, const std::string& value) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(),
                     [&](const json& v) { return v.is_string() && v.get<std::string>() == value; });
}

bool matchesWildcard(const json& list, const std::string& value) {
  return contains(list, "*") || contains(list, value);
}

// RBAC's nonResourceURLs: an exact path, "*", or a prefix ending in "*".
bool matchesPath(const json& urls, const std::string& path) {
  if (!urls.is_array()) return false;
  for (const auto& u : urls) {
    if (!u.is_string()) continue;
    const auto url = u.get<std::string>();
    if (url == "*" || url == path) return true;
    if (!url.empty() && url.back() == '*' && path.rfind(url.substr(0, url.size() - 1), 0) == 0) return true;
  }
  return false;
}

bool ruleAllows(const json& rule, const json& spec) {
  if (spec.contains("nonResourceAttributes")) {
    const auto& a = spec["nonResourceAttributes"];
    return matchesWildcard(rule.value("verbs", json::array()), a.value("verb", "")) &&
           matchesPath(rule.value("nonResourceURLs", json::array()), a.value("path", ""));
  }
  const auto a = spec.value("resourceAttributes", json::object());
  std::string resource = a.value("resource", "");
  if (const auto sub = a.value("subresource", ""); !sub.empty()) resource += "/" + sub;
  const auto names = rule.value("resourceNames", json::array());
  return matchesWildcard(rule.value("verbs", json::array()), a.value("verb", "")) &&
         matchesWildcard(rule.value("apiGroups", json::array()), a.value("group", "")) &&
         matchesWildcard(rule.value("resources", json::array()), resource) &&
         (names.empty() || contains(names, a.value("name", "")));
}

bool subjectMatches(const json& subject, const UserInfo& user, const std::string& bindingNamespace) {
  const auto kind = subject.value("kind", "");
  const auto name = subject.value("name", "");
  if (kind == "User") return name == user.name;
  if (kind == "Group") return std::find(user.groups.begin(), user.groups.end(), name) != user.groups.end();
  if (kind == "ServiceAccount")
    return user.name == "system:serviceaccount:" + subject.value("namespace", bindingNamespace) + ":" + name;
  return false;
}

json listOf(const ClusterApi& api, const std::string& plural, const std::string& ns) {
  return api.list({"rbac.authorization.k8s.io", "v1", plural, ns, "", ""}, {}).value("items", json::array());
}

std::optional<json> roleOf(const ClusterApi& api, const json& roleRef, const std::string& ns) {
  const auto kind = roleRef.value("kind", "");
  const auto plural = kind == "ClusterRole" ? "clusterroles" : "roles";
  for (const auto& r : listOf(api, plural, kind == "ClusterRole" ? "" : ns))
    if (r["metadata"].value("name", "") == roleRef.value("name", "")) return r;
  return std::nullopt;
}

}  // namespace

std::vector<std::string> serviceAccountGroups(const std::string& username) {
  const auto parts = strings::split(username, ':');  // system:serviceaccount:<ns>:<name>
  std::vector<std::string> groups = {"system:serviceaccounts"};
  if (parts.size() == 4) groups.push_back("system:serviceaccounts:" + std::string(parts[2]));
  groups.push_back("system:authenticated");
  return groups;
}

json answerTokenReview(const json& review, const TokenAuthenticator& authenticate) {
  json answer = review;
  const auto token = review.value("spec", json::object()).value("token", "");
  answer["spec"].erase("token");
  const auto user = token.empty() ? std::nullopt : authenticate(token);
  if (!user) {
    answer["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}};
    return answer;
  }
  answer["status"] = {{"authenticated", true},
                      {"user", {{"username", user->name}, {"groups", user->groups}}},
                      {"audiences", json::array({"https://kubernetes.default.svc"})}};
  return answer;
}

bool rbacAllows(const ClusterApi& api, const UserInfo& user, const json& spec, std::string* reason) {
  if (std::find(user.groups.begin(), user.groups.end(), "system:masters") != user.groups.end()) {
    if (reason) *reason = "group system:masters";
    return true;
  }
  const auto check = [&](const json& binding, const std::string& ns) {
    const auto subjects = binding.value("subjects", json::array());
    if (!std::any_of(subjects.begin(), subjects.end(), [&](const json& s) { return subjectMatches(s, user, ns); }))
      return false;
    const auto role = roleOf(api, binding.value("roleRef", json::object()), ns);
    if (!role) return false;
    for (const auto& rule : role->value("rules", json::array()))
      if (ruleAllows(rule, spec)) {
        if (reason)
          *reason = "RBAC: allowed by " + binding.value("kind", std::string("binding")) + " \"" +
                    binding["metadata"].value("name", "") + "\" of " + binding["roleRef"].value("kind", "") + " \"" +
                    binding["roleRef"].value("name", "") + "\"";
        return true;
      }
    return false;
  };
  for (const auto& b : listOf(api, "clusterrolebindings", "")) {
    json withKind = b;
    withKind["kind"] = "ClusterRoleBinding";
    if (check(withKind, "")) return true;
  }
  const auto ns = spec.value("resourceAttributes", json::object()).value("namespace", "");
  if (!ns.empty())
    for (const auto& b : listOf(api, "rolebindings", ns)) {
      json withKind = b;
      withKind["kind"] = "RoleBinding";
      if (check(withKind, ns)) return true;
    }
  return false;
}

json answerSubjectAccessReview(const ClusterApi& api, const json& review) {
  json answer = review;
  const auto spec = review.value("spec", json::object());
  UserInfo user{spec.value("user", ""), {}};
  for (const auto& g : spec.value("groups", json::array()))
    if (g.is_string()) user.groups.push_back(g.get<std::string>());
  std::string reason;
  const bool allowed = rbacAllows(api, user, spec, &reason);
  answer["status"] = {{"allowed", allowed}};
  if (allowed) answer["status"]["reason"] = reason;
  return answer;
}

}  // namespace mka::sandbox::detail
