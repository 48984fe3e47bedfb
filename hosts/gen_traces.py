#!/usr/bin/env python3
"""Writes pseudo-random but mostly well-behaved traces (TRACE-FORMAT v1) for
cross-runtime comparison: every op, several instances over one table, storage
faults of every kind and mode, clock steps, failovers from kept checkpoints
and from raw state bytes, savepoints, END entries.

    python3 hosts/gen_traces.py OUT_DIR [--count N] [--seed S] [--steps K] [--repair COMPONENT]

Deterministic for a given seed. Needs only the standard library, except
--repair: the generator cannot know which `checkpoint` steps will succeed, so
a `failover` may name a checkpoint for which no state bytes were kept (a
malformed trace). With --repair, each trace is replayed with the Python host
(wasmtime-py) and every such failover gets `"checkpoint": null` instead.
"""

import argparse
import json
import os
import random

END = "end"


def gen_trace(rng: random.Random, n_steps: int) -> dict:
    p = rng.choice([1, 1, 2, 2, 3])
    config = {"parallelism": p, "commit_user": rng.choice(["job-1", "job-\u00e9", 'job "q"'])}
    if rng.random() < 0.5:
        config["savepoint_auto_tag"] = True
    if rng.random() < 0.3:
        config["tag_time_retained_ms"] = rng.choice([0, 1000, 2**63])
    if rng.random() < 0.3:
        config["force_create_snapshot"] = True
    if rng.random() < 0.2:
        config["final_commit"] = "on-end-input"
    if rng.random() < 0.15:
        config["checkpointing"] = False
    if rng.random() < 0.3:
        config["recovery"] = "continue"
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


def repair(trace: dict, runtime, rng: random.Random) -> None:
    """Replays the trace (Python host) and fixes what only a run can tell:
    a failover naming a checkpoint without kept bytes gets `null`; an
    instance left failed or closed while later steps still use it gets a
    failover right away (from a checkpoint that was kept, or fresh)."""
    from replayer import replay
    from tracefile import Malformed, parse_trace

    steps = trace["steps"]
    for _ in range(4 * len(steps) + 10):
        try:
            result = replay(parse_trace(json.dumps(trace).encode("utf-8")), runtime)
        except Malformed as e:
            step = steps[e.step] if e.step is not None else None
            if step is None or step.get("op") != "failover" or e.field != "checkpoint":
                raise
            step["checkpoint"] = None
            step.pop("finished_subtasks", None)
            continue
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
        kept = [s["checkpoint"] for s in result["states"] if s["step"] < i and s["instance"] == name]
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
    ap.add_argument("--repair", metavar="COMPONENT", help="fix failovers without kept bytes (needs wasmtime-py)")
    args = ap.parse_args()
    runtime = None
    if args.repair:
        import sys

        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
        from host import Runtime

        runtime = Runtime.load(args.repair)
    os.makedirs(args.out, exist_ok=True)
    for i in range(args.count):
        rng = random.Random(args.seed * 1_000_003 + i)
        trace = gen_trace(rng, args.steps)
        if runtime is not None:
            repair(trace, runtime, rng)
        path = os.path.join(args.out, f"gen-{args.seed}-{i:04d}.trace.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(trace, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"wrote {args.count} traces to {args.out}")


if __name__ == "__main__":
    main()
