#include "mka/config/kueue_builtin_kinds.h"

#include <algorithm>

namespace mka::config {

const std::vector<std::string_view>& kueueMultiKueueFrameworks() {
  static const std::vector<std::string_view> names = {
      "batch/job",
      "jobset.x-k8s.io/jobset",
      "kubeflow.org/jaxjob",
      "kubeflow.org/mpijob",
      "kubeflow.org/paddlejob",
      "kubeflow.org/pytorchjob",
      "kubeflow.org/tfjob",
      "kubeflow.org/xgboostjob",
      "leaderworkerset.x-k8s.io/leaderworkerset",
      "pod",
      "ray.io/raycluster",
      "ray.io/rayjob",
      "ray.io/rayservice",
      "statefulset",
      "trainer.kubeflow.org/trainjob",
      "workload.codeflare.dev/appwrapper",
  };
  return names;
}

std::vector<std::string> multiKueueDispatchedFrameworks(const std::vector<std::string>& kueueFrameworks) {
  const std::vector<std::string> listed =
      kueueFrameworks.empty() ? std::vector<std::string>{std::string(kKueueDefaultFramework)} : kueueFrameworks;
  const auto& dispatched = kueueMultiKueueFrameworks();
  std::vector<std::string> out;
  for (const auto& name : listed)
    if (std::find(dispatched.begin(), dispatched.end(), name) != dispatched.end() &&
        std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(name);
  return out;
}

bool isDropIn(const Configuration& configuration) {
  return configuration.dispatch.enabled &&
         configuration.dispatch.admissionCheckControllerName == api::kMultiKueueControllerName;
}

}  // namespace mka::config
