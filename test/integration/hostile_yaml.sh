#!/usr/bin/env bash
# Hostile YAML against the real binary: `validate-config` on every configuration input a fuzzer
# or an attack ever produced (test/fixtures/fuzz-regressions/config/), and 1,000 /validate-config
# AdmissionReviews whose ConfigMap holds the three bytes ",w," (which once made the YAML library
# allocate without end) against a running `serve`, whose resident memory must not grow.
# Times and peak memory are printed, never asserted (tests do not assert on wall-clock time).
# Prints "hostile-yaml: N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MKA_BINARY:-$root/build/multikueue-adapter}
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

. "$root/test/integration/lib/common.sh"

# run_measured OUT COMMAND...: runs the command with its output in OUT; prints "EXIT SECONDS PEAK_KB".
run_measured() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
out = open(sys.argv[1], "wb")
start = time.monotonic()
rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT).returncode
print(rc, f"{time.monotonic() - start:.3f}", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}

# --- validate-config on each hostile configuration -------------------------------------------
read -r _ _ baseline_kb < <(run_measured "$work/good.out" "$bin" validate-config "$root/examples/dev-config.yaml")
echo "     validate-config on the example file: peak ${baseline_kb} KiB"
for input in "$root"/test/fixtures/fuzz-regressions/config/*; do
  name=$(basename "$input")
  read -r rc seconds peak_kb < <(run_measured "$work/$name.out" "$bin" validate-config "$input")
  echo "     validate-config on $name: exit $rc in ${seconds} s, peak ${peak_kb} KiB"
  check "validate-config refuses $name with exit 1" test "$rc" = 1
  check "validate-config says what is wrong with $name" grep -qE '^(invalid YAML at line [0-9]+, column [0-9]+: |yaml: .*limit)' "$work/$name.out"
  # Within 16 MiB of what the example file takes: the input cannot make the reader allocate.
  check "validate-config on $name stays near the example file's memory" test "$peak_kb" -lt $((baseline_kb + 16384))
done
check "the three bytes get libyaml's reason and position" \
  grep -q 'invalid YAML at line 1, column 1: did not find expected node content' "$work/yaml-cpp-loadall-loop.out"

# --- 1,000 reviews against serve ---------------------------------------------------------------
"$root/certs/gen-dev-certs.sh" --out "$work/certs" >/dev/null || { echo "gen-dev-certs.sh failed"; exit 1; }
# Under AddressSanitizer freed memory waits in a quarantine before reuse, which would show as
# growth; a small quarantine lets resident memory show what the adapter itself keeps.
ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}quarantine_size_mb=1" \
  start_serve "$root/examples/dev-config.yaml" "$work/certs"

jq '.request.object.data = {"config.yaml": ",w,"}' "$root/test/fixtures/admission/configmap-create-adapter-config.json" \
  >"$work/review.json"
# send COUNT OUT: COUNT reviews over one keep-alive connection, the answers one per line in OUT.
# Options after a `next` start afresh, so each transfer carries its own.
send() {
  : >"$work/curl.cfg"
  for i in $(seq 1 "$1"); do
    [ "$i" -gt 1 ] && echo next >>"$work/curl.cfg"
    printf 'url = "https://localhost:%s/validate-config"\ncacert = "%s"\nheader = "Content-Type: application/json"\n' \
      "$webhook" "$work/certs/ca.crt" >>"$work/curl.cfg"
    printf 'data-binary = "@%s"\nwrite-out = "\\n"\nsilent\n' "$work/review.json" >>"$work/curl.cfg"
  done
  curl -K "$work/curl.cfg" >"$2"
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

send 100 "$work/warmup.out"  # connection, TLS session, thread pool and allocator caches settle
before=$(rss_kb)
start=$(date +%s%N)
send 1000 "$work/answers.out"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
after=$(rss_kb)
echo "     1,000 reviews in ${elapsed_ms} ms; serve's resident memory ${before} KiB before, ${after} KiB after"
check "every one of the 1,000 reviews is answered" test "$(grep -c '"uid"' "$work/answers.out")" = 1000
check "every one is denied with the parse error" test \
  "$(grep -c '"allowed":false.*invalid YAML at line 1, column 1: did not find expected node content' "$work/answers.out")" = 1000
check "resident memory after them is within 10 % of before" test $((after * 10)) -le $((before * 11))
check "serve is still running" kill -0 "$pid"

kill -TERM "$pid"; wait "$pid"; rc=$?; pid=""
check "SIGTERM exits 0" test "$rc" = 0

echo "hostile-yaml: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
