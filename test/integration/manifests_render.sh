#!/usr/bin/env bash
# Renders the kustomize manifests (manifests/ and manifests/overlays/cert-manager) and checks the
# properties the deployment relies on: webhook configurations, the Deployment's security context,
# probes, volumes, RBAC, the embedded AdapterConfiguration, and the samples in manifests/samples/
# (against the CRD schemas when they can be found).
#
# Needs: kubectl (with its built-in kustomize), python3 with PyYAML (Debian: python3-yaml).
# No cluster is needed: the rendered YAML is parsed and checked offline.
#
# Environment:
#   KUBECTL       kubectl to use (default: kubectl on PATH)
#   MKA_CRD_DIR   folder of CRD YAML files for the sample checks (default: the first of
#                 ../shared/crds beside the repository and test/fixtures/crds that exists)
#   MKA_BINARY    a built multikueue-adapter (scripts/test.sh sets it; MKA_BIN works too): when
#                 set, `$MKA_BINARY validate-config` also checks the ConfigMap's config.yaml
#
# Prints one line per check and ends with `manifests: N passed, N failed`; exits 1 if any failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MANIFESTS="$ROOT/manifests"
KUBECTL="${KUBECTL:-kubectl}"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok      $*"; }
fail() { failed=$((failed + 1)); echo "FAILED  $*"; }
finish() {
  echo "manifests: ${passed} passed, ${failed} failed"
  if [ "$failed" -eq 0 ]; then exit 0; fi
  exit 1
}

if ! command -v "$KUBECTL" >/dev/null 2>&1; then
  echo "manifests_render: '$KUBECTL' not found; install kubectl (it renders kustomizations offline)" >&2
  fail "kubectl is available"
  finish
fi
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import yaml' >/dev/null 2>&1; then
  echo "manifests_render: $PYTHON with PyYAML not found; install python3-yaml" >&2
  fail "python3 with PyYAML is available"
  finish
fi

if [ -z "${MKA_CRD_DIR:-}" ]; then
  for d in "$ROOT/../shared/crds" "$ROOT/test/fixtures/crds"; do
    if [ -f "$d/kueue.x-k8s.io_clusterqueues.yaml" ]; then MKA_CRD_DIR="$d"; break; fi
  done
fi
MKA_CRD_DIR="${MKA_CRD_DIR:-}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

render() {  # render NAME DIR OUT
  if "$KUBECTL" kustomize "$2" >"$3" 2>"$work/err"; then
    pass "render: kubectl kustomize $1"
  else
    fail "render: kubectl kustomize $1: $(head -c 2000 "$work/err")"
    return 1
  fi
}
ok=1
render manifests/ "$MANIFESTS" "$work/base.yaml" || ok=0
render manifests/overlays/cert-manager "$MANIFESTS/overlays/cert-manager" "$work/cert-manager.yaml" || ok=0
render manifests/overlays/worker "$MANIFESTS/overlays/worker" "$work/worker.yaml" || ok=0
if [ "$ok" -ne 1 ]; then
  echo "manifests_render: cannot check manifests that do not render" >&2
  finish
fi

cat >"$work/check.py" <<'PY'
"""Offline checks of the rendered manifests and the samples. Prints PASS/FAIL lines."""
import glob
import os
import re
import sys

import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
base_path, cm_path, samples_dir, crd_dir, cfg_out, worker_path, worker_cfg_out = sys.argv[1:8]

NS = "multikueue-adapter-system"
NAME = "multikueue-adapter"
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
CONFIG_DIR = "/etc/multikueue-adapter"
CERT_SECRET = "multikueue-adapter-webhook-cert"
WEBHOOK_SVC = "multikueue-adapter-webhook"
JOB_RESOURCES = {("tekton.dev", "v1", "pipelineruns"), ("argoproj.io", "v1alpha1", "workflows")}
INTEGRATED_RESOURCES = {("argoproj.io", "v1alpha1", "workflows")}
EXCLUDED_FOR_JOBS = {"kube-system", "kueue-system", NS}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
DEFAULT_QUEUE_NS_LABEL = "multikueue-adapter.dev/default-local-queue"
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.load_all(f, Loader=Loader) if d]


def run(name, fn):
    try:
        problems = fn() or []
    except Exception as e:  # a check that crashes is a failed check, not a crashed script
        problems = ["%s: %s" % (type(e).__name__, e)]
    if problems:
        print("FAIL\t%s: %s" % (name, "; ".join(str(p) for p in problems)))
    else:
        print("PASS\t%s" % name)
    sys.stdout.flush()


def get(obj, *path, default=None):
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        elif isinstance(obj, list) and isinstance(p, int) and -len(obj) <= p < len(obj):
            obj = obj[p]
        else:
            return default
    return obj


def find(docs, kind, name, namespace=None):
    for d in docs:
        md = d.get("metadata", {})
        if d.get("kind") == kind and md.get("name") == name and md.get("namespace") == namespace:
            return d
    return None


def must(docs, kind, name, namespace=None):
    d = find(docs, kind, name, namespace)
    if d is None:
        raise LookupError("%s %s%s not rendered" % (kind, (namespace + "/") if namespace else "", name))
    return d


base = load_all(base_path)
cm = load_all(cm_path)
worker = load_all(worker_path)


# ---------------------------------------------------------------- objects
def check_objects():
    want = [
        ("Namespace", NS, None), ("ServiceAccount", NAME, NS),
        ("ClusterRole", NAME, None), ("ClusterRoleBinding", NAME, None),
        ("Role", "multikueue-adapter-kubeconfigs", "kueue-system"),
        ("RoleBinding", "multikueue-adapter-kubeconfigs", "kueue-system"),
        ("Role", NAME, NS), ("RoleBinding", NAME, NS),
        ("ConfigMap", "multikueue-adapter-config", NS), ("Deployment", NAME, NS),
        ("PodDisruptionBudget", NAME, NS), ("Service", WEBHOOK_SVC, NS),
        ("Service", "multikueue-adapter-metrics", NS),
        ("MutatingWebhookConfiguration", NAME, None), ("ValidatingWebhookConfiguration", NAME, None),
    ]
    problems = ["missing %s %s%s" % (k, (ns + "/") if ns else "", n) for k, n, ns in want
                if find(base, k, n, ns) is None]
    seen = set()
    for d in base:
        key = (d.get("apiVersion"), d.get("kind"), get(d, "metadata", "namespace"), get(d, "metadata", "name"))
        if key in seen:
            problems.append("duplicate %s" % (key,))
        seen.add(key)
    ns = find(base, "Namespace", NS)
    if ns and get(ns, "metadata", "labels", "pod-security.kubernetes.io/enforce") != "restricted":
        problems.append("namespace should enforce the restricted Pod Security Standard")
    return problems


# ---------------------------------------------------------------- webhooks
def mutating():
    return must(base, "MutatingWebhookConfiguration", NAME)


def validating():
    return must(base, "ValidatingWebhookConfiguration", NAME)


def all_webhooks():
    return [("mutating", w) for w in mutating().get("webhooks", [])] + \
           [("validating", w) for w in validating().get("webhooks", [])]


def webhook_by_path(config, path):
    hooks = [w for w in config.get("webhooks", []) if get(w, "clientConfig", "service", "path") == path]
    if len(hooks) != 1:
        raise LookupError("%s %s: %d webhooks with path %s" % (config["kind"], NAME, len(hooks), path))
    return hooks[0]


def webhook_by_name(config, name):
    hooks = [w for w in config.get("webhooks", []) if w.get("name") == name]
    if len(hooks) != 1:
        raise LookupError("%s %s: %d webhooks named %s" % (config["kind"], NAME, len(hooks), name))
    return hooks[0]


# The job webhooks: (configuration, name, path, the objectSelector's expressions, resources).
def job_webhooks():
    queued = [{"key": QUEUE_LABEL, "operator": "Exists"}]
    prebuilt = [{"key": PREBUILT_LABEL, "operator": "Exists"}, {"key": QUEUE_LABEL, "operator": "DoesNotExist"}]
    unlabelled = [{"key": QUEUE_LABEL, "operator": "DoesNotExist"}, {"key": PREBUILT_LABEL, "operator": "DoesNotExist"}]
    return [(mutating(), "mutate.multikueue-adapter.dev", "/mutate", queued, JOB_RESOURCES),
            (mutating(), "mutate-prebuilt.multikueue-adapter.dev", "/mutate", prebuilt, JOB_RESOURCES),
            (mutating(), "mutate-default-queue.multikueue-adapter.dev", "/mutate", unlabelled, INTEGRATED_RESOURCES),
            (validating(), "validate.multikueue-adapter.dev", "/validate", queued, JOB_RESOURCES),
            (validating(), "validate-prebuilt.multikueue-adapter.dev", "/validate", prebuilt, JOB_RESOURCES)]


def rule_set(hook):
    out = set()
    for r in hook.get("rules", []):
        for g in r.get("apiGroups", []):
            for v in r.get("apiVersions", []):
                for res in r.get("resources", []):
                    for op in r.get("operations", []):
                        out.add((g, v, res, op))
    return out


def excluded_namespaces(hook):
    out = set()
    for e in get(hook, "namespaceSelector", "matchExpressions", default=[]) or []:
        if e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "NotIn":
            out |= set(e.get("values", []))
    return out


def check_mutating():
    problems = []
    hooks = mutating().get("webhooks", [])
    if len(hooks) != 3:
        problems.append("want 3 mutating webhooks, got %d" % len(hooks))
    for config, name, path, _, resources in job_webhooks():
        if config is not mutating():
            continue
        w = webhook_by_name(config, name)
        if get(w, "clientConfig", "service", "path") != path:
            problems.append("%s: path %r" % (name, get(w, "clientConfig", "service", "path")))
        want = {(g, v, r, "CREATE") for g, v, r in resources}
        if rule_set(w) != want:
            problems.append("%s: rules %s, want %s" % (name, sorted(rule_set(w)), sorted(want)))
        if w.get("reinvocationPolicy") != "Never":
            problems.append("%s: reinvocationPolicy %r" % (name, w.get("reinvocationPolicy")))
    return problems


def check_validating():
    problems = []
    hooks = validating().get("webhooks", [])
    if len(hooks) != 3:
        problems.append("want 3 validating webhooks, got %d" % len(hooks))
    for config, name, path, _, resources in job_webhooks():
        if config is not validating():
            continue
        v = webhook_by_name(config, name)
        want = {(g, ver, r, op) for g, ver, r in resources for op in ("CREATE", "UPDATE")}
        if rule_set(v) != want:
            problems.append("%s: rules %s, want %s" % (name, sorted(rule_set(v)), sorted(want)))
    c = webhook_by_path(validating(), "/validate-config")
    want = {("", "v1", "configmaps", "CREATE"), ("", "v1", "configmaps", "UPDATE")}
    if rule_set(c) != want:
        problems.append("/validate-config rules %s, want %s" % (sorted(rule_set(c)), sorted(want)))
    names = [w.get("name") for w in hooks]
    if len(set(names)) != len(names):
        problems.append("duplicate webhook names %s" % names)
    return problems


def check_each(field, want):
    def fn():
        return ["%s webhook %s: %s is %r, want %r" % (t, w.get("name"), field, w.get(field), want)
                for t, w in all_webhooks() if w.get(field) != want]
    return fn


def check_common():
    problems = []
    for t, w in all_webhooks():
        if w.get("admissionReviewVersions") != ["v1"]:
            problems.append("%s: admissionReviewVersions %r" % (w.get("name"), w.get("admissionReviewVersions")))
        if w.get("matchPolicy") != "Equivalent":
            problems.append("%s: matchPolicy %r" % (w.get("name"), w.get("matchPolicy")))
        if not re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+){2,}", w.get("name", "")):
            problems.append("%s: webhook names must be fully qualified" % w.get("name"))
    return problems


def check_job_namespaces():
    problems = []
    for config, name, _, _, _ in job_webhooks():
        hook = webhook_by_name(config, name)
        missing = EXCLUDED_FOR_JOBS - excluded_namespaces(hook)
        if missing:
            problems.append("%s does not exclude %s" % (name, sorted(missing)))
    return problems


# Only jobs meant for Kueue reach the adapter, so an outage cannot stall any other job; a job
# without Kueue labels only in namespaces that opt in to their default LocalQueue.
def check_job_selectors():
    problems = []
    for config, name, _, expressions, _ in job_webhooks():
        hook = webhook_by_name(config, name)
        got = get(hook, "objectSelector", "matchExpressions", default=None)
        if got != expressions or get(hook, "objectSelector", "matchLabels", default=None):
            problems.append("%s: objectSelector %r, want matchExpressions %r" % (name, hook.get("objectSelector"),
                                                                               expressions))
        opt_in = [e for e in get(hook, "namespaceSelector", "matchExpressions", default=[]) or []
                  if e.get("key") == DEFAULT_QUEUE_NS_LABEL]
        want_opt_in = [{"key": DEFAULT_QUEUE_NS_LABEL, "operator": "In", "values": ["true"]}] \
            if name.startswith("mutate-default-queue.") else []
        if opt_in != want_opt_in:
            problems.append("%s: namespaceSelector on %s is %r, want %r" % (name, DEFAULT_QUEUE_NS_LABEL, opt_in,
                                                                           want_opt_in))
    return problems


def check_config_webhook():
    problems = []
    c = webhook_by_path(validating(), "/validate-config")
    ex = excluded_namespaces(c)
    if "kube-system" not in ex:
        problems.append("does not exclude kube-system")
    if NS in ex:
        problems.append("excludes %s, where the adapter's own ConfigMap lives" % NS)
    sel = get(c, "objectSelector", "matchLabels", default={}) or {}
    if sel != {"multikueue-adapter.dev/config": "true"}:
        problems.append("objectSelector.matchLabels %r" % sel)
    cmap = must(base, "ConfigMap", "multikueue-adapter-config", NS)
    labels = get(cmap, "metadata", "labels", default={}) or {}
    if any(labels.get(k) != v for k, v in sel.items()):
        problems.append("ConfigMap multikueue-adapter-config is not selected by it (labels %r)" % labels)
    return problems


def check_client_config():
    problems = []
    dep = must(base, "Deployment", NAME, NS)
    svc = must(base, "Service", WEBHOOK_SVC, NS)
    ports = {p.get("name"): p.get("containerPort")
             for c in get(dep, "spec", "template", "spec", "containers", default=[]) for p in c.get("ports", [])}
    for t, w in all_webhooks():
        s = get(w, "clientConfig", "service", default={}) or {}
        if (s.get("name"), s.get("namespace"), s.get("port", 443)) != (WEBHOOK_SVC, NS, 443):
            problems.append("%s: clientConfig.service %r" % (w.get("name"), s))
        if get(w, "clientConfig", "url"):
            problems.append("%s: use clientConfig.service, not url" % w.get("name"))
        if get(w, "clientConfig", "caBundle"):
            problems.append("%s: caBundle must be left for injection" % w.get("name"))
    sp = [p for p in get(svc, "spec", "ports", default=[]) if p.get("port") == 443]
    if len(sp) != 1:
        problems.append("Service %s has no port 443" % WEBHOOK_SVC)
    else:
        tp = sp[0].get("targetPort")
        if (ports.get(tp) if isinstance(tp, str) else tp) != 9443:
            problems.append("Service %s port 443 targets %r, not container port 9443" % (WEBHOOK_SVC, tp))
    pod_labels = get(dep, "spec", "template", "metadata", "labels", default={})
    for s in (svc, must(base, "Service", "multikueue-adapter-metrics", NS)):
        sel = get(s, "spec", "selector", default={}) or {}
        if not sel or any(pod_labels.get(k) != v for k, v in sel.items()):
            problems.append("Service %s selector %r does not select the pods" % (s["metadata"]["name"], sel))
    mp = [p for p in get(must(base, "Service", "multikueue-adapter-metrics", NS), "spec", "ports", default=[])
          if p.get("port") == 8080]
    if len(mp) != 1 or (ports.get(mp[0].get("targetPort")) if isinstance(mp[0].get("targetPort"), str)
                        else mp[0].get("targetPort")) != 8080:
        problems.append("metrics Service must expose 8080 -> container port 8080")
    return problems


# ---------------------------------------------------------------- deployment
def deployment():
    return must(base, "Deployment", NAME, NS)


def container():
    cs = get(deployment(), "spec", "template", "spec", "containers", default=[])
    if len(cs) != 1:
        raise LookupError("want 1 container, got %d" % len(cs))
    return cs[0]


def check_deployment_basics():
    problems = []
    d, c = deployment(), container()
    if get(d, "spec", "replicas") != 2:
        problems.append("replicas %r, want 2" % get(d, "spec", "replicas"))
    if c.get("image") != "multikueue-adapter:latest":
        problems.append("image %r" % c.get("image"))
    want_args = ["serve", "--config=%s/config.yaml" % CONFIG_DIR, "--cert-dir=%s" % CERT_DIR,
                 "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"]
    if c.get("args") != want_args:
        problems.append("args %r, want %r" % (c.get("args"), want_args))
    if c.get("command"):
        problems.append("command must be left to the image's ENTRYPOINT")
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    if sorted(ports.values()) != [8080, 8081, 9443]:
        problems.append("container ports %r" % ports)
    sel = get(d, "spec", "selector", "matchLabels", default={}) or {}
    labels = get(d, "spec", "template", "metadata", "labels", default={}) or {}
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        problems.append("selector %r does not match template labels %r" % (sel, labels))
    if get(d, "spec", "template", "spec", "serviceAccountName") != NAME:
        problems.append("serviceAccountName %r" % get(d, "spec", "template", "spec", "serviceAccountName"))
    if get(d, "spec", "template", "spec", "terminationGracePeriodSeconds") != 30:
        problems.append("terminationGracePeriodSeconds is not 30")
    for kind in ("requests", "limits"):
        r = get(c, "resources", kind, default={}) or {}
        if not r.get("cpu") or not r.get("memory"):
            problems.append("resources.%s must set cpu and memory" % kind)
    return problems


def check_security_context():
    problems = []
    pod = get(deployment(), "spec", "template", "spec", "securityContext", default={}) or {}
    sc = container().get("securityContext") or {}
    want = {
        ("runAsNonRoot",): True, ("runAsUser",): 65532, ("readOnlyRootFilesystem",): True,
        ("allowPrivilegeEscalation",): False, ("seccompProfile", "type"): "RuntimeDefault",
    }
    for path, value in want.items():
        got = get(sc, *path)
        if got is None and path[0] in ("runAsNonRoot", "runAsUser", "seccompProfile"):
            got = get(pod, *path)
        if got != value:
            problems.append("securityContext.%s is %r, want %r" % (".".join(path), got, value))
    if get(sc, "capabilities", "drop") != ["ALL"]:
        problems.append("capabilities.drop %r, want [ALL]" % get(sc, "capabilities", "drop"))
    if get(sc, "capabilities", "add"):
        problems.append("capabilities.add must be empty")
    if sc.get("privileged"):
        problems.append("privileged")
    spec = get(deployment(), "spec", "template", "spec", default={})
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(k):
            problems.append(k)
    return problems


def check_probes():
    problems = []
    c = container()
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        h = get(c, probe, "httpGet", default={}) or {}
        port = h.get("port")
        if isinstance(port, str):
            port = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}.get(port)
        if h.get("path") != path or port != 8081 or h.get("scheme", "HTTP") != "HTTP":
            problems.append("%s is %r, want HTTP GET %s on 8081" % (probe, h, path))
    return problems


def check_volumes():
    problems = []
    c = container()
    vols = {v.get("name"): v for v in get(deployment(), "spec", "template", "spec", "volumes", default=[])}
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}

    def mounted(path, pred, what):
        m = mounts.get(path)
        if m is None:
            problems.append("nothing mounted at %s (want %s)" % (path, what))
            return
        if m.get("subPath"):
            problems.append("%s uses subPath: it would never see updates" % path)
        if not pred(vols.get(m.get("name"), {})):
            problems.append("%s is %r, want %s" % (path, vols.get(m.get("name")), what))

    mounted(CONFIG_DIR, lambda v: get(v, "configMap", "name") == "multikueue-adapter-config",
            "ConfigMap multikueue-adapter-config")
    mounted(CERT_DIR, lambda v: get(v, "secret", "secretName") == CERT_SECRET, "Secret " + CERT_SECRET)
    mounted("/tmp", lambda v: "emptyDir" in v, "an emptyDir")
    for p in (CONFIG_DIR, CERT_DIR):
        if p in mounts and not mounts[p].get("readOnly"):
            problems.append("%s should be mounted readOnly" % p)
    return problems


def check_availability():
    problems = []
    spec = get(deployment(), "spec", "template", "spec", default={})
    pref = get(spec, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", default=[])
    labels = get(deployment(), "spec", "template", "metadata", "labels", default={}) or {}
    if not any(get(t, "podAffinityTerm", "topologyKey") == "kubernetes.io/hostname" and
               all(labels.get(k) == v for k, v in
                   (get(t, "podAffinityTerm", "labelSelector", "matchLabels", default={}) or {}).items())
               for t in pref or []):
        problems.append("no preferred pod anti-affinity on kubernetes.io/hostname selecting the pods")
    pdb = must(base, "PodDisruptionBudget", NAME, NS)
    if get(pdb, "spec", "minAvailable") != 1:
        problems.append("PodDisruptionBudget minAvailable %r" % get(pdb, "spec", "minAvailable"))
    sel = get(pdb, "spec", "selector", "matchLabels", default={}) or {}
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        problems.append("PodDisruptionBudget selector %r does not select the pods" % sel)
    return problems


# ---------------------------------------------------------------- configuration
# SPEC §3's keys, and waitForPodsReady: Kueue 0.19+ has it on by default, so the shipped
# configuration turns on the PodsReady conditions Kueue then waits for.
CONFIG_KEYS = {"apiVersion", "kind", "namespace", "webhook", "healthProbeBindAddress", "metricsBindAddress",
               "leaderElection", "clientConnection", "managedByDefaulting", "dispatch", "multiKueue", "integrations",
               "waitForPodsReady"}


def check_config():
    problems = []
    cmap = must(base, "ConfigMap", "multikueue-adapter-config", NS)
    text = get(cmap, "data", "config.yaml")
    if not isinstance(text, str):
        return ["ConfigMap has no data key config.yaml"]
    with open(cfg_out, "w") as f:
        f.write(text)
    cfg = yaml.safe_load(text)
    if (cfg.get("apiVersion"), cfg.get("kind")) != ("config.multikueue-adapter.dev/v1alpha1",
                                                     "AdapterConfiguration"):
        problems.append("not an AdapterConfiguration: %r %r" % (cfg.get("apiVersion"), cfg.get("kind")))
    if set(cfg) != CONFIG_KEYS:
        problems.append("keys %s differ from SPEC §3's and waitForPodsReady %s" % (sorted(cfg), sorted(CONFIG_KEYS)))
    want = {
        ("namespace",): "kueue-system",
        ("webhook", "port"): 9443,
        ("webhook", "certDir"): CERT_DIR,
        ("healthProbeBindAddress",): ":8081",
        ("metricsBindAddress",): ":8080",
        ("leaderElection", "leaderElect"): True,
        ("leaderElection", "resourceName"): NAME,
        ("leaderElection", "resourceNamespace"): NS,
        ("dispatch", "enabled"): True,
        ("dispatch", "admissionCheckControllerName"): "multikueue-adapter.dev/dispatcher",
        ("managedByDefaulting",): "MultiKueueQueues",
        ("waitForPodsReady", "enable"): True,
    }
    for path, value in want.items():
        if get(cfg, *path) != value:
            problems.append("%s is %r, want %r" % (".".join(path), get(cfg, *path), value))
    fw = {f.get("name"): f for f in get(cfg, "multiKueue", "externalFrameworks", default=[])}
    if set(fw) != {"PipelineRun.v1.tekton.dev", "Workflow.v1alpha1.argoproj.io"}:
        problems.append("externalFrameworks %s" % sorted(fw))
    elif get(fw["Workflow.v1alpha1.argoproj.io"], "managedBy") != {
            "label": "workflows.argoproj.io/controller-instanceid", "value": "multikueue"}:
        problems.append("Workflow managedBy %r" % get(fw["Workflow.v1alpha1.argoproj.io"], "managedBy"))
    if "managedBy" in fw.get("PipelineRun.v1.tekton.dev", {}):
        problems.append("PipelineRun should use the built-in spec.managedBy profile")
    integrated = [f.get("name") for f in get(cfg, "integrations", "frameworks", default=[])]
    if integrated != ["Workflow.v1alpha1.argoproj.io"]:
        problems.append("integrations.frameworks %r, want the Workflow profile only (PipelineRuns are "
                        "tekton-kueue's by default)" % integrated)
    return problems


# ---------------------------------------------------------------- RBAC
def check_rbac_least_privilege():
    problems = []
    for d in base:
        if d.get("kind") not in ("ClusterRole", "Role"):
            continue
        where = "%s %s" % (d["kind"], get(d, "metadata", "name"))
        for r in d.get("rules", []):
            for field in ("apiGroups", "resources", "verbs"):
                if "*" in (r.get(field) or []):
                    problems.append("%s: wildcard in %s" % (where, field))
            if r.get("nonResourceURLs"):
                problems.append("%s: nonResourceURLs" % where)
            if set(r.get("verbs", [])) & {"escalate", "bind", "impersonate"}:
                problems.append("%s: privilege-escalating verbs" % where)
            if "secrets" in r.get("resources", []):
                if d["kind"] != "Role" or get(d, "metadata", "namespace") != "kueue-system":
                    problems.append("%s: secrets may only be read in kueue-system" % where)
                if set(r.get("verbs", [])) - {"get", "list", "watch"}:
                    problems.append("%s: secrets are read-only" % where)
            if "leases" in r.get("resources", []) and d["kind"] != "Role":
                problems.append("%s: leases only in the adapter's namespace" % where)
            if set(r.get("resources", [])) & {"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                                              "clusterroles", "roles", "clusterrolebindings", "rolebindings"}:
                problems.append("%s: must not manage webhooks or RBAC" % where)
    for d in base:
        if d.get("kind") not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subj = d.get("subjects", [])
        if subj != [{"kind": "ServiceAccount", "name": NAME, "namespace": NS}]:
            problems.append("%s %s: subjects %r" % (d["kind"], get(d, "metadata", "name"), subj))
        ref = d.get("roleRef", {})
        target = find(base, ref.get("kind"), ref.get("name"),
                      None if ref.get("kind") == "ClusterRole" else get(d, "metadata", "namespace"))
        if target is None:
            problems.append("%s %s: roleRef %r not rendered" % (d["kind"], get(d, "metadata", "name"), ref))
    return problems


def allowed(role, group, resource, verb):
    return any(group in r.get("apiGroups", []) and resource in r.get("resources", []) and verb in r.get("verbs", [])
               for r in role.get("rules", []))


def check_rbac_needs():
    # What the manager's code calls for manifests/base/config.yaml (include/mka/deploy/rbac.h
    # says why; the RBAC coverage test checks the table against the calls).
    problems = []
    cr = must(base, "ClusterRole", NAME)
    need = []
    for res in ("localqueues", "clusterqueues", "admissionchecks", "multikueueclusters", "multikueueconfigs",
                "workloads"):
        need += [("kueue.x-k8s.io", res, v) for v in ("list", "watch")]
    need += [("kueue.x-k8s.io", r, "get") for r in ("workloads", "admissionchecks")]
    need += [("kueue.x-k8s.io", "workloads", v) for v in ("create", "update", "patch", "delete")]
    need += [("kueue.x-k8s.io", r, "update") for r in ("workloads/status", "admissionchecks/status")]
    need += [("tekton.dev", "pipelineruns", v) for v in ("get", "list", "watch")]
    need += [("tekton.dev", "pipelineruns/status", "patch")]
    need += [("argoproj.io", "workflows", v) for v in ("get", "list", "watch", "update", "patch")]
    need += [("", "events", v) for v in ("create", "patch")]
    need += [("kueue.x-k8s.io", r, "get") for r in ("resourceflavors", "workloadpriorityclasses")]
    need += [(g, r, v) for g, r in (("scheduling.k8s.io", "priorityclasses"), ("", "namespaces"))
             for v in ("list", "watch")]
    problems += ["ClusterRole lacks %s %s/%s" % (v, g or "core", r) for g, r, v in need if not allowed(cr, g, r, v)]
    sec = must(base, "Role", "multikueue-adapter-kubeconfigs", "kueue-system")
    problems += ["kueue-system Role lacks %s secrets" % v for v in ("list", "watch")
                 if not allowed(sec, "", "secrets", v)]
    own = must(base, "Role", NAME, NS)
    problems += ["%s Role lacks %s leases" % (NS, v) for v in ("get", "create", "update")
                 if not allowed(own, "coordination.k8s.io", "leases", v)]
    return problems


# ---------------------------------------------------------------- worker overlay
def check_worker_config():
    problems = []
    cmap = must(worker, "ConfigMap", "multikueue-adapter-config", NS)
    text = get(cmap, "data", "config.yaml")
    if not isinstance(text, str):
        return ["worker ConfigMap has no data key config.yaml"]
    with open(worker_cfg_out, "w") as f:
        f.write(text)
    cfg = yaml.safe_load(text)
    if get(cfg, "dispatch", "enabled") is not False:
        problems.append("dispatch.enabled %r, want false" % get(cfg, "dispatch", "enabled"))
    if "multiKueue" in cfg:
        problems.append("a worker needs no multiKueue section")
    if cfg.get("managedByDefaulting") != "Never":
        problems.append("managedByDefaulting %r, want Never" % cfg.get("managedByDefaulting"))
    integrated = {f.get("name") for f in get(cfg, "integrations", "frameworks", default=[])}
    if integrated != {"Workflow.v1alpha1.argoproj.io", "PipelineRun.v1.tekton.dev"}:
        problems.append("integrations.frameworks %s" % sorted(integrated))
    return problems


def check_worker_rbac():
    problems = []
    if find(worker, "Role", "multikueue-adapter-kubeconfigs", "kueue-system") is not None:
        problems.append("the kubeconfig Secrets Role is rendered on a worker")
    for d in worker:
        if d.get("kind") not in ("ClusterRole", "Role"):
            continue
        for r in d.get("rules", []):
            for field in ("apiGroups", "resources", "verbs"):
                if "*" in (r.get(field) or []):
                    problems.append("%s: wildcard in %s" % (get(d, "metadata", "name"), field))
            extra = set(r.get("resources", [])) & {"secrets", "multikueueclusters", "multikueueconfigs",
                                                   "admissionchecks/status", "multikueueclusters/status"}
            if extra:
                problems.append("%s grants %s on a worker" % (get(d, "metadata", "name"), sorted(extra)))
    cr = must(worker, "ClusterRole", NAME)
    need = [("kueue.x-k8s.io", "workloads", v) for v in ("list", "watch", "create", "update", "patch", "delete")]
    need += [("kueue.x-k8s.io", "workloads/status", "update")]
    need += [("kueue.x-k8s.io", r, "get") for r in ("resourceflavors", "workloadpriorityclasses")]
    need += [(g, r, v) for g, r in (("scheduling.k8s.io", "priorityclasses"), ("", "namespaces"))
             for v in ("list", "watch")]
    need += [(g, r, v) for g, r in (("argoproj.io", "workflows"), ("tekton.dev", "pipelineruns"))
             for v in ("list", "watch", "update")]
    need += [("", "events", v) for v in ("create", "patch")]
    problems += ["worker ClusterRole lacks %s %s/%s" % (v, g or "core", r) for g, r, v in need
                 if not allowed(cr, g, r, v)]
    return problems


# ---------------------------------------------------------------- cert-manager overlay
INJECT = "cert-manager.io/inject-ca-from"


def check_cert_manager_certificate():
    problems = []
    cert = must(cm, "Certificate", "multikueue-adapter-serving-cert", NS)
    if get(cert, "spec", "secretName") != CERT_SECRET:
        problems.append("Certificate secretName %r" % get(cert, "spec", "secretName"))
    want = {"%s.%s.svc" % (WEBHOOK_SVC, NS), "%s.%s.svc.cluster.local" % (WEBHOOK_SVC, NS)}
    if set(get(cert, "spec", "dnsNames", default=[])) != want:
        problems.append("dnsNames %r, want %s" % (get(cert, "spec", "dnsNames"), sorted(want)))
    ref = get(cert, "spec", "issuerRef", default={})
    issuer = find(cm, ref.get("kind", "Issuer"), ref.get("name"), NS)
    if issuer is None or "selfSigned" not in issuer.get("spec", {}):
        problems.append("issuerRef %r is not a rendered self-signed Issuer" % ref)
    return problems


def check_cert_manager_injection():
    problems = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        d = must(cm, kind, NAME)
        got = get(d, "metadata", "annotations", INJECT)
        if got != "%s/multikueue-adapter-serving-cert" % NS:
            problems.append("%s: %s is %r" % (kind, INJECT, got))
    return problems


def strip_inject(d):
    d = yaml.safe_load(yaml.safe_dump(d))
    ann = get(d, "metadata", "annotations")
    if ann is not None:
        ann.pop(INJECT, None)
        if not ann:
            del d["metadata"]["annotations"]
    return d


def check_cert_manager_same_base():
    key = lambda d: (d.get("kind"), get(d, "metadata", "namespace") or "", get(d, "metadata", "name"))
    rest = sorted((strip_inject(d) for d in cm if d.get("kind") not in ("Certificate", "Issuer")), key=key)
    b = sorted(base, key=key)
    if [key(d) for d in rest] != [key(d) for d in b]:
        return ["objects differ: %s vs %s" % ([key(d) for d in rest], [key(d) for d in b])]
    return ["%s %s differs from the base beyond the %s annotation" % (key(x)[0], key(x)[2], INJECT)
            for x, y in zip(rest, b) if x != y]


# ---------------------------------------------------------------- samples vs CRD schemas
crds = {}  # (group, kind) -> CRD


def load_crds():
    if not crd_dir or not os.path.isdir(crd_dir):
        return
    sizes = {}
    for p in sorted(glob.glob(os.path.join(crd_dir, "*.yaml"))):
        for d in load_all(p):
            if d.get("kind") != "CustomResourceDefinition":
                continue
            k = (get(d, "spec", "group"), get(d, "spec", "names", "kind"))
            if os.path.getsize(p) > sizes.get(k, -1):  # prefer the fullest schema (Argo: full over minimal)
                crds[k], sizes[k] = d, os.path.getsize(p)


def pattern_match(pattern, v):
    # CRD patterns are ECMA-262; Python wants inline flags such as (?i) at the very start.
    flags = 0
    if "(?i)" in pattern:
        pattern, flags = pattern.replace("(?i)", ""), re.IGNORECASE
    return re.search(pattern, v, flags) is not None


def validate(v, s, path, errs):
    if s.get("x-kubernetes-int-or-string"):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            errs.append("%s: want an integer or a string, got %r" % (path, v))
        return
    if v is None:
        if not s.get("nullable"):
            errs.append("%s: null" % path)
        return
    t = s.get("type")
    if "enum" in s and v not in s["enum"]:
        errs.append("%s: %r not one of %r" % (path, v, s["enum"]))
    if t == "object":
        if not isinstance(v, dict):
            errs.append("%s: want an object, got %r" % (path, v))
            return
        props, addl = s.get("properties"), s.get("additionalProperties")
        for req in s.get("required", []):
            if req not in v:
                errs.append("%s: missing required field %s" % (path, req))
        for k, sub in v.items():
            p = "%s.%s" % (path, k)
            if path == "" and k == "metadata":
                continue  # ObjectMeta: checked by validate_metadata
            if props and k in props:
                validate(sub, props[k], p, errs)
            elif isinstance(addl, dict):
                validate(sub, addl, p, errs)
            elif s.get("x-kubernetes-preserve-unknown-fields") or addl is True:
                pass
            else:
                errs.append("%s: unknown field (the apiserver would reject or prune it)" % p)
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            errs.append("%s: more than %d properties" % (path, s["maxProperties"]))
    elif t == "array":
        if not isinstance(v, list):
            errs.append("%s: want an array, got %r" % (path, v))
            return
        if "minItems" in s and len(v) < s["minItems"]:
            errs.append("%s: fewer than %d items" % (path, s["minItems"]))
        if "maxItems" in s and len(v) > s["maxItems"]:
            errs.append("%s: more than %d items" % (path, s["maxItems"]))
        for i, item in enumerate(v):
            validate(item, s.get("items", {}), "%s[%d]" % (path, i), errs)
    elif t == "string":
        if not isinstance(v, str):
            errs.append("%s: want a string, got %r" % (path, v))
            return
        if "minLength" in s and len(v) < s["minLength"]:
            errs.append("%s: shorter than %d" % (path, s["minLength"]))
        if "maxLength" in s and len(v) > s["maxLength"]:
            errs.append("%s: longer than %d" % (path, s["maxLength"]))
        if "pattern" in s and not pattern_match(s["pattern"], v):
            errs.append("%s: %r does not match %s" % (path, v, s["pattern"]))
    elif t == "integer":
        if isinstance(v, bool) or not isinstance(v, int):
            errs.append("%s: want an integer, got %r" % (path, v))
            return
    elif t == "number":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            errs.append("%s: want a number, got %r" % (path, v))
            return
    elif t == "boolean":
        if not isinstance(v, bool):
            errs.append("%s: want a boolean, got %r" % (path, v))
    if t in ("integer", "number") and isinstance(v, (int, float)):
        if "minimum" in s and v < s["minimum"]:
            errs.append("%s: below %s" % (path, s["minimum"]))
        if "maximum" in s and v > s["maximum"]:
            errs.append("%s: above %s" % (path, s["maximum"]))


def validate_metadata(md, namespaced, errs):
    allowed_keys = {"name", "namespace", "labels", "annotations"}
    for k in md:
        if k not in allowed_keys:
            errs.append("metadata.%s: not expected in a sample" % k)
    name = md.get("name", "")
    if not DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
        errs.append("metadata.name %r is not a DNS-1123 subdomain" % name)
    if namespaced and not md.get("namespace"):
        errs.append("metadata.namespace missing on a namespaced object")
    if not namespaced and md.get("namespace"):
        errs.append("metadata.namespace set on a cluster-scoped object")
    for k, v in (md.get("labels") or {}).items():
        if not isinstance(v, str) or len(v) > 63 or not LABEL_VALUE.match(v):
            errs.append("metadata.labels[%s]: bad label value %r" % (k, v))


# Tekton's pipelineSpec is schemaless in the CRD (x-kubernetes-preserve-unknown-fields); its shape is
# Tekton's v1 PipelineSpec / PipelineTask, and an embedded taskSpec is checked against the TaskRun
# CRD's structured status.taskSpec schema.
PIPELINE_SPEC_KEYS = {"displayName", "description", "tasks", "params", "workspaces", "results", "finally"}
PIPELINE_TASK_KEYS = {"name", "displayName", "description", "taskRef", "taskSpec", "when", "onError", "retries",
                      "runAfter", "params", "matrix", "workspaces", "timeout", "pipelineRef", "pipelineSpec"}


def validate_pipeline_spec(ps, errs):
    path = "spec.pipelineSpec"
    if not isinstance(ps, dict):
        errs.append("%s: want an object" % path)
        return
    for k in ps:
        if k not in PIPELINE_SPEC_KEYS:
            errs.append("%s.%s: unknown field" % (path, k))
    taskrun = crds.get(("tekton.dev", "TaskRun"))
    task_schema = None
    if taskrun:
        for ver in get(taskrun, "spec", "versions", default=[]):
            if ver.get("name") == "v1":
                task_schema = get(ver, "schema", "openAPIV3Schema", "properties", "status", "properties",
                                  "taskSpec")
    names = set()
    all_tasks = [("tasks", t) for t in ps.get("tasks") or []] + [("finally", t) for t in ps.get("finally") or []]
    if not ps.get("tasks"):
        errs.append("%s.tasks: a pipeline needs at least one task" % path)
    for section, t in all_tasks:
        tp = "%s.%s[%s]" % (path, section, t.get("name"))
        for k in t:
            if k not in PIPELINE_TASK_KEYS:
                errs.append("%s.%s: unknown field" % (tp, k))
        if not DNS1123_SUBDOMAIN.match(t.get("name", "")) or t.get("name") in names:
            errs.append("%s: task names must be unique DNS-1123 labels" % tp)
        names.add(t.get("name"))
        if ("taskRef" in t) == ("taskSpec" in t):
            errs.append("%s: exactly one of taskRef and taskSpec" % tp)
        spec = {k: v for k, v in (t.get("taskSpec") or {}).items() if k not in ("apiVersion", "kind", "metadata", "spec")}
        if task_schema is not None and "taskSpec" in t:
            validate(spec, task_schema, tp + ".taskSpec", errs)
        for i, st in enumerate(spec.get("steps") or []):
            if st.get("script") and st.get("command"):
                errs.append("%s.taskSpec.steps[%d]: script and command are exclusive" % (tp, i))
            if not st.get("image"):
                errs.append("%s.taskSpec.steps[%d]: no image" % (tp, i))
    for section, t in all_tasks:
        for dep in t.get("runAfter") or []:
            if dep not in names:
                errs.append("%s.%s[%s].runAfter: unknown task %s" % (path, section, t.get("name"), dep))


def validate_argo_templates(spec, errs):
    names = [t.get("name") for t in spec.get("templates") or []]
    if spec.get("entrypoint") not in names:
        errs.append("spec.entrypoint %r names no template" % spec.get("entrypoint"))
    for t in spec.get("templates") or []:
        for task in get(t, "dag", "tasks", default=[]) or []:
            if task.get("template") not in names:
                errs.append("template %s: task %s uses unknown template %r" % (t.get("name"), task.get("name"),
                                                                              task.get("template")))
            for dep in task.get("dependencies") or []:
                if dep not in [x.get("name") for x in get(t, "dag", "tasks", default=[])]:
                    errs.append("template %s: task %s depends on unknown %s" % (t.get("name"), task.get("name"), dep))


def check_sample(path, docs):
    def fn():
        errs = []
        if not docs:
            return ["no objects"]
        for d in docs:
            api, kind = d.get("apiVersion", ""), d.get("kind", "")
            group, _, version = api.rpartition("/")
            label = "%s %s" % (kind, get(d, "metadata", "name"))
            e = []
            crd = crds.get((group, kind))
            if kind == "CustomResourceDefinition":  # a sample's own kind (checked as a CRD by the sandbox tests)
                if not get(d, "spec", "versions"):
                    e.append("a CRD without versions")
                errs += ["%s: %s" % (label, x) for x in e]
                continue
            if crd is None and crds:
                e.append("no CRD for %s in %s" % (api, crd_dir))
            namespaced = True
            if crd is not None:
                namespaced = get(crd, "spec", "scope") == "Namespaced"
                vers = [x for x in get(crd, "spec", "versions", default=[]) if x.get("name") == version]
                if not vers or not vers[0].get("served"):
                    e.append("%s is not a served version of the CRD" % api)
                else:
                    schema = get(vers[0], "schema", "openAPIV3Schema", default={})
                    validate(d, schema, "", e)
            elif kind in ("ResourceFlavor", "ClusterQueue", "AdmissionCheck", "MultiKueueConfig",
                          "MultiKueueCluster"):
                namespaced = False
            validate_metadata(d.get("metadata") or {}, namespaced, e)
            if kind == "PipelineRun":
                validate_pipeline_spec(get(d, "spec", "pipelineSpec"), e)
            if kind == "Workflow":
                validate_argo_templates(d.get("spec") or {}, e)
            errs += ["%s: %s" % (label, x.lstrip(".: ")) for x in e]
        return errs
    return fn


def check_sample_references(samples):
    def fn():
        problems = []
        objs = [d for docs in samples.values() for d in docs]
        manager = [d for p, docs in samples.items() if "/worker/" not in p and "/single-cluster/" not in p
                   for d in docs]
        single = [d for p, docs in samples.items() if "/single-cluster/" in p for d in docs]

        def has(kind, name, ns=None):
            return find(manager, kind, name, ns) is not None

        cfg = yaml.safe_load(get(must(base, "ConfigMap", "multikueue-adapter-config", NS), "data", "config.yaml"))
        controller = get(cfg, "dispatch", "admissionCheckControllerName")
        kinds = {f["name"].split(".")[0]: f for f in get(cfg, "multiKueue", "externalFrameworks", default=[])}
        for d in manager:
            k, n, ns = d.get("kind"), get(d, "metadata", "name"), get(d, "metadata", "namespace")
            if k == "LocalQueue" and not has("ClusterQueue", get(d, "spec", "clusterQueue")):
                problems.append("LocalQueue %s/%s: no ClusterQueue %s" % (ns, n, get(d, "spec", "clusterQueue")))
            if k == "ClusterQueue":
                for rg in get(d, "spec", "resourceGroups", default=[]):
                    for f in rg.get("flavors", []):
                        if not has("ResourceFlavor", f.get("name")):
                            problems.append("ClusterQueue %s: no ResourceFlavor %s" % (n, f.get("name")))
                checks = [c.get("name") for c in get(d, "spec", "admissionChecksStrategy", "admissionChecks",
                                                     default=[])]
                if not any(get(find(manager, "AdmissionCheck", c), "spec", "controllerName") == controller
                           for c in checks):
                    problems.append("ClusterQueue %s: no admission check with controllerName %s" % (n, controller))
                if get(d, "spec", "namespaceSelector") is None:
                    problems.append("ClusterQueue %s: a missing namespaceSelector matches no namespace" % n)
            if k == "AdmissionCheck":
                p = get(d, "spec", "parameters", default={})
                if not has(p.get("kind"), p.get("name")):
                    problems.append("AdmissionCheck %s: no %s %s" % (n, p.get("kind"), p.get("name")))
            if k == "MultiKueueConfig":
                for c in get(d, "spec", "clusters", default=[]):
                    if not has("MultiKueueCluster", c):
                        problems.append("MultiKueueConfig %s: no MultiKueueCluster %s" % (n, c))
            if k in ("PipelineRun", "Workflow"):
                q = get(d, "metadata", "labels", "kueue.x-k8s.io/queue-name")
                if not has("LocalQueue", q, ns):
                    problems.append("%s %s/%s: no LocalQueue %r in its namespace" % (k, ns, n, q))
                if k not in kinds:
                    problems.append("%s is not a configured external framework" % k)
                if get(d, "spec", "managedBy") or \
                        "workflows.argoproj.io/controller-instanceid" in (get(d, "metadata", "labels") or {}):
                    problems.append("%s %s/%s sets the managedBy marker itself: the demo shows the webhook "
                                    "defaulting it" % (k, ns, n))
        # The single cluster: queues and flavors among its own objects, every job on a LocalQueue
        # there and of a kind its adapter-config.yaml integrates.
        integrated = {f["name"].split(".")[0] for f in get(single_cfg, "integrations", "frameworks", default=[])}
        for d in single:
            k, n, ns = d.get("kind"), get(d, "metadata", "name"), get(d, "metadata", "namespace")
            if k == "LocalQueue" and find(single, "ClusterQueue", get(d, "spec", "clusterQueue")) is None:
                problems.append("single-cluster: LocalQueue %s/%s: no ClusterQueue %s" % (ns, n,
                                                                                         get(d, "spec", "clusterQueue")))
            if k == "ClusterQueue":
                for rg in get(d, "spec", "resourceGroups", default=[]):
                    for f in rg.get("flavors", []):
                        if find(single, "ResourceFlavor", f.get("name")) is None:
                            problems.append("single-cluster: ClusterQueue %s: no ResourceFlavor %s" % (n, f.get("name")))
            if get(d, "metadata", "labels", "kueue.x-k8s.io/queue-name"):
                q = get(d, "metadata", "labels", "kueue.x-k8s.io/queue-name")
                if find(single, "LocalQueue", q, ns) is None:
                    problems.append("single-cluster: %s %s/%s: no LocalQueue %r in its namespace" % (k, ns, n, q))
                if k not in integrated:
                    problems.append("single-cluster: %s is not integrated by adapter-config.yaml" % k)
                if (d.get("spec") or {}).get("suspend") is not None:
                    problems.append("single-cluster: %s %s/%s sets spec.suspend itself: the demo shows the webhook "
                                    "defaulting it" % (k, ns, n))
        if not single or not integrated:
            problems.append("single-cluster: no objects or no integrated kinds (samples/single-cluster)")
        jobs = [d for d in objs if d.get("kind") in ("PipelineRun", "Workflow")]
        for k in ("PipelineRun", "Workflow"):
            if sum(1 for d in jobs if d.get("kind") == k) < 2:
                problems.append("want at least 2 sample %ss" % k)
        return problems
    return fn


run("objects: every base object is rendered once; namespace enforces restricted PSS", check_objects)
run("webhooks: mutating /mutate on CREATE of tekton.dev/v1 pipelineruns and argoproj.io/v1alpha1 workflows",
    check_mutating)
run("webhooks: validating /validate (CREATE, UPDATE of the job kinds) and /validate-config (configmaps)",
    check_validating)
run("webhooks: sideEffects None on every webhook", check_each("sideEffects", "None"))
run("webhooks: failurePolicy Fail on every webhook", check_each("failurePolicy", "Fail"))
run("webhooks: timeoutSeconds 3 on every webhook", check_each("timeoutSeconds", 3))
run("webhooks: admissionReviewVersions [v1], matchPolicy Equivalent, qualified names", check_common)
run("webhooks: job webhooks' namespaceSelector excludes kube-system, kueue-system, " + NS, check_job_namespaces)
run("webhooks: job webhooks see only jobs with Kueue's labels (unlabelled ones where the namespace opts in)",
    check_job_selectors)
run("webhooks: /validate-config selects labelled ConfigMaps, excludes kube-system but not " + NS,
    check_config_webhook)
run("webhooks: clientConfig -> Service %s:443 -> container port 9443, no caBundle" % WEBHOOK_SVC,
    check_client_config)
run("deployment: replicas, image, args, ports, resources, service account", check_deployment_basics)
run("deployment: runAsNonRoot, runAsUser 65532, readOnlyRootFilesystem, no privilege escalation, drop ALL, "
    "seccomp RuntimeDefault", check_security_context)
run("deployment: liveness /healthz and readiness /readyz on 8081", check_probes)
run("deployment: config ConfigMap, serving-cert Secret at the cert dir, emptyDir at /tmp", check_volumes)
run("deployment: pod anti-affinity across nodes, PodDisruptionBudget minAvailable 1", check_availability)
run("config: ConfigMap holds the SPEC §3 AdapterConfiguration matching the Deployment", check_config)
run("rbac: no wildcards, secrets read-only in kueue-system, leases in " + NS, check_rbac_least_privilege)
run("rbac: grants what the webhooks and the dispatcher need", check_rbac_needs)
run("worker: dispatch off, no multiKueue section, the integration for Workflows and PipelineRuns",
    check_worker_config)
run("worker: no Secrets or MultiKueue objects; grants what the job integration needs", check_worker_rbac)
run("cert-manager: self-signed Issuer and Certificate for the webhook Service into " + CERT_SECRET,
    check_cert_manager_certificate)
run("cert-manager: %s on both webhook configurations" % INJECT, check_cert_manager_injection)
run("cert-manager: the overlay changes nothing else in the base", check_cert_manager_same_base)

load_crds()
if not crds:
    print("NOTE\tno CRD folder found (set MKA_CRD_DIR): samples are checked without their CRD schemas")
# adapter-config.yaml is a file for --config, not an object to apply (validate-config checks it).
single_cfg_path = os.path.join(samples_dir, "single-cluster", "adapter-config.yaml")
single_cfg = yaml.safe_load(open(single_cfg_path)) if os.path.exists(single_cfg_path) else {}
samples = {}
for p in sorted(glob.glob(os.path.join(samples_dir, "**", "*.yaml"), recursive=True)):
    rel = os.path.relpath(p, os.path.dirname(samples_dir))
    if p == single_cfg_path:
        continue
    try:
        samples["/" + rel] = load_all(p)
    except yaml.YAMLError as e:
        samples["/" + rel] = []
        run("samples: %s parses" % rel, lambda e=e: [str(e)])
        continue
# A sample's own CRDs (the single cluster's in-house kind) check the objects of that kind.
if crds:
    for docs in samples.values():
        for d in docs:
            if d.get("kind") == "CustomResourceDefinition":
                crds[(get(d, "spec", "group"), get(d, "spec", "names", "kind"))] = d
for rel, docs in samples.items():
    run("samples: %s%s" % (rel.lstrip("/"), " matches its CRD schema" if crds else " is well-formed"),
        check_sample(rel, docs))
run("samples: queues, flavors, admission check, MultiKueue config and clusters reference each other",
    check_sample_references(samples))
PY

"$PYTHON" "$work/check.py" "$work/base.yaml" "$work/cert-manager.yaml" "$MANIFESTS/samples" \
  "$MKA_CRD_DIR" "$work/config.yaml" "$work/worker.yaml" "$work/worker-config.yaml" >"$work/results" \
  2>"$work/py.err" || {
  fail "checker ran to the end: $(tail -n 5 "$work/py.err")"
}
while IFS=$'\t' read -r status message; do
  case "$status" in
    PASS) pass "$message" ;;
    FAIL) fail "$message" ;;
    *) echo "        $message" ;;
  esac
done <"$work/results"

MKA_BINARY="${MKA_BINARY:-${MKA_BIN:-}}"
if [ -n "$MKA_BINARY" ]; then
  out="config.yaml was not extracted from the ConfigMap"
  if [ ! -x "$MKA_BINARY" ]; then
    fail "config: MKA_BINARY=$MKA_BINARY is not an executable"
  elif [ -s "$work/config.yaml" ] && out="$("$MKA_BINARY" validate-config "$work/config.yaml" 2>&1)"; then
    pass "config: multikueue-adapter validate-config accepts the ConfigMap's config.yaml"
  else
    fail "config: multikueue-adapter validate-config rejects the ConfigMap's config.yaml: $out"
  fi
  if [ -s "$work/worker-config.yaml" ] && out="$("$MKA_BINARY" validate-config "$work/worker-config.yaml" 2>&1)"; then
    pass "worker: multikueue-adapter validate-config accepts the worker overlay's config.yaml"
  else
    fail "worker: multikueue-adapter validate-config rejects the worker overlay's config.yaml: $out"
  fi
  single="$MANIFESTS/samples/single-cluster/adapter-config.yaml"
  if out="$("$MKA_BINARY" validate-config "$single" 2>&1)"; then
    pass "single-cluster: multikueue-adapter validate-config accepts samples/single-cluster/adapter-config.yaml"
  else
    fail "single-cluster: multikueue-adapter validate-config rejects samples/single-cluster/adapter-config.yaml: $out"
  fi
fi

finish
