#!/usr/bin/env bash
# Builds multikueue-adapter exactly as the container image ships it. The Dockerfile's build
# stage runs this script, and so does scripts/test.sh, so that the binary the tests check (its
# shared libraries against the image's runtime stage, `version`, `validate-config`) is the one
# the image carries, built with the same options.
# Usage: scripts/build-image-binary.sh BUILD_DIR [VERSION]
#   VERSION: what `multikueue-adapter version` prints; empty: git describe, else the project's
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [VERSION]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# RelWithDebInfo's -O2, the project's default, without its -g: the Dockerfile strips the binary
# on install, and the debug info took a third of the compile time (the symbol table, which the
# checks of scripts/test.sh read, is there either way).
# Without the sandbox, the stand-ins and CEL (MKA_WITH_SANDBOX=OFF): the image runs `serve` and
# the other product commands; its `demo` and `sandbox` say they are not built in (the
# quickstart's build has them).
cmake -S "$root" -B "$1" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DMKA_VERSION="${2:-}" \
  -DMKA_WITH_SANDBOX=OFF \
  -DMKA_BUILD_TESTS=OFF \
  -DMKA_BUILD_BENCH=OFF \
  -DMKA_BUILD_FUZZ=OFF \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$1" --target multikueue-adapter
