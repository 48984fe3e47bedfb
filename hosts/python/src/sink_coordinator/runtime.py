"""The compiled component: one wasmtime ``Engine`` and ``Component``, from
which every coordinator, writer and table handle instantiates its own Store
(a Store that trapped can never enter the component again)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import os
import threading
from typing import Any, Dict, Optional, Tuple

from wasmtime import Config as EngineConfig
from wasmtime import Engine, Store, WasmtimeError
from wasmtime.component import Component, Linker, Variant

from . import _wasmtime_err
from ._fastval import FastFunc
from .errors import BackendError
from .storage import Clock, Storage
from .version import check_version

#: The WIT package version of the component inside this package.
COMPONENT_VERSION = "0.2.3"
#: Its file name inside the package.
COMPONENT_FILE = f"sink-coordinator-{COMPONENT_VERSION}.wasm"


def embedded_wasm() -> bytes:
    """The component shipped inside this package."""
    return (importlib.resources.files(__package__) / COMPONENT_FILE).read_bytes()


class Runtime:
    """A compiled component. ``Runtime()`` is the embedded one;
    ``Runtime(wasm=...)`` or ``Runtime.from_file(path)`` another one, refused
    with ``IncompatibleComponent`` unless its version is within
    ``COMPATIBLE_VERSIONS``. ``cache_dir`` (default: the environment variable
    ``SINK_COORDINATOR_CACHE_DIR``, else none) keeps the compiled code between
    processes; it must be a trusted directory."""

    _default: Optional["Runtime"] = None
    _default_lock = threading.Lock()

    def __init__(self, wasm: Optional[bytes] = None, *, cache_dir: Optional[str] = None) -> None:
        if wasm is None:
            wasm = embedded_wasm()
        config = EngineConfig()
        # Determinism: the same NaN bits on every host (as the Rust host).
        config.cranelift_nan_canonicalization = True
        self.engine = Engine(config)
        cache_dir = cache_dir if cache_dir is not None else os.environ.get("SINK_COORDINATOR_CACHE_DIR") or None
        self.component = self._compile(wasm, cache_dir)
        #: The component's WIT package version (checked before any linking).
        self.version = check_version(self.component.type.exports(self.engine))
        self._names: Dict[str, str] = {}

    @classmethod
    def from_file(cls, path: "os.PathLike[str] | str", *, cache_dir: Optional[str] = None) -> "Runtime":
        """Loads and compiles a component file."""
        with open(path, "rb") as f:
            return cls(f.read(), cache_dir=cache_dir)

    @classmethod
    def default(cls) -> "Runtime":
        """The embedded component, compiled once per process."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    def _compile(self, wasm: bytes, cache_dir: Optional[str]) -> Component:
        if not cache_dir:
            return Component(self.engine, wasm)
        try:
            wasmtime_version = importlib.metadata.version("wasmtime")
        except importlib.metadata.PackageNotFoundError:
            wasmtime_version = "unknown"
        digest = hashlib.sha256(wasm).hexdigest()[:32]
        cached = os.path.join(cache_dir, f"sink-coordinator-{digest}-wasmtime-{wasmtime_version}.cwasm")
        if os.path.exists(cached):
            try:
                return Component.deserialize_file(self.engine, cached)
            except WasmtimeError:
                pass
        component = Component(self.engine, wasm)
        try:
            os.makedirs(cache_dir, exist_ok=True)
            tmp = f"{cached}.tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(component.serialize())
            os.replace(tmp, cached)
        except OSError:
            pass  # best effort: the next process compiles again
        return component

    def name(self, interface: str) -> str:
        """The versioned name of one of the component's interfaces."""
        return f"sink:coordinator/{interface}@{self.version}"

    def _linker(self, storage: Storage, clock: Clock) -> Linker:
        linker = Linker(self.engine)

        def wrap(method: Any) -> Any:
            def imported(_store: Any, *args: Any) -> Any:
                try:
                    return method(*args)
                except BackendError as e:
                    return _wasmtime_err.Err(Variant(e.kind, e.message))

            return imported

        with linker.root() as root:
            with root.add_instance(self.name("storage")) as s:
                _wasmtime_err.add_func(s, "get", wrap(storage.get))
                _wasmtime_err.add_func(s, "put-if-absent", wrap(storage.put_if_absent))
                _wasmtime_err.add_func(s, "put", wrap(storage.put))
                _wasmtime_err.add_func(s, "delete", wrap(storage.delete))
                _wasmtime_err.add_func(s, "list", wrap(storage.list))
            with root.add_instance(self.name("clock")) as c:
                c.add_func("now-ms", lambda _store: clock.now_ms())
        return linker

    def instantiate(self, storage: Storage, clock: Clock) -> "_Instance":
        """A new Store with the component instantiated over ``storage`` and
        ``clock`` (used by the handles)."""
        return _Instance(self, self._linker(storage, clock))


class _Instance:
    """One Store with its component instance, and function lookup."""

    def __init__(self, runtime: Runtime, linker: Linker) -> None:
        self.runtime = runtime
        self.store = Store(runtime.engine)
        self.instance = linker.instantiate(self.store, runtime.component)
        self._funcs: Dict[Tuple[str, str], Any] = {}

    def exports(self, interface: str, name: str) -> bool:
        """Whether the component exports ``interface#name`` (``events-packed``
        came in 0.2.2)."""
        iface = self.instance.get_export_index(self.store, self.runtime.name(interface))
        return iface is not None and self.instance.get_export_index(self.store, name, iface) is not None

    def call(self, interface: str, name: str, *args: Any) -> Any:
        key = (interface, name)
        f = self._funcs.get(key)
        if f is None:
            iface = self.instance.get_export_index(self.store, self.runtime.name(interface))
            idx = self.instance.get_export_index(self.store, name, iface) if iface is not None else None
            f = self.instance.get_func(self.store, idx) if idx is not None else None
            if f is None:
                raise WasmtimeError(f"the component does not export {interface}#{name}")
            # Converted once per function (``_fastval``), not per call.
            f = self._funcs[key] = FastFunc(f, self.store)
        return f(self.store, *args)
