#include "mka/demo/environment.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/config/loader.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/rate_limiter.h"
#include "mka/yaml/json.h"

namespace mka::demo {

namespace {
// What each PipelineRun's Workload requests one of (the integration's built-in Tekton profile).
constexpr const char* kJobCountResource = "tekton.dev/pipelineruns";
}  // namespace

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kKueueNamespace = "kueue-system";

std::vector<fs::path> yamlFilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
  }
  if (ec) throw Error(dir.string() + ": cannot list the directory: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<fs::path> findUpwards(const fs::path& start, const std::vector<fs::path>& relatives) {
  for (fs::path dir = fs::absolute(start); !dir.empty(); dir = dir.parent_path()) {
    for (const auto& relative : relatives) {
      std::error_code ec;
      if (fs::is_directory(dir / relative, ec)) return (dir / relative).lexically_normal();
    }
    if (dir == dir.parent_path()) break;
  }
  return std::nullopt;
}

}  // namespace

fs::path Environment::findCrdDirectory(const fs::path& start) {
  // Our curated copies first (a small Argo CRD); the shared folder beside the checkout else.
  if (auto dir = findUpwards(start, {fs::path("test") / "fixtures" / "crds", fs::path("shared") / "crds"})) return *dir;
  throw Error("no CRD directory found from " + start.string() +
              ": run from the repository checkout (test/fixtures/crds), or pass the CRD folder explicitly");
}

fs::path Environment::findSamplesDirectory(const fs::path& start) {
  if (auto dir = findUpwards(start, {fs::path("manifests") / "samples"})) return *dir;
  throw Error("no manifests/samples directory found from " + start.string() + ": run from the repository checkout");
}

Environment::Environment(Options options) : options_(std::move(options)) {
  clock_ = options_.clock != nullptr ? options_.clock : &kube::systemClock();
  sandbox_ = std::make_unique<sandbox::Sandbox>(*clock_);
  const auto crdFiles = yamlFilesIn(options_.crdDirectory);
  if (crdFiles.empty()) throw Error(options_.crdDirectory.string() + ": holds no CRD file (*.yaml)");

  std::vector<std::string> names = options_.managers;
  names.insert(names.end(), options_.workers.begin(), options_.workers.end());
  for (const auto& name : names) {
    sandbox::ClusterOptions cluster;
    cluster.name = name;
    cluster.crdFiles = crdFiles;
    cluster.watchHistory = options_.watchHistory;
    auto& started = sandbox_->addCluster(cluster);
    const auto rest = kube::restConfigFor(kube::Kubeconfig::parse(started.kubeconfig(), name + ".kubeconfig"));
    clients_[name] = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(rest, options_.clientOptions));
  }

  // Kueue's objects: each manager's from manifests/samples/kueue (every manager shares every
  // worker), the workers' from manifests/samples/worker.
  std::vector<json> managerObjects;
  for (const auto& file : yamlFilesIn(options_.samplesDirectory / "kueue")) {
    for (auto& object : yaml::parseJson(readFile(file), yaml::Limits::forManifests())) {
      if (object.value("kind", "") == "MultiKueueConfig") object["spec"]["clusters"] = options_.workers;
      if (object.value("kind", "") == "MultiKueueCluster") continue;  // made below, one per worker
      managerObjects.push_back(std::move(object));
    }
  }
  for (const auto& manager : options_.managers) {
    create(manager, json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kKueueNamespace}}}});
    for (const auto& object : managerObjects) create(manager, object);
    for (const auto& worker : options_.workers) {
      create(manager, json{{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", worker + "-secret"}, {"namespace", kKueueNamespace}}},
                           {"data", {{"kubeconfig", base64Encode(sandbox_->cluster(worker).kubeconfig())}}}});
      create(manager, json{{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                           {"kind", "MultiKueueCluster"},
                           {"metadata", {{"name", worker}}},
                           {"spec",
                            {{"clusterSource",
                              {{"kubeConfig", {{"locationType", "Secret"}, {"location", worker + "-secret"}}}}}}}});
    }
  }
  const auto workerSamples =
      options_.workerSamplesDirectory.empty() ? options_.samplesDirectory / "worker" : options_.workerSamplesDirectory;
  for (const auto& worker : options_.workers)
    for (const auto& file : yamlFilesIn(workerSamples)) createFromFile(worker, file);
  for (const auto& [worker, quota] : options_.workerJobQuota) setJobQuota(worker, quota);

  for (const auto& name : names) {
    standin::KueueStandIn::Options o;
    const bool manager = std::find(options_.managers.begin(), options_.managers.end(), name) != options_.managers.end();
    o.role = manager ? standin::KueueStandIn::Role::Manager : standin::KueueStandIn::Role::Worker;
    o.capacity = options_.workerCapacity;
    o.pollInterval = options_.pollInterval;
    o.readmitDelay = options_.readmitDelay;
    // Kueue 0.19 and later run with waitForPodsReady and these settings unless told otherwise.
    o.waitForPodsReady = standin::KueueStandIn::WaitForPodsReady{};
    auto kueue = std::make_unique<standin::KueueStandIn>(sandbox_->cluster(name).api(), *clock_, o);
    kueues_[name] = std::move(kueue);
    if (manager || options_.startWorkerKueues) startKueue(name);
  }
  for (const auto& name : names) {
    for (const auto& [kind, style] : {std::pair{"PipelineRun", standin::JobControllerStandIn::Style::Tekton},
                                      std::pair{"Workflow", standin::JobControllerStandIn::Style::Argo}}) {
      standin::JobControllerStandIn::Options o;
      o.style = style;
      o.runTime = options_.runTime;
      o.pollInterval = options_.pollInterval;
      auto controller = std::make_unique<standin::JobControllerStandIn>(sandbox_->cluster(name).api(), *clock_, o);
      controller->start();
      frameworks_[name + "/" + kind] = std::move(controller);
    }
  }
  if (options_.workerIntegrations)
    for (const auto& worker : options_.workers) startIntegration(worker);
}

// A worker's adapter: dispatch off, the integration on (manifests/overlays/worker).
void Environment::startIntegration(const std::string& worker) {
  auto workerConfig = adapterConfiguration();
  workerConfig.multiKueue.externalFrameworks.clear();
  auto controller = std::make_unique<integration::IntegrationController>(
      client(worker), jobkind::integratedKindsOf(workerConfig), *clock_, integration::IntegrationController::Options{});
  controller->start();
  integrations_[worker] = std::move(controller);
}

void Environment::restartIntegration(const std::string& worker) {
  auto it = integrations_.find(worker);
  if (it == integrations_.end())
    throw Error("cluster \"" + worker + "\" runs no integration of the environment's (only workers do, with " +
                "Options::workerIntegrations)");
  it->second->stop();
  it->second.reset();
  startIntegration(worker);
}

Environment::~Environment() {
  for (auto& [name, integration] : integrations_) integration->stop();
  for (auto& [name, controller] : frameworks_) controller->stop();
  for (auto& [name, kueue] : kueues_) kueue->stop();
  if (sandbox_) sandbox_->stop();
}

sandbox::Sandbox& Environment::sandbox() { return *sandbox_; }
sandbox::Cluster& Environment::cluster(const std::string& name) { return sandbox_->cluster(name); }

standin::KueueStandIn& Environment::kueue(const std::string& name) {
  auto it = kueues_.find(name);
  if (it == kueues_.end()) throw Error("environment: no cluster named " + name);
  return *it->second;
}

kube::Client& Environment::client(const std::string& name) {
  auto it = clients_.find(name);
  if (it == clients_.end()) throw Error("environment: no cluster named " + name);
  return *it->second;
}

const Clock& Environment::clock() const { return *clock_; }

config::Configuration Environment::adapterConfiguration() const {
  const std::string text = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
managedByDefaulting: MultiKueueQueues
waitForPodsReady: {enable: true}
dispatch: {enabled: true}
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
  auto loaded = config::parseConfiguration(text);
  if (!loaded.ok()) throw ValidationError(loaded.errors);
  auto config = *loaded.config;
  config.clientConnection.qps = 0;  // off: the sandbox is local (a file cannot say 0, code can)
  return config;
}

void Environment::setJobQuota(const std::string& cluster, std::int64_t quota) {
  const sandbox::ResourceRef ref{"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "cluster-queue", ""};
  auto cq = sandbox_->cluster(cluster).api().get(ref);
  auto& groups = cq["spec"]["resourceGroups"];
  if (!groups.is_array() || groups.empty() || groups[0]["flavors"].empty())
    throw Error("cluster " + cluster +
                ": ClusterQueue cluster-queue has no resource group to hold tekton.dev/pipelineruns");
  auto& group = groups[0];
  auto& covered = group["coveredResources"];
  if (std::find(covered.begin(), covered.end(), json(kJobCountResource)) == covered.end()) {
    covered.push_back(kJobCountResource);
    group["flavors"][0]["resources"].push_back({{"name", kJobCountResource}, {"nominalQuota", "0"}});
  }
  for (auto& flavor : group["flavors"])
    for (auto& resource : flavor["resources"])
      if (resource.value("name", "") == kJobCountResource) resource["nominalQuota"] = std::to_string(quota);
  sandbox_->cluster(cluster).api().update(ref, cq);
}

std::vector<json> Environment::createFromFile(const std::string& cluster, const fs::path& file) {
  std::vector<json> created;
  for (const auto& object : yaml::parseJson(readFile(file), yaml::Limits::forManifests())) {
    try {
      created.push_back(create(cluster, object));
    } catch (const std::exception& e) {
      throw Error(file.string() + ": " + object.value("kind", "") + " " +
                  object.value("metadata", json::object()).value("name", "") + " in cluster " + cluster + ": " +
                  e.what());
    }
  }
  return created;
}

json Environment::create(const std::string& cluster, const json& object) { return client(cluster).create(object); }

void Environment::startKueue(const std::string& name) {
  kueue(name).start();
  started_.insert(name);
}

std::vector<std::string> Environment::invalidWrites() {
  std::vector<std::string> out;
  for (const auto& name : sandbox_->clusterNames())
    for (const auto& write : sandbox_->cluster(name).invalidWrites()) out.push_back(name + ": " + write);
  return out;
}

bool Environment::kueuesIdle() const {
  // An unreachable cluster's integration retries against its own API server until the cluster
  // is back: it can make no progress, and nothing waits for it meanwhile.
  return std::all_of(started_.begin(), started_.end(), [&](const auto& name) { return kueues_.at(name)->idle(); }) &&
         std::all_of(integrations_.begin(), integrations_.end(),
                     [&](const auto& i) { return sandbox_->cluster(i.first).unreachable() || i.second->idle(); });
}

standin::JobControllerStandIn* Environment::frameworkController(const std::string& cluster, const std::string& kind) {
  auto it = frameworks_.find(cluster + "/" + kind);
  return it == frameworks_.end() ? nullptr : it->second.get();
}

void Environment::pokeKueues() {
  for (auto& [name, kueue] : kueues_) kueue->poke();
}

}  // namespace mka::demo
