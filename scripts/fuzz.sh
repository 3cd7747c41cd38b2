#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for SECONDS (default 60),
# one per core at a time, with -rss_limit_mb=512 -timeout=2, on a corpus seeded from test/fixtures/ (the target's
# fuzz-regressions folder included). Inputs that fail are written to crashes/ in the build folder; the
# script exits non-zero when any target found one.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (targets: config kubeconfig yaml admission_review
#                                                   kube_protobuf sandbox_request; default all)
# MKA_FUZZ_BUILD_TYPE=Debug builds unoptimised into build-fuzz-debug: half the build time, for
# short smoke runs (scripts/test.sh); long runs want the default, RelWithDebInfo in build-fuzz.
# MKA_FUZZ_BUILD_ONLY=1 builds the targets and runs none (scripts/test.sh builds them meanwhile).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config kubeconfig yaml admission_review kube_protobuf sandbox_request)
./scripts/install-deps.sh
# Unity build: about half the compile time, as in scripts/test.sh.
build_type=${MKA_FUZZ_BUILD_TYPE:-RelWithDebInfo}
build=build-fuzz
[ "$build_type" = RelWithDebInfo ] || build=build-fuzz-$(echo "$build_type" | tr '[:upper:]' '[:lower:]')
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" \
  -DMKA_BUILD_FUZZ=ON -DMKA_BUILD_TESTS=OFF -DMKA_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
ninja -C "$build" "${targets[@]/%/_fuzz}"
[ "${MKA_FUZZ_BUILD_ONLY:-0}" != 1 ] || exit 0

corpus=$build/corpus
mkdir -p "$build/crashes"
seed() {  # seed TARGET FILE...
  local target=$1
  shift
  mkdir -p "$corpus/$target"
  for f in "$@"; do if [ -f "$f" ]; then cp "$f" "$corpus/$target/"; fi; done
}
seed config test/fixtures/config/*.yaml
seed kubeconfig test/fixtures/kubeconfig/*
seed yaml test/fixtures/config/*.yaml test/fixtures/kubeconfig/* manifests/samples/*/*.yaml
seed kube_protobuf test/fixtures/protobuf/*.pb
seed sandbox_request test/fixtures/sandbox-requests/*
# The admission target reads its route from the first byte: seed each fixture on each route.
mkdir -p "$corpus/admission_review"
for f in test/fixtures/admission/*.json; do
  for route in 0 1 2; do
    { printf "\\x0$route"; cat "$f"; } >"$corpus/admission_review/$route-$(basename "$f")"
  done
done
for t in "${targets[@]}"; do
  [ -d "test/fixtures/fuzz-regressions/$t" ] && cp test/fixtures/fuzz-regressions/"$t"/* "$corpus/$t/"
done

export ASAN_OPTIONS=detect_leaks=1
# One fuzzer per core at a time; each writes its own log, read once all have ended.
fuzz() {  # fuzz TARGET: its exit status in $build/TARGET.rc
  local t=$1 rc=0
  "./$build/fuzz/${t}_fuzz" "$corpus/$t" -max_total_time="$seconds" -rss_limit_mb=512 -timeout=2 \
    -artifact_prefix="$build/crashes/$t-" -print_final_stats=1 >"$build/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$build/$t.rc"
}
jobs_at_once=$(nproc)
running=0
for t in "${targets[@]}"; do
  echo "== ${t}_fuzz for ${seconds} s"
  fuzz "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs_at_once" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
failed=0
for t in "${targets[@]}"; do
  echo "-- ${t}_fuzz"
  grep -E '^(Done [0-9]+ runs|stat::(number_of_executed_units|peak_rss_mb)|==[0-9]+== ERROR|SUMMARY|check failed)' \
    "$build/$t.log" || true
  grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$build/$t.log" | tail -1 || true
  if [ "$(cat "$build/$t.rc")" -ne 0 ]; then echo "FAILED: ${t}_fuzz (log: $build/$t.log)"; failed=$((failed + 1)); fi
done
[ "$failed" -eq 0 ] || { echo "$failed fuzz target(s) found an input that fails: $build/crashes/"; exit 1; }
echo "fuzz: every target ran ${seconds} s and found nothing"
