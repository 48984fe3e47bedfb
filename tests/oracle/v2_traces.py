#!/usr/bin/env python3
"""Source of the v2 conformance traces (tests/conformance/v2-*.trace.json).

`python3 v2_traces.py` (re)writes the trace files only; results are derived
separately (tests/oracle/oracle.py, then reviewed by hand against SEMANTICS v2).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "conformance")

T = {}


def trace(name, steps, P=1, **cfg):
    c = {"parallelism": P, "commit_user": "job-1"}
    c.update(cfg)
    T[name] = (c, steps)


# step helpers -------------------------------------------------------------
def start(**kw): return dict(op="start", **kw)
def ev(s, cp, comm=(), **kw): return dict(op="event", subtask=s, checkpoint=cp, committables=list(comm), **kw)
def ckpt(cp, **kw): return dict(op="checkpoint", checkpoint=cp, **kw)
def complete(cp, **kw): return dict(op="complete", checkpoint=cp, **kw)
def abort(cp, **kw): return dict(op="abort", checkpoint=cp, **kw)
def reset(s, cp, **kw): return dict(op="reset_subtask", subtask=s, checkpoint=cp, **kw)
def failover(cp, **kw): return dict(op="failover", checkpoint=cp, **kw)
def close(**kw): return dict(op="close", **kw)
def fault(mode="fail", **kw): return dict(op="storage_fault", call="put", mode=mode, **kw)


def write(s, cp, comm=(), **kw):
    return dict(op="write", subtask=s, checkpoint=cp, committables=list(comm), **kw)


def end_input(s, comm=(), **kw):
    return dict(op="end_input", subtask=s, committables=list(comm), **kw)


def send(s, **kw): return dict(op="send", subtask=s, **kw)
def wcommitted(**kw): return dict(op="writer_committed", **kw)
def wabort(cp, **kw): return dict(op="writer_abort", checkpoint=cp, **kw)
def wsnap(cp, **kw): return dict(op="writer_snapshot", checkpoint=cp, **kw)
def wrestore(s, cp, **kw): return dict(op="writer_restore", subtask=s, checkpoint=cp, **kw)


# ------------------------------------------------------------------ SEMANTICS 12 schedules
trace("v2-sched1-restored-writer-keeps-replayed-entries", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1), ckpt(1),
    reset(0, 1), wrestore(0, 1),
    write(0, 2, ["a2"]), write(1, 2, ["b2"]),
    wsnap(2), ckpt(2),
    failover(2),
    wrestore(0, 2), wrestore(1, 2),
    wcommitted(),
    failover(2),
    wrestore(0, 2), wrestore(1, 2),
])

trace("v2-sched2-failed-commit-writers-keep-entries", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1), ckpt(1),
    fault(),
    complete(1),
    wcommitted(),
    write(0, 2, ["a2"], send=False), write(1, 2, ["b2"], send=False),
    wsnap(2), ckpt(2),
    failover(2),
    wrestore(0, 2), wrestore(1, 2),
])

trace("v2-sched3-empty-end-snapshot-written", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    ckpt(1), complete(1),
    end_input(0), end_input(1),
    ckpt(2), complete(2),
])

trace("v2-sched3-empty-end-stops-recommit-after-older-restore", steps=[
    start(),
    write(0, 1, ["a1"]),
    wsnap(1), ckpt(1), complete(1),
    wcommitted(),
    write(0, 2, ["a2"]),
    end_input(0),
    ckpt(2), complete(2),
    wcommitted(),
    failover(1),
    wrestore(0, 1),
    write(0, 3, ["a2"]),
    end_input(0),
    ckpt(3), complete(3),
])

trace("v2-sched4-ended-writer-late-empty-report-savepoint", P=2, savepoint_auto_tag=True, steps=[
    start(),
    end_input(0, ["e0"]),
    write(1, 1, ["b1"]),
    ckpt(1), complete(1),
    write(0, 1, [], savepoint=True),
    end_input(1, ["f1"]),
    ckpt(2), complete(2),
])

trace("v2-sched4-ended-writer-late-report-repeat-noop", P=2, steps=[
    start(),
    end_input(0, ["e0"]),
    write(1, 1, ["b1"]), write(1, 2, ["b2"]),
    ckpt(2), complete(2),
    write(0, 1, []),
    write(0, 2, []),
    ev(0, 2, []),
    write(1, 3, ["b3"]), write(0, 3, []),
    complete(3),
])

trace("v2-sched4-ended-writer-late-nonempty-report-rejected", P=2, steps=[
    start(),
    end_input(0, ["e0"]),
    write(1, 1, ["b1"]),
    ckpt(1), complete(1),
    write(0, 1, ["late"]),
])

trace("v2-sched5-finished-writer-ordinary-entries-in-state", P=2, steps=[
    start(),
    write(0, 1, ["a1"]),
    end_input(0, ["e0"]),
    write(1, 1, ["b1"], send=False),
    wsnap(1, subtask=1),
    ckpt(1), complete(1),
    failover(1, finished_subtasks=[0]),
    wrestore(1, 1),
    end_input(1, ["f1"]),
    ckpt(2), complete(2),
])

trace("v2-sched5-finished-writer-state-flag-counts", P=2, savepoint_auto_tag=True, steps=[
    start(),
    write(0, 1, ["a1"], savepoint=True),
    end_input(0, ["e0"]),
    write(1, 1, ["b1"], send=False),
    wsnap(1, subtask=1),
    ckpt(1),
    failover(1, finished_subtasks=[0]),
    wrestore(1, 1),
])

trace("v2-sched6-final-cut-short-replay-commits-once", final_commit="on-end-input", steps=[
    start(),
    write(0, 1, ["a1"]),
    wsnap(1), ckpt(1), complete(1),
    wcommitted(),
    write(0, 2, ["a2"]),
    wsnap(2), ckpt(2),
    fault(),
    end_input(0, ["e"]),
    failover(1),
    wrestore(0, 1),
    write(0, 3, ["a2"]),
    end_input(0, ["e"]),
])

trace("v2-sched6-uncompleted-entries-in-end-snapshot-ambiguous", final_commit="on-end-input", steps=[
    start(),
    write(0, 1, ["a1"]),
    wsnap(1), ckpt(1), complete(1),
    wcommitted(),
    write(0, 2, ["a2"]),
    wsnap(2), ckpt(2),
    fault("ambiguous"),
    end_input(0, ["e"]),
    failover(1),
    wrestore(0, 1),
    write(0, 3, ["a2"]),
    end_input(0, ["e"]),
])

trace("v2-sched7-end-event-while-others-restoring", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1), ckpt(1),
    failover(1),
    wrestore(0, 1),
    end_input(0, ["e0"]),
    wrestore(1, 1),
    end_input(1, ["f1"]),
    ckpt(3), complete(3),
])

trace("v2-sched7-end-event-from-unrestored-writer-illegal", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1), ckpt(1),
    failover(1),
    wrestore(0, 1),
    end_input(1, ["f1"]),
])

trace("v2-sched8-ambiguous-end-then-region-failover", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1), ckpt(1), complete(1),
    wcommitted(),
    end_input(0, ["e0"]), end_input(1, ["f1"]),
    ckpt(2),
    fault("ambiguous"),
    complete(2),
    wcommitted(),
    reset(1, 1),
    wrestore(1, 1),
    write(1, 2, ["f1"]),
    end_input(1, ["f1"]),
    ckpt(3), complete(3),
    wcommitted(),
])

# ------------------------------------------------------------------ committed-up-to
trace("v2-u-storage-failure-mid-commit-highest-passed", steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, 2), ev(0, 3, ["a3"]), ev(0, 4, ["a4"]),
    fault(skip=1),
    complete(4),
    complete(4),
])

trace("v2-u-storage-failure-gap-without-entries", steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, 3, ["a3"]),
    fault(skip=1),
    complete(3),
    complete(3),
])

trace("v2-u-first-put-fails-stays", steps=[
    start(),
    ev(0, 1, ["a1"]),
    fault(),
    complete(1),
    ev(0, 2, ["a2"]),
    fault(),
    complete(2),
    complete(2),
])

trace("v2-u-tag-put-fails-holds-below-savepoint", savepoint_auto_tag=True, steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, 2, ["a2"], savepoint=True),
    fault(skip=2),
    complete(2),
    complete(2),
])

trace("v2-u-tag-owed-holds-despite-higher-passed", savepoint_auto_tag=True, steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, 2, ["a2"], savepoint=True), ev(0, 3, ["a3"]),
    fault(skip=3),
    complete(3),
    ev(0, 4, ["a4"]),
    complete(4),
])

trace("v2-u-empty-checkpoints", P=2, steps=[
    start(),
    ev(0, 1), ev(1, 1),
    complete(1),
    ev(0, 2, ["a2"]), ev(1, 2),
    ev(0, 3), ev(1, 3),
    complete(4),
    ev(0, 4), ev(1, 4),
])

trace("v2-u-recovery-target-r", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    ckpt(1), complete(1),
    wcommitted(),
    write(0, 2, ["a2"]), write(1, 2),
    write(0, 3), write(1, 3),
    wsnap(3), ckpt(3),
    failover(3),
    wrestore(0, 3),
    wrestore(1, 3),
])

trace("v2-u-recovery-storage-failure-while-restoring", steps=[
    start(),
    write(0, 1, ["a1"]), write(0, 2), write(0, 3, ["a3"]),
    wsnap(3), ckpt(3),
    failover(3),
    fault(skip=1),
    wrestore(0, 3),
    wrestore(0, 3),
])

trace("v2-u-end-after-final-commit", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    end_input(0, ["e0"]),
    ckpt(1), complete(1),
    end_input(1, ["f1"]),
    ckpt(2), complete(2),
    wcommitted(),
    ckpt(3),
])

trace("v2-u-end-learned-from-table", steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, "end", ["e"]),
    complete(1),
    failover(None),
    ckpt(2),
    complete(2),
])

trace("v2-u-final-commit-tag-owed", savepoint_auto_tag=True, steps=[
    start(),
    ev(0, 1, ["a1"]), complete(1),
    ev(0, 2, ["a2"], savepoint=True), ev(0, "end", ["e"]),
    fault(skip=2),
    complete(2),
    complete(3),
])

trace("v2-u-writer-committed-lost", steps=[
    start(),
    write(0, 1, ["a1"]),
    ckpt(1), complete(1),
    write(0, 2, ["a2"]),
    wsnap(2), ckpt(2),
    failover(2),
    wrestore(0, 2),
])

trace("v2-u-writer-committed-late", steps=[
    start(),
    write(0, 1, ["a1"]),
    ckpt(1), complete(1),
    write(0, 2, ["a2"]),
    wsnap(2), ckpt(2),
    wcommitted(),
    complete(2),
    write(0, 3, ["a3"]),
    wsnap(3), ckpt(3),
    failover(3),
    wrestore(0, 3),
])

trace("v2-u-writer-committed-stale", steps=[
    start(),
    write(0, 1, ["a1"]),
    ckpt(1), complete(1),
    write(0, 2, ["a2"]),
    ckpt(2), complete(2),
    write(0, 3, ["a3"]),
    wcommitted(checkpoint=1),
    wsnap(3), ckpt(3),
    failover(3),
    wrestore(0, 3),
])

trace("v2-writer-committed-explicit-checkpoint-used", steps=[
    start(),
    write(0, 1, ["a1"]),
    write(0, 2, ["a2"]),
    ckpt(2), complete(1),
    wcommitted(checkpoint=2),
    wsnap(2),
    failover(2),
    wrestore(0, 2),
])

trace("v2-u-force-target-without-entries", force_create_snapshot=True, steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, 3, ["a3"]),
    complete(2),
    complete(3),
])

trace("v2-u-force-snapshot-put-fails", force_create_snapshot=True, steps=[
    start(),
    ev(0, 1, ["a1"]), ev(0, 2),
    fault(skip=1),
    complete(2),
    complete(2),
])

trace("v2-u-after-failed-start", steps=[
    start(),
    ev(0, 1, ["a1"]), complete(1),
    ckpt(1),
    failover(1, config={"parallelism": 0}),
    failover(1),
    failover(None, config={"commit_user": ""}),
])

trace("v2-u-never-decreases-after-reset", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1),
    write(0, 2, ["a2"]), write(1, 2, ["b2"]),
    write(0, 3, ["a3"]), write(1, 3, ["b3"]),
    complete(3),
    reset(0, 1),
    wrestore(0, 1),
    write(0, 4, ["a4"]), write(1, 4, ["b4"]),
    complete(4),
])

trace("v2-u-reset-dropping-end-keeps-u", P=2, steps=[
    start(),
    end_input(0, ["e0"]),
    write(1, 1, ["b1"]), write(1, 2, ["b2"]),
    complete(2),
    reset(0, None),
    wrestore(0, None),
    write(0, 3, ["a3"]), write(1, 3, ["b3"]),
    complete(3),
])

trace("v2-u-kept-after-close-and-failure", steps=[
    start(),
    ev(0, 1, ["a1"]), complete(1),
    close(),
    ckpt(2),
    start(instance="b", config={"commit_user": "job-2"}),
    ev(0, 2, ["w2"], instance="b"), complete(2, instance="b"),
    ev(0, 5, ["w5"], instance="b"),
    ev(0, 4, ["w4"], instance="b"),
    complete(5, instance="b"),
])

trace("v2-u-empty-savepoint-does-not-hold", savepoint_auto_tag=True, steps=[
    start(),
    ev(0, 1, [], savepoint=True), ev(0, 2, ["a2"]),
    fault(),
    complete(2),
    complete(2),
])

# ------------------------------------------------------------------ writer mechanics
trace("v2-writer-send-count", steps=[
    start(),
    write(0, 1, ["a1"], send=False),
    write(0, 2, ["a2"], send=False),
    write(0, 3, ["a3"], send=False),
    complete(3),
    send(0, count=2),
    send(0, count=5),
    send(0),
])

trace("v2-writer-send-false-then-send-after-completion", P=2, steps=[
    start(),
    write(0, 1, ["a1"]),
    write(1, 1, ["b1"], send=False),
    ckpt(1), complete(1),
    wcommitted(),
    send(1),
    wcommitted(),
    write(0, 2, ["a2"]), write(1, 2, ["b2"]),
    wsnap(2), ckpt(2),
    failover(2),
    wrestore(0, 2), wrestore(1, 2),
])

trace("v2-writer-restore-null-discards-outbox", steps=[
    start(),
    write(0, 1, ["a1"], send=False),
    reset(0, None),
    wrestore(0, None),
    send(0),
    write(0, 1, ["a1x"]),
    complete(1),
])

trace("v2-writer-attempt-defaults", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    wsnap(1), ckpt(1),
    failover(1),
    wrestore(0, 1, attempt=7),
    wrestore(0, 1),
    wrestore(1, 1),
    write(0, 2, ["a2"]), write(1, 2, ["b2"]),
    complete(2),
])

trace("v2-writer-abort-clears-savepoint-flag", savepoint_auto_tag=True, steps=[
    start(),
    write(0, 1, ["a1"]), ckpt(1), complete(1),
    wcommitted(),
    write(0, 2, ["a2"], savepoint=True),
    abort(2),
    wabort(2),
    write(0, 3, ["a3"]),
    wsnap(3), ckpt(3),
    failover(3),
    wrestore(0, 3),
])

trace("v2-writer-abort-missing-keeps-flag", savepoint_auto_tag=True, steps=[
    start(),
    write(0, 1, ["a1"]), ckpt(1), complete(1),
    wcommitted(),
    write(0, 2, ["a2"], savepoint=True),
    abort(2),
    write(0, 3, ["a3"]),
    wsnap(3), ckpt(3),
    failover(3),
    wrestore(0, 3),
])

trace("v2-writer-snapshot-replace", steps=[
    start(),
    write(0, 1, ["a1"]),
    wsnap(1), ckpt(1),
    end_input(0, ["e"]),
    wsnap(1),
    failover(1),
    wrestore(0, 1),
])

trace("v2-writer-end-input-appends", steps=[
    start(),
    end_input(0, ["e1"], watermark=10),
    end_input(0, ["e2"]),
    ckpt(1), complete(1),
])

trace("v2-writer-report-errors", steps=[
    start(),
    write(0, 2, ["a2"]),
    wsnap(2), ckpt(2),
    write(0, 2, ["x"]),
    failover(2),
    wrestore(0, 2),
    write(0, 1, ["y"]),
    write(0, 2, ["y"]),
    write(0, 3, ["a3"]),
    complete(3),
])

trace("v2-writer-restore-bad-bytes-error", steps=[
    start(),
    write(0, 1, ["a1"]),
    ckpt(1),
    write(0, 2, ["a2"]),
    wsnap(1),
    failover(1),
    wrestore(0, 1),
    send(0),
    wrestore(0, None),
    ckpt(2),
])

trace("v2-writer-outbox-survives-failover", steps=[
    start(),
    write(0, 1, ["a1"], send=False),
    failover(None),
    send(0),
    complete(1),
])

trace("v2-final-uncompleted-entries-into-end", P=2, steps=[
    start(),
    write(0, 1, ["a1"]), write(1, 1, ["b1"]),
    write(0, 2, ["a2"]),
    end_input(0, ["e0"]),
    end_input(1, ["f1"]),
    complete(1),
])


def fmt(name):
    cfg, steps = T[name]
    d = lambda o: json.dumps(o, ensure_ascii=False)
    lines = ["{", '  "config": %s,' % d(cfg), '  "clock_start_ms": 1000,', '  "clock_step_ms": 0,',
             '  "steps": [', ",\n".join("    " + d(s) for s in steps), "  ]", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for name in T:
        with open(os.path.join(OUT, name + ".trace.json"), "w") as f:
            f.write(fmt(name))
    print(len(T), "traces", file=sys.stderr)
