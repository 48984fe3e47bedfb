#!/usr/bin/env python3
"""Executes a resolved call script (`sinkcoord script TRACE`, format in
hosts/README.md) against the component under wasmtime-py and prints each
call's raw result, one JSON line per call line: {"ok": VALUE} or
{"err": {"kind", "message"}}. `sinkcoord script --render RAW TRACE` turns
them into the result document. The trace semantics (parsing, outboxes,
faults, rendering) live in the Rust test kit; this host only marshals the
calls and serves the storage and clock imports, checking every import call
against the script.

    python hosts/python/run.py [--component FILE] SCRIPT

--component  the component (default $SINK_COORDINATOR_WASM, else
             <repo>/dist/sink-coordinator-<WIT version>.wasm); its compilation
             is cached in hosts/python/.cache/

Exit codes: 0 executed (even if calls returned errors), 1 the component's
calls differ from the script, it trapped, or the host failed; 2 usage.
"""

import json
import os
import re
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
USAGE = "usage: python run.py [--component FILE] SCRIPT"


def fail(code: int, message: str) -> "None":
    sys.stderr.write(f"run.py: {message}\n")
    sys.exit(code)


def component_path(arg: Optional[str]) -> str:
    if arg:
        return os.path.abspath(arg)
    if os.environ.get("SINK_COORDINATOR_WASM"):
        return os.path.abspath(os.environ["SINK_COORDINATOR_WASM"])
    # The committed artifact of the WIT package version (wit/coordinator.wit).
    with open(os.path.join(REPO, "wit", "coordinator.wit"), encoding="utf-8") as f:
        m = re.search(r"^package sink:coordinator@(\S+);", f.read(), re.M)
    if not m:
        fail(1, "wit/coordinator.wit declares no sink:coordinator package version")
    return os.path.join(REPO, "dist", f"sink-coordinator-{m.group(1)}.wasm")


class Divergence(Exception):
    """The component's import calls differ from the script."""


class Script:
    """The script lines, the position in them, and the storage and clock
    imports served from them (wire form: testkit/src/script/wire.rs)."""

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

    def _write(self, op: str, key: str, value: Optional[bytes], apply) -> Any:
        call = {"storage": op, "key": key}
        if value is not None:
            call["value"] = bytes(value).hex()
        fault = self.expect("storage", call)["fault"]
        if fault and not fault["applied"]:
            return Err(Variant(fault["kind"], fault["message"]))
        result = apply()
        return Err(Variant(fault["kind"], fault["message"])) if fault else result

    # The import functions (the first argument is wasmtime's store context).
    def get(self, _store, key: str):
        fault = self.expect("storage", {"storage": "get", "key": key})["fault"]
        return Err(Variant(fault["kind"], fault["message"])) if fault else self.map.get(key)

    def put_if_absent(self, _store, key: str, value: bytes):
        def apply():
            created = key not in self.map
            if created:
                self.map[key] = bytes(value)
            return created

        return self._write("put-if-absent", key, value, apply)

    def put(self, _store, key: str, value: bytes):
        return self._write("put", key, value, lambda: self.map.__setitem__(key, bytes(value)))

    def delete(self, _store, key: str):
        return self._write("delete", key, None, lambda: self.map.pop(key, None) and None)

    def list(self, _store, prefix: str):
        fault = self.expect("storage", {"storage": "list", "key": prefix})["fault"]
        if fault:
            return Err(Variant(fault["kind"], fault["message"]))
        return sorted((k for k in self.map if k.startswith(prefix)), key=lambda k: k.encode("utf-8"))

    def now_ms(self, _store=None) -> int:
        return int(self.expect("clock", {})["clock"]["u64"])


def decode(v: Any) -> Any:
    """A script argument as wasmtime-py takes it."""
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "u64" in v or "s64" in v:
        return int(v.get("u64", v.get("s64")))
    if "bytes" in v:
        return bytes.fromhex(v["bytes"])
    r = Record()
    for k, x in v.items():
        setattr(r, k, decode(x))
    return r


def encode(v: Any) -> Any:
    """A value wasmtime-py returned, in the raw result form."""
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, Record):
        return {k: encode(x) for k, x in vars(v).items()}
    return v


# Calls that return a bare value, not a result<_, error>.
BARE = {"state", "committed-up-to"}


def main() -> None:
    args = sys.argv[1:]
    component = None
    if args[:1] == ["--component"]:
        component, args = args[1], args[2:]
    if len(args) != 1 or args[0].startswith("-"):
        fail(2, USAGE)
    with open(args[0], encoding="utf-8") as f:
        script = Script([json.loads(l) for l in f if l.strip()])
    try:
        runtime = Runtime.load(component_path(component))
    except IncompatibleComponent as e:
        fail(1, str(e))
    linker = runtime.linker(script, script)
    handles: Dict[int, Any] = {}
    table: Optional[Instance] = None
    out = []

    def invoke(line: Dict[str, Any], args: List[Any]) -> Any:
        nonlocal table
        name, h = line["call"], line.get("h")
        if name in ("coordinator", "writer"):
            instance = runtime.instantiate(linker)
            iface = COORDINATOR if name == "coordinator" else WRITER
            handles[h] = (instance, iface, name, instance.call(iface, f"[constructor]{name}", *args))
            return None
        if h is None:
            table = table or runtime.instantiate(linker)
            return unwrap_result(table.call(TABLE, name, *args))
        if h not in handles:
            script.diverge(f"no handle {h}")
        instance, iface, resource, handle = handles[h]
        value = instance.call(iface, f"[method]{resource}.{name}", handle, *args)
        return value if name in BARE else unwrap_result(value)

    while script.pos < len(script.lines):
        line = script.lines[script.pos]
        if "call" not in line:
            fail(1, f"script line {script.pos + 1}: the component did not make the import call {json.dumps(line)}")
        script.pos += 1
        try:
            raw = {"ok": encode(invoke(line, [decode(a) for a in line["args"]]))}
        except CallError as e:
            raw = {"err": {"kind": e.kind, "message": e.message}}
        except Exception as e:  # a trap, or a divergence inside an import
            fail(1, script.divergence or f"script line {script.pos}: {line['call']} trapped: {e}")
        out.append(json.dumps(raw, separators=(",", ":")) + "\n")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from wasmtime.component import Record, Variant

    from host import COORDINATOR, TABLE, WRITER, CallError, Err, Instance, Runtime, unwrap_result
    from version import IncompatibleComponent

    main()
