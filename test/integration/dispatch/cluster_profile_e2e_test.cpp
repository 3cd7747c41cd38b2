// Workers reached through ClusterProfiles (issue 24 part 1), as deployed: the dispatcher reads
// the profiles in its namespace, runs the configured access provider's exec plugin (a shell
// script printing each worker's token), dispatches jobs to them, and reconnects a worker whose
// profile changes while jobs are in flight.

#include <sys/stat.h>

#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "dispatch_fixture.h"
#include "mka/common/base64.h"
#include "support/temp_dir.h"

namespace mka::e2e {
namespace {

using nlohmann::json;
using test::eventually;

const sandbox::ResourceRef kProfiles{"multicluster.x-k8s.io", "v1alpha1", "clusterprofiles", "kueue-system", "", ""};
const sandbox::ResourceRef kClusters{"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "", ""};

class ClusterProfileE2E : public ::testing::Test, public DispatchFixture {
 protected:
  void SetUp() override {
    // The plugin finds the worker in the profile's exec extension ({"worker": NAME}) and prints
    // the credential file the test wrote for it; each run is one line in <worker>.runs.
    const auto plugin = dir.write("cp-creds", R"sh(#!/bin/sh
worker=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"config":{[^}]*"worker":"\([a-z0-9-]*\)".*/\1/p')
echo run >> "$OUT/$worker.runs"
cat "$OUT/$worker.credential"
)sh");
    ::chmod(plugin.c_str(), 0755);
    config::ClusterProfileAccess access;
    api::ExecConfig exec;
    exec.command = plugin.string();
    exec.apiVersion = "client.authentication.k8s.io/v1";
    exec.interactiveMode = "Never";
    exec.provideClusterInfo = true;
    exec.env = {{"OUT", dir.path().string()}};
    access.accessProviders.push_back({"token-provider", exec});
    setUpEnvironment({.configure = [access](config::Configuration& c) { c.multiKueue.clusterProfile = access; }});
    for (const auto& worker : env_->workers()) {
      auto& cluster = env_->cluster(worker);
      test::writeFile(dir / (worker + ".credential"), json{{"apiVersion", "client.authentication.k8s.io/v1"},
                                                           {"kind", "ExecCredential"},
                                                           {"status", {{"token", cluster.token()}}}}
                                                          .dump());
      putProfile(worker, json::object());
      // The MultiKueueCluster the environment made with a kubeconfig Secret now names the profile.
      auto ref = kClusters;
      ref.name = worker;
      auto mkc = env_->cluster("manager").api().get(ref);
      mkc["spec"]["clusterSource"] = {{"clusterProfileRef", {{"name", worker}}}};
      env_->cluster("manager").api().update(ref, mkc);
    }
  }
  void TearDown() override { tearDownEnvironment(); }

  // The profile of `worker`, offering it through token-provider with `extra` exec data.
  void putProfile(const std::string& worker, const json& extra) {
    auto& cluster = env_->cluster(worker);
    json config = {{"worker", worker}};
    config.update(extra);
    auto ref = kProfiles;
    ref.name = worker;
    auto& api = env_->cluster("manager").api();
    json profile = {{"apiVersion", "multicluster.x-k8s.io/v1alpha1"},
                    {"kind", "ClusterProfile"},
                    {"metadata", {{"name", worker}, {"namespace", "kueue-system"}}},
                    {"spec", {{"clusterManager", {{"name", "test"}}}}}};
    try {
      profile = *api.create(kProfiles, profile);
    } catch (const std::exception&) {
      profile = api.get(ref);
    }
    profile["status"] = {
        {"accessProviders", json::array({{{"name", "token-provider"},
                                          {"cluster",
                                           {{"server", cluster.server()},
                                            {"certificate-authority-data", base64Encode(cluster.caPem())},
                                            {"extensions", json::array({{{"name", "client.authentication.k8s.io/exec"},
                                                                         {"extension", config}}})}}}}})}};
    ref.subresource = "status";
    api.update(ref, profile);
  }
  int runs(const std::string& worker) {
    const auto file = dir / (worker + ".runs");
    if (!std::filesystem::exists(file)) return 0;
    std::istringstream lines(test::readFile(file));
    int n = 0;
    for (std::string line; std::getline(lines, line);) n += !line.empty();
    return n;
  }

  test::TempDir dir{"mka-profile-e2e"};
};

TEST_F(ClusterProfileE2E, JobsRunOnWorkersReachedThroughTheirProfiles) {
  startAdapter();
  const auto [wl, worker] = runOnAWorker(kPipelineRun, "via-profile");
  ASSERT_FALSE(worker.empty());
  for (const auto& w : env_->workers()) {
    EXPECT_TRUE(eventually([&] { return dispatcher_->registry().connected(w) != nullptr; })) << w;
    EXPECT_EQ(runs(w), 1) << w << ": one plugin run serves the connection and every request";
    EXPECT_EQ(dispatcher_->registry().clustersUsingProfile(w), std::vector<std::string>{w});
  }
}

// A profile that changes while a job runs: the worker reconnects with the new data (the
// profile's own event, not a resync, brings the reconcile), and the job finishes where it runs.
TEST_F(ClusterProfileE2E, AChangedProfileReconnectsItsWorkerWithJobsInFlight) {
  startAdapter();
  const auto [wl, worker] = runOnAWorker(kPipelineRun, "in-flight");
  ASSERT_FALSE(worker.empty());
  const int before = runs(worker);
  putProfile(worker, {{"rotation", 2}});
  EXPECT_TRUE(eventually([&] { return runs(worker) == before + 1; })) << "the plugin ran for the new connection";
  EXPECT_TRUE(awaitReconnect(worker));
  EXPECT_TRUE(settled());
  EXPECT_TRUE(checkIs(wl, "Ready")) << checkState(wl).dump();
  EXPECT_EQ(startsOn(worker, kPipelineRun, "in-flight"), 1) << "not run twice";

  const auto [wl2, worker2] = runOnAWorker(kPipelineRun, "after-change");
  EXPECT_FALSE(worker2.empty());
}

}  // namespace
}  // namespace mka::e2e
