#!/usr/bin/env bash
# End to end over real TLS with curl, as kube-apiserver would call us: dev CA from certs/,
# `serve` with the QueueLabeled policy, /mutate for a queued PipelineRun, webhook-only mode
# refusing a Workflow,
# /validate denial, bad input, probes, metrics, validate-config, and SIGTERM drain.
# Prints "webhook-curl: N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MKA_BINARY:-$root/build/multikueue-adapter}
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

. "$root/test/integration/lib/common.sh"

"$root/certs/gen-dev-certs.sh" --out "$work/certs" >/dev/null || { echo "gen-dev-certs.sh failed"; exit 1; }
cp "$root/examples/dev-config.yaml" "$work/config.yaml"

start_serve "$work/config.yaml" "$work/certs"

ready() { curl -sf "http://127.0.0.1:$probes/readyz" >/dev/null; }
for _ in $(seq 1 100); do ready && break; sleep 0.1; done

url="https://localhost:$webhook"
review() {  # review PATH FILE: posts an AdmissionReview, prints the response
  curl -s --cacert "$work/certs/ca.crt" -H 'Content-Type: application/json' --data-binary @"$2" "$url$1"
}
patch_of() { jq -r '.response.patch' | base64 -d; }

check "readyz is ok once the certificate is loaded" ready

review /mutate "$root/examples/pipelinerun-review.json" >"$work/pr.json"
check "mutate echoes uid and apiVersion" \
  jq -e '.apiVersion == "admission.k8s.io/v1" and .response.uid == "705ab4f5-6393-11e8-b7cc-42010a800002" and .response.allowed' "$work/pr.json"
check "mutate answers JSONPatch for a queued PipelineRun" jq -e '.response.patchType == "JSONPatch"' "$work/pr.json"
check "the patch sets spec.managedBy" bash -c "jq -r .response.patch '$work/pr.json' | base64 -d | \
  jq -e '. == [{\"op\":\"add\",\"path\":\"/spec/managedBy\",\"value\":\"kueue.x-k8s.io/multikueue\"}]'"

# Webhook-only mode cannot serve Argo's Workflow: Kueue's own MultiKueue reads spec.managedBy only.
cp "$root/examples/dev-config.yaml" "$work/with-workflow.yaml"
printf '  - name: Workflow.v1alpha1.argoproj.io\n' >>"$work/with-workflow.yaml"
check "validate-config refuses a Workflow in webhook-only mode, naming the entry and the fix" bash -c \
  "! '$bin' validate-config '$work/with-workflow.yaml' >'$work/wf.out' 2>&1 &&
   grep -q 'multiKueue.externalFrameworks\[1\].name' '$work/wf.out' && grep -q 'set dispatch.enabled: true' '$work/wf.out'"

jq 'del(.request.object.metadata.labels)' "$root/examples/pipelinerun-review.json" >"$work/unqueued.json"
review /mutate "$work/unqueued.json" >"$work/unq.json"
check "an unqueued PipelineRun is allowed without a patch" jq -e '.response.allowed and (.response | has("patch") | not) and (.response | has("patchType") | not)' "$work/unq.json"

jq '.request.operation = "UPDATE" | .request.oldObject = .request.object
    | .request.oldObject.spec.managedBy = "kueue.x-k8s.io/multikueue"
    | .request.object.spec.managedBy = "tekton.dev/pipeline"' "$root/examples/pipelinerun-review.json" >"$work/update.json"
review /validate "$work/update.json" >"$work/upd.json"
check "validate denies a managedBy change with 403 and the field path" \
  jq -e '(.response.allowed | not) and .response.status.code == 403 and (.response.status.message | startswith("tekton-ci/build-42: spec.managedBy: "))' "$work/upd.json"

code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" -H 'Content-Type: application/json' --data 'not json' "$url/mutate")
check "malformed JSON gets 400" test "$code" = 400
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" "$url/mutate")
check "GET gets 405" test "$code" = 405
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" -H 'Content-Type: application/json' --data '{}' "$url/nope")
check "an unknown path gets 404" test "$code" = 404
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" -H 'Content-Type: text/plain' --data '{}' "$url/mutate")
check "a wrong content type gets 415" test "$code" = 415
head -c $((3 * 1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$work/big.json"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" -H 'Content-Type: application/json' --data-binary @"$work/big.json" "$url/mutate")
check "a body over 3 MiB gets 413" test "$code" = 413
check "TLS 1.1 is refused" bash -c "! curl -s --tls-max 1.1 --cacert '$work/certs/ca.crt' -H 'Content-Type: application/json' --data '{}' '$url/mutate'"

check "healthz is ok" curl -sf "http://127.0.0.1:$probes/healthz"
check "metrics count the mutate requests" bash -c "curl -s 'http://127.0.0.1:$metrics/metrics' | \
  grep -E '^multikueue_adapter_webhook_requests_total\\{.*webhook=\"mutate\"' | grep -q 'result=\"patched\"'"

cat >"$work/five.yaml" <<'YAML'
apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
managedByDefaulting: Sometimes
multiKueue:
  externalFrameworks:
  - name: PipelineRun..tekton.dev
  - name: pipelinerun.v1.tekton.dev
  gcInterval: -1m
  origin: "not a label value!"
YAML
"$bin" validate-config "$work/five.yaml" >"$work/five.out" 2>&1; rc=$?
check "validate-config exits 1 on a bad file" test "$rc" = 1
check "validate-config prints five errors with field paths" test "$(grep -c -E '^(managedByDefaulting|multiKueue\.)[^ ]*: ' "$work/five.out")" = 5
check "validate-config accepts the example file" "$bin" validate-config "$root/examples/dev-config.yaml"

kill -TERM "$pid"; wait "$pid"; rc=$?; pid=""
check "SIGTERM exits 0" test "$rc" = 0
check "shutdown is logged" grep -q 'shutdown complete' "$work/serve.log"

echo "webhook-curl: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
