#!/usr/bin/env python3
"""Rough per-call timings of the installed sink_coordinator package
(wasmtime-py), including the package's marshalling:
    python hosts/python/bench.py [--component FILE] [N]
state(): the smallest round trip; committed_up_to(): the query a host makes to
forward committed-up-to to its writers; event(): one writer event (buffered,
no storage call); event+complete: an event and the checkpoint_complete that
commits it (storage reads and writes through the imports); writer
report+committed: a writer buffering an entry and dropping it when the host
forwards committed-up-to."""

import sys
import time
from importlib.metadata import version

import sink_coordinator as sc

args = sys.argv[1:]
comp = None
if args[:1] == ["--component"]:
    comp, args = args[1], args[2:]
N = int(args[0]) if args else 5000

t0 = time.perf_counter()
runtime = sc.Runtime.from_file(comp) if comp else sc.Runtime()
t1 = time.perf_counter()
config = sc.Config(parallelism=1, commit_user="bench")


def new_coordinator() -> sc.Coordinator:
    c = sc.Coordinator(config, sc.MemoryStorage(), sc.ManualClock(1000), runtime=runtime)
    c.start()
    return c


t2 = time.perf_counter()
c = new_coordinator()
t3 = time.perf_counter()
for _ in range(20):
    new_coordinator()
t4 = time.perf_counter()


def timed(label, n, fn):
    for _ in range(min(500, n)):
        fn()
    start = time.perf_counter_ns()
    for _ in range(n):
        fn()
    ns = (time.perf_counter_ns() - start) / n
    print(f"{label:<30} {ns / 1000:.2f} µs/call ({n} calls)")


print(f"python {sys.version.split()[0]}, wasmtime-py {version('wasmtime')}")
print(f"{'load (compile)':<30} {(t1 - t0) * 1000:.1f} ms")
print(f"{'first instance + start':<30} {(t3 - t2) * 1000:.2f} ms")
print(f"{'later instance + start':<30} {(t4 - t3) * 1000 / 20:.2f} ms")
timed("state()", N, c.state)
timed("committed_up_to()", N, c.committed_up_to)
cp = [1]


def one_event():
    c.event(0, 0, sc.Entry(cp[0], [b"file-0001.parquet"], 5))
    cp[0] += 1


timed("event()", N, one_event)
c = new_coordinator()
cp[0] = 1


def event_complete():
    c.event(0, 0, sc.Entry(cp[0], [b"file-0001.parquet"], 5))
    c.checkpoint_complete(cp[0])
    cp[0] += 1


timed("event() + complete()", max(1, N // 10), event_complete)
w = sc.Writer(0, runtime=runtime)
cp[0] = 1


def report_committed():
    w.report(cp[0], [b"file-0001.parquet"], 5)
    w.committed(cp[0])
    cp[0] += 1


timed("writer report() + committed()", N, report_committed)
