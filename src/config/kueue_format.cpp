#include <algorithm>
#include <string>
#include <vector>

#include "formats.h"

namespace mka::config::detail {
namespace {

// Kueue's top-level keys (v1beta1 and v1beta2, ControllerManager inlined). Listing them lets a
// close misspelling ("multikueue", "intgrations") be caught while every real key passes.
const std::vector<std::string> kKueueTopKeys = {"apiVersion",
                                                "kind",
                                                "namespace",
                                                "manageJobsWithoutQueueName",
                                                "managedJobsNamespaceSelector",
                                                "internalCertManagement",
                                                "waitForPodsReady",
                                                "clientConnection",
                                                "integrations",
                                                "multiKueue",
                                                "fairSharing",
                                                "admissionFairSharing",
                                                "resources",
                                                "featureGates",
                                                "objectRetentionPolicies",
                                                "queueVisibility",
                                                "webhook",
                                                "leaderElection",
                                                "metrics",
                                                "health",
                                                "pprofBindAddress",
                                                "controller",
                                                "tls"};

// Keys only our own kind has. Kueue would refuse them, and silently ignoring them would leave
// the user believing they took effect.
const std::vector<std::string> kAdapterOnlyKeys = {"managedByDefaulting", "dispatch", "healthProbeBindAddress",
                                                   "metricsBindAddress"};

}  // namespace

void readKueueConfiguration(YamlReader& reader, const yaml::Node& root, Configuration& out) {
  out.source = Configuration::Source::KueueConfiguration;
  MapReader top(reader, &root, "");
  for (const auto& key : kAdapterOnlyKeys) {
    if (top.hasKey(key))
      reader.error(top.pathOf(key), "is a multikueue-adapter setting, which a Kueue Configuration cannot hold",
                   "remove it, or switch the file to apiVersion: config.multikueue-adapter.dev/v1alpha1 and kind: "
                   "AdapterConfiguration");
  }
  auto known = kKueueTopKeys;
  known.insert(known.end(), kAdapterOnlyKeys.begin(), kAdapterOnlyKeys.end());
  top.checkKeys(known, UnknownKeys::KueueStrict);

  top.read("namespace", out.namespace_);
  out.leaderElection.resourceNamespace = out.namespace_;

  auto client = top.child("clientConnection", "clientConnection: {qps: 50, burst: 100}");
  client.checkKeys({"qps", "burst"}, UnknownKeys::KueueStrict);
  client.read("qps", out.clientConnection.qps);
  client.read("burst", out.clientConnection.burst);

  readMultiKueue(top.child("multiKueue", "multiKueue: {externalFrameworks: [{name: PipelineRun.v1.tekton.dev}]}"),
                 UnknownKeys::KueueStrict, out.multiKueue);

  // controller-runtime's concurrency per kind; the dispatch loop's workload controller takes
  // Kueue's Workload entry, as Kueue's own MultiKueue workload controller does. The other kinds
  // are Kueue's controllers, not ours.
  auto controller = top.child("controller", "controller: {groupKindConcurrency: {Workload.kueue.x-k8s.io: 5}}");
  controller.checkKeys({"groupKindConcurrency", "cacheSyncTimeout"}, UnknownKeys::KueueStrict);
  auto concurrency = controller.child("groupKindConcurrency", "groupKindConcurrency: {Workload.kueue.x-k8s.io: 5}");
  concurrency.read(kWorkloadGroupKind, out.dispatch.workloadConcurrency);
}

}  // namespace mka::config::detail
