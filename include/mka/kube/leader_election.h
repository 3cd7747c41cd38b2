#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package
// does it: try to acquire or renew every `retryPeriod`; a lease held by someone else counts as
// expired only after `leaseDuration` has passed on *our* clock since we last saw it change
// (never by comparing the holder's renewTime with our clock, so clock skew cannot steal a
// lease); a leader that cannot renew within `renewDeadline` stops leading and stands again as
// a candidate; on stop() the leader releases the lease (empty holder) so a successor takes over
// at once. The elector talks to the API server on a connection of its own (made from the
// client's configuration and user agent), so that nothing else the process does delays a renewal.
//
// Threads: owns one thread, which also runs the callbacks; isLeader()/leader() from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "mka/kube/client.h"

namespace mka::kube {

struct LeaderElectionConfig {
  std::string namespace_;
  std::string name;
  std::string identity;  // unique per process: defaultLeaderIdentity()
  // client-go's defaults (and controller-runtime's).
  std::chrono::milliseconds leaseDuration{std::chrono::seconds{15}};
  std::chrono::milliseconds renewDeadline{std::chrono::seconds{10}};
  std::chrono::milliseconds retryPeriod{std::chrono::seconds{2}};
  bool releaseOnCancel = true;
  std::function<void()> onStartedLeading;
  std::function<void()> onStoppedLeading;
  std::function<void(const std::string& identity)> onNewLeader;
};

class LeaderElector {
 public:
  // Throws mka::Error when the durations break client-go's rules (leaseDuration >
  // renewDeadline > retryPeriod * 1.2) or a name is missing.
  LeaderElector(Client& client, LeaderElectionConfig config);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void start();
  void stop();  // releases the lease when leading (releaseOnCancel) and joins

  bool isLeader() const { return leading_.load(); }
  std::string leader() const;  // the holder last observed ("" when unknown)

 private:
  void run();
  bool tryAcquireOrRenew(Client& client);
  // The elector connection's options with each request bounded by `timeout`.
  ClientOptions renewalOptions(std::chrono::milliseconds timeout);
  void release();
  bool waitFor(std::chrono::milliseconds delay);  // false when stopping
  std::string leaseKey() const { return config_.namespace_ + "/" + config_.name; }

  Client client_;
  LeaderElectionConfig config_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> leading_{false};
  std::string observedHolder_;
  nlohmann::json observedSpec_;
  std::chrono::steady_clock::time_point observedAt_{};
  std::thread thread_;
};

// A process identity as client-go's examples build it, "<name>_<random>", where the name is the
// pod's (POD_NAME, which the Deployment sets from metadata.name) else the hostname: with
// hostNetwork the hostname is the node's, and the pod name is what an operator looks for in the
// Lease and the audit log.
std::string defaultLeaderIdentity();

}  // namespace mka::kube
