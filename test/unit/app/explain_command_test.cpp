// `explain` and `jobs` against sandbox clusters: a manager with Kueue's objects as Kueue and the
// dispatch loop write them, worker1 and worker2 with the copies the dispatch loop makes and the
// Events the job integration there records, worker3 unreachable. One job per state; every
// sentence is asserted whole, its durations read on a fake clock.
#include "mka/app/explain_command.h"
#include "app_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <sstream>

#include "mka/app/jobs_command.h"
#include "mka/kube/kubeconfig.h"
#include "mka/sandbox/sandbox.h"
#include "support/temp_dir.h"

// Its own namespace: the unity build compiles this file with the other app tests.
namespace mka::app::explain_test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

const std::filesystem::path kCrds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
const std::string kNs = "team-a";

sandbox::ResourceRef ref(const std::string& group, const std::string& plural, const std::string& ns = "",
                         const std::string& version = "v1beta2") {
  return {group, version, plural, ns, "", ""};
}
const sandbox::ResourceRef kNamespaces{"", "v1", "namespaces", "", "", ""};
const sandbox::ResourceRef kEvents{"", "v1", "events", kNs, "", ""};
const auto kClusters = ref("kueue.x-k8s.io", "multikueueclusters");
const auto kClusterQueues = ref("kueue.x-k8s.io", "clusterqueues");
const auto kLocalQueues = ref("kueue.x-k8s.io", "localqueues", kNs);
const auto kWorkloads = ref("kueue.x-k8s.io", "workloads", kNs);
const auto kPipelineRuns = ref("tekton.dev", "pipelineruns", kNs, "v1");

json condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message, Clock::TimePoint at) {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", toRfc3339(at)}};
}

class ExplainCommand : public ::testing::Test {
 protected:
  ExplainCommand()
      : manager(sandbox.addCluster(
            {.name = "manager",
             .crdFiles = {kCrds / "kueue.x-k8s.io_multikueueclusters.yaml", kCrds / "kueue.x-k8s.io_workloads.yaml",
                          kCrds / "kueue.x-k8s.io_localqueues.yaml", kCrds / "kueue.x-k8s.io_clusterqueues.yaml",
                          kCrds / "tekton.dev_pipelineruns.yaml"}})),
        worker1(addWorker("worker1")),
        worker2(addWorker("worker2")),
        worker3(addWorker("worker3")) {
    manager.api().create(kNamespaces, {{"metadata", {{"name", "kueue-system"}}}});
    for (auto* c : {&manager, &worker1, &worker2, &worker3})
      c->api().create(kNamespaces, {{"metadata", {{"name", kNs}}}});
    for (auto* w : {&worker1, &worker2, &worker3}) register_(w->name(), w->kubeconfig());
    setActive("worker3", "False", "ClientConnectionFailed", "connection refused", now() - 2min);
    for (auto* w : {&worker1, &worker2}) setActive(w->name(), "True", "Active", "Connected", now() - 1h);

    clusterQueue(manager, "cq-gpu", "8", "6");
    localQueue(manager, "lq", "cq-gpu");
    localQueue(worker1, "lq", "cq-gpu");  // worker2 lacks it
    localQueue(worker3, "lq", "cq-gpu");
    worker3.setUnreachable(true);
  }

  sandbox::Cluster& addWorker(const std::string& name) {
    return sandbox.addCluster(
        {.name = name,
         .crdFiles = {kCrds / "kueue.x-k8s.io_workloads.yaml", kCrds / "kueue.x-k8s.io_localqueues.yaml",
                      kCrds / "tekton.dev_pipelineruns.yaml"}});
  }

  Clock::TimePoint now() const { return clock.now(); }

  void register_(const std::string& name, const std::string& kubeconfig) {
    test_util::addSecretCluster(manager, name, kubeconfig);
  }

  // Writes `status` through the status subresource (a create ignores it, as kube-apiserver does).
  static json withStatus(sandbox::Cluster& cluster, sandbox::ResourceRef collection, json object, json status) {
    auto stored = *cluster.api().create(collection, std::move(object));
    stored["status"] = std::move(status);
    collection.name = stored["metadata"]["name"];
    collection.subresource = "status";
    return *cluster.api().update(collection, stored);
  }

  void setActive(const std::string& name, const std::string& status, const std::string& reason,
                 const std::string& message, Clock::TimePoint since) {
    auto object = manager.api().get({"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", name, ""});
    object["status"] = {{"conditions", json::array({condition("Active", status, reason, message, since)})}};
    manager.api().update({"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", name, "status"}, object);
  }

  void clusterQueue(sandbox::Cluster& cluster, const std::string& name, const std::string& nominal,
                    const std::string& reserved) {
    json cq = {
        {"apiVersion", "kueue.x-k8s.io/v1beta2"},
        {"kind", "ClusterQueue"},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"resourceGroups",
           json::array({{{"coveredResources", json::array({"nvidia.com/gpu"})},
                         {"flavors", json::array({{{"name", "a100"},
                                                   {"resources", json::array({{{"name", "nvidia.com/gpu"},
                                                                               {"nominalQuota", nominal}}})}}})}}})}}}};
    withStatus(cluster, kClusterQueues, cq,
               {{"flavorsReservation",
                 json::array({{{"name", "a100"},
                               {"resources", json::array({{{"name", "nvidia.com/gpu"}, {"total", reserved}}})}}})}});
  }

  void localQueue(sandbox::Cluster& cluster, const std::string& name, const std::string& cq) {
    cluster.api().create(kLocalQueues, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                        {"kind", "LocalQueue"},
                                        {"metadata", {{"name", name}, {"namespace", kNs}}},
                                        {"spec", {{"clusterQueue", cq}}}});
  }

  // A PipelineRun on the manager as the webhook leaves it: the marker set, queued on lq.
  json pipelineRun(sandbox::Cluster& cluster, const std::string& name, bool queued = true,
                   const json& status = nullptr) {
    json job = {{"apiVersion", "tekton.dev/v1"},
                {"kind", "PipelineRun"},
                {"metadata", {{"name", name}, {"namespace", kNs}}},
                {"spec", {{"pipelineRef", {{"name", "p"}}}}}};
    if (queued) job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "lq"}};
    if (&cluster == &manager) job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
    if (status.is_null()) return *cluster.api().create(kPipelineRuns, job);
    return withStatus(cluster, kPipelineRuns, job, status);
  }

  // The Workload the job integration makes for `job`, with `status`.
  json workload(sandbox::Cluster& cluster, const json& job, const std::string& gpus, json status) {
    const std::string name = "pipelinerun-" + job["metadata"]["name"].get<std::string>() + "-1a2b3";
    json wl = {
        {"apiVersion", "kueue.x-k8s.io/v1beta2"},
        {"kind", "Workload"},
        {"metadata", {{"name", name}, {"namespace", kNs}}},
        {"spec",
         {{"queueName", "lq"},
          {"podSets",
           json::array({{{"name", "main"},
                         {"count", 1},
                         {"template",
                          {{"spec",
                            {{"containers",
                              json::array({{{"name", "c"},
                                            {"image", "i"},
                                            {"resources", {{"requests", {{"nvidia.com/gpu", gpus}}}}}}})}}}}}}})}}}};
    if (&cluster == &manager) {
      wl["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "tekton.dev/v1"},
                                                        {"kind", "PipelineRun"},
                                                        {"name", job["metadata"]["name"]},
                                                        {"uid", job["metadata"]["uid"]},
                                                        {"controller", true}}});
    } else {
      wl["metadata"]["labels"] = {{"kueue.x-k8s.io/multikueue-origin", "multikueue"}};
    }
    if (status.is_null()) return *cluster.api().create(kWorkloads, wl);
    return withStatus(cluster, kWorkloads, wl, std::move(status));
  }

  void event(sandbox::Cluster& cluster, const json& about, const std::string& reason, const std::string& message,
             Clock::TimePoint at) {
    static int n = 0;
    cluster.api().create(kEvents, {{"apiVersion", "v1"},
                                   {"kind", "Event"},
                                   {"metadata", {{"name", "e" + std::to_string(++n)}, {"namespace", kNs}}},
                                   {"involvedObject",
                                    {{"apiVersion", about["apiVersion"]},
                                     {"kind", about["kind"]},
                                     {"name", about["metadata"]["name"]},
                                     {"namespace", kNs},
                                     {"uid", about["metadata"]["uid"]}}},
                                   {"type", "Normal"},
                                   {"reason", reason},
                                   {"message", message},
                                   {"count", 1},
                                   {"lastTimestamp", toRfc3339(at)},
                                   {"source", {{"component", "multikueue-adapter"}}}});
  }

  std::string kubeconfigFile() { return dir.write("manager.kubeconfig", manager.kubeconfig()).string(); }

  ExplainCommandOptions options(const std::string& target) {
    ExplainCommandOptions o;
    o.target = target;
    o.manager.kubeconfig = kubeconfigFile();
    o.namespace_ = kNs;
    o.configFile = configFile();
    o.timeout = 2s;
    o.clock = &clock;
    return o;
  }

  std::filesystem::path configFile() {
    return dir.write("config.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multiKueue:
  workerLostTimeout: 15m
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)");
  }

  struct Output {
    int code;
    std::string out, err;
  };
  Output explain(const std::string& target, const std::string& output = "") {
    auto o = options(target);
    o.output = output;
    std::ostringstream out, err;
    const int code = explainCommand(o, out, err);
    return {code, out.str(), err.str()};
  }
  // The last line: the sentence.
  static std::string sentence(const std::string& text) {
    auto end = text.find_last_not_of('\n');
    auto start = text.rfind('\n', end);
    return text.substr(start + 1, end - start);
  }

  // One job per state, as the dispatch loop and Kueue leave them.
  void createEveryState() {
    pipelineRun(manager, "unqueued", false);

    auto big = pipelineRun(manager, "big");
    workload(manager, big, "8",
             {{"conditions", json::array({condition("QuotaReserved", "False", "Pending",
                                                    "couldn't assign flavors to pod set main: insufficient unused "
                                                    "quota for nvidia.com/gpu in flavor a100, 6 more needed",
                                                    now() - 5min)})}});

    auto spread = pipelineRun(manager, "spread");
    auto spreadWl = workload(manager, spread, "1",
                             {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved",
                                                                    "Quota reserved in "
                                                                    "ClusterQueue cq-gpu",
                                                                    now() - 1min)})},
                              {"admissionChecks", json::array({{{"name", "multikueue-adapter"},
                                                                {"state", "Pending"},
                                                                {"message", ""},
                                                                {"lastTransitionTime", toRfc3339(now() - 1min)}}})},
                              {"nominatedClusterNames", json::array({"worker1", "worker2"})}});
    workload(worker1, spread, "1", nullptr);
    workload(worker2, spread, "1", nullptr);
    event(manager, spreadWl, "MultiKueue", "Workload copies created on worker1, worker2", now() - 50s);

    auto running = pipelineRun(manager, "running");
    const auto admittedAt = now() - (3min + 12s);
    workload(manager, running, "1",
             {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved", "", admittedAt - 1s),
                                          condition("Admitted", "True", "Admitted", "", admittedAt)})},
              {"admissionChecks", json::array({{{"name", "multikueue-adapter"},
                                                {"state", "Ready"},
                                                {"message", "The workload was admitted on \"worker2\""},
                                                {"lastTransitionTime", toRfc3339(admittedAt)}}})},
              {"clusterName", "worker2"}});
    workload(worker2, running, "1",
             {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved", "", admittedAt - 2s),
                                          condition("Admitted", "True", "Admitted", "", admittedAt - 1s)})}});
    auto remote =
        pipelineRun(worker2, "running", true,
                    {{"conditions",
                      json::array({condition("Succeeded", "Unknown", "Running", "Tasks Completed: 0", admittedAt)})}});
    event(worker2, remote, "Started", "Admitted by clusterQueue cq-gpu", admittedAt);

    auto lost = pipelineRun(manager, "lost");
    workload(manager, lost, "1",
             {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved", "", now() - 1h),
                                          condition("Admitted", "True", "Admitted", "", now() - 1h)})},
              {"admissionChecks", json::array({{{"name", "multikueue-adapter"},
                                                {"state", "Ready"},
                                                {"message", "The workload was admitted on \"worker3\""},
                                                {"lastTransitionTime", toRfc3339(now() - 1h)}}})},
              {"clusterName", "worker3"}});

    auto done = pipelineRun(manager, "done");
    workload(
        manager, done, "1",
        {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved", "", now() - 2h),
                                     condition("Finished", "True", "Succeeded", "Tasks Completed: 1", now() - 1h)})},
         {"clusterName", "worker1"}});

    // Admitted on the manager itself: its queue has no MultiKueue check.
    auto local = pipelineRun(manager, "local");
    workload(manager, local, "1",
             {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved", "", now() - 5min),
                                          condition("Admitted", "True", "Admitted", "", now() - 5min)})}});

    auto rejected = pipelineRun(manager, "rejected");
    workload(manager, rejected, "1",
             {{"conditions", json::array({condition("QuotaReserved", "True", "QuotaReserved", "", now() - 1h)})},
              {"admissionChecks", json::array({{{"name", "multikueue-adapter"},
                                                {"state", "Rejected"},
                                                {"message", "No multikueue adapter found for owner kind \"x\""},
                                                {"lastTransitionTime", toRfc3339(now() - 1h)}}})}});
  }

  FakeClock clock;
  test::TempDir dir;
  sandbox::Sandbox sandbox;
  sandbox::Cluster &manager, &worker1, &worker2, &worker3;
};

TEST_F(ExplainCommand, EndsWithOneSentencePerState) {
  createEveryState();
  struct Case {
    std::string job, sentence;
  };
  const std::vector<Case> cases = {
      {"unqueued", "NotQueued: no kueue.x-k8s.io/queue-name label, so Kueue does not queue it"},
      {"big", "Pending: ClusterQueue cq-gpu on the manager has no room: needs 8 nvidia.com/gpu, 2 free"},
      {"spread", "Dispatching: copies on worker1, worker2; none admitted yet (worker2: LocalQueue team-a/lq missing)"},
      {"running", "Running on worker2 for 3m12s (remote phase Running)"},
      {"lost", "Waiting for worker3: unreachable since 2m (workerLostTimeout 15m)"},
      {"done", "Finished on worker1: Succeeded"},
      {"local", "Running on the manager for 5m (admitted in ClusterQueue cq-gpu)"},
      {"rejected", "Rejected by admission check multikueue-adapter: No multikueue adapter found for owner kind \"x\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.job);
    const auto r = explain("pipelinerun/" + c.job);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(sentence(r.out), c.sentence) << r.out;
  }
}

TEST_F(ExplainCommand, PrintsTheFactsItReadOnTheManagerAndTheWorker) {
  createEveryState();
  const auto running = explain("PipelineRun/running");
  ASSERT_EQ(running.code, 0) << running.err;
  EXPECT_THAT(running.out, HasSubstr("Job:        PipelineRun.v1.tekton.dev team-a/running"));
  EXPECT_THAT(running.out, HasSubstr("Marker:     .spec.managedBy=kueue.x-k8s.io/multikueue"));
  EXPECT_THAT(running.out, HasSubstr("Queue:      lq (ClusterQueue cq-gpu)"));
  EXPECT_THAT(running.out, HasSubstr("Workload:   pipelinerun-running-1a2b3"));
  EXPECT_THAT(running.out, HasSubstr("  Admitted=True Admitted (3m12s ago)"));
  EXPECT_THAT(running.out, HasSubstr("  multikueue-adapter: Ready: The workload was admitted on \"worker2\""));
  EXPECT_THAT(running.out, HasSubstr("Chosen:     worker2"));
  EXPECT_THAT(running.out, HasSubstr("Worker worker2: MultiKueueCluster Active=True Active (1h ago)"));
  EXPECT_THAT(running.out, HasSubstr("  Job: phase Running"));
  // What the job integration on the worker recorded.
  EXPECT_THAT(running.out, HasSubstr("    Normal Started PipelineRun/running: Admitted by clusterQueue cq-gpu"));

  const auto spread = explain("pipelineruns.tekton.dev/spread");
  EXPECT_THAT(spread.out, HasSubstr("Nominated:  worker1, worker2"));
  EXPECT_THAT(spread.out, HasSubstr("Normal MultiKueue Workload/pipelinerun-spread-1a2b3: Workload copies created"));
  EXPECT_THAT(spread.out, HasSubstr("  Workload pipelinerun-spread-1a2b3 (LocalQueue team-a/lq, missing there):"));
}

TEST_F(ExplainCommand, AWorkerItCannotReachIsALineNotAnAbort) {
  createEveryState();
  const auto lost = explain("pipelinerun/lost");
  ASSERT_EQ(lost.code, 0) << lost.err;
  EXPECT_THAT(lost.out, HasSubstr("Worker worker3: MultiKueueCluster Active=False ClientConnectionFailed (2m ago)"));
  EXPECT_THAT(lost.out, HasSubstr("  not read: "));

  // The manager still calls worker3 Active, but this command cannot reach it.
  setActive("worker3", "True", "Active", "Connected", now() - 1h);
  const auto unreachable = explain("pipelinerun/lost");
  EXPECT_THAT(sentence(unreachable.out),
              ::testing::MatchesRegex("Waiting for worker3: unreachable from here: .+ \\(workerLostTimeout 15m\\)"));
}

// In dispatcher mode the dispatch loop records the Active condition's changes as Events on the
// MultiKueueCluster (Kueue's MultiKueue writes the condition): without the condition, the last
// Event says whether the worker is reachable, since its first time.
TEST_F(ExplainCommand, WithoutAnActiveConditionTheClustersLastEventTells) {
  createEveryState();
  auto cluster = manager.api().get({"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "worker3", ""});
  cluster["status"] = json::object();
  manager.api().update({"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "worker3", "status"}, cluster);
  const auto clusterEvent = [&](const std::string& name, const std::string& type, const std::string& reason,
                                Clock::TimePoint first, Clock::TimePoint last) {
    manager.api().create({"", "v1", "events", "default", "", ""},
                         {{"apiVersion", "v1"},
                          {"kind", "Event"},
                          {"metadata", {{"name", name}, {"namespace", "default"}}},
                          {"involvedObject",
                           {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                            {"kind", "MultiKueueCluster"},
                            {"name", "worker3"},
                            {"uid", cluster["metadata"]["uid"]}}},
                          {"type", type},
                          {"reason", reason},
                          {"message", "m"},
                          {"count", 2},
                          {"firstTimestamp", toRfc3339(first)},
                          {"lastTimestamp", toRfc3339(last)}});
  };
  clusterEvent("worker3.1", "Normal", "Active", now() - 2h, now() - 2h);
  clusterEvent("worker3.2", "Warning", "ClientConnectionFailed", now() - 4min, now() - 1min);
  // Each failed attempt with another message is an Event of its own: unreachable since the first.
  clusterEvent("worker3.3", "Warning", "ClientConnectionFailed", now() - 30s, now() - 30s);
  EXPECT_EQ(sentence(explain("pipelinerun/lost").out),
            "Waiting for worker3: unreachable since 4m (workerLostTimeout 15m)");
}

TEST_F(ExplainCommand, JsonHasTheDocumentedSchema) {
  createEveryState();
  const auto r = explain("pipelinerun/running", "json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_EQ(j["job"]["kind"], "PipelineRun.v1.tekton.dev");
  EXPECT_EQ(j["job"]["namespace"], kNs);
  EXPECT_EQ(j["job"]["name"], "running");
  EXPECT_EQ(j["job"]["found"], true);
  EXPECT_EQ(j["job"]["marker"], json({{"field", ".spec.managedBy"}, {"value", "kueue.x-k8s.io/multikueue"}}));
  EXPECT_EQ(j["job"]["queue"], "lq");
  EXPECT_EQ(j["workload"]["name"], "pipelinerun-running-1a2b3");
  EXPECT_EQ(j["workload"]["clusterQueue"], "cq-gpu");
  EXPECT_EQ(j["workload"]["conditions"][1]["type"], "Admitted");
  EXPECT_EQ(j["workload"]["conditions"][1]["lastTransitionTime"], toRfc3339(now() - (3min + 12s)));
  EXPECT_EQ(j["workload"]["admissionChecks"][0]["state"], "Ready");
  EXPECT_EQ(j["workload"]["nominatedClusterNames"], json::array());
  EXPECT_EQ(j["workload"]["clusterName"], "worker2");
  EXPECT_TRUE(j["events"].is_array());
  ASSERT_EQ(j["workers"].size(), 1u);
  const auto& w = j["workers"][0];
  EXPECT_EQ(w["name"], "worker2");
  EXPECT_EQ(w["active"]["status"], "True");
  EXPECT_EQ(w["reached"], true);
  EXPECT_EQ(w["error"], "");
  EXPECT_EQ(w["workload"]["localQueue"], "team-a/lq");
  EXPECT_EQ(w["workload"]["localQueueMissing"], false);
  EXPECT_EQ(w["job"]["phase"], "Running");
  EXPECT_EQ(w["job"]["suspended"], false);
  EXPECT_EQ(w["job"]["status"]["conditions"][0]["reason"], "Running");
  EXPECT_EQ(w["events"][0]["reason"], "Started");
  EXPECT_EQ(w["events"][0]["object"], "PipelineRun/running");
  EXPECT_EQ(j["state"], "Running");
  EXPECT_EQ(j["worker"], "worker2");
  EXPECT_EQ(j["sentence"], "Running on worker2 for 3m12s (remote phase Running)");

  const auto unqueued = json::parse(explain("pipelinerun/unqueued", "json").out);
  EXPECT_TRUE(unqueued["workload"].is_null());
  EXPECT_EQ(unqueued["workers"], json::array());
  EXPECT_EQ(unqueued["state"], "NotQueued");
}

TEST_F(ExplainCommand, UsageAndLookupErrors) {
  const auto missing = explain("pipelinerun/nope");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(sentence(missing.out), "NotFound: PipelineRun.v1.tekton.dev team-a/nope is not on the manager");

  const auto badKind = explain("workflow/x");
  EXPECT_EQ(badKind.code, 2);
  EXPECT_THAT(badKind.err, HasSubstr("kind workflow: not a configured kind (configured: PipelineRun.v1.tekton.dev)"));

  const auto noSlash = explain("pipelinerun");
  EXPECT_EQ(noSlash.code, 2);
  EXPECT_THAT(noSlash.err, HasSubstr("name the job as KIND/NAME"));

  EXPECT_EQ(explain("pipelinerun/x", "yaml").code, 2);

  // KIND and NAME as two words, as kubectl takes them too.
  auto twoWords = options("pipelinerun");
  twoWords.name = "nope";
  std::ostringstream out, err;
  EXPECT_EQ(explainCommand(twoWords, out, err), 1) << err.str();
  EXPECT_EQ(sentence(out.str()), "NotFound: PipelineRun.v1.tekton.dev team-a/nope is not on the manager");
}

TEST_F(ExplainCommand, JobsListsOneRowPerJobWithTheSameStates) {
  createEveryState();
  JobsCommandOptions o;
  o.manager.kubeconfig = kubeconfigFile();
  o.namespace_ = kNs;
  o.configFile = configFile();
  o.clock = &clock;
  o.output = "json";
  std::ostringstream out, err;
  ASSERT_EQ(jobsCommand(o, out, err), 0) << err.str();
  const auto j = json::parse(out.str());
  std::map<std::string, std::pair<std::string, std::string>> states;
  for (const auto& row : j["jobs"]) states[row["name"]] = {row["state"], row["worker"]};
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"unqueued", {"NotQueued", ""}},     {"big", {"Pending", ""}},         {"spread", {"Dispatching", ""}},
      {"running", {"Running", "worker2"}}, {"lost", {"Waiting", "worker3"}}, {"done", {"Finished", "worker1"}},
      {"local", {"Running", ""}},          {"rejected", {"Rejected", ""}}};
  EXPECT_EQ(states, expected);
  for (const auto& row : j["jobs"]) {
    EXPECT_EQ(row["kind"], "PipelineRun");
    EXPECT_EQ(row["namespace"], kNs);
    EXPECT_TRUE(row["creationTimestamp"].is_string());
  }
  // Without reading the workers, a sentence says what the manager knows.
  for (const auto& row : j["jobs"]) {
    if (row["name"] == "lost") {
      EXPECT_EQ(row["sentence"], "Waiting for worker3: unreachable since 2m (workerLostTimeout 15m)");
    }
  }

  o.output = "";
  o.namespace_ = "";
  o.allNamespaces = true;
  std::ostringstream table;
  ASSERT_EQ(jobsCommand(o, table, err), 0) << err.str();
  const auto text = table.str();
  EXPECT_THAT(text, ::testing::StartsWith("NAMESPACE   NAME"));
  EXPECT_THAT(table.str(), ::testing::ContainsRegex("NAMESPACE +NAME +KIND +QUEUE +STATE +WORKER +AGE\n"));
  EXPECT_THAT(table.str(), ::testing::ContainsRegex("team-a +running +PipelineRun +lq +Running +worker2 +[0-9]"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 9) << text;

  o.output = "wide";
  o.kind = "pipelinerun";
  std::ostringstream wide;
  ASSERT_EQ(jobsCommand(o, wide, err), 0) << err.str();
  EXPECT_THAT(wide.str(), HasSubstr("WORKLOAD"));
  EXPECT_THAT(wide.str(), HasSubstr("Finished on worker1: Succeeded"));

  o.kind = "workflow";
  std::ostringstream none, noneErr;
  EXPECT_EQ(jobsCommand(o, none, noneErr), 2);
  EXPECT_THAT(noneErr.str(), HasSubstr("not a configured kind"));
}

struct Run {
  int code;
  std::string output;
};
// The binary through `path`, as a shell runs it; `stderrToo` adds its standard error.
Run runBinary(const std::filesystem::path& path, const std::string& args, bool stderrToo = true) {
  const auto command = path.string() + " " + args + (stderrToo ? " 2>&1" : " 2>/dev/null");
  Run result{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (const auto n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST_F(ExplainCommand, RunsAsTheKubectlPluginThroughASymlinkWithKubectlsFlags) {
  createEveryState();
  const auto plugin = dir / "kubectl-multikueue";
  std::filesystem::create_symlink(MKA_BINARY, plugin);
  const auto context = kube::Kubeconfig::parse(manager.kubeconfig()).currentContext;
  ASSERT_FALSE(context.empty());
  const auto flags =
      " --kubeconfig " + kubeconfigFile() + " --context " + context + " --config " + configFile().string();

  // The binary's own clock: the fixture's times lie ahead of it, so the duration reads 0s.
  const auto explained = runBinary(plugin, "explain pipelinerun/running -n " + kNs + flags, false);
  EXPECT_EQ(explained.code, 0) << explained.output;
  EXPECT_THAT(sentence(explained.output),
              ::testing::MatchesRegex("Running on worker2 for [0-9a-z]+ \\(remote phase Running\\)"));

  const auto jobs = runBinary(plugin, "jobs -n " + kNs + " -o json" + flags, false);
  ASSERT_EQ(jobs.code, 0) << jobs.output;
  EXPECT_EQ(json::parse(jobs.output)["jobs"].size(), 8u);

  const auto workers = runBinary(plugin, "workers" + flags);
  EXPECT_EQ(workers.code, 0) << workers.output;
  EXPECT_THAT(workers.output, HasSubstr("worker1"));

  const auto otherContext = runBinary(plugin, "jobs --kubeconfig " + kubeconfigFile() + " --context nope");
  EXPECT_EQ(otherContext.code, 1) << otherContext.output;
  EXPECT_THAT(otherContext.output, HasSubstr("nope"));

  const auto serve = runBinary(plugin, "serve");
  EXPECT_EQ(serve.code, 2) << serve.output;
  EXPECT_THAT(serve.output, HasSubstr("kubectl multikueue: serves explain, jobs and workers"));
  const auto bare = runBinary(plugin, "");
  EXPECT_EQ(bare.code, 2) << bare.output;
  const auto help = runBinary(plugin, "--help");
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("kubectl multikueue"));
  EXPECT_THAT(help.output, HasSubstr("explain"));
  EXPECT_THAT(help.output, ::testing::Not(HasSubstr("validate-config"))) << "only what the plugin serves";
}

TEST(ShortDuration, ReadsAsKubectlAges) {
  EXPECT_EQ(shortDuration(45s), "45s");
  EXPECT_EQ(shortDuration(3min + 12s), "3m12s");
  EXPECT_EQ(shortDuration(2min), "2m");
  EXPECT_EQ(shortDuration(1h + 5min + 3s), "1h5m");
  EXPECT_EQ(shortDuration(std::chrono::hours{76}), "3d4h");
  EXPECT_EQ(shortDuration(-5s), "0s");
}

}  // namespace
}  // namespace mka::app::explain_test
