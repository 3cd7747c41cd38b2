#pragma once
// An exec credential plugin as client-go configures one (clientcmd's ExecConfig, a kubeconfig's
// users[].user.exec): the program that prints an ExecCredential with a token or a client
// certificate. Kueue's multiKueue.clusterProfile.accessProviders[].execConfig has this shape.
//
// Threads: plain values.

#include <string>
#include <vector>

namespace mka::api {

struct ExecEnvVar {
  std::string name;
  std::string value;
  bool operator==(const ExecEnvVar&) const = default;
};

struct ExecConfig {
  std::string command;
  std::vector<std::string> args;
  std::vector<ExecEnvVar> env;  // added to the adapter's own environment
  std::string apiVersion;       // client.authentication.k8s.io/v1 or v1beta1
  std::string installHint;      // shown when the command is not found
  // Whether the plugin gets the cluster (server, CA, config) in KUBERNETES_EXEC_INFO.
  bool provideClusterInfo = false;
  std::string interactiveMode;  // Never, IfAvailable or Always; the adapter never has a terminal
  bool operator==(const ExecConfig&) const = default;
};

}  // namespace mka::api
