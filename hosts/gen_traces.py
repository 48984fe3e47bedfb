#!/usr/bin/env python3
"""Writes pseudo-random but mostly well-behaved traces (TRACE-FORMAT v2) for
cross-runtime comparison: every coordinator op, several instances over one
table, storage faults of every kind and mode, clock steps, failovers from kept
checkpoints and from raw state bytes, savepoints, END entries. With
--writers, the traces drive writer helpers instead (TRACE-FORMAT "Writer
steps"): checkpoint rounds of `write` / `checkpoint` / `writer_snapshot` /
`complete` / `writer_committed`, late sends, END inputs, region restores and
global failovers restoring every writer, savepoint aborts, faults.

    python3 hosts/gen_traces.py OUT_DIR [--count N] [--seed S] [--steps K] [--writers] [--repair SINKCOORD]

Deterministic for a given seed. Needs only the standard library, except
--repair: the generator cannot know which `checkpoint` steps will succeed, so
a `failover` may name a checkpoint for which no state bytes were kept (a
malformed trace). With --repair, each trace is replayed with
`SINKCOORD replay --native` (target/release/sinkcoord) and every such failover
gets `"checkpoint": null` instead.
"""

import argparse
import json
import os
import random

END = "end"


def set_some(rng: random.Random, config: dict, options: list) -> None:
    """Sets each (key, probability, value()) of options in config with its
    probability: one draw per option, in order, and value() only when set,
    so a seed still gives the same trace."""
    for key, probability, value in options:
        if rng.random() < probability:
            config[key] = value()


def gen_trace(rng: random.Random, n_steps: int) -> dict:
    p = rng.choice([1, 1, 2, 2, 3])
    config = {"parallelism": p, "commit_user": rng.choice(["job-1", "job-\u00e9", 'job "q"'])}
    set_some(rng, config, [
        ("savepoint_auto_tag", 0.5, lambda: True),
        ("tag_time_retained_ms", 0.3, lambda: rng.choice([0, 1000, 2**63])),
        ("force_create_snapshot", 0.3, lambda: True),
        ("final_commit", 0.2, lambda: "on-end-input"),
        ("checkpointing", 0.15, lambda: False),
        ("recovery", 0.3, lambda: "continue"),
    ])
    trace = {"config": config, "clock_start_ms": rng.choice([0, 1000, 2**64 - 3]), "steps": []}
    if rng.random() < 0.3:
        trace["clock_step_ms"] = rng.choice([1, 7])
    steps = trace["steps"]

    names = ["main"] + (["b"] if rng.random() < 0.4 else [])
    # Per instance: next checkpoint per subtask, checkpoints kept.
    nxt = {}
    kept = {}
    par = {}

    def start(name, failover=False):
        step = {"op": "failover" if failover else "start"}
        if name != "main":
            step["instance"] = name
        cfg = {}
        if rng.random() < 0.2:
            cfg["parallelism"] = rng.choice([1, 2, 3])
        if name == "b" and rng.random() < 0.5:
            cfg["commit_user"] = "job-b"
        if rng.random() < 0.1:
            cfg["recovery"] = rng.choice(["restart", "continue"])
        if cfg:
            step["config"] = cfg
        par[name] = cfg.get("parallelism", p)
        if failover:
            if kept.get(name) and rng.random() < 0.8:
                step["checkpoint"] = rng.choice(sorted(kept[name]))
                if rng.random() < 0.5:
                    step["finished_subtasks"] = sorted(rng.sample(range(par[name]), rng.randint(0, par[name])))
            elif rng.random() < 0.3:
                step["checkpoint"] = rng.randint(0, 5)
                step["state_hex"] = rng.choice(["", "00", "01", "0105", rng.randbytes(rng.randint(1, 12)).hex()])
            else:
                step["checkpoint"] = None
        steps.append(step)
        nxt[name] = [1] * par[name]
        kept.setdefault(name, set())
        r = step.get("checkpoint")
        if failover and r is not None and "state_hex" not in step:
            # Mostly, every writer that had not finished replays its buffer.
            finished = set(step.get("finished_subtasks", []))
            for s in range(par[name]):
                if s in finished or rng.random() < 0.1:
                    continue
                entries = [{"checkpoint": r, "committables": [f"r{s}-{r}"]}] if rng.random() < 0.5 else []
                if rng.random() < 0.2:
                    entries.append({"checkpoint": END, "committables": [f"r{s}-end"]})
                restored = {"op": "restored", "subtask": s, "checkpoint": r, "entries": entries}
                if name != "main":
                    restored["instance"] = name
                steps.append(restored)
            nxt[name] = [r + 1] * par[name]

    start("main", failover=rng.random() < 0.2)
    for _ in range(n_steps):
        name = rng.choice(names)
        if name not in nxt:
            start(name)
            continue
        inst = {} if name == "main" else {"instance": name}
        P = par[name]
        r = rng.random()
        s = rng.randrange(P + (1 if rng.random() < 0.01 else 0))
        if r < 0.40:
            if s < len(nxt[name]):
                c = nxt[name][s]
                if rng.random() < 0.85:
                    nxt[name][s] += 1
            else:
                c = 1
            ck = END if rng.random() < 0.05 else (c if rng.random() < 0.97 else rng.randint(0, c + 1))
            ev = {"op": "event", **inst, "subtask": s, "checkpoint": ck}
            if rng.random() < 0.8:
                ev["committables"] = [f"c{s}-{ck}-{i}" + rng.choice(["", "\u00fc", "\n", '"', "\\"]) for i in range(rng.randint(0, 2))]
            if rng.random() < 0.5:
                ev["watermark"] = rng.choice([None, -5, 0, 100 * (c if ck != END else 1), -(2**63), 2**63 - 1])
            if rng.random() < 0.2:
                ev["savepoint"] = True
            if rng.random() < 0.2:
                ev["attempt"] = rng.randint(0, 3)
            steps.append(ev)
        elif r < 0.52:
            c = max(1, min(nxt[name]) - rng.choice([0, 1, 1, 2]))
            steps.append({"op": "complete", **inst, "checkpoint": END if rng.random() < 0.05 else c})
        elif r < 0.60:
            c = max(0, min(nxt[name]) - rng.choice([0, 1]))
            steps.append({"op": "checkpoint", **inst, "checkpoint": c})
            kept[name].add(c)
        elif r < 0.64:
            steps.append({"op": "abort", **inst, "checkpoint": rng.randint(0, max(nxt[name]))})
        elif r < 0.68:
            ck = rng.choice([None, max(0, nxt[name][min(s, P - 1)] - 2)])
            steps.append({"op": "reset_subtask", **inst, "subtask": s, "checkpoint": ck})
            if s < P:
                nxt[name][s] = (ck or 0) + 1
        elif r < 0.74:
            ck = max(0, min(nxt[name]) - 1)
            entries = []
            for c in sorted(rng.sample(range(max(1, ck - 1), ck + 1), rng.randint(0, min(2, ck)))):
                entries.append({"checkpoint": c, "committables": [f"r{s}-{c}"], "savepoint": rng.random() < 0.2})
            if rng.random() < 0.3:
                entries.append({"checkpoint": END, "committables": [f"r{s}-end"], "watermark": rng.choice([None, 7])})
            step = {"op": "restored", **inst, "subtask": s, "checkpoint": ck, "entries": entries}
            if rng.random() < 0.3:
                step["attempt"] = 1
            steps.append(step)
        elif r < 0.80:
            start(name, failover=True)
        elif r < 0.82:
            start(name)
        elif r < 0.84:
            steps.append({"op": "close", **inst})
        elif r < 0.88:
            steps.append({"op": "clock", **inst, "ms": rng.choice([5, 1000, 2**64 - 1])})
        else:
            f = {"op": "storage_fault", **inst, "call": rng.choice(["put", "put", "get", "list", "delete"]),
                 "mode": rng.choice(["fail", "ambiguous"])}
            if rng.random() < 0.5:
                f["skip"] = rng.randint(0, 3)
            if rng.random() < 0.4:
                f["count"] = rng.randint(1, 3)
            steps.append(f)
    return trace


def gen_writer_trace(rng: random.Random, n_steps: int) -> dict:
    """A trace of writer steps: rounds of checkpoints with disturbances."""
    p = rng.choice([1, 2, 2, 3])
    config = {"parallelism": p, "commit_user": "job-w"}
    set_some(rng, config, [
        ("savepoint_auto_tag", 0.3, lambda: True),
        ("final_commit", 0.2, lambda: "on-end-input"),
        ("checkpointing", 0.1, lambda: False),
        ("recovery", 0.3, lambda: "continue"),
    ])
    trace = {"config": config, "clock_start_ms": 1000, "steps": []}
    steps = trace["steps"]
    names = ["main"] + (["b"] if rng.random() < 0.25 else [])
    cp = {}  # per instance: the last checkpoint of a round
    writer_next = {}  # (name, subtask) -> next checkpoint to write
    writer_kept = {}  # (name, subtask) -> checkpoints with kept writer state
    coord_kept = {}  # name -> checkpoints of `checkpoint` steps
    ended = set()  # (name, subtask) that sent end_input

    def add(step, name):
        if name != "main":
            step["instance"] = name
        steps.append(step)
        return step

    def committables(s, c):
        return [f"w{s}-{c}-{i}" + rng.choice(["", "\u00fc", '"']) for i in range(rng.choice([0, 1, 1, 2]))]

    def start(name):
        add({"op": "start"}, name)
        cp[name] = 0
        coord_kept.setdefault(name, [])

    def global_failover(name):
        # The coordinator and every writer restore from one checkpoint.
        r = rng.choice(coord_kept[name]) if coord_kept[name] and rng.random() < 0.85 else None
        step = {"op": "failover", "checkpoint": r}
        finished = []
        if r is not None and rng.random() < 0.3:
            finished = sorted(s for s in range(p) if (name, s) in ended and rng.random() < 0.5)
            step["finished_subtasks"] = finished
        add(step, name)
        cp[name] = r or 0
        for s in range(p):
            if s in finished:
                continue
            has = r is not None and r in writer_kept.get((name, s), ())
            add({"op": "writer_restore", "subtask": s, "checkpoint": r if has else None}, name)
            writer_next[(name, s)] = (r if has else 0) + 1
            if not has:
                ended.discard((name, s))

    for name in names:
        start(name)
    while len(steps) < n_steps:
        name = rng.choice(names)
        c = cp[name] + 1
        # One round: every writer (mostly) writes checkpoint c.
        held = []
        for s in range(p):
            if rng.random() < 0.1:
                continue
            c_s = writer_next.get((name, s), 1)
            if rng.random() < 0.03:
                c_s = max(0, c_s - 1)  # not increasing: a writer error
            w = {"op": "write", "subtask": s, "checkpoint": max(c, c_s)}
            cs = committables(s, c)
            if cs:
                w["committables"] = cs
            if rng.random() < 0.4:
                w["watermark"] = rng.choice([None, 10 * c, -1])
            if rng.random() < 0.1:
                w["savepoint"] = True
            if rng.random() < 0.15:
                w["send"] = False
                held.append(s)
            add(w, name)
            writer_next[(name, s)] = max(c, c_s) + 1
        if rng.random() < 0.08:
            s = rng.randrange(p)
            e = {"op": "end_input", "subtask": s}
            cs = committables(s, "end")
            if cs:
                e["committables"] = cs
            if rng.random() < 0.3:
                e["send"] = False
                held.append(s)
            add(e, name)
            ended.add((name, s))
        if rng.random() < 0.15:
            f = {"op": "storage_fault", "call": rng.choice(["put", "put", "get", "list", "delete"]),
                 "mode": rng.choice(["fail", "ambiguous"])}
            if rng.random() < 0.5:
                f["skip"] = rng.randint(0, 2)
            add(f, name)
        if rng.random() < 0.85:
            add({"op": "checkpoint", "checkpoint": c}, name)
            coord_kept[name].append(c)
        if rng.random() < 0.85:
            snap = {"op": "writer_snapshot", "checkpoint": c}
            if rng.random() < 0.2:
                snap["subtask"] = rng.randrange(p)
            subtasks = [snap["subtask"]] if "subtask" in snap else range(p)
            if all((name, s) in writer_next for s in subtasks):
                add(snap, name)
                for s in subtasks:
                    writer_kept.setdefault((name, s), set()).add(c)
        if rng.random() < 0.1:
            add({"op": "abort", "checkpoint": c}, name)
            if rng.random() < 0.7 and any((name, s) in writer_next for s in range(p)):
                add({"op": "writer_abort", "checkpoint": c}, name)
        elif rng.random() < 0.85:
            add({"op": "complete", "checkpoint": c}, name)
        cp[name] = c
        for s in held:
            if rng.random() < 0.8:
                send = {"op": "send", "subtask": s}
                if rng.random() < 0.3:
                    send["count"] = 1
                add(send, name)
        if rng.random() < 0.8 and any((name, s) in writer_next for s in range(p)):
            wc = {"op": "writer_committed"}
            if rng.random() < 0.2:
                wc["subtask"] = rng.choice([s for s in range(p) if (name, s) in writer_next])
            if rng.random() < 0.1:
                wc["checkpoint"] = rng.choice([c, max(0, c - 2), END])
            add(wc, name)
        r = rng.random()
        if r < 0.08:
            global_failover(name)
        elif r < 0.14:
            # Region failover of one writer: from its kept state, or scratch.
            s = rng.randrange(p)
            kept_s = sorted(writer_kept.get((name, s), ()))
            ck = rng.choice(kept_s) if kept_s and rng.random() < 0.8 else None
            add({"op": "reset_subtask", "subtask": s, "checkpoint": ck}, name)
            wr = {"op": "writer_restore", "subtask": s, "checkpoint": ck}
            if rng.random() < 0.15:
                wr["send"] = False
            if rng.random() < 0.1:
                wr["attempt"] = rng.randint(0, 5)
            add(wr, name)
            writer_next[(name, s)] = (ck or 0) + 1
            if wr.get("send") is False:
                add({"op": "send", "subtask": s}, name)
        elif r < 0.16:
            add({"op": "clock", "ms": rng.choice([5, 2000])}, name)
        elif r < 0.17:
            add({"op": "close"}, name)
    return trace


def replay(trace: dict, sinkcoord: str):
    """`sinkcoord replay --native` of the trace: (result, states), or the
    malformed trace's (step, field)."""
    import re
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path, states = os.path.join(tmp, "t.trace.json"), os.path.join(tmp, "states")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(trace, f)
        run = subprocess.run([sinkcoord, "replay", "--native", "--states", states, path], capture_output=True, text=True)
        if run.returncode == 2:
            m = re.search(r"malformed trace: step (\d+)(?: \(op [^)]*\))?, field \"(\w+)\"", run.stderr)
            return None, (int(m.group(1)), m.group(2)) if m else (None, None)
        if run.returncode != 0:
            raise SystemExit(f"gen_traces.py: {sinkcoord} failed: {run.stderr}")
        with open(states, encoding="utf-8") as f:
            return (json.loads(run.stdout), [json.loads(l) for l in f]), None


def repair(trace: dict, sinkcoord: str, rng: random.Random) -> None:
    """Replays the trace (native core) and fixes what only a run can tell:
    a failover naming a checkpoint without kept bytes gets `null`; an
    instance left failed or closed while later steps still use it gets a
    failover right away (from a checkpoint that was kept, or fresh)."""
    steps = trace["steps"]
    for _ in range(4 * len(steps) + 10):
        replayed, malformed = replay(trace, sinkcoord)
        if malformed is not None:
            step = steps[malformed[0]] if malformed[0] is not None else None
            if step is None or step.get("op") != "failover" or malformed[1] != "checkpoint":
                raise SystemExit(f"gen_traces.py: generated a malformed trace: {malformed}")
            step["checkpoint"] = None
            step.pop("finished_subtasks", None)
            continue
        result, states = replayed
        fix = None
        for i, r in enumerate(result["steps"]):
            if r["state"] not in ("failed", "closed"):
                continue
            name = steps[i].get("instance", "main")
            later = next((s for s in steps[i + 1:] if s.get("instance", "main") == name), None)
            if later is not None and later["op"] not in ("start", "failover"):
                fix = (i, name)
                break
        if fix is None:
            return
        i, name = fix
        kept = [s["checkpoint"] for s in states if s["step"] < i and s["instance"] == name]
        failover = {"op": "failover", "checkpoint": rng.choice(kept) if kept and rng.random() < 0.7 else None}
        if name != "main":
            failover["instance"] = name
        steps.insert(i + 1, failover)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--writers", action="store_true", help="traces of writer steps (TRACE-FORMAT \"Writer steps\")")
    ap.add_argument("--repair", metavar="SINKCOORD", help="fix failovers without kept bytes (runs SINKCOORD replay --native)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i in range(args.count):
        rng = random.Random(args.seed * 1_000_003 + i)
        trace = (gen_writer_trace if args.writers else gen_trace)(rng, args.steps)
        if args.repair:
            repair(trace, args.repair, rng)
        prefix = "genw" if args.writers else "gen"
        path = os.path.join(args.out, f"{prefix}-{args.seed}-{i:04d}.trace.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(trace, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"wrote {args.count} traces to {args.out}")


if __name__ == "__main__":
    main()
