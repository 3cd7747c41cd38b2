// `add-worker` and `remove-worker` against two sandbox clusters, with the dispatch loop running
// on the manager: worker2 starts un-onboarded (no MultiKueueCluster, Secret or config entry;
// only its Kueue stand-in admits, so a job dispatched at all runs there). The worker's token
// Secret is filled by the sandbox's token controller, and the built kubeconfig is what the
// dispatch loop, kubectl and the RBAC check below use.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "dispatch_fixture.h"
#include "mka/app/add_worker.h"
#include "mka/common/base64.h"
#include "mka/config/loader.h"
#include "mka/deploy/worker_access.h"
#include "mka/kube/kubeconfig.h"
#include "support/table_test.h"
#include "support/temp_dir.h"

namespace mka::e2e {
// Named, not anonymous: the dispatch tests are built as one unity file.
namespace onboarding_test {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kWorker = "worker2";
const std::string kServiceAccountUser = "system:serviceaccount:kueue-system:multikueue-adapter-dispatcher";

struct Outcome {
  int code;
  std::string out, err;
};

// worker2 un-onboarded beside the running dispatch loop, and what the tests read of it.
class Onboarding : public DispatchFixture {
 public:
  void setUp() {
    setUpEnvironment({.startWorkerKueues = false});
    env_->startKueue(kWorker);
    // worker2 as it is before onboarding: Kueue installed (its namespace), nothing on the manager.
    env_->create(kWorker, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "kueue-system"}}}});
    auto& manager = env_->client("manager");
    manager.patch(api::kMultiKueueConfigGvk, "", "multikueue-config", kube::PatchType::Merge,
                  {{"spec", {{"clusters", {"worker1"}}}}});
    manager.remove(api::kMultiKueueClusterGvk, "", kWorker);
    manager.remove({"", "v1", "Secret"}, "kueue-system", kWorker + "-secret");
    kubeconfigs_ = env_->sandbox().writeKubeconfigs(dir_.path());
    startAdapter();
  }

  app::WorkerCommandOptions options() const {
    app::WorkerCommandOptions o;
    o.name = kWorker;
    o.workerKubeconfig = kubeconfigs_.at(kWorker);
    o.managerKubeconfig = kubeconfigs_.at("manager").string();
    o.configFile = std::string(MKA_SOURCE_DIR) + "/manifests/base/config.yaml";
    o.tokenTimeout = std::chrono::seconds{20};
    return o;
  }

  Outcome add(const app::WorkerCommandOptions& o) {
    std::ostringstream out, err;
    const int code = app::addWorkerCommand(o, out, err);
    return {code, out.str(), err.str()};
  }
  Outcome remove(const app::WorkerCommandOptions& o) {
    std::ostringstream out, err;
    const int code = app::removeWorkerCommand(o, out, err);
    return {code, out.str(), err.str()};
  }

  std::vector<std::string> configClusters() {
    std::vector<std::string> out;
    const auto config = get("manager", api::kMultiKueueConfigGvk, "multikueue-config", "");
    for (const auto& c : config->at("spec").at("clusters")) out.push_back(c.get<std::string>());
    return out;
  }

  // The kubeconfig add-worker stored for the dispatch loop.
  std::string storedKubeconfig() {
    const auto secret = get("manager", {"", "v1", "Secret"}, kWorker + "-secret", "kueue-system");
    return secret ? kube::kubeconfigFromSecret(*secret) : "";
  }

  std::uint64_t revision(const std::string& cluster) { return env_->cluster(cluster).store().resourceVersion(); }

  // Nothing but the command writes from here: the adapter stopped, the stand-ins idle.
  void quiesce() {
    stopAdapter();
    ASSERT_TRUE(test::eventually([&] { return env_->kueuesIdle(); }));
  }

  // The resourceVersions of the objects add-worker writes on the manager.
  std::vector<std::string> managerObjectRevisions() {
    std::vector<std::string> out;
    for (const auto& object : {get("manager", {"", "v1", "Secret"}, kWorker + "-secret", "kueue-system"),
                               get("manager", api::kMultiKueueClusterGvk, kWorker, ""),
                               get("manager", api::kMultiKueueConfigGvk, "multikueue-config", "")})
      out.push_back(object ? object->at("metadata").value("resourceVersion", "") : "absent");
    return out;
  }

  test::TempDir dir_{"mka-add-worker"};
  std::map<std::string, std::filesystem::path> kubeconfigs_;
};

class AddWorker : public ::testing::Test, protected Onboarding {
 protected:
  void SetUp() override { setUp(); }
  void TearDown() override { tearDownEnvironment(); }
};

// A refused command writes nothing: one environment, quiet and with a second
// MultiKueueConfig, serves every case of a table.
class AddWorkerRefused : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    onboarding_ = std::make_unique<Onboarding>();
    onboarding_->setUp();
    onboarding_->quiesce();
    onboarding_->env_->create("manager", {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                          {"kind", "MultiKueueConfig"},
                                          {"metadata", {{"name", "other-config"}}},
                                          {"spec", {{"clusters", {"worker1"}}}}});
    ready_ = !HasFatalFailure();
  }
  static void TearDownTestSuite() {
    ready_ = false;
    if (onboarding_) onboarding_->tearDownEnvironment();
    onboarding_.reset();
  }
  void SetUp() override { ASSERT_TRUE(ready_) << "the environment was not set up (SetUpTestSuite failed)"; }

  inline static std::unique_ptr<Onboarding> onboarding_;
  inline static bool ready_ = false;
};

// Whether RBAC would allow `r` by the ClusterRole's rules.
bool allowed(const nlohmann::ordered_json& rules, const sandbox::RecordedRequest& r) {
  const std::string resource = r.resource + (r.subresource.empty() ? "" : "/" + r.subresource);
  const auto has = [](const nlohmann::ordered_json& list, const std::string& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  return std::any_of(rules.begin(), rules.end(), [&](const auto& rule) {
    return has(rule["apiGroups"], r.group) && has(rule["resources"], resource) && has(rule["verbs"], r.verb);
  });
}

std::string run(const std::string& command, int& status) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    status = -1;
    return "popen failed";
  }
  char buffer[4096];
  while (const auto n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  status = ::pclose(pipe);
  return output;
}

TEST_F(AddWorker, ConnectsTheWorkerAndAJobRunsThere) {
  env_->cluster(kWorker).recordRequests(true);
  const auto added = add(options());
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_THAT(added.out, HasSubstr("ServiceAccount kueue-system/multikueue-adapter-dispatcher created"));
  EXPECT_THAT(added.out, HasSubstr("MultiKueueCluster worker2 created"));
  EXPECT_EQ(configClusters(), (std::vector<std::string>{"worker1", kWorker}));

  // Connected through the new kubeconfig: Active (an Event in dispatcher mode), and a job runs.
  ASSERT_TRUE(awaitReconnect(kWorker)) << "the dispatch loop did not connect to " << kWorker;
  const auto active = [&] {
    for (const auto& e : events(kWorker))
      if (e.value("reason", "") == "Active" && e.value("type", "") == "Normal") return true;
    return false;
  };
  // The cluster's next reconcile (on the fake clock) records the state.
  bool recorded = false;
  for (int round = 0; round < 5 && !recorded; ++round) {
    advance(std::chrono::seconds{1});
    recorded = test::eventually(active, std::chrono::seconds{2});
  }
  EXPECT_TRUE(recorded) << "no Normal Active Event on MultiKueueCluster " << kWorker;
  const auto [workload, worker] = runOnAWorker(kPipelineRun, "pr-onboarded");
  EXPECT_EQ(worker, kWorker);

  // kubectl with the stored kubeconfig, as an operator would check it.
  const auto kubeconfig = dir_.write("stored.kubeconfig", storedKubeconfig());
  int status = 0;
  const auto listed =
      run("kubectl --request-timeout=30s --kubeconfig " + kubeconfig.string() + " get workloads -A", status);
  EXPECT_EQ(status, 0) << listed;
  EXPECT_THAT(listed, HasSubstr(workload));

  // Every call the dispatch loop made as the ServiceAccount is granted by its ClusterRole.
  const auto cfg = config::loadConfigurationFile(options().configFile);
  ASSERT_TRUE(cfg.ok());
  const auto rules = deploy::workerClusterRoleRules(*cfg.config);
  std::size_t calls = 0;
  for (const auto& r : env_->cluster(kWorker).recordedRequests()) {
    if (r.user != kServiceAccountUser) continue;
    ++calls;
    EXPECT_TRUE(allowed(rules, r)) << r.verb << " " << r.group << "/" << r.resource << "/" << r.subresource
                                   << " is not granted: add it to include/mka/deploy/worker_access.h";
  }
  EXPECT_GT(calls, 0u) << "the dispatch loop never authenticated as the ServiceAccount";
}

// A worker without one dispatched kind's CRD is onboarded all the same: the dispatch loop keeps
// it for the kinds it serves (multikueue/cluster_registry.h), so add-worker notes the missing
// kind instead of refusing, and the other kinds' jobs run there.
TEST_F(AddWorker, AWorkerWithoutAKindsCrdIsAddedWithANoteAndTakesTheOtherKinds) {
  env_->client(kWorker).remove({"apiextensions.k8s.io", "v1", "CustomResourceDefinition"}, "", "workflows.argoproj.io");
  const auto added = add(options());
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_THAT(added.err, HasSubstr("note: worker (context worker2, https://"));
  EXPECT_THAT(added.err, HasSubstr(" does not serve Workflow.v1alpha1.argoproj.io: their jobs go to other workers "
                                   "until their CRDs are installed there"));
  EXPECT_THAT(added.err, Not(HasSubstr("PipelineRun")));
  EXPECT_THAT(added.out, HasSubstr("MultiKueueCluster worker2 created"));
  EXPECT_EQ(configClusters(), (std::vector<std::string>{"worker1", kWorker}));
  ASSERT_TRUE(awaitReconnect(kWorker)) << "the dispatch loop did not connect to " << kWorker;
  EXPECT_EQ(runOnAWorker(kPipelineRun, "pr-without-argo").second, kWorker);
}

// The worker's ClusterRole names each kind by the resource the worker serves it as: a
// configuration that says otherwise is refused before anything is written.
TEST_F(AddWorker, AResourceTheWorkerDoesNotServeIsRefused) {
  auto o = options();
  o.configFile = dir_.write("config.yaml",
                            "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                            "multiKueue:\n  externalFrameworks:\n  - name: PipelineRun.v1.tekton.dev\n"
                            "    resource: pipelinerunz\n");
  quiesce();
  const auto manager = revision("manager"), worker = revision(kWorker);
  const auto refused = add(o);
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err,
              HasSubstr("serves PipelineRun (tekton.dev/v1) as resource pipelineruns, but " + o.configFile.string() +
                        " says multiKueue.externalFrameworks[0].resource: pipelinerunz: write resource: "
                        "pipelineruns"));
  EXPECT_EQ(revision(kWorker), worker);
  EXPECT_EQ(revision("manager"), manager);
}

TEST_F(AddWorker, DryRunPrintsBothClustersAndWritesNothing) {
  quiesce();
  const auto manager = revision("manager"), worker = revision(kWorker);
  auto o = options();
  o.dryRun = true;
  const auto printed = add(o);
  ASSERT_EQ(printed.code, 0) << printed.err;
  for (const auto* text : {"kind: ServiceAccount", "kind: ClusterRole", "kind: ClusterRoleBinding",
                           "type: kubernetes.io/service-account-token", "kind: MultiKueueCluster",
                           "location: worker2-secret", "kind: MultiKueueConfig", "<the token",
                           "On the worker, worker (context worker2", "On the manager, manager (context manager"})
    EXPECT_THAT(printed.out, HasSubstr(text));
  EXPECT_EQ(revision("manager"), manager);
  EXPECT_EQ(revision(kWorker), worker);
}

TEST_F(AddWorker, SecondRunChangesNothing) {
  ASSERT_EQ(add(options()).code, 0);
  // The dispatch loop writes on the manager meanwhile (Events): add-worker's own objects are compared.
  const auto manager = managerObjectRevisions();
  const auto worker = revision(kWorker);
  const auto again = add(options());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing changed"));
  EXPECT_THAT(again.out, Not(HasSubstr(" created")));
  EXPECT_THAT(again.out, Not(HasSubstr(" updated")));
  EXPECT_EQ(revision(kWorker), worker);
  EXPECT_EQ(managerObjectRevisions(), manager);
  EXPECT_EQ(configClusters(), (std::vector<std::string>{"worker1", kWorker}));
}

TEST_F(AddWorker, RemoveWorkerLeavesNothingBehind) {
  ASSERT_EQ(add(options()).code, 0);
  const auto kubeconfig = storedKubeconfig();
  ASSERT_FALSE(kubeconfig.empty());
  const auto removed = remove(options());
  ASSERT_EQ(removed.code, 0) << removed.err;
  EXPECT_EQ(configClusters(), (std::vector<std::string>{"worker1"}));
  EXPECT_FALSE(get("manager", api::kMultiKueueClusterGvk, kWorker, ""));
  EXPECT_FALSE(get("manager", {"", "v1", "Secret"}, kWorker + "-secret", "kueue-system"));
  const auto names = app::workerAccessNames(config_);
  EXPECT_FALSE(get(kWorker, {"", "v1", "ServiceAccount"}, names.serviceAccount, "kueue-system"));
  EXPECT_FALSE(get(kWorker, {"", "v1", "Secret"}, names.tokenSecret, "kueue-system"));
  EXPECT_FALSE(get(kWorker, {"rbac.authorization.k8s.io", "v1", "ClusterRole"}, names.serviceAccount, ""));
  EXPECT_FALSE(get(kWorker, {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"}, names.serviceAccount, ""));

  // The old token no longer authenticates.
  kube::Client old(std::make_shared<kube::RestClient>(kube::restConfigFor(kube::Kubeconfig::parse(kubeconfig))));
  try {
    old.list(api::kWorkloadGvk, "");
    ADD_FAILURE() << "the removed ServiceAccount's token still works";
  } catch (const kube::ApiError& e) {
    EXPECT_EQ(e.reason(), kube::Reason::Unauthorized) << e.what();
  }
  const auto again = remove(options());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing to remove"));
}

struct AddWorkerRefusal {
  std::string name;
  std::function<void(app::WorkerCommandOptions&)> change;
  bool remove = false;
  std::vector<std::string> messages;
};
std::vector<AddWorkerRefusal> addWorkerRefusals() {
  return {
      {"several MultiKueueConfigs",
       {},
       false,
       {"manager (context manager, https://", "2 MultiKueueConfigs exist (multikueue-config, other-config)",
        "--multikueue-config"}},
      {"a missing MultiKueueConfig",
       [](auto& o) { o.multiKueueConfig = "nowhere"; },
       false,
       {"manager (context manager", "MultiKueueConfig nowhere not found", "multikueue-config, other-config"}},
      {"an unreadable worker kubeconfig",
       [](auto& o) { o.workerKubeconfig = "/nonexistent/worker.kubeconfig"; },
       false,
       {"worker: cannot use its kubeconfig", "/nonexistent/worker.kubeconfig"}},
      {"removing the last cluster of a MultiKueueConfig",
       [](auto& o) {
         o.name = "worker1";
         o.multiKueueConfig = "other-config";
       },
       true,
       {"manager (context manager", "MultiKueueConfig other-config lists only worker1", "at least one cluster"}},
  };
}

MKA_TABLE_TEST_F(AddWorkerRefused, FailuresNameTheClusterAndTheObjectAndWriteNothing, AddWorkerRefusal,
                 addWorkerRefusals()) {
  const auto& c = testCase();
  auto& env = *onboarding_;
  const auto manager = env.revision("manager"), worker = env.revision(kWorker);
  auto o = env.options();
  o.multiKueueConfig = "";
  if (c.change) c.change(o);
  const auto outcome = c.remove ? env.remove(o) : env.add(o);
  EXPECT_EQ(outcome.code, 1);
  for (const auto& m : c.messages) EXPECT_THAT(outcome.err, HasSubstr(m));
  EXPECT_EQ(env.revision(kWorker), worker);
  EXPECT_EQ(env.revision("manager"), manager);
}

}  // namespace onboarding_test
}  // namespace mka::e2e
