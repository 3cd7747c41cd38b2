#include "mka/deploy/manifests.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <ostream>
#include <set>

#include "mka/api/kueue.h"
#include "mka/common/bounded_read.h"
#include "mka/common/strings.h"
#include "mka/config/loader.h"
#include "mka/deploy/webhook_conditions.h"
#include "mka/yaml/json.h"

namespace mka::deploy {

namespace {

using Json = nlohmann::ordered_json;

const std::string kRbacGroup = "rbac.authorization.k8s.io";
const std::string kRbacApiVersion = kRbacGroup + "/v1";
const std::string kWebhookApiVersion = "admissionregistration.k8s.io/v1";
constexpr std::string_view kComponentLabel = "app.kubernetes.io/component";
constexpr int kWebhookServicePort = 443;

// A JSON array of strings: an initializer list of two strings would read as an object.
Json stringArray(const std::vector<std::string>& items) {
  Json out = Json::array();
  for (const auto& item : items) out.push_back(item);
  return out;
}

// The labels that select the pods: the Deployment's, the Services', the PodDisruptionBudget's.
Json podSelector() {
  return {{"app.kubernetes.io/name", std::string(kName)}, {std::string(kComponentLabel), "adapter"}};
}

Json metadata(std::string_view name, std::string_view ns = "", Json extraLabels = Json::object()) {
  Json m = {{"name", std::string(name)}};
  if (!ns.empty()) m["namespace"] = std::string(ns);
  Json labels = commonLabels();
  for (auto& [k, v] : extraLabels.items()) labels[k] = v;
  m["labels"] = std::move(labels);
  return m;
}

Json object(std::string_view apiVersion, std::string_view kind, Json meta) {
  return {{"apiVersion", std::string(apiVersion)}, {"kind", std::string(kind)}, {"metadata", std::move(meta)}};
}

// The port of a bind address (":8081", "0.0.0.0:8081"); nullopt for "0" or "" (disabled).
std::optional<int> portOf(const std::string& address) {
  const auto colon = address.rfind(':');
  const std::string digits = colon == std::string::npos ? address : address.substr(colon + 1);
  int port = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port <= 0) return std::nullopt;
  return port;
}

// The namespaces whose jobs the job webhooks never see: the control plane, Kueue's and ours, so
// that a broken adapter cannot block them or its own recovery.
std::vector<std::string> excludedNamespaces(const config::Configuration& cfg) {
  std::vector<std::string> out;
  for (const std::string& ns : {std::string("kube-system"), cfg.namespace_, std::string(kNamespace)})
    if (std::find(out.begin(), out.end(), ns) == out.end()) out.push_back(ns);
  return out;
}

Json namespaceSelectorExcluding(const std::vector<std::string>& namespaces) {
  return {{"matchExpressions",
           Json::array({Json{
               {"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", stringArray(namespaces)}}})}};
}

Json webhookClientConfig(std::string_view path) {
  return {{"service",
           {{"name", std::string(kWebhookService)},
            {"namespace", std::string(kNamespace)},
            {"path", std::string(path)},
            {"port", kWebhookServicePort}}}};
}

Json jobRules(const config::Configuration& cfg, const std::vector<api::GroupVersionKind>& kinds,
              const std::vector<std::string>& operations) {
  Json rules = Json::array();
  for (const auto& gvk : kinds)
    rules.push_back({{"apiGroups", stringArray({gvk.group})},
                     {"apiVersions", stringArray({gvk.version})},
                     {"resources", stringArray({cfg.resourceOf(gvk)})},
                     {"operations", stringArray(operations)},
                     {"scope", "Namespaced"}});
  return rules;
}

// ---------------------------------------------------------------- RBAC

struct Rules {
  Json rules = Json::array();
  std::vector<std::string> reasons;  // comment lines
};

std::string sortedVerbs(const std::set<std::string>& verbs) {
  std::string out;
  for (const auto verb : verbOrder())
    if (verbs.contains(std::string(verb))) out += (out.empty() ? "" : ",") + std::string(verb);
  return out;
}

// The policy rules of one scope ("" = the ClusterRole): per group, the resources that share a
// set of verbs in one rule, in the table's order.
Rules rulesFor(const std::vector<Grant>& grants, const std::string& ns) {
  std::vector<std::pair<std::string, std::string>> order;  // (group, resource) as first granted
  std::map<std::pair<std::string, std::string>, std::set<std::string>> verbs;
  Rules out;
  std::vector<const ApiAccess*> rows;
  for (const auto& g : grants) {
    if (g.namespace_ != ns) continue;
    const auto key = std::pair{g.group, g.resource};
    if (!verbs.contains(key)) order.push_back(key);
    verbs[key].insert(g.verb);
    if (std::find(rows.begin(), rows.end(), g.access) == rows.end()) rows.push_back(g.access);
  }
  std::vector<std::pair<std::string, std::string>> ruleKeys;  // (group, verbs) in first-use order
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> resources;
  for (const auto& key : order) {
    const auto ruleKey = std::pair{key.first, sortedVerbs(verbs[key])};
    if (!resources.contains(ruleKey)) ruleKeys.push_back(ruleKey);
    resources[ruleKey].push_back(key.second);
  }
  for (const auto& ruleKey : ruleKeys) {
    const auto ruleVerbs = strings::split(ruleKey.second, ',');
    out.rules.push_back({{"apiGroups", stringArray({ruleKey.first})},
                         {"resources", stringArray(resources[ruleKey])},
                         {"verbs", stringArray(ruleVerbs)}});
  }
  for (const auto* row : rows) {
    std::vector<std::string> names;  // the row's resources in this scope, kinds expanded
    for (const auto& g : grants)
      if (g.access == row && g.namespace_ == ns && std::find(names.begin(), names.end(), g.resource) == names.end())
        names.push_back(g.resource);
    std::vector<std::string> rowVerbs(row->verbs.begin(), row->verbs.end());
    out.reasons.push_back(std::string(toString(row->component)) + ": " + strings::join(names, " ") + " (" +
                          strings::join(rowVerbs, ",") + "): " + std::string(row->reason));
  }
  return out;
}

Json binding(std::string_view kind, std::string_view roleKind, std::string_view name, std::string_view ns) {
  Json b = object(kRbacApiVersion, kind, metadata(name, ns));
  b["roleRef"] = {{"apiGroup", kRbacGroup}, {"kind", std::string(roleKind)}, {"name", std::string(name)}};
  b["subjects"] = Json::array(
      {Json{{"kind", "ServiceAccount"}, {"name", std::string(kName)}, {"namespace", std::string(kNamespace)}}});
  return b;
}

void addRbac(std::vector<Manifest>& out, const config::Configuration& cfg, Role role) {
  const auto grants = grantsFor(role, cfg);
  std::vector<std::string> namespaces;  // of the Roles, in table order
  for (const auto& g : grants)
    if (!g.namespace_.empty() && std::find(namespaces.begin(), namespaces.end(), g.namespace_) == namespaces.end())
      namespaces.push_back(g.namespace_);
  const std::string header = "What the adapter's code calls on this cluster as the " + std::string(toString(role)) +
                             " (the table of include/mka/deploy/rbac.h), and why:";
  const auto comment = [&](const Rules& rules) {
    std::string text = header;
    for (const auto& reason : rules.reasons) text += "\n- " + reason;
    return text;
  };

  const auto cluster = rulesFor(grants, "");
  if (!cluster.rules.empty()) {
    Json clusterRole = object(kRbacApiVersion, "ClusterRole", metadata(kName));
    clusterRole["rules"] = cluster.rules;
    out.push_back({std::move(clusterRole), comment(cluster)});
    out.push_back({binding("ClusterRoleBinding", "ClusterRole", kName, ""), ""});
  }
  // One Role per namespace and scope, each with its own name, so that a namespace holding
  // several scopes (the Lease beside the Pods, the kubeconfig Secrets beside Kueue's objects)
  // keeps each purpose's rights apart.
  for (const auto& ns : namespaces) {
    for (const auto& [scope, name] :
         {std::pair{Scope::ConfiguredNamespace, kKubeconfigsRole}, std::pair{Scope::LeaseNamespace, kName},
          std::pair{Scope::PodNamespace, kEventsRole}}) {
      std::vector<Grant> own;
      for (const auto& g : grants)
        if (g.namespace_ == ns && g.access->scope == scope) own.push_back(g);
      if (own.empty()) continue;
      const auto scoped = rulesFor(own, ns);
      Json r = object(kRbacApiVersion, "Role", metadata(name, ns));
      r["rules"] = scoped.rules;
      out.push_back({std::move(r), comment(scoped)});
      out.push_back({binding("RoleBinding", "Role", name, ns), ""});
    }
  }
}

// ---------------------------------------------------------------- workloads

Json deployment(const config::Configuration& cfg, const ManifestOptions& options) {
  const auto health = portOf(cfg.healthProbeBindAddress);
  const auto metrics = portOf(cfg.metricsBindAddress);
  const std::string certDir = cfg.webhook.certDir;

  Json ports =
      Json::array({Json{{"name", "webhook-server"}, {"containerPort", cfg.webhook.port}, {"protocol", "TCP"}}});
  if (health) ports.push_back({{"name", "health"}, {"containerPort", *health}, {"protocol", "TCP"}});
  if (metrics && metrics != health)
    ports.push_back({{"name", "metrics"}, {"containerPort", *metrics}, {"protocol", "TCP"}});

  Json container = {
      {"name", "adapter"},
      {"image", options.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"args", stringArray({"serve", "--config=" + std::string(kConfigDir) + "/" + std::string(kConfigKey),
                            "--cert-dir=" + certDir, "--health-probe-bind-address=" + cfg.healthProbeBindAddress,
                            "--metrics-bind-address=" + cfg.metricsBindAddress})},
      {"env", Json::array({Json{{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                           Json{{"name", "POD_NAMESPACE"},
                                {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}}},
                           Json{{"name", "POD_UID"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}}})},
      {"ports", ports},
  };
  if (health) {
    const auto probe = [&](const char* path, int initialDelay, int period) {
      return Json{{"httpGet", {{"path", path}, {"port", *health}}},
                  {"initialDelaySeconds", initialDelay},
                  {"periodSeconds", period},
                  {"timeoutSeconds", 2},
                  {"failureThreshold", 3}};
    };
    container["livenessProbe"] = probe("/healthz", 5, 10);
    container["readinessProbe"] = probe("/readyz", 2, 5);
  }
  // The Service's endpoints drop this pod before SIGTERM, so the apiserver stops sending
  // admission requests here first.
  container["lifecycle"] = {{"preStop", {{"exec", {{"command", stringArray({"sleep", "5"})}}}}}};
  container["resources"] = {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}},
                            {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}};
  container["securityContext"] = {{"runAsNonRoot", true},
                                  {"runAsUser", 65532},
                                  {"runAsGroup", 65532},
                                  {"readOnlyRootFilesystem", true},
                                  {"allowPrivilegeEscalation", false},
                                  {"privileged", false},
                                  {"capabilities", {{"drop", stringArray({"ALL"})}}},
                                  {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  container["volumeMounts"] =
      Json::array({Json{{"name", "config"}, {"mountPath", std::string(kConfigDir)}, {"readOnly", true}},
                   Json{{"name", "tmp"}, {"mountPath", "/tmp"}},
                   Json{{"name", "webhook-cert"}, {"mountPath", certDir}, {"readOnly", true}}});

  Json templateLabels = podSelector();
  templateLabels["app.kubernetes.io/part-of"] = std::string(kName);
  Json podSpec = {
      {"serviceAccountName", std::string(kName)},
      {"terminationGracePeriodSeconds", 30},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", 65532},
        {"runAsGroup", 65532},
        {"fsGroup", 65532},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"affinity",
       {{"podAntiAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           Json::array({Json{{"weight", 100},
                             {"podAffinityTerm",
                              {{"topologyKey", "kubernetes.io/hostname"},
                               {"labelSelector", {{"matchLabels", podSelector()}}}}}}})}}}}},
      {"containers", Json::array({container})},
      // No subPath: ConfigMap and Secret volumes then update in place, which the adapter
      // watches for configuration reloads and certificate rotation.
      {"volumes", Json::array({Json{{"name", "config"}, {"configMap", {{"name", std::string(kConfigMapName)}}}},
                               Json{{"name", "webhook-cert"},
                                    {"secret", {{"secretName", std::string(kCertSecret)}, {"defaultMode", 0440}}}},
                               Json{{"name", "tmp"}, {"emptyDir", {{"sizeLimit", "64Mi"}}}}})},
  };
  Json d = object("apps/v1", "Deployment", metadata(kName, kNamespace, {{std::string(kComponentLabel), "adapter"}}));
  d["spec"] = {
      {"replicas", 2},
      {"revisionHistoryLimit", 5},
      {"selector", {{"matchLabels", podSelector()}}},
      {"strategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 0}, {"maxSurge", 1}}}}},
      {"template",
       {{"metadata",
         {{"labels", templateLabels}, {"annotations", {{"kubectl.kubernetes.io/default-container", "adapter"}}}}},
        {"spec", podSpec}}}};
  return d;
}

Json service(std::string_view name, const std::string& portName, int port, const std::string& target) {
  Json s = object("v1", "Service", metadata(name, kNamespace, {{std::string(kComponentLabel), "adapter"}}));
  s["spec"] = {
      {"type", "ClusterIP"},
      {"selector", podSelector()},
      {"ports", Json::array({Json{{"name", portName}, {"port", port}, {"targetPort", target}, {"protocol", "TCP"}}})}};
  return s;
}

// ---------------------------------------------------------------- webhooks

// The label selectors that let a job webhook see only what Kueue manages: kube-apiserver calls a
// webhook on UPDATE when the old or the new object matches, so removing a label is still seen.
Json labelExists(std::string_view key) { return {{"key", std::string(key)}, {"operator", "Exists"}}; }
Json labelMissing(std::string_view key) { return {{"key", std::string(key)}, {"operator", "DoesNotExist"}}; }
Json queuedJobs() { return {{"matchExpressions", Json::array({labelExists(api::kQueueNameLabel)})}}; }
Json prebuiltOnlyJobs() {
  return {{"matchExpressions",
           Json::array({labelExists(api::kPrebuiltWorkloadNameKey), labelMissing(api::kQueueNameLabel)})}};
}
Json unlabelledJobs() {
  return {{"matchExpressions",
           Json::array({labelMissing(api::kQueueNameLabel), labelMissing(api::kPrebuiltWorkloadNameKey)})}};
}

// What every webhook of ours shares: it fails closed, has no side effects, and sees a kind in
// whatever version it is written.
void common(Json& hook, int timeoutSeconds) {
  hook["failurePolicy"] = "Fail";
  hook["sideEffects"] = "None";
  hook["timeoutSeconds"] = timeoutSeconds;
  hook["matchPolicy"] = "Equivalent";
}

// The children rules' kinds, each once: two versions of one integrated kind name the same.
std::vector<const config::ChildRule*> childRules(const config::Configuration& cfg) {
  std::vector<const config::ChildRule*> out;
  for (const auto& f : cfg.integrations.frameworks)
    if (f.children && std::none_of(out.begin(), out.end(), [&](const auto* r) { return r->gvk == f.children->gvk; }))
      out.push_back(&*f.children);
  return out;
}

// /mutate-children, one webhook per child kind, in the job webhooks' namespaces: only a child
// that carries the pod set label, which a job Kueue started passes on to it, and the placement
// annotation (childMatchConditions) reaches the adapter. failurePolicy Fail, as for every
// webhook, and here for a reason of its own: a child created without its flavor's node selector
// and tolerations would run its pods on nodes the admission did not grant, and the job's
// controller (Tekton's PipelineRun reconciler) creates a refused child again.
std::vector<Json> childHooks(const config::Configuration& cfg, const Json& namespaces) {
  std::vector<Json> out;
  for (const auto* rule : childRules(cfg)) {
    Json hook = {{"name", "mutate-children-" + rule->resource + ".multikueue-adapter.dev"},
                 {"admissionReviewVersions", stringArray({"v1"})},
                 {"clientConfig", webhookClientConfig("/mutate-children")},
                 {"rules", Json::array({Json{{"apiGroups", stringArray({rule->gvk.group})},
                                             {"apiVersions", stringArray({rule->gvk.version})},
                                             {"resources", stringArray({rule->resource})},
                                             {"operations", stringArray({"CREATE"})},
                                             {"scope", "Namespaced"}}})}};
    common(hook, kWebhookTimeoutSeconds);
    hook["reinvocationPolicy"] = "Never";
    hook["namespaceSelector"] = namespaces;
    hook["objectSelector"] = {{"matchExpressions", Json::array({labelExists(api::kPodSetLabel)})}};
    hook["matchConditions"] = childMatchConditions();
    out.push_back(std::move(hook));
  }
  return out;
}

// What the configuration's comment says of childHooks, "" without children rules.
std::string childHooksComment(const config::Configuration& cfg) {
  std::vector<std::string> kinds;
  for (const auto* rule : childRules(cfg)) kinds.push_back(rule->gvk.kind + "s");
  if (kinds.empty()) return "";
  return "\n/mutate-children on CREATE of " + strings::join(kinds, ", ") + " that carry " +
         std::string(api::kPodSetLabel) + " and " + std::string(config::kChildPlacementAnnotation) +
         " (a started job passes them on): the node selector and tolerations of their job's admission, "
         "which the job itself cannot take. failurePolicy Fail: one created without them would run its pods on "
         "nodes the admission did not grant, and the job's controller creates a refused one again.";
}

std::vector<Manifest> webhooks(const config::Configuration& cfg, const ManifestOptions& options) {
  const auto kinds = configuredKinds(cfg);
  std::vector<api::GroupVersionKind> integrated;
  for (const auto& f : cfg.integrations.frameworks)
    if (std::find(integrated.begin(), integrated.end(), f.gvk) == integrated.end()) integrated.push_back(f.gvk);
  const auto jobNamespaces = namespaceSelectorExcluding(excludedNamespaces(cfg));
  const auto configuration = [&](std::string_view kind) {
    auto meta = metadata(kName);
    if (options.certManager)
      meta["annotations"] = {
          {std::string(kInjectCaAnnotation), std::string(kNamespace) + "/" + std::string(kCertificate)}};
    return object(kWebhookApiVersion, kind, std::move(meta));
  };
  const auto jobHook = [&](const std::string& name, std::string_view path,
                           const std::vector<api::GroupVersionKind>& hookKinds,
                           const std::vector<std::string>& operations, bool mutating, Json namespaces, Json selector) {
    Json hook = {{"name", name + ".multikueue-adapter.dev"},
                 {"admissionReviewVersions", stringArray({"v1"})},
                 {"clientConfig", webhookClientConfig(path)},
                 {"rules", jobRules(cfg, hookKinds, operations)}};
    common(hook, kWebhookTimeoutSeconds);
    if (mutating) hook["reinvocationPolicy"] = "Never";
    hook["namespaceSelector"] = std::move(namespaces);
    hook["objectSelector"] = std::move(selector);
    return hook;
  };
  // One webhook per label selector: an objectSelector's expressions all have to hold, so "the
  // queue-name or the prebuilt-workload label" takes two.
  const auto jobHooks = [&](const std::string& prefix, std::string_view path,
                            const std::vector<std::string>& operations, bool mutating) {
    return Json::array(
        {jobHook(prefix, path, kinds, operations, mutating, jobNamespaces, queuedJobs()),
         jobHook(prefix + "-prebuilt", path, kinds, operations, mutating, jobNamespaces, prebuiltOnlyJobs())});
  };
  std::vector<Manifest> out;
  if (!kinds.empty()) {
    Json m = configuration("MutatingWebhookConfiguration");
    m["webhooks"] = jobHooks("mutate", "/mutate", {"CREATE"}, true);
    if (!integrated.empty()) {
      // Integrated jobs without a Kueue label, in the namespaces that opt in: queued in their
      // "default" LocalQueue.
      Json namespaces = jobNamespaces;
      namespaces["matchExpressions"].push_back(
          {{"key", std::string(kDefaultQueueNamespaceLabel)}, {"operator", "In"}, {"values", stringArray({"true"})}});
      m["webhooks"].push_back(jobHook("mutate-default-queue", "/mutate", integrated, {"CREATE"}, true,
                                      std::move(namespaces), unlabelledJobs()));
    }
    for (auto& hook : childHooks(cfg, jobNamespaces)) m["webhooks"].push_back(std::move(hook));
    out.push_back({std::move(m),
                   "/mutate on CREATE of the configured kinds that carry Kueue's queue-name or prebuilt-workload "
                   "label: the managedBy marker, and suspension of integrated kinds; integrated kinds without "
                   "either label only in namespaces labelled " +
                       std::string(kDefaultQueueNamespaceLabel) +
                       "=true (their \"default\" LocalQueue). Nothing else reaches the adapter, so an outage "
                       "(failurePolicy Fail) refuses only jobs meant for Kueue. The job webhooks skip " +
                       strings::join(excludedNamespaces(cfg), ", ") +
                       ", so that a broken adapter cannot block the control plane, Kueue or its own recovery. "
                       "caBundle is left out: cert-manager's CA injector fills it in (--cert-manager), or patch it "
                       "yourself (manifests/README.md)." +
                       childHooksComment(cfg)});
  }
  Json validating = configuration("ValidatingWebhookConfiguration");
  validating["webhooks"] = Json::array();
  if (!kinds.empty()) {
    validating["webhooks"] = jobHooks("validate", "/validate", {"CREATE", "UPDATE"}, false);
    // An UPDATE is sent only when it changes what /validate checks (webhook_conditions.h): an
    // outage then refuses nothing a running job writes (Argo's whole-object status writes,
    // Tekton's metadata updates).
    for (auto& hook : validating["webhooks"]) hook["matchConditions"] = validateMatchConditions(cfg);
  }
  Json configHook = {{"name", "validate-config.multikueue-adapter.dev"},
                     {"admissionReviewVersions", stringArray({"v1"})},
                     {"clientConfig", webhookClientConfig("/validate-config")},
                     {"rules", Json::array({Json{{"apiGroups", stringArray({""})},
                                                 {"apiVersions", stringArray({"v1"})},
                                                 {"resources", stringArray({"configmaps"})},
                                                 {"operations", stringArray({"CREATE", "UPDATE"})},
                                                 {"scope", "Namespaced"}}})}};
  common(configHook, kWebhookTimeoutSeconds);
  configHook["objectSelector"] = {{"matchLabels", {{std::string(config::kConfigMapLabel), "true"}}}};
  configHook["namespaceSelector"] = namespaceSelectorExcluding({"kube-system"});
  validating["webhooks"].push_back(configHook);
  out.push_back({std::move(validating),
                 "/validate on CREATE and UPDATE of the configured kinds that carry (or carried) Kueue's "
                 "queue-name or prebuilt-workload label (the marker is immutable, Kueue's labels are checked). "
                 "matchConditions (kube-apiserver >= 1.28) send an UPDATE only when it changes what /validate "
                 "checks: the kind's managedBy marker, Kueue's queue-name, prebuilt-workload-name, "
                 "max-exec-time-seconds and priority-class labels, the prebuilt-workload-name annotation. "
                 "Why: under failurePolicy Fail an adapter outage refuses every write sent here, and Argo "
                 "writes a Workflow's status by updating the whole object, Tekton updates a PipelineRun's "
                 "metadata; those writes change none of these fields, so running jobs keep going while the "
                 "adapter is down, and only those changes (and CREATEs) are refused.\n"
                 "/validate-config on ConfigMaps labelled " +
                     std::string(config::kConfigMapLabel) +
                     "=true (only kube-system is skipped: the adapter's own "
                     "ConfigMap lives in " +
                     std::string(kNamespace) + ")."});
  return out;
}

std::vector<Manifest> certManager() {
  const std::string service = std::string(kWebhookService) + "." + std::string(kNamespace) + ".svc";
  Json issuer = object("cert-manager.io/v1", "Issuer", metadata(kIssuer, kNamespace));
  issuer["spec"] = {{"selfSigned", Json::object()}};
  Json cert = object("cert-manager.io/v1", "Certificate", metadata(kCertificate, kNamespace));
  cert["spec"] = {{"secretName", std::string(kCertSecret)},
                  {"issuerRef", {{"kind", "Issuer"}, {"name", std::string(kIssuer)}}},
                  {"commonName", service},
                  {"dnsNames", stringArray({service, service + ".cluster.local"})},
                  {"duration", "2160h"},
                  {"renewBefore", "360h"},
                  {"privateKey", {{"algorithm", "RSA"}, {"size", 2048}, {"rotationPolicy", "Always"}}},
                  {"usages", stringArray({"server auth", "digital signature", "key encipherment"})}};
  return {{std::move(issuer),
           "cert-manager (>= 1.0, already running) signs the serving certificate with a "
           "self-signed Issuer."},
          {std::move(cert), "The serving certificate for the webhook Service, written to the Secret " +
                                std::string(kCertSecret) +
                                " that the pods mount and re-read on rotation (90 days, renewed 15 days before)."}};
}

// ---------------------------------------------------------------- YAML

// `text` as a literal block scalar under a key indented by `indent`, or nullopt when a literal
// block cannot hold it exactly (control characters, carriage returns).
std::optional<std::string> literalBlock(const std::string& text, std::size_t indent) {
  for (const unsigned char c : text)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return std::nullopt;
  if (text.empty()) return std::nullopt;
  std::size_t trailing = 0;
  while (trailing < text.size() && text[text.size() - 1 - trailing] == '\n') ++trailing;
  if (trailing == text.size()) return std::nullopt;
  const std::string chomp = trailing == 0 ? "-" : trailing == 1 ? "" : "+";
  const std::string body = text.substr(0, text.size() - trailing);
  const auto lines = strings::split(body, '\n');
  // A first line that starts with a blank needs the indentation stated.
  const auto first = std::find_if(lines.begin(), lines.end(), [](const auto& l) { return !l.empty(); });
  const bool stateIndent = first != lines.end() && (first->front() == ' ' || first->front() == '\t');
  std::string out = "|" + std::string(stateIndent ? "2" : "") + chomp + "\n";
  const std::string pad(indent + 2, ' ');
  for (const auto& line : lines) out += (line.empty() ? std::string() : pad + std::string(line)) + "\n";
  for (std::size_t i = 1; i < trailing; ++i) out += "\n";
  return out;
}

// An object as YAML, its multi-line strings under data (the ConfigMap's configuration) as
// literal blocks when they read back the same.
std::string documentYaml(const Json& object) {
  const auto* data = object.contains("data") ? &object["data"] : nullptr;
  if (data == nullptr || !data->is_object()) return yaml::toYaml(object);
  Json placeholders = object;
  std::map<std::string, std::string> blocks;  // placeholder -> key
  int n = 0;
  for (auto& [key, value] : placeholders["data"].items()) {
    if (!value.is_string() || value.get_ref<const std::string&>().find('\n') == std::string::npos) continue;
    const std::string placeholder = "mka-literal-block-" + std::to_string(n++);
    blocks[placeholder] = key;
    value = placeholder;
  }
  std::string text = yaml::toYaml(placeholders);
  for (const auto& [placeholder, key] : blocks) {
    const auto at = text.find(placeholder);
    if (at == std::string::npos) return yaml::toYaml(object);
    const auto lineStart = text.rfind('\n', at) + 1;
    const auto indent = text.find_first_not_of(' ', lineStart) - lineStart;
    const auto block = literalBlock((*data)[key].get<std::string>(), indent);
    if (!block) return yaml::toYaml(object);
    const auto lineEnd = text.find('\n', at);
    text.replace(at, lineEnd + 1 - at, *block);
  }
  // What a reader gets must be the object: anything else falls back to quoted strings.
  try {
    const auto back = yaml::parseJson(text, yaml::Limits::forManifests());
    if (back.size() == 1 && back[0] == nlohmann::json::parse(object.dump())) return text;
  } catch (const std::exception&) {
  }
  return yaml::toYaml(object);
}

std::string readText(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot read the file");
  constexpr std::size_t kLimit = 1 << 20;  // a ConfigMap holds at most 1 MiB
  auto text = readAtMost(in, kLimit);
  if (text.size() > kLimit) throw Error(file.string() + ": larger than 1 MiB, more than a ConfigMap can hold");
  return text;
}

}  // namespace

nlohmann::ordered_json commonLabels() {
  return {{"app.kubernetes.io/name", std::string(kName)}, {"app.kubernetes.io/part-of", std::string(kName)}};
}

std::vector<api::GroupVersionKind> configuredKinds(const config::Configuration& cfg) {
  std::vector<api::GroupVersionKind> out;
  const auto add = [&](const api::GroupVersionKind& gvk) {
    if (std::find(out.begin(), out.end(), gvk) == out.end()) out.push_back(gvk);
  };
  for (const auto& f : cfg.multiKueue.externalFrameworks) add(f.gvk);
  for (const auto& f : cfg.integrations.frameworks) add(f.gvk);
  return out;
}

std::vector<Manifest> renderManifests(const config::Configuration& cfg, std::string_view configText,
                                      const ManifestOptions& options) {
  std::vector<Manifest> out;
  Json ns = object("v1", "Namespace", metadata(kNamespace));
  ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "restricted";
  ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce-version"] = "latest";
  out.push_back({std::move(ns), "The adapter's namespace; its pods meet the \"restricted\" Pod Security Standard."});
  out.push_back({object("v1", "ServiceAccount", metadata(kName, kNamespace)), "The identity the RBAC below binds."});
  addRbac(out, cfg, options.role);

  Json configMap =
      object("v1", "ConfigMap", metadata(kConfigMapName, kNamespace, {{std::string(config::kConfigMapLabel), "true"}}));
  configMap["data"] = {{std::string(kConfigKey), std::string(configText)}};
  out.push_back({std::move(configMap), "The configuration file, mounted at " + std::string(kConfigDir) + "/" +
                                           std::string(kConfigKey) +
                                           " and reloaded on change. Its label makes /validate-config check every "
                                           "edit, so a bad configuration is refused at `kubectl apply` time."});
  out.push_back({deployment(cfg, options),
                 "Every replica serves the webhooks; the one holding the Lease runs the " +
                     std::string(options.role == Role::Manager ? "dispatch loop and " : "") +
                     "job integration. A rollout keeps both webhook endpoints: the webhooks fail closed."});
  Json pdb = object("policy/v1", "PodDisruptionBudget", metadata(kName, kNamespace));
  pdb["spec"] = {{"minAvailable", 1}, {"selector", {{"matchLabels", podSelector()}}}};
  out.push_back({std::move(pdb), "Keeps a webhook endpoint through voluntary disruptions."});
  out.push_back({service(kWebhookService, "https-webhook", kWebhookServicePort, "webhook-server"),
                 "The apiserver calls the webhooks through this Service (port 443, TLS, served on " +
                     std::to_string(cfg.webhook.port) + ")."});
  if (const auto metrics = portOf(cfg.metricsBindAddress)) {
    const bool shared = portOf(cfg.healthProbeBindAddress) == metrics;
    Json s = service(kMetricsService, "metrics", *metrics, shared ? "health" : "metrics");
    s["metadata"]["annotations"] = {{"prometheus.io/scrape", "true"},
                                    {"prometheus.io/port", std::to_string(*metrics)},
                                    {"prometheus.io/path", "/metrics"}};
    if (cfg.metricsSecure) s["metadata"]["annotations"]["prometheus.io/scheme"] = "https";
    out.push_back({std::move(s), cfg.metricsSecure ? "Prometheus metrics of every replica, over HTTPS to bearer tokens "
                                                     "allowed to get /metrics (TokenReview, SubjectAccessReview)."
                                                   : "Prometheus metrics (plain HTTP) of every replica."});
    if (cfg.metricsSecure) {
      Json reader = object(kRbacApiVersion, "ClusterRole", metadata(kMetricsReaderRole));
      reader["rules"] =
          Json::array({Json{{"nonResourceURLs", Json::array({"/metrics"})}, {"verbs", Json::array({"get"})}}});
      out.push_back({std::move(reader),
                     "Bind your Prometheus's ServiceAccount to this ClusterRole, so that its scrapes are allowed "
                     "(kubectl create clusterrolebinding ... --clusterrole=" +
                         std::string(kMetricsReaderRole) + " --serviceaccount=NAMESPACE:NAME)."});
    }
  }
  if (options.certManager)
    for (auto& m : certManager()) out.push_back(std::move(m));
  for (auto& m : webhooks(cfg, options)) out.push_back(std::move(m));
  return out;
}

std::string toYamlStream(const std::vector<Manifest>& manifests) {
  std::string out;
  for (const auto& m : manifests) {
    if (!out.empty()) out += "---\n";
    if (!m.comment.empty())
      for (const auto& line : strings::split(m.comment, '\n')) out += "# " + std::string(line) + "\n";
    out += documentYaml(m.object);
  }
  return out;
}

std::optional<config::Configuration> loadConfigurationOrReport(const std::filesystem::path& configFile,
                                                               std::ostream& err) {
  auto result = config::loadConfigurationFile(configFile);
  if (result.ok()) return std::move(*result.config);
  for (const auto& error : result.errors) err << error.toString() << '\n';
  err << configFile.string() << ": " << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors")
      << '\n';
  return std::nullopt;
}

int manifestsCommand(const std::filesystem::path& configFile, const ManifestOptions& options, std::ostream& out,
                     std::ostream& err) {
  const auto loaded = loadConfigurationOrReport(configFile, err);
  if (!loaded) return 1;
  const auto& cfg = *loaded;
  if (const auto problems = config::unresolvedResources(cfg); !problems.empty()) {
    for (const auto& p : problems) err << configFile.string() << ": " << p.toString() << '\n';
    return 1;
  }
  if (options.role == Role::Worker && cfg.dispatch.enabled) {
    err << configFile.string()
        << ": dispatch.enabled: is true, but a worker runs no dispatch loop (--role worker): set dispatch.enabled: "
           "false, as manifests/overlays/worker/config.yaml does, or render with --role manager\n";
    return 1;
  }
  try {
    const auto text = readText(configFile);
    std::string header = "# multikueue-adapter manifests --role " + std::string(toString(options.role)) +
                         (options.certManager ? " --cert-manager" : "") +
                         ": everything the adapter needs on this cluster, rendered from its configuration file.\n" +
                         "# Render again after changing the configuration: multikueue-adapter manifests --config FILE "
                         "| kubectl apply -f -\n";
    out << header << toYamlStream(renderManifests(cfg, text, options));
  } catch (const std::exception& e) {
    err << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace mka::deploy
