#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for SECONDS (default 60)
# on a corpus seeded from test/fixtures/. Crashes are written to build-fuzz/crashes/.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
./scripts/install-deps.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMKA_BUILD_FUZZ=ON -DMKA_BUILD_TESTS=OFF -DMKA_BUILD_BENCH=OFF >/dev/null
ninja -C build-fuzz admission_review_fuzz config_fuzz kube_protobuf_fuzz

mkdir -p build-fuzz/corpus/admission build-fuzz/corpus/config build-fuzz/corpus/protobuf build-fuzz/crashes
# The admission target reads its route from the first byte: seed each fixture on each route.
for f in test/fixtures/admission/*.json; do
  for route in 0 1 2; do
    { printf "\\x0$route"; cat "$f"; } >"build-fuzz/corpus/admission/$route-$(basename "$f")"
  done
done
cp test/fixtures/config/*.yaml build-fuzz/corpus/config/
cp test/fixtures/protobuf/*.pb build-fuzz/corpus/protobuf/

export ASAN_OPTIONS=detect_leaks=1
./build-fuzz/fuzz/admission_review_fuzz build-fuzz/corpus/admission -max_total_time="$seconds" \
  -artifact_prefix=build-fuzz/crashes/admission- -print_final_stats=1
./build-fuzz/fuzz/config_fuzz build-fuzz/corpus/config -max_total_time="$seconds" \
  -artifact_prefix=build-fuzz/crashes/config- -print_final_stats=1
./build-fuzz/fuzz/kube_protobuf_fuzz build-fuzz/corpus/protobuf -max_total_time="$seconds" \
  -artifact_prefix=build-fuzz/crashes/protobuf- -print_final_stats=1
