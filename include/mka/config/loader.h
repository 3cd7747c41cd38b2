#pragma once
// Parses, defaults and validates a configuration document (SPEC §3). Validation never stops at
// the first problem: every error is returned, each as "<field path>: <problem>: <how to fix>".

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "mka/common/errors.h"
#include "mka/config/configuration.h"

namespace mka::config {

struct LoadResult {
  std::optional<Configuration> config;  // set only when `errors` is empty
  FieldErrors errors;
  bool ok() const { return errors.empty(); }
};

// Accepts an AdapterConfiguration or a Kueue Configuration (v1beta1/v1beta2) YAML (or JSON)
// document. `pathPrefix` is put before every field path (e.g. "data[config.yaml]." when the
// text comes from a ConfigMap).
LoadResult parseConfiguration(std::string_view text, std::string_view pathPrefix = "");

// The value rules alone (names, ranges, durations, managedBy locations, duplicates) on an
// already-built configuration, e.g. one assembled in code. parseConfiguration runs them too.
// Paths carry no prefix.
FieldErrors validateConfiguration(const Configuration& config);
// The part of validateConfiguration that joins metricsSecure, metricsCertDir, metricsBindAddress
// and healthProbeBindAddress (for settings that flags override).
FieldErrors validateMetricsServing(const Configuration& config);

// For what is rendered without a cluster (`manifests`, `add-worker`): each configured kind whose
// resource (plural) is neither written (`resource:`) nor safely guessed from its kind, with the
// fix. The running adapter needs none of them (it asks discovery).
FieldErrors unresolvedResources(const Configuration& config);

// Reads and parses a file; an unreadable file is one error whose path is the file name.
LoadResult loadConfigurationFile(const std::filesystem::path& file);
// The same from an open stream (standard input), `name` standing for the file in errors.
LoadResult loadConfigurationStream(std::istream& in, const std::string& name);

}  // namespace mka::config
