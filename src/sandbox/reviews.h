#pragma once
// TokenReview and SubjectAccessReview as kube-apiserver answers them, for the sandbox's own
// identities: its cluster token (an administrator, group system:masters), ServiceAccount tokens
// filled by its token controller, and RBAC evaluated from the Roles, ClusterRoles and bindings
// stored in the cluster (what a delegating authorizer such as controller-runtime's secure
// metrics filter asks). Reviews are answered, never stored.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::sandbox {
class ClusterApi;
}

namespace mka::sandbox::detail {

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
};

// The user a bearer token stands for, or nullopt when it stands for none.
using TokenAuthenticator = std::function<std::optional<UserInfo>(const std::string& token)>;

// The review with its status filled (authenticated, user); the spec's token is not echoed back.
nlohmann::json answerTokenReview(const nlohmann::json& review, const TokenAuthenticator& authenticate);

// The review with status.allowed (and a reason naming the granting binding) filled from RBAC.
nlohmann::json answerSubjectAccessReview(const ClusterApi& api, const nlohmann::json& review);

// Whether RBAC grants `user` the request described by a SubjectAccessReview's spec
// (resourceAttributes or nonResourceAttributes); `reason` names the binding that does.
bool rbacAllows(const ClusterApi& api, const UserInfo& user, const nlohmann::json& spec, std::string* reason);

// The groups kube-apiserver gives a ServiceAccount's token.
std::vector<std::string> serviceAccountGroups(const std::string& username);

}  // namespace mka::sandbox::detail
