// `multikueue-adapter manifests`: the shipped manifests are its output, the webhooks name exactly
// the configured kinds, the RBAC follows the configuration, and bad input is refused.
#include "mka/deploy/manifests.h"

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/config/loader.h"
#include "mka/yaml/json.h"
#include "support/table_test.h"
#include "support/temp_dir.h"

namespace mka::deploy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = MKA_SOURCE_DIR;

std::string readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) ADD_FAILURE() << file << ": cannot read it";
  return text.str();
}

config::Configuration load(const fs::path& file) {
  auto loaded = config::loadConfigurationFile(file);
  if (!loaded.ok()) throw ValidationError(loaded.errors);
  return *loaded.config;
}

config::Configuration parse(const std::string& text) {
  auto loaded = config::parseConfiguration(text);
  if (!loaded.ok()) throw ValidationError(loaded.errors);
  return *loaded.config;
}

std::string keyOf(const json& object) {
  const auto& meta = object.value("metadata", json::object());
  const std::string ns = meta.value("namespace", "");
  return object.value("apiVersion", "") + " " + object.value("kind", "") + " " + (ns.empty() ? "" : ns + "/") +
         meta.value("name", "");
}

// What a YAML reader gets from the rendered objects (ordered keys do not matter).
std::map<std::string, json> byKey(const std::vector<Manifest>& manifests) {
  std::map<std::string, json> out;
  for (const auto& m : manifests) out[keyOf(json::parse(m.object.dump()))] = json::parse(m.object.dump());
  return out;
}

// The objects of the files a kustomization lists, as kubectl reads them.
std::map<std::string, json> kustomizationObjects(const fs::path& dir) {
  std::map<std::string, json> out;
  const auto kustomization = yaml::parseJson(readText(dir / "kustomization.yaml"), yaml::Limits::forManifests()).at(0);
  for (const auto& resource : kustomization.at("resources"))
    for (const auto& object :
         yaml::parseJson(readText(dir / resource.get<std::string>()), yaml::Limits::forManifests())) {
      const auto key = keyOf(object);
      if (out.contains(key)) ADD_FAILURE() << dir << ": " << key << " twice";
      out[key] = object;
    }
  return out;
}

// Every field where `files` and `rendered` differ, as "<path>: <in the files> in the files,
// <rendered> rendered".
void differences(const json& files, const json& rendered, const std::string& path, std::vector<std::string>& out) {
  if (files.is_object() && rendered.is_object()) {
    for (const auto& [k, v] : files.items()) {
      const std::string sub = path.empty() ? k : path + "." + k;
      if (!rendered.contains(k)) {
        out.push_back(sub + ": " + v.dump() + " in the files, absent rendered");
      } else {
        differences(v, rendered[k], sub, out);
      }
    }
    for (const auto& [k, v] : rendered.items())
      if (!files.contains(k))
        out.push_back((path.empty() ? k : path + "." + k) + ": absent in the files, " + v.dump() + " rendered");
    return;
  }
  if (files.is_array() && rendered.is_array() && files.size() == rendered.size()) {
    for (std::size_t i = 0; i < files.size(); ++i)
      differences(files[i], rendered[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (files != rendered) out.push_back(path + ": " + files.dump() + " in the files, " + rendered.dump() + " rendered");
}

// Which object and field differ between a folder of manifests and the rendered ones.
std::vector<std::string> compare(const std::map<std::string, json>& files,
                                 const std::map<std::string, json>& rendered) {
  std::vector<std::string> out;
  for (const auto& [key, object] : files) {
    auto it = rendered.find(key);
    if (it == rendered.end()) {
      out.push_back(key + ": in the files, not rendered");
      continue;
    }
    std::vector<std::string> fields;
    differences(object, it->second, "", fields);
    for (const auto& f : fields) out.push_back(key + ": " + f);
  }
  for (const auto& [key, object] : rendered)
    if (!files.contains(key)) out.push_back(key + ": rendered, not in the files");
  return out;
}

TEST(ShippedManifests, BaseIsTheRenderingOfItsConfiguration) {
  const auto dir = kSource / "manifests" / "base";
  const auto rendered = renderManifests(load(dir / "config.yaml"), readText(dir / "config.yaml"));
  EXPECT_THAT(compare(kustomizationObjects(dir), byKey(rendered)), ::testing::IsEmpty())
      << "manifests/base differs from the rendering of its configuration; render it again: "
         "multikueue-adapter manifests --config manifests/base/config.yaml > manifests/base/multikueue-adapter.yaml";
}

TEST(ShippedManifests, WorkerOverlayIsTheWorkerRenderingOfItsConfiguration) {
  const auto dir = kSource / "manifests" / "overlays" / "worker";
  const auto rendered =
      renderManifests(load(dir / "config.yaml"), readText(dir / "config.yaml"), {.role = Role::Worker});
  EXPECT_THAT(compare(kustomizationObjects(dir), byKey(rendered)), ::testing::IsEmpty())
      << "manifests/overlays/worker differs from the rendering of its configuration; render it again: "
         "multikueue-adapter manifests --role worker --config manifests/overlays/worker/config.yaml > "
         "manifests/overlays/worker/multikueue-adapter.yaml";
}

// --cert-manager is what overlays/cert-manager adds to the base: its Issuer and Certificate, and
// the CA injection annotation on both webhook configurations; nothing else changes.
TEST(ShippedManifests, CertManagerAddsWhatTheCertManagerOverlayAdds) {
  const auto base = kSource / "manifests" / "base" / "config.yaml";
  const auto cfg = load(base);
  auto plain = byKey(renderManifests(cfg, readText(base)));
  const auto withCertManager = byKey(renderManifests(cfg, readText(base), {.certManager = true}));

  const auto overlay = kSource / "manifests" / "overlays" / "cert-manager";
  std::map<std::string, json> expected = plain;
  for (auto object : yaml::parseJson(readText(overlay / "certificate.yaml"), yaml::Limits::forManifests())) {
    // The overlay's `labels` add the labels every rendered object carries.
    object["metadata"]["labels"] = {{"app.kubernetes.io/name", "multikueue-adapter"},
                                    {"app.kubernetes.io/part-of", "multikueue-adapter"}};
    expected[keyOf(object)] = object;
  }
  const auto patch = yaml::parseJson(readText(overlay / "inject-ca.yaml"), yaml::Limits::forManifests()).at(0);
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
    expected["admissionregistration.k8s.io/v1 " + std::string(kind) + " multikueue-adapter"]["metadata"]
            ["annotations"] = patch["metadata"]["annotations"];
  EXPECT_THAT(compare(expected, withCertManager), ::testing::IsEmpty());
}

TEST(ShippedManifests, TheStreamReadsBackAsTheObjectsWithTheConfigurationVerbatim) {
  const auto file = kSource / "manifests" / "base" / "config.yaml";
  const auto text = readText(file);
  const auto manifests = renderManifests(load(file), text);
  const auto stream = toYamlStream(manifests);
  const auto back = yaml::parseJson(stream, yaml::Limits::forManifests());
  ASSERT_EQ(back.size(), manifests.size());
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], json::parse(manifests[i].object.dump()));
  // The configuration as a literal block, its comments kept: what `kubectl edit` shows.
  EXPECT_NE(stream.find("  config.yaml: |\n    # The adapter's configuration on the manager"), std::string::npos);
}

// A configuration a literal block cannot hold exactly still reads back exactly.
struct ConfigurationText {
  std::string name;  // the text as a JSON string
  std::string text;
};
std::vector<ConfigurationText> configurationTexts() {
  std::vector<ConfigurationText> cases;
  for (const std::string text : {"a: 1\n", "a: 1", "a: 1\n\n\n", "  indented: 1\n", "\n\na: 1\n", "a: \"x\"\r\nb: 2\n",
                                 "a: 1\n\tb\n", "# only a comment\n", "a: |\n  x\n   y\n"})
    cases.push_back({json(text).dump(), text});
  return cases;
}

MKA_TABLE_TEST(ManifestYaml, ConfigurationTextsOfEveryShapeReadBackVerbatim, ConfigurationText, configurationTexts()) {
  const auto& c = testCase();
  const auto cfg = parse("apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n");
  const auto manifests = renderManifests(cfg, c.text);
  const auto back = yaml::parseJson(toYamlStream(manifests), yaml::Limits::forManifests());
  const auto it =
      std::find_if(back.begin(), back.end(), [](const json& o) { return o.value("kind", "") == "ConfigMap"; });
  ASSERT_NE(it, back.end());
  EXPECT_EQ(it->at("data").at("config.yaml"), c.text);
}

// The objects rendered for an AdapterConfiguration of `sections`, in the role it suits.
std::map<std::string, json> renderedSections(const std::string& sections) {
  const auto cfg = parse("apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n" + sections);
  return byKey(renderManifests(cfg, "", {.role = cfg.dispatch.enabled ? Role::Manager : Role::Worker}));
}

// The webhooks' rules name exactly the configured kinds, dispatched and integrated, each once,
// with the resource kube-apiserver serves them as.
struct RulesNameExactlyTheConfiguredKindsCase {
  std::string name;
  std::string sections;
  std::vector<std::string> resources;  // "group/version/resource"
};

std::vector<RulesNameExactlyTheConfiguredKindsCase> rulesNameExactlyTheConfiguredKindsCases() {
  const std::vector<RulesNameExactlyTheConfiguredKindsCase> cases = {
      {"dispatched only",
       "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}]}\n",
       {"tekton.dev/v1/pipelineruns"}},
      {"dispatched and integrated, each once",
       "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}, {name: Workflow.v1alpha1.argoproj.io}]}\n"
       "integrations: {frameworks: [{name: Workflow.v1alpha1.argoproj.io}]}\n",
       {"tekton.dev/v1/pipelineruns", "argoproj.io/v1alpha1/workflows"}},
      {"an in-house kind by its rules",
       "dispatch: {enabled: false}\nmanagedByDefaulting: Never\n"
       "integrations:\n  frameworks:\n  - name: TrainingRun.v1.ml.example.com\n    suspend: {path: spec.suspend, "
       "value: "
       "true}\n    podSets: [{name: main, count: {value: 1}, template: spec.template}]\n    finished: {condition: "
       "{type: Succeeded}}\n",
       {"ml.example.com/v1/trainingruns"}},
      {"a kind whose plural is irregular, by its resource key",
       "multiKueue:\n  externalFrameworks:\n  - name: Gateway.v1.net.example.com\n    resource: gateways\n"
       "    managedBy: {path: spec.managedBy}\n",
       {"net.example.com/v1/gateways"}},
  };
  return cases;
}

MKA_TABLE_TEST(ManifestWebhooks, RulesNameExactlyTheConfiguredKinds, RulesNameExactlyTheConfiguredKindsCase,
               rulesNameExactlyTheConfiguredKindsCases()) {
  const RulesNameExactlyTheConfiguredKindsCase& c = testCase();
  const auto objects = renderedSections(c.sections);
  for (const auto& [key, operations] : std::map<std::string, std::vector<std::string>>{
           {"admissionregistration.k8s.io/v1 MutatingWebhookConfiguration multikueue-adapter", {"CREATE"}},
           {"admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration multikueue-adapter",
            {"CREATE", "UPDATE"}}}) {
    ASSERT_TRUE(objects.contains(key)) << key;
    const auto& hook = objects.at(key).at("webhooks").at(0);
    std::vector<std::string> resources;
    for (const auto& rule : hook.at("rules")) {
      EXPECT_EQ(rule.at("operations"), json(operations));
      resources.push_back(rule.at("apiGroups").at(0).get<std::string>() + "/" +
                          rule.at("apiVersions").at(0).get<std::string>() + "/" +
                          rule.at("resources").at(0).get<std::string>());
    }
    EXPECT_EQ(resources, c.resources) << key;
  }
}

// A kind whose children take its admission's node selector and tolerations (Tekton's TaskRuns)
// gets /mutate-children on their CREATE, seen only for children of a job Kueue started with a
// node selector or tolerations to pass on, in the job webhooks' namespaces, failing closed.
struct ChildWebhookCase {
  std::string name;
  std::string sections;
  std::vector<std::string> wantChildHooks;  // names
};

std::vector<ChildWebhookCase> childWebhookCases() {
  return {
      {"integrated PipelineRuns: their TaskRuns",
       "dispatch: {enabled: false}\nmanagedByDefaulting: Never\n"
       "integrations: {frameworks: [{name: PipelineRun.v1.tekton.dev}, {name: Workflow.v1alpha1.argoproj.io}]}\n",
       {"mutate-children-taskruns.multikueue-adapter.dev"}},
      {"two versions of PipelineRun integrated: one webhook for their TaskRuns",
       "dispatch: {enabled: false}\nmanagedByDefaulting: Never\n"
       "integrations: {frameworks: [{name: PipelineRun.v1.tekton.dev}, {name: PipelineRun.v1beta1.tekton.dev}]}\n",
       {"mutate-children-taskruns.multikueue-adapter.dev"}},
      {"dispatched PipelineRuns, integrated Workflows: none",
       "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}]}\n"
       "integrations: {frameworks: [{name: Workflow.v1alpha1.argoproj.io}]}\n",
       {}},
  };
}

MKA_TABLE_TEST(ManifestWebhooks, AKindWhoseChildrenTakeItsAdmissionGetsMutateChildren, ChildWebhookCase,
               childWebhookCases()) {
  const auto& c = testCase();
  const auto objects = renderedSections(c.sections);
  const auto& mutating =
      objects.at("admissionregistration.k8s.io/v1 MutatingWebhookConfiguration multikueue-adapter").at("webhooks");
  std::vector<std::string> names;
  for (const auto& hook : mutating)
    if (hook.at("clientConfig").at("service").at("path") == "/mutate-children") names.push_back(hook.at("name"));
  ASSERT_EQ(names, c.wantChildHooks);
  if (names.empty()) return;
  const json& jobHook = mutating.at(0);
  const json& hook = mutating.back();
  ASSERT_EQ(hook.at("name"), names.front()) << "the children's webhook comes after the jobs'";
  EXPECT_EQ(hook.at("rules"), json::parse(R"([{"apiGroups": ["tekton.dev"], "apiVersions": ["v1"],
      "resources": ["taskruns"], "operations": ["CREATE"], "scope": "Namespaced"}])"));
  EXPECT_EQ(hook.at("objectSelector"),
            json::parse(R"({"matchExpressions": [{"key": "kueue.x-k8s.io/podset", "operator": "Exists"}]})"));
  EXPECT_EQ(hook.at("matchConditions"), json::parse(R"([{"name": "carries-pod-placement", "expression":
      "has(object.metadata.annotations) && \"multikueue-adapter.dev/pod-placement\" in object.metadata.annotations"}])"))
      << "only a child with something to take calls the adapter";
  EXPECT_EQ(hook.at("failurePolicy"), "Fail");
  EXPECT_EQ(hook.at("sideEffects"), "None");
  EXPECT_EQ(hook.at("matchPolicy"), "Equivalent");
  EXPECT_EQ(hook.at("reinvocationPolicy"), "Never");
  EXPECT_EQ(hook.at("admissionReviewVersions"), json::array({"v1"}));
  EXPECT_EQ(hook.at("timeoutSeconds"), jobHook.at("timeoutSeconds"));
  EXPECT_EQ(hook.at("namespaceSelector"), jobHook.at("namespaceSelector"));
  json service = jobHook.at("clientConfig").at("service");
  service["path"] = "/mutate-children";
  EXPECT_EQ(hook.at("clientConfig").at("service"), service) << "the same Service as the job webhooks";
}

struct Run {
  int exitCode = -1;
  std::string output;  // stdout
  std::string errors;  // stderr
};

Run run(const std::string& args, const test::TempDir& dir) {
  const auto errFile = dir / "stderr";
  const std::string command = std::string(MKA_BINARY) + " " + args + " 2>" + errFile.string();
  Run result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  while (auto n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.errors = test::readFile(errFile);
  return result;
}

TEST(ManifestsCommand, PrintsTheStreamOfTheConfigurationFile) {
  test::TempDir dir;
  const auto file = kSource / "manifests" / "base" / "config.yaml";
  const auto r = run("manifests --config " + file.string(), dir);
  ASSERT_EQ(r.exitCode, 0) << r.errors;
  EXPECT_EQ(r.errors, "");
  const auto objects = yaml::parseJson(r.output, yaml::Limits::forManifests());
  EXPECT_EQ(objects.size(), renderManifests(load(file), readText(file)).size());
}

// A configuration validate-config refuses is refused with the same messages.
TEST(ManifestsCommand, RefusesWhatValidateConfigRefusesWithTheSameMessages) {
  test::TempDir dir;
  const auto bad =
      dir.write("bad.yaml",
                "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                "managedByDefaulting: Sometimes\nmultiKueue: {externalFrameworks: [{name: PipelineRun}]}\n");
  for (const auto& file : {bad, dir / "missing.yaml"}) {
    SCOPED_TRACE(file.string());
    const auto manifests = run("manifests --config " + file.string(), dir);
    const auto validate = run("validate-config " + file.string(), dir);
    EXPECT_EQ(manifests.exitCode, 1);
    EXPECT_EQ(validate.exitCode, 1);
    EXPECT_EQ(manifests.output, "") << "nothing to apply";
    EXPECT_EQ(manifests.errors, validate.errors);
    EXPECT_NE(manifests.errors.find(file.filename().string()), std::string::npos) << manifests.errors;
  }
}

// RBAC and webhook rules name a kind by its resource: one whose plural cannot be guessed from
// the kind is refused until the configuration writes it.
TEST(ManifestsCommand, RefusesAKindWhosePluralItCannotGuess) {
  test::TempDir dir;
  const auto file = dir.write("gateway.yaml",
                              "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"
                              "multiKueue:\n  externalFrameworks:\n  - name: Gateway.v1.net.example.com\n"
                              "    managedBy: {path: spec.managedBy}\n");
  const auto r = run("manifests --config " + file.string(), dir);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "");
  EXPECT_EQ(r.errors, file.string() +
                          ": multiKueue.externalFrameworks[0].resource: is required for Gateway: kube-apiserver's "
                          "guess from the kind is gatewaies, but a kind ending in a vowel and y usually takes -ys "
                          "(gateways), and RBAC and webhook rules need the plural its CRD declares: add resource: "
                          "<the CRD's plural> (kubectl get crd -o jsonpath='{.spec.names.plural}' on a cluster that "
                          "has it)\n");
  EXPECT_EQ(run("validate-config " + file.string(), dir).exitCode, 0) << "the running adapter asks discovery";
}

TEST(ManifestsCommand, AWorkerConfigurationMustNotDispatch) {
  test::TempDir dir;
  const auto file = kSource / "manifests" / "base" / "config.yaml";
  const auto r = run("manifests --role worker --config " + file.string(), dir);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "");
  EXPECT_EQ(r.errors, file.string() +
                          ": dispatch.enabled: is true, but a worker runs no dispatch loop (--role worker): set "
                          "dispatch.enabled: false, as manifests/overlays/worker/config.yaml does, or render with "
                          "--role manager\n");
  const auto badRole = run("manifests --role leader --config " + file.string(), dir);
  EXPECT_NE(badRole.exitCode, 0);
  EXPECT_NE(badRole.errors.find("--role"), std::string::npos) << badRole.errors;
}

}  // namespace
}  // namespace mka::deploy

namespace mka::deploy {
namespace {

// metricsSecure: the reviews granted, a reader role to bind scrapers to, the Service marked https.
TEST(ManifestMetrics, SecureMetricsBringTheReviewsAndAReaderRole) {
  const auto cfg = parse(
      "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\nmetricsSecure: true\n"
      "metricsBindAddress: \":8443\"\n");
  const auto objects = byKey(renderManifests(cfg, "", {}));
  const auto rules = objects.at("rbac.authorization.k8s.io/v1 ClusterRole multikueue-adapter").at("rules").dump();
  EXPECT_NE(rules.find("tokenreviews"), std::string::npos) << rules;
  EXPECT_NE(rules.find("subjectaccessreviews"), std::string::npos) << rules;
  EXPECT_EQ(objects.at("rbac.authorization.k8s.io/v1 ClusterRole multikueue-adapter-metrics-reader").at("rules"),
            json::parse(R"([{"nonResourceURLs":["/metrics"],"verbs":["get"]}])"));
  EXPECT_EQ(
      objects.at("v1 Service multikueue-adapter-system/multikueue-adapter-metrics")["metadata"]["annotations"].value(
          "prometheus.io/scheme", ""),
      "https");

  const auto plain = byKey(renderManifests(
      parse("apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n"), "", {}));
  EXPECT_FALSE(plain.contains("rbac.authorization.k8s.io/v1 ClusterRole multikueue-adapter-metrics-reader"));
  EXPECT_EQ(
      plain.at("rbac.authorization.k8s.io/v1 ClusterRole multikueue-adapter").at("rules").dump().find("tokenreviews"),
      std::string::npos);
}

}  // namespace
}  // namespace mka::deploy
