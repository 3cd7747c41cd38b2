#pragma once
// Runs groups of controllers only while this replica leads, as controller-runtime's manager runs
// its leader-election runnables (SPEC §5: every replica serves webhooks, only the leader
// reconciles). With leader election a replica starts its groups when it starts leading and stops
// them when it stops; without, it leads at once. A group that cannot start (its caches did not
// sync: a CRD or RBAC missing) is retried every `retryInterval` while leading, so fixing the
// cluster needs no restart. restartIf() stops and starts every group when the owner's
// configuration changed in a way they depend on.
//
// A group is a function that builds and starts it (usually a controller::Manager's owner) and
// returns what stops it: the runner knows nothing of what a group runs.
//
// Threads: owns one thread ("leader") that starts and stops the groups in answer to messages
// posted by the elector's thread (leadership gained or lost), restartIf()'s caller and stop().
// Starting a group waits for caches, so it never runs on the elector's thread (that would delay
// lease renewals), and neither stop() nor a lost leadership waits for it: each requests stop on
// the token the start was given (one per leadership term), which ends the wait. Every Options
// function runs on the "leader" thread; leading() and running() from any thread.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "mka/kube/client.h"
#include "mka/kube/leader_election.h"

namespace mka::controller {

class LeaderRunner {
 public:
  // What stops a started group (empty when the group has nothing to stop).
  using Stop = std::function<void()>;
  struct Group {
    std::string name;  // in logs and in running()
    // Builds and starts the group. Returns its stop function, or nullopt when the group has
    // nothing to run (its feature is off): then it is not retried. Throws when it cannot start;
    // the error is logged and the start retried. Once stop is requested on `stopping` (the
    // runner stops, or the replica lost the leadership), a start still waiting (for caches)
    // gives up: it throws, or returns what stops what it started.
    std::function<std::optional<Stop>(std::stop_token stopping)> start;
  };
  struct Options {
    std::vector<Group> groups;  // started in this order, stopped in the reverse
    // Nullopt: no election, the replica leads from start() to stop(). The callbacks in it are
    // the runner's own.
    std::optional<kube::LeaderElectionConfig> election;
    std::chrono::milliseconds retryInterval{std::chrono::seconds{30}};
    // Before the first group starts, with none running: the owner prepares what the groups
    // share (a configuration snapshot, an informer pool).
    std::function<void()> beforeStart;
    // After the last group stopped: the owner releases what the groups shared.
    std::function<void()> afterStop;
    // Leadership gained (true) or lost (false); not called without election.
    std::function<void(bool leading)> onLeading;
  };

  // `client` (for the Lease) must outlive the runner.
  LeaderRunner(kube::Client& client, Options options);
  ~LeaderRunner();  // stop()
  LeaderRunner(const LeaderRunner&) = delete;
  LeaderRunner& operator=(const LeaderRunner&) = delete;

  // Starts the thread and the election (or leads at once). Throws mka::Error when the election
  // settings break client-go's rules. Idempotent.
  void start();
  // Stops every group, releases the lease, joins. Final. Idempotent.
  void stop();
  // While groups run, asks `changed` (on the runner's thread) and, when it says so, stops every
  // group and starts them again.
  void restartIf(std::function<bool()> changed);

  bool leading() const;
  // Whether the group of that name is started.
  bool running(const std::string& group) const;

 private:
  struct Message {
    enum class Type { Lead, Follow, Restart, Stop } type;
    std::function<bool()> changed;  // Restart only
  };
  void post(Message message);
  void loseLeadership();
  void run();
  void startGroups();
  void stopGroups();
  bool anyWanted() const;  // a group that should run is not running

  kube::Client& client_;
  Options options_;
  std::unique_ptr<kube::LeaderElector> elector_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Message> messages_;
  bool leading_ = false;
  std::set<std::string> running_;
  bool stopped_ = false;
  std::stop_source stopping_;  // requested by stop()
  // The current leadership term, requested by stop() and when the leadership is lost: a group's
  // start in progress gives up. A Lead after a lost term starts a new one.
  std::stop_source term_;

  // Owned by the "leader" thread.
  std::vector<std::optional<Stop>> stops_;  // per group: nullopt not started (or failed)
  std::vector<bool> idle_;                  // per group: started and had nothing to run
  bool prepared_ = false;                   // beforeStart ran, afterStop not yet
  std::thread thread_;
};

}  // namespace mka::controller
