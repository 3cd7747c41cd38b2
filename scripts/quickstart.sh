#!/usr/bin/env bash
# Installs what is missing, builds multikueue-adapter, makes a development CA and serving
# certificate, and runs `serve` on this machine with the example configuration
# (examples/dev-config.yaml: QueueLabeled policy, Tekton PipelineRun and Argo Workflow).
# It prints a curl command to try, then serves until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMKA_BUILD_TESTS=OFF >/dev/null
ninja -C build multikueue-adapter

./certs/gen-dev-certs.sh --out certs/out >/dev/null
echo
echo "Try it from another terminal:"
echo "  curl -s --cacert certs/out/ca.crt -H 'Content-Type: application/json' \\"
echo "    --data @examples/pipelinerun-review.json https://localhost:9443/mutate | jq ."
echo "  curl -s http://localhost:8081/readyz?verbose ; curl -s http://localhost:8080/metrics | grep webhook"
echo
exec ./build/multikueue-adapter serve --config examples/dev-config.yaml --cert-dir certs/out \
  --webhook-bind-address 127.0.0.1:9443 --health-probe-bind-address 127.0.0.1:8081 \
  --metrics-bind-address 127.0.0.1:8080
