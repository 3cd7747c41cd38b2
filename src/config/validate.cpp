#include <cctype>
#include <map>
#include <string>

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

class Validator {
 public:
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

  void multiKueue(const MultiKueue& mk) {
    if (mk.gcInterval < Duration::zero())
      add("multiKueue.gcInterval", "must be greater than or equal to 0, not " + formatDuration(mk.gcInterval),
          "use 0 to turn garbage collection off, or an interval such as 1m");
    if (mk.workerLostTimeout < Duration::zero())
      add("multiKueue.workerLostTimeout",
          "must be greater than or equal to 0, not " + formatDuration(mk.workerLostTimeout),
          "use a timeout such as 15m");
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
      if (!f.managedByFromProfile) managedBy(childPath(path, "managedBy"), f.managedBy);
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

}  // namespace

FieldErrors validateConfiguration(const Configuration& c) {
  Validator v;
  v.namespaceName(c);
  v.webhook(c.webhook);
  v.bindAddress("healthProbeBindAddress", c.healthProbeBindAddress, ":8081");
  v.bindAddress("metricsBindAddress", c.metricsBindAddress, ":8080");
  v.leaderElection(c.leaderElection, c.namespace_);
  v.clientConnection(c.clientConnection);
  v.dispatch(c.dispatch, c.source);
  v.multiKueue(c.multiKueue);
  return v.take();
}

}  // namespace mka::config
