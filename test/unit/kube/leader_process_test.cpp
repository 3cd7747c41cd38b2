// Leader hand-over between two processes (test/tools/leader_candidate.cpp) sharing nothing but
// the sandbox's API server.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

extern char** environ;

namespace mka::kube {
namespace {

pid_t spawnCandidate(const std::filesystem::path& kubeconfig, const std::string& identity,
                     const std::filesystem::path& out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (out.string() + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string program = MKA_LEADER_CANDIDATE, config = kubeconfig.string(), lease = "hand-over";
  char* argv[] = {program.data(), config.data(), const_cast<char*>(identity.c_str()), lease.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << program;
  return pid;
}

bool printed(const std::filesystem::path& out, const std::string& line) {
  return test::readFile(out).find(line + "\n") != std::string::npos;
}

int stopAndWait(pid_t pid) {
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LeaderProcessTest, HandOverBetweenTwoProcessesWithinOneLeaseDuration) {
  sandbox::Sandbox sandbox;
  auto& cluster = sandbox.addCluster({.name = "manager"});
  test::TempDir dir;
  const auto kubeconfig = dir.write("manager.kubeconfig", cluster.kubeconfig());

  const auto outA = dir / "a.out", outB = dir / "b.out";
  pid_t a = spawnCandidate(kubeconfig, "a", outA);
  ASSERT_TRUE(test::eventually([&] { return printed(outA, "leading a"); }, std::chrono::seconds{30}))
      << test::readFile(outA) << test::readFile(outA.string() + ".err");
  pid_t b = spawnCandidate(kubeconfig, "b", outB);
  ASSERT_TRUE(test::eventually([&] { return printed(outB, "observed a"); }, std::chrono::seconds{30}))
      << test::readFile(outB) << test::readFile(outB.string() + ".err");
  EXPECT_FALSE(printed(outB, "leading b"));

  EXPECT_EQ(stopAndWait(a), 0);  // releases the lease on SIGTERM
  EXPECT_TRUE(printed(outA, "stopped"));
  // The lease lasts 10 s: a takeover within half of it can only come from the release, not
  // from waiting for the lease to expire.
  EXPECT_TRUE(test::eventually([&] { return printed(outB, "leading b"); }, std::chrono::seconds{5}))
      << "b did not take over after a's release: " << test::readFile(outB);
  EXPECT_EQ(stopAndWait(b), 0);
}

}  // namespace
}  // namespace mka::kube
