"""Tests of the installed ``sink_coordinator`` package (run by
hosts/python/package.sh with the fresh venv's interpreter, so the import below
is the installed wheel, not the sources): the typed API, the error classes,
both storages, the version check, and the storage-error workaround."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import sink_coordinator as sc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

# The hostile-storage and guard cases (issue 26) run with these tests.
sys.path.insert(0, HERE)
from test_hostile import Guards, Hostile  # noqa: E402,F401
# The storage conformance suite of every host (tests/storage/cases.json).
from test_storage_conformance import StorageConformance  # noqa: E402,F401
# ObjectStoreStorage (the s3 extra, obstore) on moto's S3 API and on obstore's
# memory store: the conformance cases, two checkpoints, a create race.
from test_object_storage import ObjectStorageS3, WithoutObstore  # noqa: E402,F401
# A directory table failing mid-run: a typed error, then recovery (issue 26).
from test_storage_failure import MidRunFailure  # noqa: E402,F401
# set-table-format: the golden Paimon job, the 0.2.4 refusal, bad committables.
from test_table_format import Paimon  # noqa: E402,F401
# The Paimon committable builder against tests/paimon/committables.json.
from test_paimon_committable import PaimonCommittable  # noqa: E402,F401
# The core and component runtimes give the same results, byte for byte.
from test_runtimes import Runtimes  # noqa: E402,F401

MESSAGE_0_1 = (
    "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, "
    "the component is sink:coordinator@0.1.0"
)


def config(parallelism: int = 1) -> sc.Config:
    return sc.Config(parallelism=parallelism, commit_user="job-1")


class Examples(unittest.TestCase):
    def run_example(self, page: str, section: str) -> None:
        with open(os.path.join(REPO, page), encoding="utf-8") as f:
            code = re.search(section + r"\n[\s\S]*?```python\n(.*?)```", f.read(), re.S).group(1)
        with tempfile.TemporaryDirectory() as cwd:
            out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("[1] Snapshot(id=1, "), out.stdout)

    def test_the_readme_example_runs(self) -> None:
        self.run_example("hosts/python/README.md", "## Example")

    def test_the_docs_page_example_runs(self) -> None:
        self.run_example("docs/hosts/python.md", "## Minimal example")


class Installed(unittest.TestCase):
    def test_the_package_is_the_installed_one_with_its_component(self) -> None:
        self.assertNotIn(os.path.join("hosts", "python", "src"), sc.__file__)
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(sc.__file__), "py.typed")))
        with open(os.path.join(REPO, "dist", f"sink-coordinator-{sc.COMPONENT_VERSION}.wasm"), "rb") as f:
            self.assertEqual(sc.embedded_wasm(), f.read())
        # And its core module, which the default (core) runtime runs.
        from sink_coordinator.runtime import embedded_core

        with open(os.path.join(REPO, "dist", f"sink-coordinator-{sc.COMPONENT_VERSION}.core.wasm"), "rb") as f:
            self.assertEqual(embedded_core(), f.read())
        self.assertEqual(sc.Runtime.default().version, sc.COMPONENT_VERSION)


class Version(unittest.TestCase):
    def test_the_0_1_0_artifact_is_refused_with_the_range_and_the_version(self) -> None:
        with self.assertRaises(sc.IncompatibleComponent) as cm:
            sc.Runtime.from_file(os.path.join(REPO, "dist", "sink-coordinator-0.1.0.wasm"))
        self.assertEqual(str(cm.exception), MESSAGE_0_1)
        self.assertEqual(cm.exception.found, ["0.1.0"])

    def test_names_without_the_interfaces_several_versions_other_versions(self) -> None:
        with self.assertRaisesRegex(
            sc.IncompatibleComponent,
            r"^not a sink-coordinator component: .*\(this host runs sink:coordinator >=0.2.1, <0.3.0\)$",
        ):
            sc.check_version(["foo:bar/baz@0.2.0"])
        with self.assertRaisesRegex(sc.IncompatibleComponent, r"several versions \(0.1.0, 0.2.1\)"):
            sc.check_version(["sink:coordinator/table@0.1.0", "sink:coordinator/writer@0.2.1"])
        for v in ["0.2.0", "0.3.0", "1.0.0", "0.2.1-rc.1", "v0.2.1", "x"]:
            with self.assertRaises(sc.IncompatibleComponent) as cm:
                sc.check_version([f"sink:coordinator/coordinator@{v}"])
            self.assertTrue(str(cm.exception).endswith(f"sink:coordinator@{v}"), str(cm.exception))
        self.assertEqual(sc.check_version(["sink:coordinator/coordinator@0.2.9"]), "0.2.9")


class Api(unittest.TestCase):
    def test_commit_restore_and_tags(self) -> None:
        storage, clock = sc.MemoryStorage(), sc.ManualClock(5)
        c = sc.Coordinator(sc.Config(2, "job-1", savepoint_auto_tag=True), storage, clock)
        self.assertEqual(c.state(), sc.Lifecycle.CREATED)
        self.assertEqual(c.start().state, sc.Lifecycle.RUNNING)
        w0, w1 = sc.Writer(0), sc.Writer(1)
        c.event(0, 0, w0.report(1, [b"a"]))
        c.event(1, 0, w1.report(1, [b"b"], watermark=-3, savepoint=True))
        state = c.checkpoint(1)
        outcome = c.checkpoint_complete(1)
        self.assertEqual(outcome.committed, [1])
        self.assertEqual(outcome.committed_up_to, 1)
        self.assertEqual(len(outcome.tags_created), 1)
        self.assertEqual(c.committed_up_to(), 1)
        w0.committed(1)
        self.assertEqual(sc.Writer(0).restore(w0.state(), 1), [])  # nothing left to send
        table = sc.Table(storage)
        [snap] = table.list_snapshots()
        self.assertEqual(snap.committables, [(0, b"a"), (1, b"b")])
        self.assertEqual(snap.time_ms, 5)
        self.assertEqual(table.latest_snapshot(), snap)
        self.assertEqual(table.snapshot_by_id(snap.id), snap)
        self.assertIsNone(table.snapshot_by_id(99))
        [tag] = table.list_tags()
        self.assertEqual((tag.snapshot_id, tag.identifier), (snap.id, 1))
        # A new coordinator restored from checkpoint 1's state commits nothing twice.
        again = sc.Coordinator(config(2), storage, clock, sc.RestorePoint(1, state))
        self.assertEqual(again.start().committed, [])
        self.assertEqual(len(table.list_snapshots()), 1)

    def test_a_batch_of_events_is_the_same_events_one_by_one(self) -> None:
        def run(batched: bool) -> object:
            storage, clock = sc.MemoryStorage(), sc.ManualClock(5)
            c = sc.Coordinator(sc.Config(3, "job-1", savepoint_auto_tag=True), storage, clock)
            c.start()
            seen: list[object] = []
            for cp in (1, 2):
                events = [sc.WriterEvent(s, 0, sc.Entry(cp, [f"{s}-{cp}".encode()], savepoint=cp == 2)) for s in range(3)]
                o = c.events(events) if batched else [c.event(e.subtask, e.attempt, e.entry) for e in events][-1]
                seen.append((o.state, o.committed, o.tags_created, o.committed_up_to))
                c.checkpoint(cp)
                seen.append(c.checkpoint_complete(cp))
            return seen, sc.Table(storage).list_snapshots()

        self.assertEqual(run(True), run(False))
        # An error names the failing event; the ones before it stay applied.
        c = sc.Coordinator(config(2), sc.MemoryStorage())
        c.start()
        self.assertEqual(c.events([]).state, sc.Lifecycle.RUNNING)
        ev = [sc.WriterEvent(s, 0, sc.Entry(1, [b"x"])) for s in (0, 1, 7, 0)]
        with self.assertRaises(sc.InvalidEventError) as cm:
            c.events(ev)
        self.assertEqual(cm.exception.applied, 2)
        assert cm.exception.outcome is not None
        self.assertEqual(cm.exception.outcome.state, sc.Lifecycle.FAILED)
        self.assertEqual(c.state(), sc.Lifecycle.FAILED)

    def test_the_public_value_path_gives_the_same_results(self) -> None:
        # ``fast_values=False``: wasmtime-py's own converters instead of
        # ``_fastval`` (the switch back should its internals change).
        def run(runtime: sc.Runtime) -> object:
            storage, clock = sc.MemoryStorage(), sc.ManualClock(5)
            c = sc.Coordinator(sc.Config(2, "job-1", savepoint_auto_tag=True), storage, clock, runtime=runtime)
            seen: list[object] = [c.start()]
            for cp in (1, 2):
                blob = bytes(range(256)) * cp
                events = [sc.WriterEvent(s, 0, sc.Entry(cp, [blob, b""], watermark=-cp, savepoint=cp == 2)) for s in range(2)]
                seen.append(c.events(events))
                seen.append(c.checkpoint(cp))
                seen.append(c.checkpoint_complete(cp))
            seen.append(c.event(0, 0, sc.Entry((1 << 63) - 1, [b"end"])))
            table = sc.Table(storage, runtime=runtime)
            return seen, table.list_snapshots(), table.list_tags()

        # On the component runtime, where ``fast_values`` applies.
        plain = sc.Runtime(fast_values=False, api="component")
        self.assertFalse(plain.fast_values)
        self.assertTrue(sc.Runtime(api="component").fast_values)
        self.assertEqual(run(plain), run(sc.Runtime(api="component")))
        self.assertEqual(run(plain), run(sc.Runtime.default()))

    def test_a_0_2_1_component_batches_through_events(self) -> None:
        """The 0.2.2 package sends batches through ``events-packed``; a 0.2.1
        component has none and gets ``events``: the same results."""
        old = sc.Runtime.from_file(os.path.join(REPO, "dist", "sink-coordinator-0.2.1.wasm"))

        def run(runtime: "sc.Runtime | None") -> object:
            storage = sc.MemoryStorage()
            c = sc.Coordinator(config(2), storage, sc.ManualClock(5), runtime=runtime)
            c.start()
            ev = [sc.WriterEvent(s, 1, sc.Entry(1, [b"a" * 200, b"", bytes(range(256))], -3)) for s in (0, 1)]
            seen = [c.events(ev)]
            c.checkpoint(1)
            seen.append(c.checkpoint_complete(1))
            return seen, sc.Table(storage).list_snapshots()

        self.assertEqual(run(old), run(None))
        self.assertEqual(sc.pack_committables([b"ab", b""]), bytes([2, 2]) + b"ab" + bytes([0]))
        self.assertEqual(sc.pack_committables([b"x" * 300])[:3], bytes([1, 0xAC, 0x02]))

    def test_one_exception_class_per_error_kind(self) -> None:
        c = sc.Coordinator(config(), sc.MemoryStorage())
        with self.assertRaises(sc.IllegalStateError) as cm:
            c.checkpoint_complete(1)  # before start
        self.assertEqual(cm.exception.kind, "illegal-state")
        self.assertIsInstance(cm.exception, sc.CoordinatorError)
        with self.assertRaises(sc.InvalidConfigError):
            sc.Coordinator(config(), sc.MemoryStorage()).set_limits(sc.Limits(max_event_bytes=0))
        c = sc.Coordinator(config(), sc.MemoryStorage())
        c.start()
        with self.assertRaises(sc.InvalidEventError):
            c.event(5, 0, sc.Entry(1, [b"x"]))  # subtask out of range
        with self.assertRaises(sc.CorruptStateError):
            sc.Coordinator(config(), sc.MemoryStorage(), restore=sc.RestorePoint(1, b"\xff\xff")).start()
        self.assertEqual(
            sorted(sc.errors.ERRORS),
            ["corrupt-state", "declined", "illegal-state", "invalid-config", "invalid-event", "storage", "trap"],
        )

    def test_a_storage_error_from_get_is_a_storage_error_not_a_trap(self) -> None:
        class Failing(sc.MemoryStorage):
            def get(self, key: str):  # type: ignore[no-untyped-def]
                raise sc.BackendIOError(f"disk on fire reading {key}")

        c = sc.Coordinator(config(), Failing())
        c.start()
        with self.assertRaises(sc.StorageError) as cm:
            c.event(0, 0, sc.Entry(1, [b"a"]))  # reads the latest-snapshot hint
        self.assertIn("disk on fire", cm.exception.message)
        self.assertFalse(c.discarded)

    def test_any_other_exception_in_a_storage_traps_and_discards_the_handle(self) -> None:
        class Broken(sc.MemoryStorage):
            def get(self, key: str):  # type: ignore[no-untyped-def]
                raise RuntimeError("bug")

        c = sc.Coordinator(config(), Broken())
        c.start()
        with self.assertRaises(sc.TrapError):
            c.event(0, 0, sc.Entry(1, [b"a"]))
        self.assertTrue(c.discarded)
        with self.assertRaises(sc.TrapError):
            c.state()


class Bytes(unittest.TestCase):
    """Byte lists cross in blocks (``_fastval``): every byte value, empty
    and large values, both ways and through the storage imports."""

    def test_bytes_cross_unchanged_both_ways(self) -> None:
        values = [b"", bytes(range(256)), bytes(range(255, -1, -1)) * 4096, b"\x00"]
        w = sc.Writer(0)
        sent = w.report(1, values, -5, True)
        self.assertEqual(sent.committables, values)
        restored = sc.Writer(0).restore(w.state(), 1)
        self.assertEqual([e.committables for e in restored], [values])
        storage = sc.MemoryStorage()
        c = sc.Coordinator(sc.Config(parallelism=1, commit_user="bytes"), storage, sc.ManualClock(7))
        c.start()
        c.event(0, 0, sent)
        self.assertEqual(c.checkpoint_complete(1).committed, [1])
        snapshot = sc.Table(storage).latest_snapshot()
        assert snapshot is not None
        self.assertEqual(snapshot.committables, [(0, v) for v in values])


class Directory(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sink-coordinator-dir-")

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_table_in_a_directory_reads_back_and_sinkcoord_inspects_it(self) -> None:
        storage = sc.DirectoryStorage(self.dir)
        c = sc.Coordinator(config(), storage, sc.ManualClock(7))
        c.start()
        for cp in (1, 2):
            c.event(0, 0, sc.Entry(cp, [f"f{cp}".encode()]))
            c.checkpoint(cp)
            c.checkpoint_complete(cp)
        fresh = sc.Table(sc.DirectoryStorage(self.dir))
        self.assertEqual([s.identifier for s in fresh.list_snapshots()], [1, 2])
        sinkcoord = os.path.join(REPO, "target", "release", "sinkcoord")
        if os.path.exists(sinkcoord):
            out = subprocess.run([sinkcoord, "inspect", self.dir, "--json"], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn('[0,"f2"]', out.stdout.replace(" ", ""))

    def test_keys_are_confined_and_writes_are_create_once(self) -> None:
        s = sc.DirectoryStorage(self.dir)
        for bad in ["", "/abs", "a/../b", "a//b", "a\\b", "a/./b", "x/.sinkcoord-tmp.1"]:
            with self.assertRaises(sc.InvalidKeyError, msg=bad):
                s.get(bad)
        self.assertTrue(s.put_if_absent("snapshot/1", b"one"))
        self.assertFalse(s.put_if_absent("snapshot/1", b"two"))
        self.assertEqual(s.get("snapshot/1"), b"one")
        s.put("hint/latest", b"1")
        s.put("hint/latest", b"2")
        self.assertEqual(s.get("hint/latest"), b"2")
        self.assertEqual(s.list(""), ["hint/latest", "snapshot/1"])
        self.assertEqual(s.list("snap"), ["snapshot/1"])
        self.assertEqual(s.list("snapshot/"), ["snapshot/1"])
        self.assertEqual(s.list("tag/"), [])
        s.delete("snapshot/1")
        s.delete("snapshot/1")
        self.assertIsNone(s.get("snapshot/1"))
        self.assertEqual(sorted(os.listdir(os.path.join(self.dir, "snapshot"))), [])


if __name__ == "__main__":
    unittest.main()
