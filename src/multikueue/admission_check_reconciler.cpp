#include "mka/multikueue/admission_check_reconciler.h"

#include <algorithm>
#include <set>

#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/conditions.h"

namespace mka::multikueue {

using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> admissionCheckLogger() {
  static const auto log = namedLogger("multikueue-admissioncheck");
  return log;
}

std::string stringAt(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return "";
    auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

std::string nameOf(const json& object) { return stringAt(object, {"metadata", "name"}); }

// Go's fmt "%v" of a []string: "[a b]".
std::string goList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
  return out + "]";
}

Condition activeCondition(std::string_view status, std::string_view reason, std::string message) {
  return {std::string(condition::kActive), std::string(status), std::string(reason), std::move(message)};
}

}  // namespace

std::vector<std::string> clustersOf(const json& config) {
  std::vector<std::string> names;
  for (const auto& c : json_fields::arrayMember(json_fields::objectMember(config, "spec"), "clusters"))
    if (c.is_string()) names.push_back(c.get<std::string>());
  return names;
}

bool isOurCheck(const json& admissionCheck, std::string_view controllerName) {
  return stringAt(admissionCheck, {"spec", "controllerName"}) == controllerName;
}

ConfigReference multiKueueConfigOf(const json& admissionCheck) {
  const auto spec = admissionCheck.value("spec", json::object());
  const auto parameters = spec.is_object() ? spec.value("parameters", json()) : json();
  if (!parameters.is_object()) return {"", std::string(kMissingParametersReference)};
  const auto bad = std::string(kBadParametersReference);
  const auto name = parameters.value("name", "");
  if (name.empty()) return {"", "empty name: " + bad};
  const auto group = parameters.value("apiGroup", "");
  if (group != kKueueGroup)
    return {"", "wrong group \"" + group + "\", expecting \"" + std::string(kKueueGroup) + "\": " + bad};
  const auto kind = parameters.value("kind", "");
  if (kind != kMultiKueueConfigKind)
    return {"", "wrong kind \"" + kind + "\", expecting \"" + std::string(kMultiKueueConfigKind) + "\": " + bad};
  return {name, ""};
}

AdmissionCheckReconciler::AdmissionCheckReconciler(kube::Client& manager, const ObjectReader& objects,
                                                   const ClusterRegistry& clusters, const Clock& clock, Options options)
    : manager_(manager), objects_(objects), clusters_(clusters), clock_(clock), options_(std::move(options)) {}

Result AdmissionCheckReconciler::reconcile(const std::string& admissionCheckName) {
  const auto found = objects_.get(kAdmissionCheckGvk, "", admissionCheckName);
  if (!found) return Result::done();
  const json& check = *found;
  if (!isOurCheck(check, options_.controllerName)) return Result::done();

  Condition desired;
  const auto ref = multiKueueConfigOf(check);
  std::optional<json> config;
  if (!ref.error.empty()) {
    desired = activeCondition("False", check_reason::kBadConfig, std::string(kCannotLoadParametersPrefix) + ref.error);
  } else {
    config = objects_.get(kMultiKueueConfigGvk, "", ref.name);
    if (!config)  // kube-apiserver's words for the missing object, as Kueue shows them
      desired = activeCondition(
          "False", check_reason::kBadConfig,
          std::string(kCannotLoadParametersPrefix) + "multikueueconfigs.kueue.x-k8s.io \"" + ref.name + "\" not found");
  }
  if (config) {
    const auto clusters = clustersOf(*config);
    std::set<std::string> existing;
    for (const auto& c : objects_.list(kMultiKueueClusterGvk, "")) existing.insert(nameOf(c));
    std::vector<std::string> missing, inactive;
    for (const auto& c : clusters) {
      if (!existing.contains(c)) {
        missing.push_back(c);
      } else if (!clusters_.connected(c)) {
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

  if (writeCondition(manager_, check, desired, clock_))
    log::info(*admissionCheckLogger(), "admission check status written",
              {{"admissionCheck", admissionCheckName},
               {"active", desired.status},
               {"reason", desired.reason},
               {"message", desired.message}});
  return Result::done();
}

}  // namespace mka::multikueue
