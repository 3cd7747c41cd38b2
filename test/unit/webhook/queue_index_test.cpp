#include "mka/webhook/queue_index.h"

#include <atomic>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::webhook {
namespace {

using Result = QueueLookup::Result;

const std::vector<std::string> kBoth = {"multikueue-adapter.dev/dispatcher", "kueue.x-k8s.io/multikueue"};
const std::vector<std::string> kKueueOnly = {"kueue.x-k8s.io/multikueue"};

struct QueueLookupCase {
  std::string name{};
  std::function<void(InMemoryQueueIndex&)> setup{};
  std::string ns = "tekton-ci";
  std::string localQueue = "team-a";
  std::vector<std::string> controllerNames = kBoth;
  Result result{};
  std::string clusterQueue{};
  std::string admissionCheck{};
};

void standard(InMemoryQueueIndex& index) {
  index.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
  index.upsertClusterQueue("team-a-cq", {"provisioning", "multikueue-ac"});
  index.upsertAdmissionCheck("provisioning", "kueue.x-k8s.io/provisioning-request");
  index.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
}

std::vector<QueueLookupCase> lookupCases() {
  const std::vector<QueueLookupCase> cases = {
      {.name = "empty index", .setup = [](InMemoryQueueIndex&) {}, .result = Result::LocalQueueNotFound},
      {.name = "same queue name in another namespace",
       .setup = standard,
       .ns = "argo-ci",
       .result = Result::LocalQueueNotFound},
      {.name = "other queue in the namespace",
       .setup = standard,
       .localQueue = "team-b",
       .result = Result::LocalQueueNotFound},
      {.name = "ClusterQueue not seen yet",
       .setup = [](InMemoryQueueIndex& i) { i.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq"); },
       .result = Result::ClusterQueueNotFound,
       .clusterQueue = "team-a-cq"},
      {.name = "ClusterQueue without checks",
       .setup =
           [](InMemoryQueueIndex& i) {
             i.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
             i.upsertClusterQueue("team-a-cq", {});
           },
       .result = Result::NotMultiKueue,
       .clusterQueue = "team-a-cq"},
      {.name = "check referenced but not seen",
       .setup =
           [](InMemoryQueueIndex& i) {
             i.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
             i.upsertClusterQueue("team-a-cq", {"multikueue-ac"});
           },
       .result = Result::NotMultiKueue,
       .clusterQueue = "team-a-cq"},
      {.name = "Kueue's MultiKueue check",
       .setup = standard,
       .result = Result::MultiKueue,
       .clusterQueue = "team-a-cq",
       .admissionCheck = "multikueue-ac"},
      {.name = "our dispatcher's check",
       .setup =
           [](InMemoryQueueIndex& i) {
             i.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
             i.upsertClusterQueue("team-a-cq", {"dispatch"});
             i.upsertAdmissionCheck("dispatch", "multikueue-adapter.dev/dispatcher");
           },
       .result = Result::MultiKueue,
       .clusterQueue = "team-a-cq",
       .admissionCheck = "dispatch"},
      {.name = "only the given controller names count",
       .setup =
           [](InMemoryQueueIndex& i) {
             i.upsertLocalQueue("tekton-ci", "team-a", "team-a-cq");
             i.upsertClusterQueue("team-a-cq", {"dispatch"});
             i.upsertAdmissionCheck("dispatch", "multikueue-adapter.dev/dispatcher");
           },
       .controllerNames = kKueueOnly,
       .result = Result::NotMultiKueue,
       .clusterQueue = "team-a-cq"},
      {.name = "LocalQueue moved to another ClusterQueue",
       .setup =
           [](InMemoryQueueIndex& i) {
             standard(i);
             i.upsertClusterQueue("plain-cq", {"provisioning"});
             i.upsertLocalQueue("tekton-ci", "team-a", "plain-cq");
           },
       .result = Result::NotMultiKueue,
       .clusterQueue = "plain-cq"},
      {.name = "LocalQueue removed",
       .setup =
           [](InMemoryQueueIndex& i) {
             standard(i);
             i.removeLocalQueue("tekton-ci", "team-a");
           },
       .result = Result::LocalQueueNotFound},
      {.name = "ClusterQueue removed",
       .setup =
           [](InMemoryQueueIndex& i) {
             standard(i);
             i.removeClusterQueue("team-a-cq");
           },
       .result = Result::ClusterQueueNotFound,
       .clusterQueue = "team-a-cq"},
      {.name = "admission check removed",
       .setup =
           [](InMemoryQueueIndex& i) {
             standard(i);
             i.removeAdmissionCheck("multikueue-ac");
           },
       .result = Result::NotMultiKueue,
       .clusterQueue = "team-a-cq"},
      {.name = "admission check's controller changed",
       .setup =
           [](InMemoryQueueIndex& i) {
             standard(i);
             i.upsertAdmissionCheck("multikueue-ac", "example.com/other");
           },
       .result = Result::NotMultiKueue,
       .clusterQueue = "team-a-cq"},
  };
  return cases;
}

MKA_TABLE_TEST(InMemoryQueueIndex, Lookup, QueueLookupCase, lookupCases()) {
  const QueueLookupCase& c = testCase();
  InMemoryQueueIndex index;
  c.setup(index);
  const QueueLookup got = index.lookup(c.ns, c.localQueue, c.controllerNames);
  EXPECT_EQ(got.result, c.result);
  EXPECT_EQ(got.clusterQueue, c.clusterQueue);
  EXPECT_EQ(got.admissionCheck, c.admissionCheck);
}

TEST(InMemoryQueueIndex, Synced) {
  InMemoryQueueIndex index;
  EXPECT_TRUE(index.hasSynced());
  index.setSynced(false);
  EXPECT_FALSE(index.hasSynced());
  index.setSynced(true);
  EXPECT_TRUE(index.hasSynced());
}

// One feeder and several webhook threads, as in the server: every answer is one of the states
// the feeder moves between, never a torn one (run under TSan to check the locking itself).
TEST(InMemoryQueueIndex, ConcurrentReadersSeeConsistentStates) {
  InMemoryQueueIndex index;
  standard(index);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto got = index.lookup("tekton-ci", "team-a", kBoth);
        const bool ok = (got.result == Result::MultiKueue && got.admissionCheck == "multikueue-ac") ||
                        (got.result == Result::NotMultiKueue && got.admissionCheck.empty());
        if (!ok || got.clusterQueue != "team-a-cq") ++bad;
        std::this_thread::yield();  // a reader-preferring lock would otherwise starve the feeder
      }
    });
  }
  for (int i = 0; i < 500; ++i) {
    if (i % 2 == 0) {
      index.removeAdmissionCheck("multikueue-ac");
    } else {
      index.upsertAdmissionCheck("multikueue-ac", "kueue.x-k8s.io/multikueue");
    }
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace mka::webhook
