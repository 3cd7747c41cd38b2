#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian packages.
# Idempotent: a second run installs nothing new. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates openssl
  lld libssl-dev libboost-dev zlib1g-dev libjemalloc-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libyaml-dev libcli11-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsimdjson-dev
  curl jq wrk clang clang-format libclang-rt-14-dev python3 python3-yaml python3-kubernetes
  # For the tests only: its promtool checks the alert rules (`manifests --prometheus-rules`)
  # and what /metrics shows. Nothing runs the Prometheus server it ships.
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v kubectl >/dev/null 2>&1; then
  # kubectl is on every project machine; elsewhere Debian's kubernetes-client provides it
  # where the release has it (the kubectl tests need it, the build does not).
  $SUDO apt-get update -qq
  if apt-cache show kubernetes-client >/dev/null 2>&1; then missing+=(kubernetes-client)
  else echo "install-deps: warning: kubectl not found and no kubernetes-client package; kubectl tests will fail"; fi
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
