#pragma once
// The two document kinds the loader accepts, read into a Configuration. Reading checks keys and
// types only; rules about values live in validateConfiguration (loader.h). Internal to the
// config module.

#include "mka/config/configuration.h"
#include "yaml_reader.h"

namespace mka::config::detail {

// apiVersion config.multikueue-adapter.dev/v1alpha1, kind AdapterConfiguration: every key known.
void readAdapterConfiguration(YamlReader& reader, const yaml::Node& root, Configuration& out);
// Kueue's config.kueue.x-k8s.io Configuration: namespace, clientConnection, multiKueue and the
// Workload entry of controller.groupKindConcurrency read, the rest of Kueue's keys ignored.
void readKueueConfiguration(YamlReader& reader, const yaml::Node& root, Configuration& out);
// The multiKueue section, shared by both kinds (Kueue's has a few more keys, ignored).
void readMultiKueue(MapReader section, UnknownKeys policy, MultiKueue& out);
// The integrations section (AdapterConfiguration only): each framework on top of its built-in
// profile, if any; each carries `waitForPodsReady` (the top-level waitForPodsReady.enable).
void readIntegrations(MapReader section, const std::string& adapterNamespace, bool waitForPodsReady, Integrations& out);

}  // namespace mka::config::detail
