#!/usr/bin/env bash
# The sandbox held to kube-apiserver v1.32 through the official Kubernetes Python client
# (Debian's python3-kubernetes, importable by /usr/bin/python3 only): CRD schema and CEL
# validation messages, typed decoding of built-in kinds, generation, old resourceVersions,
# preconditions, metadata validation, stringData, deletecollection, bookmarks and server-side
# apply. The checks and their expected answers are in python_client_fidelity.py.
# Prints "python-client-fidelity: N passed, N failed, N known divergences"; exits non-zero on any
# failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MKA_BINARY:-$root/build/multikueue-adapter}
# The checked-in copies, so that the test reads the same CRDs wherever the checkout is.
crds=$root/test/fixtures/crds
python=/usr/bin/python3
work=$(mktemp -d)
. "$root/test/integration/lib/common.sh"
trap cleanup_background EXIT
known=0
finish() {  # finish: prints the final line and exits with the verdict
  echo "python-client-fidelity: $passed passed, $failed failed, $known known divergences"
  [ "$failed" -eq 0 ]
  exit
}
fail() { echo "FAIL $*"; failed=$((failed + 1)); finish; }

"$bin" sandbox --help >/dev/null 2>&1 || fail "$bin is missing or does not run"
"$python" -c 'import kubernetes' 2>/dev/null || fail "$python cannot import kubernetes (apt-get install python3-kubernetes)"

# A window of 50 events: the 410 check writes more than that.
start_sandbox manager --no-crds --watch-history 50 || fail "sandbox start"
export KUBECONFIG=$work/kube/manager.kubeconfig
for f in kueue.x-k8s.io_workloads.yaml kueue.x-k8s.io_clusterqueues.yaml cel/argoproj.io_workflows.full.yaml; do
  kubectl --request-timeout=30s apply --server-side --force-conflicts -f "$crds/$f" >"$work/apply.out" 2>&1 ||
    { cat "$work/apply.out"; fail "kubectl apply --server-side $f"; }
done
kubectl --request-timeout=30s wait --for=condition=Established --timeout=30s \
  crd/workloads.kueue.x-k8s.io crd/clusterqueues.kueue.x-k8s.io crd/workflows.argoproj.io >"$work/wait.out" 2>&1 ||
  { cat "$work/wait.out"; fail "the CRDs are not Established"; }

"$python" "$root/test/integration/python_client_fidelity.py" "$KUBECONFIG" "$work/summary"
status=$?
if [ -s "$work/summary" ]; then
  read -r passed failed known <"$work/summary"
  [ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
else
  echo "FAIL python_client_fidelity.py stopped before its summary (exit $status)"
  failed=$((failed + 1))
fi
if [ "$failed" -ne 0 ]; then echo "sandbox log (last 20 lines):"; tail -20 "$work/sandbox.log" | sed 's/^/     /'; fi
finish
