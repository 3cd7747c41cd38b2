#!/usr/bin/env bash
# DispatchBench.PrintsEveryFigure: runs dispatch_bench on a few jobs and checks that every figure
# line is printed, never what it says (the bench never fails on speed).
# Usage: prints_every_figure.sh DISPATCH_BENCH ADAPTER
set -euo pipefail
# expect OUTPUT PATTERN...: every pattern matches a line of OUTPUT.
expect() {
  local output=$1 line
  shift
  for line in "$@"; do
    echo "$output" | grep -Eq "$line" || { echo "missing: $line"; exit 1; }
  done
}
out=$("$1" --jobs 20 --workers 2 --adapter "$2") || { echo "$out"; exit 1; }
echo "$out"
expect "$out" \
  'backlog throughput +[0-9]+ jobs/s' \
  'sandbox CPU +[0-9.]+ CPU s' \
  'integration CPU +manager: [0-9.]+ ms per job in its reconcilers .* informers it shares with dispatch took [0-9.]+ ms' \
  ' +workers: [0-9.]+ ms per job for the 2 of them \(reconcilers [0-9.]+, informers [0-9.]+' \
  'backlog end to end +[0-9]+ jobs/s' \
  'dispatch latency +p50' \
  ' +in steps +p50 / p99: Workload copied [0-9.]+ / [0-9.]+ ms, quota on the worker' \
  'adapter CPU +[0-9.]+ ms per job' \
  'remote copies +[0-9.]+ Workload copies created per job'
if echo "$out" | grep -q '!!!'; then echo "a recorder fell behind"; exit 1; fi

# The churn run: jobs deleted once finished, the RSS sampled, nothing left behind.
out=$("$1" --churn 30 --in-flight 10 --rss-every 10 --run-time-ms 200 --workers 2 --adapter "$2") || {
  echo "$out"
  exit 1
}
echo "$out"
expect "$out" \
  'adapter RSS +[0-9.]+ MiB after 10 jobs' \
  'churn +30 jobs in [0-9.]+ s' \
  'RSS slope +[-+][0-9.]+ MiB per 10,000 jobs' \
  'remote copies +[0-9.]+ Workload copies created per job' \
  'leftovers +0 Workloads and PipelineRuns'
