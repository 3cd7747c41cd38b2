// Value rules, through the whole loader and on configurations built in code.
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "mka/config/loader.h"
#include "support/table_test.h"

namespace mka::config {
namespace {

using namespace std::chrono_literals;
using test::adapterDoc;
using test::rendered;

// One bad value gives exactly one error, at `path`, whose problem and fix contain the given texts.
struct BadValueCase {
  std::string name;
  std::string body;
  std::string path;
  std::string problem;
  std::string fix;
};

void runBadValueCase(const BadValueCase& c) {
  auto result = parseConfiguration(adapterDoc(c.body));
  ASSERT_EQ(result.errors.size(), 1u) << joinErrors(result.errors);
  const auto& e = result.errors[0];
  EXPECT_EQ(e.path, c.path);
  EXPECT_NE(e.problem.find(c.problem), std::string::npos) << e.problem;
  EXPECT_NE(e.fix.find(c.fix), std::string::npos) << e.fix;
}

std::string framework(const std::string& name) {
  return "multiKueue:\n  externalFrameworks:\n  - name: \"" + name + "\"\n";
}

const std::string kNameFix = "write it as Kind.version.group, for example PipelineRun.v1.tekton.dev";
const std::string kNamePath = "multiKueue.externalFrameworks[0].name";

std::vector<BadValueCase> frameworkNamesCases() {
  return {
      {"empty version, which Kueue accepts", framework("PipelineRun..tekton.dev"), kNamePath,
       "the version part is empty", kNameFix},
      {"empty kind", framework(".v1.tekton.dev"), kNamePath, "the Kind part is empty", kNameFix},
      {"empty group", framework("PipelineRun.v1."), kNamePath, "the group part is empty", kNameFix},
      {"all empty", framework(".."), kNamePath,
       "the Kind part is empty; the version part is empty; the group part is empty", kNameFix},
      {"no dots", framework("PipelineRun"), kNamePath, "must be in 'Kind.version.group' format, not \"PipelineRun\"",
       kNameFix},
      {"one dot", framework("PipelineRun.tekton"), kNamePath, "must be in 'Kind.version.group' format", kNameFix},
      {"empty", framework(""), kNamePath, "is required", kNameFix},
      {"lower-case kind suggests the fix", framework("pipelineRun.v1.tekton.dev"), kNamePath,
       "the Kind \"pipelineRun\" must start with an upper-case letter and hold only letters and digits",
       "did you mean \"PipelineRun.v1.tekton.dev\"?"},
      {"a built-in kind in lower case gets its own spelling", framework("pipelinerun.v1.tekton.dev"), kNamePath,
       "the Kind \"pipelinerun\" must start with an upper-case letter", "did you mean \"PipelineRun.v1.tekton.dev\"?"},
      {"the same for Argo", framework("workFlow.v1alpha1.argoproj.io"), kNamePath,
       "the Kind \"workFlow\" must start with an upper-case letter", "did you mean \"Workflow.v1alpha1.argoproj.io\"?"},
      {"kind with a dash", framework("Pipeline-Run.v1.tekton.dev"), kNamePath,
       "the Kind \"Pipeline-Run\" must start with an upper-case letter", kNameFix},
      {"upper-case version", framework("PipelineRun.V1.tekton.dev"), kNamePath,
       "the version \"V1\" must be lower-case letters, digits and '-'", kNameFix},
      {"upper-case group", framework("PipelineRun.v1.Tekton.dev"), kNamePath,
       "the group \"Tekton.dev\" must be a lower-case DNS name", kNameFix},
      {"missing version", framework("PipelineRun.tekton.dev"), kNamePath, "the group \"dev\" has no dot",
       "the version seems to be missing: " + kNameFix},
      {"built-in group without a dot", framework("Job.v1.batch"), kNamePath, "the group \"batch\" has no dot",
       kNameFix},
  };
}

MKA_TABLE_TEST(Validate, FrameworkNames, BadValueCase, frameworkNamesCases()) { runBadValueCase(testCase()); }

TEST(Validate, DuplicateFrameworksNameTheEarlierIndex) {
  auto result = parseConfiguration(adapterDoc(R"(multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
  - name: PipelineRun.v1.tekton.dev
    managedBy: {path: spec.managedBy}
  - name: PipelineRun.v1beta1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)"));
  EXPECT_EQ(rendered(result.errors),
            (std::vector<std::string>{
                "multiKueue.externalFrameworks[2].name: duplicates multiKueue.externalFrameworks[0].name "
                "(tekton.dev/v1, Kind=PipelineRun): remove one of the two entries",
                "multiKueue.externalFrameworks[4].name: duplicates multiKueue.externalFrameworks[1].name "
                "(argoproj.io/v1alpha1, Kind=Workflow): remove one of the two entries"}));
}

// A kind's resource is its CRD's plural: a lower-case DNS label, read from either list; the
// renderings (manifests, add-worker) need one where the guess from the kind is doubtful, and
// the same everywhere for a kind.
TEST(Validate, ResourcesAreCrdPluralsAndRequiredWhereTheGuessIsDoubtful) {
  runBadValueCase({"upper case", framework("PipelineRun.v1.tekton.dev") + "    resource: PipelineRuns\n",
                   "multiKueue.externalFrameworks[0].resource",
                   "invalid value \"PipelineRuns\": a lowercase RFC 1123 label",
                   "write the plural of the kind's CRD (kubectl get crd -o jsonpath='{.spec.names.plural}')"});

  const auto gateway = [](const std::string& resource) {
    return adapterDoc(
        "dispatch: {enabled: false}\nmanagedByDefaulting: Never\n"
        "integrations:\n  frameworks:\n  - name: Gateway.v1.net.example.com\n" +
        (resource.empty() ? "" : "    resource: " + resource + "\n") +
        "    suspend: {path: spec.suspend, value: true}\n"
        "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
        "    finished: {condition: {type: Succeeded}}\n");
  };
  const auto guessed = parseConfiguration(gateway(""));
  ASSERT_TRUE(guessed.ok()) << joinErrors(guessed.errors);
  EXPECT_EQ(guessed.config->resourceOf({"net.example.com", "v1", "Gateway"}), "gatewaies");
  const auto unresolved = unresolvedResources(*guessed.config);
  ASSERT_EQ(unresolved.size(), 1u);
  EXPECT_EQ(unresolved[0].path, "integrations.frameworks[0].resource");
  const auto written = parseConfiguration(gateway("gateways"));
  ASSERT_TRUE(written.ok()) << joinErrors(written.errors);
  EXPECT_EQ(written.config->resourceOf({"net.example.com", "v1", "Gateway"}), "gateways");
  EXPECT_TRUE(unresolvedResources(*written.config).empty());

  auto twice = *written.config;
  twice.multiKueue.externalFrameworks.push_back(
      {.name = "Gateway.v1.net.example.com", .gvk = {"net.example.com", "v1", "Gateway"}, .resource = "gateway"});
  EXPECT_EQ(rendered(unresolvedResources(twice)),
            (std::vector<std::string>{
                "integrations.frameworks[0].resource: \"gateways\" differs from "
                "multiKueue.externalFrameworks[0].resource (\"gateway\") for the same kind Gateway.net.example.com: "
                "write the plural of the kind's CRD in both"}));
}

std::vector<BadValueCase> multiKueueValuesCases() {
  return {
      {"negative gcInterval", "multiKueue: {gcInterval: -1m}\n", "multiKueue.gcInterval",
       "must be greater than or equal to 0, not -1m0s", "use 0 to turn garbage collection off"},
      {"negative workerLostTimeout", "multiKueue: {workerLostTimeout: -5s}\n", "multiKueue.workerLostTimeout",
       "must be greater than or equal to 0, not -5s", "such as 15m"},
      {"origin with a slash", "multiKueue: {origin: a/b}\n", "multiKueue.origin",
       "invalid value \"a/b\": a valid label must be an empty string", "such as multikueue"},
      {"origin too long", "multiKueue: {origin: " + std::string(64, 'a') + "}\n", "multiKueue.origin",
       "must be no more than 63 characters", "at most 63"},
      {"a step size for a dispatcher that takes none", "multiKueue: {incrementalDispatcherConfig: {stepSize: 2}}\n",
       "multiKueue.incrementalDispatcherConfig",
       "is only valid when dispatcherName is set to the incremental dispatcher "
       "(kueue.x-k8s.io/multikueue-dispatcher-incremental) or ours (multikueue-adapter.dev/quota-aware)",
       "remove it, or set multiKueue.dispatcherName"},
      {"a step size below one",
       "multiKueue: {dispatcherName: multikueue-adapter.dev/quota-aware, incrementalDispatcherConfig: {stepSize: 0}}\n",
       "multiKueue.incrementalDispatcherConfig.stepSize", "must be greater than or equal to 1, not 0",
       "at least one worker"},
  };
}

MKA_TABLE_TEST(Validate, MultiKueueValues, BadValueCase, multiKueueValuesCases()) { runBadValueCase(testCase()); }

std::string provider(const std::string& fields, const std::string& list = "accessProviders") {
  return "multiKueue:\n  clusterProfile:\n    " + list + ":\n    - {" + fields + "}\n";
}
const std::string kExec = "command: /bin/cp-creds, apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never";

// Kueue's rules for multiKueue.clusterProfile, with the entry's index in the path.
std::vector<BadValueCase> clusterProfileAccessProvidersCases() {
  const std::string p0 = "multiKueue.clusterProfile.accessProviders[0]";
  return {
      {"no name", provider("execConfig: {" + kExec + "}"), p0 + ".name", "must be specified", "status.accessProviders"},
      {"no command",
       provider("name: p, execConfig: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
                "Never}"),
       p0 + ".execConfig.command", "must be specified", "credential plugin's path"},
      {"no apiVersion", provider("name: p, execConfig: {command: c, interactiveMode: Never}"),
       p0 + ".execConfig.apiVersion", "must be specified", "client.authentication.k8s.io/v1"},
      {"an apiVersion client-go does not run",
       provider("name: p, execConfig: {command: c, apiVersion: client.authentication.k8s.io/v1alpha1, "
                "interactiveMode: Never}"),
       p0 + ".execConfig.apiVersion", "unsupported value \"client.authentication.k8s.io/v1alpha1\"",
       "client.authentication.k8s.io/v1"},
      {"no interactiveMode", provider("name: p, execConfig: {command: c, apiVersion: client.authentication.k8s.io/v1}"),
       p0 + ".execConfig.interactiveMode", "must be specified", "Never"},
      {"a mode client-go does not know",
       provider("name: p, execConfig: {command: c, apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
                "Sometimes}"),
       p0 + ".execConfig.interactiveMode", "unsupported value \"Sometimes\"", "Never"},
      {"an env var without a name", provider("name: p, execConfig: {" + kExec + ", env: [{value: x}]}"),
       p0 + ".execConfig.env[0].name", "must be specified", "name the environment variable"},
      {"the deprecated list is checked the same way",
       provider("name: p, execConfig: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}",
                "credentialsProviders"),
       "multiKueue.clusterProfile.credentialsProviders[0].execConfig.command", "must be specified", "plugin"},
  };
}

MKA_TABLE_TEST(Validate, ClusterProfileAccessProviders, BadValueCase, clusterProfileAccessProvidersCases()) {
  runBadValueCase(testCase());
}

TEST(Validate, ClusterProfileAccessProviders) {
  // Both lists: Kueue forbids the deprecated one, and checks accessProviders only.
  auto both =
      parseConfiguration(adapterDoc("multiKueue:\n  clusterProfile:\n    accessProviders: [{name: a, "
                                    "execConfig: {" +
                                    kExec + "}}]\n    credentialsProviders: [{name: b}]\n"));
  ASSERT_EQ(both.errors.size(), 1u) << joinErrors(both.errors);
  EXPECT_EQ(both.errors[0].path, "multiKueue.clusterProfile.credentialsProviders");
  EXPECT_EQ(both.errors[0].problem, "must not be specified when accessProviders is specified");

  auto good = parseConfiguration(adapterDoc(provider("name: p, execConfig: {" + kExec + "}")));
  EXPECT_TRUE(good.errors.empty()) << joinErrors(good.errors);
}

TEST(Validate, ZeroDurationsAreAllowedWhereKueueAllowsThem) {
  auto result = parseConfiguration(adapterDoc("multiKueue: {gcInterval: 0s, workerLostTimeout: 0s}\n"));
  EXPECT_TRUE(result.ok()) << joinErrors(result.errors);
}

std::vector<BadValueCase> serverSettingsCases() {
  return {
      {"port 0", "webhook: {port: 0}\n", "webhook.port", "must be between 1 and 65535, not 0", "such as 9443"},
      {"port too big", "webhook: {port: 65536}\n", "webhook.port", "must be between 1 and 65535, not 65536", "9443"},
      {"empty certDir", "webhook: {certDir: \"\"}\n", "webhook.certDir", "must not be empty", "serving-certs"},
      {"certName with a slash", "webhook: {certName: certs/tls.crt}\n", "webhook.certName",
       "must be a file name inside certDir, not \"certs/tls.crt\"", "such as tls.crt"},
      {"empty keyName", "webhook: {keyName: \"\"}\n", "webhook.keyName", "must be a file name inside certDir",
       "such as tls.key"},
      {"bind address without a colon", "metricsBindAddress: \"8080\"\n", "metricsBindAddress",
       "must be [host]:port or \"0\", not \"8080\"", "such as :8080 or 127.0.0.1:8080, or \"0\" to turn it off"},
      {"bind address port 0", "healthProbeBindAddress: \":0\"\n", "healthProbeBindAddress",
       "must end with a port number between 1 and 65535", "such as :8081"},
      {"bind address port too big", "metricsBindAddress: \":99999\"\n", "metricsBindAddress",
       "must end with a port number between 1 and 65535", ":8080"},
      {"bind address port not a number", "metricsBindAddress: \"localhost:http\"\n", "metricsBindAddress",
       "must end with a port number", ":8080"},
      {"bind address empty", "metricsBindAddress: \"\"\n", "metricsBindAddress", "must be [host]:port", "\"0\""},
      {"IPv6 without brackets", "metricsBindAddress: \"::1:8080\"\n", "metricsBindAddress",
       "IPv6 host that is not in brackets", ":8080"},
      {"IPv6 unclosed", "metricsBindAddress: \"[::1:8080\"\n", "metricsBindAddress", "without its closing ']'",
       ":8080"},
      {"namespace", "namespace: Kueue_System\n", "namespace",
       "invalid value \"Kueue_System\": a lowercase RFC 1123 label", "such as kueue-system"},
  };
}

MKA_TABLE_TEST(Validate, ServerSettings, BadValueCase, serverSettingsCases()) { runBadValueCase(testCase()); }

TEST(Validate, GoodBindAddresses) {
  for (const std::string address : {"0", ":8080", "127.0.0.1:8080", "localhost:1", "[::1]:8080", "[::]:65535"}) {
    SCOPED_TRACE(address);
    auto result = parseConfiguration(adapterDoc("metricsBindAddress: \"" + address + "\"\n"));
    EXPECT_TRUE(result.ok()) << joinErrors(result.errors);
  }
}

std::vector<BadValueCase> leaderElectionFollowsClientGoCases() {
  return {
      {"lease not longer than renew", "leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n",
       "leaderElection.leaseDuration", "must be longer than renewDeadline (10s), not 10s",
       "for example leaseDuration: 15s with renewDeadline: 10s"},
      {"renew within the retry jitter", "leaderElection: {renewDeadline: 6s, retryPeriod: 5s}\n",
       "leaderElection.renewDeadline", "must be longer than 1.2 x retryPeriod (6s), not 6s",
       "for example renewDeadline: 10s with retryPeriod: 2s"},
      {"zero retry", "leaderElection: {retryPeriod: 0s}\n", "leaderElection.retryPeriod",
       "must be greater than 0, not 0s", "such as 2s"},
      {"bad lease name", "leaderElection: {resourceName: Adapter_Lock}\n", "leaderElection.resourceName",
       "invalid value \"Adapter_Lock\"", "such as multikueue-adapter"},
      {"bad lease namespace", "leaderElection: {resourceNamespace: a.b}\n", "leaderElection.resourceNamespace",
       "must not contain dots", "such as kueue-system"},
  };
}

MKA_TABLE_TEST(Validate, LeaderElectionFollowsClientGo, BadValueCase, leaderElectionFollowsClientGoCases()) {
  runBadValueCase(testCase());
}

TEST(Validate, LeaderElectionFollowsClientGo) {
  auto negative = parseConfiguration(adapterDoc("leaderElection: {leaseDuration: -1s}\n"));
  EXPECT_EQ(test::paths(negative.errors), std::vector<std::string>{"leaderElection.leaseDuration"});
}

TEST(Validate, LeaderElectionIsNotCheckedWhenOff) {
  auto result = parseConfiguration(adapterDoc("leaderElection: {leaderElect: false, leaseDuration: 1s}\n"));
  EXPECT_TRUE(result.ok()) << joinErrors(result.errors);
}

std::vector<BadValueCase> clientConnectionAndDispatchCases() {
  return {
      {"qps zero", "clientConnection: {qps: 0}\n", "clientConnection.qps", "must be greater than 0, not 0",
       "such as 50"},
      {"qps negative", "clientConnection: {qps: -2.5}\n", "clientConnection.qps", "must be greater than 0, not -2.5",
       "such as 50"},
      {"burst zero", "clientConnection: {burst: 0}\n", "clientConnection.burst", "must be at least 1, not 0",
       "such as 100"},
      {"controller name without a domain", "dispatch: {admissionCheckControllerName: dispatcher}\n",
       "dispatch.admissionCheckControllerName", "must be a domain-prefixed path (such as \"acme.io/foo\")",
       "multikueue-adapter.dev/dispatcher"},
      {"controller name empty", "dispatch: {admissionCheckControllerName: \"\"}\n",
       "dispatch.admissionCheckControllerName", "must not be empty", "domain-prefixed"},
      {"controller name with an upper-case domain", "dispatch: {admissionCheckControllerName: Example.com/x}\n",
       "dispatch.admissionCheckControllerName", "a lowercase RFC 1123 subdomain", "domain-prefixed"},
      {"controller name too long",
       "dispatch: {admissionCheckControllerName: example.com/" + std::string(250, 'a') + "}\n",
       "dispatch.admissionCheckControllerName", "must be no more than 253 characters", "domain-prefixed"},
      {"no workload workers", "dispatch: {workloadConcurrency: 0}\n", "dispatch.workloadConcurrency",
       "must be between 1 and 256, not 0", "how many Workloads the dispatch loop reconciles at once"},
      {"a thread per workload", "dispatch: {workloadConcurrency: 10000}\n", "dispatch.workloadConcurrency",
       "must be between 1 and 256, not 10000", "such as 8"},
      {"managedByDefaulting case", "managedByDefaulting: multikueuequeues\n", "managedByDefaulting",
       "must be MultiKueueQueues, QueueLabeled or Never, not \"multikueuequeues\"",
       "did you mean \"MultiKueueQueues\"?"},
      {"managedByDefaulting unknown", "managedByDefaulting: Always\n", "managedByDefaulting",
       "must be MultiKueueQueues, QueueLabeled or Never, not \"Always\"",
       "use MultiKueueQueues (jobs in queues dispatched by MultiKueue), QueueLabeled"},
  };
}

MKA_TABLE_TEST(Validate, ClientConnectionAndDispatch, BadValueCase, clientConnectionAndDispatchCases()) {
  runBadValueCase(testCase());
}

TEST(Validate, WorkloadConcurrencyInAKueueConfigurationIsNamedByItsKueuePath) {
  auto good = parseConfiguration(
      test::kueueDoc("controller:\n  groupKindConcurrency:\n    Job.batch: 5\n    Workload.kueue.x-k8s.io: 3\n"));
  ASSERT_TRUE(good.ok()) << joinErrors(good.errors);
  EXPECT_EQ(good.config->dispatch.workloadConcurrency, 3);

  auto bad =
      parseConfiguration(test::kueueDoc("controller:\n  groupKindConcurrency:\n    Workload.kueue.x-k8s.io: -1\n"));
  ASSERT_EQ(bad.errors.size(), 1u) << joinErrors(bad.errors);
  EXPECT_EQ(bad.errors[0].path, "controller.groupKindConcurrency.Workload.kueue.x-k8s.io");
  EXPECT_NE(bad.errors[0].problem.find("must be between 1 and 256, not -1"), std::string::npos);

  auto typo = parseConfiguration(test::kueueDoc("controller:\n  groupKindConcurency: {Workload.kueue.x-k8s.io: 3}\n"));
  EXPECT_EQ(test::paths(typo.errors), std::vector<std::string>{"controller.groupKindConcurency"});
}

TEST(Validate, TypeErrorsAreNotRepeatedAsValueErrors) {
  auto result = parseConfiguration(adapterDoc("multiKueue: {externalFrameworks: [{name: [a]}]}\n"));
  EXPECT_EQ(test::paths(result.errors), std::vector<std::string>{"multiKueue.externalFrameworks[0].name"});
}

TEST(Validate, ConfigurationBuiltInCode) {
  Configuration good;
  EXPECT_TRUE(validateConfiguration(good).empty());

  Configuration bad;
  bad.webhook.port = -1;
  bad.multiKueue.origin = "-x-";
  ExternalFramework f;
  f.name = "Thing.v1.example.com";
  f.gvk = {"example.com", "v1", "Thing"};
  f.managedBy.path = "spec.bad-field";
  bad.multiKueue.externalFrameworks.push_back(f);
  ExternalFramework fromProfile = f;  // a profile's location is trusted, never re-checked
  fromProfile.name = "Other.v1.example.com";
  fromProfile.gvk.kind = "Other";
  fromProfile.managedByFromProfile = true;
  bad.multiKueue.externalFrameworks.push_back(fromProfile);

  EXPECT_EQ(test::paths(validateConfiguration(bad)),
            (std::vector<std::string>{"webhook.port", "multiKueue.origin",
                                      "multiKueue.externalFrameworks[0].managedBy.path"}));
}

struct ManagedByPathCase {
  std::string name;
  std::string path;
  bool ok;
};

std::vector<ManagedByPathCase> managedByPathsCases() {
  return {{"Kueue's field", "spec.managedBy", true},
          {"a nested field", "spec.runPolicy.managedBy", true},
          {"underscore and digit", "spec.a_b.c1", true},
          {"spec itself", "spec", false},
          {"trailing dot", "spec.", false},
          {"empty segment", "spec..managedBy", false},
          {"outside spec", "status.managedBy", false},
          {"segment starting with a digit", "spec.1x", false},
          {"dash", "spec.managed-by", false},
          {"brackets", "spec.labels[x]", false},
          {"empty", "", false}};
}

MKA_TABLE_TEST(Validate, ManagedByPaths, ManagedByPathCase, managedByPathsCases()) {
  const ManagedByPathCase& c = testCase();
  SCOPED_TRACE(c.path);
  auto result = parseConfiguration(
      adapterDoc("multiKueue: {externalFrameworks: [{name: X.v1.a.b, managedBy: {path: \"" + c.path + "\"}}]}\n"));
  EXPECT_EQ(result.ok(), c.ok) << joinErrors(result.errors);
}

}  // namespace
}  // namespace mka::config

namespace mka::config {
namespace {

// With dispatch off Kueue's own MultiKueue dispatches the external frameworks, and its adapter
// reads the marker at spec.managedBy only: any other marker is refused, naming the field.
std::vector<BadValueCase> webhookOnlyModeRefusesMarkersKueueCannotReadCases() {
  const std::string webhookOnly = "dispatch: {enabled: false}\n";
  const std::string fix = "set dispatch.enabled: true, so that the adapter dispatches the kind";
  return {
      {"a built-in profile's label", webhookOnly + framework("Workflow.v1alpha1.argoproj.io"),
       "multiKueue.externalFrameworks[0].name",
       "Workflow's MultiKueue marker is the label \"workflows.argoproj.io/controller-instanceid\" (its built-in "
       "profile)",
       fix},
      {"a label of one's own",
       webhookOnly + framework("Job.v1.example.com") + "    managedBy: {label: example.com/managed-by, value: mk}\n",
       "multiKueue.externalFrameworks[0].managedBy", "the label \"example.com/managed-by\"", fix},
      {"a field other than spec.managedBy",
       webhookOnly + framework("PyTorchJob.v1.kubeflow.org") + "    managedBy: {path: spec.runPolicy.managedBy}\n",
       "multiKueue.externalFrameworks[0].managedBy",
       "the field \"spec.runPolicy.managedBy\", but with dispatch.enabled false Kueue's own MultiKueue dispatches it",
       fix},
  };
}

MKA_TABLE_TEST(Validate, WebhookOnlyModeRefusesMarkersKueueCannotRead, BadValueCase,
               webhookOnlyModeRefusesMarkersKueueCannotReadCases()) {
  runBadValueCase(testCase());
}

TEST(Validate, WebhookOnlyModeRefusesMarkersKueueCannotRead) {
  const std::string webhookOnly = "dispatch: {enabled: false}\n";
  for (const auto& ok : {webhookOnly + framework("PipelineRun.v1.tekton.dev"),
                         webhookOnly + framework("Job.v1.example.com"), framework("Workflow.v1alpha1.argoproj.io")}) {
    SCOPED_TRACE(ok);
    EXPECT_TRUE(parseConfiguration(adapterDoc(ok)).ok()) << joinErrors(parseConfiguration(adapterDoc(ok)).errors);
  }
}

}  // namespace
}  // namespace mka::config

namespace mka::config {
namespace {

std::vector<BadValueCase> secureMetricsNeedTheirOwnServerCases() {
  return {
      {"metrics off", "metricsSecure: true\nmetricsBindAddress: \"0\"\n", "metricsSecure",
       "metricsBindAddress is \"0\"", "set metricsBindAddress, such as :8443"},
      {"shared with the probes", "metricsSecure: true\nmetricsBindAddress: \":8081\"\n", "metricsSecure",
       "share their address with the health probes", "give metricsBindAddress its own port"},
      {"a certificate for plain HTTP", "metricsCertDir: /certs\n", "metricsCertDir", "metricsSecure is false",
       "set metricsSecure: true"},
  };
}

MKA_TABLE_TEST(Validate, SecureMetricsNeedTheirOwnServer, BadValueCase, secureMetricsNeedTheirOwnServerCases()) {
  runBadValueCase(testCase());
}

TEST(Validate, SecureMetricsNeedTheirOwnServer) {
  EXPECT_TRUE(parseConfiguration(adapterDoc("metricsSecure: true\nmetricsCertDir: /certs\n")).ok());
}

}  // namespace
}  // namespace mka::config
