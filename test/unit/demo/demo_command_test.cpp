#include "mka/demo/demo_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "support/temp_dir.h"

namespace mka::demo {
namespace {

using ::testing::HasSubstr;

// The samples and CRDs of this checkout, jobs that run half a second, files in `dir`.
DemoOptions fromTheCheckout(const test::TempDir& dir) {
  DemoOptions options;
  options.dir = dir.path();
  options.runTime = std::chrono::milliseconds{500};
  options.samples = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
  options.crds = std::string(MKA_FIXTURES_DIR) + "/crds";
  return options;
}

// The README's first command, in-process: every sample job goes through the whole flow.
TEST(DemoCommandTest, EverySampleJobRunsOnOneWorkerAndIsCleanedUp) {
  test::TempDir dir;
  DemoOptions options = fromTheCheckout(dir);
  std::ostringstream out;
  ASSERT_EQ(demoCommand(options, out), 0) << out.str();
  const auto text = out.str();
  EXPECT_THAT(text, HasSubstr("webhook set spec.managedBy=kueue.x-k8s.io/multikueue"));
  // The sandbox evaluates them on every update: a running job's status writes pass them by.
  EXPECT_THAT(text, HasSubstr("/validate called on creates and on updates that change what it checks"));
  EXPECT_THAT(text, HasSubstr("webhook set label workflows.argoproj.io/controller-instanceid=multikueue"));
  EXPECT_THAT(text, HasSubstr("Workload copies sent to worker1, worker2"));
  // Who did what, with the components we do not ship named as stand-ins.
  EXPECT_THAT(text, HasSubstr("and suspended it until its Workload is admitted"));
  EXPECT_THAT(text, HasSubstr("multikueue-adapter's job integration on the manager created Workload "));
  EXPECT_THAT(text, HasSubstr("Kueue (stand-in) reserved quota"));
  EXPECT_THAT(text, HasSubstr("copy once its Workload was admitted there; the Argo controller (stand-in) runs it"));
  EXPECT_THAT(text, HasSubstr("copy once its Workload was admitted there; the Tekton controller (stand-in) runs it"));
  EXPECT_THAT(text, HasSubstr("Played by stand-ins, not shipped: Kueue's core"));
  EXPECT_THAT(text, HasSubstr("status synced from worker"));
  EXPECT_THAT(text, HasSubstr("remote copies removed"));
  EXPECT_THAT(text, HasSubstr("Every job ran on exactly one worker"));
  for (const auto* job : {"default/hello-pipeline", "default/hello-world"}) EXPECT_THAT(text, HasSubstr(job));
  EXPECT_THAT(text, HasSubstr("demo --keep"));
}

// `demo --workers 3 --dispatcher quota-aware`: worker1 holds no PipelineRun, so none runs there,
// and every job gets one copy.
TEST(DemoCommandTest, QuotaAwareDispatchPlacesJobsByRoomWithOneCopyEach) {
  test::TempDir dir;
  DemoOptions options = fromTheCheckout(dir);
  options.workers = {"worker1", "worker2", "worker3"};
  options.dispatcher = "quota-aware";
  std::ostringstream out;
  ASSERT_EQ(demoCommand(options, out), 0) << out.str();
  const auto text = out.str();
  EXPECT_THAT(text, HasSubstr("holds a different number of PipelineRuns at once (worker1 0, worker2 1, worker3 2)"));
  EXPECT_THAT(text, HasSubstr("Remote Workload copies created: 4 for 4 jobs (1.00 per job, dispatcher quota-aware)"));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("PipelineRun default/") == std::string::npos && !line.starts_with("default/hello-pipeline") &&
        !line.starts_with("default/build-and-test"))
      continue;
    EXPECT_EQ(line.find("worker1"), std::string::npos) << "no room for a PipelineRun on worker1: " << line;
  }
}

// `demo --single-cluster`: Kueue queueing for an Argo Workflow and an in-house TrainingRun on
// one cluster, the adapter with dispatch off.
TEST(DemoCommandTest, SingleClusterQueuesAWorkflowAndAnInHouseJobThroughKueue) {
  test::TempDir dir;
  DemoOptions options = fromTheCheckout(dir);
  options.singleCluster = true;
  std::ostringstream out;
  ASSERT_EQ(demoCommand(options, out), 0) << out.str();
  const auto text = out.str();
  EXPECT_THAT(text, HasSubstr("(dispatch off, job integration on for Workflow and TrainingRun)"));
  EXPECT_THAT(text, HasSubstr("Played by stand-ins, not shipped: Kueue's core"));
  for (const auto* kind : {"TrainingRun default/resnet", "Workflow default/etl"}) {
    SCOPED_TRACE(kind);
    const std::string job(kind);
    EXPECT_THAT(text, HasSubstr(job + " submitted from"));
    EXPECT_THAT(text, HasSubstr(job + ": multikueue-adapter's job integration created Workload "));
    EXPECT_THAT(text, HasSubstr(job + ": Kueue (stand-in) admitted it in ClusterQueue cluster-queue on flavor "
                                      "batch-pool"));
    EXPECT_THAT(text, HasSubstr(job + ": ended: Succeeded"));
    EXPECT_THAT(text, HasSubstr(job + ": multikueue-adapter marked its Workload Finished (Succeeded"));
  }
  EXPECT_THAT(text, HasSubstr("webhook suspended it until its Workload is admitted"));
  EXPECT_THAT(text, HasSubstr("resumed it with nodeSelector example.com/pool=batch (the flavor's node labels); the "
                              "TrainingRun operator (stand-in) runs it"));
  EXPECT_THAT(text, HasSubstr("Every job waited suspended for Kueue, ran once after admission"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("times!)"))) << "each job started once";
  EXPECT_THAT(text, HasSubstr("demo --single-cluster --keep"));
}

// `demo --ocm`: an OCM Placement chooses the workers through the built-in placement
// controller; a relabelled worker moves the next jobs.
TEST(DemoCommandTest, OcmPlacementChoosesTheWorkersAndARelabelMovesNewJobs) {
  test::TempDir dir;
  DemoOptions options = fromTheCheckout(dir);
  options.ocm = true;
  options.workers = {"worker1", "worker2", "worker3"};
  std::ostringstream out;
  ASSERT_EQ(demoCommand(options, out), 0) << out.str();
  const auto text = out.str();
  EXPECT_THAT(text, HasSubstr("Played by a stand-in, not shipped: OCM's placement scheduler"));
  EXPECT_THAT(text, HasSubstr("Played by the demo, not shipped: the kubeconfig Secrets multikueue-<cluster>"));
  EXPECT_THAT(text, HasSubstr("OCM's scheduler (stand-in) decided worker2, worker3 for Placement kueue-system/gpu"));
  EXPECT_THAT(text, HasSubstr("multikueue-adapter's placement controller wrote MultiKueueConfig gpu: gpu-worker2, "
                              "gpu-worker3"));
  EXPECT_THAT(text, HasSubstr("AdmissionCheck gpu: Active, MultiKueueConfig gpu and MultiKueueClusters are generated "
                              "successfully"));
  EXPECT_THAT(text, HasSubstr("multikueue-adapter's placement controller set its check gpu Ready"));
  EXPECT_THAT(text, HasSubstr("worker1 labelled accelerator=nvidia-tesla-t4, the label removed from worker3"));
  EXPECT_THAT(text, HasSubstr("OCM's scheduler (stand-in) decided worker1, worker2 for Placement kueue-system/gpu"));
  EXPECT_THAT(text, HasSubstr("MultiKueueConfig gpu: gpu-worker1, gpu-worker2"));
  for (const auto* job : {"gpu-job-1", "gpu-job-2", "gpu-job-3", "gpu-job-4"})
    EXPECT_THAT(text, HasSubstr(std::string("PipelineRun default/") + job + ": remote copies removed"));
  EXPECT_THAT(text, HasSubstr("gpu-job-1: Workload copies sent to worker2, worker3 (first to admit wins)"));
  EXPECT_THAT(text, HasSubstr("gpu-job-3: Workload copies sent to worker1, worker2 (first to admit wins)"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("sent to worker1, worker2, worker3"))) << "only decided workers";
  EXPECT_THAT(text, HasSubstr("Every job ran on exactly one worker the Placement decided when it was submitted"));
  EXPECT_THAT(text, HasSubstr("demo --ocm --keep"));
}

}  // namespace
}  // namespace mka::demo
