#pragma once
// The Workloads and ResourceFlavors the /mutate-children webhook reads to give a started job's
// children their admission's node selector and tolerations (child_mutator.h). Answers from
// memory: the webhook's threads must never wait on the API server. Fed by
// AdmittedWorkloadInformers (admitted_workload_informers.h) or, in tests, by hand.

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mka::webhook {

// Threads: read concurrently by the webhook server's threads; implementations say who writes.
class AdmittedWorkloads {
 public:
  virtual ~AdmittedWorkloads() = default;
  // The Workload `ns`/`name` as the cache holds it, nullopt when it holds none by that name.
  virtual std::optional<nlohmann::json> workload(std::string_view ns, std::string_view name) const = 0;
  // The ResourceFlavor `name`, nullopt when the cache holds none by that name.
  virtual std::optional<nlohmann::json> flavor(std::string_view name) const = 0;
  // true once the cache reflects the cluster; /readyz waits for it.
  virtual bool hasSynced() const = 0;
};

}  // namespace mka::webhook
