"""Replays a validated trace (tracefile.py) through the component under
wasmtime-py, with the semantics of the Rust replayer (host/src/replay.rs):

- one fresh, empty in-memory table and one trace clock for the whole trace;
  they survive failovers;
- every coordinator runs in its own Store (a trap discards it: state
  `failed`, later calls `illegal-state`, `close` succeeds);
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

from host import COORDINATOR, TABLE, CallError, Instance, ManualClock, MemStorage, Runtime, to_record, unwrap_result
from tracefile import Config, Entry, Malformed, Trace

SNAPSHOT_PREFIX = "snapshot/"
TAG_PREFIX = "tag/"


class HostFailure(Exception):
    """The host failed (not the trace, not the guest): exit code 1."""


def _trap_message(what: str, e: BaseException) -> str:
    return f"guest trapped in {what}: {e}"


def _failed_outcome() -> Any:
    return to_record(state="failed", committed=[], tags_created=[], tags_deleted=[], restart_required=False)


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

    def state(self) -> str:
        if not self.live:
            return "failed"
        try:
            return self._call("state", "[method]coordinator.state", self.handle, result=False)
        except CallError:
            return "failed"

    def start(self):
        return self._method("start", "start")

    def event(self, subtask: int, attempt: int, entry: Entry):
        return self._method("event", "event", subtask, attempt, _entry_record(entry))

    def restored(self, subtask: int, attempt: int, checkpoint: int, entries: List[Entry]):
        return self._method("restored", "restored", subtask, attempt, checkpoint, [_entry_record(e) for e in entries])

    def subtask_reset(self, subtask: int, checkpoint: Optional[int]):
        return self._method("subtask-reset", "subtask-reset", subtask, checkpoint)

    def checkpoint(self, checkpoint: int) -> bytes:
        return self._method("checkpoint", "checkpoint", checkpoint)

    def checkpoint_complete(self, checkpoint: int):
        return self._method("checkpoint-complete", "checkpoint-complete", checkpoint)

    def checkpoint_aborted(self, checkpoint: int):
        return self._method("checkpoint-aborted", "checkpoint-aborted", checkpoint)

    def close(self):
        if not self.live:
            return _failed_outcome()
        return self._method("close", "close")


class FailedInstance:
    """An instance whose creation trapped: `failed` for good."""

    def _refuse(self, *_args: Any):
        raise CallError("illegal-state", "the instance failed: its component trapped while it was created")

    start = event = restored = subtask_reset = checkpoint = checkpoint_complete = checkpoint_aborted = _refuse

    def state(self) -> str:
        return "failed"

    def close(self):
        return _failed_outcome()


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

    steps = []
    for index, step in enumerate(trace.steps):
        before_snaps, before_tags = table_keys()
        outcome, state_bytes, error = None, None, None
        try:
            outcome, state_bytes = apply(index, step)
        except CallError as e:
            error = (e.kind, e.message)
        after_snaps, after_tags = table_keys()
        instance = instances.get(step.instance)
        if instance is None:
            raise HostFailure(f"replay failed: step {index}: no instance {_quote(step.instance)}")
        state = instance.state()

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
                "restart_required": bool(getattr(outcome, "restart-required")) if outcome is not None else False,
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
