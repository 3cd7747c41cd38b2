#include "mka/multikueue/admission_check_reconciler.h"

#include <algorithm>
#include <set>

#include "mka/api/views.h"
#include "mka/common/log.h"
#include "mka/controller/status_update.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"

namespace mka::multikueue {

using api::Condition;
using controller::ObjectReader;
using controller::Result;
using controller::writeCondition;

using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> admissionCheckLogger() {
  static const auto log = namedLogger("multikueue-admissioncheck");
  return log;
}

// Go's fmt "%v" of a []string: "[a b]".
std::string goList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
  return out + "]";
}

Condition activeCondition(std::string_view status, std::string_view reason, std::string message) {
  return {std::string(api::condition::kActive), std::string(status), std::string(reason), std::move(message)};
}

}  // namespace

std::vector<std::string> clustersOf(const json& config) { return api::MultiKueueConfigView(config).clusters(); }

bool isOurCheck(const json& admissionCheck, std::string_view controllerName) {
  return api::AdmissionCheckView(admissionCheck).controllerName() == controllerName;
}

ConfigReference multiKueueConfigOf(const json& admissionCheck) {
  const api::AdmissionCheckView check(admissionCheck);
  if (!check.hasParameters()) return {"", std::string(kMissingParametersReference)};
  const auto bad = std::string(kBadParametersReference);
  const auto name = check.parametersName();
  if (name.empty()) return {"", "empty name: " + bad};
  const auto group = check.parametersApiGroup();
  if (group != api::kKueueGroup)
    return {"",
            "wrong group \"" + std::string(group) + "\", expecting \"" + std::string(api::kKueueGroup) + "\": " + bad};
  const auto kind = check.parametersKind();
  if (kind != kMultiKueueConfigKind)
    return {"", "wrong kind \"" + std::string(kind) + "\", expecting \"" + std::string(kMultiKueueConfigKind) +
                    "\": " + bad};
  return {std::string(name), ""};
}

Condition activeConditionOf(const json& check, const ObjectReader& objects,
                            const std::function<bool(const std::string& cluster)>& connected) {
  Condition desired;
  const auto ref = multiKueueConfigOf(check);
  std::optional<json> config;
  if (!ref.error.empty()) {
    desired = activeCondition("False", check_reason::kBadConfig, std::string(kCannotLoadParametersPrefix) + ref.error);
  } else {
    config = objects.get(api::kMultiKueueConfigGvk, "", ref.name);
    if (!config)  // kube-apiserver's words for the missing object, as Kueue shows them
      desired = activeCondition(
          "False", check_reason::kBadConfig,
          std::string(kCannotLoadParametersPrefix) + "multikueueconfigs.kueue.x-k8s.io \"" + ref.name + "\" not found");
  }
  if (config) {
    const auto clusters = clustersOf(*config);
    std::set<std::string> existing;
    for (const auto& c : objects.list(api::kMultiKueueClusterGvk, ""))
      existing.insert(std::string(api::ObjectView(c).name()));
    std::vector<std::string> missing, inactive;
    for (const auto& c : clusters) {
      if (!existing.contains(c)) {
        missing.push_back(c);
      } else if (!connected(c)) {
        inactive.push_back(c);
      }
    }
    const auto unusable = missing.size() + inactive.size();
    if (unusable == 0) {
      desired = activeCondition("True", check_reason::kActive, std::string(kCheckActiveMessage));
    } else {
      std::vector<std::string> parts;
      if (!missing.empty()) parts.push_back(std::string(kMissingClustersPrefix) + goList(missing));
      if (!inactive.empty()) parts.push_back(std::string(kInactiveClustersPrefix) + goList(inactive));
      std::string message = parts[0];
      if (parts.size() > 1) message += ", " + parts[1];
      desired = unusable < clusters.size()
                    ? activeCondition("True", check_reason::kSomeActiveClusters, std::move(message))
                    : activeCondition("False", check_reason::kNoUsableClusters, std::move(message));
    }
  }
  return desired;
}

AdmissionCheckReconciler::AdmissionCheckReconciler(kube::Client& manager, const ObjectReader& objects,
                                                   const ClusterRegistry& clusters, const Clock& clock, Options options)
    : manager_(manager), objects_(objects), clusters_(clusters), clock_(clock), options_(std::move(options)) {}

Result AdmissionCheckReconciler::reconcile(const std::string& admissionCheckName) {
  const auto found = objects_.get(api::kAdmissionCheckGvk, "", admissionCheckName);
  if (!found) return Result::done();
  const json& check = *found;
  if (!isOurCheck(check, options_.controllerName)) return Result::done();

  const Condition desired = activeConditionOf(
      check, objects_, [this](const std::string& cluster) { return clusters_.connected(cluster) != nullptr; });
  if (writeCondition(manager_, check, desired, clock_))
    log::info(*admissionCheckLogger(), "admission check status written",
              {{"admissionCheck", admissionCheckName},
               {"active", desired.status},
               {"reason", desired.reason},
               {"message", desired.message}});
  return Result::done();
}

}  // namespace mka::multikueue
