#include "mka/cli/cli.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "mka/app/add_worker.h"
#include "mka/app/explain_command.h"
#include "mka/app/jobs_command.h"
#include "mka/app/service.h"
#include "mka/app/validate_config.h"
#include "mka/app/workers_command.h"
#include "mka/common/duration.h"
#include "mka/common/errors.h"
#include "mka/common/strings.h"
#include "mka/deploy/manifests.h"
#include "mka/deploy/prometheus_rules.h"
#include "mka/observability/logging.h"
#include "mka/version.h"

// CMakeLists.txt sets it on mka_cli: 1 with the sandbox, the stand-ins and the demo built in
// (the default), 0 without them (-DMKA_WITH_SANDBOX=OFF, the image's binary).
#ifndef MKA_WITH_SANDBOX
#error "MKA_WITH_SANDBOX is not defined: CMakeLists.txt sets it on mka_cli"
#endif
#if MKA_WITH_SANDBOX
#include "mka/demo/demo_command.h"
#include "mka/demo/sandbox_command.h"
#endif

namespace mka::cli {
namespace {

using app::ServeOptions;
#if MKA_WITH_SANDBOX
using demo::DemoOptions;
using demo::SandboxCommandOptions;
#endif

const std::vector<std::string> kSubcommands = {"serve",   "validate-config", "version",    "sandbox",
                                               "demo",    "manifests",       "add-worker", "remove-worker",
                                               "workers", "explain",         "jobs"};

// Invoked as `kubectl-multikueue` (a symlink in PATH), the binary is the kubectl plugin
// `kubectl multikueue`: the read-only commands only, with kubectl's flags, and no default
// subcommand (kubectl's plugins answer a bare name with their usage).
constexpr std::string_view kPluginName = "kubectl-multikueue";
const std::vector<std::string> kPluginSubcommands = {"explain", "jobs", "workers"};

bool invokedAsPlugin(int argc, char** argv) {
  return argc > 0 && std::filesystem::path(argv[0]).filename() == kPluginName;
}

// `multikueue-adapter --config f.yaml` means `multikueue-adapter serve --config f.yaml`: serve is
// the default subcommand, as the container's plain `args:` expect.
std::vector<std::string> withDefaultSubcommand(int argc, char** argv, bool plugin) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool hasSubcommand = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return std::find(kSubcommands.begin(), kSubcommands.end(), a) != kSubcommands.end();
  });
  bool wantsHelp = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "-h" || a == "--help" || a == "--help-all" || a == "--version";
  });
  if (!hasSubcommand && !wantsHelp && !plugin) args.insert(args.begin(), "serve");
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  return args;
}

#if !MKA_WITH_SANDBOX
// A command this binary was built without: listed in --help as such, and whatever its arguments,
// it says so and exits 2 (instead of a usage error about an option it would have had).
CLI::App* notBuiltIn(CLI::App& app, const std::string& name) {
  auto* cmd = app.add_subcommand(name, "Not built into this binary (built with -DMKA_WITH_SANDBOX=OFF)");
  cmd->allow_extras();
  cmd->fallthrough(false);
  return cmd;
}

int notBuiltInCommand(const std::string& name) {
  std::cerr << "multikueue-adapter: the " << name
            << " command is not built into this binary (built with -DMKA_WITH_SANDBOX=OFF); build with "
               "scripts/quickstart.sh or -DMKA_WITH_SANDBOX=ON\n";
  return 2;
}
#endif

// The read-only commands find the manager as kubectl does, with kubectl's flags (the plugin
// passes them through).
void addManagerFlags(CLI::App* command, std::string& kubeconfig, std::string& context) {
  command->add_option("--kubeconfig,--manager-kubeconfig", kubeconfig,
                      "Kubeconfig of the manager (default: $KUBECONFIG, ~/.kube/config, in-cluster)");
  command->add_option("--context", context, "The kubeconfig context of the manager");
}

}  // namespace

int run(int argc, char** argv) {
  const bool plugin = invokedAsPlugin(argc, argv);
  CLI::App app{plugin ? "kubectl multikueue: where MultiKueue jobs are and why (explain, jobs, workers)"
                      : "multikueue-adapter: Kueue MultiKueue for any Job-like custom resource",
               plugin ? "kubectl multikueue" : "multikueue-adapter"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", std::string("multikueue-adapter ") + MKA_VERSION, "Print the version and exit");

  std::string logFormat = "text";
  std::string logLevel;
  int verbosity = 0;
  app.add_option("--log-format", logFormat, "Log output format: text or json")->capture_default_str();
  app.add_option("--log-level", logLevel, "Log level: trace, debug, info, warn, error (overrides --v)");
  app.add_option("--v,-v", verbosity, "klog-style verbosity: 0 info, 1-3 debug, 4+ trace")->capture_default_str();

  ServeOptions serveOptions;
  std::string configFile, kubeconfig, healthAddress, metricsAddress, certDir, webhookAddress;
  auto* serveCmd = app.add_subcommand("serve", "Run the admission webhooks, probes and metrics (default)");
  serveCmd->add_option("--config", configFile, "AdapterConfiguration or Kueue Configuration file (hot-reloaded)");
  serveCmd->add_option("--kubeconfig", kubeconfig, "Kubeconfig of the manager cluster (default: in-cluster)");
  serveCmd->add_option("--health-probe-bind-address", healthAddress,
                       "Address of /healthz and /readyz (overrides healthProbeBindAddress; \"0\" disables)");
  serveCmd->add_option("--metrics-bind-address", metricsAddress,
                       "Address of /metrics (overrides metricsBindAddress; \"0\" disables)");
  bool metricsSecure = false;
  std::string metricsCertDir;
  auto* metricsSecureFlag = serveCmd->add_flag(
      "--metrics-secure", metricsSecure,
      "Serve /metrics over HTTPS to bearer tokens allowed by TokenReview and SubjectAccessReview (overrides "
      "metricsSecure; --metrics-secure=false turns it off)");
  serveCmd->add_option("--metrics-cert-dir", metricsCertDir,
                       "Directory holding tls.crt and tls.key for --metrics-secure (overrides metricsCertDir; default: "
                       "a self-signed certificate)");
  serveCmd->add_option("--cert-dir", certDir, "Directory holding tls.crt and tls.key (overrides webhook.certDir)");
  serveCmd->add_option("--webhook-bind-address", webhookAddress,
                       "host:port of the TLS webhook server (overrides webhook.host and webhook.port)");
  std::size_t webhookEventLoops = 0;
  serveCmd
      ->add_option("--webhook-event-loops", webhookEventLoops,
                   "Threads answering the webhook, each with an event loop (default: two per CPU, at most eight; "
                   "under a CPU limit, about twice the limit)")
      ->check(CLI::Range(1, 64));

  std::string validateFile;
  auto* validateCmd = app.add_subcommand("validate-config", "Validate a configuration file and print every problem");
  validateCmd->add_option("FILE", validateFile, "Configuration file")->required();
  std::string validateKueueConfig;
  validateCmd->add_option("--kueue-config", validateKueueConfig,
                          "Kueue's own Configuration file: say which integrated kinds its "
                          "integrations.externalFrameworks lacks");

  auto* versionCmd = app.add_subcommand("version", "Print the version");

  // add-worker / remove-worker: one set of options, as both take the same ones.
  app::WorkerCommandOptions workerOptions;
  const auto workerCommand = [&](const std::string& name, const std::string& description) {
    auto* cmd = app.add_subcommand(name, description);
    cmd->add_option("NAME", workerOptions.name, "The MultiKueueCluster's name (worker1)")->required();
    cmd->add_option("--worker-kubeconfig", workerOptions.workerKubeconfig,
                    "Kubeconfig whose current context reaches the worker as an administrator")
        ->required();
    cmd->add_option("--manager-kubeconfig", workerOptions.managerKubeconfig,
                    "Kubeconfig of the manager (default: $KUBECONFIG, ~/.kube/config, in-cluster)");
    cmd->add_option("--config", workerOptions.configFile,
                    "The adapter's configuration file: its namespace, origin and multiKueue.externalFrameworks");
    cmd->add_option("--multikueue-config", workerOptions.multiKueueConfig,
                    "The MultiKueueConfig to edit (default: add-worker the only one, remove-worker every one listing "
                    "NAME)");
    return cmd;
  };
  auto* addWorkerCmd = workerCommand(
      "add-worker",
      "Onboard a worker cluster: on it a ServiceAccount, ClusterRole (what the dispatch loop calls there), binding "
      "and token; on the manager the kubeconfig Secret, the MultiKueueCluster NAME and NAME in the MultiKueueConfig. "
      "Running it again changes nothing");
  addWorkerCmd->add_flag("--dry-run", workerOptions.dryRun,
                         "Print the objects for both clusters as YAML (the kubeconfig with a placeholder token); "
                         "write nothing");
  auto* removeWorkerCmd = workerCommand(
      "remove-worker",
      "Undo add-worker: NAME out of the MultiKueueConfig, the MultiKueueCluster and its Secret off the manager, the "
      "ServiceAccount, its token, ClusterRole and binding off the worker");

  app::WorkersCommandOptions workersOptions;
  auto* workersCmd = app.add_subcommand(
      "workers",
      "One row per MultiKueueCluster, read through the kubeconfigs the manager holds: connected, the configured "
      "kinds it serves, its ClusterQueues' free/nominal quota per flavor and resource, this manager's pending and "
      "admitted Workloads there");
  addManagerFlags(workersCmd, workersOptions.managerKubeconfig, workersOptions.context);
  workersCmd->add_option("--config", workersOptions.configFile,
                         "The adapter's configuration file: its namespace, origin and multiKueue.externalFrameworks");
  workersCmd->add_option("-o,--output", workersOptions.output, "wide or json");

  app::ExplainCommandOptions explainOptions;
  auto* explainCmd = app.add_subcommand(
      "explain",
      "Where a job of a configured kind is and why: the facts read on the manager and on the worker it was "
      "dispatched to (through the kubeconfigs the manager holds), then one sentence: multikueue-adapter explain "
      "pipelinerun/hello -n ci");
  explainCmd->add_option("JOB", explainOptions.target, "KIND/NAME (pipelinerun/hello), or KIND followed by NAME")
      ->required();
  explainCmd->add_option("NAME", explainOptions.name, "The job's name when KIND is given apart");
  explainCmd->add_option("-n,--namespace", explainOptions.namespace_,
                         "The job's namespace (default: the context's, else default)");
  addManagerFlags(explainCmd, explainOptions.manager.kubeconfig, explainOptions.manager.context);
  explainCmd->add_option("--config", explainOptions.configFile,
                         "The adapter's configuration file: its kinds, namespace, origin and workerLostTimeout");
  explainCmd->add_option("-o,--output", explainOptions.output, "json");

  app::JobsCommandOptions jobsOptions;
  auto* jobsCmd = app.add_subcommand(
      "jobs", "One row per job of the configured kinds on the manager: queue, state (as explain says it), worker, age");
  jobsCmd->add_flag("-A,--all-namespaces", jobsOptions.allNamespaces, "Every namespace");
  jobsCmd->add_option("-n,--namespace", jobsOptions.namespace_, "The namespace (default: the context's, else default)");
  jobsCmd->add_option("--kind", jobsOptions.kind, "One configured kind (pipelinerun, Workflow.v1alpha1.argoproj.io)");
  addManagerFlags(jobsCmd, jobsOptions.manager.kubeconfig, jobsOptions.manager.context);
  jobsCmd->add_option("--config", jobsOptions.configFile,
                      "The adapter's configuration file: its kinds and workerLostTimeout");
  jobsCmd->add_option("-o,--output", jobsOptions.output, "wide or json");

  deploy::ManifestOptions manifestsOptions;
  std::string manifestsConfig, manifestsRole = "manager";
  auto* manifestsCmd = app.add_subcommand(
      "manifests",
      "Print everything needed to deploy the adapter for a configuration (Namespace, RBAC, ConfigMap, Deployment, "
      "Services, webhooks) as YAML: multikueue-adapter manifests --config my-config.yaml | kubectl apply -f -");
  manifestsCmd->add_option("--config", manifestsConfig, "Configuration file (the ConfigMap holds it as it is)")
      ->required();
  manifestsCmd->add_option("--role", manifestsRole, "manager (dispatch loop) or worker (no dispatch loop)")
      ->check(CLI::IsMember({"manager", "worker"}))
      ->capture_default_str();
  manifestsCmd->add_flag("--cert-manager", manifestsOptions.certManager,
                         "Add a cert-manager Issuer and Certificate for the webhooks' serving certificate, and the "
                         "CA injection annotations");
  manifestsCmd->add_option("--image", manifestsOptions.image, "The adapter's container image")->capture_default_str();
  bool prometheusRules = false;
  std::string stuckAfter = "30m";
  auto* prometheusRulesFlag = manifestsCmd->add_flag(
      "--prometheus-rules", prometheusRules,
      "Print only a PrometheusRule (monitoring.coreos.com/v1) with the adapter's alerts, each with "
      "a runbook, instead of the deployment");
  manifestsCmd
      ->add_option("--stuck-after", stuckAfter,
                   "With --prometheus-rules: how long a running Workload may stay Pending or Retry in the dispatch "
                   "loop's admission check before an alert fires (a Go duration, at least 1s)")
      ->capture_default_str()
      ->needs(prometheusRulesFlag);

#if MKA_WITH_SANDBOX
  SandboxCommandOptions sandboxOptions;
  std::string sandboxClusters = "manager,worker1,worker2";
  auto* sandboxCmd = app.add_subcommand(
      "sandbox",
      "Run emulated Kubernetes API servers (one HTTPS port, CA and bearer token per cluster) until SIGTERM/SIGINT, "
      "writing <dir>/<cluster>.kubeconfig for kubectl and the adapter; prints \"<cluster> <kubeconfig> <server>\" "
      "per cluster");
  sandboxCmd->add_option("--dir", sandboxOptions.dir, "Directory for the kubeconfig files (created if missing)")
      ->required();
  sandboxCmd->add_option("--clusters", sandboxClusters, "Comma-separated cluster names (DNS labels)")
      ->capture_default_str();
  sandboxCmd->add_option("--crds", sandboxOptions.crds,
                         "CRD manifest files or directories (*.yaml, *.yml) created in every cluster. Default: "
                         "../shared/crds if it exists (Kueue, Tekton and Argo CRDs next to a development "
                         "checkout), else test/fixtures/crds (run from a checkout), both relative to the current "
                         "directory, else none");
  sandboxCmd->add_flag("--no-crds", sandboxOptions.noCrds, "Start with the built-in kinds only");
  sandboxCmd->add_option("--host", sandboxOptions.host, "Address the clusters listen on")->capture_default_str();
  sandboxCmd
      ->add_option("--watch-history", sandboxOptions.watchHistory,
                   "Events each cluster keeps so that a watch or list can resume from an older resourceVersion; "
                   "older ones answer 410 Gone, as kube-apiserver does once its watch cache moved on")
      ->check(CLI::Range(std::size_t{1}, std::size_t{10'000'000}))
      ->capture_default_str();

  DemoOptions demoOptions;
  std::string demoWorkers = "worker1,worker2";
  double demoRunSeconds = 3;
  auto* demoCmd = app.add_subcommand(
      "demo",
      "Show the whole MultiKueue flow without a cluster: a sandbox manager and workers, stand-ins for Kueue's core "
      "and the Tekton and Argo controllers, this adapter on the manager (webhooks, dispatch loop, job integration) "
      "and on each worker (job integration), and the sample PipelineRuns and Workflows of manifests/samples/jobs");
  demoCmd->add_flag("--keep", demoOptions.keep,
                    "Keep the sandbox and the adapter running after the summary (kubectl can look), until Ctrl-C");
  demoCmd->add_option("--dir", demoOptions.dir,
                      "Directory for kubeconfigs, certificates and the adapter's config (default: a temp directory)");
  auto* workersOption =
      demoCmd->add_option("--workers", demoWorkers, "Comma-separated worker cluster names, or how many (worker1..N)")
          ->capture_default_str();
  demoCmd
      ->add_option("--dispatcher", demoOptions.dispatcher,
                   "all-at-once, incremental or quota-aware (each worker then holds a different number of jobs)")
      ->check(CLI::IsMember({"all-at-once", "incremental", "quota-aware"}))
      ->capture_default_str();
  auto* singleFlag =
      demoCmd
          ->add_flag("--single-cluster", demoOptions.singleCluster,
                     "One cluster, no MultiKueue: Kueue queueing for an Argo Workflow and an in-house TrainingRun CRD "
                     "(manifests/samples/single-cluster), the adapter with dispatch off")
          ->excludes(workersOption);
  demoCmd
      ->add_flag("--ocm", demoOptions.ocm,
                 "An Open Cluster Management fleet: three workers, an OCM Placement choosing two by label, the "
                 "adapter's built-in placement controller; a worker relabelled moves new jobs to the new set")
      ->excludes(workersOption)
      ->excludes(singleFlag);
  demoCmd->add_option("--run-seconds", demoRunSeconds, "How long each job runs on its worker")->capture_default_str();
  demoCmd->add_option("--samples", demoOptions.samples, "The manifests/samples directory (default: found from here)");
  demoCmd->add_option("--crds", demoOptions.crds, "CRD directory (default: test/fixtures/crds found from here)");
#else
  auto* sandboxCmd = notBuiltIn(app, "sandbox");
  auto* demoCmd = notBuiltIn(app, "demo");
#endif

  // The plugin's --help lists only what it serves.
  if (plugin)
    for (auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (std::find(kPluginSubcommands.begin(), kPluginSubcommands.end(), sub->get_name()) == kPluginSubcommands.end())
        sub->group("");

  try {
    app.parse(withDefaultSubcommand(argc, argv, plugin));
  } catch (const CLI::ParseError& e) {
    // --help and --version answer 0; every usage error exits 2, as Go's flag package and
    // kubectl do (CLI11's own codes, 105-119, mean nothing to a script).
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    observability::LogOptions logOptions;
    logOptions.format = observability::parseLogFormat(logFormat);
    logOptions.level =
        logLevel.empty() ? observability::verbosityToLevel(verbosity) : observability::parseLogLevel(logLevel);
    // The demo tells its story on stdout; logs would drown it unless asked for.
    if (demoCmd->parsed() && logLevel.empty() && verbosity == 0) logOptions.level = spdlog::level::warn;
    observability::setupLogging(logOptions);
  } catch (const Error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }

  if (plugin) {
    const auto parsed = app.get_subcommands();
    const bool served = !parsed.empty() && std::find(kPluginSubcommands.begin(), kPluginSubcommands.end(),
                                                     parsed.front()->get_name()) != kPluginSubcommands.end();
    if (!served) {
      std::cerr << "kubectl multikueue: serves explain, jobs and workers; run multikueue-adapter "
                << (parsed.empty() ? std::string("--help") : parsed.front()->get_name()) << " for the other commands\n";
      return 2;
    }
  }
  if (explainCmd->parsed()) return app::explainCommand(explainOptions, std::cout, std::cerr);
  if (jobsCmd->parsed()) return app::jobsCommand(jobsOptions, std::cout, std::cerr);
  if (versionCmd->parsed()) {
    std::cout << "multikueue-adapter " << MKA_VERSION << '\n';
    return 0;
  }
  if (addWorkerCmd->parsed()) return app::addWorkerCommand(workerOptions, std::cout, std::cerr);
  if (removeWorkerCmd->parsed()) return app::removeWorkerCommand(workerOptions, std::cout, std::cerr);
  if (workersCmd->parsed()) return app::workersCommand(workersOptions, std::cout, std::cerr);
  if (validateCmd->parsed()) return app::validateConfigCommand(validateFile, std::cout, std::cerr, validateKueueConfig);
  if (manifestsCmd->parsed() && prometheusRules) {
    const auto parsed = parseDuration(stuckAfter);
    if (!parsed || *parsed < std::chrono::seconds{1}) {
      std::cerr << "manifests: --stuck-after: \"" << stuckAfter
                << "\" is not a Go duration of at least 1s: write e.g. --stuck-after=30m or --stuck-after=2h\n";
      return 2;
    }
    deploy::PrometheusRuleOptions rulesOptions;
    rulesOptions.stuckAfter = std::chrono::duration_cast<std::chrono::seconds>(*parsed);
    return deploy::prometheusRulesCommand(manifestsConfig, rulesOptions, std::cout, std::cerr);
  }
  if (manifestsCmd->parsed()) {
    manifestsOptions.role = *deploy::parseRole(manifestsRole);  // checked by CLI::IsMember
    return deploy::manifestsCommand(manifestsConfig, manifestsOptions, std::cout, std::cerr);
  }
#if MKA_WITH_SANDBOX
  if (sandboxCmd->parsed()) {
    sandboxOptions.clusters.clear();
    for (const auto& name : strings::split(sandboxClusters, ',')) {
      const auto trimmed = strings::trim(name);
      if (!trimmed.empty()) sandboxOptions.clusters.emplace_back(trimmed);
    }
    return demo::sandboxCommand(sandboxOptions, std::cout);
  }

  if (demoCmd->parsed()) {
    demoOptions.workers.clear();
    if (demoOptions.ocm) demoWorkers = "worker1,worker2,worker3";
    if (!demoWorkers.empty() && std::all_of(demoWorkers.begin(), demoWorkers.end(), ::isdigit)) {
      std::string names;
      for (int i = 1; i <= std::stoi(demoWorkers); ++i) names += (i > 1 ? "," : "") + ("worker" + std::to_string(i));
      demoWorkers = names;
    }
    for (const auto& name : strings::split(demoWorkers, ',')) {
      const auto trimmed = strings::trim(name);
      if (!trimmed.empty()) demoOptions.workers.emplace_back(trimmed);
    }
    demoOptions.runTime = std::chrono::milliseconds{static_cast<long>(demoRunSeconds * 1000)};
    return demo::demoCommand(demoOptions, std::cout);
  }
#else
  if (sandboxCmd->parsed()) return notBuiltInCommand("sandbox");
  if (demoCmd->parsed()) return notBuiltInCommand("demo");
#endif

  if (!configFile.empty()) serveOptions.configFile = configFile;
  if (!kubeconfig.empty()) serveOptions.kubeconfig = kubeconfig;
  if (!healthAddress.empty()) serveOptions.healthProbeBindAddress = healthAddress;
  if (!metricsAddress.empty()) serveOptions.metricsBindAddress = metricsAddress;
  if (!certDir.empty()) serveOptions.certDir = certDir;
  if (metricsSecureFlag->count() > 0) serveOptions.metricsSecure = metricsSecure;
  if (!metricsCertDir.empty()) serveOptions.metricsCertDir = metricsCertDir;
  if (!webhookAddress.empty()) serveOptions.webhookBindAddress = webhookAddress;
  if (webhookEventLoops > 0) serveOptions.webhookEventLoops = webhookEventLoops;
  serveOptions.version = MKA_VERSION;
  return app::serve(serveOptions);
}

}  // namespace mka::cli
