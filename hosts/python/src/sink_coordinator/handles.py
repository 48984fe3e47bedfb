"""Typed handles on the component's exports: ``Coordinator``, ``Writer`` and
``Table``. Each handle owns one Store and component instance; a call that
returned an error raises the ``CoordinatorError`` subclass of its kind, a
trap raises ``TrapError`` and discards the handle (a table re-instantiates)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, TypeVar, Union, cast

from wasmtime.component import Record, Variant

from .errors import ERRORS, BackendIOError, CoordinatorError, InvalidConfigError, TrapError
from ._core import CoreInstance
from .runtime import Runtime, _Instance
from .storage import Clock, Storage, SystemClock
from .types import (
    Config,
    Entry,
    Lifecycle,
    Limits,
    Outcome,
    RestorePoint,
    Snapshot,
    TableFormat,
    Tag,
    WriterEvent,
)

#: What ``Coordinator.set_table_format`` takes: the enum or its WIT name.
TableFormatLike = Union[TableFormat, Literal["native", "paimon"]]

T = TypeVar("T")
#: One handle's instance: the core module's (default) or the component's.
AnyInstance = Union[_Instance, CoreInstance]


def _record(value: Any) -> Record:
    """A dataclass as a wasmtime-py Record (kebab-case fields, enum values)."""
    r = Record()
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        setattr(r, f.name.replace("_", "-"), v.value if hasattr(v, "value") else v)
    return r


def _fields(record: Any) -> Dict[str, Any]:
    return {k.replace("-", "_"): v for k, v in vars(record).items()}


def _entry(record: Any) -> Entry:
    d = _fields(record)
    return Entry(d["checkpoint"], [bytes(c) for c in d["committables"]], d["watermark"], d["savepoint"])


def _outcome(record: Any) -> Outcome:
    d = _fields(record)
    return Outcome(
        Lifecycle(d["state"]),
        list(d["committed"]),
        list(d["tags_created"]),
        list(d["tags_deleted"]),
        d["restart_required"],
        d["committed_up_to"],
    )


def _batch_outcome(record: Any) -> Outcome:
    """A batch's compact outcome (WIT ``batch-outcome``: no lists unless
    something was committed or tagged) as a full ``Outcome``."""
    d = _fields(record)
    e = d["effects"]
    effects = {} if e is None else _fields(e)
    return Outcome(
        Lifecycle(d["state"]),
        list(effects.get("committed", [])),
        list(effects.get("tags_created", [])),
        list(effects.get("tags_deleted", [])),
        bool(effects.get("restart_required", False)),
        d["committed_up_to"],
    )


def _event_record(e: WriterEvent) -> Record:
    r = Record()
    setattr(r, "subtask", e.subtask)
    setattr(r, "attempt", e.attempt)
    setattr(r, "entry", _record(e.entry))
    return r


def _leb128(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


#: LEB128s already made: packing is most of a batched event's host time,
#: and a job's committables have few distinct lengths (bounded: the cache
#: stops growing at 2^14 entries).
_LEB128: Dict[int, bytes] = {}


def _leb128_cached(n: int) -> bytes:
    b = _LEB128.get(n)
    if b is None:
        b = _leb128(n)
        if len(_LEB128) < 1 << 14:
            _LEB128[n] = b
    return b


def pack_committables(committables: Sequence[bytes]) -> bytes:
    """The committables as one block (WIT 0.2.2 ``packed-event``): an unsigned
    LEB128 count, then per committable an unsigned LEB128 length and its
    bytes."""
    get = _LEB128.get
    parts = [get(len(committables)) or _leb128_cached(len(committables))]
    for c in committables:
        parts.append(get(len(c)) or _leb128_cached(len(c)))
        parts.append(c if isinstance(c, (bytes, bytearray)) else bytes(c))
    return b"".join(parts)


def _packed_record(e: WriterEvent) -> Record:
    r = Record()
    setattr(r, "subtask", e.subtask)
    setattr(r, "attempt", e.attempt)
    setattr(r, "checkpoint", e.entry.checkpoint)
    setattr(r, "committables", pack_committables(e.entry.committables))
    setattr(r, "watermark", e.entry.watermark)
    setattr(r, "savepoint", e.entry.savepoint)
    return r


def _snapshot(record: Any) -> Snapshot:
    d = _fields(record)
    return Snapshot(
        d["id"],
        d["commit_user"],
        d["identifier"],
        d["watermark"],
        d["time_ms"],
        [(s, bytes(c)) for s, c in d["committables"]],
    )


def _tag(record: Any) -> Tag:
    return Tag(**_fields(record))


def _is_error(value: Any) -> bool:
    return isinstance(value, Record) and set(vars(value)) == {"kind", "message"}


def _unwrap(value: Any) -> Any:
    """The ``ok`` payload of a ``result<T, error>``, else raises the error's
    class. wasmtime-py tags a result (``Variant``) only when its cases'
    Python types overlap; otherwise the bare ``error`` Record is the err."""
    if isinstance(value, Variant) and value.tag in ("ok", "err"):
        payload: Any = value.payload
        if value.tag == "err":
            raise ERRORS[payload.kind](payload.message)
        return payload
    if _is_error(value):
        raise ERRORS[value.kind](value.message)
    return value


class _NoStorage:
    """The storage of a writer: the component links one, a writer never
    calls it."""

    def _refuse(self, *_args: Any) -> Any:
        raise BackendIOError("a writer has no storage")

    get = put_if_absent = put = delete = list = _refuse


class _Handle:
    def __init__(self, runtime: Optional[Runtime], storage: Storage, clock: Optional[Clock]) -> None:
        self._runtime = runtime or Runtime.default()
        self._storage = storage
        self._clock = clock or SystemClock()
        self._instance: Optional[AnyInstance] = None
        self._discarded: Optional[str] = None

    def _new_instance(self) -> AnyInstance:
        return self._runtime.instantiate(self._storage, self._clock)

    def _call(self, fn: Callable[[AnyInstance], T]) -> T:
        if self._discarded is not None:
            raise TrapError(f"the instance was discarded after a trap: {self._discarded}")
        try:
            if self._instance is None:
                self._instance = self._new_instance()
            return fn(self._instance)
        except CoordinatorError:
            raise
        except Exception as e:  # a trap (or an exception a storage raised)
            self._trapped(str(e))
            raise TrapError(str(e)) from e

    def _trapped(self, message: str) -> None:
        self._discarded = message
        self._instance = None

    @property
    def discarded(self) -> bool:
        """Whether a trap discarded this handle."""
        return self._discarded is not None


class Coordinator(_Handle):
    """The commit coordinator of one sink (WIT resource ``coordinator``):
    one component instance over ``storage`` (the table) and ``clock``
    (default: the system clock), resuming from ``restore`` if given.
    ``table_format``, if not native, is set before the constructor returns
    (``set_table_format``; its errors are raised from here)."""

    def __init__(
        self,
        config: Config,
        storage: Storage,
        clock: Optional[Clock] = None,
        restore: Optional[RestorePoint] = None,
        *,
        runtime: Optional[Runtime] = None,
        table_format: TableFormatLike = TableFormat.NATIVE,
    ) -> None:
        super().__init__(runtime, storage, clock)
        # Whether the component has ``events-packed`` (0.2.2 on); looked up once.
        self._packed: Optional[bool] = None
        # Whether it has ``set-table-format`` (0.2.5 on); looked up when first needed.
        self._has_format: Optional[bool] = None
        args = (_record(config), None if restore is None else _record(restore))
        self._handle = self._call(lambda i: i.call("coordinator", "[constructor]coordinator", *args))
        # As the Rust host's RuntimeOptions::table_format: native makes no call.
        if table_format != TableFormat.NATIVE:
            self.set_table_format(table_format)

    def _method(self, name: str, *args: Any) -> Any:
        return self._call(lambda i: i.call("coordinator", f"[method]coordinator.{name}", self._handle, *args))

    def set_limits(self, limits: Limits) -> None:
        """Sets the size limits; only before ``start``."""
        _unwrap(self._method("set-limits", _record(limits)))

    def set_table_format(self, format: TableFormatLike) -> None:
        """Chooses the table format (``TableFormat.PAIMON`` or ``"paimon"``:
        an Apache Paimon table, whose ``schema/schema-0`` must be in the
        storage and whose committables are data-file metadata); only before
        ``start``, else a fatal ``IllegalStateError``. An unknown name raises
        ``ValueError`` before the component is entered.

        A component older than 0.2.5 has no ``set-table-format`` and writes
        the native log only: ``native`` needs no call, any other format raises
        ``InvalidConfigError`` without entering it (the coordinator stays
        usable), with the Rust host's message."""
        try:
            kind = TableFormat(format)
        except ValueError:
            raise ValueError(f"unknown table format {format!r} (native or paimon)") from None

        def call(i: AnyInstance) -> None:
            if self._has_format is None:
                self._has_format = i.exports("coordinator", "[method]coordinator.set-table-format")
            if not self._has_format:
                if kind is TableFormat.NATIVE:
                    return
                raise InvalidConfigError(
                    f"table-format {kind.value}: the component has no set-table-format"
                    " (it needs WIT 0.2.5 or later)"
                )
            _unwrap(i.call("coordinator", "[method]coordinator.set-table-format", self._handle, kind.value))

        self._call(call)

    def start(self) -> Outcome:
        """Starts (or, with a restore point, restores and starts)."""
        return _outcome(_unwrap(self._method("start")))

    def event(self, subtask: int, attempt: int, entry: Entry) -> Outcome:
        """A writer's entry (what ``Writer.report`` or ``end_input`` returned)."""
        return _outcome(_unwrap(self._method("event", subtask, attempt, _record(entry))))

    def events(self, events: Sequence[WriterEvent]) -> Outcome:
        """Many writer events in one crossing (component 0.2.1 on): applied in
        order exactly as ``event`` would, stopping at the first error; one
        merged ``Outcome`` (committed snapshots and tags concatenated,
        ``restart_required`` ORed, the last state and committed-up-to). An
        error raises its kind's class with ``applied`` (the failing event's
        index: the events before it stay applied; after ``declined`` or
        ``storage`` resend from there) and ``outcome`` set.

        A 0.2.2 component gets the batch through ``events-packed``: each
        event's committables cross as one block (one guest allocation per
        event instead of one per committable)."""
        if self._packed is None:
            self._packed = self._call(lambda i: i.exports("coordinator", "[method]coordinator.events-packed"))
        if self._packed and isinstance(self._instance, CoreInstance):
            # No Record per event on the core module: straight from the events.
            value = self._call(lambda i: cast(CoreInstance, i).events_packed(self._handle, events, pack_committables))
        elif self._packed:
            value = self._method("events-packed", [_packed_record(e) for e in events])
        else:
            value = self._method("events", [_event_record(e) for e in events])
        # ok and err are both records: wasmtime-py tags the result.
        if isinstance(value, Variant) and value.tag == "err":
            p: Any = value.payload
            error = ERRORS[p.error.kind](p.error.message)
            error.applied = p.applied
            error.outcome = _batch_outcome(p.outcome)
            raise error
        return _batch_outcome(value.payload if isinstance(value, Variant) else value)

    def restored(self, subtask: int, attempt: int, checkpoint: int, entries: Sequence[Entry]) -> Outcome:
        """A restored writer's entries (what ``Writer.restore`` returned)."""
        return _outcome(_unwrap(self._method("restored", subtask, attempt, checkpoint, [_record(e) for e in entries])))

    def subtask_reset(self, subtask: int, checkpoint: Optional[int]) -> Outcome:
        """A writer subtask failed over to ``checkpoint`` (None: a fresh start)."""
        return _outcome(_unwrap(self._method("subtask-reset", subtask, checkpoint)))

    def checkpoint(self, checkpoint: int) -> bytes:
        """The coordinator's state bytes for ``checkpoint``."""
        return bytes(_unwrap(self._method("checkpoint", checkpoint)))

    def checkpoint_complete(self, checkpoint: int) -> Outcome:
        """``checkpoint`` completed: commits what it covers."""
        return _outcome(_unwrap(self._method("checkpoint-complete", checkpoint)))

    def checkpoint_aborted(self, checkpoint: int) -> Outcome:
        """``checkpoint`` was aborted."""
        return _outcome(_unwrap(self._method("checkpoint-aborted", checkpoint)))

    def close(self) -> Outcome:
        """The job ends."""
        return _outcome(_unwrap(self._method("close")))

    def state(self) -> Lifecycle:
        """The lifecycle state."""
        return Lifecycle(self._method("state"))

    def committed_up_to(self) -> Optional[int]:
        """Every accepted entry up to this checkpoint is in the table."""
        value: Optional[int] = self._method("committed-up-to")
        return value


class Writer(_Handle):
    """The writer-side half for one subtask (WIT resource ``writer``): what a
    writer keeps in its state and sends to the coordinator. ``storage`` and
    ``clock`` are linked but never called."""

    def __init__(
        self,
        subtask: int,
        *,
        storage: Optional[Storage] = None,
        clock: Optional[Clock] = None,
        runtime: Optional[Runtime] = None,
    ) -> None:
        super().__init__(runtime, storage or _NoStorage(), clock)
        self._handle = self._call(lambda i: i.call("writer", "[constructor]writer", subtask))

    def _method(self, name: str, *args: Any) -> Any:
        return self._call(lambda i: i.call("writer", f"[method]writer.{name}", self._handle, *args))

    def report(
        self, checkpoint: int, committables: Sequence[bytes], watermark: Optional[int] = None, savepoint: bool = False
    ) -> Entry:
        """The entry to send for ``checkpoint`` (kept until committed)."""
        return _entry(_unwrap(self._method("report", checkpoint, [bytes(c) for c in committables], watermark, savepoint)))

    def end_input(self, committables: Sequence[bytes], watermark: Optional[int] = None) -> Entry:
        """The END entry to send at end of input."""
        return _entry(_unwrap(self._method("end-input", [bytes(c) for c in committables], watermark)))

    def committed(self, checkpoint: int) -> None:
        """The coordinator's committed-up-to: drops entries up to it."""
        _unwrap(self._method("committed", checkpoint))

    def checkpoint_aborted(self, checkpoint: int) -> None:
        """``checkpoint`` was aborted."""
        _unwrap(self._method("checkpoint-aborted", checkpoint))

    def state(self) -> bytes:
        """The writer's state bytes (for the engine's checkpoint)."""
        return bytes(self._method("state"))

    def restore(self, state: bytes, checkpoint: int) -> List[Entry]:
        """Restores from state bytes; the entries to send in one ``restored``."""
        return [_entry(e) for e in _unwrap(self._method("restore", bytes(state), checkpoint))]


class Table(_Handle):
    """Reads the table's snapshot log and tags back (WIT interface ``table``)."""

    def __init__(self, storage: Storage, clock: Optional[Clock] = None, *, runtime: Optional[Runtime] = None) -> None:
        super().__init__(runtime, storage, clock)

    def _trapped(self, message: str) -> None:
        # Stateless: the next call instantiates a fresh instance.
        self._instance = None

    def _function(self, name: str, *args: Any) -> Any:
        return _unwrap(self._call(lambda i: i.call("table", name, *args)))

    def latest_snapshot(self) -> Optional[Snapshot]:
        """The newest snapshot, or None."""
        s = self._function("latest-snapshot")
        return None if s is None else _snapshot(s)

    def snapshot_by_id(self, id: int) -> Optional[Snapshot]:
        """Snapshot ``id``, or None."""
        s = self._function("snapshot-by-id", id)
        return None if s is None else _snapshot(s)

    def list_snapshots(self) -> List[Snapshot]:
        """Every snapshot, oldest first."""
        return [_snapshot(s) for s in self._function("list-snapshots")]

    def list_tags(self) -> List[Tag]:
        """Every tag."""
        return [_tag(t) for t in self._function("list-tags")]
