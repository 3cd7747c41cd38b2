// The event recorder against a sandbox cluster: what `kubectl get events` shows after repeats.
#include "mka/controller/event_recorder.h"

#include <gtest/gtest.h>

#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/sandbox.h"

namespace mka::controller {
namespace {

using nlohmann::json;

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() : cluster(sandbox.addCluster({.name = "events"})) {
    kube::ClientOptions options;
    options.qps = 0;
    client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(
        kube::restConfigFor(kube::Kubeconfig::parse(cluster.kubeconfig())), options));
    recorder = std::make_unique<EventRecorder>(*client, clock, "test-component");
  }
  std::vector<json> events() {
    return cluster.api().list({"", "v1", "events", "default", "", ""}, {})["items"].get<std::vector<json>>();
  }

  FakeClock clock;
  sandbox::Sandbox sandbox{clock};
  sandbox::Cluster& cluster;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<EventRecorder> recorder;
  const json job = {{"apiVersion", "argoproj.io/v1alpha1"},
                    {"kind", "Workflow"},
                    {"metadata", {{"name", "etl"}, {"namespace", "default"}, {"uid", "uid-1"}}}};
};

// client-go's EventCorrelator: a repeat patches the Event's count and lastTimestamp; another
// message, type or object is an Event of its own.
TEST_F(EventRecorderTest, ARepeatCountsOnTheSameEventAndADifferentOneIsNew) {
  recorder->record(job, "Warning", "InvalidJob", "spec.x: bad");
  clock.advance(std::chrono::seconds{30});
  recorder->record(job, "Warning", "InvalidJob", "spec.x: bad");
  auto all = events();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["count"], 2);
  EXPECT_NE(all[0]["lastTimestamp"], all[0]["firstTimestamp"]);
  EXPECT_EQ(all[0]["involvedObject"]["uid"], "uid-1");

  recorder->record(job, "Warning", "InvalidJob", "spec.y: bad");
  recorder->record(job, "Normal", "InvalidJob", "spec.x: bad");
  json other = job;
  other["metadata"]["uid"] = "uid-2";
  recorder->record(other, "Warning", "InvalidJob", "spec.x: bad");
  EXPECT_EQ(events().size(), 4u);
}

// An Event gone (expired after its TTL, or deleted) is written afresh on the next repeat.
TEST_F(EventRecorderTest, ARepeatOfAnEventThatIsGoneWritesANewOne) {
  recorder->record(job, "Normal", "Started", "Admitted by clusterQueue cq");
  auto all = events();
  ASSERT_EQ(all.size(), 1u);
  cluster.api().remove({"", "v1", "events", "default", all[0]["metadata"]["name"].get<std::string>(), ""});
  recorder->record(job, "Normal", "Started", "Admitted by clusterQueue cq");
  all = events();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["count"], 1);
  recorder->record(job, "Normal", "Started", "Admitted by clusterQueue cq");
  EXPECT_EQ(events().at(0)["count"], 2) << "remembered again";
}

}  // namespace
}  // namespace mka::controller
