#!/usr/bin/env bash
# Checks, without a container engine, that the image's runtime stage has every shared library
# the binary needs: each library `ldd` resolves must belong to a Debian package that the
# Dockerfile's final stage installs, or that one of those packages or the base image's
# required packages depend on. Run on the Debian release the Dockerfile's base names (the
# package names and their dependencies are read from this machine's dpkg database).
# Usage: scripts/check-image-libraries.sh BINARY [DOCKERFILE]
set -euo pipefail
binary=${1:?usage: $0 BINARY [DOCKERFILE]}
dockerfile=${2:-$(dirname "$0")/../Dockerfile}

fail() { echo "check-image-libraries: $*" >&2; exit 1; }
[ -x "$binary" ] || fail "$binary is not an executable"
command -v dpkg-query >/dev/null || fail "needs dpkg-query (a Debian machine)"

base_image=$(awk 'toupper($1) == "FROM" { image = $2 } END { print image }' "$dockerfile")
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
case "$base_image" in
  debian:"$codename"*) ;;
  *) fail "the runtime stage is $base_image but this machine runs Debian $codename: run the check on the same release" ;;
esac

# The packages the final stage installs: the words of its `apt-get install` command.
listed=$(awk '
  toupper($1) == "FROM" { final = 0; n++ }
  { lines[NR] = $0; stage[NR] = n }
  END {
    for (i = 1; i <= NR; i++) {
      if (stage[i] != n) continue
      line = lines[i]
      if (line ~ /apt-get install/) { collecting = 1; sub(/.*apt-get install/, "", line) }
      if (!collecting) continue
      stop = line ~ /&&/
      sub(/&&.*/, "", line)
      gsub(/\\/, " ", line)
      count = split(line, words, /[ \t]+/)
      for (w = 1; w <= count; w++) if (words[w] ~ /^[a-z0-9][a-z0-9.+-]+$/) print words[w]
      if (stop) collecting = 0
    }
  }' "$dockerfile" | sort -u)
[ -n "$listed" ] || fail "no apt-get install found in the final stage of $dockerfile"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# The dependency closure of the listed packages and the required (base image) packages.
declare -A closure=()
queue=()
for p in $listed; do
  installed "$p" || fail "$dockerfile installs $p, which this machine does not have: install it, or fix the name"
  queue+=("$p")
done
while read -r p priority essential; do
  if [ "$priority" = required ] || [ "$essential" = yes ]; then queue+=("$p"); fi
done < <(dpkg-query -W -f='${Package} ${Priority} ${Essential}\n')
while [ ${#queue[@]} -gt 0 ]; do
  p=${queue[-1]}
  unset 'queue[-1]'
  [ -n "${closure[$p]:-}" ] && continue
  closure[$p]=1
  depends=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" 2>/dev/null || true)
  IFS=',' read -ra groups <<<"$depends"
  for group in "${groups[@]}"; do
    IFS='|' read -ra alternatives <<<"$group"
    for alternative in "${alternatives[@]}"; do
      name=$(echo "$alternative" | sed -e 's/([^)]*)//g' -e 's/:[a-z0-9]*//' | tr -d '[:space:]')
      [ -n "$name" ] || continue
      if installed "$name"; then
        queue+=("$name")
        break
      fi
    done
  done
done

# The package that owns a library, trying the path as given and with or without /usr (merged /usr).
owner() {
  local path=$1 candidate
  for candidate in "$path" "/usr$path" "${path#/usr}" "$(realpath "$path")" "/usr$(realpath "$path")" \
    "$(realpath "$path" | sed 's|^/usr||')"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  return 1
}

missing=0
checked=0
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  if [ "$path" = "not" ]; then
    echo "check-image-libraries: $binary: $name not found on this machine" >&2
    missing=$((missing + 1))
    continue
  fi
  package=$(owner "$path") || { echo "check-image-libraries: $path ($name) belongs to no package" >&2; missing=$((missing + 1)); continue; }
  checked=$((checked + 1))
  if [ -z "${closure[$package]:-}" ]; then
    echo "check-image-libraries: $binary needs $name from package $package, which the runtime stage of" \
      "$dockerfile does not install: add $package to its apt-get install list" >&2
    missing=$((missing + 1))
  fi
done < <(ldd "$binary")

[ "$missing" -eq 0 ] || exit 1
echo "check-image-libraries: $checked libraries of $binary, each in a package the runtime stage of $dockerfile installs ($(echo $listed | wc -w) listed, the rest by dependency or the base image)"
