#!/usr/bin/env bash
# `multikueue-adapter serve` (webhook-only, examples/dev-config.yaml) against the Go peer
# (../shared/peers/go-webhook), as the issue measured them: wrk over TLS keep-alive posting the
# same 2.5 KB PipelineRun AdmissionReview to /mutate, rounds alternating between the two, both
# servers up for the whole run with the same certificate. Prints per round req/s, p99 and the
# server's CPU per request (from /proc/<pid>/stat), the ratios, and serve's peak RSS (VmHWM).
# Figures only: never fails on speed. See bench/README.md.
#
# Usage: bench/webhook/serve_wrk.sh [BINARY]   (default build-bench/multikueue-adapter)
#   ROUNDS=3 DURATION=10 CONNECTIONS=32 THREADS=2 GO_PEER=../shared/peers/go-webhook
#   SERVE_ARGS="--webhook-event-loops 2"   (more flags for serve)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build-bench/multikueue-adapter}
rounds=${ROUNDS:-3}
duration=${DURATION:-10}
connections=${CONNECTIONS:-32}
threads=${THREADS:-2}
go_peer=${GO_PEER:-$root/../shared/peers/go-webhook}
fixture=$root/test/fixtures/admission/pipelinerun-create-2.5k.json
for tool in wrk jq go; do
  command -v "$tool" >/dev/null || { echo "serve_wrk: needs $tool (apt-get install wrk jq golang-go)"; exit 2; }
done
[ -x "$bin" ] || { echo "serve_wrk: no binary at $bin (ninja -C build-bench multikueue-adapter)"; exit 2; }

work=$(mktemp -d)
serve_pid="" go_pid=""
cleanup() {
  for p in $serve_pid $go_pid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$root/certs/gen-dev-certs.sh" --out "$work/certs" >/dev/null
(cd "$go_peer" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$work/go-webhook" .)

"$bin" serve --config "$root/examples/dev-config.yaml" --cert-dir "$work/certs" \
  --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
  --metrics-bind-address 127.0.0.1:0 ${SERVE_ARGS:-} >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do grep -q 'webhookPort=' "$work/serve.log" && break; sleep 0.1; done
serve_port=$(grep -o 'webhookPort=[0-9]*' "$work/serve.log" | head -1 | cut -d= -f2)
[ -n "$serve_port" ] || { echo "serve did not start:"; cat "$work/serve.log"; exit 1; }

go_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/go-webhook" -addr "127.0.0.1:$go_port" -cert "$work/certs/tls.crt" -key "$work/certs/tls.key" \
  >"$work/go.log" 2>&1 &
go_pid=$!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$go_port") 2>/dev/null && break; sleep 0.1; done

# The body as kube-apiserver sends it: compact JSON.
jq -c . "$fixture" >"$work/body.json"
cat >"$work/post.lua" <<EOF
local f = io.open("$work/body.json", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
EOF

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# run NAME PID PORT: one wrk run; prints "name req/s p99 us/request"
run() {
  local before after out rps p99 requests
  before=$(cpu_ticks "$2")
  out=$(wrk -t"$threads" -c"$connections" -d"${duration}s" --latency -s "$work/post.lua" "https://localhost:$3/mutate")
  after=$(cpu_ticks "$2")
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  awk -v n="$1" -v r="$rps" -v p="$p99" -v c="$((after - before))" -v q="$requests" -v hz="$hz" \
    'BEGIN { printf "%-6s %10.0f req/s  p99 %8s  server CPU %6.1f us/request\n", n, r, p, c / hz / q * 1e6 }'
  if grep -q "Non-2xx\|Socket errors" <<<"$out"; then echo "  !! $1: $(grep 'Non-2xx\|Socket errors' <<<"$out")"; fi
}

echo "serve_wrk $(date -u +%Y-%m-%dT%H:%MZ): wrk -t$threads -c$connections -d${duration}s, $(wc -c <"$work/body.json")-byte review, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "serve: $bin ${SERVE_ARGS:+$SERVE_ARGS }(pid $serve_pid, port $serve_port, $(grep -a 'server=webhook' "$work/serve.log" | grep -ao 'threads=[0-9]*' | head -1) event loops); go peer: $go_peer (pid $go_pid, port $go_port)"
# One short warm-up each: TLS session set-up, first allocations, Go's GC sizing.
wrk -t1 -c4 -d1s -s "$work/post.lua" "https://localhost:$serve_port/mutate" >/dev/null
wrk -t1 -c4 -d1s -s "$work/post.lua" "https://localhost:$go_port/mutate" >/dev/null
[ -n "${PERF_OUT:-}" ] && { perf record -F 999 -g -p "$serve_pid" -o "$PERF_OUT" -- sleep "$duration" >/dev/null 2>&1 & }
for round in $(seq 1 "$rounds"); do
  ours=$(run serve "$serve_pid" "$serve_port")
  theirs=$(run go "$go_pid" "$go_port")
  echo "round $round: $ours"
  echo "round $round: $theirs"
  awk -v a="$(awk 'NR == 1 {print $2}' <<<"$ours")" -v b="$(awk 'NR == 1 {print $2}' <<<"$theirs")" \
    'BEGIN { printf "round %s: serve/go %.2f\n", "'"$round"'", a / b }'
done
echo "serve peak RSS (VmHWM): $(awk '/VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$serve_pid/status"); go peer: $(awk '/VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$go_pid/status")"
