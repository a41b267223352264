#!/usr/bin/env python3
"""Writes the sample histories in examples/ (kept in git; run again to regenerate).

d5-commit-before-processing.jsonl: seed scenario D5. A producer sends 600
messages over 4 keys (one partition per key); consumer 10 auto-commits each
batch before processing, is SIGKILLed after committing offsets up to 100 of
every partition but having processed only 50; consumer 11 resumes at the
committed offsets. Messages 51-100 of every partition are skipped for ever.

clean-at-least-once.jsonl: the same workload with manual commit after
processing: the restarted consumer re-reads from the last processed offset,
so some messages are redelivered and none is lost.
"""
import json, sys

def write(path, lost_window):
    out, t = [], 0
    def op(process, typ, f, value=None, group=None):
        nonlocal t
        t += 1000 + (len(out) * 7919) % 5000
        o = {"index": len(out), "time": t, "process": process, "type": typ, "f": f}
        if group is not None:
            o["group"] = group
        if value is not None:
            o["value"] = value
        out.append(o)
    keys = ["k0", "k1", "k2", "k3"]
    offsets = {k: 0 for k in keys}
    stored = {k: [] for k in keys}
    v = 0
    for i in range(600):
        k = keys[i % 4]
        v += 1
        op(0, "invoke", "send", {"key": k, "value": v})
        m = {"key": k, "value": v, "partition": keys.index(k), "offset": offsets[k]}
        offsets[k] += 1
        stored[k].append(m)
        op(0, "ok", "send", m)
    # Consumer 10 processes the first 50 of every partition in batches of 10.
    pos = {k: 0 for k in keys}
    for _ in range(5):
        op(10, "invoke", "poll", group="g1")
        batch = []
        for k in keys:
            batch += stored[k][pos[k]:pos[k] + 10]
            pos[k] += 10
        op(10, "ok", "poll", batch, group="g1")
    if lost_window:
        # Auto-commit ran ahead: offsets up to 100 committed before processing.
        op(10, "invoke", "commit", [{"partition": keys.index(k), "offset": 100} for k in keys], group="g1")
        op(10, "ok", "commit", [{"partition": keys.index(k), "offset": 100} for k in keys], group="g1")
        resume = 100
    else:
        resume = 40  # committed after processing the 4th batch
    op(10, "invoke", "poll", group="g1")  # never completes: the process is killed
    op("nemesis", "info", "kill", {"process": 10, "signal": "KILL"})
    op("harness", "info", "phase", "drain")
    for rnd in range(5):
        op(11, "invoke", "poll", group="g1")
        batch = []
        for k in keys:
            start = resume + rnd * 25
            batch += stored[k][start:start + 25]
        op(11, "ok", "poll", batch, group="g1")
    op("harness", "info", "phase", "drained")
    with open(path, "w") as f:
        for o in out:
            f.write(json.dumps(o, separators=(",", ":")) + "\n")

here = sys.argv[1] if len(sys.argv) > 1 else "examples"
write(f"{here}/d5-commit-before-processing.jsonl", True)
write(f"{here}/clean-at-least-once.jsonl", False)
