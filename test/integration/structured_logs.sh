#!/usr/bin/env bash
# The logs of an end-to-end run (`demo`: sandbox clusters, stand-ins, webhooks, dispatch loop and
# job integration, at --v 1 so that the debug records are in) as a log pipeline reads them:
# with --log-format json every stderr line is one JSON object with unique keys, the keys of
# controller-runtime's zap logger (ts, level, logger, caller, msg) and every value as a field
# of its own, never key=value inside msg; with --log-format text every line is logfmt that
# parses to the same shape (MKA_LOG_FORMATS="json text"; json alone by default). A few records
# are checked field by field, with their JSON types.
# Prints "structured-logs: N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MKA_BINARY:-$root/build/multikueue-adapter}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {  # check NAME COMMAND...
  if "${@:2}"; then passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi
}

# Both formats write the same records; the logfmt text format is checked value by value in
# observability's unit tests, so the end-to-end run (minutes under ASan) is made once, in JSON.
for format in ${MKA_LOG_FORMATS:-json}; do
  "$bin" demo --log-format "$format" --v 1 >"$work/$format.out" 2>"$work/$format.log"
  check "demo --log-format $format exits 0" test $? -eq 0
  check "$format: every line parses, with its values as fields" python3 - "$format" "$work/$format.log" <<'PY'
import json, re, sys

fmt, path = sys.argv[1], sys.argv[2]
LOGFMT = re.compile(r'([A-Za-z][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|[^ "=]+)(?: |$)')


def unique(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate keys " + str(keys))
    return dict(pairs)


def parse_logfmt(line):
    pairs, pos = [], 0
    while pos < len(line):
        m = LOGFMT.match(line, pos)
        if not m:
            raise ValueError("not logfmt at column %d" % pos)
        value = m.group(2)
        if value.startswith('"'):
            value = json.loads(value)  # the escapes logfmt writes are JSON's
        pairs.append((m.group(1), value))
        pos = m.end()
    return unique(pairs)


problems, records = [], []
for number, line in enumerate(open(path, encoding="utf-8"), 1):
    line = line.rstrip("\n")
    try:
        record = json.loads(line, object_pairs_hook=unique) if fmt == "json" else parse_logfmt(line)
    except ValueError as e:
        problems.append("line %d: %s: %s" % (number, e, line[:300]))
        continue
    keys = list(record)
    if keys[:5] != ["ts", "level", "logger", "caller", "msg"]:
        problems.append("line %d: starts with %s, not ts level logger caller msg" % (number, keys[:5]))
    elif re.search(r"\b[A-Za-z_]+=\S", record["msg"]):
        problems.append("line %d: key=value inside msg: %s" % (number, record["msg"]))
    records.append(record)

if len(records) < 100:
    problems.append("only %d records: the run did not log what an end-to-end run logs" % len(records))


def first(msg):
    return next((r for r in records if r["msg"] == msg), None)


# Records of each part of the run, with the fields an operator filters on.
expected = {
    "remote job created": {"workload": str, "cluster": str, "kind": str, "job": str},
    "admission answered": {"webhook": str, "uid": str, "kind": str, "operation": str, "dryRun": bool,
                           "patchOps": int, "warnings": int},
    "workload admitted on worker": {"workload": str, "cluster": str},
    "listening": {"server": str, "address": str, "tls": bool},
    "informer synced": {"kind": str, "objects": int},
}
for msg, fields in expected.items():
    record = first(msg)
    if record is None:
        problems.append("no %r record" % msg)
        continue
    for key, kind in fields.items():
        if key not in record:
            problems.append("%r has no field %r: %s" % (msg, key, record))
        elif fmt == "json" and not isinstance(record[key], kind):
            problems.append("%r field %r is %s, not %s" % (msg, key, type(record[key]).__name__, kind.__name__))

for p in problems[:20]:
    print("  " + p)
print("  %s: %d records, %d problems" % (fmt, len(records), len(problems)))
sys.exit(1 if problems else 0)
PY
done

echo "structured-logs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
