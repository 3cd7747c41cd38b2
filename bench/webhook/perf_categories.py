#!/usr/bin/env python3
"""Where the webhook server's CPU time goes, from a perf profile of webhook_bench.

  perf record -F 499 --call-graph dwarf,16384 -o /tmp/wb.data \
      build-bench/bench/webhook/webhook_bench --endpoint mutate --modes max --duration 4
  perf script -i /tmp/wb.data -F comm,tid,ip,sym,dso > /tmp/wb.txt
  python3 bench/webhook/perf_categories.py /tmp/wb.txt

Buckets the samples of the server's threads (the event loops, server-loopN, or with
--server httplib the pool's, server-N; the load generator's threads are client-N) by the
outermost component on the stack (handler stages, TLS, httplib, poll), then lists the hottest
leaf functions.
"""
import collections, re, sys

def samples(path):
    comm, frames = None, []
    for line in open(path, errors="replace"):
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
            continue
        if not line.startswith(("\t", " ")):
            comm = line.split()[0]
            frames = []
        else:
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", line.rstrip())
            if m:
                frames.append((m.group(1), m.group(2)))
    if comm is not None:
        yield comm, frames

def has(frames, pred):
    return any(pred(s, d) for s, d in frames)

def is_kernel(f): return "kernel" in f[1]
def is_tls(s, d): return "libssl" in d or "libcrypto" in d
MALLOC = ("malloc", "free", "cfree", "_int_malloc", "_int_free", "realloc", "operator new", "operator delete",
          "malloc_consolidate", "tcache", "unlink_chunk")

def category(frames):
    if not frames: return "unknown"
    leaf = frames[0]
    leaf_malloc = any(leaf[0].startswith(m) for m in MALLOC)
    if has(frames, lambda s, d: "EVP_PKEY_generate" in s or "ASN1" in s or "ECDSA" in s.upper()):
        return "TLS handshake (once per connection)"
    for key, name in (("decodeLeanAdmissionReview", "handler: simdjson parse + lean decode (decodeLeanAdmissionReview)"),
                      ("decodeAdmissionReview", "handler: JSON parse + decode (decodeAdmissionReview)"),
                      ("encodeAdmissionReview", "handler: JSON encode + base64 patch (encodeAdmissionReview)"),
                      ("mutateJob", "handler: mutate decision (mutateJob)"),
                      ("validateJob", "handler: validate decision (validateJob)"),
                      ("Metrics::observe", "handler: metrics (Metrics::observe)"),
                      ("Metrics::admissionSeries", "handler: metrics (Metrics::observe)"),
                      ("AdmissionHandler::handle", "handler: rest (routing, config snapshot, strings)")):
        if has(frames, lambda s, d, key=key: key in s):
            return name + (" [malloc/free]" if leaf_malloc else "")
    if has(frames, is_tls):
        return "TLS: kernel socket I/O under SSL_read/SSL_write" if is_kernel(leaf) else "TLS: record crypto + OpenSSL (user)"
    if has(frames, lambda s, d: "waitFor" in s or s.startswith("__poll") or s == "poll"):
        return "poll() waits (kernel + libc)"
    if has(frames, lambda s, d: "httplib" in d or "httplib" in s):
        return "httplib: request parse, routing, response headers" + (" [malloc/free]" if leaf_malloc else "")
    if is_kernel(leaf):
        return "kernel: other (scheduling, interrupts, futex)"
    if leaf_malloc:
        return "malloc/free (elsewhere)"
    return "other user: " + leaf[0][:60] + " (" + leaf[1].split("/")[-1] + ")"

def main(path, prefix="server-"):
    cats = collections.Counter()
    leafs = collections.Counter()
    total = 0
    allthreads = collections.Counter()
    for comm, frames in samples(path):
        group = "server" if re.match(prefix + r"(loop)?\d+$", comm) else ("client" if comm.startswith("client-") else comm)
        allthreads[group] += 1
        if group != "server":
            continue
        total += 1
        cats[category(frames)] += 1
        if frames:
            leafs[frames[0][0][:70] + " (" + frames[0][1].split("/")[-1] + ")"] += 1
    n = sum(allthreads.values())
    print("samples by thread group:", ", ".join(f"{k} {100*v/n:.1f}%" for k, v in allthreads.most_common(6)))
    print(f"\nserver threads: {total} samples")
    for k, v in cats.most_common():
        print(f"  {100*v/total:5.1f}%  {k}")
    print("\ntop leaf functions (server threads):")
    for k, v in leafs.most_common(25):
        print(f"  {100*v/total:5.1f}%  {k}")

if __name__ == "__main__":
    main(sys.argv[1])
