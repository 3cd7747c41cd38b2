// `explain` and `jobs` against the dispatch loop as deployed (issue 46): the Dispatcher and the
// integration on the manager, our integration on each worker, the Kueue and framework
// stand-ins. A job goes through every state while the commands read the clusters through the
// kubeconfig the manager holds; each sentence is asserted whole, durations on the fake clock.

#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/app/explain_command.h"
#include "mka/app/jobs_command.h"
#include "support/temp_dir.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;
using namespace std::chrono_literals;

// The deployment modes with a dispatch loop (README "Deployment modes"): ours as the check's
// controller, or drop-in as Kueue's own MultiKueue controller.
enum class ExplainMode { Dispatcher, DropIn };

class ExplainE2E : public ::testing::TestWithParam<std::tuple<JobKind, ExplainMode>>, public DispatchFixture {
 protected:
  void TearDown() override { tearDownEnvironment(); }
  const JobKind& kind() const { return std::get<0>(GetParam()); }

  void setUpMode(DispatchFixture::Setup setup) {
    const bool dropIn = std::get<1>(GetParam()) == ExplainMode::DropIn;
    if (dropIn)
      setup.configure = [](config::Configuration& c) {
        c.dispatch.admissionCheckControllerName = std::string(api::kMultiKueueControllerName);
      };
    setUpEnvironment(std::move(setup));
    if (!dropIn) return;
    // A drop-in install's AdmissionCheck names Kueue's controller; the field is immutable, so the
    // sample's check is replaced (as drop_in_e2e_test.cpp does).
    auto check = *get("manager", api::kAdmissionCheckGvk, checkName_, "");
    env_->client("manager").remove(api::kAdmissionCheckGvk, "", checkName_);
    ASSERT_TRUE(eventually([&] { return !get("manager", api::kAdmissionCheckGvk, checkName_, ""); }));
    check["metadata"] = {{"name", checkName_}};
    check.erase("status");
    check["spec"]["controllerName"] = std::string(api::kMultiKueueControllerName);
    env_->create("manager", check);
  }

  // What the commands read: the manager's kubeconfig, and the configuration the adapter runs.
  void writeAccess() {
    kubeconfig_ = dir_.write("manager.kubeconfig", env_->cluster("manager").kubeconfig());
    config_file_ = dir_.write("config.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
multiKueue:
  workerLostTimeout: 15m
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
integrations:
  frameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)");
  }

  // explain's last line for job `name` (the whole output on failure).
  std::string explain(const std::string& name) {
    app::ExplainCommandOptions options;
    options.target = kind().gvk.kind + "/" + name;
    options.manager.kubeconfig = kubeconfig_.string();
    options.namespace_ = "default";
    options.configFile = config_file_;
    options.timeout = 2s;
    options.clock = &clock_;
    std::ostringstream out, err;
    if (app::explainCommand(options, out, err) != 0) return "exit != 0: " + out.str() + err.str();
    const auto text = out.str();
    const auto end = text.find_last_not_of('\n');
    return text.substr(text.rfind('\n', end) + 1, end - text.rfind('\n', end));
  }

  // jobs -o json: the row of job `name`.
  json jobsRow(const std::string& name) {
    app::JobsCommandOptions options;
    options.manager.kubeconfig = kubeconfig_.string();
    options.namespace_ = "default";
    options.configFile = config_file_;
    options.output = "json";
    options.clock = &clock_;
    std::ostringstream out, err;
    if (app::jobsCommand(options, out, err) != 0) return {{"error", err.str()}};
    const auto all = json::parse(out.str());
    for (const auto& row : all["jobs"])
      if (row["name"] == name && row["kind"] == kind().gvk.kind) return row;
    return nullptr;
  }

  // Polls explain until it says `expected`; the last sentence read on failure.
  ::testing::AssertionResult explainSays(const std::string& name, const std::string& expected) {
    std::string last;
    if (eventually([&] { return (last = explain(name)) == expected; })) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "explain " << name << " says: " << last << "\nexpected: " << expected;
  }

  test::TempDir dir_;
  std::filesystem::path kubeconfig_, config_file_;
};

TEST_P(ExplainE2E, FollowsAJobThroughEveryStateOnTheWorkersIntegration) {
  setUpMode({.startWorkerKueues = false});
  writeAccess();
  // worker2 lacks the LocalQueue the copies are queued in.
  env_->cluster("worker2").api().remove({"kueue.x-k8s.io", "v1beta2", "localqueues", "default", "user-queue", ""});
  startAdapter();

  createJob(kind(), "unqueued", true,
            [](json& job) { job["metadata"]["labels"].erase(std::string(api::kQueueNameLabel)); });
  EXPECT_TRUE(explainSays("unqueued", "NotQueued: no kueue.x-k8s.io/queue-name label, so Kueue does not queue it"));

  createJob(kind(), "job1");
  const auto wl = awaitWorkload(kind(), "job1");
  // No worker's Kueue runs yet: the copies wait on both.
  EXPECT_TRUE(explainSays("job1",
                          "Dispatching: copies on worker1, worker2; none admitted yet (worker2: LocalQueue "
                          "default/user-queue missing)"));
  EXPECT_EQ(jobsRow("job1")["state"], "Dispatching") << jobsRow("job1");

  // worker1's Kueue admits its copy; our integration there resumes the job copy.
  env_->startKueue("worker1");
  ASSERT_TRUE(eventually([&] { return checkIs(wl, "Ready"); }));
  EXPECT_TRUE(explainSays("job1", "Running on worker1 for 0s (remote phase Running)"));
  advance(3s);
  EXPECT_TRUE(explainSays("job1", "Running on worker1 for 3s (remote phase Running)"));
  EXPECT_EQ(jobsRow("job1")["worker"], "worker1");

  // worker1 goes away: the dispatch loop records it (the MultiKueueCluster's Active condition in
  // drop-in mode, a Warning Event in dispatcher mode) and waits for it.
  env_->cluster("worker1").setUnreachable(true);
  ASSERT_TRUE(eventually([&] { return jobsRow("job1")["state"] == "Waiting"; })) << jobsRow("job1");
  advance(2min);
  EXPECT_TRUE(explainSays("job1", "Waiting for worker1: unreachable since 2m (workerLostTimeout 15m)"));
  const auto row = jobsRow("job1");
  EXPECT_EQ(row["state"], "Waiting") << row;
  EXPECT_EQ(row["sentence"], "Waiting for worker1: unreachable since 2m (workerLostTimeout 15m)") << row;

  // Back: the job ran to its end there (the framework stand-in's run time has passed).
  env_->cluster("worker1").setUnreachable(false);
  ASSERT_TRUE(awaitReconnect("worker1"));
  advance(10s);
  ASSERT_TRUE(eventually([&] { return api::isFinished(*workload("manager", wl)); }));
  EXPECT_TRUE(explainSays("job1", "Finished on worker1: Succeeded"));
  EXPECT_EQ(jobsRow("job1")["state"], "Finished");
}

INSTANTIATE_TEST_SUITE_P(KindsAndModes, ExplainE2E,
                         ::testing::Combine(::testing::Values(kPipelineRun, kWorkflow),
                                            ::testing::Values(ExplainMode::Dispatcher, ExplainMode::DropIn)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name +
                                  (std::get<1>(info.param) == ExplainMode::DropIn ? "DropIn" : "Dispatcher");
                         });

// The manager's Kueue has no room: explain names the ClusterQueue, the resource, what the job
// needs and what is free.
class ExplainE2EPending : public ExplainE2E {};

TEST_P(ExplainE2EPending, NamesTheClusterQueueAndTheResourceWithoutRoom) {
  setUpMode({});
  writeAccess();
  env_->setJobQuota("manager", 0);
  startAdapter();
  createJob(kind(), "job1");
  awaitWorkload(kind(), "job1");
  EXPECT_TRUE(explainSays(
      "job1",
      "Pending: ClusterQueue cluster-queue on the manager has no room: needs 1 tekton.dev/pipelineruns, 0 free"));
  EXPECT_EQ(jobsRow("job1")["state"], "Pending");
}

// Only a PipelineRun's Workload requests tekton.dev/pipelineruns, which setJobQuota limits.
INSTANTIATE_TEST_SUITE_P(Kinds, ExplainE2EPending,
                         ::testing::Combine(::testing::Values(kPipelineRun),
                                            ::testing::Values(ExplainMode::Dispatcher)),
                         [](const auto& info) { return std::get<0>(info.param).name; });

}  // namespace
}  // namespace mka::e2e
