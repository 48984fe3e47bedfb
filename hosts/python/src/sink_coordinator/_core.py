"""The coordinator on the component's core module (wasmtime-py's core API):
the glue the component model would generate, written by hand as the Go host
does on wazero (docs/embedding.md): the resource table, the lowered imports
``storage`` and ``clock``, lowering arguments with the guest's
``cabi_realloc``, lifting results (``_abi``) and post-return.

``CoreInstance.call(interface, name, *args)`` takes the arguments and returns
the values of the component path (``runtime._Instance.call``), so the
handles use either; ``events_packed`` is the batched events' fast path."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from wasmtime import Engine, Func, FuncType, Instance, Memory, Module, Store, Trap, ValType, WasmtimeError
from wasmtime.component import Variant

from . import _abi
from ._abi import U32_MAX, U64_MAX, Guest, Malformed, RawFunc, as_bytes, as_str, check_bool, check_int, record
from .errors import BackendError, IncompatibleComponent
from .storage import Clock, Storage
from .types import WriterEvent
from .version import check_version

if TYPE_CHECKING:
    from .runtime import Runtime, _StorageGuard

S64 = (-(1 << 63), (1 << 63) - 1)
R = TypeVar("R")
#: One ``packed-event``: 48 bytes, align 8 (docs/embedding.md section 3).
_PACKED = struct.Struct("<IIQIIB7xqB7x")
#: What ``_storage_call`` yields after it wrote a storage error.
_FAILED = object()


def core_module_bytes(wasm: bytes) -> bytes:
    """The core module inside ``wasm``: ``wasm`` itself if it is one, else
    the component's first core module section (wit-component puts the
    guest's own module first; the shims that follow export no
    ``sink:coordinator`` names, which the version check then refuses)."""
    if wasm[:8] == b"\0asm\x01\0\0\0":
        return wasm
    if wasm[:8] != b"\0asm\x0d\0\x01\0":
        raise IncompatibleComponent("not a WebAssembly component or core module", [])
    i = 8
    while i < len(wasm):
        section = wasm[i]
        size, shift, i = 0, 0, i + 1
        while True:
            if i >= len(wasm) or shift > 28:
                raise IncompatibleComponent("a malformed component (a section size is cut off)", [])
            b = wasm[i]
            i += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        if section == 1:  # a core module section
            return wasm[i : i + size]
        i += size
    raise IncompatibleComponent("a component without a core module", [])


#: The imports this host provides: (module without "@version", name) -> core signature.
IMPORTS: Dict[Tuple[str, str], Tuple[str, str]] = {
    ("sink:coordinator/storage", "get"): ("iii", ""),
    ("sink:coordinator/storage", "put-if-absent"): ("iiiii", ""),
    ("sink:coordinator/storage", "put"): ("iiiii", ""),
    ("sink:coordinator/storage", "delete"): ("iii", ""),
    ("sink:coordinator/storage", "list"): ("iii", ""),
    ("sink:coordinator/clock", "now-ms"): ("", "I"),
    ("[export]sink:coordinator/coordinator", "[resource-new]coordinator"): ("i", "i"),
    ("[export]sink:coordinator/coordinator", "[resource-drop]coordinator"): ("i", ""),
    ("[export]sink:coordinator/writer", "[resource-new]writer"): ("i", "i"),
    ("[export]sink:coordinator/writer", "[resource-drop]writer"): ("i", ""),
}
#: Exports a 0.2.x module may lack (``events-packed`` 0.2.2, ``set-table-format`` 0.2.5).
OPTIONAL = {"[method]coordinator.events-packed", "[method]coordinator.set-table-format", "[method]coordinator.events"}
_KIND = {"i": "i32", "I": "i64"}


def _sig(kinds: Optional[List[str]]) -> str:
    return "?" if kinds is None else "".join("I" if k == "i64" else "i" for k in kinds)


class CoreModule:
    """The compiled core module with its version (checked before anything
    is linked) and the signatures of its exports."""

    def __init__(self, engine: Engine, module: Module) -> None:
        self.module = module
        exports = {e.name: e.type for e in module.exports}
        names = [n.split("#", 1)[0] for n in exports if n.startswith("sink:coordinator/")]
        #: The module's WIT package version.
        self.version = check_version(names)
        #: export name -> (parameter count, result: None / False i32 / True i64).
        self.funcs: Dict[str, Tuple[int, Optional[bool]]] = {}
        for name, ty in exports.items():
            if not isinstance(ty, FuncType):
                continue
            params, results = _abi.int_kinds(ty.params), _abi.int_kinds(ty.results)
            if params is None or results is None or len(results) > 1:
                continue  # never called: this host calls only integer functions
            self.funcs[name] = (len(params), None if not results else results[0] == "i64")
        if "memory" not in exports or "cabi_realloc" not in self.funcs:
            raise IncompatibleComponent(
                f"the core module (sink:coordinator@{self.version}) exports no memory or cabi_realloc", [self.version]
            )
        self.imports: List[Tuple[str, str]] = []
        for imp in module.imports:
            base, _, version = imp.module.rpartition("@")
            field = imp.name or ""
            want = IMPORTS.get((base, field)) if version == self.version else None
            ty = imp.type
            got = None
            if isinstance(ty, FuncType):
                got = (_sig(_abi.int_kinds(ty.params)), _sig(_abi.int_kinds(ty.results)))
            if want is None or got != want:
                raise IncompatibleComponent(
                    f"the core module imports {imp.name!r} from {imp.module!r}, which this host does not provide",
                    [self.version],
                )
            self.imports.append((base, field))

    def name(self, interface: str, name: str) -> str:
        return f"sink:coordinator/{interface}@{self.version}#{name}"

    def has(self, interface: str, name: str) -> bool:
        return self.name(interface, name) in self.funcs


class CoreInstance:
    """One Store with one instance of the core module over ``storage`` and
    ``clock``. A failure of any kind raises and the handle discards the
    instance (a core runtime, unlike a component runtime, would let a
    trapped guest be entered again: the handles never do)."""

    def __init__(
        self, runtime: "Runtime", core: CoreModule, storage: Storage, clock: Clock, guard: "Optional[_StorageGuard]"
    ) -> None:
        self.runtime = runtime
        self.core = core
        self._storage = storage
        self._clock = clock
        self._guard = guard
        self._reps: List[int] = []
        self.store = Store(runtime.engine)
        if runtime.max_memory_bytes is not None:
            self.store.set_limits(memory_size=runtime.max_memory_bytes)
        self._arm(None)
        funcs: Dict[str, Callable[..., Any]] = {
            "get": self._get, "put-if-absent": self._put_if_absent, "put": self._put, "delete": self._delete,
            "list": self._list, "now-ms": self._now_ms,
            "[resource-new]coordinator": self._resource_new, "[resource-new]writer": self._resource_new,
            "[resource-drop]coordinator": self._drop("coordinator"), "[resource-drop]writer": self._drop("writer"),
        }
        imports = []
        for base, name in core.imports:
            params, results = IMPORTS[(base, name)]
            ty = FuncType([ValType.i32() if k == "i" else ValType.i64() for k in params],
                          [ValType.i32() if k == "i" else ValType.i64() for k in results])
            imports.append(Func(self.store, ty, funcs[name]))
        self.instance = Instance(self.store, core.module, imports)
        ex = self.instance.exports(self.store)
        memory = ex["memory"]
        if not isinstance(memory, Memory):
            raise IncompatibleComponent("the core module's export memory is not a memory", [core.version])
        self.guest = Guest(self.store, memory)
        self._exports = ex
        self._raw: Dict[str, RawFunc] = {}
        self.guest.realloc = self._fn("cabi_realloc")
        self._calls: Dict[Tuple[str, str], Callable[..., Any]] = self._table()

    # -- plumbing -------------------------------------------------------------

    def _arm(self, what: Optional[Tuple[str, str]]) -> None:
        # The deadline is relative to the epoch now: set before every entry.
        if self.runtime._deadline_ticks is not None:
            self.store.set_epoch_deadline(self.runtime._deadline_ticks)
        if self._guard is not None:
            self._guard.arm(what)

    def _fn(self, full: str) -> RawFunc:
        f = self._raw.get(full)
        if f is None:
            sig = self.core.funcs.get(full)
            func = self._exports.get(full) if sig is not None else None
            if sig is None or not isinstance(func, Func):
                raise WasmtimeError(f"the core module (sink:coordinator@{self.core.version}) does not export {full!r}")
            f = RawFunc(self.guest, func, sig[0], sig[1])
            self._raw[full] = f
        return f

    def exports(self, interface: str, name: str) -> bool:
        """Whether the module exports ``interface#name``."""
        return self.core.has(interface, name)

    def call(self, interface: str, name: str, *args: Any) -> Any:
        """The export ``interface#name`` with the component path's values."""
        impl = self._calls.get((interface, name))
        if impl is None or not self.core.has(interface, name):
            raise WasmtimeError(f"the component does not export {interface}#{name}")
        return self._guarded(interface, name, lambda: impl(*args))

    def _guarded(self, interface: str, name: str, run: Callable[[], Any]) -> Any:
        """Runs one call (its lowering, the guest, its lifting) under the
        call's deadline, with the component path's trap messages."""
        self._arm((interface, name))
        try:
            return run()
        except (Trap, WasmtimeError) as e:
            from .runtime import raise_if_deadline  # runtime imports this module

            raise_if_deadline(self.runtime, f"{interface}#{name}", e)
            raise
        except Malformed as e:
            raise Malformed(f"guest trapped in {interface}#{name}: malformed result: {e}") from None

    def _ret(self, interface: str, name: str, params: Sequence[int], lift: Callable[[int], R]) -> R:
        """Calls an export returning through a return area, lifts its result
        and runs its post-return (also when the lift failed, so the guest
        never holds a result past its call)."""
        full = self.core.name(interface, name)
        ret = self._fn(full)(*params)
        assert ret is not None
        failure: Optional[Malformed] = None
        value: Optional[R] = None
        try:
            value = lift(ret)
        except Malformed as e:
            failure = e
        post = "cabi_post_" + full
        if post in self.core.funcs:
            self._fn(post)(ret)
        if failure is not None:
            raise failure
        return value  # type: ignore[return-value]

    def _rep(self, handle: Any) -> int:
        if isinstance(handle, int) and 1 <= handle <= len(self._reps) and self._reps[handle - 1]:
            return self._reps[handle - 1]
        raise ValueError(f"unknown resource handle {handle!r}")

    # -- imports ------------------------------------------------------------

    def _resource_new(self, rep: int) -> int:
        self._reps.append(rep & U32_MAX)
        return len(self._reps)

    def _drop(self, resource: str) -> Callable[[int], None]:
        def drop(handle: int) -> None:
            rep = self._rep(handle)
            self._reps[handle - 1] = 0
            self._fn(self.core.name(resource, f"[dtor]{resource}"))(rep)

        return drop

    def _text(self, ptr: int, n: int) -> str:
        # Every storage import starts here: the guest may have grown its
        # memory since the host last looked.
        self.guest.refresh()
        ptr, n = ptr & U32_MAX, n & U32_MAX
        mem = self.guest.mem
        if ptr + n > len(mem):
            raise Malformed(f"the guest passed a string outside memory ({ptr}, {n})")
        try:
            return bytes(mem[ptr : ptr + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("the guest passed a string that is not UTF-8") from None

    def _blob(self, ptr: int, n: int) -> bytes:
        ptr, n = ptr & U32_MAX, n & U32_MAX
        mem = self.guest.mem
        if ptr + n > len(mem):
            raise Malformed(f"the guest passed bytes outside memory ({ptr}, {n})")
        return bytes(mem[ptr : ptr + n])  # copied: the guest frees it after the call

    def _storage_call(self, ret: int, op: str, *args: Any) -> Any:
        """The storage's method ``op`` on args (under the guard, if any). A
        ``BackendError`` is the import's answer, not the host's failure: it
        is written to ``ret`` as ``err(storage-error)`` and yields
        ``_FAILED`` (the caller then writes nothing)."""
        method = getattr(self._storage, op)
        try:
            if self._guard is None:
                return method(*args)
            return self._guard.call(op, method, args)
        except BackendError as e:
            self._storage_error(ret, e)
            return _FAILED

    def _storage_error(self, ret: int, e: BackendError) -> None:
        """Writes ``err(storage-error)``: case at +4, message at +8."""
        message = as_str("a storage error's message", e.message)
        p = self.guest.lower(message)
        self.guest.put("<B3xB3xII", ret & U32_MAX, 1, 1 if e.kind == "invalid-key" else 0, p, len(message))

    def _get(self, kp: int, kl: int, ret: int) -> None:
        value = self._storage_call(ret, "get", self._text(kp, kl))
        if value is _FAILED:
            return
        if value is None:
            self.guest.put("<B3xB", ret & U32_MAX, 0, 0)
            return
        data = as_bytes("a get's value", value)
        p = self.guest.lower(data)
        self.guest.put("<B3xB3xII", ret & U32_MAX, 0, 1, p, len(data))

    def _put_if_absent(self, kp: int, kl: int, vp: int, vl: int, ret: int) -> None:
        created = self._storage_call(ret, "put_if_absent", self._text(kp, kl), self._blob(vp, vl))
        if created is not _FAILED:
            self.guest.put("<B3xB", ret & U32_MAX, 0, check_bool("put_if_absent's result", created))

    def _put(self, kp: int, kl: int, vp: int, vl: int, ret: int) -> None:
        if self._storage_call(ret, "put", self._text(kp, kl), self._blob(vp, vl)) is not _FAILED:
            self.guest.put("<B", ret & U32_MAX, 0)

    def _delete(self, kp: int, kl: int, ret: int) -> None:
        if self._storage_call(ret, "delete", self._text(kp, kl)) is not _FAILED:
            self.guest.put("<B", ret & U32_MAX, 0)

    def _list(self, pp: int, pl: int, ret: int) -> None:
        keys = self._storage_call(ret, "list", self._text(pp, pl))
        if keys is _FAILED:
            return
        if not isinstance(keys, (list, tuple)):
            raise TypeError(f"list must return a list of str, not {type(keys).__name__}")
        ptr, n = self.guest.lower_list([as_str("a listed key", k) for k in keys])
        self.guest.put("<B3xII", ret & U32_MAX, 0, ptr, n)

    def _now_ms(self) -> int:
        v = check_int("now_ms()", self._clock.now_ms(), 0, U64_MAX)
        return v - (1 << 64) if v >> 63 else v  # the u64's bits as an i64

    # -- exports --------------------------------------------------------------

    def _table(self) -> Dict[Tuple[str, str], Callable[..., Any]]:
        C, W, T = "coordinator", "writer", "table"
        m = "[method]coordinator."
        return {
            (C, "[constructor]coordinator"): self._coordinator_new,
            (C, m + "set-limits"): self._set_limits,
            (C, m + "set-table-format"): self._set_table_format,
            (C, m + "start"): lambda h: self._outcome("start", self._rep(h)),
            (C, m + "event"): self._event,
            (C, m + "events"): self._events,
            (C, m + "events-packed"): self._events_packed_records,
            (C, m + "restored"): self._restored,
            (C, m + "subtask-reset"): self._subtask_reset,
            (C, m + "checkpoint"): self._checkpoint,
            (C, m + "checkpoint-complete"): lambda h, cp: self._outcome(
                "checkpoint-complete", self._rep(h), _u64("checkpoint", cp)
            ),
            (C, m + "checkpoint-aborted"): lambda h, cp: self._outcome(
                "checkpoint-aborted", self._rep(h), _u64("checkpoint", cp)
            ),
            (C, m + "close"): lambda h: self._outcome("close", self._rep(h)),
            (C, m + "state"): self._state,
            (C, m + "committed-up-to"): self._committed_up_to,
            (W, "[constructor]writer"): self._writer_new,
            (W, "[method]writer.report"): self._report,
            (W, "[method]writer.end-input"): self._end_input,
            (W, "[method]writer.committed"): lambda h, cp: self._unit(
                W, "[method]writer.committed", self._rep(h), _u64("checkpoint", cp)
            ),
            (W, "[method]writer.checkpoint-aborted"): lambda h, cp: self._unit(
                W, "[method]writer.checkpoint-aborted", self._rep(h), _u64("checkpoint", cp)
            ),
            (W, "[method]writer.state"): self._writer_state,
            (W, "[method]writer.restore"): self._writer_restore,
            (T, "latest-snapshot"): lambda: self._opt_snapshot("latest-snapshot"),
            (T, "snapshot-by-id"): lambda id: self._opt_snapshot("snapshot-by-id", _u64("id", id)),
            (T, "list-snapshots"): lambda: self._ret(T, "list-snapshots", (), self._lister(56, self.guest.snapshot)),
            (T, "list-tags"): lambda: self._ret(T, "list-tags", (), self._lister(48, self.guest.tag)),
        }

    def _new(self, interface: str, params: Sequence[int]) -> int:
        handle = self._fn(self.core.name(interface, f"[constructor]{interface}"))(*params)
        self._rep(handle)  # the constructor must return the handle it registered
        assert handle is not None
        return handle

    def _coordinator_new(self, config: Any, restore: Any) -> int:
        g = self.guest
        user = as_str("commit_user", _field(config, "commit-user"))
        final = _case("final_commit", _field(config, "final-commit"), _abi.FINAL_COMMIT)
        recovery = _case("recovery", _field(config, "recovery"), _abi.RECOVERY)
        retained = _field(config, "tag-time-retained-ms")
        params = [
            _u32("parallelism", _field(config, "parallelism")), 0, len(user),
            check_bool("checkpointing", _field(config, "checkpointing")), final,
            check_bool("force_create_snapshot", _field(config, "force-create-snapshot")),
            check_bool("savepoint_auto_tag", _field(config, "savepoint-auto-tag")),
            0 if retained is None else 1, 0 if retained is None else _u64("tag_time_retained_ms", retained),
            recovery, 0, 0, 0, 0, 0, 0,
        ]
        if restore is not None:
            checkpoint = _u64("restore.checkpoint", _field(restore, "checkpoint"))
            state = as_bytes("restore.state", _field(restore, "state"))
            finished = [_u32("a finished subtask", t) for t in _field(restore, "finished-subtasks")]
            params[10:16] = [1, checkpoint, g.lower(state), len(state),
                             g.lower(struct.pack(f"<{len(finished)}I", *finished), 4), len(finished)]
        params[1] = g.lower(user)
        return self._new("coordinator", params)

    def _writer_new(self, subtask: Any) -> int:
        return self._new("writer", [_u32("subtask", subtask)])

    def _unit(self, interface: str, name: str, *params: int) -> Variant:
        """A ``result<_, error>`` (the error at +4)."""
        return self._ret(interface, name, params, lambda r: self.guest.result(r, lambda _: None, 4))

    def _outcome(self, method: str, *params: int) -> Variant:
        """A ``result<outcome, error>`` (payload at +8)."""
        g = self.guest
        return self._ret("coordinator", "[method]coordinator." + method, params,
                         lambda r: g.result(r, lambda p: g.outcome(p + 8), 8))

    def _set_limits(self, h: Any, limits: Any) -> Variant:
        names = ("max-committable-bytes", "max-event-bytes", "max-snapshot-bytes")
        values = [_u64(f, _field(limits, f)) for f in names]
        return self._unit("coordinator", "[method]coordinator.set-limits", self._rep(h), *values)

    def _set_table_format(self, h: Any, format: Any) -> Variant:
        return self._unit("coordinator", "[method]coordinator.set-table-format", self._rep(h),
                          _case("table format", format, _abi.TABLE_FORMAT))

    def _lower_entry(self, entry: Any) -> Tuple[int, int, int, int, int, int]:
        """An entry's flat values: checkpoint, committables (ptr, n),
        watermark (disc, value), savepoint."""
        committables = [as_bytes("a committable", c) for c in _field(entry, "committables")]
        ptr, n = self.guest.lower_list(committables)
        wm = _field(entry, "watermark")
        return (_u64("checkpoint", _field(entry, "checkpoint")), ptr, n, 0 if wm is None else 1,
                0 if wm is None else _s64("watermark", wm), check_bool("savepoint", _field(entry, "savepoint")))

    def _event(self, h: Any, subtask: Any, attempt: Any, entry: Any) -> Variant:
        rep, s, a = self._rep(h), _u32("subtask", subtask), _u32("attempt", attempt)
        return self._outcome("event", rep, s, a, *self._lower_entry(entry))

    def _entries_array(self, entries: Sequence[Any], stride: int, head: Callable[[Any], Tuple[int, ...]]) -> int:
        buf = bytearray(stride * len(entries))
        for i, e in enumerate(entries):
            pre = head(e)
            cp, ptr, n, wd, wm, sp = self._lower_entry(_field(e, "entry") if pre else e)
            struct.pack_into("<" + "I" * len(pre) + "QIIB7xqB7x", buf, stride * i, *pre, cp, ptr, n, wd, wm, sp)
        return self.guest.lower(bytes(buf), 8)

    def _events(self, h: Any, events: Sequence[Any]) -> Variant:
        rep = self._rep(h)
        ptr = self._entries_array(
            events, 48, lambda e: (_u32("subtask", _field(e, "subtask")), _u32("attempt", _field(e, "attempt")))
        )
        return self._batch("events", rep, ptr, len(events))

    def _restored(self, h: Any, subtask: Any, attempt: Any, checkpoint: Any, entries: Sequence[Any]) -> Variant:
        rep, s, a, cp = self._rep(h), _u32("subtask", subtask), _u32("attempt", attempt), _u64("checkpoint", checkpoint)
        ptr = self._entries_array(entries, 40, lambda e: ())
        return self._outcome("restored", rep, s, a, cp, ptr, len(entries))

    def _events_packed_records(self, h: Any, events: Sequence[Any]) -> Variant:
        rows = [(_field(e, "subtask"), _field(e, "attempt"), _field(e, "checkpoint"),
                 as_bytes("committables", _field(e, "committables")), _field(e, "watermark"), _field(e, "savepoint"))
                for e in events]
        return self._packed(self._rep(h), rows)

    def events_packed(self, h: Any, events: Sequence[WriterEvent], pack: Callable[[Sequence[bytes]], bytes]) -> Variant:
        """``events-packed`` straight from ``WriterEvent``s (no ``Record``
        per event: a batched event's whole budget is a few microseconds)."""
        name = "[method]coordinator.events-packed"
        if not self.core.has("coordinator", name):
            raise WasmtimeError(f"the component does not export coordinator#{name}")

        def run() -> Variant:
            rep = self._rep(h)
            rows = [(e.subtask, e.attempt, e.entry.checkpoint, pack(e.entry.committables), e.entry.watermark,
                     e.entry.savepoint) for e in events]
            return self._packed(rep, rows)

        return self._guarded("coordinator", name, run)  # type: ignore[no-any-return]

    def _packed(self, rep: int, rows: Sequence[Tuple[Any, Any, Any, bytes, Any, Any]]) -> Variant:
        g = self.guest
        buf = bytearray(48 * len(rows))
        pack_into = _PACKED.pack_into
        lower = g.lower
        for i, (s, a, cp, block, wm, sp) in enumerate(rows):
            # Range checks first: a raw value would silently wrap.
            if not (type(s) is int and 0 <= s <= U32_MAX and type(a) is int and 0 <= a <= U32_MAX
                    and type(cp) is int and 0 <= cp <= U64_MAX and type(sp) is bool
                    and (wm is None or (type(wm) is int and S64[0] <= wm <= S64[1]))):
                _u32("subtask", s), _u32("attempt", a), _u64("checkpoint", cp), check_bool("savepoint", sp)
                if wm is not None:
                    _s64("watermark", wm)
            pack_into(buf, 48 * i, s, a, cp, lower(block), len(block), 0 if wm is None else 1, wm or 0, sp)
        return self._batch("events-packed", rep, g.lower(bytes(buf), 8), len(rows))

    def _batch(self, method: str, *params: int) -> Variant:
        """A ``result<batch-outcome, batch-error>`` (payload at +8;
        batch-error: applied @0, batch-outcome @8, error @64)."""
        g = self.guest

        def lift(r: int) -> Variant:
            if g.disc(r):
                error = record(applied=g.u32(r + 8), outcome=g.batch_outcome(r + 16), error=g.error(r + 72))
                return Variant("err", error)
            return Variant("ok", g.batch_outcome(r + 8))

        return self._ret("coordinator", "[method]coordinator." + method, params, lift)

    def _subtask_reset(self, h: Any, subtask: Any, checkpoint: Any) -> Variant:
        cp = None if checkpoint is None else _u64("checkpoint", checkpoint)
        return self._outcome("subtask-reset", self._rep(h), _u32("subtask", subtask), 0 if cp is None else 1, cp or 0)

    def _checkpoint(self, h: Any, checkpoint: Any) -> Variant:
        g = self.guest
        params = (self._rep(h), _u64("checkpoint", checkpoint))
        return self._ret(
            "coordinator", "[method]coordinator.checkpoint", params, lambda r: g.result(r, lambda p: g.blob(p + 4), 4)
        )

    def _state(self, h: Any) -> str:
        v = self._fn(self.core.name("coordinator", "[method]coordinator.state"))(self._rep(h))
        if v is None or v >= len(_abi.LIFECYCLE):
            raise Malformed(f"guest trapped in coordinator#state: malformed result: lifecycle {v}")
        return _abi.LIFECYCLE[v]

    def _committed_up_to(self, h: Any) -> Optional[int]:
        return self._ret("coordinator", "[method]coordinator.committed-up-to", (self._rep(h),), self.guest.opt_u64)

    def _entry_result(self, name: str, *params: int) -> Variant:
        g = self.guest
        return self._ret("writer", name, params, lambda r: g.result(r, lambda p: g.entry(p + 8), 8))

    def _report(self, h: Any, checkpoint: Any, committables: Sequence[Any], watermark: Any, savepoint: Any) -> Variant:
        rep, cp = self._rep(h), _u64("checkpoint", checkpoint)
        wm = None if watermark is None else _s64("watermark", watermark)
        sp = check_bool("savepoint", savepoint)
        ptr, n = self.guest.lower_list([as_bytes("a committable", c) for c in committables])
        return self._entry_result("[method]writer.report", rep, cp, ptr, n, 0 if wm is None else 1, wm or 0, sp)

    def _end_input(self, h: Any, committables: Sequence[Any], watermark: Any) -> Variant:
        rep = self._rep(h)
        wm = None if watermark is None else _s64("watermark", watermark)
        ptr, n = self.guest.lower_list([as_bytes("a committable", c) for c in committables])
        return self._entry_result("[method]writer.end-input", rep, ptr, n, 0 if wm is None else 1, wm or 0)

    def _writer_state(self, h: Any) -> bytes:
        return self._ret("writer", "[method]writer.state", (self._rep(h),), self.guest.blob)

    def _writer_restore(self, h: Any, state: Any, checkpoint: Any) -> Variant:
        rep, cp = self._rep(h), _u64("checkpoint", checkpoint)
        data = as_bytes("state", state)
        ptr = self.guest.lower(data)
        g = self.guest
        return self._ret("writer", "[method]writer.restore", (rep, ptr, len(data), cp), self._lister(40, g.entry))

    def _lister(self, size: int, lift: Callable[[int], Any]) -> Callable[[int], Variant]:
        """Lifts ``result<list<T>, error>`` (list at +4, error at +4)."""
        g = self.guest

        def lift_list(r: int) -> Variant:
            if g.disc(r):
                return Variant("err", g.error(r + 4))
            ptr, n = g.view(r + 4, size)
            return Variant("ok", [lift(ptr + size * i) for i in range(n)])

        return lift_list

    def _opt_snapshot(self, name: str, *params: int) -> Variant:
        """``result<option<snapshot>, error>``: option at +8, snapshot at +16."""
        g = self.guest

        def lift(r: int) -> Variant:
            if g.disc(r):
                return Variant("err", g.error(r + 8))
            return Variant("ok", g.snapshot(r + 16) if g.disc(r + 8) else None)

        return self._ret("table", name, params, lift)


def _field(value: Any, name: str) -> Any:
    """A field of a ``Record`` (kebab-case) or a dataclass (snake_case)."""
    try:
        return getattr(value, name)
    except AttributeError:
        return getattr(value, name.replace("-", "_"))


def _case(what: str, v: Any, cases: Dict[str, int]) -> int:
    v = getattr(v, "value", v)
    if not isinstance(v, str) or v not in cases:
        raise ValueError(f"{what} must be one of {', '.join(cases)}, not {v!r}")
    return cases[v]


def _u32(what: str, v: Any) -> int:
    return check_int(what, v, 0, U32_MAX)


def _u64(what: str, v: Any) -> int:
    return check_int(what, v, 0, U64_MAX)


def _s64(what: str, v: Any) -> int:
    return check_int(what, v, S64[0], S64[1])
