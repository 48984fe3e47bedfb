"""The compiled component: one wasmtime ``Engine`` and ``Component``, from
which every coordinator, writer and table handle instantiates its own Store
(a Store that trapped can never enter the component again), with the Rust
host's guards: a wall-clock deadline per call (epoch interruption, advanced
by a ticker thread) and a ceiling on each Store's linear memory."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import os
import threading
import weakref
from typing import Any, Dict, Optional, Tuple

from wasmtime import Config as EngineConfig
from wasmtime import Engine, Store, Trap, WasmtimeError
from wasmtime.component import Component, Linker, Variant

from . import _wasmtime_err
from ._fastval import FastFunc
from .errors import BackendError
from .storage import Clock, Storage
from .version import check_version

#: The WIT package version of the component inside this package.
COMPONENT_VERSION = "0.2.5"
#: Its file name inside the package.
COMPONENT_FILE = f"sink-coordinator-{COMPONENT_VERSION}.wasm"

#: How often the deadline ticker advances the engine's epoch: the resolution
#: of ``call_deadline_ms`` (the Rust host's ``DEADLINE_TICK``).
DEADLINE_TICK_MS = 100
#: The default deadline of one call: the Rust host's default for the default
#: limits (one minute plus five minutes per GiB of max-snapshot-bytes 1.25 GiB).
DEFAULT_CALL_DEADLINE_MS = 435_000
#: The range of ``max_memory_bytes`` (the Rust host's ``MAX_MEMORY_RANGE``).
MAX_MEMORY_RANGE = range(4 << 20, (4 << 30) + 1)


def embedded_wasm() -> bytes:
    """The component shipped inside this package."""
    return (importlib.resources.files(__package__) / COMPONENT_FILE).read_bytes()


class Runtime:
    """A compiled component. ``Runtime()`` is the embedded one;
    ``Runtime(wasm=...)`` or ``Runtime.from_file(path)`` another one, refused
    with ``IncompatibleComponent`` unless its version is within
    ``COMPATIBLE_VERSIONS``. ``cache_dir`` (default: the environment variable
    ``SINK_COORDINATOR_CACHE_DIR``, else none) keeps the compiled code between
    processes; it must be a trusted directory.

    ``call_deadline_ms`` (default ``DEFAULT_CALL_DEADLINE_MS``; None: none)
    bounds the wall-clock time of one call into the component, storage
    calls included: a call past it traps (``TrapError`` "the call exceeded
    its deadline of N ms") once control is back in the component, so it
    stops a looping guest, and a storage call that takes too long fails the
    call when it returns (a Python call that never returns cannot be
    interrupted from another thread; ``DirectoryStorage`` never blocks).
    ``max_memory_bytes`` (default None: the wasm32 maximum of 4 GiB) caps
    each Store's linear memory; growing past it traps. ``fast_values``
    (default True) converts the exports' arguments and results with
    ``_fastval`` (byte lists in blocks, on wasmtime-py's internal ``_ffi``
    names); False uses wasmtime-py's own converters, the public path: the
    same values, about two orders of magnitude slower per byte, and the
    fallback should a wasmtime-py release change its internals."""

    _default: Optional["Runtime"] = None
    _default_lock = threading.Lock()

    def __init__(
        self,
        wasm: Optional[bytes] = None,
        *,
        cache_dir: Optional[str] = None,
        call_deadline_ms: Optional[int] = DEFAULT_CALL_DEADLINE_MS,
        max_memory_bytes: Optional[int] = None,
        fast_values: bool = True,
    ) -> None:
        def is_int(v: object) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if call_deadline_ms is not None and (not is_int(call_deadline_ms) or call_deadline_ms < 1):
            raise ValueError(f"call_deadline_ms must be a positive int or None, not {call_deadline_ms!r}")
        if max_memory_bytes is not None and (not is_int(max_memory_bytes) or max_memory_bytes not in MAX_MEMORY_RANGE):
            raise ValueError(f"max_memory_bytes must be in 4 MiB..4 GiB or None, not {max_memory_bytes!r}")
        if wasm is None:
            wasm = embedded_wasm()
        config = EngineConfig()
        # Determinism: the same NaN bits on every host (as the Rust host).
        config.cranelift_nan_canonicalization = True
        config.epoch_interruption = call_deadline_ms is not None
        #: The deadline of one call in ms (None: unbounded).
        self.call_deadline_ms = call_deadline_ms
        #: Exports called through ``_fastval`` (True) or wasmtime-py's own converters.
        self.fast_values = bool(fast_values)
        #: The ceiling of a Store's linear memory in bytes (None: 4 GiB).
        self.max_memory_bytes = max_memory_bytes
        # Epoch ticks per call (the Rust host's rounding: up, at least 1).
        self._deadline_ticks = None if call_deadline_ms is None else max(1, -(-call_deadline_ms // DEADLINE_TICK_MS))
        self.engine = Engine(config)
        if call_deadline_ms is not None:
            _start_ticker(self)
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
        # Code compiled with epoch checks differs from code without them.
        epoch = "-epoch" if self.call_deadline_ms is not None else ""
        cached = os.path.join(cache_dir, f"sink-coordinator-{digest}-wasmtime-{wasmtime_version}{epoch}.cwasm")
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


class DeadlineExceeded(Exception):
    """A call ran past ``call_deadline_ms`` (the handle raises it as a
    ``TrapError`` with this message)."""


def _start_ticker(runtime: Runtime) -> None:
    """Advances ``runtime``'s epoch every ``DEADLINE_TICK_MS`` until the
    runtime is gone (a daemon thread holding only a weak reference). The
    component's calls release the GIL (ctypes), so it ticks while a guest
    runs."""
    ref = weakref.ref(runtime)

    def tick() -> None:
        stop = threading.Event()
        while not stop.wait(DEADLINE_TICK_MS / 1000):
            rt = ref()
            if rt is None:
                return
            rt.engine.increment_epoch()
            del rt

    threading.Thread(target=tick, name="sink-coordinator-epoch", daemon=True).start()


class _Instance:
    """One Store with its component instance, and function lookup."""

    def __init__(self, runtime: Runtime, linker: Linker) -> None:
        self.runtime = runtime
        self.store = Store(runtime.engine)
        if runtime.max_memory_bytes is not None:
            self.store.set_limits(memory_size=runtime.max_memory_bytes)
        self._arm()
        self.instance = linker.instantiate(self.store, runtime.component)
        self._funcs: Dict[Tuple[str, str], Any] = {}

    def _arm(self) -> None:
        # The deadline is relative to the epoch now: set before every entry.
        if self.runtime._deadline_ticks is not None:
            self.store.set_epoch_deadline(self.runtime._deadline_ticks)

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
            # Converted once per function (``_fastval``), not per call; or
            # wasmtime-py's own path (``Runtime(fast_values=False)``).
            if self.runtime.fast_values:
                f = FastFunc(f, self.store)
            self._funcs[key] = f
        self._arm()
        try:
            return f(self.store, *args)
        except (Trap, WasmtimeError) as e:
            # The epoch deadline is the only interrupt this host arms.
            if self.runtime.call_deadline_ms is not None and "interrupt" in str(e):
                ms = self.runtime.call_deadline_ms
                raise DeadlineExceeded(
                    f"guest trapped in {interface}#{name}: the call exceeded its deadline of {ms} ms"
                ) from e
            raise
