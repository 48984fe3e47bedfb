"""``Coordinator.set_table_format`` (component 0.2.5) on Paimon tables: the
golden job of every host (tests/paimon/golden/two-checkpoints.json, written by
the native core's guest/tests/paimon_golden.rs) leaves the same table byte for
byte; a 0.2.4 component refuses Paimon with the Rust host's message; a bad
committable is a fatal invalid-event; run.py's ``set-table-format`` line."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from typing import Any, Dict, List

import sink_coordinator as sc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GOLDEN = os.path.join(REPO, "tests", "paimon", "golden", "two-checkpoints.json")
NO_SET_TABLE_FORMAT = (
    "table-format paimon: the component has no set-table-format (it needs WIT 0.2.5 or later)"
)
SCRIPT = (
    '{"call": "coordinator", "h": 1, "args": [{"parallelism": 2, "commit-user": "job", '
    '"checkpointing": true, "final-commit": "on-checkpoint", "force-create-snapshot": false, '
    '"savepoint-auto-tag": false, "tag-time-retained-ms": null, "recovery": "restart"}, null]}\n'
    '{"call": "set-table-format", "h": 1, "args": ["paimon"]}\n'
)


def golden() -> Dict[str, Any]:
    with open(GOLDEN, encoding="utf-8") as f:
        doc: Dict[str, Any] = json.load(f)
    return doc


def paimon_coordinator(g: Dict[str, Any], storage: sc.MemoryStorage) -> sc.Coordinator:
    """A coordinator over ``storage`` holding the golden schema, set to Paimon."""
    storage.put_if_absent(g["schema"]["key"], bytes.fromhex(g["schema"]["value"]))
    cfg = g["config"]
    config = sc.Config(
        parallelism=cfg["parallelism"],
        commit_user=cfg["commit-user"],
        savepoint_auto_tag=cfg["savepoint-auto-tag"],
    )
    c = sc.Coordinator(config, storage, sc.ManualClock(g["clock-ms"]))
    c.set_table_format(sc.TableFormat.PAIMON)
    return c


class Paimon(unittest.TestCase):
    def run_golden_job(self, batched: bool) -> None:
        """The golden job: each event one ``event`` call, or (``batched``) each
        checkpoint's events as one ``events`` batch (events-packed: the
        committables cross as one block); its table must be the golden one."""
        g = golden()
        self.assertEqual(g["format"], "paimon")
        storage = sc.MemoryStorage()
        c = paimon_coordinator(g, storage)
        batch: List[sc.WriterEvent] = []
        for i, s in enumerate(g["steps"]):
            if s["call"] == "start":
                c.start()
            elif s["call"] == "event":
                entry = sc.Entry(
                    s["checkpoint"], [bytes.fromhex(h) for h in s["committables"]], s["watermark"], s["savepoint"]
                )
                if batched:
                    batch.append(sc.WriterEvent(s["subtask"], s["attempt"], entry))
                else:
                    c.event(s["subtask"], s["attempt"], entry)
            elif s["call"] == "checkpoint-complete":
                if batch:
                    c.events(batch)
                    batch = []
                out = c.checkpoint_complete(s["checkpoint"])
                self.assertEqual((out.committed, out.tags_created), (s["committed"], s["tags-created"]), f"step {i}")
            else:
                self.fail(f"step {i}: unknown call {s['call']}")
        got = {k: v.hex() for k, v in storage.items.items()}
        self.assertEqual(sorted(got), sorted(g["table"]), "the table's keys")
        for k, want in g["table"].items():
            self.assertEqual(got[k], want, k)

    def test_the_golden_job_writes_the_golden_table(self) -> None:
        self.run_golden_job(batched=False)

    def test_the_golden_job_in_batches_writes_the_golden_table(self) -> None:
        self.run_golden_job(batched=True)

    def test_a_bad_committable_is_a_fatal_invalid_event(self) -> None:
        storage = sc.MemoryStorage()
        c = paimon_coordinator(golden(), storage)
        c.start()
        with self.assertRaises(sc.InvalidEventError) as cm:
            c.event(1, 0, sc.Entry(7, [b"\x00"]))
        self.assertTrue(
            cm.exception.message.startswith("event of subtask 1 for checkpoint 7: committable 0: "),
            cm.exception.message,
        )
        self.assertEqual(c.state(), sc.Lifecycle.FAILED)
        self.assertEqual(list(storage.items), ["schema/schema-0"])

    def test_the_table_format_argument_sets_it_when_created(self) -> None:
        g = golden()
        storage = sc.MemoryStorage()
        storage.put_if_absent(g["schema"]["key"], bytes.fromhex(g["schema"]["value"]))
        c = sc.Coordinator(sc.Config(parallelism=2, commit_user="job"), storage, sc.ManualClock(1), table_format="paimon")
        c.start()
        with self.assertRaises(sc.InvalidEventError):
            c.event(0, 0, sc.Entry(1, [b"file-1"]))

    def test_the_format_is_chosen_only_while_created(self) -> None:
        c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job"), sc.MemoryStorage(), sc.ManualClock(1))
        c.start()
        with self.assertRaises(sc.IllegalStateError):
            c.set_table_format("paimon")
        with self.assertRaisesRegex(ValueError, "unknown table format 'iceberg'"):
            c.set_table_format("iceberg")  # type: ignore[arg-type]

    def test_a_0_2_4_component_refuses_paimon(self) -> None:
        old = sc.Runtime.from_file(os.path.join(REPO, "dist", "sink-coordinator-0.2.4.wasm"))
        c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job"), sc.MemoryStorage(), sc.ManualClock(1), runtime=old)
        c.set_table_format(sc.TableFormat.NATIVE)
        with self.assertRaises(sc.InvalidConfigError) as cm:
            c.set_table_format("paimon")
        self.assertEqual(cm.exception.message, NO_SET_TABLE_FORMAT)
        self.assertEqual(c.start().state, sc.Lifecycle.RUNNING, "the refusal left the coordinator usable")
        config = sc.Config(parallelism=1, commit_user="job")
        sc.Coordinator(config, sc.MemoryStorage(), runtime=old, table_format=sc.TableFormat.NATIVE)
        with self.assertRaises(sc.InvalidConfigError) as cm:
            sc.Coordinator(config, sc.MemoryStorage(), runtime=old, table_format=sc.TableFormat.PAIMON)
        self.assertEqual(cm.exception.message, NO_SET_TABLE_FORMAT)

    def test_run_py_sets_the_table_format(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "format.script")
            with open(script, "w", encoding="utf-8") as f:
                f.write(SCRIPT)
            run = [sys.executable, os.path.join(REPO, "hosts", "python", "run.py")]
            out = subprocess.run(run + [script], capture_output=True, text=True)
            self.assertEqual((out.returncode, out.stdout), (0, '{"ok":null}\n{"ok":null}\n'), out.stderr)
            old = os.path.join(REPO, "dist", "sink-coordinator-0.2.4.wasm")
            out = subprocess.run(run + ["--component", old, script], capture_output=True, text=True)
            err = json.dumps({"err": {"kind": "invalid-config", "message": NO_SET_TABLE_FORMAT}}, separators=(",", ":"))
            self.assertEqual((out.returncode, out.stdout), (0, '{"ok":null}\n' + err + "\n"), out.stderr)
            with open(script, "w", encoding="utf-8") as f:
                f.write(SCRIPT.replace('["paimon"]', '["iceberg"]'))
            out = subprocess.run(run + [script], capture_output=True, text=True)
            self.assertEqual(out.returncode, 1)
            self.assertIn("script line 2: set-table-format: ValueError: unknown table format 'iceberg'", out.stderr)


if __name__ == "__main__":
    unittest.main()
