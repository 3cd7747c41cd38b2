#include "mka/deploy/prometheus_rules.h"

#include <ostream>
#include <string>

#include "mka/common/duration.h"
#include "mka/config/loader.h"

namespace mka::deploy {

namespace {

using Json = nlohmann::ordered_json;

// The controllers whose queues are the dispatch loop's and the job integration's (README.md):
// workqueue_depth is a name other controllers export too.
constexpr std::string_view kAdapterQueues =
    "mk-workload|mk-cluster|mk-check|mk-capacity|job-.+|placement-check|placement-wl";

struct Alert {
  std::string name;
  std::string expr;
  std::string forDuration;  // "" = fires on the first evaluation that matches
  std::string severity;
  std::string summary, description, runbook;
};

Json rule(const Alert& a) {
  Json r = {{"alert", a.name}, {"expr", a.expr}};
  if (!a.forDuration.empty()) r["for"] = a.forDuration;
  r["labels"] = {{"severity", a.severity}};
  r["annotations"] = {{"summary", a.summary}, {"description", a.description}, {"runbook", a.runbook}};
  return r;
}

std::vector<Alert> alerts(const config::Configuration& cfg, const PrometheusRuleOptions& options) {
  const std::string ns(kNamespace);
  const auto& election = cfg.leaderElection;
  const std::string lease = election.resourceNamespace + "/" + election.resourceName;
  const std::string leaderSeries = "leader_election_master_status{name=\"" + election.resourceName + "\"}";
  // The dispatch loop's series are the leader's: a replica that led before keeps the values it
  // had then, so those of the replica leading now are the ones that count.
  const auto onLeader = [&](const std::string& expr) {
    return election.leaderElect ? "(" + expr + ") and on (instance) (" + leaderSeries + " == 1)" : expr;
  };
  // The dispatch loop's logs are the leader's.
  const std::string logs =
      "kubectl -n " + ns + " logs " + (election.leaderElect ? "<leader pod>" : "deploy/" + std::string(kName));
  const std::string leaderPod = election.leaderElect
                                    ? " <leader pod>: the pod name that starts the Lease's holder (kubectl -n " +
                                          election.resourceNamespace + " get lease " + election.resourceName +
                                          " -o jsonpath='{.spec.holderIdentity}')."
                                    : "";
  const std::string workers = "multikueue-adapter workers --config <your configuration file>";
  const std::string jobs = "multikueue-adapter jobs -A --config <your configuration file>";
  const std::string explain =
      "multikueue-adapter explain <kind>/<name> -n <namespace> --config <your configuration file>";

  std::vector<Alert> out;
  if (cfg.dispatch.enabled)
    out.push_back(
        {"MultiKueueAdapterWorkerDisconnected", onLeader("multikueue_adapter_cluster_connected == 0"), "5m", "warning",
         "Worker cluster {{ $labels.cluster }} has been disconnected for 5 minutes",
         "The dispatch loop cannot reach the worker of MultiKueueCluster {{ $labels.cluster }}: no Workload is "
         "dispatched there, and those running there go back to Retry after multiKueue.workerLostTimeout.",
         "Run " + workers +
             ": the NOTE column of {{ $labels.cluster }} says why it is not connected (kubeconfig Secret missing "
             "or wrong, expired token, certificate, network). Then "
             "kubectl get multikueuecluster {{ $labels.cluster }} -o yaml (its Active condition) and " +
             logs + " | grep {{ $labels.cluster }}. A stale kubeconfig or token: " +
             "multikueue-adapter add-worker {{ $labels.cluster }} --worker-kubeconfig <the worker's admin "
             "kubeconfig> writes a new one. " +
             jobs + " lists the jobs Waiting for {{ $labels.cluster }}; " + explain +
             " says since when and how long before the job is dispatched again (workerLostTimeout)." + leaderPod});
  out.push_back({"MultiKueueAdapterConfigReloadFailed", "multikueue_adapter_config_last_reload_successful == 0", "",
                 "warning", "The adapter on {{ $labels.instance }} refused its new configuration",
                 "The last reload of the configuration file failed: the replica goes on with the configuration it "
                 "loaded before, so the edit is not in force.",
                 "Run multikueue-adapter validate-config on the file you applied (kubectl -n " + ns +
                     " get configmap " + std::string(kConfigMapName) +
                     " -o jsonpath='{.data.config\\.yaml}' | multikueue-adapter validate-config -): it prints "
                     "every problem with its field and fix. The refusal is also in the pod's Events (reason "
                     "ConfigReloadFailed) and logs (kubectl -n " +
                     ns + " logs <pod> | grep 'config reload refused'). Fix the file and apply it again."});
  if (election.leaderElect)
    out.push_back(
        {"MultiKueueAdapterNoLeader", "max by (name) (" + leaderSeries + ") < 1 or absent(" + leaderSeries + ")", "1m",
         "critical", "No multikueue-adapter replica has held the Lease " + lease + " for 1 minute",
         "Without a leader nothing dispatches Workloads or runs the job integration (the webhooks still "
         "answer). No series at all means no replica is running or scraped.",
         "kubectl -n " + ns + " get pods -l app.kubernetes.io/name=" + std::string(kName) +
             " (running and ready?), kubectl -n " + election.resourceNamespace + " get lease " + election.resourceName +
             " -o yaml (holderIdentity, renewTime), and kubectl -n " + ns + " logs deploy/" + std::string(kName) +
             " | grep 'leader election': a 403 on leases means the RBAC lacks the Lease rules (apply "
             "multikueue-adapter manifests --config <your configuration file> again)."});
  out.push_back(
      {"MultiKueueAdapterWebhookErrors",
       "sum by (webhook) (rate(multikueue_adapter_webhook_requests_total{result=\"error\"}[5m])) / sum by (webhook) "
       "(rate(multikueue_adapter_webhook_requests_total[5m])) > 0.01",
       "5m", "critical", "More than 1% of the {{ $labels.webhook }} webhook's answers are errors",
       "{{ $value | humanizePercentage }} of the {{ $labels.webhook }} webhook's requests failed over the last 5 "
       "minutes; with failurePolicy Fail the API server refuses those writes.",
       "kubectl -n " + ns + " logs deploy/" + std::string(kName) +
           " | grep -E 'level=(error|warn)' (each failed request is logged with its reason); "
           "multikueue_adapter_webhook_requests_total{result=\"error\"} says which kind and operation. For "
           "validate-config, run multikueue-adapter validate-config on the ConfigMap's file. kubectl -n " +
           ns + " get pods (ready, restarting?)."});
  out.push_back(
      {"MultiKueueAdapterWebhookSlow",
       "histogram_quantile(0.99, sum by (webhook, le) "
       "(rate(multikueue_adapter_webhook_request_duration_seconds_bucket[5m]))) > 1",
       "5m", "warning", "The {{ $labels.webhook }} webhook's p99 latency is above 1 s",
       "The 99th percentile of the {{ $labels.webhook }} webhook's answers took {{ $value | humanizeDuration }} "
       "over the last 5 minutes (it is usually a few milliseconds); a request times out after " +
           std::to_string(kWebhookTimeoutSeconds) + " s and is refused then.",
       "kubectl -n " + ns + " top pods -l app.kubernetes.io/name=" + std::string(kName) +
           " (CPU at its limit: raise the Deployment's resources.limits.cpu), kubectl -n " + ns +
           " get pods (restarts, readiness) and kubectl -n " + ns + " logs deploy/" + std::string(kName) +
           ". An answer reads only the adapter's caches: slowness is CPU throttling or a node under pressure."});
  out.push_back(
      {"MultiKueueAdapterCertificateExpiringSoon",
       "multikueue_adapter_webhook_certificate_expiry_timestamp_seconds - time() < 7 * 86400", "", "warning",
       "The webhook serving certificate of {{ $labels.instance }} expires in {{ $value | humanizeDuration }}",
       "The certificate the webhooks are served with expires within 7 days; once it has, the API server refuses "
       "every request the webhooks cover.",
       "kubectl -n " + ns + " get secret " + std::string(kCertSecret) +
           " -o jsonpath='{.data.tls\\.crt}' | base64 -d | openssl x509 -noout -enddate. With cert-manager: "
           "kubectl -n " +
           ns + " describe certificate " + std::string(kCertificate) +
           " (why it was not renewed). Without: issue a new pair (certs/gen-dev-certs.sh or your CA) into the "
           "Secret; the adapter re-reads it without a restart (kubectl -n " +
           ns + " logs <pod> | grep 'serving certificate loaded')."});
  out.push_back({"MultiKueueAdapterWorkQueueGrowing",
                 "deriv(workqueue_depth{name=~\"" + std::string(kAdapterQueues) +
                     "\"}[5m]) > 0 and on (instance) multikueue_adapter_build_info",
                 "10m", "warning", "Work queue {{ $labels.name }} has been growing for 10 minutes",
                 "Keys join the {{ $labels.name }} controller's queue faster than it reconciles them "
                 "(its depth grows by {{ printf \"%.2f\" $value }} a second): Workloads and jobs wait longer and "
                 "longer.",
                 logs +
                     " | grep -E 'level=(error|warn)' (reconciles that fail are retried: "
                     "controller_runtime_reconcile_total{result=\"error\"} by controller); " +
                     workers + " (mk-workload waits on the workers); " + jobs +
                     " (how many jobs are Dispatching or Waiting, and on which workers); kubectl -n " + ns +
                     " top pods (CPU). Reconciles that succeed but are slow: raise dispatch.workloadConcurrency." +
                     leaderPod});
  if (cfg.dispatch.enabled) {
    const auto threshold = std::to_string(options.stuckAfter.count());
    const auto after = formatDuration(options.stuckAfter);
    out.push_back(
        {"MultiKueueAdapterWorkloadsStuck",
         onLeader(
             "time() - multikueue_adapter_admission_check_state_oldest_timestamp_seconds{state=~\"Pending|Retry\"} "
             "> " +
             threshold),
         "", "warning",
         "A Workload has been {{ $labels.state }} in its MultiKueue admission check for more than " + after,
         "The running Workload (quota reserved on the manager) longest in state {{ $labels.state }} of the "
         "dispatch loop's admission check entered it {{ $value | humanizeDuration }} ago.",
         "Run " + jobs + ": the jobs Dispatching (the check Pending) or Waiting (Retry); then " + explain +
             " for one of them: its last line says why (copies on which workers, none admitted and why: no room, "
             "LocalQueue missing, a worker unreachable), above it the check's message and each worker's copy. " +
             workers +
             ": every worker connected? free quota and pending Workloads per worker say whether the workers have "
             "room. Retry: a worker was lost or evicted it. " +
             logs + " | grep <namespace>/<name> shows what the dispatch loop did with it." + leaderPod});
  }
  return out;
}

}  // namespace

Manifest renderPrometheusRule(const config::Configuration& cfg, const PrometheusRuleOptions& options) {
  Json rules = Json::array();
  for (const auto& a : alerts(cfg, options)) rules.push_back(rule(a));
  Json object = {
      {"apiVersion", std::string(kPrometheusRuleApiVersion)},
      {"kind", "PrometheusRule"},
      {"metadata", {{"name", std::string(kName)}, {"namespace", std::string(kNamespace)}, {"labels", commonLabels()}}}};
  object["spec"] = {{"groups", Json::array({Json{{"name", std::string(kPrometheusRuleGroup)}, {"rules", rules}}})}};
  return {std::move(object),
          "Alerts on the adapter's metrics, each with a runbook. The Prometheus Operator loads it when its "
          "Prometheus's ruleSelector and ruleNamespaceSelector match: add the labels they ask for. Without the "
          "Operator, `spec` is a Prometheus rules file."};
}

int prometheusRulesCommand(const std::filesystem::path& configFile, const PrometheusRuleOptions& options,
                           std::ostream& out, std::ostream& err) {
  const auto loaded = loadConfigurationOrReport(configFile, err);
  if (!loaded) return 1;
  out << "# multikueue-adapter manifests --prometheus-rules --stuck-after " << formatDuration(options.stuckAfter)
      << ": the adapter's alerts, rendered from its configuration file.\n"
      << toYamlStream({renderPrometheusRule(*loaded, options)});
  return 0;
}

}  // namespace mka::deploy
