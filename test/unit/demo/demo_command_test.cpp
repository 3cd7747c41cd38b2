#include "mka/demo/demo_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "support/temp_dir.h"

namespace mka::demo {
namespace {

using ::testing::HasSubstr;

// The README's first command, in-process: every sample job goes through the whole flow.
TEST(DemoCommandTest, EverySampleJobRunsOnOneWorkerAndIsCleanedUp) {
  test::TempDir dir;
  DemoOptions options;
  options.dir = dir.path();
  options.runTime = std::chrono::milliseconds{500};
  options.samples = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
  options.crds = std::string(MKA_FIXTURES_DIR) + "/crds";
  std::ostringstream out;
  ASSERT_EQ(demoCommand(options, out), 0) << out.str();
  const auto text = out.str();
  EXPECT_THAT(text, HasSubstr("webhook set spec.managedBy=kueue.x-k8s.io/multikueue"));
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

}  // namespace
}  // namespace mka::demo
