"""Parsing and validation of replay traces (TRACE-FORMAT v2, writer steps
included).

Rule for rule the same as the Rust replayer (testkit/src/trace.rs), so that every
host rejects the same traces (exit code 2). JSON is read so that it accepts
exactly what serde_json accepts: integers written without fraction or
exponent that fit i64/u64 are integers (``-0`` and larger ones are not),
duplicate keys, lone surrogate escapes and NaN/Infinity are errors, and
object fields keep their order.

Only the shape is checked; values that fit their WIT types but break
SEMANTICS (parallelism 0, a subtask out of range) go to the component.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List, Optional

END = 2**63 - 1
MAX_CHECKPOINT = END - 1
DEFAULT_INSTANCE = "main"
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
RECURSION_LIMIT = 128


class Malformed(Exception):
    """A trace that breaks a rule: where (step index, op, field) and why."""

    def __init__(self, message: str, step: Optional[int] = None, op: Optional[str] = None, field: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.step = step
        self.op = op
        self.field = field

    def in_step(self, index: int, op: Optional[str]) -> "Malformed":
        self.step = index
        if self.op is None:
            self.op = op
        return self

    def __str__(self) -> str:
        place = []
        if self.step is not None:
            place.append(f"step {self.step} (op {json.dumps(self.op)})" if self.op is not None else f"step {self.step}")
        if self.field is not None:
            place.append(f"field {json.dumps(self.field)}")
        prefix = ", ".join(place) + ": " if place else ""
        return f"malformed trace: {prefix}{self.message}"


def _at(path: str, message: str) -> Malformed:
    return Malformed(message, field=path) if path else Malformed(message)


# ---------------------------------------------------------------------------
# JSON as serde_json reads it
# ---------------------------------------------------------------------------


class JFloat:
    """A JSON number that is not an integer for serde_json (keeps its text)."""

    def __init__(self, text: str):
        self.text = text


class JObject(list):
    """An object: its (key, value) pairs in document order."""


class _JsonReject(Exception):
    pass


def _pairs(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise _JsonReject(f"duplicate field {json.dumps(k, ensure_ascii=False)}")
        seen.add(k)
    return JObject(pairs)


def _int(text: str):
    # serde_json: `-0` is a float; integers beyond i64/u64 are floats.
    if text == "-0" or len(text) > 21:
        return JFloat(text)
    v = int(text)
    if I64_MIN <= v <= U64_MAX:
        return v
    return JFloat(text)


def _constant(name: str):
    raise _JsonReject(f"{name} is not valid JSON")


def _check_strings(value: Any, depth: int = 0) -> None:
    """Rejects lone surrogates (which serde_json refuses) and deep nesting."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _JsonReject("lone surrogate in hex escape")
    elif isinstance(value, JObject):
        if depth >= RECURSION_LIMIT:
            raise _JsonReject("recursion limit exceeded")
        for k, v in value:
            _check_strings(k, depth + 1)
            _check_strings(v, depth + 1)
    elif isinstance(value, list):
        if depth >= RECURSION_LIMIT:
            raise _JsonReject("recursion limit exceeded")
        for v in value:
            _check_strings(v, depth + 1)


def parse_json(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")  # strict; a BOM stays and is rejected below
    except UnicodeDecodeError as e:
        raise Malformed(f"the trace is not valid UTF-8 ({e})")
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_float=JFloat, parse_int=_int, parse_constant=_constant)
        _check_strings(doc)
    except json.JSONDecodeError as e:
        raise Malformed(f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}")
    except _JsonReject as e:
        raise Malformed(f"invalid JSON: {e}")
    except RecursionError:
        raise Malformed("invalid JSON: recursion limit exceeded")
    return doc


def _describe(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, JFloat):
        return f"the non-integer number {v.text}"
    if isinstance(v, str):
        shown = v[:40]
        return f"the string {json.dumps(shown, ensure_ascii=False)}{'...' if len(v) > 40 else ''}"
    if isinstance(v, JObject):
        return "an object"
    return "a list"


# ---------------------------------------------------------------------------
# Field access with exact errors
# ---------------------------------------------------------------------------


class Field:
    def __init__(self, value: Any, path: str):
        self.value = value
        self.path = path

    def err(self, expected: str) -> Malformed:
        return _at(self.path, f"expected {expected}, got {_describe(self.value)}")

    def _is_int(self) -> bool:
        return isinstance(self.value, int) and not isinstance(self.value, bool)

    def int_in(self, lo: int, hi: int, expected: str) -> int:
        if self._is_int() and lo <= self.value <= hi:
            return self.value
        raise self.err(expected)

    def u32(self) -> int:
        return self.int_in(0, U32_MAX, "an integer in 0..=4294967295")

    def u64(self) -> int:
        return self.int_in(0, U64_MAX, "an integer in 0..=18446744073709551615")

    def i64(self) -> int:
        return self.int_in(I64_MIN, I64_MAX, "an integer in -9223372036854775808..=9223372036854775807")

    def bool(self) -> bool:
        if isinstance(self.value, bool):
            return self.value
        raise self.err("true or false")

    def str(self) -> str:
        if isinstance(self.value, str):
            return self.value
        raise self.err("a string")

    def is_null(self) -> bool:
        return self.value is None

    def array(self) -> List["Field"]:
        if isinstance(self.value, list) and not isinstance(self.value, JObject):
            return [Field(v, f"{self.path}[{i}]") for i, v in enumerate(self.value)]
        raise self.err("a list")

    def object(self, what: str) -> "Obj":
        return Obj.of(self.value, self.path, what)

    def checkpoint(self, end_allowed: bool) -> int:
        if end_allowed:
            expected = 'a checkpoint number in 0..=9223372036854775806 or "end"'
        else:
            expected = 'a checkpoint number in 0..=9223372036854775806 ("end" is not allowed here)'
        if self._is_int() and 0 <= self.value <= MAX_CHECKPOINT:
            return self.value
        if end_allowed and self.value == "end":
            return END
        raise self.err(expected)

    def checkpoint_or_null(self) -> Optional[int]:
        if self.is_null():
            return None
        if self._is_int() and 0 <= self.value <= MAX_CHECKPOINT:
            return self.value
        raise self.err("a checkpoint number in 0..=9223372036854775806 or null")


class Obj:
    def __init__(self, fields: JObject, path: str):
        self.fields = fields
        self.path = path

    @staticmethod
    def of(value: Any, path: str, what: str) -> "Obj":
        if isinstance(value, JObject):
            return Obj(value, path)
        raise _at(path, f"expected {what} (an object), got {_describe(value)}")

    def field_path(self, name: str) -> str:
        return name if not self.path else f"{self.path}.{name}"

    def only(self, allowed: List[str], context: str) -> None:
        for name, _ in self.fields:
            if name not in allowed:
                raise _at(
                    self.field_path(name),
                    f"unknown field {json.dumps(name, ensure_ascii=False)} {context} (allowed: {', '.join(allowed)})",
                )

    def get(self, name: str):
        for k, v in self.fields:
            if k == name:
                return (v,)
        return None

    def required(self, name: str) -> Field:
        got = self.get(name)
        if got is None:
            raise _at(self.field_path(name), f"missing required field {json.dumps(name)}")
        return Field(got[0], self.field_path(name))

    def optional(self, name: str) -> Optional[Field]:
        got = self.get(name)
        return None if got is None else Field(got[0], self.field_path(name))


def _opt_u32(obj: Obj, name: str, default: int) -> int:
    f = obj.optional(name)
    return default if f is None else f.u32()


def _opt_u64(obj: Obj, name: str, default: int) -> int:
    f = obj.optional(name)
    return default if f is None else f.u64()


def _opt_bool(obj: Obj, name: str, default: bool) -> bool:
    f = obj.optional(name)
    return default if f is None else f.bool()


def _opt_watermark(obj: Obj) -> Optional[int]:
    f = obj.optional("watermark")
    if f is None or f.is_null():
        return None
    try:
        return f.i64()
    except Malformed:
        raise f.err("a watermark (an integer in -9223372036854775808..=9223372036854775807) or null")


def _opt_committables(obj: Obj) -> List[bytes]:
    f = obj.optional("committables")
    if f is None:
        return []
    return [c.str().encode("utf-8") for c in f.array()]


def _opt_u32_list(obj: Obj, name: str) -> List[int]:
    f = obj.optional(name)
    if f is None:
        return []
    return [x.u32() for x in f.array()]


# ---------------------------------------------------------------------------
# The document
# ---------------------------------------------------------------------------

CONFIG_FIELDS = [
    "parallelism",
    "commit_user",
    "checkpointing",
    "final_commit",
    "force_create_snapshot",
    "savepoint_auto_tag",
    "tag_time_retained_ms",
    "recovery",
]


@dataclass
class Config:
    """The WIT `config` record."""

    parallelism: int
    commit_user: str
    checkpointing: bool = True
    final_commit: str = "on-checkpoint"
    force_create_snapshot: bool = False
    savepoint_auto_tag: bool = False
    tag_time_retained_ms: Optional[int] = None
    recovery: str = "restart"

    def copy(self) -> "Config":
        return Config(**self.__dict__)


@dataclass
class Entry:
    checkpoint: int
    committables: List[bytes]
    watermark: Optional[int]
    savepoint: bool


@dataclass
class Step:
    op: str
    instance: str
    args: dict = field(default_factory=dict)


@dataclass
class Trace:
    config: Config
    clock_start_ms: int
    clock_step_ms: int
    steps: List[Step]


def _apply_config(base: Config, obj: Obj) -> Config:
    config = base.copy()
    f = obj.optional("parallelism")
    if f is not None:
        config.parallelism = f.u32()
    f = obj.optional("commit_user")
    if f is not None:
        config.commit_user = f.str()
    config.checkpointing = _opt_bool(obj, "checkpointing", config.checkpointing)
    f = obj.optional("final_commit")
    if f is not None:
        if f.value not in ("on-checkpoint", "on-end-input"):
            raise f.err('"on-checkpoint" or "on-end-input"')
        config.final_commit = f.value
    config.force_create_snapshot = _opt_bool(obj, "force_create_snapshot", config.force_create_snapshot)
    config.savepoint_auto_tag = _opt_bool(obj, "savepoint_auto_tag", config.savepoint_auto_tag)
    f = obj.optional("tag_time_retained_ms")
    if f is not None:
        if f.is_null():
            config.tag_time_retained_ms = None
        else:
            try:
                config.tag_time_retained_ms = f.u64()
            except Malformed:
                raise f.err("an integer in 0..=18446744073709551615 or null")
    f = obj.optional("recovery")
    if f is not None:
        if f.value not in ("restart", "continue"):
            raise f.err('"restart" or "continue"')
        config.recovery = f.value
    return config


def _config_override(step: Obj, base: Config) -> Config:
    f = step.optional("config")
    if f is None:
        return base.copy()
    obj = f.object("a configuration override")
    obj.only(CONFIG_FIELDS, "in config")
    return _apply_config(base, obj)


OPS = [
    "start",
    "event",
    "checkpoint",
    "complete",
    "abort",
    "reset_subtask",
    "restored",
    "failover",
    "close",
    "clock",
    "storage_fault",
    # Writer steps (TRACE-FORMAT "Writer steps").
    "write",
    "end_input",
    "send",
    "writer_committed",
    "writer_abort",
    "writer_snapshot",
    "writer_restore",
]

WRITER_OPS = frozenset(OPS[11:])

OP_FIELDS = {
    "start": ["config"],
    "event": ["subtask", "attempt", "checkpoint", "committables", "watermark", "savepoint"],
    "checkpoint": ["checkpoint"],
    "complete": ["checkpoint"],
    "abort": ["checkpoint"],
    "reset_subtask": ["subtask", "checkpoint"],
    "restored": ["subtask", "attempt", "checkpoint", "entries"],
    "failover": ["checkpoint", "finished_subtasks", "config", "state_hex"],
    "close": [],
    "clock": ["ms"],
    "storage_fault": ["call", "mode", "skip", "count"],
    "write": ["subtask", "checkpoint", "committables", "watermark", "savepoint", "send"],
    "end_input": ["subtask", "committables", "watermark", "send"],
    "send": ["subtask", "count"],
    "writer_committed": ["subtask", "checkpoint"],
    "writer_abort": ["subtask", "checkpoint"],
    "writer_snapshot": ["subtask", "checkpoint"],
    "writer_restore": ["subtask", "checkpoint", "attempt", "send"],
}


def _parse_entry(obj: Obj) -> Entry:
    return Entry(
        checkpoint=obj.required("checkpoint").checkpoint(True),
        committables=_opt_committables(obj),
        watermark=_opt_watermark(obj),
        savepoint=_opt_bool(obj, "savepoint", False),
    )


def _decode_hex(s: str) -> bytes:
    raw = s.encode("utf-8")
    if len(raw) % 2 != 0:
        raise ValueError(f"not valid hex: odd number of digits ({len(raw)})")
    for i, c in enumerate(raw):
        if not (48 <= c <= 57 or 97 <= c <= 102 or 65 <= c <= 70):
            raise ValueError(f"not valid hex: unexpected character at position {i}")
    return bytes.fromhex(s)


def rust_debug_str(s: str) -> str:
    """Rust's `{:?}` of a str (the Rust host's messages use it)."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif c == 0:
            out.append("\\0")
        elif c < 0x20 or 0x7F <= c <= 0x9F:
            out.append(f"\\u{{{c:x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


class WriterBook:
    """What the writer steps so far have created (trace.rs
    `WriterBook`): which writers exist (with their attempt) and which writer
    state bytes `writer_snapshot` kept. All of it follows from the steps
    alone: writers are created by steps and never removed, whatever the calls
    return."""

    def __init__(self) -> None:
        # (instance name, subtask) -> attempt
        self.attempts: dict = {}
        # (instance name, subtask, checkpoint) of every kept writer state
        self.kept: set = set()

    def next_attempt(self, instance: str, subtask: int) -> int:
        """The default attempt of a `writer_restore`: the previous + 1, or 0."""
        previous = self.attempts.get((instance, subtask))
        if previous is None:
            return 0
        if previous + 1 > U32_MAX:
            raise _at(
                "attempt",
                f'the default attempt (the previous attempt {previous} + 1) does not fit 0..=4294967295: give "attempt"',
            )
        return previous + 1

    def subtasks_of(self, instance: str) -> List[int]:
        """The existing writers of `instance`, in subtask order."""
        return sorted(s for (name, s) in self.attempts if name == instance)

    def check(self, step: "Step") -> None:
        """The writer rules a step's shape cannot show."""
        name, a = step.instance, step.args
        if step.op in ("writer_committed", "writer_abort", "writer_snapshot"):
            s = a["subtask"]
            if s is not None and (name, s) not in self.attempts:
                raise _at(
                    "subtask",
                    f"no writer {s} of instance {rust_debug_str(name)} exists yet (a writer is created by its first "
                    '"write", "end_input", "send" or "writer_restore" step)',
                )
            if s is None and not self.subtasks_of(name):
                raise _at(
                    "subtask",
                    f"instance {rust_debug_str(name)} has no writer yet "
                    '(without "subtask" the step applies to every writer of the instance)',
                )
        elif step.op == "writer_restore":
            c = a["checkpoint"]
            if c is not None and (name, a["subtask"], c) not in self.kept:
                raise _at(
                    "checkpoint",
                    f"no writer state bytes were kept for checkpoint {c} of writer {a['subtask']} of instance "
                    f'{rust_debug_str(name)} (no "writer_snapshot" step for it)',
                )

    def apply(self, step: "Step") -> None:
        """Records what a (checked) step creates."""
        name, a = step.instance, step.args
        if step.op in ("write", "end_input", "send"):
            self.attempts.setdefault((name, a["subtask"]), 0)
        elif step.op == "writer_restore":
            self.attempts[(name, a["subtask"])] = a["attempt"]
        elif step.op == "writer_snapshot":
            subtasks = [a["subtask"]] if a["subtask"] is not None else self.subtasks_of(name)
            for s in subtasks:
                self.kept.add((name, s, a["checkpoint"]))


def _parse_step(item: Field, config: Config, writers: WriterBook) -> Step:
    if not isinstance(item.value, JObject):
        raise Malformed(f"expected a step (an object), got {_describe(item.value)}")
    obj = Obj(item.value, "")
    op_name = obj.required("op").str()
    f = obj.optional("instance")
    instance = DEFAULT_INSTANCE if f is None else f.str()
    if op_name not in OP_FIELDS:
        raise _at("op", f"unknown op {json.dumps(op_name, ensure_ascii=False)} (expected one of: {', '.join(OPS)})")
    obj.only(["op", "instance"] + OP_FIELDS[op_name], f"for op {json.dumps(op_name)}")

    a: dict = {}
    if op_name == "start":
        a["config"] = _config_override(obj, config)
    elif op_name == "event":
        a["subtask"] = obj.required("subtask").u32()
        a["attempt"] = _opt_u32(obj, "attempt", 0)
        a["entry"] = _parse_entry(obj)
    elif op_name in ("checkpoint", "complete", "abort"):
        a["checkpoint"] = obj.required("checkpoint").checkpoint(True)
    elif op_name == "reset_subtask":
        a["subtask"] = obj.required("subtask").u32()
        a["checkpoint"] = obj.required("checkpoint").checkpoint_or_null()
    elif op_name == "restored":
        a["subtask"] = obj.required("subtask").u32()
        a["attempt"] = _opt_u32(obj, "attempt", 0)
        a["checkpoint"] = obj.required("checkpoint").checkpoint(False)
        entries = []
        for e in obj.required("entries").array():
            entry_obj = e.object("an entry")
            entry_obj.only(["checkpoint", "committables", "watermark", "savepoint"], "in an entry")
            entries.append(_parse_entry(entry_obj))
        a["entries"] = entries
    elif op_name == "failover":
        checkpoint = obj.required("checkpoint").checkpoint_or_null()
        # Checked even when ignored (checkpoint null).
        finished = _opt_u32_list(obj, "finished_subtasks")
        cfg = _config_override(obj, config)
        state = None
        f = obj.optional("state_hex")
        if f is not None:
            if checkpoint is None:
                raise _at("state_hex", '"state_hex" needs a checkpoint number, not null')
            text = f.str()
            try:
                state = _decode_hex(text)
            except ValueError as e:
                raise _at("state_hex", str(e))
        a.update(checkpoint=checkpoint, finished_subtasks=finished if checkpoint is not None else [], config=cfg, state=state)
    elif op_name == "close":
        pass
    elif op_name == "clock":
        a["ms"] = obj.required("ms").u64()
    elif op_name == "storage_fault":
        call_field = obj.required("call")
        if call_field.value not in ("put", "get", "list", "delete"):
            raise call_field.err('"put", "get", "list" or "delete"')
        mode_field = obj.required("mode")
        if mode_field.value not in ("fail", "ambiguous"):
            raise mode_field.err('"fail" or "ambiguous"')
        skip = _opt_u64(obj, "skip", 0)
        count = _opt_u64(obj, "count", 1)
        if count < 1:
            raise _at("count", "a fault's count must be at least 1")
        a.update(call=call_field.value, mode=mode_field.value, skip=skip, count=count)
    elif op_name == "write":
        a["subtask"] = obj.required("subtask").u32()
        a["entry"] = Entry(
            checkpoint=obj.required("checkpoint").checkpoint(False),
            committables=_opt_committables(obj),
            watermark=_opt_watermark(obj),
            savepoint=_opt_bool(obj, "savepoint", False),
        )
        a["send"] = _opt_bool(obj, "send", True)
    elif op_name == "end_input":
        a["subtask"] = obj.required("subtask").u32()
        a["committables"] = _opt_committables(obj)
        a["watermark"] = _opt_watermark(obj)
        a["send"] = _opt_bool(obj, "send", True)
    elif op_name == "send":
        a["subtask"] = obj.required("subtask").u32()
        count = None
        f = obj.optional("count")
        if f is not None:
            count = f.u64()
            if count < 1:
                raise _at("count", "a send's count must be at least 1 (omit it to send the whole outbox)")
        a["count"] = count
    elif op_name == "writer_committed":
        # `checkpoint` None: u is the named coordinator's committed-up-to.
        f = obj.optional("subtask")
        a["subtask"] = None if f is None else f.u32()
        f = obj.optional("checkpoint")
        a["checkpoint"] = None if f is None else f.checkpoint(True)
    elif op_name in ("writer_abort", "writer_snapshot"):
        f = obj.optional("subtask")
        a["subtask"] = None if f is None else f.u32()
        a["checkpoint"] = obj.required("checkpoint").checkpoint(False)
    elif op_name == "writer_restore":
        a["subtask"] = obj.required("subtask").u32()
        a["checkpoint"] = obj.required("checkpoint").checkpoint_or_null()
        f = obj.optional("attempt")
        a["attempt"] = f.u32() if f is not None else writers.next_attempt(instance, a["subtask"])
        a["send"] = _opt_bool(obj, "send", True)
    return Step(op=op_name, instance=instance, args=a)


def parse_trace(data: bytes) -> Trace:
    """Parses and validates a trace document; raises Malformed."""
    doc = parse_json(data)
    top = Obj.of(doc, "", "a trace")
    top.only(["config", "clock_start_ms", "clock_step_ms", "steps"], "at the top level")

    config_obj = top.required("config").object("the configuration")
    config_obj.only(CONFIG_FIELDS, "in config")
    base = Config(config_obj.required("parallelism").u32(), config_obj.required("commit_user").str())
    config = _apply_config(base, config_obj)

    clock_start_ms = _opt_u64(top, "clock_start_ms", 0)
    clock_step_ms = _opt_u64(top, "clock_step_ms", 0)

    steps: List[Step] = []
    # Names that have had a start or failover so far.
    instances = set()
    # Writers and kept writer state so far (writer steps).
    writers = WriterBook()
    for index, item in enumerate(top.required("steps").array()):
        op_name = None
        if isinstance(item.value, JObject):
            for k, v in item.value:
                if k == "op" and isinstance(v, str):
                    op_name = v
                    break
        try:
            step = _parse_step(item, config, writers)
        except Malformed as e:
            raise e.in_step(index, op_name)
        creates = step.op in ("start", "failover")
        if index == 0 and not creates:
            raise _at("op", 'the first step must be "start" or "failover"').in_step(index, op_name)
        # Every step but start and failover needs its instance, writer steps
        # included (a writer exists only after a step that needed it).
        if not creates and step.instance not in instances:
            raise _at(
                "instance",
                f'no instance {json.dumps(step.instance, ensure_ascii=False)} exists yet: its first step must be "start" or "failover"',
            ).in_step(index, op_name)
        try:
            writers.check(step)
        except Malformed as e:
            raise e.in_step(index, op_name)
        writers.apply(step)
        instances.add(step.instance)
        steps.append(step)
    return Trace(config, clock_start_ms, clock_step_ms, steps)
