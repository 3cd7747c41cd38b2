#pragma once
// What the read-only commands (`workers`, `explain`, `jobs`) set up alike: the adapter's
// configuration from --config (the defaults without it) and a client of the manager found as
// kubectl finds its cluster (--kubeconfig, else $KUBECONFIG, ~/.kube/config, in-cluster;
// --context, else the current context).
//
// Threads: the caller's.

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mka/common/clock.h"
#include "mka/config/configuration.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"

namespace mka::app {

struct ManagerAccess {
  std::string kubeconfig;  // "" = $KUBECONFIG, ~/.kube/config, in-cluster
  std::string context;     // "" = the current context
};

// The configuration in `file` ("" = the defaults); nullopt after saying on `err` why not.
std::optional<config::Configuration> loadCommandConfiguration(const std::filesystem::path& file, std::ostream& err);

// The manager's connection settings; throws mka::Error naming the kubeconfig or context.
kube::RestConfig managerRestConfig(const ManagerAccess& access);

// A client of the manager with `userAgent`.
std::unique_ptr<kube::Client> managerClient(const kube::RestConfig& config, const std::string& userAgent);

// Both: the settings (the context's namespace) and a client; throws as managerRestConfig.
struct ManagerConnection {
  kube::RestConfig rest;
  std::unique_ptr<kube::Client> client;
};
ManagerConnection connectManager(const ManagerAccess& access, const std::string& userAgent);

// The clock a command reads ages by: `given` (a test's), else the system clock.
const Clock& commandClock(const Clock* given);

// Rows as kubectl prints a table: columns padded to their widest cell and three spaces apart,
// no trailing blanks. The first row is the header.
void printColumns(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

}  // namespace mka::app
