#include "mka/app/metrics_access.h"

#include <nlohmann/json.hpp>

#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/kube/client.h"

namespace mka::app {

using nlohmann::json;

MetricsAccess::MetricsAccess(kube::Client& client, const Clock& clock, std::chrono::seconds ttl)
    : client_(client), clock_(clock), ttl_(ttl) {}

MetricsAccess::Decision MetricsAccess::check(std::string_view authorization, const std::string& path) {
  constexpr std::string_view kBearer = "bearer ";
  if (authorization.size() <= kBearer.size() ||
      strings::toLower(std::string(authorization.substr(0, kBearer.size()))) != kBearer)
    return {401, "Unauthorized: a bearer token is required"};
  const std::string token(authorization.substr(kBearer.size()));
  const std::string key = path + '\n' + token;
  const auto now = clock_.now();
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.expires > now) return it->second.decision;
  }
  auto decision = review(token, path);
  if (decision.status != 500) {  // a failed review is asked again next time
    std::lock_guard lock(mutex_);
    if (cache_.size() >= kMaxCached) cache_.clear();
    cache_[key] = {decision, now + ttl_};
  }
  return decision;
}

MetricsAccess::Decision MetricsAccess::review(const std::string& token, const std::string& path) {
  try {
    const auto authn = client_.create(
        {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", token}}}});
    const auto status = authn.value("status", json::object());
    if (!status.value("authenticated", false)) return {401, "Unauthorized: the bearer token is not valid"};
    const auto user = status.value("user", json::object());
    const auto username = user.value("username", "");
    json spec = {{"user", username},
                 {"groups", user.value("groups", json::array())},
                 {"nonResourceAttributes", {{"path", path}, {"verb", "get"}}}};
    if (user.contains("uid")) spec["uid"] = user["uid"];
    if (user.contains("extra")) spec["extra"] = user["extra"];
    const auto authz =
        client_.create({{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
    if (!authz.value("status", json::object()).value("allowed", false))
      return {403, "Forbidden: user \"" + username + "\" may not get path \"" + path +
                       "\": bind it to a ClusterRole granting get on the non-resource URL " + path};
    return {200, ""};
  } catch (const std::exception& e) {
    log::warn("metrics access review failed", {{"path", path}, {"error", e.what()}});
    return {500, "Internal Server Error: the token could not be reviewed"};
  }
}

}  // namespace mka::app
