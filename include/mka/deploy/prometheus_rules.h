#pragma once
// `multikueue-adapter manifests --prometheus-rules`: a PrometheusRule (Prometheus Operator) with
// the alerts an operator of the adapter needs, over the series the adapter exports (README.md,
// "Command line": metrics). Each alert carries a summary, a description and a runbook that starts
// from the product's own commands. What the configuration leaves out is left out: no leader
// alert without leader election, no dispatch alerts without the dispatch loop.
//
// Threads: pure functions.

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <string_view>

#include "mka/config/configuration.h"
#include "mka/deploy/manifests.h"

namespace mka::deploy {

inline constexpr std::string_view kPrometheusRuleApiVersion = "monitoring.coreos.com/v1";
inline constexpr std::string_view kPrometheusRuleGroup = "multikueue-adapter";

struct PrometheusRuleOptions {
  // How long a running Workload may stay in its admission check's Pending or Retry state before
  // MultiKueueAdapterWorkloadsStuck fires (`--stuck-after`).
  std::chrono::seconds stuckAfter = std::chrono::minutes{30};
};

// The PrometheusRule in the adapter's namespace, labelled as the other objects.
Manifest renderPrometheusRule(const config::Configuration& configuration, const PrometheusRuleOptions& options = {});

// The `manifests --prometheus-rules` subcommand: reads and validates `configFile` as `manifests`
// does and writes the PrometheusRule to `out`. Returns 0, or 1 with the reasons on `err`.
int prometheusRulesCommand(const std::filesystem::path& configFile, const PrometheusRuleOptions& options,
                           std::ostream& out, std::ostream& err);

}  // namespace mka::deploy
