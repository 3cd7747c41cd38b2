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
  EXPECT_THAT(text, HasSubstr("status synced from worker"));
  EXPECT_THAT(text, HasSubstr("remote copies removed"));
  EXPECT_THAT(text, HasSubstr("Every job ran on exactly one worker"));
  for (const auto* job : {"default/hello-pipeline", "default/hello-world"}) EXPECT_THAT(text, HasSubstr(job));
  EXPECT_THAT(text, HasSubstr("demo --keep"));
}

}  // namespace
}  // namespace mka::demo
