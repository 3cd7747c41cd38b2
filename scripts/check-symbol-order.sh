#!/usr/bin/env bash
# Checks that a multikueue-adapter binary (not stripped) was linked in the order of
# cmake/symbol-order.txt, and that the list still names what the code has:
#   - at least 80 % of the listed functions exist in the binary (else the list is stale:
#     regenerate it with scripts/update-symbol-order.sh); a binary built without the sandbox
#     (MKA_WITH_SANDBOX=OFF, the image's) is not held to the listed functions of the modules it
#     leaves out (their static initialisers, the demo's options): those are not stale;
#   - the listed functions lie together: the span from the first to the end of the last is at
#     most twice their total size plus 256 KiB (unordered, they spread over the whole code).
# Prints the figures. Usage: scripts/check-symbol-order.sh BINARY [ORDER_FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:?usage: $0 BINARY [ORDER_FILE]}
order=${2:-$root/cmake/symbol-order.txt}
symbols=$(mktemp)
trap 'rm -f "$symbols"' EXIT
nm --defined-only -S "$binary" >"$symbols"
python3 - "$order" "$binary" "$symbols" <<'PY'
import sys
order_file, binary, symbols = sys.argv[1:4]
order = [l.strip() for l in open(order_file) if l.strip() and not l.startswith("#")]
ranges = {}
for line in open(symbols):
    parts = line.split()
    if len(parts) == 4 and parts[2] in "tTwW":
        ranges.setdefault(parts[3], []).append((int(parts[0], 16), int(parts[1], 16)))
# The modules MKA_WITH_SANDBOX=OFF leaves out, as their namespaces appear in mangled names
# (mka::sandbox -> 3mka7sandbox): when the binary has none of their symbols, the listed names
# in them do not count.
left_out = [m for m in ("3mka7sandbox", "3mka7standin", "3mka3cel", "3mka4demo")
            if not any(m in name for name in ranges)]
skipped = [name for name in order if any(m in name for m in left_out)]
order = [name for name in order if not any(m in name for m in left_out)]
found = [r for name in order for r in ranges.get(name, [])]
present = sum(1 for name in order if name in ranges)
share = present / len(order) if order else 0.0
size = sum(s for _, s in found)
span = (max(a + s for a, s in found) - min(a for a, _ in found)) if found else 0
print(f"check-symbol-order: {present} of {len(order)} listed functions in {binary} ({share:.0%}); "
      f"{size / 1024:.0f} KiB of code spanning {span / 1024:.0f} KiB"
      + (f" ({len(skipped)} more of modules not built in)" if skipped else ""))
ok = True
if share < 0.8:
    print("check-symbol-order: the list is stale: regenerate it with scripts/update-symbol-order.sh")
    ok = False
if span > 2 * size + 256 * 1024:
    print("check-symbol-order: the listed functions are spread out: the binary was not linked in the "
          "order of the list (an optimised build with lld: see MKA_SYMBOL_ORDER in CMakeLists.txt)")
    ok = False
sys.exit(0 if ok else 1)
PY
