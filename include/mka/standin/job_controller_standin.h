#pragma once
// A framework controller stand-in for an in-house Job-like kind (KUEUE-JOBFRAMEWORK.md §8.3):
// what such a controller does, no more. It creates no pods while the job's spec.suspend is true;
// when it turns false it starts the replicas (status.activeReplicas = spec.replicas, default 1);
// when it turns true again it deletes them (activeReplicas 0) and the run starts over on the
// next resume; a run left alone for Options::runTime on the injected clock ends with condition
// Succeeded True (or False when Options::runFails says so) and no active replicas. It never
// creates Workloads or reads Kueue's objects: queueing the job is the job integration's work.
//
// Status is written through the status subresource with the resourceVersion read (a conflict
// waits for the next pass).
//
// Threads: owns one thread that looks at the kind's jobs every Options::pollInterval; public
// methods may be called from any thread.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"

namespace mka::sandbox {
class ClusterApi;
}  // namespace mka::sandbox

namespace mka::standin {

class JobControllerStandIn {
 public:
  struct Options {
    std::string group = "ml.example.com";
    std::string version = "v1";
    std::string plural = "trainingruns";
    std::chrono::nanoseconds runTime{std::chrono::seconds{10}};
    // Whether a run fails; called with the job on the stand-in's thread. Null: every run succeeds.
    std::function<bool(const nlohmann::json& job)> runFails;
    std::chrono::milliseconds pollInterval{5};
  };

  JobControllerStandIn(sandbox::ClusterApi& api, const Clock& clock, Options options);
  ~JobControllerStandIn();
  JobControllerStandIn(const JobControllerStandIn&) = delete;
  JobControllerStandIn& operator=(const JobControllerStandIn&) = delete;

  void start();
  void stop();

  // Times the replicas of job "ns/name" were started (each resume of a suspended job counts).
  int starts(const std::string& key) const;
  // Jobs with replicas running right now.
  std::size_t running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::standin
