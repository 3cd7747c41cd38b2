// The command line, through the real binary: exit codes and what it prints.
#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mka/app/validate_config.h"
#include "mka/version.h"
#include "support/table_test.h"
#include "support/temp_dir.h"

namespace mka::app {
namespace {

struct Run {
  int exitCode;
  std::string output;  // stdout and stderr
};

Run run(const std::string& args) {
  std::string command = std::string(MKA_BINARY) + " " + args + " 2>&1";
  Run result{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  while (auto n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(CliTest, VersionPrintsTheVersion) {
  auto r = run("version");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.output, std::string("multikueue-adapter ") + MKA_VERSION + "\n");
}

TEST(CliTest, ValidateConfigExitCodes) {
  test::TempDir dir;
  auto good = dir.write("good.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
)");
  auto bad = dir.write("bad.yaml", R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
multikueue: {}
)");
  auto ok = run("validate-config " + good.string());
  EXPECT_EQ(ok.exitCode, 0) << ok.output;
  EXPECT_NE(ok.output.find("PipelineRun.v1.tekton.dev (managedBy spec.managedBy)"), std::string::npos) << ok.output;

  auto ko = run("validate-config " + bad.string());
  EXPECT_EQ(ko.exitCode, 1) << ko.output;
  EXPECT_NE(ko.output.find("multikueue: "), std::string::npos) << ko.output;
  EXPECT_NE(ko.output.find("multiKueue"), std::string::npos) << ko.output;  // the did-you-mean hint

  auto missing = run("validate-config " + (dir / "missing.yaml").string());
  EXPECT_EQ(missing.exitCode, 1) << missing.output;
  EXPECT_NE(missing.output.find("missing.yaml"), std::string::npos) << missing.output;
}

TEST(CliTest, ManifestsPrometheusRulesPrintsOnlyTheRuleWithTheStuckAfterThreshold) {
  const std::string config = std::string(MKA_FIXTURES_DIR) + "/alerts/config.yaml";
  auto rules = run("manifests --config " + config + " --prometheus-rules --stuck-after 2h");
  EXPECT_EQ(rules.exitCode, 0) << rules.output;
  EXPECT_NE(rules.output.find("kind: PrometheusRule"), std::string::npos) << rules.output;
  EXPECT_EQ(rules.output.find("kind: Deployment"), std::string::npos) << rules.output;
  EXPECT_NE(rules.output.find("> 7200"), std::string::npos) << rules.output;

  auto notADuration = run("manifests --config " + config + " --prometheus-rules --stuck-after 30");
  EXPECT_EQ(notADuration.exitCode, 2) << notADuration.output;
  EXPECT_NE(notADuration.output.find("--stuck-after: \"30\" is not a Go duration of at least 1s"), std::string::npos)
      << notADuration.output;
  auto withoutRules = run("manifests --config " + config + " --stuck-after 1h");
  EXPECT_EQ(withoutRules.exitCode, 2) << withoutRules.output;
  EXPECT_NE(withoutRules.output.find("--stuck-after requires --prometheus-rules"), std::string::npos)
      << withoutRules.output;
}

TEST(CliTest, ValidateConfigReadsStandardInputAndEscapesControlBytes) {
  test::TempDir dir;
  const auto good =
      dir.write("good.yaml", "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n");
  auto ok = run("validate-config - < " + good.string());
  EXPECT_EQ(ok.exitCode, 0) << ok.output;
  EXPECT_NE(ok.output.find("<stdin>: valid AdapterConfiguration"), std::string::npos) << ok.output;

  // A namespace holding a terminal escape sequence: echoed, but not as raw bytes.
  const auto bad = dir.write("bad.yaml",
                             "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                             "namespace: \"a\\e[31mb\"\n");
  auto ko = run("validate-config - < " + bad.string());
  EXPECT_EQ(ko.exitCode, 1) << ko.output;
  EXPECT_EQ(ko.output.find('\x1b'), std::string::npos) << ko.output;
  EXPECT_NE(ko.output.find("a\\x1b[31mb"), std::string::npos) << ko.output;
  EXPECT_NE(ko.output.find("<stdin>: 1 error"), std::string::npos) << ko.output;
}

struct VersionFlag {
  std::string args;
  std::string name = args;
};

std::vector<VersionFlag> versionFlags() { return {{"--version"}, {"serve --version"}}; }

MKA_TABLE_TEST(CliTest, VersionFlagPrintsTheVersion, VersionFlag, versionFlags()) {
  const std::string args = testCase().args;
  auto r = run(args);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, std::string("multikueue-adapter ") + MKA_VERSION + "\n");
}

struct UsageError {
  std::string args;
  std::string says;
  std::string name = args;
};

std::vector<UsageError> usageErrors() {
  return {
      {"validate-config", "FILE"},
      {"--no-such-flag", "--no-such-flag"},
      {"serve --config", "--config"},
      {"sandbox", "--dir"},
      {"validate-config a.yaml b.yaml", "b.yaml"},
      {"serve --webhook-event-loops 0", "--webhook-event-loops"},
  };
}

MKA_TABLE_TEST(CliTest, UsageErrorsExitNonZeroWithAMessage, UsageError, usageErrors()) {
  const UsageError& c = testCase();
  auto r = run(c.args);
  EXPECT_EQ(r.exitCode, 2) << "usage errors exit 2: " << r.output;
  EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
}

TEST(CliTest, HelpExitsZeroAndAnUnknownLogFormatIsAUsageError) {
  auto help = run("--help");
  EXPECT_EQ(help.exitCode, 0) << help.output;

  auto badFormat = run("--log-format yaml version");
  EXPECT_EQ(badFormat.exitCode, 2) << badFormat.output;
  EXPECT_NE(badFormat.output.find("yaml"), std::string::npos) << badFormat.output;
}

TEST(CliTest, ServeRefusesAnInvalidConfigurationWithExitCode1) {
  test::TempDir dir;
  auto bad = dir.write("bad.yaml",
                       "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                       "managedByDefaulting: Sometimes\n");
  auto r = run("--config " + bad.string() +
               " --webhook-bind-address 127.0.0.1:0 "
               "--health-probe-bind-address 0 --metrics-bind-address 0");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("managedByDefaulting"), std::string::npos) << r.output;
}

// --metrics-secure overrides the file; it needs the cluster (to review tokens), and says so
// before binding a port; --metrics-secure=false turns it back off.
TEST(CliTest, MetricsSecureNeedsTheClusterAndFalseTurnsItOff) {
  test::TempDir dir;
  auto config = dir.write("webhook-only.yaml",
                          "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                          "managedByDefaulting: QueueLabeled\ndispatch: {enabled: false}\nmetricsSecure: true\n");
  const std::string common = " --config " + config.string() +
                             " --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 0 "
                             "--metrics-bind-address 127.0.0.1:0 --cert-dir " +
                             (dir / "none").string();
  ::setenv("KUBECONFIG", (dir / "missing.kubeconfig").c_str(), 1);  // no cluster to be found
  auto r = run("serve --metrics-secure" + common);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("metricsSecure is true, so the adapter needs its cluster"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("listening"), std::string::npos) << "bound a port first: " << r.output;
  auto off = run("serve --metrics-secure=false --metrics-cert-dir /certs" + common);
  ::unsetenv("KUBECONFIG");
  EXPECT_EQ(off.exitCode, 1) << off.output;
  EXPECT_NE(off.output.find("metricsCertDir"), std::string::npos) << "the flag turned it off: " << off.output;
}

TEST(CliTest, ValidateConfigCommandWritesErrorsToErr) {
  test::TempDir dir;
  auto bad = dir.write("bad.yaml",
                       "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                       "managedByDefaulting: Sometimes\n");
  std::ostringstream out, err;
  EXPECT_EQ(validateConfigCommand(bad, out, err), 1);
  EXPECT_EQ(out.str(), "");
  EXPECT_NE(err.str().find("managedByDefaulting: "), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("1 error"), std::string::npos) << err.str();
}

TEST(CliTest, ValidateConfigSaysWhichIntegratedKindsKueueDoesNotKnow) {
  test::TempDir dir;
  auto adapter = dir.write("adapter.yaml",
                           "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                           "integrations:\n  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"
                           "  - name: PipelineRun.v1.tekton.dev\n");
  auto partial = dir.write("kueue.yaml",
                           "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                           "featureGates: {DisableWaitForPodsReady: true}\n"
                           "integrations:\n  frameworks: [batch/job]\n"
                           "  externalFrameworks: [PipelineRun.v1.tekton.dev]\n");
  std::ostringstream out, err;
  EXPECT_EQ(validateConfigCommand(adapter, out, err, partial), 1);
  EXPECT_EQ(err.str(),
            partial.string() +
                ": integrations.externalFrameworks: Workflow.v1alpha1.argoproj.io is missing: " + adapter.string() +
                " integrates it, so Kueue must know it as an external framework or its pod integration "
                "manages the job's pods on its own: add \"Workflow.v1alpha1.argoproj.io\" to "
                "integrations.externalFrameworks\n");

  auto complete = dir.write("kueue-ok.yaml",
                            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                            "featureGates: {DisableWaitForPodsReady: true}\n"
                            "integrations:\n  externalFrameworks: [PipelineRun.v1.tekton.dev, "
                            "Workflow.v1alpha1.argoproj.io]\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(validateConfigCommand(adapter, out2, err2, complete), 0) << err2.str();
  EXPECT_NE(out2.str().find("lists every integrated kind"), std::string::npos) << out2.str();

  std::ostringstream out3, err3;
  EXPECT_EQ(validateConfigCommand(adapter, out3, err3, adapter), 1);
  EXPECT_EQ(err3.str(), adapter.string() + ": not a Kueue Configuration (kind: Configuration)\n");
}

// KUEUE-JOBFRAMEWORK scenario 44: with Kueue's waitForPodsReady on, every integrated kind needs a
// podsReady rule and the adapter must write PodsReady (waitForPodsReady.enable: true), or Kueue
// evicts every Workload the integration queues after its timeout.
TEST(CliTest, ValidateConfigChecksWaitForPodsReady) {
  test::TempDir dir;
  const std::string kinds =
      "integrations:\n  frameworks:\n  - name: Workflow.v1alpha1.argoproj.io\n"
      "  - name: TrainingRun.v1.ml.example.com\n    suspend: {path: spec.suspend, value: true}\n"
      "    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n"
      "    finished: {condition: {type: Succeeded}}\n";
  const std::string header = "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n";
  auto withoutRule = dir.write("no-rule.yaml", header + kinds);
  auto withRule = dir.write("rule.yaml", header + "waitForPodsReady: {enable: true}\n" + kinds +
                                             "    podsReady: {condition: {type: Running, status: \"True\"}}\n");
  auto off = dir.write("off.yaml", header + kinds + "    podsReady: {condition: {type: Running, status: \"True\"}}\n");
  const std::string externals =
      "integrations:\n  externalFrameworks: [Workflow.v1alpha1.argoproj.io, TrainingRun.v1.ml.example.com]\n";
  auto v1beta1 = dir.write("kueue-v1beta1.yaml",
                           "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                           "waitForPodsReady:\n  enable: true\n  timeout: 5m\n" +
                               externals);
  auto v1beta2 =
      dir.write("kueue-v1beta2.yaml", "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n" + externals);

  struct Case {
    std::string name;
    std::filesystem::path adapter, kueue;
    int exit;
    std::string err;  // exactly, when the exit is 1
  };
  const std::vector<Case> cases = {
      {"a kind without a podsReady rule is named", withoutRule, v1beta1, 1,
       v1beta1.string() + ": waitForPodsReady.enable: true, but " + withoutRule.string() +
           " has no podsReady rule for TrainingRun.v1.ml.example.com, so their Workloads never become PodsReady "
           "and Kueue evicts them after waitForPodsReady.timeout: add a podsReady rule to each in "
           "integrations.frameworks, or turn waitForPodsReady off in Kueue\n"},
      {"v1beta2 turns it on by default", withoutRule, v1beta2, 1,
       v1beta2.string() +
           ": waitForPodsReady is on (Kueue's v1beta2 default; featureGates DisableWaitForPodsReady: true turns it "
           "off), but " +
           withoutRule.string() +
           " has no podsReady rule for TrainingRun.v1.ml.example.com, so their Workloads never become PodsReady "
           "and Kueue evicts them after waitForPodsReady.timeout: add a podsReady rule to each in "
           "integrations.frameworks, or turn waitForPodsReady off in Kueue\n"},
      {"rules everywhere but the adapter does not write PodsReady", off, v1beta1, 1,
       v1beta1.string() + ": waitForPodsReady.enable: true, but " + off.string() +
           " does not set waitForPodsReady.enable: true, so the integration writes no PodsReady condition and "
           "Kueue evicts its Workloads after waitForPodsReady.timeout: set waitForPodsReady.enable: true in " +
           off.string() + "\n"},
      {"every kind has the rule and the adapter writes PodsReady", withRule, v1beta1, 0, ""},
      {"v1beta2's default, accepted too", withRule, v1beta2, 0, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::ostringstream out, err;
    EXPECT_EQ(validateConfigCommand(c.adapter, out, err, c.kueue), c.exit) << err.str();
    if (c.exit == 1) {
      EXPECT_EQ(err.str(), c.err);
    } else {
      EXPECT_NE(out.str().find("waitForPodsReady is on, and every integrated kind has a podsReady rule"),
                std::string::npos)
          << out.str();
    }
  }
}

// Drop-in mode dispatches only the configured kinds: a Kueue that integrates its own kinds that
// its MultiKueue dispatches (batch/job by default) is refused, naming them and both ways out.
TEST(CliTest, ValidateConfigRefusesDropInWhereKueueIntegratesKindsItsMultiKueueDispatches) {
  test::TempDir dir;
  const std::string adapterText =
      "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
      "dispatch: {admissionCheckControllerName: kueue.x-k8s.io/multikueue}\n"
      "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}]}\n";
  auto dropIn = dir.write("drop-in.yaml", adapterText);
  auto dispatcher = dir.write("dispatcher.yaml",
                              "apiVersion: config.multikueue-adapter.dev/v1alpha1\n"
                              "kind: AdapterConfiguration\n"
                              "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}]}\n");
  const auto kueue = [&](const std::string& name, const std::string& integrations) {
    return dir.write(name, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n" + integrations);
  };
  const auto refusal = [&](const std::filesystem::path& file, const std::string& listed, const std::string& note) {
    return file.string() + ": integrations.frameworks: Kueue integrates " + listed + note +
           ", which its MultiKueue dispatches, but " + dropIn.string() +
           " is in drop-in mode (dispatch.admissionCheckControllerName: kueue.x-k8s.io/multikueue, Kueue's "
           "MultiKueue off on the manager): the adapter then answers every MultiKueue admission check and "
           "dispatches only its configured kinds, so such a job on a MultiKueue ClusterQueue has its check "
           "Rejected (\"No multikueue adapter found for owner kind ...\"): use the dispatcher mode (leave "
           "dispatch.admissionCheckControllerName at multikueue-adapter.dev/dispatcher and Kueue's MultiKueue on), "
           "or list only kinds Kueue's MultiKueue does not dispatch in integrations.frameworks\n";
  };

  const auto byDefault = kueue("kueue-default.yaml", "");
  std::ostringstream out, err;
  EXPECT_EQ(validateConfigCommand(dropIn, out, err, byDefault), 1);
  EXPECT_EQ(err.str(), refusal(byDefault, "batch/job", " (its default when the list is empty)"));

  const auto listed = kueue("kueue-jobset.yaml",
                            "integrations:\n  frameworks: [deployment, jobset.x-k8s.io/jobset, "
                            "kubeflow.org/pytorchjob]\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(validateConfigCommand(dropIn, out2, err2, listed), 1);
  EXPECT_EQ(err2.str(), refusal(listed, "jobset.x-k8s.io/jobset, kubeflow.org/pytorchjob", ""));

  // The dispatcher mode leaves Kueue's kinds to Kueue's MultiKueue.
  std::ostringstream out3, err3;
  EXPECT_EQ(validateConfigCommand(dispatcher, out3, err3, listed), 0) << err3.str();

  // A Kueue that integrates none of them suits drop-in mode, and is told so.
  const auto none = kueue("kueue-none.yaml", "integrations:\n  frameworks: [deployment]\n");
  std::ostringstream out4, err4;
  EXPECT_EQ(validateConfigCommand(dropIn, out4, err4, none), 0) << err4.str();
  EXPECT_NE(out4.str().find(none.string() + ": integrations.frameworks lists none of Kueue's kinds that its "
                                            "MultiKueue dispatches, as drop-in mode needs"),
            std::string::npos)
      << out4.str();
}

}  // namespace
}  // namespace mka::app
