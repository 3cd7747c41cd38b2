#include "mka/app/validate_config.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <ostream>
#include <sstream>

#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/config/kueue_builtin_kinds.h"
#include "mka/config/loader.h"
#include "mka/yaml/json.h"

namespace mka::app {

namespace {

// What of Kueue's Configuration (`kueueConfig`) the integration depends on, or the reason it
// cannot be read.
struct KueueFrameworks {
  std::vector<std::string> names;       // integrations.externalFrameworks, "Kind.version.group"
  std::vector<std::string> frameworks;  // integrations.frameworks, Kueue's own kinds ("batch/job")
  bool waitForPodsReady = false;        // on, by kueueWaitsForPodsReady
  std::string waitForPodsReadyWhy;      // how the file turns it on, for the message
  std::string error;
};

// Whether Kueue runs with waitForPodsReady, as its config loading decides: v1beta1 only with
// waitForPodsReady.enable: true; v1beta2 (which has no enable) fills the section in by default
// (Kueue's SetDefaults_Configuration), so it is on unless featureGates.DisableWaitForPodsReady
// is true.
void kueueWaitsForPodsReady(const nlohmann::json& document, KueueFrameworks& out) {
  if (document.value("apiVersion", "") == "config.kueue.x-k8s.io/v1beta1") {
    const nlohmann::json* enable = json_fields::fieldAt(document, "waitForPodsReady.enable");
    out.waitForPodsReady = enable != nullptr && *enable == true;
    out.waitForPodsReadyWhy = "waitForPodsReady.enable: true";
    return;
  }
  const nlohmann::json* gates = json_fields::fieldAt(document, "featureGates");
  const bool disabled =
      gates != nullptr && gates->is_object() && gates->value("DisableWaitForPodsReady", false) == true;
  out.waitForPodsReady = !disabled;
  out.waitForPodsReadyWhy = document.contains("waitForPodsReady")
                                ? "waitForPodsReady is set"
                                : "waitForPodsReady is on (Kueue's v1beta2 default; featureGates "
                                  "DisableWaitForPodsReady: true turns it off)";
}

KueueFrameworks readKueueFrameworks(const std::filesystem::path& kueueConfig) {
  KueueFrameworks out;
  std::ifstream in(kueueConfig, std::ios::binary);
  if (!in) {
    out.error = "cannot read the file";
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    const auto documents = yaml::parseJson(text.str(), yaml::Limits{});
    if (documents.empty() || !documents[0].is_object() || documents[0].value("kind", "") != config::kKueueKind) {
      out.error = "not a Kueue Configuration (kind: Configuration)";
      return out;
    }
    const nlohmann::json* list = json_fields::fieldAt(documents[0], "integrations.externalFrameworks");
    if (list != nullptr && list->is_array())
      for (const auto& name : *list)
        if (name.is_string()) out.names.push_back(name.get<std::string>());
    const nlohmann::json* builtins = json_fields::fieldAt(documents[0], "integrations.frameworks");
    if (builtins != nullptr && builtins->is_array())
      for (const auto& name : *builtins)
        if (name.is_string()) out.frameworks.push_back(name.get<std::string>());
    kueueWaitsForPodsReady(documents[0], out);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace

int validateConfigCommand(const std::filesystem::path& path, std::ostream& out, std::ostream& err,
                          const std::filesystem::path& kueueConfig, std::istream* in) {
  const bool fromStdin = path == "-";
  const std::filesystem::path file = fromStdin ? std::filesystem::path("<stdin>") : path;
  auto result = fromStdin ? config::loadConfigurationStream(in != nullptr ? *in : std::cin, file.string())
                          : config::loadConfigurationFile(file);
  if (!result.ok()) {
    for (const auto& error : result.errors) err << strings::escapeControlBytes(error.toString()) << '\n';
    err << file.string() << ": " << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors") << '\n';
    return 1;
  }
  const auto& cfg = *result.config;
  const char* format =
      cfg.source == config::Configuration::Source::KueueConfiguration ? "Kueue Configuration" : "AdapterConfiguration";
  out << file.string() << ": valid " << format << ", " << cfg.multiKueue.externalFrameworks.size()
      << " external framework(s):";
  for (const auto& fw : cfg.multiKueue.externalFrameworks) {
    out << ' ' << fw.gvk.dotted() << " (managedBy " << fw.managedBy.fieldPath() << ")";
  }
  out << '\n';
  if (!cfg.integrations.frameworks.empty()) {
    out << file.string() << ": " << cfg.integrations.frameworks.size() << " integrated kind(s):";
    for (const auto& fw : cfg.integrations.frameworks) out << ' ' << fw.gvk.dotted();
    out << '\n';
  }
  if (kueueConfig.empty()) return 0;

  const auto kueue = readKueueFrameworks(kueueConfig);
  if (!kueue.error.empty()) {
    err << kueueConfig.string() << ": " << kueue.error << '\n';
    return 1;
  }
  std::vector<std::string> missing;
  for (const auto& fw : cfg.integrations.frameworks) {
    const bool listed = std::any_of(kueue.names.begin(), kueue.names.end(), [&](const std::string& name) {
      return api::GroupVersionKind::parseDotted(name) == std::optional(fw.gvk);
    });
    if (!listed) missing.push_back(fw.gvk.dotted());
  }
  for (const auto& name : missing) {
    err << kueueConfig.string() << ": integrations.externalFrameworks: " << name << " is missing: " << file.string()
        << " integrates it, so Kueue must know it as an external framework or its pod integration "
        << "manages the job's pods on its own: add \"" << name << "\" to integrations.externalFrameworks\n";
  }
  if (missing.empty()) out << kueueConfig.string() << ": integrations.externalFrameworks lists every integrated kind\n";
  // Kueue evicts an admitted Workload whose PodsReady condition is not True within its timeout:
  // the integration must keep that condition, for every kind.
  if (kueue.waitForPodsReady && !cfg.integrations.frameworks.empty()) {
    std::vector<std::string> withoutRule;
    for (const auto& fw : cfg.integrations.frameworks)
      if (!fw.podsReady) withoutRule.push_back(fw.gvk.dotted());
    const bool enabled = cfg.integrations.frameworks.front().waitForPodsReady;
    if (!withoutRule.empty()) {
      err << kueueConfig.string() << ": " << kueue.waitForPodsReadyWhy << ", but " << file.string()
          << " has no podsReady rule for " << strings::join(withoutRule, ", ")
          << ", so their Workloads never become PodsReady and Kueue evicts them after waitForPodsReady.timeout: add "
          << "a podsReady rule to each in integrations.frameworks, or turn waitForPodsReady off in Kueue\n";
      return 1;
    }
    if (!enabled) {
      err << kueueConfig.string() << ": " << kueue.waitForPodsReadyWhy << ", but " << file.string()
          << " does not set waitForPodsReady.enable: true, so the integration writes no PodsReady condition and "
          << "Kueue evicts its Workloads after waitForPodsReady.timeout: set waitForPodsReady.enable: true in "
          << file.string() << "\n";
      return 1;
    }
    out << kueueConfig.string() << ": waitForPodsReady is on, and every integrated kind has a podsReady rule\n";
  }
  // Drop-in mode answers every check of Kueue's MultiKueue controller name, and dispatches only
  // the configured kinds: a job of Kueue's own kinds on such a ClusterQueue would be Rejected.
  if (config::isDropIn(cfg)) {
    const auto builtins = config::multiKueueDispatchedFrameworks(kueue.frameworks);
    if (!builtins.empty()) {
      err << kueueConfig.string() << ": integrations.frameworks: Kueue integrates " << strings::join(builtins, ", ")
          << (kueue.frameworks.empty() ? " (its default when the list is empty)" : "")
          << ", which its MultiKueue dispatches, but " << file.string()
          << " is in drop-in mode (dispatch.admissionCheckControllerName: " << api::kMultiKueueControllerName
          << ", Kueue's MultiKueue off on the manager): the adapter then answers every MultiKueue admission "
          << "check and dispatches only its configured kinds, so such a job on a MultiKueue ClusterQueue has its "
          << "check Rejected (\"No multikueue adapter found for owner kind ...\"): use the dispatcher mode (leave "
          << "dispatch.admissionCheckControllerName at " << config::kDefaultDispatchControllerName
          << " and Kueue's MultiKueue on), or list only kinds Kueue's MultiKueue does not dispatch in "
          << "integrations.frameworks\n";
      return 1;
    }
    out << kueueConfig.string() << ": integrations.frameworks lists none of Kueue's kinds that its MultiKueue "
        << "dispatches, as drop-in mode needs\n";
  }
  return missing.empty() ? 0 : 1;
}

}  // namespace mka::app
