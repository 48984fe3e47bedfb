#!/usr/bin/env python3
"""Executes a resolved call script (`sinkcoord script TRACE`, format in
hosts/README.md) through the *installed* `sink_coordinator` package (its
typed API: Coordinator, Writer, Table, a Storage and a Clock) and prints
each call's raw result, one JSON line per call line: {"ok": VALUE} or
{"err": {"kind", "message"}}. `sinkcoord script --render RAW TRACE` turns
them into the result document. The trace semantics (parsing, outboxes,
faults, rendering) live in the Rust test kit; this script only turns the
script's arguments into the package's values and back, and serves storage
and clock from the script, checking every import call against it.

    python hosts/python/run.py [--component FILE] SCRIPT

--component  the component (default: the one inside the package); compiled
             code is cached in $SINK_COORDINATOR_CACHE_DIR, else
             <repo>/target/python-cache

Exit codes: 0 executed (even if calls returned errors), 1 the component's
calls differ from the script, it trapped, or the host failed; 2 usage.
"""

import json
import os
import sys
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USAGE = "usage: python run.py [--component FILE] SCRIPT"


def fail(code: int, message: str) -> "None":
    sys.stderr.write(f"run.py: {message}\n")
    sys.exit(code)


class Divergence(Exception):
    """The component's import calls differ from the script."""


class Script:
    """The script lines, the position in them, and the storage and clock
    served from them (a `Storage` and a `Clock` of the package; wire form:
    testkit/src/script/wire.rs)."""

    def __init__(self, lines: List[Dict[str, Any]]):
        self.lines = lines
        self.pos = 0
        self.divergence: Optional[str] = None
        self.map: Dict[str, bytes] = {}

    def diverge(self, message: str) -> "None":
        if self.divergence is None:
            self.divergence = f"script line {self.pos + 1}: {message}"
        raise Divergence(self.divergence)

    def expect(self, kind: str, call: Dict[str, Any]) -> Dict[str, Any]:
        line = self.lines[self.pos] if self.pos < len(self.lines) else None
        if line is None or kind not in line or any(line.get(k) != v for k, v in call.items()):
            self.diverge(f"the component calls {json.dumps(call)}, the script has {json.dumps(line)}")
        self.pos += 1
        return line

    @staticmethod
    def error(fault: Dict[str, Any]) -> Exception:
        cls = {"io": sc.BackendIOError, "invalid-key": sc.InvalidKeyError}[fault["kind"]]
        return cls(fault["message"])

    def _write(self, op: str, key: str, value: Optional[bytes], apply) -> Any:
        call = {"storage": op, "key": key}
        if value is not None:
            call["value"] = bytes(value).hex()
        fault = self.expect("storage", call)["fault"]
        if fault and not fault["applied"]:
            raise self.error(fault)
        result = apply()
        if fault:
            raise self.error(fault)
        return result

    # Storage
    def get(self, key: str) -> Optional[bytes]:
        fault = self.expect("storage", {"storage": "get", "key": key})["fault"]
        if fault:
            raise self.error(fault)
        return self.map.get(key)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        def apply() -> bool:
            created = key not in self.map
            if created:
                self.map[key] = bytes(value)
            return created

        return self._write("put-if-absent", key, value, apply)

    def put(self, key: str, value: bytes) -> None:
        self._write("put", key, value, lambda: self.map.__setitem__(key, bytes(value)))

    def delete(self, key: str) -> None:
        self._write("delete", key, None, lambda: self.map.pop(key, None) and None)

    def list(self, prefix: str) -> List[str]:
        fault = self.expect("storage", {"storage": "list", "key": prefix})["fault"]
        if fault:
            raise self.error(fault)
        return sorted((k for k in self.map if k.startswith(prefix)), key=lambda k: k.encode("utf-8"))

    # Clock
    def now_ms(self) -> int:
        return int(self.expect("clock", {})["clock"]["u64"])


def decode(v: Any) -> Any:
    """A script argument as plain Python: numbers, bytes, dicts with
    snake_case keys (records), strings (enums), None."""
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "u64" in v or "s64" in v:
        return int(v.get("u64", v.get("s64")))
    if "bytes" in v:
        return bytes.fromhex(v["bytes"])
    return {k.replace("-", "_"): decode(x) for k, x in v.items()}


def encode(v: Any) -> Any:
    """A value the package returned, in the raw result form (kebab-case
    record fields, enums by their WIT names, bytes as hex)."""
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if dataclasses.is_dataclass(v):
        return {f.name.replace("_", "-"): encode(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, enum.Enum):
        return v.value
    return v


def entry(d: Dict[str, Any]) -> "sc.Entry":
    return sc.Entry(**d)


def config(d: Dict[str, Any]) -> "sc.Config":
    d = dict(d, final_commit=sc.FinalCommitMode(d["final_commit"]), recovery=sc.RecoveryMode(d["recovery"]))
    return sc.Config(**d)


def main() -> None:
    args = sys.argv[1:]
    component = None
    if args[:1] == ["--component"]:
        component, args = args[1], args[2:]
    if len(args) != 1 or args[0].startswith("-"):
        fail(2, USAGE)
    with open(args[0], encoding="utf-8") as f:
        script = Script([json.loads(l) for l in f if l.strip()])
    cache = os.environ.get("SINK_COORDINATOR_CACHE_DIR") or os.path.join(REPO, "target", "python-cache")
    try:
        runtime = (
            sc.Runtime.from_file(component, cache_dir=cache) if component else sc.Runtime(cache_dir=cache)
        )
    except sc.IncompatibleComponent as e:
        fail(1, str(e))
    handles: Dict[int, Any] = {}
    table = sc.Table(script, script, runtime=runtime)

    coordinator_calls = {
        "set-limits": lambda c, a: c.set_limits(sc.Limits(**a[0])),
        "set-table-format": lambda c, a: c.set_table_format(a[0]),
        "start": lambda c, a: c.start(),
        "event": lambda c, a: c.event(a[0], a[1], entry(a[2])),
        "restored": lambda c, a: c.restored(a[0], a[1], a[2], [entry(e) for e in a[3]]),
        "subtask-reset": lambda c, a: c.subtask_reset(a[0], a[1]),
        "checkpoint": lambda c, a: c.checkpoint(a[0]),
        "checkpoint-complete": lambda c, a: c.checkpoint_complete(a[0]),
        "checkpoint-aborted": lambda c, a: c.checkpoint_aborted(a[0]),
        "close": lambda c, a: c.close(),
        "state": lambda c, a: c.state(),
        "committed-up-to": lambda c, a: c.committed_up_to(),
    }
    writer_calls = {
        "report": lambda w, a: w.report(a[0], a[1], a[2], a[3]),
        "end-input": lambda w, a: w.end_input(a[0], a[1]),
        "committed": lambda w, a: w.committed(a[0]),
        "checkpoint-aborted": lambda w, a: w.checkpoint_aborted(a[0]),
        "state": lambda w, a: w.state(),
        "restore": lambda w, a: w.restore(a[0], a[1]),
    }
    table_calls = {
        "latest-snapshot": lambda a: table.latest_snapshot(),
        "snapshot-by-id": lambda a: table.snapshot_by_id(a[0]),
        "list-snapshots": lambda a: table.list_snapshots(),
        "list-tags": lambda a: table.list_tags(),
    }

    def invoke(line: Dict[str, Any], a: List[Any]) -> Any:
        name, h = line["call"], line.get("h")
        if name == "coordinator":
            restore = None if a[1] is None else sc.RestorePoint(**a[1])
            handles[h] = sc.Coordinator(config(a[0]), script, script, restore, runtime=runtime)
            return None
        if name == "writer":
            handles[h] = sc.Writer(a[0], storage=script, clock=script, runtime=runtime)
            return None
        if h is None:
            return table_calls[name](a)
        if h not in handles:
            script.diverge(f"no handle {h}")
        handle = handles[h]
        calls = coordinator_calls if isinstance(handle, sc.Coordinator) else writer_calls
        return calls[name](handle, a)

    out = []
    while script.pos < len(script.lines):
        line = script.lines[script.pos]
        if "call" not in line:
            fail(1, f"script line {script.pos + 1}: the component did not make the import call {json.dumps(line)}")
        script.pos += 1
        try:
            raw = {"ok": encode(invoke(line, decode(line["args"])))}
        except sc.TrapError as e:  # a trap, or a divergence inside an import
            fail(1, script.divergence or f"script line {script.pos}: {line['call']} trapped: {e.message}")
        except sc.CoordinatorError as e:
            raw = {"err": {"kind": e.kind, "message": e.message}}
        except Divergence:
            fail(1, script.divergence or "divergence")
        except (KeyError, IndexError, TypeError, ValueError) as e:  # a call line this runner cannot make
            fail(1, f"script line {script.pos}: {line['call']}: {type(e).__name__}: {e}")
        out.append(json.dumps(raw, separators=(",", ":")) + "\n")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    import dataclasses
    import enum

    try:
        import sink_coordinator as sc
    except ImportError as e:
        fail(1, f"the sink_coordinator package is not installed ({e}): see hosts/python/README.md")
    main()
