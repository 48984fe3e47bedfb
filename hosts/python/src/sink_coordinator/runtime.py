"""The compiled component: one wasmtime ``Engine`` and the component's core
module (``_core``, the default) or the ``Component`` itself (wasmtime-py's
component API, ``SINK_COORDINATOR_PY_RUNTIME=component``), from which every
coordinator, writer and table handle instantiates its own Store
(a Store that trapped can never enter the component again), with the Rust
host's guards: a wall-clock deadline per call (epoch interruption, advanced
by a ticker thread) and a ceiling on each Store's linear memory."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import os
import queue
import threading
import time
import weakref
from typing import Any, Dict, Optional, Tuple, Union

from wasmtime import Config as EngineConfig
from wasmtime import Engine, Module, Store, Trap, WasmtimeError
from wasmtime.component import Component, Linker, Variant

from . import _wasmtime_err
from ._core import CoreInstance, CoreModule, core_module_bytes
from ._fastval import FastFunc
from .errors import BackendError, IncompatibleComponent
from .storage import Clock, MemoryStorage, Storage
from .version import check_version

#: The WIT package version of the component inside this package.
COMPONENT_VERSION = "0.2.10"
#: Its file name inside the package.
COMPONENT_FILE = f"sink-coordinator-{COMPONENT_VERSION}.wasm"
#: The file name of its core module inside the package (what the default
#: ``core`` runtime runs; dist/ holds both).
CORE_FILE = f"sink-coordinator-{COMPONENT_VERSION}.core.wasm"
#: The environment variable choosing the runtime when ``Runtime(api=None)``:
#: ``core`` (the default) or ``component``.
RUNTIME_ENV = "SINK_COORDINATOR_PY_RUNTIME"
RUNTIME_APIS = ("core", "component")

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


def embedded_core() -> bytes:
    """The component's core module shipped inside this package."""
    return (importlib.resources.files(__package__) / CORE_FILE).read_bytes()


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
    stops a looping guest. A storage call cannot be interrupted (it is
    Python code), so with ``bound_storage_calls`` (default True) each one
    runs on a daemon thread of the instance while the call waits at most
    the time left until its deadline: a storage call that never returns
    (a ``get`` blocked on a network) fails the call with a ``TrapError``
    naming the deadline, the operation and the key, and is left running on
    its thread (abandoned: it may still finish later, like a timed-out
    network request). The handoff costs about 25 us per storage call; a
    ``MemoryStorage`` (a dict) stays on the calling thread, and
    ``bound_storage_calls=False`` keeps every storage call there (a slow
    one then fails the call only once it returns).
    ``max_memory_bytes`` (default None: the wasm32 maximum of 4 GiB) caps
    each Store's linear memory; growing past it traps. ``fast_values``
    (default True) converts the exports' arguments and results with
    ``_fastval`` (byte lists in blocks, on wasmtime-py's internal ``_ffi``
    names); False uses wasmtime-py's own converters, the public path: the
    same values, about two orders of magnitude slower per byte, and the
    fallback should a wasmtime-py release change its internals.

    ``api`` picks how the component runs (default: the environment variable
    ``SINK_COORDINATOR_PY_RUNTIME``, else ``core``): ``core`` runs its core
    module through wasmtime-py's core API with the canonical ABI written by
    hand (``_core``; a component given as ``wasm`` runs its embedded core
    module), ``component`` the component through wasmtime-py's component API
    (``fast_values`` applies there only). Both give the same results, byte
    for byte; ``core`` is about 20 times faster per batched event."""

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
        bound_storage_calls: bool = True,
        api: Optional[str] = None,
    ) -> None:
        def is_int(v: object) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if call_deadline_ms is not None and (not is_int(call_deadline_ms) or call_deadline_ms < 1):
            raise ValueError(f"call_deadline_ms must be a positive int or None, not {call_deadline_ms!r}")
        if max_memory_bytes is not None and (not is_int(max_memory_bytes) or max_memory_bytes not in MAX_MEMORY_RANGE):
            raise ValueError(f"max_memory_bytes must be in 4 MiB..4 GiB or None, not {max_memory_bytes!r}")
        if api is None:
            api = os.environ.get(RUNTIME_ENV) or "core"
        if api not in RUNTIME_APIS:
            raise ValueError(f"the runtime must be core or component (api or ${RUNTIME_ENV}), not {api!r}")
        #: ``core`` (the core module, canonical ABI by hand) or ``component``.
        self.api = api
        if wasm is None:
            wasm = embedded_core() if api == "core" else embedded_wasm()
        config = EngineConfig()
        # Determinism: the same NaN bits on every host (as the Rust host).
        config.cranelift_nan_canonicalization = True
        config.epoch_interruption = call_deadline_ms is not None
        #: The deadline of one call in ms (None: unbounded).
        self.call_deadline_ms = call_deadline_ms
        #: Whether a storage call that never returns is bounded by the deadline
        #: (run on a storage thread of the instance) or runs on the calling thread.
        self.bound_storage_calls = bool(bound_storage_calls)
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
        self.core: Optional[CoreModule] = None
        self.component: Optional[Component] = None
        if api == "core":
            module = self._compile(core_module_bytes(wasm), cache_dir, Module)
            assert isinstance(module, Module)
            self.core = CoreModule(self.engine, module)
            #: The component's WIT package version (checked before any linking).
            self.version = self.core.version
        else:
            if wasm[:8] == b"\0asm\x01\0\0\0":
                raise IncompatibleComponent(
                    "a core module, not a component: the component runtime needs a component", []
                )
            component = self._compile(wasm, cache_dir, Component)
            assert isinstance(component, Component)
            self.component = component
            self.version = check_version(component.type.exports(self.engine))
        self._names: Dict[str, str] = {}

    @classmethod
    def from_file(
        cls, path: "os.PathLike[str] | str", *, cache_dir: Optional[str] = None, api: Optional[str] = None
    ) -> "Runtime":
        """Loads and compiles a component file (or, for ``api="core"``, a
        core module file)."""
        with open(path, "rb") as f:
            return cls(f.read(), cache_dir=cache_dir, api=api)

    @classmethod
    def default(cls) -> "Runtime":
        """The embedded component, compiled once per process."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    def _compile(
        self, wasm: bytes, cache_dir: Optional[str], kind: "type[Union[Component, Module]]"
    ) -> Union[Component, Module]:
        if not cache_dir:
            return kind(self.engine, wasm)
        try:
            wasmtime_version = importlib.metadata.version("wasmtime")
        except importlib.metadata.PackageNotFoundError:
            wasmtime_version = "unknown"
        digest = hashlib.sha256(wasm).hexdigest()[:32]
        # Code compiled with epoch checks differs from code without them.
        epoch = "-epoch" if self.call_deadline_ms is not None else ""
        core = "-core" if kind is Module else ""
        cached = os.path.join(cache_dir, f"sink-coordinator-{digest}-wasmtime-{wasmtime_version}{epoch}{core}.cwasm")
        if os.path.exists(cached):
            try:
                return kind.deserialize_file(self.engine, cached)
            except WasmtimeError:
                pass
        component = kind(self.engine, wasm)
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

    def _linker(self, storage: Storage, clock: Clock, guard: Optional["_StorageGuard"]) -> Linker:
        linker = Linker(self.engine)

        def wrap(op: str, method: Any) -> Any:
            if guard is None:

                def imported(_store: Any, *args: Any) -> Any:
                    try:
                        return method(*args)
                    except BackendError as e:
                        return _wasmtime_err.Err(Variant(e.kind, e.message))

            else:

                def imported(_store: Any, *args: Any) -> Any:
                    try:
                        return guard.call(op, method, args)
                    except BackendError as e:
                        return _wasmtime_err.Err(Variant(e.kind, e.message))

            return imported

        with linker.root() as root:
            with root.add_instance(self.name("storage")) as s:
                _wasmtime_err.add_func(s, "get", wrap("get", storage.get))
                _wasmtime_err.add_func(s, "put-if-absent", wrap("put_if_absent", storage.put_if_absent))
                _wasmtime_err.add_func(s, "put", wrap("put", storage.put))
                _wasmtime_err.add_func(s, "delete", wrap("delete", storage.delete))
                _wasmtime_err.add_func(s, "list", wrap("list", storage.list))
            with root.add_instance(self.name("clock")) as c:
                c.add_func("now-ms", lambda _store: clock.now_ms())
        return linker

    def instantiate(self, storage: Storage, clock: Clock) -> "Union[_Instance, CoreInstance]":
        """A new Store with the component instantiated over ``storage`` and
        ``clock`` (used by the handles)."""
        # A MemoryStorage (a dict) never blocks: its calls stay inline.
        deadline = self.call_deadline_ms
        bounded = deadline is not None and self.bound_storage_calls and type(storage) is not MemoryStorage
        guard = _StorageGuard(deadline) if bounded and deadline is not None else None
        if self.core is not None:
            return CoreInstance(self, self.core, storage, clock, guard)
        return _Instance(self, self._linker(storage, clock, guard), guard)


class DeadlineExceeded(Exception):
    """A call ran past ``call_deadline_ms`` (the handle raises it as a
    ``TrapError`` with this message)."""


def raise_if_deadline(runtime: Runtime, export: str, e: Exception) -> None:
    """Raises :class:`DeadlineExceeded` for the trap ``e`` of the call of
    ``export`` if it is the epoch interrupt: the only interrupt this host
    arms, and only with a deadline (both runtimes, ``_core`` and the
    component path)."""
    if runtime.call_deadline_ms is not None and "interrupt" in str(e):
        ms = runtime.call_deadline_ms
        raise DeadlineExceeded(f"guest trapped in {export}: the call exceeded its deadline of {ms} ms") from e


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


def _serve(requests: "queue.SimpleQueue[Any]", results: "queue.SimpleQueue[Any]") -> None:
    """The loop of a storage thread: runs ``(method, args)`` jobs and puts
    ``(True, result)`` or ``(False, exception)``; ``None`` ends it. Holds no
    reference to its guard, so an abandoned guard can be collected."""
    while True:
        job = requests.get()
        if job is None:
            return
        try:
            result: Optional[Tuple[bool, Any]] = (True, job[0](*job[1]))
        except BaseException as e:  # carried to the calling thread
            result = (False, e)
        job = None
        results.put(result)
        result = None


class _StorageGuard:
    """Bounds one instance's storage calls by its call deadline: each call
    runs on the instance's storage thread (a daemon, started on the first
    call) while the calling thread waits at most the time left until the
    deadline of the call into the component. A storage call still running
    then is abandoned: its thread is left to finish or block forever (a
    daemon does not keep the process alive), the next call gets a new
    thread, and the component call fails with ``DeadlineExceeded`` (a trap:
    the handle is discarded)."""

    def __init__(self, deadline_ms: int) -> None:
        self.deadline_ms = deadline_ms
        #: ``time.monotonic()`` at which the current call's deadline passes.
        self.deadline_at = time.monotonic() + deadline_ms / 1000
        #: The current call (interface, name; None: instantiation), for the message.
        self.what: Optional[Tuple[str, str]] = None
        self._requests: "Optional[queue.SimpleQueue[Any]]" = None
        self._results: "queue.SimpleQueue[Any]" = queue.SimpleQueue()

    def arm(self, what: Optional[Tuple[str, str]]) -> None:
        self.what = what
        self.deadline_at = time.monotonic() + self.deadline_ms / 1000

    def call(self, op: str, method: Any, args: Tuple[Any, ...]) -> Any:
        left = self.deadline_at - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(self._message(op, args, "was not started"))
        if self._requests is None:
            self._start()
        assert self._requests is not None
        self._requests.put((method, args))
        try:
            ok, value = self._results.get(timeout=left)
        except queue.Empty:
            # Abandoned: the thread ends after the stuck call, if it returns.
            self._requests.put(None)
            self._requests = None
            self._results = queue.SimpleQueue()
            raise DeadlineExceeded(
                self._message(op, args, "had not returned (it is left running on a daemon thread)")
            ) from None
        if ok:
            return value
        raise value

    def _start(self) -> None:
        requests: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        thread = threading.Thread(
            target=_serve, args=(requests, self._results), name="sink-coordinator-storage", daemon=True
        )
        thread.start()
        self._requests = requests
        # The thread ends when its guard (the instance) is gone.
        weakref.finalize(self, requests.put, None)

    def _message(self, op: str, args: Tuple[Any, ...], what_happened: str) -> str:
        target = f'prefix "{args[0]}"' if op == "list" else f'key "{args[0]}"'
        call = "instantiation" if self.what is None else f"{self.what[0]}#{self.what[1]}"
        return (
            f"guest trapped in {call}: the call exceeded its deadline of {self.deadline_ms} ms:"
            f" storage {op} of {target} {what_happened}"
        )


class _Instance:
    """One Store with its component instance, and function lookup."""

    def __init__(self, runtime: Runtime, linker: Linker, guard: Optional[_StorageGuard] = None) -> None:
        self.runtime = runtime
        self._guard = guard
        self.store = Store(runtime.engine)
        if runtime.max_memory_bytes is not None:
            self.store.set_limits(memory_size=runtime.max_memory_bytes)
        self._arm(None)
        assert runtime.component is not None
        self.instance = linker.instantiate(self.store, runtime.component)
        self._funcs: Dict[Tuple[str, str], Any] = {}

    def _arm(self, what: Optional[Tuple[str, str]]) -> None:
        # The deadline is relative to the epoch now: set before every entry.
        if self.runtime._deadline_ticks is not None:
            self.store.set_epoch_deadline(self.runtime._deadline_ticks)
        if self._guard is not None:
            self._guard.arm(what)

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
        self._arm(key)
        try:
            return f(self.store, *args)
        except (Trap, WasmtimeError) as e:
            raise_if_deadline(self.runtime, f"{interface}#{name}", e)
            raise
