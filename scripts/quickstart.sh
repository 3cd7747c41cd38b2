#!/usr/bin/env bash
# Installs what is missing, builds multikueue-adapter and runs `multikueue-adapter demo`: a
# sandbox manager and two workers (emulated Kubernetes API servers on loopback) with Kueue
# stand-ins, the adapter itself (webhook + dispatch loop), and the sample PipelineRuns and
# Workflows of manifests/samples/jobs, followed from submission to cleanup. No cluster needed.
# Extra arguments go to `demo` (e.g. --keep to look around with kubectl afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
# The full build: `demo` needs the sandbox and the stand-ins (the image's build leaves them out).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMKA_WITH_SANDBOX=ON -DMKA_BUILD_TESTS=OFF -DMKA_BUILD_BENCH=OFF >/dev/null
ninja -C build multikueue-adapter
exec ./build/multikueue-adapter demo "$@"
