// The RBAC table (include/mka/deploy/rbac.h) against the calls the code really makes. The
// adapter runs as deployed (`serve`, the Service, with the configurations of manifests/base and
// manifests/overlays/worker) on a sandbox manager and worker, with a client certificate for a user
// standing for its ServiceAccount, so that the sandbox records each of its requests under it.
// Jobs go through the paths the code has (webhooks, dispatch, finish, a stale Workload, a missing
// priority class, conflicts); then every recorded call must be allowed by the rendered
// ClusterRole and Roles of that role, and every verb of every table row must have been called,
// except the rows the table marks as out of this test's reach.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "mka/api/kueue.h"
#include "mka/api/workload_status.h"
#include "mka/app/dispatch_runner.h"
#include "mka/app/service.h"
#include "mka/common/base64.h"
#include "mka/config/loader.h"
#include "mka/demo/environment.h"
#include "mka/deploy/manifests.h"
#include "mka/integration/workload_builder.h"
#include "mka/kube/api_error.h"
#include "mka/net/pki.h"
#include "mka/observability/health.h"
#include "mka/yaml/json.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

namespace mka::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::eventually;

constexpr std::chrono::seconds kFlowTimeout{60};
const std::string kManager = "manager";
const std::string kWorker = "worker1";
// The user of the adapters' client certificates, standing for their ServiceAccount (whose name
// is longer than a certificate's CN may be): the sandbox records their requests under it.
const std::string kAdapterUser = "multikueue-adapter-serviceaccount";
const api::GroupVersionKind kPipelineRunGvk{"tekton.dev", "v1", "PipelineRun"};
const api::GroupVersionKind kWorkflowGvk{"argoproj.io", "v1alpha1", "Workflow"};

std::string readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw Error(file.string() + ": cannot read the file");
  return text.str();
}

json plain(const nlohmann::ordered_json& object) { return json::parse(object.dump()); }

// One adapter as deployed on one cluster: its configuration, its rendered manifests, and `serve`
// authenticated as kAdapterUser.
struct Adapter {
  std::string cluster;
  deploy::Role role;
  config::Configuration config;
  std::vector<deploy::Manifest> manifests;
  std::unique_ptr<app::Service> service;

  // The first rendered object of `kind`.
  json object(const std::string& kind) const {
    for (const auto& m : manifests)
      if (m.object.value("kind", "") == kind) return plain(m.object);
    ADD_FAILURE() << cluster << ": no " << kind << " rendered";
    return json::object();
  }
};

// What kube-apiserver's RBAC authorizer answers for `request` from the rendered ClusterRoles and
// Roles bound to the ServiceAccount.
bool allowedBy(const std::vector<deploy::Manifest>& manifests, const sandbox::RecordedRequest& request) {
  std::set<std::pair<std::string, std::string>> bound;  // (kind, namespace/name) of bound roles
  for (const auto& m : manifests) {
    const auto object = plain(m.object);
    const auto kind = object.value("kind", "");
    if (kind != "ClusterRoleBinding" && kind != "RoleBinding") continue;
    const bool toUs = std::any_of(object["subjects"].begin(), object["subjects"].end(), [](const json& s) {
      return s.value("kind", "") == "ServiceAccount" && s.value("namespace", "") == deploy::kNamespace &&
             s.value("name", "") == deploy::kName;
    });
    if (!toUs) continue;
    const std::string ns = kind == "RoleBinding" ? object["metadata"].value("namespace", "") : "";
    bound.insert({object["roleRef"].value("kind", ""), ns + "/" + object["roleRef"].value("name", "")});
  }
  const std::string resource = request.resource + (request.subresource.empty() ? "" : "/" + request.subresource);
  const auto has = [](const json& list, const std::string& value) {
    return std::find(list.begin(), list.end(), json(value)) != list.end();
  };
  for (const auto& m : manifests) {
    const auto object = plain(m.object);
    const auto kind = object.value("kind", "");
    if (kind != "ClusterRole" && kind != "Role") continue;
    const std::string ns = object["metadata"].value("namespace", "");
    if (!bound.contains({kind, ns + "/" + object["metadata"].value("name", "")})) continue;
    if (kind == "Role" && ns != request.namespace_) continue;
    for (const auto& rule : object.value("rules", json::array()))
      if (has(rule["apiGroups"], request.group) && has(rule["resources"], resource) && has(rule["verbs"], request.verb))
        return true;
  }
  return false;
}

std::string describe(const sandbox::RecordedRequest& r) {
  return r.verb + " " + (r.group.empty() ? "core" : r.group) + "/" + r.resource +
         (r.subresource.empty() ? "" : "/" + r.subresource) + (r.namespace_.empty() ? "" : " in " + r.namespace_) +
         (r.name.empty() ? "" : " (" + r.name + ")");
}

class RbacCoverage : public ::testing::Test {
 protected:
  void SetUp() override {
    demo::Environment::Options options;
    options.workers = {kWorker};
    options.crdDirectory = std::string(MKA_FIXTURES_DIR) + "/crds";
    options.samplesDirectory = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
    options.runTime = std::chrono::milliseconds{300};
    options.workerIntegrations = false;  // the worker's adapter is the one under test
    options.clientOptions.userAgent = "rbac-coverage-test";
    env_ = std::make_unique<demo::Environment>(options);

    // The webhooks' serving certificate, for the name the rendered Service gives them.
    const auto serving = ca_.issue(
        {.dnsNames = {std::string(deploy::kWebhookService) + "." + std::string(deploy::kNamespace) + ".svc"}});
    dir_.write("certs/tls.crt", serving.certPem);
    dir_.write("certs/tls.key", serving.keyPem);
  }

  void TearDown() override {
    for (auto& a : adapters_)
      if (a.service) a.service->stop();
    if (env_) {
      EXPECT_THAT(env_->invalidWrites(), ::testing::IsEmpty());
    }
  }

  // A kubeconfig that authenticates as the adapter's ServiceAccount with a client certificate
  // of the cluster's CA.
  fs::path serviceAccountKubeconfig(const std::string& cluster) {
    auto& c = env_->cluster(cluster);
    const auto cert = c.clientCertificate(kAdapterUser, {"system:serviceaccounts"});
    const json kubeconfig = {
        {"apiVersion", "v1"},
        {"kind", "Config"},
        {"clusters",
         {{{"name", cluster},
           {"cluster", {{"server", c.server()}, {"certificate-authority-data", base64Encode(c.caPem())}}}}}},
        {"users",
         {{{"name", "adapter"},
           {"user",
            {{"client-certificate-data", base64Encode(cert.certPem)},
             {"client-key-data", base64Encode(cert.keyPem)}}}}}},
        {"contexts", {{{"name", cluster}, {"context", {{"cluster", cluster}, {"user", "adapter"}}}}}},
        {"current-context", cluster}};
    return dir_.write(cluster + ".kubeconfig", kubeconfig.dump());
  }

  static std::string podName(const std::string& cluster) { return "multikueue-adapter-" + cluster + "-0"; }

  // The adapter of `role` on `cluster` with a shipped configuration file: its namespace created
  // from the rendered manifests, then `serve`, until it leads with its controllers running.
  Adapter& start(const std::string& cluster, deploy::Role role, const fs::path& configFile,
                 const std::function<std::string(std::string)>& edit = {}) {
    const auto text = edit ? edit(readText(configFile)) : readText(configFile);
    auto loaded = config::parseConfiguration(text);
    if (!loaded.ok()) throw ValidationError(loaded.errors);
    Adapter& a = adapters_.emplace_back();
    a.cluster = cluster;
    a.role = role;
    a.config = *loaded.config;
    a.manifests = deploy::renderManifests(a.config, text, {.role = role});
    env_->create(cluster, a.object("Namespace"));

    app::ServeOptions so;
    so.configFile = dir_.write(cluster + "/config.yaml", text);
    // As in a pod: no --kubeconfig (which would start the queue index whatever the policy),
    // the cluster found the way the pod's service account is.
    ::setenv("KUBECONFIG", serviceAccountKubeconfig(cluster).c_str(), 1);
    // The downward API's variables of the rendered Deployment.
    ::setenv("POD_NAME", podName(cluster).c_str(), 1);
    ::setenv("POD_NAMESPACE", std::string(deploy::kNamespace).c_str(), 1);
    so.certDir = (dir_ / "certs").string();
    so.webhookBindAddress = "127.0.0.1:0";
    so.healthProbeBindAddress = "127.0.0.1:0";
    so.metricsBindAddress = "127.0.0.1:0";
    a.service = std::make_unique<app::Service>(so);
    a.service->start();
    for (const char* name : {"KUBECONFIG", "POD_NAME", "POD_NAMESPACE"}) ::unsetenv(name);
    const bool dispatch = loaded.config->dispatch.enabled;
    EXPECT_TRUE(eventually(
        [&] {
          auto* runner = a.service->dispatchRunner();
          return a.service->health().ready(false).ok && runner != nullptr && runner->integrating() &&
                 (!dispatch || runner->dispatching());
        },
        kFlowTimeout))
        << cluster << ": the adapter did not start its controllers";
    return a;
  }

  // The manager's webhooks as rendered, their Service resolved to the adapter and their CA set.
  void registerWebhooks(const Adapter& a) {
    env_->sandbox().services().expose(std::string(deploy::kNamespace), std::string(deploy::kWebhookService), 443,
                                      "127.0.0.1", a.service->webhookPort());
    for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
      auto configuration = a.object(kind);
      for (auto& hook : configuration["webhooks"]) hook["clientConfig"]["caBundle"] = base64Encode(ca_.certPem());
      env_->create(a.cluster, configuration);
    }
  }

  // A job from manifests/samples/jobs, without a managedBy marker: the webhook sets it.
  json job(const std::string& sample, const std::string& name, const std::string& queue = "user-queue") {
    auto object = yaml::parseJson(readText(fs::path(MKA_SOURCE_DIR) / "manifests" / "samples" / "jobs" / sample),
                                  yaml::Limits::forManifests())
                      .at(0);
    object["metadata"]["name"] = name;
    object["metadata"]["labels"][std::string(api::kQueueNameLabel)] = queue;
    return object;
  }

  std::optional<json> get(const std::string& cluster, const api::GroupVersionKind& gvk, const std::string& name) {
    try {
      return env_->client(cluster).get(gvk, "default", name);
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return std::nullopt;
      throw;
    }
  }

  bool recorded(const std::string& cluster, const std::string& verb, const std::string& resource,
                const std::string& name) {
    const auto all = env_->cluster(cluster).recordedRequests();
    return std::any_of(all.begin(), all.end(), [&](const sandbox::RecordedRequest& r) {
      return r.user == kAdapterUser && r.verb == verb && r.resource == resource && r.name == name;
    });
  }

  // A Workload whose owner, named by Kueue's job-owner annotations, does not exist: the dispatch
  // loop looks for it past its cache.
  void ownerMissing(const api::GroupVersionKind& gvk, const std::string& name) {
    env_->create(kManager, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                            {"kind", "Workload"},
                            {"metadata",
                             {{"name", name},
                              {"namespace", "default"},
                              {"annotations",
                               {{std::string(api::kJobOwnerGvkAnnotation), gvk.goString()},
                                {std::string(api::kJobOwnerNameAnnotation), name}}}}},
                            {"spec",
                             {{"queueName", "user-queue"},
                              {"podSets",
                               {{{"name", "main"},
                                 {"count", 1},
                                 {"template",
                                  {{"spec",
                                    {{"restartPolicy", "Never"},
                                     {"containers",
                                      {{{"name", "c"},
                                        {"image", "busybox"},
                                        {"resources", {{"requests", {{"cpu", "100m"}}}}}}}}}}}}}}}}}});
  }

  net::CertificateAuthority ca_{"rbac coverage CA"};
  test::TempDir dir_{"mka-rbac"};
  std::unique_ptr<demo::Environment> env_;
  std::deque<Adapter> adapters_;
};

TEST_F(RbacCoverage, EveryCallIsGrantedAndEveryGrantIsCalled) {
  for (const auto& cluster : {kManager, kWorker}) env_->cluster(cluster).recordRequests(true);
  const fs::path manifests = fs::path(MKA_SOURCE_DIR) / "manifests";
  // The first write of an AdmissionCheck's Active condition meets a conflict and re-reads it.
  env_->cluster(kManager).faults().failNext(1, 409, {"update", "admissionchecks", "status"});
  start(kWorker, deploy::Role::Worker, manifests / "overlays" / "worker" / "config.yaml");
  // The manager also reaches workers through ClusterProfiles (multiKueue.clusterProfile), so
  // it reads them too.
  auto& manager = start(kManager, deploy::Role::Manager, manifests / "base" / "config.yaml", [](std::string text) {
    const std::string section = "multiKueue:\n";
    const auto at = text.find(section);
    EXPECT_NE(at, std::string::npos) << "the shipped configuration has no multiKueue section";
    text.insert(at + section.size(),
                "  clusterProfile:\n    accessProviders:\n    - name: token-provider\n      execConfig: "
                "{command: /usr/local/bin/cp-creds, apiVersion: client.authentication.k8s.io/v1, "
                "interactiveMode: Never}\n");
    // PipelineRuns take the Secrets, ConfigMaps and ServiceAccounts they name to their worker.
    const std::string pipelineRuns = "  - name: PipelineRun.v1.tekton.dev\n";
    const auto entry = text.find(pipelineRuns);
    EXPECT_NE(entry, std::string::npos) << "the shipped configuration dispatches no PipelineRuns";
    text.insert(entry + pipelineRuns.size(), "    syncDependencies: true\n");
    return text + "placement: {enabled: true}\n";  // and runs the built-in placement controller
  });
  ASSERT_FALSE(::testing::Test::HasFailure());
  registerWebhooks(manager);
  env_->create(kManager, manager.object("ConfigMap"));  // through /validate-config

  // Workloads whose owners are missing: the dispatch loop reads each kind past its cache.
  ownerMissing(kPipelineRunGvk, "ghost-pipelinerun");
  ownerMissing(kWorkflowGvk, "ghost-workflow");
  ASSERT_TRUE(eventually([&] { return recorded(kManager, "get", "pipelineruns", "ghost-pipelinerun"); }, kFlowTimeout));
  ASSERT_TRUE(eventually([&] { return recorded(kManager, "get", "workflows", "ghost-workflow"); }, kFlowTimeout));
  for (const auto* name : {"ghost-pipelinerun", "ghost-workflow"})
    env_->client(kManager).remove(api::kWorkloadGvk, "default", name);

  // A Workflow (integrated on the manager) and a PipelineRun (its Workload made here, as
  // tekton-kueue would) run on the worker and finish; the first status write of the dispatch
  // loop meets a conflict and re-reads the Workload.
  env_->cluster(kManager).faults().failNext(1, 409, {"update", "workloads", "status"});
  const auto wf = env_->create(kManager, job("workflow-hello.yaml", "wf1"));
  EXPECT_EQ(wf["metadata"]["labels"].value("workflows.argoproj.io/controller-instanceid", ""), "multikueue")
      << "the rendered /mutate webhook set the marker";
  const auto wfWorkload = integration::workloadName(kWorkflowGvk, "wf1", wf["metadata"].value("uid", ""));
  auto pending = job("pipelinerun-hello.yaml", "pr1");
  pending["spec"]["status"] = "PipelineRunPending";  // as tekton-kueue's webhook leaves it
  // Its dependencies, read on the manager and copied to the worker.
  env_->create(kManager, {{"apiVersion", "v1"},
                          {"kind", "Secret"},
                          {"metadata", {{"name", "pr1-git"}, {"namespace", "default"}}},
                          {"data", {{"token", "dG9rZW4="}}}});
  env_->create(kManager, {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata", {{"name", "pr1-conf"}, {"namespace", "default"}}},
                          {"data", {{"a", "b"}}}});
  env_->create(kManager, {{"apiVersion", "v1"},
                          {"kind", "ServiceAccount"},
                          {"metadata", {{"name", "pr1-runner"}, {"namespace", "default"}}}});
  pending["spec"]["workspaces"] = json::array({{{"name", "git"}, {"secret", {{"secretName", "pr1-git"}}}},
                                               {{"name", "conf"}, {"configMap", {{"name", "pr1-conf"}}}}});
  pending["spec"]["taskRunTemplate"] = {{"serviceAccountName", "pr1-runner"}};
  auto pr = env_->create(kManager, pending);
  EXPECT_EQ(pr["spec"].value("managedBy", ""), api::kMultiKueueControllerName);
  const auto podSets = integration::podSetsFor(pr, *config::integrationProfile(kPipelineRunGvk));
  ASSERT_FALSE(podSets.error);
  const auto prWorkload = env_->create(kManager, integration::newWorkload(pr, kPipelineRunGvk, podSets.podSets, {}));
  for (const auto& name : {wfWorkload, prWorkload["metadata"].value("name", "")}) {
    ASSERT_TRUE(eventually(
        [&] {
          const auto wl = get(kManager, api::kWorkloadGvk, name);
          return wl && api::isFinished(*wl) && !get(kWorker, api::kWorkloadGvk, name);
        },
        kFlowTimeout))
        << name << " did not finish on the worker";
  }
  ASSERT_TRUE(eventually([&] {
    const auto copied = get(kManager, kPipelineRunGvk, "pr1");
    return copied && api::findCondition(*copied, "Succeeded") != nullptr;
  })) << "the PipelineRun's status was not copied back";

  // A stale Workload of a suspended job (other pod sets, the resource-in-use finalizer) is
  // released and deleted; a new queue name reaches the job's Workload.
  auto idle = job("workflow-hello.yaml", "wf-idle", "nowhere");
  idle["spec"]["suspend"] = true;
  idle = env_->create(kManager, idle);
  const auto idleWorkload = integration::workloadName(kWorkflowGvk, "wf-idle", idle["metadata"].value("uid", ""));
  ASSERT_TRUE(eventually([&] { return get(kManager, api::kWorkloadGvk, idleWorkload).has_value(); }));
  auto stale = *get(kManager, api::kWorkloadGvk, idleWorkload);
  stale["metadata"] = {{"name", "wf-idle-stale"},
                       {"namespace", "default"},
                       {"finalizers", json::array({std::string(api::kResourceInUseFinalizer)})},
                       {"ownerReferences", stale["metadata"]["ownerReferences"]}};
  stale["spec"]["podSets"][0]["count"] = 3;
  stale.erase("status");
  env_->create(kManager, stale);
  ASSERT_TRUE(eventually([&] { return !get(kManager, api::kWorkloadGvk, "wf-idle-stale"); }));
  env_->client(kManager).patch(kWorkflowGvk, "default", "wf-idle", kube::PatchType::Merge,
                               {{"metadata", {{"labels", {{std::string(api::kQueueNameLabel), "elsewhere"}}}}}});
  ASSERT_TRUE(eventually([&] {
    return get(kManager, api::kWorkloadGvk, idleWorkload)->at("spec").value("queueName", "") == "elsewhere";
  }));

  // A job naming a priority class that does not exist: the Warning, repeated, patches its count.
  auto classless = job("workflow-hello.yaml", "wf-classless", "nowhere");
  classless["metadata"]["labels"][std::string(api::kPriorityClassLabel)] = "missing";
  classless["spec"]["suspend"] = true;
  env_->create(kManager, classless);
  ASSERT_TRUE(eventually([&] { return recorded(kManager, "get", "workloadpriorityclasses", "missing"); }));
  ASSERT_TRUE(eventually([&] {
    const auto all = env_->cluster(kManager).recordedRequests();
    return std::any_of(all.begin(), all.end(), [](const auto& r) {
      return r.user == kAdapterUser && r.verb == "patch" && r.resource == "events";
    });
  }));

  // A hot reload refused twice: a Warning Event on the replica's Pod, then its count patched.
  const auto refuseReload = [&](int count) {
    std::ofstream(dir_ / kManager / "config.yaml") << "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: "
                                                      "AdapterConfiguration\ndispatch: {enabled: maybe}\n";
    return eventually([&] {
      for (const auto& e : env_->client(kManager).listAll({"", "v1", "Event"}, std::string(deploy::kNamespace)))
        if (e.value("reason", "") == "ConfigReloadFailed" && e.value("count", 0) == count) {
          EXPECT_EQ(e.value("type", ""), "Warning");
          EXPECT_EQ(e["involvedObject"].value("kind", ""), "Pod");
          EXPECT_EQ(e["involvedObject"].value("name", ""), podName(kManager));
          EXPECT_THAT(e.value("message", ""), ::testing::HasSubstr("dispatch.enabled"));
          return true;
        }
      return false;
    });
  };
  ASSERT_TRUE(refuseReload(1)) << "no ConfigReloadFailed Event";
  ASSERT_TRUE(refuseReload(2)) << "the repeated Event's count was not patched";

  // The placement controller (the test plays OCM's scheduler): a Placement decides cluster a,
  // then b, then nothing; the generated MultiKueueCluster edited by hand is put back.
  const api::GroupVersionKind placementGvk{"cluster.open-cluster-management.io", "v1beta1", "Placement"};
  const api::GroupVersionKind mkcGvk{"kueue.x-k8s.io", "v1beta2", "MultiKueueCluster"};
  const api::GroupVersionKind mkConfigGvk{"kueue.x-k8s.io", "v1beta2", "MultiKueueConfig"};
  env_->create(kManager, {{"apiVersion", placementGvk.apiVersion()},
                          {"kind", "Placement"},
                          {"metadata", {{"name", "fleet"}, {"namespace", "kueue-system"}}},
                          {"spec", json::object()}});
  const sandbox::ResourceRef decisions{
      "cluster.open-cluster-management.io", "v1beta1", "placementdecisions", "kueue-system", "", ""};
  auto decision = *env_->cluster(kManager).api().create(
      decisions, {{"apiVersion", placementGvk.apiVersion()},
                  {"kind", "PlacementDecision"},
                  {"metadata",
                   {{"name", "fleet-decision-1"},
                    {"namespace", "kueue-system"},
                    {"labels", {{"cluster.open-cluster-management.io/placement", "fleet"}}}}}});
  auto decide = [&](const std::string& cluster) {
    decision = env_->cluster(kManager).api().get(
        {decisions.group, decisions.version, decisions.plural, decisions.namespace_, "fleet-decision-1", ""});
    decision["status"] = {
        {"decisions", cluster.empty() ? json::array() : json::array({{{"clusterName", cluster}, {"reason", ""}}})}};
    env_->cluster(kManager).api().update(
        {decisions.group, decisions.version, decisions.plural, decisions.namespace_, "fleet-decision-1", "status"},
        decision);
  };
  decide("a");
  env_->create(kManager,
               {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                {"kind", "AdmissionCheck"},
                {"metadata", {{"name", "fleet"}}},
                {"spec",
                 {{"controllerName", "open-cluster-management.io/placement"},
                  {"parameters",
                   {{"apiGroup", "cluster.open-cluster-management.io"}, {"kind", "Placement"}, {"name", "fleet"}}}}}});
  const auto clusterGet = [&](const api::GroupVersionKind& gvk, const std::string& name) -> std::optional<json> {
    try {
      return env_->client(kManager).get(gvk, "", name);
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound) return std::nullopt;
      throw;
    }
  };
  ASSERT_TRUE(eventually([&] { return clusterGet(mkcGvk, "fleet-a").has_value(); }, kFlowTimeout));
  decide("b");
  ASSERT_TRUE(eventually(
      [&] {
        const auto config = clusterGet(mkConfigGvk, "fleet");
        return config && config->at("spec").at("clusters") == json::array({"fleet-b"}) &&
               !clusterGet(mkcGvk, "fleet-a").has_value();
      },
      kFlowTimeout));
  env_->client(kManager).patch(
      mkcGvk, "", "fleet-b", kube::PatchType::Merge,
      {{"spec", {{"clusterSource", {{"clusterProfileRef", nullptr}, {"kubeConfig", {{"location", "hand-edited"}}}}}}}});
  ASSERT_TRUE(eventually(
      [&] {
        const auto mkc = clusterGet(mkcGvk, "fleet-b");
        return mkc &&
               mkc->at("spec").at("clusterSource").value("clusterProfileRef", json::object()).value("name", "") == "b";
      },
      kFlowTimeout))
      << "the generated MultiKueueCluster was not put back";
  decide("");  // nothing decided: the generated config goes
  ASSERT_TRUE(eventually([&] { return !clusterGet(mkConfigGvk, "fleet").has_value(); }, kFlowTimeout));

  // Shut down as a rollout does: the Lease is released. The webhooks go first, as nothing
  // would answer them.
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
    env_->client(kManager).remove({"admissionregistration.k8s.io", "v1", kind}, "", std::string(deploy::kName));
  for (auto& a : adapters_) a.service->stop();
  ASSERT_TRUE(recorded(kManager, "update", "leases", "multikueue-adapter"));

  // Every call the adapters made is allowed by their role's rendered rules.
  std::map<std::string, std::vector<sandbox::RecordedRequest>> calls;  // by cluster
  for (const auto& a : adapters_) {
    for (const auto& r : env_->cluster(a.cluster).recordedRequests()) {
      if (r.user != kAdapterUser) continue;
      EXPECT_THAT(r.userAgent, ::testing::StartsWith("multikueue-adapter/")) << describe(r);  // kube::userAgentFor
      EXPECT_TRUE(allowedBy(a.manifests, r))
          << a.cluster << " (" << deploy::toString(a.role) << "): " << describe(r)
          << " is not granted by the rendered rules: add it to include/mka/deploy/rbac.h";
      calls[a.cluster].push_back(r);
    }
  }

  // Every verb of every table row was called by an adapter whose rules it is in, except the
  // rows marked as out of reach; and those were really not called.
  std::map<const deploy::ApiAccess*, std::set<std::string>> unused, used;
  for (const auto& a : adapters_) {
    for (const auto& g : deploy::grantsFor(a.role, a.config)) {
      const bool called = std::any_of(calls[a.cluster].begin(), calls[a.cluster].end(), [&](const auto& r) {
        return r.verb == g.verb && r.group == g.group &&
               r.resource + (r.subresource.empty() ? "" : "/" + r.subresource) == g.resource &&
               (g.namespace_.empty() || g.namespace_ == r.namespace_);
      });
      const auto what = g.verb + " " + g.group + "/" + g.resource;
      (called ? used : unused)[g.access].insert(what);
    }
  }
  for (const auto& row : deploy::apiAccessTable()) {
    const std::string name = std::string(deploy::toString(row.component)) + ": " + std::string(row.reason);
    if (!row.untested.empty()) {
      EXPECT_THAT(used[&row], ::testing::IsEmpty()) << name << ": marked out of the test's reach, yet called";
      continue;
    }
    EXPECT_FALSE(used[&row].empty() && unused[&row].empty())
        << name << ": not granted for the test's configurations: cover it, or say in `untested` why not";
    for (const auto& what : unused[&row]) {
      if (used[&row].contains(what)) continue;  // granted to both roles, called by one: covered
      ADD_FAILURE() << name << ": " << what
                    << " is granted but nothing called it: remove it from the table, or make the test reach it";
    }
  }
}

}  // namespace
}  // namespace mka::e2e
