#!/usr/bin/env bash
# DispatchBench.PrintsEveryFigure: runs dispatch_bench on a few jobs and checks that every figure
# line is printed, never what it says (the bench never fails on speed).
# Usage: prints_every_figure.sh DISPATCH_BENCH ADAPTER
set -euo pipefail
out=$("$1" --jobs 20 --workers 2 --adapter "$2") || { echo "$out"; exit 1; }
echo "$out"
for line in \
  'backlog throughput +[0-9]+ jobs/s' \
  'sandbox CPU +[0-9.]+ CPU s' \
  'integration CPU +manager: [0-9.]+ ms per job in its reconcilers .* informers it shares with dispatch took [0-9.]+ ms' \
  ' +workers: [0-9.]+ ms per job for the 2 of them \(reconcilers [0-9.]+, informers [0-9.]+' \
  'backlog end to end +[0-9]+ jobs/s' \
  'dispatch latency +p50' \
  'adapter CPU +[0-9.]+ ms per job' \
  'remote copies +[0-9.]+ Workload copies created per job'; do
  echo "$out" | grep -Eq "$line" || { echo "missing: $line"; exit 1; }
done
if echo "$out" | grep -q '!!!'; then echo "a recorder fell behind"; exit 1; fi
