#include "dispatch_fixture.h"

#include <fstream>
#include <sstream>

#include "mka/integration/workload_builder.h"
#include "mka/yaml/json.h"

namespace mka::e2e {

using nlohmann::json;

void DispatchFixture::setUpEnvironment(Setup setup) {
  demo::Environment::Options options;
  options.workers = setup.workers;
  options.managers = setup.managers;
  options.crdDirectory = std::string(MKA_FIXTURES_DIR) + "/crds";
  options.samplesDirectory = std::string(MKA_SOURCE_DIR) + "/manifests/samples";
  options.clock = &clock_;
  options.startWorkerKueues = setup.startWorkerKueues;
  options.pollInterval = std::chrono::milliseconds{2};
  options.readmitDelay = setup.readmitDelay;
  options.workerJobQuota = setup.workerJobQuota;
  observer_ = setup.observer;
  env_ = std::make_unique<demo::Environment>(options);
  config_ = env_->adapterConfiguration();
  config_.multiKueue.gcInterval = std::chrono::nanoseconds::zero();  // tests run the GC by hand
  if (setup.configure) setup.configure(config_);
}

void DispatchFixture::tearDownEnvironment() {
  stopAdapter();
  for (auto& [manager, integration] : integrations_) integration->stop();
  integrations_.clear();
  // Every object the adapter and the stand-ins wrote passed kube-apiserver's validation.
  if (env_) {
    EXPECT_THAT(env_->invalidWrites(), ::testing::IsEmpty());
  }
  env_.reset();
}

void DispatchFixture::startAdapter() { dispatcher_ = startAdapterFor("manager", config_); }

std::unique_ptr<multikueue::Dispatcher> DispatchFixture::startAdapterFor(const std::string& manager,
                                                                         config::Configuration config) {
  multikueue::Dispatcher::Options options;
  options.config = std::move(config);
  options.registry.informerInitialBackoff = std::chrono::milliseconds{20};
  options.registry.informerMaxBackoff = std::chrono::milliseconds{200};
  if (manager == "manager") options.dispatchObserver = observer_;
  if (integrations_.count(manager) == 0 && !jobkind::integratedKindsOf(options.config).empty()) {
    auto integration = std::make_unique<integration::IntegrationController>(
        env_->client(manager), jobkind::integratedKindsOf(options.config), clock_,
        integration::IntegrationController::Options{});
    integration->start(std::chrono::seconds{20});
    integrations_[manager] = std::move(integration);
  }
  auto dispatcher = std::make_unique<multikueue::Dispatcher>(env_->client(manager), clock_, options);
  dispatcher->start(std::chrono::seconds{20});
  return dispatcher;
}

void DispatchFixture::stopAdapter() {
  if (auto it = integrations_.find("manager"); it != integrations_.end()) {
    it->second->stop();
    integrations_.erase(it);
  }
  if (dispatcher_) dispatcher_->stop();
  dispatcher_.reset();
}

json DispatchFixture::createJob(const JobKind& kind, const std::string& name, bool marker,
                                const std::function<void(json&)>& mutate, const std::string& manager) {
  std::ifstream in(std::string(MKA_SOURCE_DIR) + "/manifests/samples/jobs/" + kind.sampleFile);
  std::stringstream text;
  text << in.rdbuf();
  json job = yaml::parseJson(text.str(), yaml::Limits::forManifests()).at(0);
  job["metadata"]["name"] = name;
  job["metadata"]["namespace"] = "default";
  if (marker) {
    if (kind.gvk.kind == "Workflow") {
      job["metadata"]["labels"]["workflows.argoproj.io/controller-instanceid"] = "multikueue";
    } else {
      job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
    }
  }
  {  // suspended, as /mutate leaves a queued job of an integrated kind
    if (kind.gvk.kind == "Workflow") {
      job["spec"]["suspend"] = true;
    } else {
      job["spec"]["status"] = "PipelineRunPending";
    }
  }
  if (mutate) mutate(job);
  return env_->create(manager, job);
}

std::string DispatchFixture::workloadNameOf(const JobKind& kind, const std::string& jobName,
                                            const std::string& manager) {
  const auto job = get(manager, kind.gvk, jobName);
  if (!job) return "";
  return integration::workloadName(kind.gvk, jobName, job->at("metadata").value("uid", ""));
}

std::string DispatchFixture::awaitWorkload(const JobKind& kind, const std::string& jobName,
                                           const std::string& manager) {
  std::string name;
  EXPECT_TRUE(test::eventually([&] {
    name = workloadNameOf(kind, jobName, manager);
    return !name.empty() && get(manager, api::kWorkloadGvk, name).has_value();
  })) << "no Workload for "
      << jobName;
  return name;
}

std::optional<json> DispatchFixture::get(const std::string& cluster, const api::GroupVersionKind& gvk,
                                         const std::string& name, const std::string& ns) {
  try {
    return env_->client(cluster).get(gvk, ns, name);
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return std::nullopt;
    throw;
  }
}

json DispatchFixture::checkState(const std::string& workloadName) {
  const auto wl = workload("manager", workloadName);
  if (!wl) return nullptr;
  const auto* state = api::findCheckState(*wl, checkName_);
  return state ? *state : json(nullptr);
}

bool DispatchFixture::checkIs(const std::string& workloadName, const std::string& state, const std::string& message) {
  const auto s = checkState(workloadName);
  return s.is_object() && s.value("state", "") == state && (message.empty() || s.value("message", "") == message);
}

void DispatchFixture::advance(std::chrono::nanoseconds by) {
  clock_.advance(by);
  env_->pokeKueues();
  if (dispatcher_) dispatcher_->recheckClock();
}

bool DispatchFixture::awaitReconnect(const std::string& worker) {
  auto& registry = dispatcher_->registry();
  for (int round = 0; round < 12; ++round) {
    if (registry.connected(worker)) return true;
    advance(multikueue::reconnectBackoff(std::max(1, registry.failedAttempts(worker))));
    if (test::eventually([&] { return registry.connected(worker) != nullptr; }, std::chrono::seconds{5})) return true;
  }
  return false;
}

bool DispatchFixture::settled() {
  return test::eventually([&] {
    if (!env_->kueuesIdle()) return false;
    for (const auto& [manager, integration] : integrations_)
      if (!integration->idle()) return false;
    if (!dispatcher_) return true;
    // Every reachable worker connected (a connection brings reconciles with it), then quiet.
    for (const auto& w : env_->workers())
      if (!env_->cluster(w).unreachable() && !dispatcher_->registry().connected(w)) return false;
    return dispatcher_->idle();
  });
}

std::string DispatchFixture::workflowNodePhase(const std::string& cluster, const std::string& job,
                                               const std::string& node) {
  const auto wf = get(cluster, kWorkflow.gvk, job);
  const json::json_pointer nodes("/status/nodes");
  if (!wf || !wf->contains(nodes) || !wf->at(nodes).is_object()) return "";
  for (const auto& [id, n] : wf->at(nodes).items())
    if (n.value("name", "") == node) return n.value("phase", "");
  return "";
}

int DispatchFixture::startsOn(const std::string& cluster, const JobKind& kind, const std::string& name) {
  auto* controller = env_->frameworkController(cluster, kind.gvk.kind);
  return controller == nullptr ? 0 : controller->starts("default/" + name);
}

std::pair<std::string, std::string> DispatchFixture::runOnAWorker(const JobKind& kind, const std::string& name,
                                                                  const std::function<void(json&)>& mutate) {
  createJob(kind, name, true, mutate);
  const auto wl = awaitWorkload(kind, name);
  EXPECT_TRUE(test::eventually([&] { return checkIs(wl, "Ready"); })) << checkState(wl).dump();
  const auto worker = api::clusterName(*workload("manager", wl));
  EXPECT_TRUE(test::eventually([&] { return startsOn(worker, kind, name) == 1; })) << "not started on " << worker;
  if (::testing::Test::HasFailure()) return {};
  return {wl, worker};
}

std::size_t DispatchFixture::runningOnWorkers() {
  std::size_t running = 0;
  for (const auto& w : env_->workers())
    for (const auto* kind : {"PipelineRun", "Workflow"})
      if (auto* controller = env_->frameworkController(w, kind)) running += controller->running();
  return running;
}

std::vector<json> DispatchFixture::events(const std::string& involvedName, const std::string& cluster) {
  std::vector<json> out;
  for (const auto& e : env_->client(cluster).listAll({"", "v1", "Event"}, "default"))
    if (e.value("involvedObject", json::object()).value("name", "") == involvedName) out.push_back(e);
  return out;
}

}  // namespace mka::e2e
