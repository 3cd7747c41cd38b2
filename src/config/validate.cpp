#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "mka/api/kueue.h"
#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/config/loader.h"
#include "yaml_reader.h"

namespace mka::config {
namespace {

using detail::childPath;
using detail::indexPath;
using detail::quote;

// Each worker is a thread; more than this is a typo, not a tuning.
constexpr int kMaxWorkloadConcurrency = 256;
constexpr std::string_view kNameFix = "write it as Kind.version.group, for example PipelineRun.v1.tekton.dev";

class IntegrationsValidator;

class Validator {
 public:
  friend class IntegrationsValidator;  // shares frameworkName
  FieldErrors take() { return std::move(errors_); }

  void add(std::string path, std::string problem, std::string fix) {
    errors_.push_back(FieldError{std::move(path), std::move(problem), std::move(fix)});
  }
  // apimachinery returns several messages for one value; one error per field reads better.
  void addAll(const std::string& path, std::string_view value, const std::vector<std::string>& problems,
              std::string fix) {
    if (problems.empty()) return;
    add(path, "invalid value " + quote(value) + ": " + strings::join(problems, "; "), std::move(fix));
  }

  void namespaceName(const Configuration& c) {
    addAll("namespace", c.namespace_, validation::dns1123Label(c.namespace_),
           "use the name of the namespace the adapter runs in, such as kueue-system");
  }

  void webhook(const WebhookSettings& w) {
    port("webhook.port", w.port, "use a free TCP port such as 9443");
    if (w.certDir.empty())
      add("webhook.certDir", "must not be empty",
          "set the directory holding the serving certificate, such as /tmp/k8s-webhook-server/serving-certs");
    fileName("webhook.certName", w.certName, "tls.crt");
    fileName("webhook.keyName", w.keyName, "tls.key");
  }

  void bindAddress(const std::string& path, const std::string& value, std::string_view example) {
    if (auto problem = bindAddressProblem(value))
      add(path, *problem,
          "write it as [host]:port, such as " + std::string(example) + " or 127.0.0.1" + std::string(example) +
              ", or \"0\" to turn it off");
  }

  void leaderElection(const LeaderElection& le, const std::string& adapterNamespace) {
    // client-go's rules (leaderelection.NewLeaderElector); checked only when election is on.
    if (!le.leaderElect) return;
    addAll("leaderElection.resourceName", le.resourceName, validation::dns1123Subdomain(le.resourceName),
           "use a Lease name such as multikueue-adapter");
    // Unset, it follows `namespace`, whose own error already covers it.
    if (le.resourceNamespace != adapterNamespace)
      addAll("leaderElection.resourceNamespace", le.resourceNamespace, validation::dns1123Label(le.resourceNamespace),
             "use the namespace the adapter runs in, such as kueue-system");
    positive("leaderElection.leaseDuration", le.leaseDuration, "15s");
    positive("leaderElection.renewDeadline", le.renewDeadline, "10s");
    positive("leaderElection.retryPeriod", le.retryPeriod, "2s");
    if (le.leaseDuration > Duration::zero() && le.leaseDuration <= le.renewDeadline)
      add("leaderElection.leaseDuration",
          "must be longer than renewDeadline (" + formatDuration(le.renewDeadline) + "), not " +
              formatDuration(le.leaseDuration),
          "lengthen leaseDuration or shorten renewDeadline, for example leaseDuration: 15s with renewDeadline: 10s");
    // client-go adds up to 20% jitter to retryPeriod, so renewDeadline must exceed 1.2x of it.
    const auto jittered = le.retryPeriod + le.retryPeriod / 5;
    if (le.renewDeadline > Duration::zero() && le.retryPeriod > Duration::zero() && le.renewDeadline <= jittered)
      add("leaderElection.renewDeadline",
          "must be longer than 1.2 x retryPeriod (" + formatDuration(jittered) + "), not " +
              formatDuration(le.renewDeadline),
          "lengthen renewDeadline or shorten retryPeriod, for example renewDeadline: 10s with retryPeriod: 2s");
  }

  void clientConnection(const ClientConnection& cc) {
    if (!(cc.qps > 0))
      add("clientConnection.qps", "must be greater than 0, not " + number(cc.qps),
          "set the requests per second allowed to each cluster, such as 50");
    if (cc.burst < 1)
      add("clientConnection.burst", "must be at least 1, not " + std::to_string(cc.burst),
          "set the short burst allowed above qps, such as 100");
  }

  void dispatch(const Dispatch& d, Configuration::Source source) {
    if (d.workloadConcurrency < 1 || d.workloadConcurrency > kMaxWorkloadConcurrency) {
      const std::string path = source == Configuration::Source::KueueConfiguration
                                   ? "controller.groupKindConcurrency." + std::string(kWorkloadGroupKind)
                                   : "dispatch.workloadConcurrency";
      add(path,
          "must be between 1 and " + std::to_string(kMaxWorkloadConcurrency) + ", not " +
              std::to_string(d.workloadConcurrency),
          "set how many Workloads the dispatch loop reconciles at once, such as 8");
    }
    const auto& name = d.admissionCheckControllerName;
    const std::string path = "dispatch.admissionCheckControllerName";
    const std::string fix =
        "use a domain-prefixed name such as multikueue-adapter.dev/dispatcher (or kueue.x-k8s.io/multikueue "
        "to replace Kueue's MultiKueue controller)";
    if (name.empty()) {
      add(path, "must not be empty", fix);
      return;
    }
    auto problems = validation::domainPrefixedPath(name);
    if (name.size() > 253) problems.insert(problems.begin(), "must be no more than 253 characters");
    addAll(path, name, problems, fix);
  }

  void metricsSecure(const Configuration& c) {
    if (!c.metricsSecure) {
      if (!c.metricsCertDir.empty())
        add("metricsCertDir", "is set, but metricsSecure is false: metrics are served over plain HTTP",
            "set metricsSecure: true, or remove metricsCertDir");
      return;
    }
    if (c.metricsBindAddress == "0")
      add("metricsSecure", "is true, but metricsBindAddress is \"0\": metrics are not served",
          "set metricsBindAddress, such as :8443, or remove metricsSecure");
    else if (c.metricsBindAddress == c.healthProbeBindAddress)
      add("metricsSecure",
          "is true, but metrics share their address with the health probes, which kubelet calls over plain HTTP",
          "give metricsBindAddress its own port, such as :8443");
  }

  // With dispatch off, Kueue's own MultiKueue dispatches the external frameworks, through its
  // generic adapter: that adapter reads the marker at spec.managedBy and nowhere else, so a
  // job marked anywhere else would never be dispatched (Kueue would not take it for managed).
  void webhookOnly(const Configuration& c) {
    if (c.dispatch.enabled) return;
    for (std::size_t i = 0; i < c.multiKueue.externalFrameworks.size(); ++i) {
      const auto& f = c.multiKueue.externalFrameworks[i];
      const auto& where = f.managedBy;
      if (where.type == ManagedByLocation::Type::Path && where.path == "spec.managedBy") continue;
      const std::string marker = where.type == ManagedByLocation::Type::Label ? "the label " + quote(where.labelKey)
                                                                              : "the field " + quote(where.path);
      const auto path = indexPath("multiKueue.externalFrameworks", i);
      add(f.managedByFromProfile ? childPath(path, "name") : childPath(path, "managedBy"),
          f.gvk.kind + "'s MultiKueue marker is " + marker + (f.managedByFromProfile ? " (its built-in profile)" : "") +
              ", but with dispatch.enabled false Kueue's own MultiKueue dispatches it, and Kueue's adapter for "
              "external frameworks reads spec.managedBy only: these jobs would never be dispatched",
          "set dispatch.enabled: true, so that the adapter dispatches the kind (dispatcher or drop-in mode), or "
          "remove it from multiKueue.externalFrameworks");
    }
  }

  void multiKueue(const MultiKueue& mk) {
    if (mk.gcInterval < Duration::zero())
      add("multiKueue.gcInterval", "must be greater than or equal to 0, not " + formatDuration(mk.gcInterval),
          "use 0 to turn garbage collection off, or an interval such as 1m");
    if (mk.workerLostTimeout < Duration::zero())
      add("multiKueue.workerLostTimeout",
          "must be greater than or equal to 0, not " + formatDuration(mk.workerLostTimeout),
          "use a timeout such as 15m");
    if (mk.stepSize) {
      if (mk.dispatcherName != kDispatcherIncremental && mk.dispatcherName != kDispatcherQuotaAware)
        add("multiKueue.incrementalDispatcherConfig",
            "is only valid when dispatcherName is set to the incremental dispatcher (" +
                std::string(kDispatcherIncremental) + ") or ours (" + std::string(kDispatcherQuotaAware) + ")",
            "remove it, or set multiKueue.dispatcherName");
      if (*mk.stepSize < 1)
        add("multiKueue.incrementalDispatcherConfig.stepSize",
            "must be greater than or equal to 1, not " + std::to_string(*mk.stepSize),
            "nominate at least one worker per round, such as stepSize: 3");
    }
    addAll("multiKueue.origin", mk.origin, validation::labelValue(mk.origin),
           "use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, such as "
           "multikueue");

    std::map<api::GroupVersionKind, std::size_t> firstIndex;
    for (std::size_t i = 0; i < mk.externalFrameworks.size(); ++i) {
      const auto& f = mk.externalFrameworks[i];
      const auto path = indexPath("multiKueue.externalFrameworks", i);
      if (frameworkName(childPath(path, "name"), f.name)) {
        auto [it, inserted] = firstIndex.emplace(f.gvk, i);
        if (!inserted)
          add(childPath(path, "name"),
              "duplicates " + indexPath("multiKueue.externalFrameworks", it->second) + ".name (" + f.gvk.goString() +
                  ")",
              "remove one of the two entries");
      }
      resource(childPath(path, "resource"), f.resource);
      if (!f.managedByFromProfile) managedBy(childPath(path, "managedBy"), f.managedBy);
      remoteCopy(childPath(path, "remoteCopy"), f.remoteCopy);
      const auto exclude = childPath(childPath(path, "remoteStatus"), "exclude");
      for (std::size_t j = 0; j < f.statusExclude.size(); ++j)
        pointer(indexPath(exclude, j), f.statusExclude[j], "/nodes", /*identity=*/false);
      dependencies(path, f);
    }
    if (mk.clusterProfile) clusterProfile(*mk.clusterProfile);
  }

  // A kind's resource as a CRD's spec.names.plural must be: a lower-case DNS label.
  void resource(const std::string& path, const std::string& value) {
    if (value.empty()) return;
    addAll(path, value, validation::dns1123Label(value),
           "write the plural of the kind's CRD (kubectl get crd -o jsonpath='{.spec.names.plural}'), such as "
           "pipelineruns");
  }

  // A JSON pointer (RFC 6901) naming a field. `identity`: a pointer into the worker's copy,
  // which may not touch what makes it the job's copy (its kind, name and namespace).
  bool pointer(const std::string& path, const std::string& text, std::string_view example, bool identity) {
    if (text.empty() || text.front() != '/') {
      add(path, quote(text) + " is not a JSON pointer to a field",
          "start it with / and separate the keys with /, such as " + std::string(example));
      return false;
    }
    try {
      (void)nlohmann::json::json_pointer(text);
    } catch (const nlohmann::json::exception&) {
      add(path, quote(text) + " is not a valid JSON pointer: a ~ must be followed by 0 or 1",
          "write ~ in a key as ~0 and / as ~1, such as /metadata/labels/example.com~1site");
      return false;
    }
    if (!identity) return true;
    for (const std::string_view fixed : {"/apiVersion", "/kind", "/metadata/name", "/metadata/namespace"}) {
      if (text == "/metadata" || text == fixed || text.starts_with(std::string(fixed) + "/")) {
        add(path, quote(text) + " would change the copy's kind, name or namespace, which make it the job's copy",
            "point at a field under spec, metadata.labels or metadata.annotations");
        return false;
      }
    }
    return true;
  }

  // syncDependencies and dependencies: each entry a kind we copy and a path into the job; a kind
  // that turns syncing on has somewhere to look.
  void dependencies(const std::string& base, const ExternalFramework& f) {
    const auto list = childPath(base, "dependencies");
    for (std::size_t j = 0; j < f.dependencies.size(); ++j) {
      const auto& d = f.dependencies[j];
      const auto at = indexPath(list, j);
      if (std::find(std::begin(kDependencyKinds), std::end(kDependencyKinds), d.kind) == std::end(kDependencyKinds))
        add(childPath(at, "kind"), d.kind.empty() ? "is required" : quote(d.kind) + " is not a kind that is copied",
            "use Secret, ConfigMap or ServiceAccount (other kinds are never copied to workers)");
      if (const auto problem = json_fields::listPathProblem(d.path))
        add(childPath(at, "path"), *problem,
            "write the dotted path to the name from the job's root, [*] after a list, such as "
            "spec.volumes[*].secret.secretName");
    }
    if (!f.dependencies.empty() && !f.syncDependencies)
      add(list, "has no effect while syncDependencies is false",
          "set syncDependencies: true on this kind, or remove dependencies");
    if (f.syncDependencies && f.dependencies.empty() && builtinDependencies(f.gvk).empty())
      add(childPath(base, "syncDependencies"), "is true but " + f.gvk.kind + " has no built-in dependency paths",
          "list where its jobs name Secrets, ConfigMaps or ServiceAccounts under dependencies, such as - "
          "{kind: Secret, path: spec.credentials.secretName}");
  }

  // RFC 6902, as the worker's copy is patched: the operations and the fields each needs.
  void remoteCopy(const std::string& base, const RemoteCopy& copy) {
    for (std::size_t j = 0; j < copy.removeFields.size(); ++j)
      pointer(indexPath(childPath(base, "removeFields"), j), copy.removeFields[j], "/spec/ttlStrategy", true);
    static const std::set<std::string> kOps = {"add", "remove", "replace", "move", "copy", "test"};
    for (std::size_t j = 0; j < copy.patches.size(); ++j) {
      const auto& op = copy.patches[j];
      const auto at = indexPath(childPath(base, "patches"), j);
      const std::string name = op.value("op", "");
      if (!kOps.contains(name)) {
        add(childPath(at, "op"), name.empty() ? "is required" : quote(name) + " is not an RFC 6902 operation",
            "use add, remove, replace, move, copy or test");
        continue;
      }
      if (!op.contains("path")) {
        add(childPath(at, "path"), "is required",
            "point at the field to " + name + ", such as /spec/serviceAccountName");
      } else {
        // test only reads; every other operation writes at its path.
        pointer(childPath(at, "path"), op.value("path", ""), "/spec/serviceAccountName", name != "test");
      }
      const bool needsValue = name == "add" || name == "replace" || name == "test";
      if (needsValue && !op.contains("value"))
        add(childPath(at, "value"), "is required by " + name, "give the value to " + name);
      if (!needsValue && op.contains("value")) add(childPath(at, "value"), "is not used by " + name, "remove it");
      const bool needsFrom = name == "move" || name == "copy";
      if (needsFrom && !op.contains("from"))
        add(childPath(at, "from"), "is required by " + name, "point at the field to " + name + " from");
      else if (needsFrom)
        pointer(childPath(at, "from"), op.value("from", ""), "/spec/serviceAccountName", name == "move");
      if (!needsFrom && op.contains("from")) add(childPath(at, "from"), "is only used by move and copy", "remove it");
    }
  }

  // Kueue's rules (validateClusterProfileAccessProviders, after client-go's), plus the
  // apiVersion, which client-go would refuse only when a cluster first connects.
  void clusterProfile(const ClusterProfileAccess& cp) {
    const std::string base = "multiKueue.clusterProfile";
    if (!cp.accessProviders.empty() && !cp.credentialsProviders.empty())
      add(childPath(base, "credentialsProviders"), "must not be specified when accessProviders is specified",
          "move its providers to accessProviders (credentialsProviders is the deprecated name of the same list)");
    const bool access = !cp.accessProviders.empty();
    const auto listPath = childPath(base, access ? "accessProviders" : "credentialsProviders");
    const auto& providers = cp.providers();
    for (std::size_t i = 0; i < providers.size(); ++i) {
      const auto& p = providers[i];
      const auto path = indexPath(listPath, i);
      if (p.name.empty())
        add(childPath(path, "name"), "must be specified",
            "write the access provider name the ClusterProfiles' status.accessProviders use, such as "
            "open-cluster-management");
      const auto exec = childPath(path, "execConfig");
      if (p.execConfig.command.empty())
        add(childPath(exec, "command"), "must be specified",
            "write the credential plugin's path, such as /usr/local/bin/cp-creds");
      if (p.execConfig.apiVersion.empty()) {
        add(childPath(exec, "apiVersion"), "must be specified", "write client.authentication.k8s.io/v1");
      } else if (p.execConfig.apiVersion != "client.authentication.k8s.io/v1" &&
                 p.execConfig.apiVersion != "client.authentication.k8s.io/v1beta1") {
        add(childPath(exec, "apiVersion"),
            "unsupported value " + quote(p.execConfig.apiVersion) +
                ": client-go runs exec plugins of "
                "client.authentication.k8s.io/v1 and v1beta1 only",
            "write client.authentication.k8s.io/v1 (or v1beta1 for an older plugin)");
      }
      for (std::size_t e = 0; e < p.execConfig.env.size(); ++e)
        if (p.execConfig.env[e].name.empty())
          add(childPath(indexPath(childPath(exec, "env"), e), "name"), "must be specified",
              "name the environment variable, or remove the entry");
      const auto& mode = p.execConfig.interactiveMode;
      if (mode.empty()) {
        add(childPath(exec, "interactiveMode"), "must be specified",
            "write Never: the adapter has no terminal to give the plugin");
      } else if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
        add(childPath(exec, "interactiveMode"),
            "unsupported value " + quote(mode) + ": supported values: \"Never\", \"IfAvailable\", \"Always\"",
            "write Never: the adapter has no terminal to give the plugin");
      }
    }
  }

 private:
  static std::string number(double v) {
    auto s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  static std::optional<std::string> bindAddressProblem(const std::string& value) {
    if (value == "0") return std::nullopt;
    auto colon = value.rfind(':');
    if (colon == std::string::npos) return "must be [host]:port or \"0\", not " + quote(value);
    auto host = std::string_view(value).substr(0, colon);
    auto port = std::string_view(value).substr(colon + 1);
    if (!host.empty() && host.front() == '[') {
      if (host.size() < 3 || host.back() != ']') return "has an IPv6 host without its closing ']': " + quote(value);
    } else if (host.find(':') != std::string_view::npos) {
      return "has an IPv6 host that is not in brackets: " + quote(value);
    }
    int n = 0;
    if (port.empty() || port.size() > 5) return "must end with a port number between 1 and 65535: " + quote(value);
    for (char c : port) {
      if (c < '0' || c > '9') return "must end with a port number between 1 and 65535: " + quote(value);
      n = n * 10 + (c - '0');
    }
    if (n < 1 || n > 65535) return "must end with a port number between 1 and 65535: " + quote(value);
    return std::nullopt;
  }

  void port(const std::string& path, int value, std::string fix) {
    if (value < 1 || value > 65535)
      add(path, "must be between 1 and 65535, not " + std::to_string(value), std::move(fix));
  }

  void fileName(const std::string& path, const std::string& value, std::string_view example) {
    if (value.empty() || value.find('/') != std::string::npos)
      add(path, "must be a file name inside certDir, not " + quote(value),
          "use a name such as " + std::string(example));
  }

  void positive(const std::string& path, Duration d, std::string_view example) {
    if (d <= Duration::zero())
      add(path, "must be greater than 0, not " + formatDuration(d), "use a duration such as " + std::string(example));
  }

  static bool isKind(std::string_view kind) {
    if (kind.empty() || !std::isupper(static_cast<unsigned char>(kind.front()))) return false;
    for (char c : kind)
      if (!std::isalnum(static_cast<unsigned char>(c))) return false;
    return true;
  }

  // One error per name, listing every broken part; true when the name is usable.
  bool frameworkName(const std::string& path, const std::string& name) {
    if (name.empty()) {
      add(path, "is required", std::string(kNameFix));
      return false;
    }
    auto gvk = api::GroupVersionKind::parseDotted(name);
    if (!gvk) {
      add(path, "must be in 'Kind.version.group' format, not " + quote(name), std::string(kNameFix));
      return false;
    }
    std::vector<std::string> problems;
    std::string fix(kNameFix);
    if (gvk->kind.empty()) {
      problems.push_back("the Kind part is empty");
    } else if (!isKind(gvk->kind)) {
      problems.push_back("the Kind " + quote(gvk->kind) +
                         " must start with an upper-case letter and hold only letters and digits");
      auto fixed = *gvk;
      fixed.kind[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(fixed.kind[0])));
      // A built-in kind spelled in another case gets its own spelling ("pipelinerun" ->
      // "PipelineRun", not "Pipelinerun").
      for (const auto& [group, kind] : integrationProfileKinds())
        if (group == gvk->group && strings::toLower(kind) == strings::toLower(gvk->kind)) fixed.kind = kind;
      if (isKind(fixed.kind)) fix = "did you mean " + quote(fixed.dotted()) + "?";
    }
    if (gvk->version.empty()) {
      problems.push_back("the version part is empty");
    } else if (!validation::dns1123Label(gvk->version).empty()) {
      problems.push_back("the version " + quote(gvk->version) +
                         " must be lower-case letters, digits and '-', such as v1 or v1beta1");
    }
    if (gvk->group.empty()) {
      problems.push_back("the group part is empty");
    } else if (!validation::dns1123Subdomain(gvk->group).empty()) {
      problems.push_back("the group " + quote(gvk->group) + " must be a lower-case DNS name such as tekton.dev");
    } else if (gvk->group.find('.') == std::string::npos) {
      problems.push_back("the group " + quote(gvk->group) +
                         " has no dot (custom resource groups are DNS names such as tekton.dev)");
      // "PipelineRun.tekton.dev" splits into version "tekton", group "dev": the version is missing.
      if (!gvk->version.empty() && gvk->version.front() != 'v')
        fix = "the version seems to be missing: " + std::string(kNameFix);
    }
    if (problems.empty()) return true;
    add(path, "invalid value " + quote(name) + ": " + strings::join(problems, "; "), fix);
    return false;
  }

  void managedBy(const std::string& path, const ManagedByLocation& where) {
    if (where.type == ManagedByLocation::Type::Path) {
      if (!isSpecPath(where.path))
        add(childPath(path, "path"), "must be a field path below spec, not " + quote(where.path),
            "write a dotted path of field names such as spec.managedBy or spec.runPolicy.managedBy");
      return;
    }
    if (where.labelKey.empty())
      add(childPath(path, "label"), "must not be empty",
          "write a label key such as workflows.argoproj.io/controller-instanceid");
    else
      addAll(childPath(path, "label"), where.labelKey, validation::qualifiedName(where.labelKey),
             "write a label key such as workflows.argoproj.io/controller-instanceid");
    const std::string valueFix =
        "use at most 63 letters, digits, '-', '_' or '.' (no '/'), starting and ending with a letter or digit, such "
        "as multikueue";
    if (where.value.empty())
      add(childPath(path, "value"), "is required with label",
          "add value: multikueue (a label value: at most 63 letters, digits, '-', '_' or '.', no '/')");
    else
      addAll(childPath(path, "value"), where.value, validation::labelValue(where.value), valueFix);
  }

  // "spec.a.b": identifier segments below spec, so the JSON pointer we derive stays simple.
  static bool isSpecPath(std::string_view path) {
    auto segments = strings::split(path, '.');
    if (segments.size() < 2 || segments[0] != "spec") return false;
    for (const auto& s : segments) {
      if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
      for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    }
    return true;
  }

  FieldErrors errors_;
};

// The integrations section: every framework usable by the integration controller.
class IntegrationsValidator {
 public:
  explicit IntegrationsValidator(Validator& v) : v_(v) {}

  void check(const Integrations& integrations) {
    std::map<api::GroupVersionKind, std::size_t> firstIndex;
    for (std::size_t i = 0; i < integrations.frameworks.size(); ++i) {
      const auto& f = integrations.frameworks[i];
      const auto path = indexPath("integrations.frameworks", i);
      if (!v_.frameworkName(childPath(path, "name"), f.name)) continue;
      auto [it, inserted] = firstIndex.emplace(f.gvk, i);
      if (!inserted)
        v_.add(childPath(path, "name"),
               "duplicates " + indexPath("integrations.frameworks", it->second) + ".name (" + f.gvk.goString() + ")",
               "remove one of the two entries");
      framework(path, f);
    }
  }

 private:
  static constexpr std::string_view kNoProfile = "is required for a kind without a built-in profile";

  void framework(const std::string& path, const IntegratedFramework& f) {
    v_.resource(childPath(path, "resource"), f.resource);
    if (!f.suspend) {
      v_.add(childPath(path, "suspend"), std::string(kNoProfile),
             "add suspend: {path: spec.suspend, value: true}, the field and value that keep the job from running");
    } else {
      fieldValue(childPath(path, "suspend"), *f.suspend);
    }
    if (f.stop) fieldValue(childPath(path, "stop"), *f.stop);
    podSets(childPath(path, "podSets"), f);
    if (!f.finished) {
      v_.add(childPath(path, "finished"), std::string(kNoProfile),
             "add finished: {condition: {type: Succeeded}}, or finished: {phase: {path: status.phase, succeeded: "
             "[Succeeded], failed: [Failed]}}");
    } else {
      finished(childPath(path, "finished"), *f.finished);
    }
    if (f.active) active(childPath(path, "active"), *f.active);
    if (f.podsReady) active(childPath(path, "podsReady"), *f.podsReady);
    if (f.waitForPodsReady && !f.podsReady)
      v_.add(childPath(path, "podsReady"),
             "is required while waitForPodsReady.enable is true: Kueue evicts an admitted Workload whose PodsReady "
             "condition is not True within waitForPodsReady.timeout, and without the rule the integration "
             "cannot tell when the pods of " +
                 f.gvk.dotted() + " have started",
             "add podsReady, such as {condition: {type: Running, status: \"True\"}}, or set "
             "waitForPodsReady.enable to false in both this file and Kueue's Configuration");
  }

  void fieldValue(const std::string& path, const FieldValue& fv) {
    if (auto problem = fieldPathProblem(fv.path, "spec"))
      v_.add(childPath(path, "path"), *problem, "write the field's dotted path, such as spec.suspend");
    if (fv.value.is_null())
      v_.add(childPath(path, "value"), "is required",
             "write the value the field holds while the job is suspended, such as true");
  }

  void podSets(const std::string& path, const IntegratedFramework& f) {
    if (f.podSetsFrom != PodSetsFrom::Rules) return;  // computed by the profile
    if (f.podSets.empty()) {
      v_.add(path, f.profile ? "must list at least one pod set" : std::string(kNoProfile),
             "add podSets: [{name: main, count: {path: spec.replicas, default: 1}, template: spec.template}]");
      return;
    }
    if (f.podSets.size() > api::kMaxPodSets)
      v_.add(path,
             "lists " + std::to_string(f.podSets.size()) + " pod sets for " + f.gvk.kind + ", more than the " +
                 std::to_string(api::kMaxPodSets) + " a Kueue Workload holds (its CRD's spec.podSets maxItems)",
             "merge pod sets whose pods are alike (same template, counts added) until at most " +
                 std::to_string(api::kMaxPodSets) + " remain");
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < f.podSets.size(); ++i) {
      const auto& p = f.podSets[i];
      const auto at = indexPath(path, i);
      if (p.name.empty()) {
        v_.add(childPath(at, "name"), "is required", "name the pod set, such as main");
      } else {
        v_.addAll(childPath(at, "name"), p.name, validation::dns1123Label(p.name),
                  "use a lower-case name of letters, digits and '-', such as main or workers");
        auto [it, inserted] = seen.emplace(p.name, i);
        if (!inserted)
          v_.add(childPath(at, "name"), "duplicates " + indexPath(path, it->second) + ".name (" + quote(p.name) + ")",
                 "give each pod set its own name");
      }
      count(childPath(at, "count"), p.count);
      if (p.templatePath.empty()) {
        v_.add(childPath(at, "template"), "is required",
               "write the path of the job's pod template (a PodTemplateSpec), such as spec.template");
      } else if (auto problem = fieldPathProblem(p.templatePath, "spec")) {
        v_.add(childPath(at, "template"), *problem, "write the pod template's dotted path, such as spec.template");
      }
    }
  }

  void count(const std::string& path, const PodSetCount& c) {
    const std::string fix = "write {path: spec.replicas, default: 1} to read it from the job, or {value: 4}";
    if (c.value && !c.path.empty()) {
      v_.add(path, "sets both path and value", fix);
    } else if (!c.value && c.path.empty()) {
      v_.add(path, "must set path or value", fix);
    } else if (c.value && *c.value < 1) {
      v_.add(childPath(path, "value"), "must be at least 1, not " + std::to_string(*c.value), fix);
    } else if (!c.value) {
      if (auto problem = fieldPathProblem(c.path, ""))
        v_.add(childPath(path, "path"), *problem, "write the field's dotted path, such as spec.replicas");
      if (c.defaultValue < 1)
        v_.add(childPath(path, "default"), "must be at least 1, not " + std::to_string(c.defaultValue),
               "write the count to use when the field is absent, such as 1");
    }
  }

  void finished(const std::string& path, const FinishedRule& rule) {
    if (rule.type == FinishedRule::Type::Condition) {
      if (rule.conditionType.empty())
        v_.add(path, "must set condition or phase",
               "write {condition: {type: Succeeded}} (True = succeeded, False = failed), or {phase: {path: "
               "status.phase, succeeded: [Succeeded], failed: [Failed]}}");
      return;
    }
    const auto phase = childPath(path, "phase");
    if (auto problem = fieldPathProblem(rule.phasePath, ""))
      v_.add(childPath(phase, "path"), *problem, "write the phase field's dotted path, such as status.phase");
    if (rule.succeeded.empty())
      v_.add(childPath(phase, "succeeded"), "must list at least one phase",
             "list the phases that mean the job succeeded, such as [Succeeded]");
    if (!rule.messagePath.empty())
      if (auto problem = fieldPathProblem(rule.messagePath, ""))
        v_.add(childPath(phase, "message"), *problem, "write the message field's dotted path, such as status.message");
  }

  void active(const std::string& path, const ActiveRule& rule) {
    switch (rule.type) {
      case ActiveRule::Type::Condition: {
        if (rule.conditionType.empty()) {
          v_.add(path, "must set condition, phase or pods",
                 "write {pods: {items: /status/nodes, filter: {path: type, value: Pod}, state: {path: phase, running: "
                 "[Pending, Running]}}}, {condition: {type: Running, status: \"True\"}} or {phase: {path: "
                 "status.phase, running: [Running]}}");
          return;
        }
        const auto condition = childPath(path, "condition");
        static const std::set<std::string> kStatuses = {"True", "False", "Unknown"};
        if (!kStatuses.contains(rule.conditionStatus))
          v_.add(childPath(condition, "status"), "must be True, False or Unknown, not " + quote(rule.conditionStatus),
                 "write the status the condition has while the job's pods may run, such as \"True\"");
        if (!rule.reasons.empty() && !rule.exceptReasons.empty())
          v_.add(condition, "sets both reasons and exceptReasons",
                 "keep reasons (the reasons that count) or exceptReasons (the reasons that do not)");
        return;
      }
      case ActiveRule::Type::Phase: {
        const auto phase = childPath(path, "phase");
        if (auto problem = fieldPathProblem(rule.path, ""))
          v_.add(childPath(phase, "path"), *problem, "write the phase field's dotted path, such as status.phase");
        if (rule.running.empty())
          v_.add(childPath(phase, "running"), "must list at least one phase",
                 "list the phases in which the job's pods may run, such as [Running]");
        return;
      }
      case ActiveRule::Type::Pods: {
        const auto pods = childPath(path, "pods");
        if (rule.items.empty())
          v_.add(childPath(pods, "items"), "is required",
                 "write a JSON pointer to the job's list or map of pods, such as /status/nodes");
        else
          v_.pointer(childPath(pods, "items"), rule.items, "/status/nodes", /*identity=*/false);
        if (rule.filter) {
          const auto filter = childPath(pods, "filter");
          if (auto problem = itemPathProblem(rule.filter->path))
            v_.add(childPath(filter, "path"), *problem, "write the item's field, such as type");
          if (rule.filter->value.is_null())
            v_.add(childPath(filter, "value"), "is required",
                   "write the value the item's field holds for a pod, such as Pod");
        }
        const auto state = childPath(pods, "state");
        if (auto problem = itemPathProblem(rule.path))
          v_.add(childPath(state, "path"), *problem, "write the item's state field, such as phase");
        if (rule.running.empty())
          v_.add(childPath(state, "running"), "must list at least one state",
                 "list the states in which a pod may run, such as [Pending, Running]");
        return;
      }
    }
  }

  // A dotted path of field names within a list's item ("phase", "status.phase"); nullopt when
  // usable.
  static std::optional<std::string> itemPathProblem(const std::string& path) {
    if (path.empty()) return "is required";
    for (const auto& s : strings::split(path, '.')) {
      bool valid = !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0]));
      for (char c : s) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!valid) return "must be a dotted field path, not " + quote(path);
    }
    return std::nullopt;
  }

  // A dotted path of field names (below `root` when one is given); nullopt when usable.
  static std::optional<std::string> fieldPathProblem(const std::string& path, std::string_view root) {
    const std::string shape = root.empty() ? "a dotted field path" : "a dotted field path below " + std::string(root);
    if (path.empty()) return "is required";
    auto segments = strings::split(path, '.');
    bool valid = segments.size() >= 2 && (root.empty() || segments[0] == root);
    for (const auto& s : segments) {
      valid = valid && !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0]));
      for (char c : s) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    }
    if (valid) return std::nullopt;
    return "must be " + shape + ", not " + quote(path);
  }

  Validator& v_;
};

}  // namespace

FieldErrors validateMetricsServing(const Configuration& c) {
  Validator v;
  v.metricsSecure(c);
  return v.take();
}

FieldErrors unresolvedResources(const Configuration& c) {
  FieldErrors out;
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> written;  // kind -> path, value
  const auto check = [&](const std::string& path, const api::GroupVersionKind& gvk, const std::string& resource) {
    const auto key = std::make_pair(gvk.group, gvk.kind);
    if (!resource.empty()) {
      const auto [it, inserted] = written.emplace(key, std::make_pair(path, resource));
      if (!inserted && it->second.second != resource)
        out.push_back({childPath(path, "resource"),
                       quote(resource) + " differs from " + childPath(it->second.first, "resource") + " (" +
                           quote(it->second.second) + ") for the same kind " + gvk.kind + "." + gvk.group,
                       "write the plural of the kind's CRD in both"});
      return;
    }
    if (c.resourceOf(gvk) != api::guessResource(gvk.kind)) return;  // written in the other list
    if (const auto doubt = api::resourceGuessDoubt(gvk.kind))
      out.push_back({childPath(path, "resource"),
                     "is required for " + gvk.kind + ": " + *doubt +
                         ", and RBAC and webhook rules need the plural "
                         "its CRD declares",
                     "add resource: <the CRD's plural> (kubectl get crd -o jsonpath='{.spec.names.plural}' on a "
                     "cluster that has it)"});
  };
  for (std::size_t i = 0; i < c.multiKueue.externalFrameworks.size(); ++i) {
    const auto& f = c.multiKueue.externalFrameworks[i];
    check(indexPath("multiKueue.externalFrameworks", i), f.gvk, f.resource);
  }
  for (std::size_t i = 0; i < c.integrations.frameworks.size(); ++i) {
    const auto& f = c.integrations.frameworks[i];
    check(indexPath("integrations.frameworks", i), f.gvk, f.resource);
  }
  return out;
}

FieldErrors validateConfiguration(const Configuration& c) {
  Validator v;
  v.namespaceName(c);
  v.webhook(c.webhook);
  v.bindAddress("healthProbeBindAddress", c.healthProbeBindAddress, ":8081");
  v.bindAddress("metricsBindAddress", c.metricsBindAddress, ":8080");
  v.metricsSecure(c);
  v.leaderElection(c.leaderElection, c.namespace_);
  v.clientConnection(c.clientConnection);
  v.dispatch(c.dispatch, c.source);
  v.multiKueue(c.multiKueue);
  v.webhookOnly(c);
  IntegrationsValidator(v).check(c.integrations);
  return v.take();
}

}  // namespace mka::config
