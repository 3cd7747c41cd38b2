#include <string>
#include <vector>

#include "formats.h"
#include "mka/common/strings.h"

namespace mka::config::detail {
namespace {

const std::vector<std::string> kPolicies = {"MultiKueueQueues", "QueueLabeled", "Never"};

void readPolicy(MapReader& root, ManagedByDefaulting& out) {
  const auto* node = root.get("managedByDefaulting");
  if (!node) return;
  std::string text;
  root.read("managedByDefaulting", text);  // reports a value that is not a string
  if (!node->isScalar()) return;
  if (auto policy = parseManagedByDefaulting(text)) {
    out = *policy;
    return;
  }
  auto suggestion = strings::didYouMean(text, kPolicies);
  root.reader().error(root.pathOf("managedByDefaulting"),
                      "must be MultiKueueQueues, QueueLabeled or Never, not \"" + text + "\"",
                      suggestion ? "did you mean \"" + *suggestion + "\"?"
                                 : "use MultiKueueQueues (jobs in queues dispatched by MultiKueue), QueueLabeled "
                                   "(every job with a queue label) or Never (no defaulting)");
}

}  // namespace

void readAdapterConfiguration(YamlReader& reader, const yaml::Node& root, Configuration& out) {
  out.source = Configuration::Source::AdapterConfiguration;
  MapReader top(reader, &root, "");
  top.checkKeys({"apiVersion", "kind", "namespace", "webhook", "healthProbeBindAddress", "metricsBindAddress",
                 "metricsSecure", "metricsCertDir", "leaderElection", "clientConnection", "managedByDefaulting",
                 "dispatch", "multiKueue", "integrations", "placement", "waitForPodsReady"},
                UnknownKeys::Reject);
  top.read("namespace", out.namespace_);

  auto webhook = top.child("webhook", "webhook: {port: 9443, certDir: /tmp/k8s-webhook-server/serving-certs}");
  webhook.checkKeys({"host", "port", "certDir", "certName", "keyName"}, UnknownKeys::Reject);
  webhook.read("host", out.webhook.host);
  webhook.read("port", out.webhook.port);
  webhook.read("certDir", out.webhook.certDir);
  webhook.read("certName", out.webhook.certName);
  webhook.read("keyName", out.webhook.keyName);

  top.read("healthProbeBindAddress", out.healthProbeBindAddress);
  top.read("metricsBindAddress", out.metricsBindAddress);
  top.read("metricsSecure", out.metricsSecure);
  top.read("metricsCertDir", out.metricsCertDir);

  auto election = top.child("leaderElection", "leaderElection: {leaderElect: true, resourceName: multikueue-adapter}");
  election.checkKeys(
      {"leaderElect", "resourceName", "resourceNamespace", "leaseDuration", "renewDeadline", "retryPeriod"},
      UnknownKeys::Reject);
  election.read("leaderElect", out.leaderElection.leaderElect);
  election.read("resourceName", out.leaderElection.resourceName);
  // The Lease lives beside the adapter unless told otherwise.
  out.leaderElection.resourceNamespace = out.namespace_;
  election.read("resourceNamespace", out.leaderElection.resourceNamespace);
  election.read("leaseDuration", out.leaderElection.leaseDuration);
  election.read("renewDeadline", out.leaderElection.renewDeadline);
  election.read("retryPeriod", out.leaderElection.retryPeriod);

  auto client = top.child("clientConnection", "clientConnection: {qps: 50, burst: 100}");
  client.checkKeys({"qps", "burst"}, UnknownKeys::Reject);
  client.read("qps", out.clientConnection.qps);
  client.read("burst", out.clientConnection.burst);

  readPolicy(top, out.managedByDefaulting);

  auto dispatch = top.child(
      "dispatch", "dispatch: {enabled: true, admissionCheckControllerName: multikueue-adapter.dev/dispatcher}");
  dispatch.checkKeys({"enabled", "admissionCheckControllerName", "workloadConcurrency"}, UnknownKeys::Reject);
  dispatch.read("enabled", out.dispatch.enabled);
  dispatch.read("admissionCheckControllerName", out.dispatch.admissionCheckControllerName);
  dispatch.read("workloadConcurrency", out.dispatch.workloadConcurrency);

  readMultiKueue(top.child("multiKueue", "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}]}"),
                 UnknownKeys::Reject, out.multiKueue);
  auto placement = top.child("placement", "placement: {enabled: true}");
  placement.checkKeys({"enabled"}, UnknownKeys::Reject);
  placement.read("enabled", out.placement.enabled);

  // Kueue's key, so one value can be written in both files. Its timeouts and requeuing are
  // Kueue's workload controller's, not the integration's: only whether it is on is read here.
  auto podsReady = top.child("waitForPodsReady", "waitForPodsReady: {enable: true}");
  const std::vector<std::string> kueueOnly = {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"};
  for (const auto& key : kueueOnly) {
    if (podsReady.hasKey(key))
      top.reader().error(podsReady.pathOf(key),
                         "is Kueue's setting: Kueue's workload controller times Workloads out and requeues them, "
                         "not the adapter",
                         "set it in Kueue's Configuration and keep only enable here");
  }
  std::vector<std::string> known = kueueOnly;
  known.push_back("enable");
  podsReady.checkKeys(known, UnknownKeys::Reject);
  bool waitForPodsReady = false;
  podsReady.read("enable", waitForPodsReady);

  readIntegrations(top.child("integrations", "integrations: {frameworks: [{name: Workflow.v1alpha1.argoproj.io}]}"),
                   out.namespace_, waitForPodsReady, out.integrations);
}

}  // namespace mka::config::detail
