// controller::LeaderRunner: groups run only while the replica leads, a group that cannot start is
// retried, a restart when the owner says its settings changed, and a hand-over between two
// runners on one Lease of a sandbox cluster.
#include "mka/controller/leader_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "mka/common/errors.h"
#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"

namespace mka::controller {
namespace {

using namespace std::chrono_literals;

// What the groups did, in order, from the runner's thread.
class Steps {
 public:
  void add(const std::string& step) {
    std::lock_guard lock(mutex_);
    steps_.push_back(step);
  }
  std::vector<std::string> all() const {
    std::lock_guard lock(mutex_);
    return steps_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> steps_;
};

LeaderRunner::Group recorded(Steps& steps, const std::string& name) {
  return {name, [&steps, name](std::stop_token) -> std::optional<LeaderRunner::Stop> {
            steps.add("start " + name);
            return [&steps, name] { steps.add("stop " + name); };
          }};
}

// A group whose start waits an hour (for caches of a kind whose CRD is missing) unless stop is
// requested on its token, then gives up.
LeaderRunner::Group waitingForAnHour(Steps& steps) {
  return {"waiting", [&steps](std::stop_token stopping) -> std::optional<LeaderRunner::Stop> {
            steps.add("start waiting");
            std::mutex mutex;
            std::condition_variable_any wake;
            std::unique_lock lock(mutex);
            wake.wait_for(lock, stopping, 1h, [] { return false; });
            steps.add("waiting gave up");
            throw Error("caches of kind X did not sync");
          }};
}

class LeaderRunnerTest : public ::testing::Test {
 protected:
  LeaderRunnerTest() : cluster(sandbox.addCluster({.name = "manager"})) {
    kube::ClientOptions options;
    options.qps = 0;
    options.maxRetries = 0;
    client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(cluster.kubeconfig())), options));
  }

  LeaderRunner::Options withSteps(std::vector<LeaderRunner::Group> groups) {
    LeaderRunner::Options options;
    options.groups = std::move(groups);
    options.beforeStart = [this] { steps.add("before"); };
    options.afterStop = [this] { steps.add("after"); };
    return options;
  }
  static kube::LeaderElectionConfig lease(const std::string& identity) {
    kube::LeaderElectionConfig le;
    le.namespace_ = "default";
    le.name = "runner";
    le.identity = identity;
    le.leaseDuration = 3s;
    le.renewDeadline = 2s;
    le.retryPeriod = 100ms;
    return le;
  }

  sandbox::Sandbox sandbox;
  sandbox::Cluster& cluster;
  std::unique_ptr<kube::Client> client;
  Steps steps;
};

TEST_F(LeaderRunnerTest, WithoutElectionTheGroupsRunFromStartToStopInOrder) {
  LeaderRunner runner(*client, withSteps({recorded(steps, "a"), recorded(steps, "b")}));
  EXPECT_FALSE(runner.leading());
  runner.start();
  ASSERT_TRUE(test::eventually([&] { return runner.running("b"); }));
  EXPECT_TRUE(runner.leading());
  EXPECT_TRUE(runner.running("a"));
  runner.stop();
  EXPECT_FALSE(runner.leading());
  EXPECT_FALSE(runner.running("a"));
  EXPECT_EQ(steps.all(), (std::vector<std::string>{"before", "start a", "start b", "stop b", "stop a", "after"}));
  runner.stop();  // idempotent
  EXPECT_EQ(steps.all().size(), 6u);
}

TEST_F(LeaderRunnerTest, AGroupThatCannotStartIsRetriedWhileTheOthersRun) {
  std::atomic<int> attempts{0};
  LeaderRunner::Group flaky{"flaky", [&](std::stop_token) -> std::optional<LeaderRunner::Stop> {
                              if (++attempts < 3) throw Error("caches of kind X did not sync");
                              steps.add("start flaky");
                              return [this] { steps.add("stop flaky"); };
                            }};
  auto options = withSteps({flaky, recorded(steps, "b")});
  options.retryInterval = 10ms;
  LeaderRunner runner(*client, options);
  runner.start();
  ASSERT_TRUE(test::eventually([&] { return runner.running("flaky"); }));
  EXPECT_EQ(attempts.load(), 3);
  runner.stop();
  EXPECT_EQ(steps.all(),
            (std::vector<std::string>{"before", "start b", "start flaky", "stop b", "stop flaky", "after"}))
      << "b, started before flaky could, still stops first: the reverse of the groups' order";
}

// A group whose start waits (for caches of a kind whose CRD is missing) does not hold stop():
// the start gives up when stop is requested on its token, and the groups after it never start.
// The wait is an hour long: only the stop ends it within the test's time.
TEST_F(LeaderRunnerTest, StopGivesUpAGroupStartThatWaits) {
  const auto waiting = waitingForAnHour(steps);
  LeaderRunner runner(*client, withSteps({recorded(steps, "a"), waiting, recorded(steps, "b")}));
  runner.start();
  ASSERT_TRUE(test::eventually([&] { return steps.all().size() == 3u; }));
  runner.stop();
  EXPECT_EQ(steps.all(),
            (std::vector<std::string>{"before", "start a", "start waiting", "waiting gave up", "stop a", "after"}));
  EXPECT_FALSE(runner.running("b"));
}

// The leadership lost while a group's start waits for its caches: the start gives up then, not
// when the caches sync (an hour here), so the groups never run once another replica may lead.
TEST_F(LeaderRunnerTest, LosingTheLeadershipGivesUpAGroupStartThatWaits) {
  const auto waiting = waitingForAnHour(steps);
  auto options = withSteps({recorded(steps, "a"), waiting, recorded(steps, "b")});
  options.election = lease("first");
  std::atomic<int> lost{0};
  options.onLeading = [&](bool leading) {
    if (!leading) ++lost;
  };
  LeaderRunner runner(*client, options);
  runner.start();
  ASSERT_TRUE(test::eventually([&] { return steps.all().size() == 3u; }));

  // Another replica holds the Lease for an hour (as after a partition): renewals fail until the
  // renew deadline, and this replica does not lead again within the test.
  const sandbox::ResourceRef ref{"coordination.k8s.io", "v1", "leases", "default", "runner", ""};
  auto held = cluster.api().get(ref);
  held["spec"]["holderIdentity"] = "other";
  held["spec"]["leaseDurationSeconds"] = 3600;
  cluster.api().update(ref, held);
  ASSERT_TRUE(test::eventually([&] { return lost.load() == 1 && steps.all().size() == 6u; }));
  EXPECT_EQ(steps.all(),
            (std::vector<std::string>{"before", "start a", "start waiting", "waiting gave up", "stop a", "after"}));
  EXPECT_FALSE(runner.leading());
  EXPECT_FALSE(runner.running("a"));
  EXPECT_FALSE(runner.running("b"));
  runner.stop();
  EXPECT_EQ(steps.all().size(), 6u);
}

TEST_F(LeaderRunnerTest, AGroupWithNothingToRunIsNotRetried) {
  std::atomic<int> attempts{0};
  LeaderRunner::Group off{"off", [&](std::stop_token) -> std::optional<LeaderRunner::Stop> {
                            ++attempts;
                            return std::nullopt;
                          }};
  auto options = withSteps({off, recorded(steps, "b")});
  options.retryInterval = 1ms;
  LeaderRunner runner(*client, options);
  runner.start();
  ASSERT_TRUE(test::eventually([&] { return runner.running("b"); }));
  // A restart whose condition is asked proves the runner's thread went round its loop since.
  std::atomic<bool> asked{false};
  runner.restartIf([&] { return !(asked = true); });
  ASSERT_TRUE(test::eventually([&] { return asked.load(); }));
  EXPECT_FALSE(runner.running("off"));
  EXPECT_EQ(attempts.load(), 1);
}

TEST_F(LeaderRunnerTest, RestartIfStopsAndStartsEveryGroupOnlyWhenTheOwnerSaysSo) {
  LeaderRunner runner(*client, withSteps({recorded(steps, "a"), recorded(steps, "b")}));
  runner.start();
  ASSERT_TRUE(test::eventually([&] { return runner.running("b"); }));
  std::atomic<bool> asked{false};
  runner.restartIf([&] { return !(asked = true); });
  ASSERT_TRUE(test::eventually([&] { return asked.load(); }));
  EXPECT_EQ(steps.all().size(), 3u) << "unchanged: nothing restarted";

  runner.restartIf([] { return true; });
  ASSERT_TRUE(test::eventually([&] { return steps.all().size() == 9u; }));
  EXPECT_EQ(steps.all(), (std::vector<std::string>{"before", "start a", "start b", "stop b", "stop a", "after",
                                                   "before", "start a", "start b"}));
}

TEST_F(LeaderRunnerTest, OnlyTheLeaderRunsItsGroupsAndTheOtherTakesOverWhenItStops) {
  Steps second;
  std::vector<bool> firstRoles;
  std::mutex rolesMutex;
  auto firstOptions = withSteps({recorded(steps, "a")});
  firstOptions.election = lease("first");
  firstOptions.onLeading = [&](bool leading) {
    std::lock_guard lock(rolesMutex);
    firstRoles.push_back(leading);
  };
  auto first = std::make_unique<LeaderRunner>(*client, firstOptions);
  first->start();
  ASSERT_TRUE(test::eventually([&] { return first->running("a"); }));

  LeaderRunner::Options secondOptions;
  secondOptions.groups = {recorded(second, "a")};
  secondOptions.election = lease("second");
  LeaderRunner other(*client, secondOptions);
  other.start();
  // The second candidate sees the Lease held (at least one retry period) and does not lead.
  ASSERT_TRUE(test::eventually([&] {
    return cluster.api()
               .get({"coordination.k8s.io", "v1", "leases", "default", "runner", ""})
               .value("spec", nlohmann::json::object())
               .value("holderIdentity", "") == "first";
  }));
  EXPECT_FALSE(other.leading());
  EXPECT_TRUE(second.all().empty());

  first->stop();  // releases the Lease
  ASSERT_TRUE(test::eventually([&] { return other.running("a"); }));
  EXPECT_EQ(steps.all(), (std::vector<std::string>{"before", "start a", "stop a", "after"}));
  {
    std::lock_guard lock(rolesMutex);
    EXPECT_EQ(firstRoles, (std::vector<bool>{true, false}));
  }
  other.stop();
  EXPECT_EQ(second.all(), (std::vector<std::string>{"start a", "stop a"}));
}

TEST_F(LeaderRunnerTest, BadElectionDurationsAreRefusedAtStart) {
  auto options = withSteps({recorded(steps, "a")});
  options.election = lease("first");
  options.election->renewDeadline = options.election->leaseDuration;
  LeaderRunner runner(*client, options);
  EXPECT_THROW(runner.start(), Error);
  EXPECT_FALSE(runner.leading());
  EXPECT_TRUE(steps.all().empty());
}

}  // namespace
}  // namespace mka::controller
