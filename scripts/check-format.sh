#!/usr/bin/env bash
# Fails, naming the files, when a C++ file under src/, include/, test/, bench/ or fuzz/ is not
# laid out as .clang-format says. Fix with:  scripts/check-format.sh --fix
# Usage: scripts/check-format.sh [--fix] [CLANG_FORMAT]
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
clang_format=${1:-clang-format}
mapfile -t files < <(find src include test bench fuzz -type f \( -name '*.cpp' -o -name '*.h' \) | sort)
if [ "$fix" -eq 1 ]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
# One run over every file: each line it would change is reported as "<file>:<line>:<col>: error".
mapfile -t bad < <("$clang_format" --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: \(error\|warning\): .*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not clang-formatted: %s\n' "${bad[@]}"
  echo "run scripts/check-format.sh --fix (clang-format $("$clang_format" --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
echo "${#files[@]} files clang-formatted"
