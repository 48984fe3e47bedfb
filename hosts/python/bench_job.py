#!/usr/bin/env python3
"""The realistic job of issue 10 (BENCHMARKS.md) through the installed
sink_coordinator package (wasmtime-py), for ``make bench``'s "Python ÷ Rust"
row:
    python hosts/python/bench_job.py [--writers P] [--cycles N] [--per-event]
One cycle: every writer's event for checkpoint c (4 committables of 200 B,
built before the clock starts, as testkit/src/perf.rs does), the
coordinator's state taken, c completed and committed as one snapshot. The
events of a cycle go as one ``events`` batch (a host receives them in a burst
per checkpoint), or one ``event`` call each with --per-event. Prints one JSON
line; the figure is the median of 5 rounds of N cycles. Nothing is asserted
about time."""

import argparse
import json
import platform
import time
from importlib.metadata import version
from typing import Dict, List, Optional

import sink_coordinator as sc

COMMITTABLES = 4
BYTES = 200
KEPT_SNAPSHOTS = 4


class BenchStorage:
    """In-memory storage keeping only the latest snapshot records (as the Rust bench's)."""

    def __init__(self) -> None:
        self.map: Dict[str, bytes] = {}
        self.snapshots: List[str] = []

    def get(self, key: str) -> Optional[bytes]:
        return self.map.get(key)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        if key in self.map:
            return False
        self.map[key] = bytes(value)
        if key.startswith("snapshot/"):
            self.snapshots.append(key)
            if len(self.snapshots) > KEPT_SNAPSHOTS:
                del self.map[self.snapshots.pop(0)]
        return True

    def put(self, key: str, value: bytes) -> None:
        self.map[key] = bytes(value)

    def delete(self, key: str) -> None:
        self.map.pop(key, None)

    def list(self, prefix: str) -> List[str]:
        return sorted((k for k in self.map if k.startswith(prefix)), key=lambda k: k.encode())


def entry(s: int, c: int) -> sc.Entry:
    committables = []
    for i in range(COMMITTABLES):
        tag = f"{s}/{c}/{i}".encode()
        committables.append(tag + b"x" * (BYTES - len(tag)))
    return sc.Entry(c, committables, c * 1000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", type=int, default=256)
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--per-event", action="store_true")
    ap.add_argument("--component", help="a component file instead of the package's own")
    a = ap.parse_args()
    p = a.writers
    runtime = sc.Runtime.from_file(a.component) if a.component else sc.Runtime()
    c = sc.Coordinator(sc.Config(parallelism=p, commit_user="bench"), BenchStorage(), sc.ManualClock(0), runtime=runtime)
    c.start()
    batched = not a.per_event and hasattr(c, "events")
    cp = 0

    def cycle(entries: List[sc.Entry]) -> None:
        nonlocal cp
        cp += 1
        if batched:
            c.events([sc.WriterEvent(s, 0, e) for s, e in enumerate(entries)])  # type: ignore[attr-defined]
        else:
            for s, e in enumerate(entries):
                c.event(s, 0, e)
        c.checkpoint(cp)
        out = c.checkpoint_complete(cp)
        if len(out.committed) != 1:
            raise SystemExit(f"checkpoint {cp}: {len(out.committed)} snapshots")

    for _ in range(3):
        cycle([entry(s, cp + 1) for s in range(p)])
    rounds = []
    for _ in range(5):
        ns = 0
        for _ in range(a.cycles):
            entries = [entry(s, cp + 1) for s in range(p)]
            t = time.perf_counter_ns()
            cycle(entries)
            ns += time.perf_counter_ns() - t
        rounds.append(ns / a.cycles)
    rounds.sort()
    cycle_ns = rounds[2]
    print(json.dumps({
        "host": "python",
        "runtime": f"python {platform.python_version()}, wasmtime-py {version('wasmtime')}",
        "batched": batched,
        "writers": p,
        "cycles": a.cycles * 5,
        "cycle_ns": round(cycle_ns),
        "event_ns": round(cycle_ns / p),
    }))


if __name__ == "__main__":
    main()
