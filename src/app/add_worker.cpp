#include "mka/app/add_worker.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include "mka/api/kinds.h"
#include "mka/api/kueue.h"
#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/config/loader.h"
#include "mka/deploy/manifests.h"
#include "mka/deploy/worker_access.h"
#include "mka/kube/api_error.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/rest_client.h"
#include "mka/yaml/json.h"

namespace mka::app {
// Named rather than anonymous: the app module is built as one unity file.
namespace onboarding {

using Json = nlohmann::ordered_json;
using nlohmann::json;

constexpr std::string_view kAccessName = "multikueue-adapter-dispatcher";
constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
constexpr std::string_view kManagedBy = "multikueue-adapter";
constexpr std::string_view kFieldManager = "multikueue-adapter-add-worker";
constexpr std::string_view kTokenSecretType = "kubernetes.io/service-account-token";
constexpr std::string_view kServiceAccountAnnotation = "kubernetes.io/service-account.name";
constexpr std::string_view kKubeconfigKey = "kubeconfig";
constexpr std::size_t kMaxConfigClusters = 20;  // MultiKueueConfig spec.clusters maxItems

// One object as messages name it and as its API is addressed.
struct Ref {
  api::GroupVersionKind gvk;
  std::string resource;  // plural, for RBAC in messages
  std::string namespace_;
  std::string name;
  std::string describe() const { return gvk.kind + " " + (namespace_.empty() ? "" : namespace_ + "/") + name; }
};

Ref serviceAccountRef(const WorkerAccessNames& n) {
  return {api::kServiceAccountGvk, "serviceaccounts", n.namespace_, n.serviceAccount};
}
Ref clusterRoleRef(const WorkerAccessNames& n) { return {api::kClusterRoleGvk, "clusterroles", "", n.serviceAccount}; }
Ref bindingRef(const WorkerAccessNames& n) {
  return {api::kClusterRoleBindingGvk, "clusterrolebindings", "", n.serviceAccount};
}
Ref tokenSecretRef(const WorkerAccessNames& n) { return {api::kSecretGvk, "secrets", n.namespace_, n.tokenSecret}; }
Ref kubeconfigSecretRef(const std::string& ns, const std::string& name) {
  return {api::kSecretGvk, "secrets", ns, kubeconfigSecretName(name)};
}
Ref clusterRef(const std::string& name) { return {api::kMultiKueueClusterGvk, "multikueueclusters", "", name}; }
Ref configRef(const std::string& name) { return {api::kMultiKueueConfigGvk, "multikueueconfigs", "", name}; }

// One of the two clusters, named in every message as "worker (context w1, https://...)".
struct Side {
  std::string role;
  kube::RestConfig config;
  std::unique_ptr<kube::Client> client;

  std::string describe() const {
    const std::string where = config.context.empty() ? "in-cluster service account" : "context " + config.context;
    return role + " (" + where + ", " + config.host + ")";
  }
};

Side connect(const std::string& role, const kube::LoadingRules& rules) {
  Side side{role, {}, nullptr};
  try {
    side.config = kube::loadRestConfig(rules);
    kube::ClientOptions options;
    options.userAgent = "multikueue-adapter add-worker";
    side.client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(side.config, options));
  } catch (const std::exception& e) {
    throw Error(role + ": cannot use its kubeconfig: " + e.what());
  }
  return side;
}

std::string serverMessage(const kube::ApiError& e) {
  const auto& status = e.status();
  if (status.is_object() && status.contains("message") && status["message"].is_string())
    return status["message"].get<std::string>();
  return e.what();
}

// "<cluster>: cannot <verb> <object>: <server's message>: <what to do>".
std::string failure(const Side& side, std::string_view verb, const Ref& ref, const kube::ApiError& e) {
  const std::string what =
      side.describe() + ": cannot " + std::string(verb) + " " + ref.describe() + ": " + serverMessage(e) + ": ";
  const std::string resource = ref.resource + (ref.gvk.group.empty() ? "" : "." + ref.gvk.group);
  switch (e.reason()) {
    case kube::Reason::Forbidden: {
      std::string fix = "the kubeconfig's user lacks the RBAC permission \"" + std::string(verb) + "\" on " + resource +
                        (ref.namespace_.empty() ? " (cluster-wide)" : " in namespace " + ref.namespace_) +
                        ": use a kubeconfig that has it (cluster-admin does) or ask an administrator to grant it";
      if (ref.gvk.kind == "ClusterRole" && verb != "get" && verb != "delete")
        fix += "; writing a ClusterRole also needs every permission it grants (or the \"escalate\" verb)";
      if (ref.gvk.kind == "ClusterRoleBinding" && verb != "get" && verb != "delete")
        fix += "; binding a ClusterRole also needs its permissions (or the \"bind\" verb)";
      return what + fix;
    }
    case kube::Reason::Unauthorized:
      return what + "the credentials of that kubeconfig were refused (an expired token or certificate?): refresh them" +
             (side.config.context.empty()
                  ? ""
                  : " and check with `kubectl --context " + side.config.context + " get namespaces`");
    case kube::Reason::NotFound:
      if (kube::isKindNotServed(e))
        return what + "the " + side.role + " does not serve " + ref.gvk.kind + " (" + ref.gvk.apiVersion() +
               "): install " + (ref.gvk.group == api::kWorkloadGvk.group ? "Kueue" : "its CRD") + " there first";
      if (verb == "create" && !ref.namespace_.empty())
        return what + "namespace " + ref.namespace_ + " probably does not exist on the " + side.role +
               ": install Kueue there (it creates it), or create the namespace, or set `namespace` in the "
               "configuration (--config)";
      return what + "it disappeared meanwhile: run the command again";
    case kube::Reason::Conflict:
    case kube::Reason::AlreadyExists: return what + "it changed while the command ran: run the command again";
    case kube::Reason::Unavailable:
    case kube::Reason::Timeout:
    case kube::Reason::TooManyRequests:
      return what + "check that the API server at " + side.config.host +
             " is up and reachable from here, then run the command again";
    case kube::Reason::Invalid:
      return what + "the API server refused the object as written: fix what its message names, then run again";
    default: return what + "run the command again; if it persists, look at the API server's logs";
  }
}

// Runs one API call; an ApiError becomes an Error that says where, what and what to do.
template <typename F>
auto call(const Side& side, std::string_view verb, const Ref& ref, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const kube::ApiError& e) {
    throw Error(failure(side, verb, ref, e));
  }
}

std::optional<json> getIfPresent(const Side& side, const Ref& ref) {
  return call(side, "get", ref, [&]() -> std::optional<json> {
    try {
      return side.client->get(ref.gvk, ref.namespace_, ref.name);
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound && !kube::isKindNotServed(e)) return std::nullopt;
      throw;
    }
  });
}

json plain(const Json& object) { return json::parse(object.dump()); }

Json labels() { return {{std::string(kManagedByLabel), std::string(kManagedBy)}}; }

Json objectOf(std::string_view apiVersion, std::string_view kind, const std::string& name, const std::string& ns = "") {
  Json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  meta["labels"] = labels();
  return {{"apiVersion", std::string(apiVersion)}, {"kind", std::string(kind)}, {"metadata", std::move(meta)}};
}

// What the commands print: one line per object, and whether anything changed.
class Report {
 public:
  explicit Report(std::ostream& out) : out_(out) {}
  void changed(const Side& side, const Ref& ref, const std::string& what) {
    ++changes_;
    out_ << side.role << ": " << ref.describe() << " " << what << '\n';
  }
  void unchanged(const Side& side, const Ref& ref, const std::string& what) {
    out_ << side.role << ": " << ref.describe() << " " << what << '\n';
  }
  void note(const std::string& line) { out_ << line << '\n'; }
  int changes() const { return changes_; }

 private:
  std::ostream& out_;
  int changes_ = 0;
};

// Creates `desired` when absent; otherwise `reconcile` returns what to write instead of the
// current object (and says why), or nullopt when it is as wanted.
using Update = std::optional<std::pair<json, std::string>>;  // the object to write, and why
using Reconcile = std::function<Update(const json& current)>;
void ensure(const Side& side, Report& report, const Ref& ref, const json& desired, const Reconcile& reconcile) {
  const auto current = getIfPresent(side, ref);
  if (!current) {
    call(side, "create", ref, [&] {
      return side.client->create(
          desired, {.fieldManager = std::string(kFieldManager), .answer = kube::WriteOptions::Answer::None});
    });
    report.changed(side, ref, "created");
    return;
  }
  const auto update = reconcile(*current);
  if (!update) {
    report.unchanged(side, ref, "exists as wanted");
    return;
  }
  call(side, "update", ref, [&] {
    return side.client->update(
        update->first, {.fieldManager = std::string(kFieldManager), .answer = kube::WriteOptions::Answer::None});
  });
  report.changed(side, ref, "updated: " + update->second);
}

void removeIfPresent(const Side& side, Report& report, const Ref& ref) {
  const bool removed = call(side, "delete", ref, [&] {
    try {
      side.client->remove(ref.gvk, ref.namespace_, ref.name);
      return true;
    } catch (const kube::ApiError& e) {
      if (e.reason() == kube::Reason::NotFound && !kube::isKindNotServed(e)) return false;
      throw;
    }
  });
  if (removed) {
    report.changed(side, ref, "deleted");
  } else {
    report.unchanged(side, ref, "absent");
  }
}

std::vector<std::string> clustersOf(const json& config) {
  std::vector<std::string> out;
  const auto& spec = json_fields::objectMember(config, "spec");
  for (const auto& c : json_fields::arrayMember(spec, "clusters"))
    if (c.is_string()) out.push_back(c.get<std::string>());
  return out;
}

bool lists(const json& config, const std::string& name) {
  const auto clusters = clustersOf(config);
  return std::find(clusters.begin(), clusters.end(), name) != clusters.end();
}

std::vector<json> listConfigs(const Side& manager) {
  return call(manager, "list", configRef(""),
              [&] { return manager.client->listAll(api::kMultiKueueConfigGvk, "", {.withoutManagedFields = true}); });
}

std::string namesOf(const std::vector<json>& objects) {
  std::vector<std::string> names;
  for (const auto& o : objects) names.push_back(json_fields::metadataString(o, "name"));
  return strings::join(names, ", ");
}

// add-worker's MultiKueueConfig: the one named, else the only one; refused before any write.
json chooseConfig(const Side& manager, const WorkerCommandOptions& o) {
  const auto configs = listConfigs(manager);
  const std::string example =
      "(manifests/samples/kueue/20-multikueue-config.yaml is one, with spec.clusters: [" + o.name + "])";
  if (!o.multiKueueConfig.empty()) {
    for (const auto& c : configs)
      if (json_fields::metadataString(c, "name") == o.multiKueueConfig) return c;
    throw Error(manager.describe() + ": MultiKueueConfig " + o.multiKueueConfig + " not found: " +
                (configs.empty() ? "there is none: create it listing " + o.name + " " + example
                                 : "name one that exists with --multikueue-config: " + namesOf(configs)));
  }
  if (configs.size() == 1) return configs.front();
  if (configs.empty())
    throw Error(manager.describe() +
                ": no MultiKueueConfig exists to add the cluster to: create the one your AdmissionCheck's "
                "spec.parameters names " +
                example + ", then run add-worker again");
  throw Error(manager.describe() + ": " + std::to_string(configs.size()) + " MultiKueueConfigs exist (" +
              namesOf(configs) + "): say which one gets " + o.name + " with --multikueue-config");
}

// Where a MultiKueueCluster reads its kubeconfig: ("Secret", name), ("Path", file), or
// ("", "") for a ClusterProfile.
std::pair<std::string, std::string> sourceOf(const json& cluster) {
  const json* kubeConfig = json_fields::fieldAt(cluster, "spec.clusterSource.kubeConfig");
  if (kubeConfig == nullptr || !kubeConfig->is_object()) return {"", ""};
  return {kubeConfig->value("locationType", "Secret"), kubeConfig->value("location", "")};
}

config::Configuration loadConfiguration(const WorkerCommandOptions& o, std::ostream& err) {
  if (o.configFile.empty()) {
    err << "note: no --config: with the default configuration (namespace kueue-system, origin multikueue) and no "
           "dispatched kinds, the worker's ClusterRole grants Workloads only; pass the adapter's configuration file "
           "to grant its multiKueue.externalFrameworks too\n";
    return config::Configuration{};
  }
  auto loaded = config::loadConfigurationFile(o.configFile);
  if (!loaded.ok()) {
    std::vector<std::string> lines;
    for (const auto& e : loaded.errors) lines.push_back(e.toString());
    throw Error(o.configFile.string() + ": not a valid configuration (validate-config says the same):\n" +
                strings::join(lines, "\n"));
  }
  return *loaded.config;
}

void checkName(const std::string& name) {
  const auto problems = validation::dns1123Subdomain(name);
  if (!problems.empty())
    throw Error("NAME \"" + name + "\": " + strings::join(problems, "; ") +
                ": a MultiKueueCluster's name is a DNS subdomain, e.g. worker1");
  if (kubeconfigSecretName(name).size() > 253)
    throw Error("NAME \"" + name + "\": too long for its Secret " + kubeconfigSecretName(name) +
                " (at most 253 characters): choose a shorter name");
}

kube::LoadingRules managerRules(const WorkerCommandOptions& o) {
  return kube::LoadingRules::fromEnvironment(o.managerKubeconfig);
}

kube::LoadingRules workerRules(const WorkerCommandOptions& o) {
  kube::LoadingRules rules;
  rules.explicitPath = o.workerKubeconfig.string();
  return rules;
}

// The dispatch loop needs Kueue's Workloads on a worker; a dispatched kind whose CRD the worker
// lacks only keeps that kind's jobs away from it, so it is a note, not a refusal. Returns the
// note ("" when the worker serves every kind).
std::string checkKindsServed(const Side& worker, const config::Configuration& cfg) {
  std::vector<api::GroupVersionKind> kinds = {api::kWorkloadGvk};
  for (const auto& f : cfg.multiKueue.externalFrameworks) kinds.push_back(f.gvk);
  std::vector<std::string> missing;
  for (const auto& gvk : kinds) {
    try {
      worker.client->discovery().resourceFor(gvk);
    } catch (const kube::ApiError& e) {
      if (!kube::isKindNotServed(e)) throw Error(failure(worker, "discover", {gvk, "", "", ""}, e));
      if (gvk == api::kWorkloadGvk)
        throw Error(worker.describe() + ": does not serve " + gvk.kind + " (" + gvk.apiVersion() +
                    "): the dispatch loop needs Kueue's Workloads there: install Kueue on the worker first");
      missing.push_back(gvk.dotted());
    }
  }
  if (missing.empty()) return "";
  return "note: " + worker.describe() + " does not serve " + strings::join(missing, ", ") +
         ": their jobs go to other workers until their CRDs are installed there";
}

// The worker's token Secret once its token controller filled it.
json awaitToken(const Side& worker, const Ref& ref, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds{50};
  for (;;) {
    const auto secret = getIfPresent(worker, ref);
    if (!secret)
      throw Error(worker.describe() + ": " + ref.describe() +
                  " was deleted while waiting for its token: the token controller deletes a token Secret whose "
                  "ServiceAccount is missing or was replaced: run add-worker again");
    const auto& data = json_fields::objectMember(*secret, "data");
    if (!data.value("token", "").empty() && !data.value("ca.crt", "").empty()) return *secret;
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error(worker.describe() + ": " + ref.describe() + " still has no token after " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                  " s: the worker's token controller (kube-controller-manager, with --service-account-private-key-file "
                  "and --root-ca-file) did not fill it; look at `kubectl -n " +
                  ref.namespace_ + " describe secret " + ref.name + "` and kube-controller-manager's logs, then run " +
                  "add-worker again");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds{1000});
  }
}

std::string decoded(const json& secret, const char* key) {
  const auto& data = json_fields::objectMember(secret, "data");
  const auto value = data.find(key);
  if (value == data.end() || !value->is_string()) return "";
  return base64Decode(value->get<std::string>()).value_or("");
}

// The worker's ClusterRole names each dispatched kind by its resource (plural): the worker's
// discovery says it for a kind it serves (a `resource:` written otherwise is refused), the
// configuration or the guess from the kind for one it lacks (refused when the guess is doubtful
// and none is written: config::unresolvedResources).
void resolveResources(const Side& worker, const WorkerCommandOptions& o, config::Configuration& cfg) {
  for (std::size_t i = 0; i < cfg.multiKueue.externalFrameworks.size(); ++i) {
    auto& f = cfg.multiKueue.externalFrameworks[i];
    try {
      const auto served = worker.client->discovery().resourceFor(f.gvk);
      if (!f.resource.empty() && f.resource != served.plural)
        throw Error(worker.describe() + ": serves " + f.gvk.kind + " (" + f.gvk.apiVersion() + ") as resource " +
                    served.plural + ", but " + o.configFile.string() + " says multiKueue.externalFrameworks[" +
                    std::to_string(i) + "].resource: " + f.resource + ": write resource: " + served.plural);
      f.resource = served.plural;
    } catch (const kube::ApiError& e) {
      if (!kube::isKindNotServed(e)) throw Error(failure(worker, "discover", {f.gvk, "", "", ""}, e));
    }
  }
  const auto problems = config::unresolvedResources(cfg);
  if (problems.empty()) return;
  std::vector<std::string> lines;
  for (const auto& p : problems) lines.push_back(p.toString());
  throw Error(o.configFile.string() + ": the worker's ClusterRole cannot name every dispatched kind:\n" +
              strings::join(lines, "\n"));
}

// The built kubeconfig passes the dispatcher's own security rules, and works: it lists
// Workloads and every dispatched kind the worker serves, as the dispatch loop's informers will
// (a kind it lacks was noted by checkKindsServed).
void checkKubeconfig(const Side& worker, const std::string& kubeconfig, const std::string& name,
                     const config::Configuration& cfg, std::chrono::milliseconds timeout) {
  if (const auto problem = kube::validateKubeconfigSecurity(kubeconfig))
    throw Error(worker.describe() + ": the kubeconfig built for MultiKueueCluster " + name +
                " fails the dispatcher's security checks (it would be InsecureKubeConfig): " + *problem +
                ": use a worker kubeconfig whose current context names an https server by IP address or DNS name "
                "(the built kubeconfig copies it)");
  Side probe{"worker", kube::restConfigFor(kube::Kubeconfig::parse(kubeconfig, "the kubeconfig of " + name)), nullptr};
  probe.role = "worker, as the new ServiceAccount";
  probe.client = std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(probe.config));
  std::vector<api::GroupVersionKind> kinds = {api::kWorkloadGvk};
  for (const auto& f : cfg.multiKueue.externalFrameworks) kinds.push_back(f.gvk);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& gvk : kinds) {
    const Ref ref{gvk, cfg.resourceOf(gvk), "", "(all namespaces)"};
    for (;;) {
      try {
        probe.client->list(gvk, "", {.limit = 1});
        break;
      } catch (const kube::ApiError& e) {
        if (gvk != api::kWorkloadGvk && kube::isKindNotServed(e)) break;
        // A new token or binding can take a moment to be honoured everywhere.
        const bool settling = e.reason() == kube::Reason::Unauthorized || e.reason() == kube::Reason::Forbidden;
        if (!settling || std::chrono::steady_clock::now() >= deadline) throw Error(failure(probe, "list", ref, e));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
  }
}

std::string rulesComment(const config::Configuration& cfg) {
  std::string text =
      "What the manager's dispatch loop calls on this worker (include/mka/deploy/worker_access.h), and why:";
  for (const auto& row : deploy::workerAccessTable()) {
    std::vector<std::string> resources;
    for (const auto& g : deploy::workerGrants(cfg))
      if (g.access == &row && std::find(resources.begin(), resources.end(), g.resource) == resources.end())
        resources.push_back(g.resource);
    if (resources.empty()) continue;
    std::vector<std::string> verbs(row.verbs.begin(), row.verbs.end());
    text += "\n- " + strings::join(resources, " ") + " (" + strings::join(verbs, ",") + "): " + std::string(row.reason);
  }
  return text;
}

Json kubeconfigSecret(const std::string& ns, const std::string& name, const std::string& kubeconfig) {
  Json secret = objectOf("v1", "Secret", kubeconfigSecretName(name), ns);
  secret["type"] = "Opaque";
  secret["data"] = {{std::string(kKubeconfigKey), base64Encode(kubeconfig)}};
  return secret;
}

Json multiKueueCluster(const std::string& ns, const std::string& name) {
  (void)ns;  // Kueue reads the Secret from its own namespace, the configuration's
  Json cluster = objectOf(api::kMultiKueueClusterGvk.apiVersion(), "MultiKueueCluster", name);
  cluster["spec"] = {
      {"clusterSource", {{"kubeConfig", {{"locationType", "Secret"}, {"location", kubeconfigSecretName(name)}}}}}};
  return cluster;
}

// The CA the built kubeconfig trusts: the worker kubeconfig's own (it verifies the server at
// that address), else the cluster CA the token controller put in the Secret.
std::string caFor(const Side& worker, const json* tokenSecret) {
  if (!worker.config.caPem.empty()) return worker.config.caPem;
  return tokenSecret != nullptr ? decoded(*tokenSecret, "ca.crt") : "";
}

// Reads that may refuse add-worker, before it writes anything: the MultiKueueConfig, a
// MultiKueueCluster of that name made for another kubeconfig, the kinds the worker serves.
struct AddPlan {
  json config;
  bool listed = false;
  std::string note;  // a dispatched kind the worker lacks
};
AddPlan planAdd(const Side& manager, const Side& worker, const WorkerCommandOptions& o,
                const config::Configuration& cfg) {
  AddPlan plan;
  plan.config = chooseConfig(manager, o);
  plan.listed = lists(plan.config, o.name);
  const auto configName = json_fields::metadataString(plan.config, "name");
  if (!plan.listed && clustersOf(plan.config).size() >= kMaxConfigClusters)
    throw Error(manager.describe() + ": MultiKueueConfig " + configName + " lists " +
                std::to_string(kMaxConfigClusters) + " clusters already, Kueue's limit: remove one (remove-worker) " +
                "or add " + o.name + " to another MultiKueueConfig with --multikueue-config");
  if (const auto existing = getIfPresent(manager, clusterRef(o.name))) {
    const auto [type, location] = sourceOf(*existing);
    if (type != "Secret" || location != kubeconfigSecretName(o.name))
      throw Error(manager.describe() + ": MultiKueueCluster " + o.name + " exists and reads its kubeconfig from " +
                  (type.empty() ? std::string("a ClusterProfile") : type + " " + location) + ", not from Secret " +
                  cfg.namespace_ + "/" + kubeconfigSecretName(o.name) + ": remove it first (remove-worker " + o.name +
                  ", or kubectl delete multikueuecluster " + o.name + "), or choose another NAME");
  }
  plan.note = checkKindsServed(worker, cfg);
  return plan;
}

int dryRun(const Side& manager, const Side& worker, const WorkerCommandOptions& o, const config::Configuration& cfg,
           const AddPlan& plan, std::ostream& out) {
  const auto names = workerAccessNames(cfg);
  std::vector<deploy::Manifest> docs;
  const auto objects = workerAccessObjects(cfg);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    std::string comment;
    if (i == 0)
      comment = "On the worker, " + worker.describe() + ":";
    else if (objects[i].value("kind", "") == "ClusterRole")
      comment = rulesComment(cfg);
    else if (objects[i].value("kind", "") == "Secret")
      comment = "Filled by the worker's token controller: data.token, data[\"ca.crt\"], data.namespace.";
    docs.push_back({objects[i], comment});
  }
  const auto ca = caFor(worker, nullptr);
  const std::string placeholder =
      "<the token the worker's token controller puts in Secret " + names.namespace_ + "/" + names.tokenSecret + ">";
  const auto kubeconfig = renderKubeconfig(
      {o.name, worker.config.host, ca, worker.config.tlsServerName, names.serviceAccount, placeholder});
  Json secret = objectOf("v1", "Secret", kubeconfigSecretName(o.name), cfg.namespace_);
  secret["type"] = "Opaque";
  secret["stringData"] = {{std::string(kKubeconfigKey), kubeconfig}};
  docs.push_back({secret, "On the manager, " + manager.describe() + ":\nThe kubeconfig of MultiKueueCluster " + o.name +
                              " (written as data.kubeconfig" +
                              (ca.empty() ? "; certificate-authority-data: the Secret's ca.crt" : "") + ")."});
  docs.push_back({multiKueueCluster(cfg.namespace_, o.name), ""});
  const auto configName = json_fields::metadataString(plan.config, "name");
  Json config = {{"apiVersion", api::kMultiKueueConfigGvk.apiVersion()},
                 {"kind", "MultiKueueConfig"},
                 {"metadata", {{"name", configName}}},
                 {"spec", {{"clusters", clustersOf(plan.config)}}}};
  if (!plan.listed) config["spec"]["clusters"].push_back(o.name);
  docs.push_back(
      {config, plan.listed ? "Lists " + o.name + " already." : o.name + " added last (the least preferred)."});
  out << "# multikueue-adapter add-worker " << o.name << " --dry-run: nothing was written.\n"
      << deploy::toYamlStream(docs);
  return 0;
}

int addWorker(const WorkerCommandOptions& o, std::ostream& out, std::ostream& err) {
  checkName(o.name);
  auto cfg = loadConfiguration(o, err);
  const auto manager = connect("manager", managerRules(o));
  const auto worker = connect("worker", workerRules(o));
  resolveResources(worker, o, cfg);
  const auto plan = planAdd(manager, worker, o, cfg);
  if (!plan.note.empty()) err << plan.note << "\n";
  if (o.dryRun) {
    // The kubeconfig's address and CA are the worker kubeconfig's: check them now.
    if (!worker.config.caPem.empty()) {
      const auto trial = renderKubeconfig(
          {o.name, worker.config.host, worker.config.caPem, worker.config.tlsServerName, "check", "check"});
      if (const auto problem = kube::validateKubeconfigSecurity(trial))
        throw Error(
            worker.describe() + ": a kubeconfig for it would fail the dispatcher's security checks: " + *problem +
            ": use a worker kubeconfig whose current context names an https server by IP " + "address or DNS name");
    }
    return dryRun(manager, worker, o, cfg, plan, out);
  }

  Report report(out);
  report.note(worker.describe());
  report.note(manager.describe());
  const auto names = workerAccessNames(cfg);
  const auto objects = workerAccessObjects(cfg);
  const auto sa = plain(objects[0]);
  const auto role = plain(objects[1]);
  const auto binding = plain(objects[2]);
  const auto token = plain(objects[3]);

  ensure(worker, report, serviceAccountRef(names), sa, [](const json&) { return Update(); });
  ensure(worker, report, clusterRoleRef(names), role, [&](const json& current) {
    if (current.value("rules", json::array()) == role["rules"]) return Update();
    json updated = current;
    updated["rules"] = role["rules"];
    return Update(std::in_place, std::move(updated), "its rules now grant what the configuration's kinds need");
  });
  // A binding's roleRef cannot change: one that names another role is replaced.
  if (const auto current = getIfPresent(worker, bindingRef(names));
      current && current->value("roleRef", json::object()) != binding["roleRef"]) {
    removeIfPresent(worker, report, bindingRef(names));
  }
  ensure(worker, report, bindingRef(names), binding, [&](const json& current) {
    if (current.value("subjects", json::array()) == binding["subjects"]) return Update();
    json updated = current;
    updated["subjects"] = binding["subjects"];
    return Update(std::in_place, std::move(updated), "it binds the ServiceAccount " + names.serviceAccount + " only");
  });
  ensure(worker, report, tokenSecretRef(names), token, [&](const json& current) {
    if (current.value("type", "") != kTokenSecretType ||
        json_fields::objectMember(json_fields::objectMember(current, "metadata"), "annotations")
                .value(std::string(kServiceAccountAnnotation), "") != names.serviceAccount)
      throw Error(worker.describe() + ": " + tokenSecretRef(names).describe() +
                  " exists but is not the token Secret of ServiceAccount " + names.serviceAccount + " (type " +
                  current.value("type", "") + "): delete it (kubectl -n " + names.namespace_ + " delete secret " +
                  names.tokenSecret + ") and run add-worker again");
    return Update();
  });
  const auto filled = awaitToken(worker, tokenSecretRef(names), o.tokenTimeout);
  const auto kubeconfig =
      renderKubeconfig({o.name, worker.config.host, caFor(worker, &filled), worker.config.tlsServerName,
                        names.serviceAccount, decoded(filled, "token")});
  checkKubeconfig(worker, kubeconfig, o.name, cfg, o.tokenTimeout);

  const auto secretRef = kubeconfigSecretRef(cfg.namespace_, o.name);
  ensure(manager, report, secretRef, plain(kubeconfigSecret(cfg.namespace_, o.name, kubeconfig)),
         [&](const json& current) {
           if (decoded(current, "kubeconfig") == kubeconfig) return Update();
           json updated = current;
           updated["data"][std::string(kKubeconfigKey)] = base64Encode(kubeconfig);
           return Update(std::in_place, std::move(updated), "its kubeconfig replaced by the new ServiceAccount's");
         });
  ensure(manager, report, clusterRef(o.name), plain(multiKueueCluster(cfg.namespace_, o.name)),
         [](const json&) { return Update(); });  // planAdd refused another source
  const auto configName = json_fields::metadataString(plan.config, "name");
  const auto ref = configRef(configName);
  const bool added = call(manager, "update", ref, [&] {
    return kube::retryOnConflict([&] {
      auto current = manager.client->get(api::kMultiKueueConfigGvk, "", configName);
      if (lists(current, o.name)) return false;
      current["spec"]["clusters"].push_back(o.name);
      manager.client->update(current,
                             {.fieldManager = std::string(kFieldManager), .answer = kube::WriteOptions::Answer::None});
      return true;
    });
  });
  if (added) {
    report.changed(manager, ref, "lists " + o.name + " now (last: the least preferred)");
  } else {
    report.unchanged(manager, ref, "lists " + o.name + " already");
  }

  if (report.changes() == 0) {
    out << o.name << ": nothing changed, it was set up already\n";
  } else {
    out << o.name << ": added; the dispatch loop connects to it through Secret " << cfg.namespace_ << "/"
        << kubeconfigSecretName(o.name) << " (kubectl describe multikueuecluster " << o.name
        << " shows its Active state)\n";
  }
  return 0;
}

int removeWorker(const WorkerCommandOptions& o, std::ostream& out, std::ostream& err) {
  checkName(o.name);
  const auto cfg = loadConfiguration(o, err);
  const auto manager = connect("manager", managerRules(o));
  const auto worker = connect("worker", workerRules(o));
  const auto names = workerAccessNames(cfg);

  // Reads that may refuse, before any write.
  const auto configs = listConfigs(manager);
  std::vector<std::string> edit, others;  // configs to take it out of; configs that keep it
  bool namedFound = o.multiKueueConfig.empty();
  for (const auto& c : configs) {
    const auto configName = json_fields::metadataString(c, "name");
    if (configName == o.multiKueueConfig) namedFound = true;
    if (!lists(c, o.name)) continue;
    if (!o.multiKueueConfig.empty() && configName != o.multiKueueConfig) {
      others.push_back(configName);
      continue;
    }
    if (clustersOf(c).size() == 1)
      throw Error(manager.describe() + ": MultiKueueConfig " + configName + " lists only " + o.name +
                  ", and Kueue requires at least one cluster: add another worker to it first (add-worker), or " +
                  "delete the MultiKueueConfig if no AdmissionCheck uses it (kubectl delete multikueueconfig " +
                  configName + "), then run remove-worker again");
    edit.push_back(configName);
  }
  if (!namedFound)
    throw Error(manager.describe() + ": MultiKueueConfig " + o.multiKueueConfig + " not found" +
                (configs.empty() ? std::string(": there is none") : ": the ones there are: " + namesOf(configs)));
  const auto cluster = getIfPresent(manager, clusterRef(o.name));
  std::optional<Ref> secret;
  if (cluster) {
    const auto [type, location] = sourceOf(*cluster);
    if (type == "Secret" && !location.empty()) {
      // A Secret another MultiKueueCluster reads too stays.
      const auto all = call(manager, "list", clusterRef(""), [&] {
        return manager.client->listAll(api::kMultiKueueClusterGvk, "", {.withoutManagedFields = true});
      });
      const bool shared = std::any_of(all.begin(), all.end(), [&](const json& other) {
        return json_fields::metadataString(other, "name") != o.name && sourceOf(other) == std::pair{type, location};
      });
      if (!shared) secret = Ref{api::kSecretGvk, "secrets", cfg.namespace_, location};
    }
  } else if (const auto ours = getIfPresent(manager, kubeconfigSecretRef(cfg.namespace_, o.name));
             ours && json_fields::objectMember(json_fields::objectMember(*ours, "metadata"), "labels")
                             .value(std::string(kManagedByLabel), "") == kManagedBy) {
    secret = kubeconfigSecretRef(cfg.namespace_, o.name);
  }

  Report report(out);
  report.note(manager.describe());
  report.note(worker.describe());
  for (const auto& configName : edit) {
    const auto ref = configRef(configName);
    const bool removed = call(manager, "update", ref, [&] {
      return kube::retryOnConflict([&] {
        auto current = manager.client->get(api::kMultiKueueConfigGvk, "", configName);
        auto clusters = clustersOf(current);
        const auto it = std::find(clusters.begin(), clusters.end(), o.name);
        if (it == clusters.end()) return false;
        clusters.erase(it);
        current["spec"]["clusters"] = clusters;
        manager.client->update(
            current, {.fieldManager = std::string(kFieldManager), .answer = kube::WriteOptions::Answer::None});
        return true;
      });
    });
    if (removed) report.changed(manager, ref, "no longer lists " + o.name);
  }
  if (!others.empty()) {
    out << o.name << ": MultiKueueConfig " << strings::join(others, ", ")
        << " still lists it: its MultiKueueCluster, kubeconfig Secret and worker access stay; run remove-worker "
           "without --multikueue-config to remove it everywhere\n";
    return 0;
  }
  removeIfPresent(manager, report, clusterRef(o.name));
  if (secret) removeIfPresent(manager, report, *secret);

  // The dispatch loop cannot clean the worker once its access is gone: say what it leaves.
  try {
    const auto left = worker.client->list(
        api::kWorkloadGvk, "",
        {.labelSelector = std::string(api::kOriginLabel) + "=" + cfg.multiKueue.origin, .limit = 1});
    if (!json_fields::arrayMember(left, "items").empty())
      err << "warning: " << worker.describe() << " still holds Workloads this manager dispatched (label "
          << api::kOriginLabel << "=" << cfg.multiKueue.origin << "); nothing will remove them now: "
          << "kubectl delete workloads -A -l " << api::kOriginLabel << "=" << cfg.multiKueue.origin
          << " (and the job copies with the same label) once they are not needed\n";
  } catch (const kube::ApiError&) {
    // Kueue gone from the worker, or no right to list: nothing to say about its Workloads.
  }
  removeIfPresent(worker, report, bindingRef(names));
  removeIfPresent(worker, report, clusterRoleRef(names));
  removeIfPresent(worker, report, tokenSecretRef(names));
  removeIfPresent(worker, report, serviceAccountRef(names));
  out << o.name << (report.changes() == 0 ? ": nothing to remove, it was gone already\n" : ": removed\n");
  return 0;
}

int guarded(const std::function<int()>& command, std::ostream& err) {
  try {
    return command();
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace onboarding

WorkerAccessNames workerAccessNames(const config::Configuration& configuration) {
  std::string name(onboarding::kAccessName);
  if (configuration.multiKueue.origin != api::kDefaultOrigin) name += "-" + configuration.multiKueue.origin;
  return {configuration.namespace_, name, name + "-token"};
}

std::string kubeconfigSecretName(const std::string& name) { return name + "-secret"; }

std::vector<nlohmann::ordered_json> workerAccessObjects(const config::Configuration& configuration) {
  using onboarding::Json;
  const auto names = workerAccessNames(configuration);
  Json sa = onboarding::objectOf("v1", "ServiceAccount", names.serviceAccount, names.namespace_);
  Json role = onboarding::objectOf(std::string(api::kRbacGroup) + "/v1", "ClusterRole", names.serviceAccount);
  role["rules"] = deploy::workerClusterRoleRules(configuration);
  Json binding = onboarding::objectOf(std::string(api::kRbacGroup) + "/v1", "ClusterRoleBinding", names.serviceAccount);
  binding["roleRef"] = {{"apiGroup", api::kRbacGroup}, {"kind", "ClusterRole"}, {"name", names.serviceAccount}};
  binding["subjects"] =
      Json::array({Json{{"kind", "ServiceAccount"}, {"name", names.serviceAccount}, {"namespace", names.namespace_}}});
  Json token = onboarding::objectOf("v1", "Secret", names.tokenSecret, names.namespace_);
  token["metadata"]["annotations"] = {{std::string(onboarding::kServiceAccountAnnotation), names.serviceAccount}};
  token["type"] = std::string(onboarding::kTokenSecretType);
  return {sa, role, binding, token};
}

std::string renderKubeconfig(const WorkerKubeconfig& k) {
  using onboarding::Json;
  Json cluster = {{"server", k.server}};
  if (!k.caPem.empty()) cluster["certificate-authority-data"] = base64Encode(k.caPem);
  if (!k.tlsServerName.empty()) cluster["tls-server-name"] = k.tlsServerName;
  const Json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"clusters", Json::array({Json{{"name", k.clusterName}, {"cluster", cluster}}})},
      {"users", Json::array({Json{{"name", k.user}, {"user", {{"token", k.token}}}}})},
      {"contexts",
       Json::array({Json{{"name", k.clusterName}, {"context", {{"cluster", k.clusterName}, {"user", k.user}}}}})},
      {"current-context", k.clusterName},
  };
  return yaml::toYaml(config);
}

int addWorkerCommand(const WorkerCommandOptions& options, std::ostream& out, std::ostream& err) {
  return onboarding::guarded([&] { return onboarding::addWorker(options, out, err); }, err);
}

int removeWorkerCommand(const WorkerCommandOptions& options, std::ostream& out, std::ostream& err) {
  return onboarding::guarded([&] { return onboarding::removeWorker(options, out, err); }, err);
}

}  // namespace mka::app
