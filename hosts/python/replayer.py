"""Replays a validated trace (tracefile.py) through the component under
wasmtime-py, with the semantics of the Rust replayer (testkit/src/replay.rs):

- writer steps (TRACE-FORMAT "Writer steps") drive the component's
  `writer` resource, one Store per writer (as the Rust host); writers, their
  outboxes and the kept writer state bytes survive coordinator failovers,
  like the clock;

- one fresh, empty in-memory table and one trace clock for the whole trace;
  they survive failovers;
- every coordinator runs in its own Store (a trap discards it: state
  `failed`, later calls `illegal-state`, `close` succeeds);
- every step reports the named instance's committed-up-to after the step
  (SEMANTICS 5.5), asked once the step is done; an instance whose Store
  trapped reports the last value the host received from it (outcomes and
  these queries), one whose creation trapped none;
- a step's `committed` / `tags_created` / `tags_deleted` are the table's
  `snapshot/` and `tag/` keys gained or lost during the step; new snapshots'
  identifiers are read through the component's `table.snapshot-by-id`, with
  storage faults suspended;
- the final `snapshots` / `tags` come from `table.list-snapshots` and
  `table.list-tags`, faults suspended.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from host import COORDINATOR, TABLE, WRITER, CallError, Instance, ManualClock, MemStorage, Runtime, to_record, unwrap_result
from tracefile import WRITER_OPS, Config, Entry, Malformed, Trace, rust_debug_str

SNAPSHOT_PREFIX = "snapshot/"
TAG_PREFIX = "tag/"


class HostFailure(Exception):
    """The host failed (not the trace, not the guest): exit code 1."""


def _trap_message(what: str, e: BaseException) -> str:
    return f"guest trapped in {what}: {e}"


def _failed_outcome(committed_up_to: Optional[int]) -> Any:
    return to_record(
        state="failed",
        committed=[],
        tags_created=[],
        tags_deleted=[],
        restart_required=False,
        committed_up_to=committed_up_to,
    )


def _config_record(c: Config):
    return to_record(
        parallelism=c.parallelism,
        commit_user=c.commit_user,
        checkpointing=c.checkpointing,
        final_commit=c.final_commit,
        force_create_snapshot=c.force_create_snapshot,
        savepoint_auto_tag=c.savepoint_auto_tag,
        tag_time_retained_ms=c.tag_time_retained_ms,
        recovery=c.recovery,
    )


def _entry_record(e: Entry):
    return to_record(checkpoint=e.checkpoint, committables=list(e.committables), watermark=e.watermark, savepoint=e.savepoint)


class ComponentCoordinator:
    """One coordinator in its own Store."""

    def __init__(self, runtime: Runtime, linker, config: Config, restore):
        self.trap: Optional[str] = None
        self.handle = None
        # The committed-up-to of the last outcome or query (SEMANTICS 5.5):
        # what the host knows once a trap discarded the Store.
        self.known_up_to: Optional[int] = None
        try:
            self.instance: Optional[Instance] = runtime.instantiate(linker)
        except Exception as e:  # instantiation trapped
            raise CallError("trap", _trap_message("instantiation", e))
        self.handle = self._call(
            "the coordinator constructor", "[constructor]coordinator", _config_record(config), restore, result=False
        )

    @property
    def live(self) -> bool:
        return self.trap is None

    def _call(self, what: str, func: str, *args: Any, result: bool = True) -> Any:
        if not self.live:
            raise CallError("illegal-state", f"{what}: the instance was discarded after a guest trap ({self.trap})")
        try:
            value = self.instance.call(COORDINATOR, func, *args)
        except Exception as e:  # a trap (or a failure of the glue): discard the Store
            self.trap = _trap_message(what, e)
            self.instance = None
            self.handle = None
            raise CallError("trap", self.trap)
        return unwrap_result(value) if result else value

    def _method(self, what: str, name: str, *args: Any) -> Any:
        return self._call(what, f"[method]coordinator.{name}", self.handle, *args)

    def _outcome(self, what: str, name: str, *args: Any) -> Any:
        """A call returning an outcome: its committed-up-to is remembered."""
        outcome = self._method(what, name, *args)
        self.known_up_to = getattr(outcome, "committed-up-to")
        return outcome

    def state(self) -> str:
        if not self.live:
            return "failed"
        try:
            return self._call("state", "[method]coordinator.state", self.handle, result=False)
        except CallError:
            return "failed"

    def committed_up_to(self) -> Optional[int]:
        """Committed-up-to (SEMANTICS 5.5), answered in every state. Once a
        trap discarded the Store (also when this query traps), the value of
        the last outcome or query the host received."""
        if not self.live:
            return self.known_up_to
        try:
            self.known_up_to = self._call(
                "committed-up-to", "[method]coordinator.committed-up-to", self.handle, result=False
            )
        except CallError:
            pass
        return self.known_up_to

    def start(self):
        return self._outcome("start", "start")

    def event(self, subtask: int, attempt: int, entry: Entry):
        return self._outcome("event", "event", subtask, attempt, _entry_record(entry))

    def restored(self, subtask: int, attempt: int, checkpoint: int, entries: List[Entry]):
        return self._outcome("restored", "restored", subtask, attempt, checkpoint, [_entry_record(e) for e in entries])

    def subtask_reset(self, subtask: int, checkpoint: Optional[int]):
        return self._outcome("subtask-reset", "subtask-reset", subtask, checkpoint)

    def checkpoint(self, checkpoint: int) -> bytes:
        return self._method("checkpoint", "checkpoint", checkpoint)

    def checkpoint_complete(self, checkpoint: int):
        return self._outcome("checkpoint-complete", "checkpoint-complete", checkpoint)

    def checkpoint_aborted(self, checkpoint: int):
        return self._outcome("checkpoint-aborted", "checkpoint-aborted", checkpoint)

    def close(self):
        if not self.live:
            return _failed_outcome(self.known_up_to)
        return self._outcome("close", "close")


class FailedInstance:
    """An instance whose creation trapped: `failed` for good; it never ran
    the commit rule (committed-up-to none)."""

    def _refuse(self, *_args: Any):
        raise CallError("illegal-state", "the instance failed: its component trapped while it was created")

    start = event = restored = subtask_reset = checkpoint = checkpoint_complete = checkpoint_aborted = _refuse

    def state(self) -> str:
        return "failed"

    def committed_up_to(self) -> Optional[int]:
        return None

    def close(self):
        return _failed_outcome(None)


def _entry(r: Any) -> Entry:
    """An `entry` record returned by the component, as an Entry."""
    return Entry(
        checkpoint=r.checkpoint, committables=list(r.committables), watermark=r.watermark, savepoint=bool(r.savepoint)
    )


class ComponentWriter:
    """The writer-side helper (SEMANTICS 11): the component's `writer`
    resource in a Store of its own (as the Rust host's one Store per writer),
    linked to a detached storage and clock, which it never calls. A trap
    discards the Store: later calls are `illegal-state`."""

    def __init__(self, runtime: Runtime, linker, subtask: int):
        self.trap: Optional[str] = None
        self.handle = None
        try:
            self.instance: Optional[Instance] = runtime.instantiate(linker)
        except Exception as e:  # instantiation trapped
            raise CallError("trap", _trap_message("instantiation", e))
        self.handle = self._call("the writer constructor", "[constructor]writer", subtask, result=False)

    def _call(self, what: str, func: str, *args: Any, result: bool = True) -> Any:
        if self.trap is not None:
            raise CallError("illegal-state", f"{what}: the instance was discarded after a guest trap ({self.trap})")
        try:
            value = self.instance.call(WRITER, func, *args)
        except Exception as e:  # a trap (or a failure of the glue): discard the Store
            self.trap = _trap_message(what, e)
            self.instance = None
            self.handle = None
            raise CallError("trap", self.trap)
        return unwrap_result(value) if result else value

    def _method(self, what: str, name: str, *args: Any, result: bool = True) -> Any:
        return self._call(what, f"[method]writer.{name}", self.handle, *args, result=result)

    def report(self, checkpoint: int, committables: List[bytes], watermark: Optional[int], savepoint: bool) -> Entry:
        return _entry(self._method("writer report", "report", checkpoint, list(committables), watermark, savepoint))

    def end_input(self, committables: List[bytes], watermark: Optional[int]) -> Entry:
        return _entry(self._method("writer end-input", "end-input", list(committables), watermark))

    def committed(self, u: int) -> None:
        """The coordinator's committed-up-to, forwarded (SEMANTICS 11)."""
        self._method("writer committed", "committed", u)

    def checkpoint_aborted(self, checkpoint: int) -> None:
        self._method("writer checkpoint-aborted", "checkpoint-aborted", checkpoint)

    def state(self) -> bytes:
        return bytes(self._method("writer state", "state", result=False))

    def restore(self, state: bytes, checkpoint: int) -> List[Entry]:
        return [_entry(e) for e in self._method("writer restore", "restore", bytes(state), checkpoint)]


class FailedWriter:
    """A writer whose creation trapped: every call is `illegal-state`."""

    def _refuse(self, *_args: Any):
        raise CallError("illegal-state", "the writer failed: its component trapped while it was created")

    report = end_input = committed = checkpoint_aborted = state = restore = _refuse


class _WriterSlot:
    """One writer of the replayer: the helper, its attempt, and the events it
    produced and has not delivered yet, oldest first (("event", Entry) or
    ("restored", checkpoint, [Entry]))."""

    __slots__ = ("api", "attempt", "outbox")

    def __init__(self, api: Any):
        self.api = api
        self.attempt = 0
        self.outbox: List[tuple] = []


class ComponentTable:
    """The `table` interface in a Store of its own over the same storage,
    with a detached clock (reading the table never consumes trace clock
    readings). Re-instantiated after a trap."""

    def __init__(self, runtime: Runtime, storage: MemStorage):
        self.runtime = runtime
        self.linker = runtime.linker(storage, ManualClock(0, 0))
        self.instance: Optional[Instance] = None

    def _call(self, what: str, func: str, *args: Any) -> Any:
        if self.instance is None:
            self.instance = self.runtime.instantiate(self.linker)
        try:
            value = self.instance.call(TABLE, func, *args)
        except Exception as e:
            self.instance = None
            raise CallError("trap", _trap_message(what, e))
        return unwrap_result(value)

    def snapshot_by_id(self, id: int):
        return self._call("snapshot-by-id", "snapshot-by-id", id)

    def list_snapshots(self):
        return self._call("list-snapshots", "list-snapshots")

    def list_tags(self):
        return self._call("list-tags", "list-tags")


def replay(trace: Trace, runtime: Runtime) -> Dict[str, Any]:
    """Replays `trace`; returns {steps, snapshots, tags, states} where
    `states` lists {step, instance, checkpoint, hex} per successful checkpoint
    step. Raises Malformed (a failover without kept bytes) or HostFailure."""
    storage = MemStorage()
    clock = ManualClock(trace.clock_start_ms, trace.clock_step_ms)
    linker = runtime.linker(storage, clock)
    table = ComponentTable(runtime, storage)
    instances: Dict[str, Any] = {}
    kept: Dict[tuple, bytes] = {}
    states: List[dict] = []

    def table_read(what: str, fn):
        storage.suspended = True
        try:
            return fn()
        except CallError as e:
            raise HostFailure(f"replay failed: cannot {what} of the table: {e.kind}: {e.message}")
        finally:
            storage.suspended = False

    def table_keys():
        return set(storage.keys(SNAPSHOT_PREFIX)), set(storage.keys(TAG_PREFIX))

    def create_and_start(name: str, config: Config, restore):
        try:
            instance = ComponentCoordinator(runtime, linker, config, restore)
        except CallError:
            instances[name] = FailedInstance()
            raise
        instances[name] = instance
        return instance.start()

    def apply(index: int, step) -> tuple:
        name, a = step.instance, step.args
        op = step.op
        if op == "start":
            instances.pop(name, None)
            return create_and_start(name, a["config"], None), None
        if op == "failover":
            restore = None
            if a["checkpoint"] is not None:
                data = a["state"]
                if data is None:
                    data = kept.get((name, a["checkpoint"]))
                    if data is None:
                        raise Malformed(
                            f"no state bytes were kept for checkpoint {a['checkpoint']} of instance {_quote(name)} "
                            '(no successful "checkpoint" step for it) and there is no "state_hex"',
                            step=index,
                            op=op,
                            field="checkpoint",
                        )
                restore = to_record(checkpoint=a["checkpoint"], state=bytes(data), finished_subtasks=list(a["finished_subtasks"]))
            instances.pop(name, None)
            return create_and_start(name, a["config"], restore), None
        inst = instances[name]
        if op == "event":
            return inst.event(a["subtask"], a["attempt"], a["entry"]), None
        if op == "checkpoint":
            data = inst.checkpoint(a["checkpoint"])
            kept[(name, a["checkpoint"])] = data
            states.append({"step": index, "instance": name, "checkpoint": a["checkpoint"], "hex": data.hex()})
            return None, len(data)
        if op == "complete":
            return inst.checkpoint_complete(a["checkpoint"]), None
        if op == "abort":
            return inst.checkpoint_aborted(a["checkpoint"]), None
        if op == "reset_subtask":
            return inst.subtask_reset(a["subtask"], a["checkpoint"]), None
        if op == "restored":
            return inst.restored(a["subtask"], a["attempt"], a["checkpoint"], a["entries"]), None
        if op == "close":
            return inst.close(), None
        if op == "clock":
            clock.set_next(a["ms"])
            return None, None
        if op == "storage_fault":
            storage.push_fault(a["call"], a["skip"], a["count"], a["mode"])
            return None, None
        raise HostFailure(f"step {index}: unknown op {op}")

    # ---- Writer steps (TRACE-FORMAT "Writer steps"), as replay.rs ----
    # Writers are keyed by (instance name, subtask); they, their outboxes and
    # the writer state bytes kept by `writer_snapshot` belong to the replayer
    # and survive coordinator `failover` and `start`.
    writers: Dict[tuple, _WriterSlot] = {}
    writer_kept: Dict[tuple, bytes] = {}
    writer_linker = runtime.linker(MemStorage(), ManualClock(0, 0))

    def writer(name: str, subtask: int) -> _WriterSlot:
        """The writer (name, subtask), created (attempt 0, empty outbox) if it
        does not exist. A creation that fails leaves a FailedWriter and raises."""
        slot = writers.get((name, subtask))
        if slot is not None:
            return slot
        failure = None
        try:
            api: Any = ComponentWriter(runtime, writer_linker, subtask)
        except CallError as e:
            failure = e
            api = FailedWriter()
        slot = writers[(name, subtask)] = _WriterSlot(api)
        if failure is not None:
            raise failure
        return slot

    def deliver(name: str, subtask: int, count: Optional[int]) -> tuple:
        """Delivers the oldest `count` (None: all) events of a writer's
        outbox, one coordinator call each. Returns (restart_required, error):
        restart_required if any call said so; the first error stops the
        delivery (the event whose call failed was delivered; the later ones
        stay in the outbox)."""
        restart, error = False, None
        sent = 0
        while count is None or sent < count:
            slot = writers.get((name, subtask))
            if slot is None or not slot.outbox:
                break
            item = slot.outbox.pop(0)
            instance = instances.get(name)
            if instance is None:
                raise HostFailure(f"replay failed: no instance {_quote(name)} (the trace was not validated)")
            sent += 1
            try:
                if item[0] == "event":
                    outcome = instance.event(subtask, slot.attempt, item[1])
                else:
                    outcome = instance.restored(subtask, slot.attempt, item[1], item[2])
            except CallError as e:
                error = e
                break
            restart = restart or bool(getattr(outcome, "restart-required"))
        return restart, error

    def produced(name: str, subtask: int, produce, send: bool) -> tuple:
        """A `write` or `end_input` call's result: the entry joins the outbox,
        which is delivered with `send`; a writer error is the step's error."""
        try:
            entry = produce()
        except CallError as e:
            return False, e
        slot = writers.get((name, subtask))
        if slot is not None:
            slot.outbox.append(("event", entry))
        return deliver(name, subtask, None) if send else (False, None)

    def each_writer(name: str, subtask: Optional[int], fn) -> tuple:
        """Runs fn on the writer `subtask`, or on every writer of the instance
        in subtask order; the first error stops and is the step's."""
        subtasks = [subtask] if subtask is not None else sorted(s for (n, s) in writers if n == name)
        for s in subtasks:
            slot = writers.get((name, s))
            if slot is None:  # parse_trace() guarantees the writer exists
                continue
            try:
                fn(s, slot.api)
            except CallError as e:
                return False, e
        return False, None

    def apply_writer(index: int, step) -> tuple:
        """Runs one writer step; returns (restart_required, CallError or None)."""
        name, a, op = step.instance, step.args, step.op
        if op in ("write", "end_input"):
            try:
                slot = writer(name, a["subtask"])
            except CallError as e:
                return False, e
            if op == "write":
                en = a["entry"]
                produce = lambda: slot.api.report(en.checkpoint, en.committables, en.watermark, en.savepoint)  # noqa: E731
            else:
                produce = lambda: slot.api.end_input(a["committables"], a["watermark"])  # noqa: E731
            return produced(name, a["subtask"], produce, a["send"])
        if op == "send":
            try:
                writer(name, a["subtask"])
            except CallError as e:
                return False, e
            return deliver(name, a["subtask"], a["count"])
        if op == "writer_committed":
            # By default the named coordinator's committed-up-to; while it is
            # none the step does nothing.
            u = a["checkpoint"]
            if u is None:
                instance = instances.get(name)
                if instance is None:
                    raise HostFailure(f"replay failed: no instance {_quote(name)} (the trace was not validated)")
                u = instance.committed_up_to()
            if u is None:
                return False, None
            return each_writer(name, a["subtask"], lambda _s, w: w.committed(u))
        if op == "writer_abort":
            return each_writer(name, a["subtask"], lambda _s, w: w.checkpoint_aborted(a["checkpoint"]))
        if op == "writer_snapshot":
            taken = []
            result = each_writer(name, a["subtask"], lambda s, w: taken.append((s, w.state())))
            for s, data in taken:
                writer_kept[(name, s, a["checkpoint"])] = data
            return result
        if op == "writer_restore":
            subtask, c = a["subtask"], a["checkpoint"]
            # parse_trace() checked that bytes were kept; only a writer whose
            # state() failed can have kept none.
            data = None
            if c is not None:
                data = writer_kept.get((name, subtask, c))
                if data is None:
                    raise Malformed(
                        f"no writer state bytes were kept for checkpoint {c} of writer {subtask} "
                        f"of instance {rust_debug_str(name)}",
                        step=index,
                        op=op,
                        field="checkpoint",
                    )
            # The old writer and its outbox are discarded; the fresh one (even
            # a failed one) has the step's attempt.
            writers.pop((name, subtask), None)
            created = None
            try:
                writer(name, subtask)
            except CallError as e:
                created = e
            slot = writers.get((name, subtask))
            if slot is not None:
                slot.attempt = a["attempt"]
            if created is not None:
                return False, created
            if c is None:
                return False, None  # from scratch: nothing to send
            try:
                entries = slot.api.restore(data, c)
            except CallError as e:
                return False, e
            slot.outbox.append(("restored", c, entries))
            return deliver(name, subtask, None) if a["send"] else (False, None)
        raise HostFailure(f"replay failed: step {index}: {_quote(op)} is not a writer step")

    steps = []
    for index, step in enumerate(trace.steps):
        before_snaps, before_tags = table_keys()
        state_bytes, error, restart = None, None, False
        if step.op in WRITER_OPS:
            restart, failure = apply_writer(index, step)
            if failure is not None:
                error = (failure.kind, failure.message)
        else:
            try:
                outcome, state_bytes = apply(index, step)
                restart = bool(getattr(outcome, "restart-required")) if outcome is not None else False
            except CallError as e:
                error = (e.kind, e.message)
        after_snaps, after_tags = table_keys()
        instance = instances.get(step.instance)
        if instance is None:
            raise HostFailure(f"replay failed: step {index}: no instance {_quote(step.instance)}")
        state = instance.state()
        committed_up_to = instance.committed_up_to()

        ids = []
        for key in after_snaps - before_snaps:
            digits = key[len(SNAPSHOT_PREFIX):]
            if not re.fullmatch(r"[0-9]+", digits) or int(digits) >= 2**64:
                raise HostFailure(f"replay failed: the table holds an unexpected key {_quote(key)}")
            ids.append(int(digits))
        committed = []
        for id in sorted(ids):
            snap = table_read(f"read snapshot {id}", lambda: table.snapshot_by_id(id))
            if snap is None:
                raise HostFailure(f"replay failed: snapshot {id} was listed but cannot be read")
            committed.append(snap.identifier)
        by_bytes = lambda k: k.encode("utf-8")  # noqa: E731
        steps.append(
            {
                "state": state,
                "committed": committed,
                "tags_created": [k[len(TAG_PREFIX):] for k in sorted(after_tags - before_tags, key=by_bytes)],
                "tags_deleted": [k[len(TAG_PREFIX):] for k in sorted(before_tags - after_tags, key=by_bytes)],
                "restart_required": restart,
                "committed_up_to": committed_up_to,
                "state_bytes": state_bytes,
                "error": error,
            }
        )

    snapshots = table_read("list the snapshots", table.list_snapshots)
    tags = table_read("list the tags", table.list_tags)
    return {"steps": steps, "snapshots": snapshots, "tags": tags, "states": states}


def _quote(s: str) -> str:
    import json

    return json.dumps(s, ensure_ascii=False)
