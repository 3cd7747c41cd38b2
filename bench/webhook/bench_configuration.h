#pragma once
// The configuration both webhook benchmarks serve: webhook-only, PipelineRun.v1.tekton.dev as
// external framework with its built-in marker profile, the given defaulting policy.

#include "mka/api/gvk.h"
#include "mka/config/configuration.h"

namespace mka::bench {

inline config::Configuration webhookBenchConfiguration(
    config::ManagedByDefaulting policy = config::ManagedByDefaulting::QueueLabeled) {
  config::Configuration cfg;
  cfg.source = config::Configuration::Source::AdapterConfiguration;
  cfg.managedByDefaulting = policy;
  cfg.dispatch.enabled = false;
  config::ExternalFramework fw;
  fw.name = "PipelineRun.v1.tekton.dev";
  fw.gvk = *api::GroupVersionKind::parseDotted(fw.name);
  if (auto profile = config::builtinProfile(fw.gvk)) {
    fw.managedBy = *profile;
    fw.managedByFromProfile = true;
  }
  cfg.multiKueue.externalFrameworks.push_back(fw);
  return cfg;
}

}  // namespace mka::bench
