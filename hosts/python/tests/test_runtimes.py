"""The two runtimes of the package give the same results, byte for byte:
``core`` (the component's core module through wasmtime-py's core API, the
canonical ABI by hand: the default) and ``component`` (wasmtime-py's
component API, ``SINK_COORDINATOR_PY_RUNTIME=component``). One scenario
touches every export, both storage-error cases, a restore and the table
reads; each runtime records every value and error and the table's bytes."""

import os
import subprocess
import sys
import unittest
from typing import Any, List, Optional

import sink_coordinator as sc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
END = (1 << 63) - 1


class FlakyStorage(sc.MemoryStorage):
    """Fails chosen calls: (operation, key prefix) -> the error raised once."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: List[Any] = []
        self.calls: List[Any] = []

    def _check(self, op: str, key: str) -> None:
        self.calls.append((op, key))
        for i, (o, prefix, error) in enumerate(self.fail):
            if o == op and key.startswith(prefix):
                del self.fail[i]
                raise error

    def get(self, key: str) -> Optional[bytes]:
        self._check("get", key)
        return super().get(key)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        self._check("put_if_absent", key)
        return super().put_if_absent(key, value)

    def put(self, key: str, value: bytes) -> None:
        self._check("put", key)
        super().put(key, value)

    def list(self, prefix: str) -> List[str]:
        self._check("list", prefix)
        return super().list(prefix)


def attempt(seen: List[Any], call: Any) -> Any:
    """Records the value of ``call()``, or its error's class, message,
    applied count and outcome."""
    try:
        value = call()
    except sc.CoordinatorError as e:
        seen.append((type(e).__name__, e.message, e.applied, e.outcome))
        return None
    seen.append(value)
    return value


def scenario(runtime: sc.Runtime) -> Any:
    storage, clock = FlakyStorage(), sc.ManualClock(1_000)
    seen: List[Any] = []
    cfg = sc.Config(3, "job-ü", savepoint_auto_tag=True, tag_time_retained_ms=60_000)
    c = sc.Coordinator(cfg, storage, clock, runtime=runtime)
    attempt(seen, lambda: c.set_limits(sc.Limits(1 << 20, 1 << 21, 1 << 22)))
    attempt(seen, c.start)
    writers = [sc.Writer(s, runtime=runtime) for s in range(3)]
    blob = bytes(range(256))
    for cp in (1, 2, 3):
        entries = [w.report(cp, [blob * cp, b"", f"{s}/{cp}".encode()], -cp if s else None, cp == 2)
                   for s, w in enumerate(writers)]
        seen.append(entries)
        attempt(seen, lambda: c.events([sc.WriterEvent(s, 0, e) for s, e in enumerate(entries)]))
        state = attempt(seen, lambda: c.checkpoint(cp))
        clock.ms += 10
        if cp == 2:
            storage.fail.append(("put_if_absent", "snapshot/", sc.BackendIOError("the disk is gone")))
            attempt(seen, lambda: c.checkpoint_complete(cp))
        out = attempt(seen, lambda: c.checkpoint_complete(cp))
        if out is not None and out.committed_up_to is not None:
            for w in writers:
                attempt(seen, lambda: w.committed(out.committed_up_to))
        seen.append([w.state() for w in writers])
    attempt(seen, lambda: c.checkpoint_aborted(4))
    attempt(seen, lambda: c.subtask_reset(1, 3))
    attempt(seen, lambda: c.event(1, 1, writers[1].report(4, [b"late"], 9)))
    # A declined batch, an event for an unknown subtask (fatal), then every
    # call on the failed instance.
    attempt(seen, lambda: c.events([sc.WriterEvent(0, 0, sc.Entry(4, [b"a"])), sc.WriterEvent(9, 0, sc.Entry(4, []))]))
    attempt(seen, c.state)
    attempt(seen, c.committed_up_to)
    attempt(seen, c.close)
    # A restore from checkpoint 3's state bytes, replayed by restored writers.
    c2 = sc.Coordinator(cfg, storage, clock, sc.RestorePoint(3, state, [2]), runtime=runtime)
    attempt(seen, c2.start)
    for s in (0, 1):
        w = sc.Writer(s, runtime=runtime)
        entries = attempt(seen, lambda: w.restore(writers[s].state(), 3))
        attempt(seen, lambda: c2.restored(s, 1, 3, entries or []))
    attempt(seen, lambda: c2.event(0, 1, sc.Writer(0, runtime=runtime).end_input([b"end"], 99)))
    attempt(seen, lambda: c2.event(1, 1, sc.Entry(END, [], None)))
    storage.fail.append(("list", "tag/", sc.InvalidKeyError("no listing today")))
    table = sc.Table(storage, runtime=runtime)
    attempt(seen, table.list_tags)
    attempt(seen, table.list_tags)
    attempt(seen, table.list_snapshots)
    attempt(seen, table.latest_snapshot)
    attempt(seen, lambda: table.snapshot_by_id(2))
    attempt(seen, lambda: table.snapshot_by_id(99))
    attempt(seen, c2.close)
    attempt(seen, lambda: writers[0].report(2, [b"again"]))  # not increasing
    attempt(seen, lambda: writers[0].checkpoint_aborted(3))
    attempt(seen, lambda: sc.Writer(0, runtime=runtime).restore(b"\xff garbage", 1))
    return seen, sorted(storage.items.items()), storage.calls


class Runtimes(unittest.TestCase):
    def test_core_and_component_give_the_same_results_byte_for_byte(self) -> None:
        core, component = sc.Runtime(api="core"), sc.Runtime(api="component")
        self.assertEqual((core.api, component.api), ("core", "component"))
        a, b = scenario(core), scenario(component)
        self.assertEqual(a, b)
        # The scenario reached what it meant to: commits, errors, a restore.
        kinds = {x[0] for x in a[0] if isinstance(x, tuple)}
        self.assertTrue({"StorageError", "InvalidEventError", "CorruptStateError"} <= kinds, kinds)
        self.assertTrue(any(k.startswith("tag/") for k, _ in a[1]), a[1])

    def test_a_0_2_1_component_runs_on_its_core_module(self) -> None:
        path = os.path.join(REPO, "dist", "sink-coordinator-0.2.1.wasm")
        core, component = sc.Runtime.from_file(path, api="core"), sc.Runtime.from_file(path, api="component")
        self.assertEqual((core.version, component.version), ("0.2.1", "0.2.1"))

        def run(runtime: sc.Runtime) -> Any:
            storage = sc.MemoryStorage()
            c = sc.Coordinator(sc.Config(2, "job-1"), storage, sc.ManualClock(5), runtime=runtime)
            seen = [c.start(), c.events([sc.WriterEvent(s, 0, sc.Entry(1, [b"a" * 200, b""], -3)) for s in (0, 1)])]
            seen += [c.checkpoint(1), c.checkpoint_complete(1)]
            return seen, sorted(storage.items.items())

        self.assertEqual(run(core), run(component))

    def test_the_version_check_reads_the_core_module(self) -> None:
        core = os.path.join(REPO, "dist", "sink-coordinator-0.2.5.core.wasm")
        self.assertEqual(sc.Runtime.from_file(core, api="core").version, "0.2.5")
        with self.assertRaises(sc.IncompatibleComponent) as cm:
            sc.Runtime.from_file(os.path.join(REPO, "dist", "sink-coordinator-0.1.0.wasm"), api="core")
        self.assertEqual(
            str(cm.exception),
            "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0,"
            " the component is sink:coordinator@0.1.0",
        )
        with self.assertRaises(sc.IncompatibleComponent):
            sc.Runtime(b"\0asm\x01\0\0\0", api="core")  # no sink:coordinator export
        with self.assertRaises(sc.IncompatibleComponent):
            sc.Runtime(b"not wasm at all", api="core")
        with self.assertRaises(sc.IncompatibleComponent):
            sc.Runtime.from_file(core, api="component")

    def test_the_environment_variable_picks_the_runtime(self) -> None:
        code = "import sink_coordinator as sc; print(sc.Runtime().api)"
        for value, want in (("core", "core"), ("component", "component"), ("", "core")):
            env = dict(os.environ, SINK_COORDINATOR_PY_RUNTIME=value)
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            self.assertEqual(out.stdout.strip(), want, out.stderr)
        with self.assertRaisesRegex(ValueError, "core or component"):
            sc.Runtime(api="jit")

    def test_bad_arguments_fail_without_wrapping(self) -> None:
        # A raw ABI value wraps silently; the core runtime refuses it as the
        # component runtime does (a TrapError: the handle is discarded).
        for bad in (-1, 1 << 32, "0", True):
            runtime = sc.Runtime(api="core")
            c = sc.Coordinator(sc.Config(2, "job-1"), sc.MemoryStorage(), sc.ManualClock(0), runtime=runtime)
            c.start()
            with self.assertRaises(sc.TrapError, msg=repr(bad)):
                c.event(bad, 0, sc.Entry(1, []))  # type: ignore[arg-type]
            self.assertTrue(c.discarded)


if __name__ == "__main__":
    unittest.main()
