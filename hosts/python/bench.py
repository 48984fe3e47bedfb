#!/usr/bin/env python3
"""Rough per-call timings of the component under wasmtime-py:
    python hosts/python/bench.py [--component FILE] [N]
state(): the smallest round trip; committed-up-to(): the query a host makes to
forward committed-up-to to its writers; event(): one writer event (buffered,
no storage call); event+complete: an event and the checkpoint-complete that
commits it (storage reads and writes through the imports); writer
report+committed: a writer helper buffering an entry and dropping it when the
host forwards committed-up-to."""

import os
import sys
import time
from importlib.metadata import version

from host import COORDINATOR, WRITER, ManualClock, MemStorage, Runtime, to_record, unwrap_result
from run import component_path

args = sys.argv[1:]
comp = None
if args[:1] == ["--component"]:
    comp, args = args[1], args[2:]
N = int(args[0]) if args else 5000

t0 = time.perf_counter()
runtime = Runtime.load(component_path(comp))
t1 = time.perf_counter()
storage, clock = MemStorage(), ManualClock(1000)
linker = runtime.linker(storage, clock)
config = to_record(parallelism=1, commit_user="bench", checkpointing=True, final_commit="on-checkpoint",
                   force_create_snapshot=False, savepoint_auto_tag=False, tag_time_retained_ms=None, recovery="restart")


def new_coordinator():
    inst = runtime.instantiate(linker)
    handle = inst.call(COORDINATOR, "[constructor]coordinator", config, None)
    unwrap_result(inst.call(COORDINATOR, "[method]coordinator.start", handle))
    return inst, handle


t2 = time.perf_counter()
inst, handle = new_coordinator()
t3 = time.perf_counter()
for _ in range(20):
    new_coordinator()
t4 = time.perf_counter()


def timed(label, n, fn):
    for i in range(min(500, n)):
        fn()
    start = time.perf_counter_ns()
    for i in range(n):
        fn()
    ns = (time.perf_counter_ns() - start) / n
    print(f"{label:<30} {ns / 1000:.2f} µs/call ({n} calls)")


print(f"python {sys.version.split()[0]}, wasmtime-py {version('wasmtime')}")
print(f"{'load (cached compile)':<30} {(t1 - t0) * 1000:.1f} ms")
print(f"{'first instance + start':<30} {(t3 - t2) * 1000:.2f} ms")
print(f"{'later instance + start':<30} {(t4 - t3) * 1000 / 20:.2f} ms")
state = inst.func(COORDINATOR, "[method]coordinator.state")
timed("state()", N, lambda: state(inst.store, handle))
up_to = inst.func(COORDINATOR, "[method]coordinator.committed-up-to")
timed("committed-up-to()", N, lambda: up_to(inst.store, handle))
event = inst.func(COORDINATOR, "[method]coordinator.event")
cp = [1]


def one_event():
    e = to_record(checkpoint=cp[0], committables=[b"file-0001.parquet"], watermark=5, savepoint=False)
    cp[0] += 1
    unwrap_result(event(inst.store, handle, 0, 0, e))


timed("event()", N, one_event)
inst, handle = new_coordinator()
event = inst.func(COORDINATOR, "[method]coordinator.event")
complete = inst.func(COORDINATOR, "[method]coordinator.checkpoint-complete")
cp[0] = 1


def event_complete():
    e = to_record(checkpoint=cp[0], committables=[b"file-0001.parquet"], watermark=5, savepoint=False)
    unwrap_result(event(inst.store, handle, 0, 0, e))
    unwrap_result(complete(inst.store, handle, cp[0]))
    cp[0] += 1


timed("event() + complete()", max(1, N // 10), event_complete)
winst = runtime.instantiate(linker)
writer = winst.call(WRITER, "[constructor]writer", 0)
report = winst.func(WRITER, "[method]writer.report")
committed = winst.func(WRITER, "[method]writer.committed")
cp[0] = 1


def report_committed():
    unwrap_result(report(winst.store, writer, cp[0], [b"file-0001.parquet"], 5, False))
    unwrap_result(committed(winst.store, writer, cp[0]))
    cp[0] += 1


timed("writer report() + committed()", N, report_committed)
