#!/usr/bin/env bash
# The sandbox held to the real kubectl (/usr/bin/kubectl): `multikueue-adapter sandbox` serves a
# cluster, kubectl applies the upstream CRDs and real PipelineRun/Workflow manifests, reads,
# patches (merge, status subresource, server-side apply on a Workload status list-map), watches,
# deletes through a finalizer, selects by label, gets 409 on a stale update, and has our own
# `serve` default spec.managedBy as a mutating webhook.
# Prints "kubectl-conformance: N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MKA_BINARY:-$root/build/multikueue-adapter}
crds=$root/../shared/crds
[ -d "$crds" ] || crds=$root/test/fixtures/crds
work=$(mktemp -d)
. "$root/test/integration/lib/common.sh"
trap cleanup_background EXIT

start_sandbox manager || exit 1
export KUBECONFIG=$work/kube/manager.kubeconfig
k() { kubectl --request-timeout=30s "$@"; }
ns=conformance

# CRDs, namespace, real manifests.
check "kubectl version reaches the sandbox" k version -o json
check "apply --server-side the upstream CRDs" \
  bash -c "for f in '$crds'/kueue.x-k8s.io_workloads.yaml '$crds'/tekton.dev_pipelineruns.yaml '$crds'/argoproj.io_workflows*.yaml; do
    kubectl apply --server-side --force-conflicts -f \"\$f\" || exit 1; done"
check "the CRDs are Established" k wait --for=condition=Established --timeout=30s \
  crd/workloads.kueue.x-k8s.io crd/pipelineruns.tekton.dev crd/workflows.argoproj.io
check "api-resources lists pipelineruns with short names" bash -c "kubectl api-resources --api-group=tekton.dev | grep -E '^pipelineruns +pr,prs +tekton.dev/v1 +true +PipelineRun'"
check "create a namespace" k create namespace $ns
check "apply a real PipelineRun" bash -c "sed 's/^  namespace: default\$/  namespace: $ns/' '$root/manifests/samples/jobs/pipelinerun-hello.yaml' | kubectl apply -f -"
check "apply a real Workflow" bash -c "sed 's/^  namespace: default\$/  namespace: $ns/' '$root/manifests/samples/jobs/workflow-hello.yaml' | kubectl apply -f -"
k -n $ns get pipelinerun hello-pipeline -o json >"$work/pr.json" 2>&1
check "get -o json returns the stored object" jq -e '.metadata.uid != null and .metadata.generation == 1 and
  .spec.pipelineSpec.tasks[0].name == "say-hello" and (.metadata.resourceVersion | tonumber > 0)' "$work/pr.json"
check "kubectl get prints the PipelineRun by its short name" bash -c "kubectl -n $ns get pr | grep -q hello-pipeline"
check "kubectl get workflows" bash -c "kubectl -n $ns get workflows.argoproj.io -o name | grep -qx workflow.argoproj.io/hello-world"

# Patches.
check "patch --type merge changes spec and bumps generation" bash -c "
  kubectl -n $ns patch pipelinerun hello-pipeline --type merge -p '{\"spec\":{\"timeouts\":{\"pipeline\":\"2h\"}}}' -o json |
  jq -e '.spec.timeouts.pipeline == \"2h\" and .metadata.generation == 2'"
check "patch --subresource=status writes status only" bash -c "
  kubectl -n $ns patch pipelinerun hello-pipeline --subresource=status --type merge \
    -p '{\"status\":{\"startTime\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"status\":\"Cancelled\"}}' -o json |
  jq -e '.status.startTime == \"2026-01-01T00:00:00Z\" and (.spec.status == null) and .metadata.generation == 2'"
check "a merge patch on the main resource ignores status" bash -c "
  kubectl -n $ns patch pipelinerun hello-pipeline --type merge -p '{\"status\":{\"startTime\":\"2000-01-01T00:00:00Z\"}}' -o json |
  jq -e '.status.startTime == \"2026-01-01T00:00:00Z\"'"

cat >"$work/workload.yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: job-hello
  namespace: $ns
spec:
  queueName: user-queue
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: c
          image: busybox
EOF
check "apply --server-side a Workload" k apply --server-side --field-manager=kueue -f "$work/workload.yaml"
for check_name in multikueue provisioning; do
  cat >"$work/status-$check_name.yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: job-hello
  namespace: $ns
status:
  admissionChecks:
  - name: $check_name
    state: Pending
    message: ""
    lastTransitionTime: "2026-01-01T00:00:00Z"
EOF
  check "apply --server-side --subresource=status by manager $check_name" \
    k apply --server-side --subresource=status --field-manager="$check_name" -f "$work/status-$check_name.yaml"
done
check "the status list-map keeps both managers' entries, keyed by name" bash -c "
  kubectl -n $ns get workload job-hello -o json |
  jq -e '[.status.admissionChecks[].name] == [\"multikueue\",\"provisioning\"] and .spec.queueName == \"user-queue\"'"
sed 's/state: Pending/state: Ready/' "$work/status-multikueue.yaml" >"$work/status-ready.yaml"
check "re-applying one entry changes only that entry" bash -c "
  kubectl apply --server-side --subresource=status --field-manager=multikueue -f '$work/status-ready.yaml' >/dev/null &&
  kubectl -n $ns get workload job-hello -o json |
  jq -e '[.status.admissionChecks[] | .name + \"=\" + .state] == [\"multikueue=Ready\",\"provisioning=Pending\"]'"

# Watch while modifying.
k -n $ns get pipelineruns -w --output-watch-events -o json >"$work/watch.json" 2>"$work/watch.err" &
watch_pid=$!
pids+=($watch_pid)
await 30 grep -q '"ADDED"' "$work/watch.json"
k -n $ns label pipelinerun hello-pipeline watched=yes >/dev/null
k -n $ns delete workflow.argoproj.io hello-world >/dev/null
check "get -w --output-watch-events shows ADDED then MODIFIED" \
  await 30 bash -c "jq -s -e 'map(.type) | index(\"ADDED\") != null and index(\"MODIFIED\") != null' '$work/watch.json'"
check "the MODIFIED event carries the new label" \
  jq -s -e 'map(select(.type == "MODIFIED")) | last | .object.metadata.labels.watched == "yes"' "$work/watch.json"
kill $watch_pid 2>/dev/null

# Finalizers.
check "create an object with a finalizer" bash -c "sed -e 's/^  name: hello-pipeline\$/  name: held/' -e 's/^  labels:\$/  finalizers: [example.com\/hold]\n  labels:/' \
  -e 's/^  namespace: default\$/  namespace: $ns/' '$root/manifests/samples/jobs/pipelinerun-hello.yaml' | kubectl create -f -"
check "delete --wait=false leaves it with a deletionTimestamp" bash -c "
  kubectl -n $ns delete pipelinerun held --wait=false &&
  kubectl -n $ns get pipelinerun held -o json | jq -e '.metadata.deletionTimestamp != null'"
check "removing the finalizer lets it go" bash -c "
  kubectl -n $ns patch pipelinerun held --type json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]' &&
  ! kubectl -n $ns get pipelinerun held 2>/dev/null"

# Label selectors.
for n in a b c; do
  sed -e "s/^  name: hello-pipeline\$/  name: sel-$n/" -e "s/^  namespace: default\$/  namespace: $ns/" \
    "$root/manifests/samples/jobs/pipelinerun-hello.yaml" | k create -f - >/dev/null
done
k -n $ns label pr sel-a sel-c team=blue >/dev/null
k -n $ns label pr sel-b team=red >/dev/null
check "-l team=blue selects two" bash -c "[ \"\$(kubectl -n $ns get pr -l team=blue -o name | sort | tr '\n' ' ')\" = 'pipelinerun.tekton.dev/sel-a pipelinerun.tekton.dev/sel-c ' ]"
check "-l 'team in (red)' selects one" bash -c "[ \"\$(kubectl -n $ns get pr -l 'team in (red)' -o name)\" = 'pipelinerun.tekton.dev/sel-b' ]"
check "-l '!team' selects the unlabelled" bash -c "kubectl -n $ns get pr -l '!team' -o name | grep -qx pipelinerun.tekton.dev/hello-pipeline"
check "--field-selector metadata.name" bash -c "[ \"\$(kubectl -n $ns get pr --field-selector metadata.name=sel-b -o name)\" = 'pipelinerun.tekton.dev/sel-b' ]"

# Optimistic concurrency.
k -n $ns get pr sel-a -o json >"$work/stale.json"
k -n $ns label pr sel-a touched=yes >/dev/null
check "replace with a stale resourceVersion is a 409 Conflict" bash -c "
  ! kubectl replace -f '$work/stale.json' 2>'$work/conflict.err' &&
  grep -q 'the object has been modified; please apply your changes to the latest version and try again' '$work/conflict.err'"
check "an unknown resource is NotFound" bash -c "kubectl get frobnicators 2>&1 | grep -q \"the server doesn't have a resource type\""

# Our own webhook, called by the sandbox as kube-apiserver would.
"$root/certs/gen-dev-certs.sh" --out "$work/certs" >/dev/null || { echo "gen-dev-certs.sh failed"; exit 1; }
"$bin" serve --config "$root/examples/dev-config.yaml" --cert-dir "$work/certs" \
  --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
  --metrics-bind-address 127.0.0.1:0 >"$work/serve.log" 2>&1 &
pids+=($!)
await 60 grep -q 'webhookPort=' "$work/serve.log" || { echo "serve did not start:"; cat "$work/serve.log"; exit 1; }
port=$(grep -o 'webhookPort=[0-9]*' "$work/serve.log" | head -1 | cut -d= -f2)
cat >"$work/webhook.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: multikueue-adapter
webhooks:
- name: mutate.multikueue-adapter.dev
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 10
  clientConfig:
    url: https://localhost:$port/mutate
    caBundle: $(base64 -w0 <"$work/certs/ca.crt")
  rules:
  - apiGroups: ["tekton.dev"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["pipelineruns"]
EOF
check "register our webhook" k apply -f "$work/webhook.yaml"
check "kubectl create of a queued PipelineRun gets spec.managedBy from our webhook" bash -c "
  sed -e 's/^  name: hello-pipeline\$/  name: via-webhook/' -e 's/^  namespace: default\$/  namespace: $ns/' \
    '$root/manifests/samples/jobs/pipelinerun-hello.yaml' | kubectl create -f - -o json |
  jq -e '.spec.managedBy == \"kueue.x-k8s.io/multikueue\"'"
check "an unqueued PipelineRun is left alone" bash -c "
  sed -e 's/^  name: hello-pipeline\$/  name: unqueued/' -e 's/^  namespace: default\$/  namespace: $ns/' \
    -e '/kueue.x-k8s.io\/queue-name/d' -e '/^  labels:\$/d' \
    '$root/manifests/samples/jobs/pipelinerun-hello.yaml' | kubectl create -f - -o json |
  jq -e '.spec.managedBy == null'"

# MultiKueueQueues: a second `serve` follows the sandbox's LocalQueues, ClusterQueues and
# AdmissionChecks through informers; kubectl creates all three.
sed 's/^managedByDefaulting: QueueLabeled$/managedByDefaulting: MultiKueueQueues/' "$root/examples/dev-config.yaml" >"$work/mkq.yaml"
"$bin" serve --config "$work/mkq.yaml" --kubeconfig "$KUBECONFIG" --cert-dir "$work/certs" \
  --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
  --metrics-bind-address 127.0.0.1:0 >"$work/serve-mkq.log" 2>&1 &
pids+=($!)
await 60 grep -q 'webhookPort=' "$work/serve-mkq.log" || { echo "serve (MultiKueueQueues) did not start:"; cat "$work/serve-mkq.log"; exit 1; }
port2=$(grep -o 'webhookPort=[0-9]*' "$work/serve-mkq.log" | head -1 | cut -d= -f2)
probes2=$(grep -o 'probePort=[0-9]*' "$work/serve-mkq.log" | head -1 | cut -d= -f2)
check "/readyz turns 200 once the queue caches are synced" await 60 curl -sf "http://127.0.0.1:$probes2/readyz"
# The plain queue first: once the MultiKueue one is seen, the informers have seen it too.
cat >"$work/plain-queue.yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: plain
spec:
  namespaceSelector: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: plain-queue
  namespace: $ns
spec:
  clusterQueue: plain
EOF
check "kubectl apply a LocalQueue and ClusterQueue without admission checks" k apply -f "$work/plain-queue.yaml"
check "kubectl apply the sample AdmissionCheck, ClusterQueue and LocalQueue" k apply \
  -f "$root/manifests/samples/kueue/10-admission-check.yaml" -f "$root/manifests/samples/kueue/40-cluster-queue.yaml" \
  -f "$root/manifests/samples/kueue/50-local-queue.yaml"
sed "s/localhost:$port/localhost:$port2/" "$work/webhook.yaml" >"$work/webhook-mkq.yaml"
check "point the webhook at the MultiKueueQueues instance" k apply -f "$work/webhook-mkq.yaml"
sed -e 's/^  name: hello-pipeline$/  name: mk-queued/' "$root/manifests/samples/jobs/pipelinerun-hello.yaml" >"$work/mk-queued.yaml"
check "a PipelineRun in a MultiKueue-backed queue is defaulted (server dry run until the index has it)" \
  await 30 bash -c "kubectl create --dry-run=server -f '$work/mk-queued.yaml' -o json | jq -e '.spec.managedBy == \"kueue.x-k8s.io/multikueue\"'"
check "kubectl create stores it with spec.managedBy" bash -c "
  kubectl create -f '$work/mk-queued.yaml' -o json | jq -e '.spec.managedBy == \"kueue.x-k8s.io/multikueue\"'"
check "a PipelineRun in a queue without a MultiKueue check is left alone" bash -c "
  sed -e 's/^  name: hello-pipeline\$/  name: plain-queued/' -e 's/^  namespace: default\$/  namespace: $ns/' \
    -e 's/queue-name: user-queue/queue-name: plain-queue/' '$root/manifests/samples/jobs/pipelinerun-hello.yaml' |
  kubectl create -f - -o json | jq -e '.spec.managedBy == null'"

echo "kubectl-conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
