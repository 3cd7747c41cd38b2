// Two replicas of the adapter as deployed: `multikueue-adapter serve` processes against one
// sandbox manager and worker (the Kueue and framework-controller stand-ins, the worker's
// integration), with leader election on short lease settings. Both serve /mutate; only the
// leader dispatches; a killed leader is replaced within the lease duration; a leader that cannot
// renew stops before another takes over, so that no job is dispatched by two replicas. The
// replicas are told apart in the clusters' recorded requests by the leader-election identity
// each one's user agent carries (POD_NAME, as the Deployment sets it, names it).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dispatch_fixture.h"
#include "mka/api/workload_status.h"
#include "mka/common/base64.h"
#include "mka/demo/environment.h"
#include "mka/integration/workload_builder.h"
#include "mka/sandbox/sandbox.h"
#include "mka/yaml/json.h"
#include "support/eventually.h"
#include "support/ports.h"
#include "support/temp_dir.h"
#include "support/tls.h"

extern char** environ;

namespace mka::e2e::two_replicas {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using sandbox::RecordedRequest;
using Steady = std::chrono::steady_clock;

// The lease settings of the configuration below.
constexpr std::chrono::milliseconds kLeaseDuration = 4s;
constexpr std::chrono::milliseconds kRenewDeadline = 3s;
constexpr std::chrono::milliseconds kRetryPeriod = 500ms;
// What a sanitizer build on a busy machine may add to a bound the product promises.
constexpr std::chrono::milliseconds kSlack = 3s;
// A process started under a sanitizer takes a while before it serves, and a new leader before
// it dispatches (its caches sync, it connects to the worker).
constexpr std::chrono::milliseconds kStartTimeout = 60s;
constexpr std::chrono::milliseconds kDispatchTimeout = 30s;

const char* const kLeaseName = "multikueue-adapter";
const char* const kWorker = "worker1";
const char* const kCheckName = "multikueue-adapter";  // the sample AdmissionCheck

constexpr std::string_view kConfiguration = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
leaderElection:
  leaderElect: true
  resourceName: multikueue-adapter
  resourceNamespace: kueue-system
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
clientConnection: {qps: 500, burst: 1000}
managedByDefaulting: MultiKueueQueues
dispatch: {enabled: true, admissionCheckControllerName: multikueue-adapter.dev/dispatcher}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
  origin: multikueue
integrations:
  frameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)";

double secondsSince(Steady::time_point start) { return std::chrono::duration<double>(Steady::now() - start).count(); }

// The pod a replica's user agent names ("multikueue-adapter/<version> (<os>/<arch>)
// <pod>_<random>"); "" for any other client (the test's own, the worker's integration).
std::string podOf(const RecordedRequest& request) {
  const auto& agent = request.userAgent;
  if (agent.rfind("multikueue-adapter/", 0) != 0) return "";
  const auto identity = agent.substr(agent.rfind(' ') + 1);
  const auto underscore = identity.rfind('_');
  return underscore == std::string::npos ? "" : identity.substr(0, underscore);
}

bool isWrite(const RecordedRequest& r) {
  return r.verb == "create" || r.verb == "update" || r.verb == "patch" || r.verb == "delete" ||
         r.verb == "deletecollection";
}

std::string describe(const RecordedRequest& r) {
  return r.verb + " " + (r.group.empty() ? "" : r.group + "/") + r.resource +
         (r.subresource.empty() ? "" : "/" + r.subresource) + " " + r.namespace_ + "/" +
         (r.verb == "create" ? r.createdName : r.name) + " by \"" + r.userAgent + "\"";
}

// The value of the first sample of `name` whose labels hold every one of `labels`.
std::optional<double> sample(const std::string& metrics, const std::string& name,
                             const std::vector<std::string>& labels = {}) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0 || (line.size() > name.size() && line[name.size()] != '{' && line[name.size()] != ' '))
      continue;
    bool all = true;
    for (const auto& label : labels) all = all && line.find(label) != std::string::npos;
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

// `count` distinct loopback ports free right now.
std::vector<int> freePorts(std::size_t count) {
  std::set<int> ports;
  while (ports.size() < count) ports.insert(test::freeLoopbackPort());
  return {ports.begin(), ports.end()};
}

// One `serve` process with its own webhook, probe and metrics ports and POD_NAME, its output in
// a file; killed when the test ends without stopping it.
class Replica {
 public:
  struct Files {
    std::filesystem::path config, kubeconfig, certDir, logDir;
  };

  Replica(std::string pod, const Files& files) : pod_(std::move(pod)), log_(files.logDir / (pod_ + ".log")) {
    const auto ports = freePorts(3);
    webhookPort_ = ports[0];
    probePort_ = ports[1];
    metricsPort_ = ports[2];
    std::vector<std::string> args = {MKA_BINARY,
                                     "serve",
                                     "--config",
                                     files.config.string(),
                                     "--kubeconfig",
                                     files.kubeconfig.string(),
                                     "--cert-dir",
                                     files.certDir.string(),
                                     "--webhook-bind-address",
                                     "127.0.0.1:" + std::to_string(webhookPort_),
                                     "--health-probe-bind-address",
                                     "127.0.0.1:" + std::to_string(probePort_),
                                     "--metrics-bind-address",
                                     "127.0.0.1:" + std::to_string(metricsPort_)};
    // The test's environment, with this replica's pod name as the Deployment's downward API sets it.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, "POD_NAME=", 9) != 0) env.emplace_back(*e);
    env.push_back("POD_NAME=" + pod_);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, MKA_BINARY, &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Replica() { kill(); }
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  const std::string& pod() const { return pod_; }
  bool started() const { return pid_ > 0; }
  bool running() {
    if (pid_ <= 0 || exitStatus_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) exitStatus_ = status;
    return !exitStatus_;
  }
  // SIGKILL: no chance to release the Lease, as when a node dies.
  void kill() {
    if (!running()) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exitStatus_ = status;
  }
  // SIGTERM, then its exit code (-1 when it did not exit by itself within 30 s, or died of a signal).
  int terminate() {
    if (running()) ::kill(pid_, SIGTERM);
    if (!test::eventually([&] { return !running(); }, 30s)) {
      kill();
      return -1;
    }
    return WIFEXITED(*exitStatus_) ? WEXITSTATUS(*exitStatus_) : -1;
  }

  std::string log() const { return test::readFile(log_); }
  std::string metrics() const {
    httplib::Client client("127.0.0.1", metricsPort_);
    client.set_connection_timeout(2, 0);
    auto res = client.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }
  std::optional<double> leaderStatus() const {
    return sample(metrics(), "leader_election_master_status", {"name=\"" + std::string(kLeaseName) + "\""});
  }
  bool leads() const { return leaderStatus() == 1.0; }
  bool follows() const { return leaderStatus() == 0.0; }
  bool ready() const {
    httplib::Client client("127.0.0.1", probePort_);
    client.set_connection_timeout(2, 0);
    auto res = client.Get("/readyz");
    return res && res->status == 200;
  }
  // POST /mutate over TLS, trusting `caFile` only.
  std::optional<json> mutate(const json& review, const std::filesystem::path& caFile) const {
    httplib::SSLClient client("127.0.0.1", webhookPort_);
    client.set_ca_cert_path(caFile.c_str());
    client.enable_server_certificate_verification(true);
    auto res = client.Post("/mutate", review.dump(), "application/json");
    if (!res || res->status != 200) return std::nullopt;
    return json::parse(res->body, nullptr, false);
  }

 private:
  std::string pod_;
  std::filesystem::path log_;
  int webhookPort_ = -1, probePort_ = -1, metricsPort_ = -1;
  pid_t pid_ = -1;
  std::optional<int> exitStatus_;
};

// What /mutate gets when a user creates a PipelineRun in a queue that MultiKueue dispatches.
json pipelineRunReview() {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "review-1"},
            {"kind", {{"group", "tekton.dev"}, {"version", "v1"}, {"kind", "PipelineRun"}}},
            {"resource", {{"group", "tekton.dev"}, {"version", "v1"}, {"resource", "pipelineruns"}}},
            {"name", "submitted"},
            {"namespace", "default"},
            {"operation", "CREATE"},
            {"object",
             {{"apiVersion", "tekton.dev/v1"},
              {"kind", "PipelineRun"},
              {"metadata",
               {{"name", "submitted"},
                {"namespace", "default"},
                {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
              {"spec", {{"pipelineRef", {{"name", "p"}}}}}}}}}};
}

class TwoReplicas : public ::testing::Test {
 protected:
  void SetUp() override {
    demo::Environment::Options options;
    options.workers = {kWorker};
    options.crdDirectory = std::string(MKA_FIXTURES_DIR) + "/crds";
    options.samplesDirectory = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
    options.runTime = 10min;  // the jobs keep running: nothing is finished or collected meanwhile
    env_ = std::make_unique<demo::Environment>(options);
    const auto kubeconfigs = env_->sandbox().writeKubeconfigs(dir_ / "kubeconfigs");
    files_.kubeconfig = kubeconfigs.at("manager");
    files_.config = dir_.write("config.yaml", kConfiguration);
    files_.certDir = dir_ / "certs";
    files_.logDir = dir_.path();
    serving_ = test::writeServingFiles(files_.certDir, ca_, ca_.issue());
    record();
  }

  void TearDown() override {
    for (auto& replica : replicas_) {
      replica->kill();  // gone: its log is complete
      // A sanitizer build's replica reports there, and may have died of it before it was killed.
      for (const auto* report : {"ERROR: AddressSanitizer", "WARNING: ThreadSanitizer", "runtime error:"})
        EXPECT_EQ(replica->log().find(report), std::string::npos) << replica->pod() << " reported " << report;
    }
    for (auto& replica : replicas_)
      if (HasFailure()) std::cout << "---- " << replica->pod() << " log:\n" << replica->log() << '\n';
    replicas_.clear();
    EXPECT_THAT(env_->invalidWrites(), ::testing::IsEmpty());
    env_.reset();
  }

  Replica& start(const std::string& pod) {
    replicas_.push_back(std::make_unique<Replica>(pod, files_));
    EXPECT_TRUE(replicas_.back()->started()) << "cannot start " << MKA_BINARY;
    return *replicas_.back();
  }

  // Recording starts afresh on both clusters.
  void record() {
    env_->cluster("manager").recordRequests(true);
    env_->cluster(kWorker).recordRequests(true);
  }

  // A job of `kind` from its sample manifest, as /mutate leaves it (marker set, suspended).
  void createJob(const JobKind& kind, const std::string& name) {
    std::ifstream in(std::string(MKA_SOURCE_DIR) + "/manifests/samples/jobs/" + kind.sampleFile);
    std::stringstream text;
    text << in.rdbuf();
    json job = yaml::parseJson(text.str(), yaml::Limits::forManifests()).at(0);
    job["metadata"]["name"] = name;
    job["metadata"]["namespace"] = "default";
    if (kind.gvk.kind == "Workflow") {
      job["metadata"]["labels"]["workflows.argoproj.io/controller-instanceid"] = "multikueue";
      job["spec"]["suspend"] = true;
    } else {
      job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
      job["spec"]["status"] = "PipelineRunPending";
    }
    env_->create("manager", job);
  }

  std::optional<json> get(const std::string& cluster, const api::GroupVersionKind& gvk, const std::string& name,
                          const std::string& ns = "default") {
    try {
      return env_->client(cluster).get(gvk, ns, name);
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return std::nullopt;
      throw;
    }
  }

  struct Job {
    JobKind kind;
    std::string name;
    std::string workload;
  };

  // Creates a job and awaits it dispatched: its manager Workload's check Ready and the job copy
  // started on the worker. The Workload's name is "" after a failed assertion.
  Job dispatch(const JobKind& kind, const std::string& name) {
    createJob(kind, name);
    std::string workload;
    const auto ready = [&] {
      const auto job = get("manager", kind.gvk, name);
      if (!job) return false;
      workload = integration::workloadName(kind.gvk, name, job->at("metadata").value("uid", ""));
      const auto wl = get("manager", api::kWorkloadGvk, workload);
      const auto* state = wl ? api::findCheckState(*wl, kCheckName) : nullptr;
      return state != nullptr && state->value("state", "") == "Ready";
    };
    EXPECT_TRUE(test::eventually(ready, kDispatchTimeout)) << name << " was not dispatched";
    auto* controller = env_->frameworkController(kWorker, kind.gvk.kind);
    EXPECT_TRUE(test::eventually([&] { return controller->starts("default/" + name) == 1; }, kDispatchTimeout))
        << name << " did not start on " << kWorker;
    return {kind, name, HasFailure() ? "" : workload};
  }

  // Since recording last started, while `leader` led: every write a replica made to the worker,
  // and every one but a Lease's to the manager, is the leader's.
  void expectOnlyTheLeaderWrote(const Replica& leader) {
    for (const auto* cluster : {"manager", kWorker}) {
      for (const auto& r : env_->cluster(cluster).recordedRequests()) {
        const auto pod = podOf(r);
        if (pod.empty() || !isWrite(r) || pod == leader.pod()) continue;
        if (std::string(cluster) == "manager" && r.resource == "leases") continue;  // standing for election
        ADD_FAILURE() << cluster << ": " << describe(r) << " while " << leader.pod() << " led";
      }
    }
  }

  // The replicas that created the worker's copies of a job (its Workload and the job) since
  // recording started; `copies` counts those creates.
  std::set<std::string> creatorsOf(const Job& job, int* copies = nullptr) {
    std::set<std::string> pods;
    const std::string jobResource = job.kind.gvk.kind == "Workflow" ? "workflows" : "pipelineruns";
    for (const auto& r : env_->cluster(kWorker).recordedRequests()) {
      if (r.verb != "create" || !r.subresource.empty()) continue;
      if (!((r.resource == "workloads" && r.createdName == job.workload) ||
            (r.resource == jobResource && r.createdName == job.name)))
        continue;
      pods.insert(podOf(r));
      if (copies != nullptr) ++*copies;
    }
    return pods;
  }

  // The end of `leader`'s term (recorded since it led and every other replica followed or was
  // gone): `jobs` were dispatched by it alone, both copies of each created on the worker by it
  // only; no copy of an earlier term's job was created again; no other replica wrote.
  void expectTermOf(const Replica& leader, const std::vector<Job>& jobs) {
    for (const auto& job : jobs) {
      int copies = 0;
      EXPECT_EQ(creatorsOf(job, &copies), std::set<std::string>{leader.pod()})
          << job.name << "'s copies on " << kWorker;
      EXPECT_GE(copies, 2) << job.name << ": its Workload and job copies";
    }
    for (const auto& job : earlier_)
      EXPECT_THAT(creatorsOf(job), ::testing::IsEmpty()) << job.name << "'s copies created again";
    expectOnlyTheLeaderWrote(leader);
    earlier_.insert(earlier_.end(), jobs.begin(), jobs.end());
  }

  // Every manager Workload check-state write since recording started, by whom.
  std::set<std::string> checkStateWriters() {
    std::set<std::string> pods;
    for (const auto& r : env_->cluster("manager").recordedRequests())
      if (isWrite(r) && r.resource == "workloads" && r.subresource == "status" && !podOf(r).empty())
        pods.insert(podOf(r));
    return pods;
  }

  std::string leaseHolder() {
    const auto lease = get("manager", {"coordination.k8s.io", "v1", "Lease"}, kLeaseName, "kueue-system");
    return lease ? lease->value("spec", json::object()).value("holderIdentity", "") : "";
  }

  test::TempDir dir_{"two-replicas"};
  test::TestCa ca_;
  test::ServingFiles serving_;
  Replica::Files files_;
  std::unique_ptr<demo::Environment> env_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<Job> earlier_;  // dispatched in the terms checked so far
};

TEST_F(TwoReplicas, OnlyTheLeaderDispatchesAndLeadershipMovesWithoutOverlap) {
  const auto began = Steady::now();
  Replica& a = start("replica-a");
  Replica& b = start("replica-b");
  ASSERT_TRUE(test::eventually([&] { return a.ready() && b.ready(); }, kStartTimeout)) << "not ready";
  ASSERT_TRUE(test::eventually([&] { return (a.leads() && b.follows()) || (b.leads() && a.follows()); }, kStartTimeout))
      << "no single leader";
  Replica& first = a.leads() ? a : b;
  Replica& second = &first == &a ? b : a;
  EXPECT_EQ(leaseHolder().rfind(first.pod() + "_", 0), 0u) << leaseHolder();

  // 1. Every replica serves the webhooks.
  for (Replica* replica : {&a, &b}) {
    SCOPED_TRACE(replica->pod());
    const auto answer = replica->mutate(pipelineRunReview(), serving_.ca);
    ASSERT_TRUE(answer && answer->is_object()) << "POST /mutate got no AdmissionReview";
    const auto response = answer->value("response", json::object());
    EXPECT_EQ(response.value("uid", ""), "review-1");
    EXPECT_TRUE(response.value("allowed", false));
    EXPECT_EQ(response.value("patchType", ""), "JSONPatch") << "the marker is defaulted";
    EXPECT_THAT(base64Decode(response.value("patch", "")).value_or(""),
                ::testing::HasSubstr("kueue.x-k8s.io/multikueue"))
        << response.dump();
  }

  // 2. Only the leader dispatches.
  const auto pipeline1 = dispatch(kPipelineRun, "term1-pipeline");
  const auto workflow1 = dispatch(kWorkflow, "term1-workflow");
  ASSERT_FALSE(HasFailure());
  expectTermOf(first, {pipeline1, workflow1});
  EXPECT_EQ(checkStateWriters(), std::set<std::string>{first.pod()}) << "check states on the manager";
  const auto leaderMetrics = first.metrics(), followerMetrics = second.metrics();
  EXPECT_EQ(sample(leaderMetrics, "leader_election_master_status", {"name=\"multikueue-adapter\""}), 1.0);
  EXPECT_EQ(sample(followerMetrics, "leader_election_master_status", {"name=\"multikueue-adapter\""}), 0.0);
  EXPECT_GE(sample(leaderMetrics, "multikueue_workloads_dispatched_total", {"replica_role=\"leader\""}).value_or(0), 2)
      << leaderMetrics;
  EXPECT_EQ(sample(followerMetrics, "multikueue_workloads_dispatched_total"), std::nullopt) << followerMetrics;

  // 3. The leader dies without releasing the Lease: the other takes over once it expires.
  ASSERT_TRUE(first.running());
  const auto killed = Steady::now();
  first.kill();
  ASSERT_TRUE(test::eventually([&] { return second.leads(); }, kLeaseDuration + kRetryPeriod + kSlack))
      << second.pod() << " did not take over";
  const auto handover = Steady::now() - killed;
  std::cout << "[ handover after SIGKILL: " << secondsSince(killed) << " s ]\n";
  EXPECT_LE(handover, kLeaseDuration + kRetryPeriod + kSlack);
  EXPECT_GE(handover, kLeaseDuration / 2) << "taken over before the Lease expired";
  EXPECT_EQ(leaseHolder().rfind(second.pod() + "_", 0), 0u) << leaseHolder();
  record();
  Replica& third = start("replica-c");  // the Deployment's replacement pod
  ASSERT_TRUE(test::eventually([&] { return third.ready() && third.follows(); }, kStartTimeout)) << "not following";
  const auto pipeline2 = dispatch(kPipelineRun, "term2-pipeline");
  ASSERT_FALSE(HasFailure());
  expectTermOf(second, {pipeline2});

  // 4. The leader's Lease requests fail (the API server answers it 503 only): it stops leading
  // within its renew deadline, before the Lease expires for the other replica, which takes over.
  const auto cutOff = Steady::now();
  env_->cluster("manager").faults().failNext(1'000'000, 503, {.resource = "leases", .userAgent = second.pod() + "_"});
  ASSERT_TRUE(test::eventually([&] { return second.follows(); }, kRenewDeadline + kRetryPeriod + kSlack))
      << second.pod() << " kept leading without renewing";
  std::cout << "[ the leader stopped " << secondsSince(cutOff) << " s after its Lease requests began to fail ]\n";
  ASSERT_TRUE(test::eventually([&] { return third.leads(); }, kLeaseDuration + kRetryPeriod + kSlack))
      << third.pod() << " did not take over";
  std::cout << "[ the other replica led " << secondsSince(cutOff) << " s after they began to fail ]\n";
  EXPECT_EQ(leaseHolder().rfind(third.pod() + "_", 0), 0u) << leaseHolder();
  record();
  const auto workflow3 = dispatch(kWorkflow, "term3-workflow");
  ASSERT_FALSE(HasFailure());
  expectTermOf(third, {workflow3});  // nothing of the replica that lost the Lease but its Lease requests
  EXPECT_TRUE(second.follows());

  // 5. The replica that lost the Lease stood again: once answered, it takes over from a dead leader.
  env_->cluster("manager").faults().clear();
  ASSERT_TRUE(third.running());
  third.kill();
  ASSERT_TRUE(test::eventually([&] { return second.leads(); }, kLeaseDuration + kRetryPeriod + kSlack))
      << second.pod() << " did not stand again";
  EXPECT_EQ(leaseHolder().rfind(second.pod() + "_", 0), 0u) << leaseHolder();
  record();
  const auto pipeline4 = dispatch(kPipelineRun, "term4-pipeline");
  ASSERT_FALSE(HasFailure());
  expectTermOf(second, {pipeline4});

  // The replica that led twice, and followed in between, never counted a dispatch as a follower.
  const auto metrics = second.metrics();
  EXPECT_EQ(sample(metrics, "multikueue_workloads_dispatched_total", {"replica_role=\"follower\""}), std::nullopt)
      << metrics;
  EXPECT_GE(sample(metrics, "multikueue_workloads_dispatched_total", {"replica_role=\"leader\""}).value_or(0), 2);
  EXPECT_EQ(second.terminate(), 0) << "SIGTERM ends serve with exit code 0";
  std::cout << "[ two replicas: " << secondsSince(began) << " s ]\n";
}

}  // namespace
}  // namespace mka::e2e::two_replicas
