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
from . import _layout as L
from ._abi import (
    LIST, U32_MAX, U64_MAX, Guest, Malformed, RawFunc, as_bytes, as_str, check_bool, check_int, layout_codes, record
)
from .errors import BackendError, IncompatibleComponent
from .storage import Clock, Storage
from .types import WriterEvent
from .version import check_version

if TYPE_CHECKING:
    from .runtime import Runtime, _StorageGuard

S64 = (-(1 << 63), (1 << 63) - 1)
R = TypeVar("R")
#: One ``packed-event`` (docs/embedding.md section 3).
_PACKED = struct.Struct("<" + layout_codes(
    (L.PACKED_EVENT_SUBTASK, "I"),
    (L.PACKED_EVENT_ATTEMPT, "I"),
    (L.PACKED_EVENT_CHECKPOINT, "Q"),
    (L.PACKED_EVENT_COMMITTABLES, LIST),
    (L.PACKED_EVENT_WATERMARK, "B"),
    (L.PACKED_EVENT_WATERMARK + L.OPTION_S64_PAYLOAD, "q"),
    (L.PACKED_EVENT_SAVEPOINT, "B"),
    size=L.PACKED_EVENT_SIZE,
))


def _entry_fields(at: int) -> Tuple[Tuple[int, str], ...]:
    """An ``entry``'s fields (checkpoint, committables, watermark,
    savepoint) from offset ``at``: 0 in an ``entry``, the field's offset
    in a ``writer-event``."""
    return (
        (at + L.ENTRY_CHECKPOINT, "Q"),
        (at + L.ENTRY_COMMITTABLES, LIST),
        (at + L.ENTRY_WATERMARK, "B"),
        (at + L.ENTRY_WATERMARK + L.OPTION_S64_PAYLOAD, "q"),
        (at + L.ENTRY_SAVEPOINT, "B"),
    )


_ENTRY = struct.Struct("<" + layout_codes(*_entry_fields(0), size=L.ENTRY_SIZE))
_WRITER_EVENT = struct.Struct("<" + layout_codes(
    (L.WRITER_EVENT_SUBTASK, "I"),
    (L.WRITER_EVENT_ATTEMPT, "I"),
    *_entry_fields(L.WRITER_EVENT_ENTRY),
    size=L.WRITER_EVENT_SIZE,
))
# The storage imports' results, result<T, storage-error>: a discriminant,
# then T or the storage-error at the payload offset. One helper writes the
# err case of all five, so their payloads must agree (they do: the largest
# alignment inside each is 4).
_STORAGE_PAYLOAD = L.RESULT_STORAGE_ERROR_PAYLOAD
assert _STORAGE_PAYLOAD == L.RESULT_OPTION_LIST_U8_STORAGE_ERROR_PAYLOAD == L.RESULT_BOOL_STORAGE_ERROR_PAYLOAD
assert _STORAGE_PAYLOAD == L.RESULT_LIST_STRING_STORAGE_ERROR_PAYLOAD
#: err: the storage-error's case, then its message.
_STORAGE_ERR = "<" + layout_codes(
    (0, "B"), (_STORAGE_PAYLOAD, "B"), (_STORAGE_PAYLOAD + L.STORAGE_ERROR_PAYLOAD, LIST)
)
#: ok with a one-byte T: get's none (the option's discriminant), put-if-absent's bool.
_OK_BYTE = "<" + layout_codes((0, "B"), (_STORAGE_PAYLOAD, "B"))
#: ok(some(bytes)) of get.
_OK_SOME = "<" + layout_codes((0, "B"), (_STORAGE_PAYLOAD, "B"), (_STORAGE_PAYLOAD + L.OPTION_LIST_U8_PAYLOAD, LIST))
#: ok(keys) of list.
_OK_LIST = "<" + layout_codes((0, "B"), (_STORAGE_PAYLOAD, LIST))
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
            "[resource-drop]coordinator": self._drop(L.COORDINATOR_DTOR), "[resource-drop]writer": self._drop(L.WRITER_DTOR),
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

    def _ret(self, export: L.Export, params: Sequence[int], lift: Callable[[int], R]) -> R:
        """Calls an export returning through a return area, lifts its result
        and runs its post-return, if it has one (also when the lift failed,
        so the guest never holds a result past its call)."""
        full = self.core.name(export.interface, export.name)
        ret = self._fn(full)(*params)
        assert ret is not None
        failure: Optional[Malformed] = None
        value: Optional[R] = None
        try:
            value = lift(ret)
        except Malformed as e:
            failure = e
        if export.post_return:
            self._fn("cabi_post_" + full)(ret)
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

    def _drop(self, dtor: L.Export) -> Callable[[int], None]:
        def drop(handle: int) -> None:
            rep = self._rep(handle)
            self._reps[handle - 1] = 0
            self._fn(self.core.name(dtor.interface, dtor.name))(rep)

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
        """Writes ``err(storage-error)``."""
        message = as_str("a storage error's message", e.message)
        p = self.guest.lower(message)
        self.guest.put(_STORAGE_ERR, ret & U32_MAX, 1, 1 if e.kind == "invalid-key" else 0, p, len(message))

    def _get(self, kp: int, kl: int, ret: int) -> None:
        value = self._storage_call(ret, "get", self._text(kp, kl))
        if value is _FAILED:
            return
        if value is None:
            self.guest.put(_OK_BYTE, ret & U32_MAX, 0, 0)
            return
        data = as_bytes("a get's value", value)
        p = self.guest.lower(data)
        self.guest.put(_OK_SOME, ret & U32_MAX, 0, 1, p, len(data))

    def _put_if_absent(self, kp: int, kl: int, vp: int, vl: int, ret: int) -> None:
        created = self._storage_call(ret, "put_if_absent", self._text(kp, kl), self._blob(vp, vl))
        if created is not _FAILED:
            self.guest.put(_OK_BYTE, ret & U32_MAX, 0, check_bool("put_if_absent's result", created))

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
        self.guest.put(_OK_LIST, ret & U32_MAX, 0, ptr, n)

    def _now_ms(self) -> int:
        v = check_int("now_ms()", self._clock.now_ms(), 0, U64_MAX)
        return v - (1 << 64) if v >> 63 else v  # the u64's bits as an i64

    # -- exports --------------------------------------------------------------

    def _table(self) -> Dict[Tuple[str, str], Callable[..., Any]]:
        calls: Dict[L.Export, Callable[..., Any]] = {
            L.COORDINATOR_CONSTRUCTOR: self._coordinator_new,
            L.COORDINATOR_SET_LIMITS: self._set_limits,
            L.COORDINATOR_SET_TABLE_FORMAT: self._set_table_format,
            L.COORDINATOR_START: lambda h: self._outcome(L.COORDINATOR_START, self._rep(h)),
            L.COORDINATOR_EVENT: self._event,
            L.COORDINATOR_EVENTS: self._events,
            L.COORDINATOR_EVENTS_PACKED: self._events_packed_records,
            L.COORDINATOR_RESTORED: self._restored,
            L.COORDINATOR_SUBTASK_RESET: self._subtask_reset,
            L.COORDINATOR_CHECKPOINT: self._checkpoint,
            L.COORDINATOR_CHECKPOINT_COMPLETE: lambda h, cp: self._outcome(
                L.COORDINATOR_CHECKPOINT_COMPLETE, self._rep(h), _u64("checkpoint", cp)
            ),
            L.COORDINATOR_CHECKPOINT_ABORTED: lambda h, cp: self._outcome(
                L.COORDINATOR_CHECKPOINT_ABORTED, self._rep(h), _u64("checkpoint", cp)
            ),
            L.COORDINATOR_CLOSE: lambda h: self._outcome(L.COORDINATOR_CLOSE, self._rep(h)),
            L.COORDINATOR_STATE: self._state,
            L.COORDINATOR_COMMITTED_UP_TO: self._committed_up_to,
            L.WRITER_CONSTRUCTOR: self._writer_new,
            L.WRITER_REPORT: self._report,
            L.WRITER_END_INPUT: self._end_input,
            L.WRITER_COMMITTED: lambda h, cp: self._unit(L.WRITER_COMMITTED, self._rep(h), _u64("checkpoint", cp)),
            L.WRITER_CHECKPOINT_ABORTED: lambda h, cp: self._unit(
                L.WRITER_CHECKPOINT_ABORTED, self._rep(h), _u64("checkpoint", cp)
            ),
            L.WRITER_STATE: self._writer_state,
            L.WRITER_RESTORE: self._writer_restore,
            L.TABLE_LATEST_SNAPSHOT: lambda: self._opt_snapshot(L.TABLE_LATEST_SNAPSHOT),
            L.TABLE_SNAPSHOT_BY_ID: lambda id: self._opt_snapshot(L.TABLE_SNAPSHOT_BY_ID, _u64("id", id)),
            L.TABLE_LIST_SNAPSHOTS: lambda: self._ret(
                L.TABLE_LIST_SNAPSHOTS, (),
                self._lister(L.RESULT_LIST_SNAPSHOT_ERROR_PAYLOAD, L.SNAPSHOT_SIZE, self.guest.snapshot)),
            L.TABLE_LIST_TAGS: lambda: self._ret(
                L.TABLE_LIST_TAGS, (), self._lister(L.RESULT_LIST_TAG_ERROR_PAYLOAD, L.TAG_SIZE, self.guest.tag)),
        }
        # Keyed as the handles name their calls (the component path's names).
        return {(e.interface, e.name): f for e, f in calls.items()}

    def _new(self, constructor: L.Export, params: Sequence[int]) -> int:
        handle = self._fn(self.core.name(constructor.interface, constructor.name))(*params)
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
        return self._new(L.COORDINATOR_CONSTRUCTOR, params)

    def _writer_new(self, subtask: Any) -> int:
        return self._new(L.WRITER_CONSTRUCTOR, [_u32("subtask", subtask)])

    def _unit(self, export: L.Export, *params: int) -> Variant:
        """A ``result<_, error>``."""
        return self._ret(export, params, lambda r: self.guest.result(r, lambda _: None, L.RESULT_ERROR_PAYLOAD))

    def _outcome(self, export: L.Export, *params: int) -> Variant:
        """A ``result<outcome, error>``."""
        g = self.guest
        return self._ret(export, params, lambda r: g.result(r, g.outcome, L.RESULT_OUTCOME_ERROR_PAYLOAD))

    def _set_limits(self, h: Any, limits: Any) -> Variant:
        names = ("max-committable-bytes", "max-event-bytes", "max-snapshot-bytes")
        values = [_u64(f, _field(limits, f)) for f in names]
        return self._unit(L.COORDINATOR_SET_LIMITS, self._rep(h), *values)

    def _set_table_format(self, h: Any, format: Any) -> Variant:
        return self._unit(L.COORDINATOR_SET_TABLE_FORMAT, self._rep(h),
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
        return self._outcome(L.COORDINATOR_EVENT, rep, s, a, *self._lower_entry(entry))

    def _entries_array(self, entries: Sequence[Any], layout: struct.Struct, align: int,
                       head: Callable[[Any], Tuple[int, ...]]) -> int:
        """An array of ``entry`` (``head`` gives no fields) or of
        ``writer-event`` (``head`` gives subtask and attempt)."""
        stride = layout.size
        buf = bytearray(stride * len(entries))
        for i, e in enumerate(entries):
            pre = head(e)
            layout.pack_into(buf, stride * i, *pre, *self._lower_entry(_field(e, "entry") if pre else e))
        return self.guest.lower(bytes(buf), align)

    def _events(self, h: Any, events: Sequence[Any]) -> Variant:
        rep = self._rep(h)
        ptr = self._entries_array(
            events, _WRITER_EVENT, L.WRITER_EVENT_ALIGN,
            lambda e: (_u32("subtask", _field(e, "subtask")), _u32("attempt", _field(e, "attempt")))
        )
        return self._batch(L.COORDINATOR_EVENTS, rep, ptr, len(events))

    def _restored(self, h: Any, subtask: Any, attempt: Any, checkpoint: Any, entries: Sequence[Any]) -> Variant:
        rep, s, a, cp = self._rep(h), _u32("subtask", subtask), _u32("attempt", attempt), _u64("checkpoint", checkpoint)
        ptr = self._entries_array(entries, _ENTRY, L.ENTRY_ALIGN, lambda e: ())
        return self._outcome(L.COORDINATOR_RESTORED, rep, s, a, cp, ptr, len(entries))

    def _events_packed_records(self, h: Any, events: Sequence[Any]) -> Variant:
        rows = [(_field(e, "subtask"), _field(e, "attempt"), _field(e, "checkpoint"),
                 as_bytes("committables", _field(e, "committables")), _field(e, "watermark"), _field(e, "savepoint"))
                for e in events]
        return self._packed(self._rep(h), rows)

    def events_packed(self, h: Any, events: Sequence[WriterEvent], pack: Callable[[Sequence[bytes]], bytes]) -> Variant:
        """``events-packed`` straight from ``WriterEvent``s (no ``Record``
        per event: a batched event's whole budget is a few microseconds)."""
        export = L.COORDINATOR_EVENTS_PACKED
        if not self.core.has(export.interface, export.name):
            raise WasmtimeError(f"the component does not export coordinator#{export.name}")

        def run() -> Variant:
            rep = self._rep(h)
            rows = [(e.subtask, e.attempt, e.entry.checkpoint, pack(e.entry.committables), e.entry.watermark,
                     e.entry.savepoint) for e in events]
            return self._packed(rep, rows)

        return self._guarded(export.interface, export.name, run)  # type: ignore[no-any-return]

    def _packed(self, rep: int, rows: Sequence[Tuple[Any, Any, Any, bytes, Any, Any]]) -> Variant:
        g = self.guest
        size = L.PACKED_EVENT_SIZE
        buf = bytearray(size * len(rows))
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
            pack_into(buf, size * i, s, a, cp, lower(block), len(block), 0 if wm is None else 1, wm or 0, sp)
        return self._batch(L.COORDINATOR_EVENTS_PACKED, rep, g.lower(bytes(buf), L.PACKED_EVENT_ALIGN), len(rows))

    def _batch(self, export: L.Export, *params: int) -> Variant:
        """A ``result<batch-outcome, batch-error>``."""
        g = self.guest

        def lift(r: int) -> Variant:
            p = r + L.RESULT_BATCH_OUTCOME_BATCH_ERROR_PAYLOAD
            if g.disc(r):
                error = record(applied=g.u32(p + L.BATCH_ERROR_APPLIED),
                               outcome=g.batch_outcome(p + L.BATCH_ERROR_OUTCOME),
                               error=g.error(p + L.BATCH_ERROR_ERROR))
                return Variant("err", error)
            return Variant("ok", g.batch_outcome(p))

        return self._ret(export, params, lift)

    def _subtask_reset(self, h: Any, subtask: Any, checkpoint: Any) -> Variant:
        cp = None if checkpoint is None else _u64("checkpoint", checkpoint)
        return self._outcome(L.COORDINATOR_SUBTASK_RESET, self._rep(h), _u32("subtask", subtask), 0 if cp is None else 1, cp or 0)

    def _checkpoint(self, h: Any, checkpoint: Any) -> Variant:
        g = self.guest
        params = (self._rep(h), _u64("checkpoint", checkpoint))
        return self._ret(
            L.COORDINATOR_CHECKPOINT, params,
            lambda r: g.result(r, g.blob, L.RESULT_LIST_U8_ERROR_PAYLOAD)
        )

    def _state(self, h: Any) -> str:
        state = L.COORDINATOR_STATE
        v = self._fn(self.core.name(state.interface, state.name))(self._rep(h))
        if v is None or v >= len(_abi.LIFECYCLE):
            raise Malformed(f"guest trapped in coordinator#state: malformed result: lifecycle {v}")
        return _abi.LIFECYCLE[v]

    def _committed_up_to(self, h: Any) -> Optional[int]:
        return self._ret(L.COORDINATOR_COMMITTED_UP_TO, (self._rep(h),), self.guest.opt_u64)

    def _entry_result(self, export: L.Export, *params: int) -> Variant:
        g = self.guest
        return self._ret(export, params, lambda r: g.result(r, g.entry, L.RESULT_ENTRY_ERROR_PAYLOAD))

    def _report(self, h: Any, checkpoint: Any, committables: Sequence[Any], watermark: Any, savepoint: Any) -> Variant:
        rep, cp = self._rep(h), _u64("checkpoint", checkpoint)
        wm = None if watermark is None else _s64("watermark", watermark)
        sp = check_bool("savepoint", savepoint)
        ptr, n = self.guest.lower_list([as_bytes("a committable", c) for c in committables])
        return self._entry_result(L.WRITER_REPORT, rep, cp, ptr, n, 0 if wm is None else 1, wm or 0, sp)

    def _end_input(self, h: Any, committables: Sequence[Any], watermark: Any) -> Variant:
        rep = self._rep(h)
        wm = None if watermark is None else _s64("watermark", watermark)
        ptr, n = self.guest.lower_list([as_bytes("a committable", c) for c in committables])
        return self._entry_result(L.WRITER_END_INPUT, rep, ptr, n, 0 if wm is None else 1, wm or 0)

    def _writer_state(self, h: Any) -> bytes:
        return self._ret(L.WRITER_STATE, (self._rep(h),), self.guest.blob)

    def _writer_restore(self, h: Any, state: Any, checkpoint: Any) -> Variant:
        rep, cp = self._rep(h), _u64("checkpoint", checkpoint)
        data = as_bytes("state", state)
        ptr = self.guest.lower(data)
        g = self.guest
        return self._ret(L.WRITER_RESTORE, (rep, ptr, len(data), cp),
                         self._lister(L.RESULT_LIST_ENTRY_ERROR_PAYLOAD, L.ENTRY_SIZE, g.entry))

    def _lister(self, payload: int, size: int, lift: Callable[[int], Any]) -> Callable[[int], Variant]:
        """Lifts ``result<list<T>, error>`` (its payload at ``payload``):
        elements of ``size`` bytes."""
        g = self.guest

        def lift_list(r: int) -> Variant:
            if g.disc(r):
                return Variant("err", g.error(r + payload))
            ptr, n = g.view(r + payload, size)
            return Variant("ok", [lift(ptr + size * i) for i in range(n)])

        return lift_list

    def _opt_snapshot(self, export: L.Export, *params: int) -> Variant:
        """``result<option<snapshot>, error>``."""
        g = self.guest

        def lift(r: int) -> Variant:
            p = r + L.RESULT_OPTION_SNAPSHOT_ERROR_PAYLOAD
            if g.disc(r):
                return Variant("err", g.error(p))
            return Variant("ok", g.snapshot(p + L.OPTION_SNAPSHOT_PAYLOAD) if g.disc(p) else None)

        return self._ret(export, params, lift)


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
