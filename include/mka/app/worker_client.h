#pragma once
// A client for the worker of one MultiKueueCluster, built as the dispatch loop builds it: its
// kubeconfig Secret or Path, or its ClusterProfile (multikueue/cluster_source.h, with Kueue's
// security rules), no client-side rate limit, no retries, and a timeout per request so that an
// unreachable worker costs the commands one timeout, not a hang. The `workers`, `explain` and
// `jobs` commands read workers through it alike.
//
// Threads: the caller's.

#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"

namespace mka::app {

struct WorkerClient {
  std::unique_ptr<kube::Client> client;  // null when the source did not load
  // Why there is no client: Kueue's reason and message ("BadKubeConfig: secrets \"w\" not found"),
  // or what building the connection threw.
  std::string error;
};

// The client of MultiKueueCluster `cluster` (the object as the manager holds it).
WorkerClient connectWorker(const nlohmann::json& cluster, const controller::ObjectReader& manager,
                           const config::Configuration& configuration, std::chrono::milliseconds timeout,
                           const std::string& userAgent);

// An exception as a user reads it: an API error as Kubernetes words it, else what().
std::string errorText(const std::exception& e);

}  // namespace mka::app
