#!/usr/bin/env python3
"""Differential fuzz: random SEMANTICS v2.1 traces through the oracle and `sinkcoord replay --native`.

usage (repo root, after make build): python3 tests/oracle/fuzz.py FIRST_SEED LAST_SEED
Traces whose result would depend on hint puts (oracle flag) or that are malformed are skipped;
differing traces are kept under /tmp/oracle-fuzz/ and listed."""
import json, random, sys
def gen(seed):
    R = random.Random(seed)
    P = R.randint(1, 3)
    cfg = {"parallelism": P, "commit_user": "job-1"}
    if R.random() < 0.3: cfg["savepoint_auto_tag"] = True
    if R.random() < 0.2: cfg["force_create_snapshot"] = True
    if R.random() < 0.2: cfg["final_commit"] = "on-end-input"
    if R.random() < 0.1: cfg["checkpointing"] = False
    if R.random() < 0.2: cfg["recovery"] = "continue"
    steps = [{"op": "start"}]
    cp = 0
    ckpts = []
    wsnaps = {}
    writers = set()
    n = 0
    for _ in range(R.randint(5, 30)):
        r = R.random()
        s = R.randrange(P)
        if r < 0.30:
            c = cp + R.randint(0, 2)
            cp = max(cp, c)
            comm = [] if R.random() < 0.3 else ["x%d" % n]; n += 1
            writers.add(s)
            st = {"op": "write", "subtask": s, "checkpoint": c, "committables": comm}
            if R.random() < 0.2: st["savepoint"] = True
            if R.random() < 0.2: st["send"] = False
            if R.random() < 0.3: st["watermark"] = R.randint(0, 100)
            steps.append(st)
        elif r < 0.36:
            writers.add(s)
            st = {"op": "end_input", "subtask": s, "committables": [] if R.random() < 0.4 else ["e%d" % n]}; n += 1
            if R.random() < 0.25: st["send"] = False     # a late END (v2.1: taken, 5.3)
            if R.random() < 0.3: st["watermark"] = R.randint(0, 100)
            steps.append(st)
        elif r < 0.40:
            writers.add(s)
            steps.append({"op": "send", "subtask": s})
        elif r < 0.50:
            c = R.randint(max(0, cp - 1), cp + 1)
            steps.append({"op": "checkpoint", "checkpoint": c}); ckpts.append(c)
            if writers:
                steps.append({"op": "writer_snapshot", "checkpoint": c}); wsnaps.setdefault(c, set()).update(writers)
        elif r < 0.62:
            steps.append({"op": "complete", "checkpoint": R.randint(max(0, cp - 2), cp + 1)})
        elif r < 0.67 and writers:
            steps.append({"op": "writer_committed"})
        elif r < 0.70:
            steps.append({"op": "abort", "checkpoint": R.randint(0, cp + 1)})
            if R.random() < 0.5 and writers: steps.append({"op": "writer_abort", "checkpoint": steps[-1]["checkpoint"]})
        elif r < 0.76:
            steps.append({"op": "storage_fault", "call": "put", "mode": R.choice(["fail", "ambiguous"]), "skip": R.randint(0, 2)})
        elif r < 0.82 and ckpts:
            c = R.choice(ckpts)
            steps.append({"op": "reset_subtask", "subtask": s, "checkpoint": c})
            steps.append({"op": "writer_restore", "subtask": s, "checkpoint": c if s in wsnaps.get(c, ()) else None}); writers.add(s)
        elif r < 0.90 and ckpts:
            c = R.choice(ckpts)
            fin = [x for x in range(P) if R.random() < 0.2]
            steps.append({"op": "failover", "checkpoint": c, "finished_subtasks": fin})
            for x in range(P):
                # v2.1 (6.2): a finished subtask's restore event is ignored; sometimes send one
                if x not in fin or (R.random() < 0.15 and x in wsnaps.get(c, ())):
                    steps.append({"op": "writer_restore", "subtask": x, "checkpoint": c if x in wsnaps.get(c, ()) else None}); writers.add(x)
        elif r < 0.95 and writers:
            # an empty flagged report (for instance an ended writer flagging a drained
            # stop-with-savepoint, 5.4), then often its completion
            c = cp + R.randint(0, 1)
            cp = max(cp, c)
            writers.add(s)
            steps.append({"op": "write", "subtask": s, "checkpoint": c, "committables": [], "savepoint": True})
            if R.random() < 0.5:
                steps.append({"op": "complete", "checkpoint": c})
        elif r < 0.98:
            steps.append({"op": "event", "subtask": s, "checkpoint": R.randint(0, cp + 1), "committables": ["z%d" % n]}); n += 1
    return {"config": cfg, "clock_start_ms": 1000, "clock_step_ms": 0, "steps": steps}
import os, subprocess
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402


def main(a, b):
    out = "/tmp/oracle-fuzz"
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, SINKCOORD_CACHE_DIR=os.path.abspath("target/cwasm-cache"))
    stats = {"same": 0, "skipped": 0, "diff": 0}
    for seed in range(a, b):
        t = gen(seed)
        f = os.path.join(out, "f%06d.trace.json" % seed)
        json.dump(t, open(f, "w"))
        p = subprocess.run(["target/release/sinkcoord", "replay", "--native", f],
                           capture_output=True, text=True, env=env)
        try:
            rp = oracle.Replayer(t)
            steps = rp.run()
        except Exception:
            steps = None
        if p.returncode != 0 or steps is None or rp.storage.hint_dependent:
            stats["skipped"] += 1
            os.remove(f)
            continue
        if oracle.mask(oracle.render(steps, rp.storage)) != oracle.mask(p.stdout):
            stats["diff"] += 1
            print("DIFF", f)
        else:
            stats["same"] += 1
            os.remove(f)
    print(stats)
    return stats["diff"]


if __name__ == "__main__":
    sys.exit(1 if main(int(sys.argv[1]), int(sys.argv[2])) else 0)
