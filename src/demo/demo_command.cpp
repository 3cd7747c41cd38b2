#include "mka/demo/demo_command.h"

#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "mka/api/kinds.h"
#include "mka/api/views.h"
#include "mka/api/workload_status.h"
#include "mka/app/dispatch_runner.h"
#include "mka/app/service.h"
#include "mka/app/signals.h"
#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/config/loader.h"
#include "mka/demo/environment.h"
#include "mka/deploy/webhook_conditions.h"
#include "mka/integration/workload_builder.h"
#include "mka/jobkind/job_kind.h"
#include "mka/kube/api_error.h"
#include "mka/multikueue/api.h"
#include "mka/net/pki.h"
#include "mka/observability/health.h"
#include "mka/placement/api.h"
#include "mka/standin/ocm_standin.h"

namespace mka::demo {

namespace fs = std::filesystem;
using app::blockStopSignals;
using app::ServeOptions;
using app::Service;
using app::waitForStopSignal;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

const char* kManager = "manager";
const char* kSingleCluster = "cluster";  // --single-cluster's one cluster
// --ocm: the Placement (and its placement AdmissionCheck and generated MultiKueueConfig), and
// the label it selects workers by.
const char* kPlacement = "gpu";
const char* kAcceleratorLabel = "accelerator";
const char* kAccelerator = "nvidia-tesla-t4";

// The adapter's configuration on the manager, as a user would write it.
constexpr std::string_view kAdapterConfiguration = R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
leaderElection: {leaderElect: true, resourceName: multikueue-adapter, resourceNamespace: kueue-system}
clientConnection: {qps: 200, burst: 400}
managedByDefaulting: MultiKueueQueues
dispatch: {enabled: true, admissionCheckControllerName: multikueue-adapter.dev/dispatcher}
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
  gcInterval: 1m
  origin: multikueue
  workerLostTimeout: 15m
integrations:
  frameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)";

// How the demo follows a sample job's kind: its resource, and how its framework controller
// reports a run in the job's status.
struct FollowedKind {
  enum class Report {
    SucceededCondition,  // Tekton, the in-house operator: condition Succeeded Unknown, True or False
    Phase,               // Argo: status.phase Running, Succeeded, Failed or Error
  };
  std::string group;    // "tekton.dev"
  std::string version;  // "v1"
  std::string plural;   // "pipelineruns"
  std::string kind;     // "PipelineRun"
  Report report = Report::SucceededCondition;
};

// One sample job followed through the flow.
struct Tracked {
  api::GroupVersionKind gvk;
  FollowedKind kind;
  std::string name;
  std::string workload;
  std::set<std::string> seen;  // steps reported
  std::set<std::string> admittedOn;
  std::string worker;
  std::string result;
  Steady::time_point submitted;
  Steady::time_point done;
  bool complete = false;
};

std::optional<json> getIfExists(kube::Client& client, const api::GroupVersionKind& gvk, const std::string& ns,
                                const std::string& name) {
  try {
    return client.get(gvk, ns, name);
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return std::nullopt;
    throw;
  }
}

// A job's outcome as its framework controller writes it (the kind's Report says how).
std::string outcomeOf(const FollowedKind& kind, const json& job) {
  if (kind.report == FollowedKind::Report::Phase) return job.value("status", json::object()).value("phase", "");
  if (const auto* c = api::findCondition(job, "Succeeded")) {
    if (c->value("status", "") == "True") return "Succeeded";
    if (c->value("status", "") == "False") return "Failed (" + c->value("reason", "") + ")";
    return "Running";
  }
  return "";
}

// The managedBy marker the webhook set, where the job's configured kind keeps it.
std::string markerOf(const std::vector<jobkind::JobKind>& kinds, const api::GroupVersionKind& gvk, const json& job) {
  for (const auto& kind : kinds) {
    if (!kind.is(gvk)) continue;
    const auto value = kind.managedByValue(job);
    if (!value) return "";
    const auto& where = kind.managedBy();
    return (where.type == config::ManagedByLocation::Type::Label ? "label " + where.labelKey : where.path) + "=" +
           *value;
  }
  return "";
}

std::string writeFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw Error(path.string() + ": cannot write the file");
  return path.string();
}

// The configured kinds' groups and resources, as a webhook rule names them.
// What the validating webhook's matchConditions leave to it, as the demo says.
constexpr std::string_view kValidateScope =
    "/validate called on creates and on updates that change what it checks, by its matchConditions";

// `matchConditions`: the validating webhook's, as `manifests` renders them (null: none).
json webhookConfiguration(const std::string& kind, const std::string& path, int port, const std::string& caPem,
                          const json& operations, const json& groups, const json& resources,
                          const json& matchConditions = nullptr) {
  const auto name =
      std::string(kind == "MutatingWebhookConfiguration" ? "mutate" : "validate") + ".multikueue-adapter.dev";
  json out = {
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", kind},
      {"metadata", {{"name", "multikueue-adapter"}}},
      {"webhooks",
       json::array({{{"name", name},
                     {"clientConfig",
                      {{"url", "https://127.0.0.1:" + std::to_string(port) + path}, {"caBundle", base64Encode(caPem)}}},
                     {"rules", json::array({{{"apiGroups", groups},
                                             {"apiVersions", {"*"}},
                                             {"resources", resources},
                                             {"operations", operations}}})},
                     {"failurePolicy", "Fail"},
                     {"sideEffects", "None"},
                     {"matchPolicy", "Equivalent"},
                     {"timeoutSeconds", 10},
                     {"admissionReviewVersions", {"v1"}}}})}};
  if (!matchConditions.is_null()) out["webhooks"][0]["matchConditions"] = matchConditions;
  return out;
}

// How the demo reads a sample job's kind: its resource and how its controller reports a run.
FollowedKind trackedKind(const api::GroupVersionKind& gvk) {
  static const std::vector<FollowedKind> kinds{
      {"tekton.dev", "v1", "pipelineruns", "PipelineRun", FollowedKind::Report::SucceededCondition},
      {"argoproj.io", "v1alpha1", "workflows", "Workflow", FollowedKind::Report::Phase},
      {"ml.example.com", "v1", "trainingruns", "TrainingRun", FollowedKind::Report::SucceededCondition}};
  for (const auto& k : kinds)
    if (k.kind == gvk.kind && k.group == gvk.group) return k;
  throw Error("the demo does not know how to follow a " + gvk.kind + " (" + gvk.group + ")");
}

// Where an admitted job's pods get their node selector: the pod template, else the spec itself.
json nodeSelectorOf(const json& job) {
  for (const auto* path : {"/spec/template/spec/nodeSelector", "/spec/nodeSelector"})
    if (const auto pointer = json::json_pointer(path); job.contains(pointer)) return job.at(pointer);
  return json::object();
}

std::string joined(const json& labels) {
  std::string out;
  for (const auto& [key, value] : labels.items())
    out += (out.empty() ? "" : ",") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

class Demo {
 public:
  Demo(const DemoOptions& options, std::ostream& out) : options_(options), out_(out) {}

  int run() {
    dir_ = options_.dir.empty() ? fs::temp_directory_path() / ("multikueue-demo-" + std::to_string(::getpid()))
                                : fs::absolute(options_.dir);
    fs::create_directories(dir_);
    Environment::Options eo;
    eo.crdDirectory = options_.crds.empty() ? Environment::findCrdDirectory(fs::current_path()) : options_.crds;
    eo.samplesDirectory = samplesDir();
    eo.runTime = options_.runTime;
    if (single()) {
      say("Starting a sandbox: one cluster (an emulated Kubernetes API server on loopback), no MultiKueue, a Kueue "
          "stand-in, the objects of manifests/samples/single-cluster/cluster (an in-house TrainingRun CRD, a "
          "flavor, the queues)");
      eo.managers = {};
      eo.workers = {kSingleCluster};
      eo.workerSamplesDirectory = samplesDir() / "single-cluster" / "cluster";
      eo.workerIntegrations = false;  // the adapter below is the cluster's integration
    } else {
      say("Starting a sandbox: a manager and " + std::to_string(options_.workers.size()) +
          " workers (emulated Kubernetes API servers on loopback), Kueue stand-ins, Kueue's sample objects");
      eo.workers = options_.workers;
      if (quotaAware()) {
        std::string room;
        for (std::size_t i = 0; i < options_.workers.size(); ++i) {
          eo.workerJobQuota[options_.workers[i]] = static_cast<std::int64_t>(i);
          room += (room.empty() ? "" : ", ") + options_.workers[i] + " " + std::to_string(i);
        }
        say("Quota-aware dispatch: each worker's ClusterQueue holds a different number of PipelineRuns at once (" +
            room + "); jobs go where there is room, one copy each");
      }
      if (ocm() && options_.workers.size() != 3)
        throw Error("--ocm needs three workers (two chosen by the Placement, one relabelled into it)");
    }
    env_ = std::make_unique<Environment>(eo);
    kubeconfigs_ = env_->sandbox().writeKubeconfigs(dir_ / "kubeconfigs");

    if (single()) {
      startSingleClusterAdapter();
    } else {
      startAdapter();
    }
    bool finished = false;
    if (ocm()) {
      finished = runFleet();
    } else {
      submitSamples();
      finished = follow();
    }
    // Writes the sandbox refused as kube-apiserver would (422): a demo that passes only because
    // nothing checked them would hide a product that fails on a real cluster.
    const auto refused = env_->invalidWrites();
    const bool ok = finished && refused.empty() && fleetFollowedThePlacement();
    summary(finished, refused);
    if (options_.keep) keepRunning();
    service_->stop();
    service_.reset();
    if (operator_) operator_->stop();
    if (ocm_) ocm_->stop();
    env_.reset();
    if (options_.dir.empty() && !options_.keep) {
      std::error_code ec;
      fs::remove_all(dir_, ec);  // our own temporary directory
    }
    return ok ? 0 : 1;
  }

  ~Demo() {
    if (service_) service_->stop();
    if (operator_) operator_->stop();
    if (ocm_) ocm_->stop();
  }

 private:
  bool single() const { return options_.singleCluster; }
  bool ocm() const { return options_.ocm; }
  // The sandbox worker behind a MultiKueueCluster: with --ocm the placement controller names
  // them <placement>-<cluster>.
  std::string workerOf(const std::string& multiKueueCluster) const {
    const std::string prefix = std::string(kPlacement) + "-";
    return ocm() && multiKueueCluster.starts_with(prefix) ? multiKueueCluster.substr(prefix.size()) : multiKueueCluster;
  }
  const std::string& home() const {  // the cluster users submit to
    static const std::string manager = kManager, cluster = kSingleCluster;
    return single() ? cluster : manager;
  }
  void say(const std::string& line) {
    const auto elapsed = std::chrono::duration<double>(Steady::now() - started_).count();
    out_ << "[" << std::fixed << std::setprecision(1) << std::setw(5) << elapsed << "s] " << line << '\n';
    out_.flush();
  }

  // Runs `serve` in-process against `cluster` with the configuration `text` (written to
  // `configFile` when given, else read from there), registers its webhooks for the configured
  // kinds, and waits until it leads.
  void startService(const std::string& cluster, const std::string& text, const fs::path& configFile, bool dispatch) {
    net::CertificateAuthority ca("multikueue-adapter demo CA");
    const auto serving = ca.issue({});
    writeFile(dir_ / "certs" / "tls.crt", serving.certPem);
    writeFile(dir_ / "certs" / "tls.key", serving.keyPem);
    auto loaded = config::parseConfiguration(text);
    if (!loaded.ok()) throw Error("the demo's configuration is invalid: " + joinErrors(loaded.errors, "; "));
    kinds_ = jobkind::kindsOf(*loaded.config);
    for (const auto& kind : jobkind::integratedKindsOf(*loaded.config))
      if (std::none_of(kinds_.begin(), kinds_.end(), [&](const auto& k) { return k.is(kind.gvk()); }))
        kinds_.push_back(kind);
    json groups = json::array(), resources = json::array();
    for (const auto& kind : kinds_) {
      groups.push_back(kind.gvk().group);
      resources.push_back(trackedKind(kind.gvk()).plural);
    }
    ServeOptions so;
    so.configFile = configFile.string();
    so.kubeconfig = kubeconfigs_.at(cluster).string();
    so.certDir = (dir_ / "certs").string();
    so.webhookBindAddress = "127.0.0.1:0";
    so.healthProbeBindAddress = "127.0.0.1:0";
    so.metricsBindAddress = "127.0.0.1:0";
    service_ = std::make_unique<Service>(so);
    service_->start();
    auto& client = env_->client(cluster);
    client.create(webhookConfiguration("MutatingWebhookConfiguration", "/mutate", service_->webhookPort(), ca.certPem(),
                                       {"CREATE"}, groups, resources));
    // As deployed: an UPDATE that changes nothing /validate checks (a running job's status
    // write) does not call it.
    client.create(webhookConfiguration("ValidatingWebhookConfiguration", "/validate", service_->webhookPort(),
                                       ca.certPem(), {"CREATE", "UPDATE"}, groups, resources,
                                       json::parse(deploy::validateMatchConditions(*loaded.config).dump())));
    const auto deadline = Steady::now() + std::chrono::seconds{60};
    while (!(service_->health().ready(false).ok && service_->dispatchRunner() &&
             (!dispatch || service_->dispatchRunner()->dispatching()) && service_->dispatchRunner()->integrating())) {
      if (Steady::now() > deadline) throw Error("the adapter did not become ready within 60 s; see the log above");
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
  }

  // The full multiKueue.dispatcherName of --dispatcher.
  std::string dispatcherName() const {
    if (options_.dispatcher == "all-at-once") return std::string(config::kDispatcherAllAtOnce);
    if (options_.dispatcher == "incremental") return std::string(config::kDispatcherIncremental);
    if (options_.dispatcher == "quota-aware") return std::string(config::kDispatcherQuotaAware);
    throw Error("--dispatcher " + options_.dispatcher + ": use all-at-once, incremental or quota-aware");
  }
  bool quotaAware() const { return options_.dispatcher == "quota-aware"; }

  void startAdapter() {
    auto text = std::string(kAdapterConfiguration) + (ocm() ? "placement: {enabled: true}\n" : "");
    const std::string anchor = "  workerLostTimeout: 15m\n";
    text.insert(text.find(anchor) + anchor.size(), "  dispatcherName: " + dispatcherName() + "\n");
    const auto configFile = writeFile(dir_ / "config.yaml", text);
    startService(kManager, text, configFile, true);
    say("multikueue-adapter running on the manager: webhook https://127.0.0.1:" +
        std::to_string(service_->webhookPort()) + " registered there (" + std::string(kValidateScope) +
        "), dispatch loop and job integration leading, metrics http://127.0.0.1:" +
        std::to_string(service_->metricsPort()) + "/metrics");
    std::string workers;
    for (const auto& w : options_.workers) workers += (workers.empty() ? "" : ", ") + w;
    say("multikueue-adapter running on " + workers +
        " as a worker (dispatch off, job integration on), as manifests/overlays/worker deploys it");
    say("Played by stand-ins, not shipped: Kueue's core (quota, admission checks, admission) on every cluster, "
        "and the Tekton and Argo controllers that run the jobs");
  }

  void startSingleClusterAdapter() {
    const auto configFile = samplesDir() / "single-cluster" / "adapter-config.yaml";
    std::ifstream in(configFile);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw Error(configFile.string() + ": cannot read the file");
    // Where Kueue runs on a real cluster; the adapter's leader election Lease lives there.
    env_->create(kSingleCluster,
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "kueue-system"}}}});
    startService(kSingleCluster, text.str(), configFile, false);
    say("multikueue-adapter running on the cluster with " + configFile.filename().string() +
        " (dispatch off, job integration on for Workflow and TrainingRun): webhook https://127.0.0.1:" +
        std::to_string(service_->webhookPort()) + " registered (" + std::string(kValidateScope) +
        "), job integration leading, metrics http://127.0.0.1:" + std::to_string(service_->metricsPort()) + "/metrics");
    standin::JobControllerStandIn::Options o;
    o.style = standin::JobControllerStandIn::Style::InHouse;
    o.runTime = options_.runTime;
    operator_ = std::make_unique<standin::JobControllerStandIn>(env_->cluster(kSingleCluster).api(), env_->clock(), o);
    operator_->start();
    say("Played by stand-ins, not shipped: Kueue's core (quota, flavors, admission), the Argo workflow controller, "
        "and the TrainingRun operator a platform team would run");
  }

  void submitSamples() {
    std::vector<fs::path> files;
    const auto jobsDir = single() ? samplesDir() / "single-cluster" / "jobs" : samplesDir() / "jobs";
    for (const auto& entry : fs::directory_iterator(jobsDir))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files)
      for (const auto& job : env_->createFromFile(home(), file)) track(job, "from " + file.filename().string());
  }

  // Follows `job`, just created (`from` says where it came from).
  void track(const json& job, const std::string& from) {
    Tracked t;
    t.gvk = api::GroupVersionKind::fromApiVersion(job.value("apiVersion", ""), job.value("kind", ""));
    t.kind = trackedKind(t.gvk);
    t.name = job.at("metadata").value("name", "");
    // The name the manager's integration gives the job's Workload (newWorkload).
    t.workload = integration::workloadName(t.gvk, t.name, job.at("metadata").value("uid", ""));
    t.submitted = Steady::now();
    const std::string suspension =
        suspended(job) ? "suspended it until its Workload is admitted" : "did not suspend it (!)";
    if (single()) {
      say(label(t) + " submitted " + from + " without a suspend field; multikueue-adapter's webhook " + suspension);
    } else {
      const auto marker = markerOf(kinds_, t.gvk, job);
      say(label(t) + " submitted " + from + " without a managedBy marker; multikueue-adapter's webhook set " +
          (marker.empty() ? std::string("nothing (!)") : marker) + " and " + suspension);
    }
    jobs_.push_back(std::move(t));
  }

  // --- --ocm ------------------------------------------------------------------------------

  // The managed clusters as OCM's inventory has them: worker2 and worker3 carry the accelerator
  // label, then (relabelled) worker1 and worker2.
  std::vector<standin::ManagedClusterInput> inventory(bool relabelled) const {
    std::vector<standin::ManagedClusterInput> out;
    for (std::size_t i = 0; i < options_.workers.size(); ++i) {
      standin::ManagedClusterInput c{options_.workers[i], {}};
      if (relabelled ? i < 2 : i > 0) c.labels[kAcceleratorLabel] = kAccelerator;
      out.push_back(std::move(c));
    }
    return out;
  }

  std::vector<std::string> decidedWorkers() {
    std::vector<std::string> out;
    for (const auto& d : env_->client(kManager).listAll(api::kPlacementDecisionGvk, "kueue-system"))
      if (d.value("metadata", json::object())
              .value("labels", json::object())
              .value(std::string(placement::kPlacementLabel), "") == kPlacement)
        for (const auto& entry : d.value("status", json::object()).value("decisions", json::array()))
          out.push_back(entry.value("clusterName", ""));
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::string> configClusters() {
    const auto config = getIfExists(env_->client(kManager), api::kMultiKueueConfigGvk, "", kPlacement);
    if (!config) return {};
    return config->value("spec", json::object()).value("clusters", std::vector<std::string>{});
  }

  // Waits until OCM decided `workers` and the placement controller wrote them into the
  // MultiKueueConfig, and says so.
  bool awaitFleet(const std::vector<std::string>& workers) {
    std::vector<std::string> generated;
    for (const auto& w : workers) generated.push_back(std::string(kPlacement) + "-" + w);
    const auto deadline = Steady::now() + std::chrono::seconds{30};
    bool decided = false;
    while (Steady::now() < deadline) {
      if (!decided && decidedWorkers() == workers) {
        decided = true;
        say("OCM's scheduler (stand-in) decided " + strings::join(workers, ", ") + " for Placement kueue-system/" +
            kPlacement + " (PlacementDecision " + kPlacement + "-decision-1)");
      }
      if (decided && configClusters() == generated) {
        const auto check = getIfExists(env_->client(kManager), api::kAdmissionCheckGvk, "", kPlacement);
        const auto* active = check ? api::findCondition(*check, api::condition::kActive) : nullptr;
        say("multikueue-adapter's placement controller wrote MultiKueueConfig " + std::string(kPlacement) + ": " +
            strings::join(generated, ", ") +
            " (one MultiKueueCluster per decided cluster, kubeconfig Secret "
            "multikueue-<cluster>); AdmissionCheck " +
            kPlacement + ": " +
            (active ? active->value("reason", "") + ", " + active->value("message", "") : std::string("no condition")));
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    say("the fleet did not follow the Placement within 30 s: decided " + strings::join(decidedWorkers(), ", ") +
        ", MultiKueueConfig " + strings::join(configClusters(), ", "));
    return false;
  }

  // Submits `names`, each to run on one of `decided`, the workers the Placement decided then.
  void submitFleetJobs(const std::vector<std::string>& names, const std::string& when,
                       const std::vector<std::string>& decided) {
    for (const auto& name : names) {
      const auto job = env_->create(
          kManager,
          {{"apiVersion", "tekton.dev/v1"},
           {"kind", "PipelineRun"},
           {"metadata",
            {{"name", name}, {"namespace", "default"}, {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
           {"spec", {{"pipelineRef", {{"name", "build"}}}}}});
      track(job, when);
      fleetDecided_[name] = decided;
    }
  }

  // The fleet of `demo --ocm`: OCM decides, the placement controller writes the MultiKueue
  // objects, jobs run on the decided workers; a worker relabelled moves the next jobs.
  bool runFleet() {
    auto& manager = env_->client(kManager);
    // The fleet comes from the Placement: the sample's hand-written MultiKueueConfig and
    // MultiKueueClusters go, and each worker's kubeconfig Secret gets the name OCM's addon gives it.
    manager.remove(api::kMultiKueueConfigGvk, "", "multikueue-config");
    for (const auto& w : options_.workers) {
      manager.remove(api::kMultiKueueClusterGvk, "", w);
      auto secret = manager.get({"", "v1", "Secret"}, "kueue-system", w + "-secret");
      manager.create({{"apiVersion", "v1"},
                      {"kind", "Secret"},
                      {"metadata", {{"name", "multikueue-" + w}, {"namespace", "kueue-system"}}},
                      {"data", secret["data"]}});
    }
    say("Played by the demo, not shipped: the kubeconfig Secrets multikueue-<cluster> OCM's kueue-addon writes for "
        "each managed cluster");
    ocm_ = std::make_unique<standin::OcmStandIn>(env_->cluster(kManager).api(), inventory(false),
                                                 standin::OcmStandIn::Options{});
    ocm_->start();
    say("Played by a stand-in, not shipped: OCM's placement scheduler, deciding from the managed clusters' labels (" +
        options_.workers[1] + " and " + options_.workers[2] + " carry " + kAcceleratorLabel + "=" + kAccelerator + ")");
    env_->create(
        kManager,
        {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
         {"kind", "Placement"},
         {"metadata", {{"name", kPlacement}, {"namespace", "kueue-system"}}},
         {"spec",
          {{"predicates",
            json::array({{{"requiredClusterSelector",
                           {{"labelSelector", {{"matchLabels", {{kAcceleratorLabel, kAccelerator}}}}}}}}})}}}});
    env_->create(kManager, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                            {"kind", "AdmissionCheck"},
                            {"metadata", {{"name", kPlacement}}},
                            {"spec",
                             {{"controllerName", std::string(placement::kControllerName)},
                              {"parameters",
                               {{"apiGroup", std::string(api::kOcmClusterGroup)},
                                {"kind", std::string(api::kPlacementKind)},
                                {"name", kPlacement}}}}}});
    manager.patch(api::kAdmissionCheckGvk, "", "multikueue-adapter", kube::PatchType::Merge,
                  {{"spec", {{"parameters", {{"name", kPlacement}}}}}});
    manager.patch(
        {"kueue.x-k8s.io", "v1beta2", "ClusterQueue"}, "", "cluster-queue", kube::PatchType::Merge,
        {{"spec",
          {{"admissionChecksStrategy",
            {{"admissionChecks", json::array({{{"name", "multikueue-adapter"}}, {{"name", kPlacement}}})}}}}}});
    say(std::string("Placement kueue-system/") + kPlacement + " selects " + kAcceleratorLabel + "=" + kAccelerator +
        "; AdmissionCheck " + kPlacement +
        " (open-cluster-management.io/placement) names it; ClusterQueue "
        "cluster-queue requires it and the multikueue-adapter check, which reads MultiKueueConfig " +
        kPlacement);
    const std::vector<std::string> before = {options_.workers[1], options_.workers[2]};
    if (!awaitFleet(before)) return false;
    submitFleetJobs({"gpu-job-1", "gpu-job-2"}, "before the relabel", before);
    if (!follow()) return false;

    ocm_->setClusters(inventory(true));
    say(options_.workers[0] + " labelled " + kAcceleratorLabel + "=" + kAccelerator + ", the label removed from " +
        options_.workers[2] + " (as `kubectl label managedcluster` would)");
    const std::vector<std::string> after = {options_.workers[0], options_.workers[1]};
    if (!awaitFleet(after)) return false;
    submitFleetJobs({"gpu-job-3", "gpu-job-4"}, "after the relabel", after);
    return follow();
  }

  fs::path samplesDir() const {
    return options_.samples.empty() ? Environment::findSamplesDirectory(fs::current_path()) : options_.samples;
  }

  static std::string label(const Tracked& t) { return t.gvk.kind + " default/" + t.name; }

  // As the kinds' integration rules read it: Workflow spec.suspend, PipelineRun spec.status.
  static bool suspended(const json& job) {
    const json spec = job.value("spec", json::object());
    return spec.value("suspend", false) || spec.value("status", "") == "PipelineRunPending";
  }

  void step(Tracked& t, const std::string& id, const std::string& text) {
    if (t.seen.insert(id).second) say(label(t) + ": " + text);
  }

  bool follow() {
    auto& manager = env_->client(home());
    const auto deadline = Steady::now() + options_.timeout;
    while (Steady::now() < deadline) {
      bool all = true;
      for (auto& t : jobs_) {
        if (t.complete) continue;
        all = false;
        if (single()) {
          observeSingleCluster(manager, t);
        } else {
          observe(manager, t);
        }
      }
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    return std::all_of(jobs_.begin(), jobs_.end(), [](const Tracked& t) { return t.complete; });
  }

  void observe(kube::Client& manager, Tracked& t) {
    const auto wl = getIfExists(manager, api::kWorkloadGvk, "default", t.workload);
    const auto job = getIfExists(manager, t.gvk, "default", t.name);
    if (wl) step(t, "created", "multikueue-adapter's job integration on the manager created Workload " + t.workload);
    if (wl && api::hasQuotaReservation(*wl))
      step(t, "quota", "Kueue (stand-in) reserved quota for it in ClusterQueue cluster-queue");
    if (wl) {
      // Nominations are short-lived (cleared once a worker admits): a poll may only see the
      // admission, which implies them.
      auto nominated = api::nominatedClusters(*wl);
      const auto worker = workerOf(api::clusterName(*wl));
      // A poll that missed the nomination: every worker of the config then was nominated.
      // (The quota-aware dispatcher sends one copy where there is room.)
      if (nominated.empty() && !worker.empty())
        nominated = ocm() ? configClusters() : quotaAware() ? std::vector<std::string>{worker} : options_.workers;
      if (ocm()) {
        const auto* placementCheck = api::findCheckState(*wl, kPlacement);
        if (placementCheck != nullptr && placementCheck->value("state", "") == api::check_state::kReady)
          step(t, "placement",
               std::string("multikueue-adapter's placement controller set its check ") + kPlacement +
                   " Ready (the Placement has decided clusters); the dispatch loop waits for it");
      }
      if (!nominated.empty()) {
        std::string list;
        for (const auto& n : nominated) list += (list.empty() ? "" : ", ") + workerOf(n);
        step(t, "dispatched",
             quotaAware() ? "Workload copy sent to " + list + " (the quota-aware dispatcher's choice)"
                          : "Workload copies sent to " + list + " (first to admit wins)");
      }
      // The quota-aware dispatcher says in the check's message where it looked and why not.
      for (const auto& entry : api::WorkloadView(*wl).admissionChecks()) {
        const auto message = entry.value("message", "");
        if (quotaAware() && (message.starts_with("Nominated") || message.starts_with("No worker")))
          step(t, "why:" + message, "dispatcher: " + message);
      }
      if (!worker.empty()) {
        t.worker = worker;
        t.admittedOn.insert(worker);
        step(t, "admitted:" + worker,
             "admitted on " + worker + "; the job copy was created there, the other copies removed");
      }
    }
    if (!t.worker.empty()) {
      // A run that started and ended between two polls leaves only its controller's count.
      const auto copy = getIfExists(env_->client(t.worker), t.gvk, "default", t.name);
      const auto* controller = env_->frameworkController(t.worker, t.gvk.kind);
      if ((copy && !suspended(*copy)) || (controller != nullptr && controller->starts("default/" + t.name) > 0))
        step(t, "resumed:" + t.worker,
             "multikueue-adapter on " + t.worker + " resumed the " + t.gvk.kind +
                 " copy once its Workload was admitted there; the " + (t.gvk.kind == "Workflow" ? "Argo" : "Tekton") +
                 " controller (stand-in) runs it");
    }
    if (job && !t.worker.empty()) {
      const auto outcome = outcomeOf(t.kind, *job);
      if (!outcome.empty()) step(t, "status:" + outcome, "status synced from " + t.worker + ": " + outcome);
    }
    if (wl && api::isFinished(*wl)) {
      const auto* c = api::findCondition(*wl, api::condition::kFinished);
      step(t, "finished",
           "finished on " + t.worker + " (" + c->value("reason", "") +
               (c->value("message", "").empty() ? "" : ": " + c->value("message", "")) + "); multikueue-adapter on " +
               t.worker +
               " marked its Workload Finished there, which the manager "
               "followed");
      bool copies = false;
      for (const auto& w : options_.workers) {
        auto& client = env_->client(w);
        copies = copies || getIfExists(client, api::kWorkloadGvk, "default", t.workload) ||
                 getIfExists(client, t.gvk, "default", t.name);
      }
      if (!copies) {
        step(t, "cleaned", "remote copies removed from " + t.worker);
        t.result = job ? outcomeOf(t.kind, *job) : "";
        t.done = Steady::now();
        t.complete = true;
      }
    }
  }

  // The runner of a job on the single cluster: the Argo stand-in or the TrainingRun operator.
  int startsOf(const Tracked& t) {
    if (t.gvk.kind == "TrainingRun") return operator_->starts("default/" + t.name);
    auto* controller = env_->frameworkController(kSingleCluster, t.gvk.kind);
    return controller == nullptr ? 0 : controller->starts("default/" + t.name);
  }

  void observeSingleCluster(kube::Client& cluster, Tracked& t) {
    const auto wl = getIfExists(cluster, api::kWorkloadGvk, "default", t.workload);
    const auto job = getIfExists(cluster, t.gvk, "default", t.name);
    if (wl)
      step(t, "created",
           "multikueue-adapter's job integration created Workload " + t.workload + " (Kueue itself integrates no " +
               t.gvk.kind + ")");
    if (wl && api::hasQuotaReservation(*wl)) {
      std::set<std::string> flavors;
      const auto pointer = json::json_pointer("/status/admission/podSetAssignments");
      const json assignments = wl->contains(pointer) ? wl->at(pointer) : json::array();
      for (const auto& assignment : assignments)
        for (const auto& [resource, flavor] : json_fields::objectMember(assignment, "flavors").items())
          if (flavor.is_string()) flavors.insert(flavor.get<std::string>());
      std::string list;
      for (const auto& f : flavors) list += (list.empty() ? "" : ", ") + f;
      step(t, "quota",
           "Kueue (stand-in) admitted it in ClusterQueue cluster-queue" +
               (list.empty() ? std::string() : " on flavor " + list));
    }
    if ((job && wl && api::hasQuotaReservation(*wl) && !suspended(*job)) || startsOf(t) > 0) {
      const auto selector = job ? joined(nodeSelectorOf(*job)) : std::string();
      step(t, "resumed",
           "multikueue-adapter resumed it" +
               (selector.empty() ? std::string() : " with nodeSelector " + selector + " (the flavor's node labels)") +
               "; the " + (t.gvk.kind == "Workflow" ? "Argo controller" : "TrainingRun operator") +
               " (stand-in) runs it");
    }
    if (job) {
      const auto outcome = outcomeOf(t.kind, *job);
      if (!outcome.empty() && outcome != "Running") step(t, "status:" + outcome, "ended: " + outcome);
    }
    if (wl && api::isFinished(*wl)) {
      const auto* c = api::findCondition(*wl, api::condition::kFinished);
      step(t, "finished",
           "multikueue-adapter marked its Workload Finished (" + c->value("reason", "") +
               (c->value("message", "").empty() ? "" : ": " + c->value("message", "")) + "), releasing its quota");
      if (!wl->at("metadata").contains("finalizers")) {
        t.worker = "";
        t.result = job ? outcomeOf(t.kind, *job) : "";
        if (startsOf(t) != 1) t.result += " (started " + std::to_string(startsOf(t)) + " times!)";
        t.done = Steady::now();
        t.complete = true;
      }
    }
  }

  // --ocm: every job ran on a worker the Placement decided when it was submitted.
  bool fleetFollowedThePlacement() {
    bool ok = true;
    for (const auto& t : jobs_) {
      const auto decided = fleetDecided_.find(t.name);
      if (decided == fleetDecided_.end()) continue;
      ok = ok && std::find(decided->second.begin(), decided->second.end(), t.worker) != decided->second.end();
    }
    return ok;
  }

  // multikueue_workloads_dispatched_total summed from the adapter's /metrics; -1 when unread.
  double copiesCreated() const {
    if (!service_ || service_->metricsPort() <= 0) return -1;
    httplib::Client client("127.0.0.1", service_->metricsPort());
    const auto res = client.Get("/metrics");
    if (!res || res->status != 200) return -1;
    double total = 0;
    std::istringstream lines(res->body);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("multikueue_workloads_dispatched_total{"))
        total += std::stod(line.substr(line.rfind(' ') + 1));
    return total;
  }

  void summary(bool ok, const std::vector<std::string>& refused) {
    out_ << "\nSummary\n";
    out_ << std::left << std::setw(34) << "JOB" << std::setw(13) << "KIND" << std::setw(10) << "WORKER" << std::setw(12)
         << "RESULT"
         << "TIME\n";
    for (const auto& t : jobs_) {
      const auto seconds = t.complete ? std::chrono::duration<double>(t.done - t.submitted).count() : -1.0;
      std::ostringstream time;
      if (seconds >= 0) time << std::fixed << std::setprecision(1) << seconds << "s";
      out_ << std::left << std::setw(34) << ("default/" + t.name) << std::setw(13) << t.gvk.kind << std::setw(10)
           << (t.worker.empty() ? "-" : t.worker) << std::setw(12) << (t.complete ? t.result : "not done")
           << (t.complete ? time.str() : "-") << '\n';
      if (t.admittedOn.size() > 1) out_ << "  note: admitted on more than one worker over its life (requeued)\n";
    }
    if (!single() && !ocm()) {
      const auto copies = copiesCreated();
      if (copies >= 0)
        out_ << "\nRemote Workload copies created: " << static_cast<long long>(copies) << " for " << jobs_.size()
             << " jobs (" << std::fixed << std::setprecision(2)
             << (jobs_.empty() ? 0.0 : copies / static_cast<double>(jobs_.size())) << " per job, dispatcher "
             << options_.dispatcher << ")\n";
    }
    if (!ok) {
      out_ << "\nSome jobs did not finish within the timeout (see the log lines above).\n";
    } else if (single()) {
      out_ << "\nEvery job waited suspended for Kueue, ran once after admission, and its Workload is Finished.\n";
    } else if (ocm()) {
      const auto& w = options_.workers;
      out_ << "\nEvery job ran on exactly one worker the Placement decided when it was submitted (before the relabel "
           << w[1] << " or " << w[2] << ", after it " << w[0] << " or " << w[1]
           << "), its final status is on the manager, and no remote copy is left.\n";
    } else {
      out_ << "\nEvery job ran on exactly one worker, its final status is on the manager, and no remote copy is "
              "left.\n";
    }
    if (refused.empty()) {
      out_ << "Every object written was valid for kube-apiserver (CRD schemas and CEL rules checked).\n";
    } else {
      out_ << "\nWrites the clusters refused as invalid (HTTP 422), which a real cluster would refuse too:\n";
      for (const auto& r : refused) out_ << "  " << r << '\n';
    }
    if (options_.keep) {
      out_ << "\nLook around with kubectl (the sandbox keeps running):\n";
      for (const auto& [name, path] : kubeconfigs_)
        out_ << "  kubectl --kubeconfig " << path.string() << " get "
             << (single() ? "trainingruns,workflows,workloads" : "pipelineruns,workflows,workloads") << " -A\n";
    } else {
      out_ << "\nRun `multikueue-adapter demo"
           << (single() ? " --single-cluster"
               : ocm()  ? " --ocm"
                        : "")
           << " --keep` to look around with kubectl afterwards.\n";
    }
    out_.flush();
  }

  void keepRunning() {
    say("--keep: everything stays up; press Ctrl-C (or send SIGTERM) to stop");
    say(std::string("received ") + waitForStopSignal() + ", stopping");
  }

  const DemoOptions& options_;
  std::ostream& out_;
  Steady::time_point started_ = Steady::now();
  fs::path dir_;
  std::unique_ptr<Environment> env_;
  std::map<std::string, fs::path> kubeconfigs_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<standin::JobControllerStandIn> operator_;       // --single-cluster: the TrainingRun operator
  std::unique_ptr<standin::OcmStandIn> ocm_;                      // --ocm: OCM's placement scheduler
  std::map<std::string, std::vector<std::string>> fleetDecided_;  // --ocm: job -> the workers decided at submission
  std::vector<jobkind::JobKind> kinds_;                           // the configured kinds, as the adapter reads them
  std::vector<Tracked> jobs_;
};

}  // namespace

int demoCommand(const DemoOptions& options, std::ostream& out) {
  blockStopSignals();  // before any thread starts: --keep waits for them on this thread
  try {
    Demo demo(options, out);
    return demo.run();
  } catch (const std::exception& e) {
    log::error("demo failed", {{"error", e.what()}});
    out << "demo failed: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace mka::demo
