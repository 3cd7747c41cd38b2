// Every problem the loader reports, as the user reads it: "<field path>: <problem>: <fix>".
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "mka/config/loader.h"
#include "support/table_test.h"

namespace mka::config {
namespace {

using test::adapterDoc;
using test::kueueDoc;
using test::rendered;

struct Case {
  std::string name;
  std::string text;
  std::vector<std::string> errors;  // exact, in order
};

void runCase(const Case& c) {
  auto result = parseConfiguration(c.text);
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.config.has_value());
  EXPECT_EQ(rendered(result.errors), c.errors);
}

const std::string kHeaders =
    "apiVersion: config.multikueue-adapter.dev/v1alpha1 with kind: AdapterConfiguration, or Kueue's apiVersion: "
    "config.kueue.x-k8s.io/v1beta2 (or v1beta1) with kind: Configuration";

std::vector<Case> documentCases() {
  return {
      {"empty", "", {"file is empty: write a configuration starting with " + kHeaders}},
      {"comments only", "# nothing\n\n", {"file is empty: write a configuration starting with " + kHeaders}},
      {"syntax error has line and column",
       "apiVersion: x\nmultiKueue:\n  externalFrameworks: [{name: a}\n  gcInterval: 1m\n",
       {"invalid YAML at line 4, column 3: did not find expected ',' or ']' while parsing a flow sequence that "
        "started at line 3: fix the syntax there: indent with "
        "spaces, put a space after each ':', and close every [ and {"}},
      {"list at the top",
       "- a\n- b\n",
       {"must be a mapping of key: value pairs, not a list: write a configuration starting with " + kHeaders}},
      {"two documents",
       adapterDoc("") + "---\n" + adapterDoc(""),
       {"holds 2 YAML documents: keep one configuration in the file and remove the other documents and their --- "
        "separators"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, Document, Case, documentCases()) { runCase(testCase()); }

std::vector<Case> headerCases() {
  return {
      {"no apiVersion or kind",
       "namespace: x\n",
       {"apiVersion: is required: start the file with " + kHeaders,
        "kind: is required: add kind: AdapterConfiguration"}},
      {"kind without apiVersion",
       "kind: AdapterConfiguration\n",
       {"apiVersion: is required: add apiVersion: config.multikueue-adapter.dev/v1alpha1"}},
      {"Kueue kind without apiVersion",
       "kind: Configuration\n",
       {"apiVersion: is required: add apiVersion: config.kueue.x-k8s.io/v1beta2"}},
      {"apiVersion typo",
       "apiVersion: config.kueue.x-k8s.io/v1beta3\nkind: Configuration\n",
       {"apiVersion: unsupported value \"config.kueue.x-k8s.io/v1beta3\": did you mean "
        "\"config.kueue.x-k8s.io/v1beta2\"?"}},
      {"unrelated apiVersion",
       "apiVersion: v1\nkind: Secret\n",
       {"apiVersion: unsupported value \"v1\": use " + kHeaders}},
      {"our apiVersion with Kueue's kind",
       "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: Configuration\n",
       {"kind: must be AdapterConfiguration for apiVersion config.multikueue-adapter.dev/v1alpha1, not "
        "\"Configuration\": set kind: AdapterConfiguration, or use apiVersion: config.kueue.x-k8s.io/v1beta2 for "
        "Kueue's Configuration"}},
      {"Kueue apiVersion with our kind",
       "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: AdapterConfiguration\n",
       {"kind: must be Configuration for apiVersion config.kueue.x-k8s.io/v1beta1, not \"AdapterConfiguration\": set "
        "kind: Configuration, or use apiVersion: config.multikueue-adapter.dev/v1alpha1 for an "
        "AdapterConfiguration"}},
      {"apiVersion not a string",
       "apiVersion: [a]\nkind: AdapterConfiguration\n",
       {"apiVersion: must be a string, not a list: write a single value on the same line as the key"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, Header, Case, headerCases()) { runCase(testCase()); }

std::vector<Case> unknownKeysCases() {
  return {
      {"multikueue in our kind",
       adapterDoc("multikueue: {gcInterval: 1m}\n"),
       {"multikueue: unknown field: did you mean \"multiKueue\"? (Kueue's documentation spells the section "
        "\"multikueue\", but Kueue itself rejects that spelling)"}},
      {"multikueue in Kueue's kind",
       kueueDoc("multikueue: {gcInterval: 1m}\n"),
       {"multikueue: unknown field: did you mean \"multiKueue\"? (Kueue's documentation spells the section "
        "\"multikueue\", but Kueue itself rejects that spelling)"}},
      {"typo of an ignored Kueue key",
       kueueDoc("intgrations: {frameworks: [batch/job]}\n"),
       {"intgrations: unknown field: did you mean \"integrations\"?"}},
      {"nested typo", adapterDoc("webhook: {prot: 9443}\n"), {"webhook.prot: unknown field: did you mean \"port\"?"}},
      {"not close to anything",
       adapterDoc("colour: blue\n"),
       {"colour: unknown field: remove it; the fields accepted at the top level are apiVersion, kind, namespace, "
        "webhook, healthProbeBindAddress, metricsBindAddress, metricsSecure, metricsCertDir, leaderElection, "
        "clientConnection, "
        "managedByDefaulting, dispatch, multiKueue, integrations, placement, waitForPodsReady"}},
      {"not close, nested",
       adapterDoc("clientConnection: {timeout: 5s}\n"),
       {"clientConnection.timeout: unknown field: remove it; the fields accepted in clientConnection are qps, burst"}},
      {"an unknown multiKueue key lists the accepted ones",
       adapterDoc("multiKueue: {stepSize: 2}\n"),
       {"multiKueue.stepSize: unknown field: remove it; the fields accepted in multiKueue are "
        "externalFrameworks, gcInterval, origin, workerLostTimeout, dispatcherName, clusterProfile, "
        "incrementalDispatcherConfig, orchestratedPreemption"}},
      {"a typo in an exec plugin's settings",
       adapterDoc("multiKueue: {clusterProfile: {accessProviders: [{name: p, execConfig: {command: c, apiVersion: "
                  "client.authentication.k8s.io/v1, interactiveMode: Never, argz: [x]}}]}}\n"),
       {"multiKueue.clusterProfile.accessProviders[0].execConfig.argz: unknown field: did you mean \"args\"?"}},
      {"typo in a framework entry",
       adapterDoc("multiKueue: {externalFrameworks: [{nam: X.v1.a.b}]}\n"),
       {"multiKueue.externalFrameworks[0].nam: unknown field: did you mean \"name\"?",
        "multiKueue.externalFrameworks[0].name: is required: write it as Kind.version.group, for example "
        "PipelineRun.v1.tekton.dev"}},
      {"managedBy in a Kueue kind, which Kueue refuses",
       kueueDoc("multiKueue: {externalFrameworks: [{name: X.v1.a.b, managedBy: {paht: spec.managedBy}}]}\n"),
       {"multiKueue.externalFrameworks[0].managedBy: is a multikueue-adapter extension, which Kueue's "
        "Configuration cannot hold: remove it (Kueue decodes its Configuration strictly and would not start with "
        "it), or move the frameworks to an AdapterConfiguration (apiVersion: "
        "config.multikueue-adapter.dev/v1alpha1, kind: AdapterConfiguration)"}},
      {"case-only difference",
       adapterDoc("MultiKueue: {}\nNamespace: x\n"),
       {"MultiKueue: unknown field: did you mean \"multiKueue\"?",
        "Namespace: unknown field: did you mean \"namespace\"?"}},
      {"duplicate key",
       adapterDoc("namespace: a\nnamespace: b\n"),
       {"namespace: is written more than once: keep one of them; only the last one would count"}},
      {"our settings in Kueue's kind",
       kueueDoc("dispatch: {enabled: false}\nmanagedByDefaulting: Never\n"),
       {"dispatch: is a multikueue-adapter setting, which a Kueue Configuration cannot hold: remove it, or switch the "
        "file to apiVersion: config.multikueue-adapter.dev/v1alpha1 and kind: AdapterConfiguration",
        "managedByDefaulting: is a multikueue-adapter setting, which a Kueue Configuration cannot hold: remove it, or "
        "switch the file to apiVersion: config.multikueue-adapter.dev/v1alpha1 and kind: AdapterConfiguration"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, UnknownKeys, Case, unknownKeysCases()) { runCase(testCase()); }

std::vector<Case> typesCases() {
  return {
      {"port as text",
       adapterDoc("webhook: {port: abc}\n"),
       {"webhook.port: must be a whole number, not \"abc\": write a whole number without quotes"}},
      {"port quoted",
       adapterDoc("webhook: {port: \"9443\"}\n"),
       {"webhook.port: must be a whole number, not \"9443\": write a whole number without quotes"}},
      {"port fractional",
       adapterDoc("webhook: {port: 94.5}\n"),
       {"webhook.port: must be a whole number, not \"94.5\": write a whole number without quotes"}},
      {"duration without unit",
       adapterDoc("multiKueue: {gcInterval: 5}\n"),
       {"multiKueue.gcInterval: must be a duration such as 1m or 30s, not \"5\": add a unit, for example 5s or 5m"}},
      {"duration garbage",
       kueueDoc("multiKueue: {workerLostTimeout: soon}\n"),
       {"multiKueue.workerLostTimeout: must be a duration such as 1m or 30s, not \"soon\": write a number followed "
        "by a unit (ns, us, ms, s, m or h), for example 90s or 1h30m"}},
      {"duration as a list",
       adapterDoc("leaderElection: {leaseDuration: [1]}\n"),
       {"leaderElection.leaseDuration: must be a duration such as 1m or 30s, not a list: write a number followed by "
        "a unit (ns, us, ms, s, m or h), for example 90s or 1h30m"}},
      {"bool as text",
       adapterDoc("dispatch: {enabled: maybe}\n"),
       {"dispatch.enabled: must be true or false, not \"maybe\": write true or false without quotes"}},
      {"bool quoted",
       adapterDoc("leaderElection: {leaderElect: \"true\"}\n"),
       {"leaderElection.leaderElect: must be true or false, not \"true\": write true or false without quotes"}},
      {"qps as text",
       kueueDoc("clientConnection: {qps: fast}\n"),
       {"clientConnection.qps: must be a number, not \"fast\": write a number without quotes, such as 50 or 2.5"}},
      {"qps infinite",
       adapterDoc("clientConnection: {qps: .inf}\n"),
       {"clientConnection.qps: must be a number, not \".inf\": write a number without quotes, such as 50 or 2.5"}},
      {"section as a string",
       adapterDoc("webhook: 9443\n"),
       {"webhook: must be a mapping of key: value pairs, not \"9443\": write it as webhook: {port: 9443, certDir: "
        "/tmp/k8s-webhook-server/serving-certs}"}},
      {"string as a mapping",
       adapterDoc("namespace: {name: x}\n"),
       {"namespace: must be a string, not a mapping: write a single value on the same line as the key"}},
      {"frameworks as a mapping",
       adapterDoc("multiKueue: {externalFrameworks: {name: X.v1.a.b}}\n"),
       {"multiKueue.externalFrameworks: must be a list, not a mapping: write one entry per line, such as - name: "
        "PipelineRun.v1.tekton.dev"}},
      {"framework as a plain name, like integrations.externalFrameworks",
       adapterDoc("multiKueue: {externalFrameworks: [PipelineRun.v1.tekton.dev]}\n"),
       {"multiKueue.externalFrameworks[0]: must be a mapping with a name, not \"PipelineRun.v1.tekton.dev\": write it "
        "as - name: PipelineRun.v1.tekton.dev"}},
      {"framework as a list",
       adapterDoc("multiKueue: {externalFrameworks: [[a]]}\n"),
       {"multiKueue.externalFrameworks[0]: must be a mapping of key: value pairs, not a list: write it as - name: "
        "PipelineRun.v1.tekton.dev"}},
      {"managedBy as a string",
       adapterDoc("multiKueue: {externalFrameworks: [{name: X.v1.a.b, managedBy: spec.managedBy}]}\n"),
       {"multiKueue.externalFrameworks[0].managedBy: must be a mapping of key: value pairs, not \"spec.managedBy\": "
        "write it as {path: spec.managedBy}, or {label: KEY, value: VALUE}"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, Types, Case, typesCases()) { runCase(testCase()); }

std::vector<Case> managedByShapeCases() {
  const auto entry = [](const std::string& managedBy) {
    return adapterDoc("multiKueue: {externalFrameworks: [{name: Thing.v1.example.com, managedBy: " + managedBy +
                      "}]}\n");
  };
  const std::string at = "multiKueue.externalFrameworks[0].managedBy";
  return {
      {"both path and label",
       entry("{path: spec.managedBy, label: a, value: b}"),
       {at + ": sets both path and label: keep path (a field such as spec.managedBy) or label with value (a label "
             "marker), not both"}},
      {"neither",
       entry("{}"),
       {at + ": must set path or label: write it as {path: spec.managedBy}, or {label: KEY, "
             "value: VALUE}"}},
      {"value alone",
       entry("{value: x}"),
       {at + ": must set path or label: write it as {path: spec.managedBy}, or "
             "{label: KEY, value: VALUE}"}},
      {"value with path",
       entry("{path: spec.managedBy, value: x}"),
       {at + ".value: is only used with label: remove it; a path marker always holds kueue.x-k8s.io/multikueue, the "
             "value Kueue's MultiKueue looks for"}},
      {"label without value",
       entry("{label: example.com/managed}"),
       {at + ".value: is required with label: add value: multikueue (a label value: at most 63 letters, digits, '-', "
             "'_' or '.', no '/')"}},
      {"label value with a slash",
       entry("{label: example.com/managed, value: kueue.x-k8s.io/multikueue}"),
       {at + ".value: invalid value \"kueue.x-k8s.io/multikueue\": a valid label must be an empty string or consist "
             "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
             "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'): use at most 63 letters, digits, '-', '_' or '.' (no "
             "'/'), starting and ending with a letter or digit, such as multikueue"}},
      {"bad label key",
       entry("{label: -bad-, value: x}"),
       {at +
        ".label: invalid value \"-bad-\": name part must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'): write a label key such as "
        "workflows.argoproj.io/controller-instanceid"}},
      {"path outside spec",
       entry("{path: metadata.managedBy}"),
       {at + ".path: must be a field path below spec, not \"metadata.managedBy\": write a dotted path of field names "
             "such as spec.managedBy or spec.runPolicy.managedBy"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, ManagedByShape, Case, managedByShapeCases()) { runCase(testCase()); }

std::vector<Case> remoteCopyCases() {
  const auto entry = [](const std::string& keys) {
    return adapterDoc("multiKueue: {externalFrameworks: [{name: Workflow.v1alpha1.argoproj.io, " + keys + "}]}\n");
  };
  const std::string at = "multiKueue.externalFrameworks[0].remoteCopy";
  return {
      {"removeFields not a list",
       entry("remoteCopy: {removeFields: /spec/ttlStrategy}"),
       {at + ".removeFields: must be a list, not \"/spec/ttlStrategy\": write it as [/spec/ttlStrategy]"}},
      {"a field that is not a pointer",
       entry("remoteCopy: {removeFields: [spec.ttlStrategy]}"),
       {at + ".removeFields[0]: \"spec.ttlStrategy\" is not a JSON pointer to a field: start it with / and separate "
             "the keys with /, such as /spec/ttlStrategy"}},
      {"a pointer with a bad escape",
       entry("remoteCopy: {removeFields: [/metadata/labels/a~2b]}"),
       {at + ".removeFields[0]: \"/metadata/labels/a~2b\" is not a valid JSON pointer: a ~ must be followed by 0 or "
             "1: write ~ in a key as ~0 and / as ~1, such as /metadata/labels/example.com~1site"}},
      {"removing the copy's name",
       entry("remoteCopy: {removeFields: [/metadata/name]}"),
       {at + ".removeFields[0]: \"/metadata/name\" would change the copy's kind, name or namespace, which make it "
             "the job's copy: point at a field under spec, metadata.labels or metadata.annotations"}},
      {"patches not a list",
       entry("remoteCopy: {patches: {op: add}}"),
       {at + ".patches: must be a list of RFC 6902 operations, not a mapping: write it as - {op: add, path: "
             "/metadata/labels/site, value: worker}"}},
      {"unknown operation, named by its index",
       entry("remoteCopy: {patches: [{op: add, path: /spec/a, value: 1}, {op: merge, path: /spec/b}]}"),
       {at + ".patches[1].op: \"merge\" is not an RFC 6902 operation: use add, remove, replace, move, copy or "
             "test"}},
      {"unknown key in an operation",
       entry("remoteCopy: {patches: [{op: add, path: /spec/a, valeu: 1}]}"),
       {at + ".patches[0].valeu: unknown field: did you mean \"value\"?",
        at + ".patches[0].value: is required by add: give the value to add"}},
      {"no path",
       entry("remoteCopy: {patches: [{op: remove}]}"),
       {at + ".patches[0].path: is required: point at the field to remove, such as /spec/serviceAccountName"}},
      {"a value remove does not use",
       entry("remoteCopy: {patches: [{op: remove, path: /spec/a, value: 1}]}"),
       {at + ".patches[0].value: is not used by remove: remove it"}},
      {"move without from",
       entry("remoteCopy: {patches: [{op: move, path: /spec/b}]}"),
       {at + ".patches[0].from: is required by move: point at the field to move from"}},
      {"from on add",
       entry("remoteCopy: {patches: [{op: add, path: /spec/b, value: 1, from: /spec/a}]}"),
       {at + ".patches[0].from: is only used by move and copy: remove it"}},
      {"replacing the namespace",
       entry("remoteCopy: {patches: [{op: replace, path: /metadata/namespace, value: other}]}"),
       {at + ".patches[0].path: \"/metadata/namespace\" would change the copy's kind, name or namespace, which make "
             "it the job's copy: point at a field under spec, metadata.labels or metadata.annotations"}},
      {"test may read the name",
       entry("remoteCopy: {patches: [{op: test, path: /metadata/name, value: x}, {op: remove, path: kind}]}"),
       {at + ".patches[1].path: \"kind\" is not a JSON pointer to a field: start it with / and separate the keys "
             "with /, such as /spec/serviceAccountName"}},
      {"status exclude not a pointer",
       entry("remoteStatus: {exclude: [nodes]}"),
       {"multiKueue.externalFrameworks[0].remoteStatus.exclude[0]: \"nodes\" is not a JSON pointer to a field: "
        "start it with / and separate the keys with /, such as /nodes"}},
      {"remoteCopy in a Kueue kind, which Kueue refuses",
       kueueDoc("multiKueue: {externalFrameworks: [{name: X.v1.a.b, remoteCopy: {removeFields: [/spec/a]}}]}\n"),
       {"multiKueue.externalFrameworks[0].remoteCopy: is a multikueue-adapter extension, which Kueue's "
        "Configuration cannot hold: remove it (Kueue decodes its Configuration strictly and would not start with "
        "it), or move the frameworks to an AdapterConfiguration (apiVersion: "
        "config.multikueue-adapter.dev/v1alpha1, kind: AdapterConfiguration)"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, RemoteCopy, Case, remoteCopyCases()) { runCase(testCase()); }

std::vector<Case> dependencyCases() {
  const auto entry = [](const std::string& name, const std::string& keys) {
    return adapterDoc("multiKueue: {externalFrameworks: [{name: " + name + ", " + keys + "}]}\n");
  };
  const std::string at = "multiKueue.externalFrameworks[0]";
  return {
      {"a kind that is never copied",
       entry("PipelineRun.v1.tekton.dev", "syncDependencies: true, dependencies: [{kind: Pod, path: spec.pod}]"),
       {at + ".dependencies[0].kind: \"Pod\" is not a kind that is copied: use Secret, ConfigMap or ServiceAccount "
             "(other kinds are never copied to workers)"}},
      {"a bracket other than [*]",
       entry("PipelineRun.v1.tekton.dev",
             "syncDependencies: true, dependencies: [{kind: Secret, path: \"spec.volumes[0].name\"}]"),
       {at + ".dependencies[0].path: segment \"volumes[0]\" may end in [*] (each item of a list) and hold no other "
             "brackets or *: write the dotted path to the name from the job's root, [*] after a list, such as "
             "spec.volumes[*].secret.secretName"}},
      {"an empty segment",
       entry("PipelineRun.v1.tekton.dev", "syncDependencies: true, dependencies: [{kind: Secret, path: spec..name}]"),
       {at + ".dependencies[0].path: has an empty segment in \"spec..name\": write the dotted path to the name from "
             "the job's root, [*] after a list, such as spec.volumes[*].secret.secretName"}},
      {"dependencies while syncing is off",
       entry("PipelineRun.v1.tekton.dev", "dependencies: [{kind: Secret, path: spec.credentials}]"),
       {at + ".dependencies: has no effect while syncDependencies is false: set syncDependencies: true on this "
             "kind, or remove dependencies"}},
      {"syncing on for a kind without built-in paths",
       entry("Job.v1.example.com", "syncDependencies: true"),
       {at + ".syncDependencies: is true but Job has no built-in dependency paths: list where its jobs name "
             "Secrets, ConfigMaps or ServiceAccounts under dependencies, such as - {kind: Secret, path: "
             "spec.credentials.secretName}"}},
      {"dependencies not a list",
       entry("PipelineRun.v1.tekton.dev", "syncDependencies: true, dependencies: {kind: Secret}"),
       {at + ".dependencies: must be a list of {kind, path}, not a mapping: write it as - {kind: Secret, path: "
             "spec.credentials.secretName}"}},
      {"syncDependencies in a Kueue kind, which Kueue refuses",
       kueueDoc("multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev, syncDependencies: true}]}\n"),
       {at + ".syncDependencies: is a multikueue-adapter extension, which Kueue's Configuration cannot hold: remove "
             "it (Kueue decodes its Configuration strictly and would not start with it), or move the frameworks to "
             "an AdapterConfiguration (apiVersion: config.multikueue-adapter.dev/v1alpha1, kind: "
             "AdapterConfiguration)"}},
      {"syncDependencies not a bool",
       entry("PipelineRun.v1.tekton.dev", "syncDependencies: yes-please"),
       {at + ".syncDependencies: must be true or false, not \"yes-please\": write true or false without quotes"}},
  };
}

MKA_TABLE_TEST(LoaderErrors, Dependencies, Case, dependencyCases()) { runCase(testCase()); }

}  // namespace
}  // namespace mka::config
