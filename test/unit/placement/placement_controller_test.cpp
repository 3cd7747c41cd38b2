// The placement check controller assembled (informers, their handlers, the controllers) on a
// sandbox manager: what wakes a check. Its FakeClock never moves, so no error backoff ever fires:
// a check that recovers here was woken by an event.
#include "mka/placement/placement_controller.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "placement_sandbox.h"
#include "support/eventually.h"
#include "support/table_test.h"

namespace mka::placement {
namespace {

using nlohmann::json;
using namespace fixture;

// A user's own object (without our label) holding a name the Placement's check generates.
struct UserObjectCase {
  std::string name;
  sandbox::ResourceRef ref;
  std::string kind;
  std::string objectName;
  json spec;
  std::string refusal;  // the check's Active reason while the object is there
};

std::vector<UserObjectCase> userObjectCases() {
  return {
      {"a user's MultiKueueConfig of the Placement's name",
       kConfigs,
       "MultiKueueConfig",
       "p1",
       {{"clusters", {"mine"}}},
       "MultiKueueConfigError"},
      {"a user's MultiKueueCluster of a decided cluster's generated name",
       kClusters,
       "MultiKueueCluster",
       "p1-cluster1",
       {{"clusterSource", {{"kubeConfig", {{"location", "mine"}}}}}},
       "MultiKueueClusterError"},
  };
}

// The check refuses to take the user's object over and says "rename or delete it"; once the
// user deletes it, the deletion wakes the check, which then generates its own and turns Active
// without waiting for an error backoff (seconds to minutes on a real clock).
MKA_TABLE_TEST_F(PlacementSandbox, DeletingAUsersObjectOfAGeneratedNameActivatesTheCheckAtOnce, UserObjectCase,
                 userObjectCases()) {
  const auto& c = testCase();
  manager.api().create(c.ref, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                               {"kind", c.kind},
                               {"metadata", {{"name", c.objectName}}},
                               {"spec", c.spec}});
  placement("p1");
  decision("p1", 1, {"cluster1"});
  manager.api().create(kChecks, placementCheck("ac1", "p1"));
  PlacementController controller(*client, clock, {.namespace_ = "kueue-system"});
  controller.start();
  const auto activeIs = [&](const std::string& status, const std::string& reason) {
    const auto condition = active("ac1");
    return condition.is_object() && condition.value("status", "") == status && condition.value("reason", "") == reason;
  };

  ASSERT_TRUE(test::eventually([&] { return activeIs("False", c.refusal); })) << active("ac1").dump();
  EXPECT_NE(active("ac1").value("message", "").find("rename or delete it"), std::string::npos) << active("ac1").dump();

  manager.api().remove(named(c.ref, c.objectName));
  ASSERT_TRUE(test::eventually([&] { return activeIs("True", "Active"); })) << active("ac1").dump();
  EXPECT_EQ(manager.api().get(named(c.ref, c.objectName))["metadata"]["labels"][std::string(kGeneratedForLabel)], "p1");
  controller.stop();
}

}  // namespace
}  // namespace mka::placement
