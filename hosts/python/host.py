"""The host side of the sink-coordinator component under wasmtime-py.

- ``MemStorage``, ``ManualClock``: plain ``storage`` and ``clock`` imports
  (bench.py; run.py serves the imports from a call script);
- ``Runtime``: compiles the component once (cached on disk, see
  ``Runtime.load``) and creates one Store + instance per coordinator, so a
  trapped instance is dropped and replaced (a Store that trapped can never
  enter the component again).

wasmtime-py's dynamic component API represents values like this (version 50):
records are ``Record`` objects with kebab-case attributes; enums are str;
``list<u8>`` is bytes; ``option<T>`` is ``None`` or the value; a ``result``
or variant is a tagged ``Variant(tag, payload)`` only when its cases'
Python types overlap, otherwise the bare payload (see ``unwrap_result``).
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import os
from ctypes import byref
from typing import Any, Callable, Dict, List, Optional

from wasmtime import Config, Engine, Store, WasmtimeError
from wasmtime import _ffi as ffi
from wasmtime.component import Component, Linker, Record, Variant
from wasmtime.component._types import ResultType

from version import check_version

# The WIT package version of the component (wit/coordinator.wit).
WIT_VERSION = "0.2.0"
STORAGE = f"sink:coordinator/storage@{WIT_VERSION}"
CLOCK = f"sink:coordinator/clock@{WIT_VERSION}"
COORDINATOR = f"sink:coordinator/coordinator@{WIT_VERSION}"
TABLE = f"sink:coordinator/table@{WIT_VERSION}"
WRITER = f"sink:coordinator/writer@{WIT_VERSION}"


# ---------------------------------------------------------------------------
# wasmtime-py 50 quirk: `result<option<T>, E>` cannot return `err` from a host
# function. The result is untagged (its cases' Python types do not overlap),
# and the `ok` case `option<T>` claims `object` (for `none`), so every value,
# an error Variant included, is tried as `ok` and fails as
# "value not valid for this variant" (a trap). `Err(payload)` below is lowered
# as the `err` case explicitly; everything else goes the library's way.
# ---------------------------------------------------------------------------


class Err:
    """A host function's explicit `err` result."""

    __slots__ = ("payload",)

    def __init__(self, payload: Any):
        self.payload = payload


_original_result_to_c = ResultType.convert_to_c


def _result_to_c(self, store, val, ptr):  # type: ignore[no-untyped-def]
    if not isinstance(val, Err):
        return _original_result_to_c(self, store, val, ptr)
    err_ty = self.err
    raw = None
    if err_ty is not None:
        payload = ffi.wasmtime_component_val_t()
        err_ty.convert_to_c(store, val.payload, ctypes.pointer(payload))
        raw = ffi.wasmtime_component_val_new(byref(payload))
    ptr.contents.kind = ffi.WASMTIME_COMPONENT_RESULT
    ptr.contents.of.result.is_ok = False
    ptr.contents.of.result.val = raw


ResultType.convert_to_c = _result_to_c


class MemStorage:
    """A plain in-memory ``storage`` import (bench.py; run.py scripts its
    own). The first argument of each import function is wasmtime's store
    context."""

    def __init__(self) -> None:
        self.map: Dict[str, bytes] = {}

    def get(self, _store, key: str):
        return self.map.get(key)

    def put_if_absent(self, _store, key: str, value: bytes):
        created = key not in self.map
        if created:
            self.map[key] = bytes(value)
        return created

    def put(self, _store, key: str, value: bytes):
        self.map[key] = bytes(value)

    def delete(self, _store, key: str):
        self.map.pop(key, None)

    def list(self, _store, prefix: str):
        # Byte order of the UTF-8 encodings (Rust's String order).
        return sorted((k for k in self.map if k.startswith(prefix)), key=lambda k: k.encode("utf-8"))


class ManualClock:
    """A fixed ``clock`` import (bench.py)."""

    def __init__(self, ms: int = 0):
        self.ms = ms

    def now_ms(self, _store=None) -> int:
        return self.ms


class CallError(Exception):
    """A WIT `error` result (kind, message), or kind "trap"."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def unwrap_result(value: Any) -> Any:
    """The `ok` payload of an exported function's `result<T, error>`; raises
    CallError for `err`. Tagged (a Variant) when T is a record or an option of
    one; otherwise untagged, where the `error` record is the err case."""
    if isinstance(value, Variant) and value.tag in ("ok", "err"):
        if value.tag == "err":
            raise CallError(value.payload.kind, value.payload.message)
        return value.payload
    if isinstance(value, Record):
        raise CallError(value.kind, value.message)
    return value


def to_record(**fields: Any) -> Record:
    """A Record with kebab-case attributes from snake_case keywords."""
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


class Instance:
    """One Store with its component instance, plus function lookup."""

    def __init__(self, runtime: "Runtime", linker: Linker):
        self.runtime = runtime
        self.store = Store(runtime.engine)
        self.instance = linker.instantiate(self.store, runtime.component)
        self._funcs: Dict[tuple, Any] = {}

    def func(self, interface: str, name: str):
        key = (interface, name)
        f = self._funcs.get(key)
        if f is None:
            iface = self.instance.get_export_index(self.store, interface)
            idx = self.instance.get_export_index(self.store, name, iface)
            f = self.instance.get_func(self.store, idx)
            if f is None:
                raise WasmtimeError(f"the component does not export {interface}#{name}")
            self._funcs[key] = f
        return f

    def call(self, interface: str, name: str, *args: Any) -> Any:
        return self.func(interface, name)(self.store, *args)


class Runtime:
    """The compiled component and the engine; creates linkers and instances."""

    def __init__(self, engine: Engine, component: Component):
        self.engine = engine
        self.component = component

    @staticmethod
    def load(path: str, cache_dir: Optional[str] = None) -> "Runtime":
        """Compiles the component, or deserializes a cached compilation of the
        same bytes by the same wasmtime version (`.cache/` beside this file)."""
        config = Config()
        config.cranelift_nan_canonicalization = True
        engine = Engine(config)
        with open(path, "rb") as f:
            wasm = f.read()
        cache_dir = cache_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
        digest = hashlib.sha256(wasm).hexdigest()[:16]
        try:
            version = importlib.metadata.version("wasmtime")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        cached = os.path.join(cache_dir, f"{digest}-wasmtime-{version}.cwasm")
        component = None
        if os.path.exists(cached):
            try:
                component = Component.deserialize_file(engine, cached)
            except WasmtimeError:
                component = None
        if component is None:
            component = Component(engine, wasm)
            try:
                os.makedirs(cache_dir, exist_ok=True)
                tmp = f"{cached}.tmp{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(component.serialize())
                os.replace(tmp, cached)
            except OSError:
                pass
        # Refused before linking: one message with the wanted range and the
        # found version, not a missing import or export later.
        check_version(component.type.exports(engine))
        return Runtime(engine, component)

    def linker(self, storage: Any, clock: Any) -> Linker:
        linker = Linker(self.engine)
        with linker.root() as root:
            with root.add_instance(STORAGE) as s:
                s.add_func("get", storage.get)
                s.add_func("put-if-absent", storage.put_if_absent)
                s.add_func("put", storage.put)
                s.add_func("delete", storage.delete)
                s.add_func("list", storage.list)
            with root.add_instance(CLOCK) as c:
                c.add_func("now-ms", clock.now_ms)
        return linker

    def instantiate(self, linker: Linker) -> Instance:
        return Instance(self, linker)
