# Sourced by the integration scripts in test/integration/ (not run by itself). The caller sets
# $work (a scratch directory) and $bin (the binary) first.

passed=0; failed=0
pids=()  # background processes, stopped by cleanup_background

# The EXIT trap of scripts that start background processes: stops them and removes $work
# (kept, and named, with MKA_KEEP_WORK=1).
cleanup_background() {
  [ "${MKA_KEEP_WORK:-0}" = 1 ] && echo "work dir kept: $work"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ "${MKA_KEEP_WORK:-0}" = 1 ] || rm -rf "$work"
}

await() {  # await SECONDS COMMAND...: polls until the command succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.1
  done
}

# start_sandbox CLUSTER [ARGS...]: `$bin sandbox` serving CLUSTER in the background, its
# kubeconfig in $work/kube/CLUSTER.kubeconfig, logging to $work/sandbox.log; fails with the log
# when the kubeconfig does not appear.
start_sandbox() {
  local cluster=$1; shift
  "$bin" sandbox --dir "$work/kube" --clusters "$cluster" "$@" >"$work/sandbox.log" 2>&1 &
  pids+=($!)
  if ! await 60 test -s "$work/kube/$cluster.kubeconfig"; then
    echo "the sandbox did not start:"; cat "$work/sandbox.log"; return 1
  fi
}

check() {  # check NAME COMMAND...: runs the command, counts the result
  local name=$1; shift
  if "$@" >"$work/check.out" 2>&1; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; sed 's/^/     /' "$work/check.out" | head -20; fi
}

# start_serve CONFIG CERT_DIR: starts `serve` in the background on ports the kernel picks, logging
# to $work/serve.log; sets pid, webhook, probes and metrics, or exits when it does not start.
start_serve() {
  "$bin" serve --config "$1" --cert-dir "$2" \
    --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    --metrics-bind-address 127.0.0.1:0 >"$work/serve.log" 2>&1 &
  pid=$!
  # The ports are chosen by the kernel; the start-up log line names them.
  for _ in $(seq 1 300); do
    grep -q 'webhookPort=' "$work/serve.log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  webhook=$(grep -o 'webhookPort=[0-9]*' "$work/serve.log" | head -1 | cut -d= -f2)
  probes=$(grep -o 'probePort=[0-9]*' "$work/serve.log" | head -1 | cut -d= -f2)
  metrics=$(grep -o 'metricsPort=[0-9]*' "$work/serve.log" | head -1 | cut -d= -f2)
  if [ -z "$webhook" ]; then echo "serve did not start:"; cat "$work/serve.log"; exit 1; fi
}
