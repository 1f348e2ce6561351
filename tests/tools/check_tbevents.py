#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read a run's TensorBoard event file with the tensorboard package's own event reader and check
it against the run's metrics.jsonl. Usage: check_tbevents.py RUNDIR. Exit 77 (skip) when the
tensorboard package is not installed (pip install tensorboard), 1 on a mismatch."""
import json
import math
import os
import sys

try:
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.backend.event_processing import event_accumulator
except ImportError:
    print("SKIP: the tensorboard Python package is not installed (pip install tensorboard)")
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


run = sys.argv[1]
path = os.path.join(run, "tb", "events.out.tfevents.ringzero")
rows = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl")) if l.strip()]

# The raw reader checks the framing: it raises on a length or data CRC that does not match.
events = list(event_file_loader.EventFileLoader(path).Load())
if not events or events[0].file_version != "brain.Event:2":
    fail("the first event is not the file version: %r" % (events[:1],))

# The accumulator is what TensorBoard's scalar dashboard reads.
acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
acc.Reload()
tags = acc.Tags()["scalars"]
fields = {"loss/policy": "policy_loss", "loss/value": "value_loss", "arena/score": "arena_score",
          "selfplay/games": "games", "selfplay/positions": "positions",
          "selfplay/evals_per_s": "evals_per_s", "time/train_s": "train_s"}
for tag, key in fields.items():
    if tag not in tags:
        fail("tag %s missing (have %s)" % (tag, sorted(tags)))
    got = {e.step: e.value for e in acc.Scalars(tag)}
    want = {r["iteration"]: r[key] for r in rows}
    if sorted(got) != sorted(want):
        fail("%s: steps %s, metrics.jsonl has %s" % (tag, sorted(got), sorted(want)))
    for step, v in want.items():
        if not math.isclose(got[step], v, rel_tol=1e-6, abs_tol=1e-6):
            fail("%s at step %d: %r, metrics.jsonl says %r" % (tag, step, got[step], v))
    for e in acc.Scalars(tag):
        want_t = next(r["time"] for r in rows if r["iteration"] == e.step)
        if abs(e.wall_time - want_t) > 1e-3:
            fail("%s at step %d: wall time %r, metrics.jsonl %r" % (tag, e.step, e.wall_time,
                                                                    want_t))
promoted = {e.step: e.value for e in acc.Scalars("arena/promoted")}
for r in rows:
    if promoted[r["iteration"]] != (1.0 if r["promoted"] else 0.0):
        fail("arena/promoted at step %d" % r["iteration"])
elo = [e.step for e in acc.Scalars("elo/best")]
if elo != [0] + [r["iteration"] for r in rows]:
    fail("elo/best steps %s: want iteration 0 and every iteration" % elo)
print("tensorboard: %d events, %d scalar tags, %d iterations read back" % (len(events), len(tags),
                                                                         len(rows)))
