# Sourced by the integration scripts in test/integration/ (not run by itself). The caller sets
# $work (a scratch directory) and $bin (the binary) first.

passed=0; failed=0
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
