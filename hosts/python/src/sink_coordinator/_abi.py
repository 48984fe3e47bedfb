"""The canonical ABI of the coordinator's WIT world, written by hand for the
core module (docs/embedding.md sections 2 to 4 give every layout used here;
the offsets and sizes are ``_layout``'s, generated from the WIT): fast calls into core exports, guest memory access, and the lifting of
results into the values the handles expect.

**Why by hand.** wasmtime-py's component API converts every byte of a
``list<u8>`` into a 32-byte C value through Python calls; through the core
module a list is one ``cabi_realloc`` and one block copy.

**Why ``_ffi``.** wasmtime-py's public ``Func.__call__`` re-reads the
function's type and converts each parameter through ``Val`` on every call
(about 100 us per call here, most of a batched event's budget, since each
event's block needs one ``cabi_realloc``). ``RawFunc`` calls
``wasmtime_func_call_unchecked`` of wasmtime-py's C binding with a
preallocated argument array instead (2 to 4 us). The unchecked call is sound
because ``RawFunc`` only takes functions whose parameters and results are all
i32/i64 (checked when the module loads) and always passes exactly their
count in an array sized for both. Like ``_fastval``, this is why the package
pins wasmtime's major version."""

from __future__ import annotations

import ctypes
import struct
from ctypes import POINTER, byref
from typing import Any, Callable, List, Optional, Tuple

from wasmtime import Func, Memory, Store, Trap, ValType, WasmtimeError
from wasmtime import _bindings
from wasmtime import _ffi as ffi
from wasmtime._func import maybe_raise_last_exn
from wasmtime.component import Record, Variant

from . import _layout as L

LIFECYCLE = ("created", "restoring", "running", "closed", "failed")
ERROR_KINDS = ("declined", "storage", "illegal-state", "invalid-event", "invalid-config", "corrupt-state")
FINAL_COMMIT = {"on-checkpoint": 0, "on-end-input": 1}
RECOVERY = {"restart": 0, "continue": 1}
TABLE_FORMAT = {"native": 0, "paimon": 1}

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1

_U8 = struct.Struct("<B").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_S64 = struct.Struct("<q").unpack_from


def layout_codes(*fields: Tuple[int, str], size: int = 0) -> str:
    """The ``struct`` codes (little-endian, no byte-order prefix) of a value
    whose fields are ``(offset, codes)`` pairs in offset order, the offsets
    ``_layout``'s: padding between the fields and up to ``size``. One
    ``pack_into`` then writes a whole record."""
    out, at = "", 0
    for offset, codes in fields + ((size, ""),):
        if offset < at and codes:
            raise ValueError(f"a field at {offset} overlaps the one before it (which ends at {at})")
        out += f"{offset - at}x" if offset > at else ""
        out += codes
        at = max(at, offset + struct.calcsize("<" + codes))
    return out


#: A list or string descriptor (ptr, len), as struct codes.
LIST = layout_codes((L.LIST_PTR, "I"), (L.LIST_LEN, "I"))
_LIST = struct.Struct("<" + LIST)


class Malformed(Exception):
    """A result the guest wrote does not fit its WIT type or lies outside
    memory: the call fails as a trap (the guest is not trusted)."""


def record(**fields: Any) -> Record:
    """A wasmtime-py ``Record`` with the WIT (kebab-case) field names, the
    value the component path lifts, so the handles take both paths alike."""
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def check_int(what: str, v: Any, lo: int, hi: int) -> int:
    """``v`` as an int within ``lo..=hi`` (the component path refuses
    anything else too; a raw ABI value would silently wrap)."""
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError(f"{what} must be an int in {lo}..={hi}, not {v!r}")
    return v


def check_bool(what: str, v: Any) -> int:
    if not isinstance(v, bool):
        raise TypeError(f"{what} must be a bool, not {v!r}")
    return 1 if v else 0


def as_bytes(what: str, v: Any) -> bytes:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, list) and all(isinstance(b, int) and 0 <= b <= 255 for b in v):
        return bytes(v)
    raise TypeError(f"{what} must be bytes, not {type(v).__name__}")


def as_str(what: str, v: Any) -> bytes:
    """A string argument as UTF-8 (a lone surrogate cannot be lowered)."""
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a str, not {type(v).__name__}")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode (a lone surrogate)") from None


def int_kinds(types: List[ValType]) -> Optional[List[str]]:
    """The kinds of core types if every one is i32 or i64, else None."""
    kinds = [str(t) for t in types]
    return kinds if all(k in ("i32", "i64") for k in kinds) else None


class RawFunc:
    """One core export called through ``wasmtime_func_call_unchecked``
    (see the module's docstring for why and why it is sound). Parameters are
    ints (wrapped to their bit pattern: ctypes does not check ranges, so the
    callers range-check first); the result is the first value as an unsigned
    int, or None."""

    __slots__ = ("_func", "_args", "_words", "_addr", "_fn_addr", "_n", "_nparams", "_i64", "_owner")
    _args: Any
    _words: memoryview
    _addr: int
    _fn_addr: int

    def __init__(self, owner: "Guest", func: Func, nparams: int, i64_result: Optional[bool]) -> None:
        self._n = max(nparams, 1 if i64_result is not None else 0, 1)
        self._args = (ffi.wasmtime_val_raw * self._n)()
        # The same values as bytes: struct packs several in one call.
        self._words = memoryview(self._args).cast("B")
        self._func = func  # keeps the wasmtime_func_t at _fn_addr alive
        self._addr = ctypes.addressof(self._args)
        self._fn_addr = ctypes.addressof(func._func)
        self._nparams = nparams
        self._i64 = i64_result
        self._owner = owner

    def __call__(self, *params: int) -> Optional[int]:
        if len(params) != self._nparams:
            raise WasmtimeError(f"expected {self._nparams} core parameters, got {len(params)}")
        a = self._args
        for i, v in enumerate(params):
            a[i].i64 = v
        o = self._owner
        err = _call_unchecked(o.ctx_addr, self._fn_addr, self._addr, self._n, o.trap_addr)
        if err or o.trap:
            o.failed(err)
        o.refresh()
        if self._i64 is None:
            return None
        return int(a[0].i64) & U64_MAX if self._i64 else int(a[0].i32) & U32_MAX


# ``wasmtime_func_call_unchecked`` itself with every argument an address
# (``c_void_p``): ctypes converts an int fastest, and a batched event makes
# one such call (its block's cabi_realloc), so this halves its host cost.
_call_unchecked: Callable[..., Any] = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p
)(ctypes.cast(_bindings._wasmtime_func_call_unchecked, ctypes.c_void_p).value or 0)
#: cabi_realloc's four i32 parameters in their 16-byte raw slots.
_ALLOC_ARGS = struct.Struct("<I12xI12xI12xI").pack_into


class Guest:
    """The guest's memory and allocator for one Store: the view of linear
    memory is rebuilt whenever its size changed (only a call into the guest
    can grow it), and every read and write is bounds-checked."""

    def __init__(self, store: Store, memory: Memory) -> None:
        self.store = store
        self.ctx = store._context()
        self.ctx_addr = ctypes.cast(self.ctx, ctypes.c_void_p).value
        self.memory = memory
        self._mref = byref(memory._memory)
        self.trap = POINTER(ffi.wasm_trap_t)()
        self.trap_addr = ctypes.addressof(self.trap)
        self._size = -1
        self.mem: memoryview = memoryview(b"")
        self.realloc: Optional[RawFunc] = None
        self.refresh()

    def failed(self, err: Any) -> None:
        """Raises the trap or error of a failed call (a Python exception a
        host function raised comes first, as wasmtime-py's own calls do)."""
        if self.trap:
            trap = Trap._from_ptr(self.trap)
            # The trap pointer is owned by ``trap`` now: a fresh out-slot.
            self.trap = POINTER(ffi.wasm_trap_t)()
            self.trap_addr = ctypes.addressof(self.trap)
            maybe_raise_last_exn()
            raise trap
        error = WasmtimeError._from_ptr(ctypes.cast(err, POINTER(ffi.wasmtime_error_t)))
        maybe_raise_last_exn()
        raise error

    def refresh(self) -> None:
        size = ffi.wasmtime_memory_data_size(self.ctx, self._mref)
        if size != self._size:
            self._size = size
            base = ctypes.addressof(self.memory.data_ptr(self.store).contents) if size else 0
            self.mem = memoryview((ctypes.c_ubyte * size).from_address(base)).cast("B") if size else memoryview(b"")

    # -- allocation and lowering ------------------------------------------

    def alloc(self, align: int, size: int) -> int:
        if size == 0:
            return align  # what cabi_realloc gives for zero bytes: aligned, never read
        if size > U32_MAX:
            raise ValueError(f"{size} bytes do not fit a 32-bit guest")
        f = self.realloc
        assert f is not None
        # RawFunc.__call__ inlined, without its memory refresh: this runs
        # once per lowered list (once per batched event), and the view
        # only needs refreshing when the block lies past it.
        _ALLOC_ARGS(f._words, 0, 0, 0, align, size)
        err = _call_unchecked(self.ctx_addr, f._fn_addr, f._addr, 4, self.trap_addr)
        if err or self.trap:
            self.failed(err)
        ptr = int(_U32(f._words, 0)[0])
        if ptr + size > len(self.mem):
            self.refresh()
        if ptr % align or ptr + size > len(self.mem):
            raise Malformed(f"cabi_realloc returned {ptr} for {size} bytes, outside memory")
        return ptr

    def lower(self, data: bytes, align: int = 1) -> int:
        """``data`` copied into a new guest allocation (the guest owns it)."""
        ptr = self.alloc(align, len(data))
        if data:
            self.mem[ptr : ptr + len(data)] = data
        return ptr

    def lower_list(self, lists: List[bytes], align: int = 1) -> Tuple[int, int]:
        """A ``list<list<u8>>`` or ``list<string>``: each element its own
        allocation (the guest frees each with its own layout), then the array
        of (ptr, len) descriptors."""
        descs = bytearray(L.LIST_SIZE * len(lists))
        for i, b in enumerate(lists):
            _LIST.pack_into(descs, L.LIST_SIZE * i, self.lower(b), len(b))
        return self.lower(bytes(descs), L.LIST_ALIGN), len(lists)

    def put(self, fmt: str, ptr: int, *values: int) -> None:
        """Writes a result into a return area the guest passed."""
        if ptr + struct.calcsize(fmt) > len(self.mem):
            raise Malformed(f"the return area {ptr} is outside memory")
        struct.pack_into(fmt, self.mem, ptr, *values)

    # -- lifting ------------------------------------------------------------

    def _read(self, unpack: Callable[..., Tuple[Any, ...]], p: int) -> int:
        """One fixed-size value at ``p`` by ``unpack`` (``_U8``, ...)."""
        try:
            return int(unpack(self.mem, p)[0])
        except struct.error:
            raise Malformed(f"a result at {p} is outside memory") from None

    def u8(self, p: int) -> int:
        return self._read(_U8, p)

    def u32(self, p: int) -> int:
        return self._read(_U32, p)

    def u64(self, p: int) -> int:
        return self._read(_U64, p)

    def flag(self, p: int) -> bool:
        v = self.u8(p)
        if v > 1:
            raise Malformed(f"a bool at {p} is {v}")
        return v == 1

    def case(self, p: int, names: Tuple[str, ...], what: str) -> str:
        v = self.u8(p)
        if v >= len(names):
            raise Malformed(f"a {what} at {p} is {v}")
        return names[v]

    def disc(self, p: int) -> bool:
        """An option's or result's discriminant: True for some / err."""
        v = self.u8(p)
        if v > 1:
            raise Malformed(f"a discriminant at {p} is {v}")
        return v == 1

    def view(self, p: int, size: int) -> Tuple[int, int]:
        """The (ptr, count) of a list at ``p`` of ``size``-byte elements,
        checked to lie inside memory."""
        ptr, n = self.u32(p + L.LIST_PTR), self.u32(p + L.LIST_LEN)
        if ptr + n * size > len(self.mem):
            raise Malformed(f"a list at {ptr} ({n} elements of {size} bytes) is outside memory")
        return ptr, n

    def blob(self, p: int) -> bytes:
        ptr, n = self.view(p, 1)
        return bytes(self.mem[ptr : ptr + n])  # copied: post-return frees it

    def text(self, p: int) -> str:
        try:
            return self.blob(p).decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed(f"a string at {p} is not UTF-8") from None

    def texts(self, p: int) -> List[str]:
        ptr, n = self.view(p, L.LIST_SIZE)
        return [self.text(ptr + L.LIST_SIZE * i) for i in range(n)]

    def u64s(self, p: int) -> List[int]:
        ptr, n = self.view(p, 8)
        return list(struct.unpack_from(f"<{n}Q", self.mem, ptr)) if n else []

    def opt_u64(self, p: int) -> Optional[int]:
        return self.u64(p + L.OPTION_U64_PAYLOAD) if self.disc(p) else None

    def opt_s64(self, p: int) -> Optional[int]:
        if not self.disc(p):
            return None
        v = p + L.OPTION_S64_PAYLOAD
        try:
            return int(_S64(self.mem, v)[0])
        except struct.error:
            raise Malformed(f"a result at {v} is outside memory") from None

    def error(self, p: int) -> Record:
        """An ``error`` record."""
        return record(kind=self.case(p + L.ERROR_KIND, ERROR_KINDS, "error kind"), message=self.text(p + L.ERROR_MESSAGE))

    def outcome(self, p: int) -> Record:
        """An ``outcome``."""
        return record(
            state=self.case(p + L.OUTCOME_STATE, LIFECYCLE, "lifecycle"),
            committed=self.u64s(p + L.OUTCOME_COMMITTED),
            tags_created=self.texts(p + L.OUTCOME_TAGS_CREATED),
            tags_deleted=self.texts(p + L.OUTCOME_TAGS_DELETED),
            restart_required=self.flag(p + L.OUTCOME_RESTART_REQUIRED),
            committed_up_to=self.opt_u64(p + L.OUTCOME_COMMITTED_UP_TO),
        )

    def batch_outcome(self, p: int) -> Record:
        """A ``batch-outcome``: its effects are an ``option<batch-effects>``."""
        effects = None
        if self.disc(p + L.BATCH_OUTCOME_EFFECTS):
            e = p + L.BATCH_OUTCOME_EFFECTS + L.OPTION_BATCH_EFFECTS_PAYLOAD
            effects = record(
                committed=self.u64s(e + L.BATCH_EFFECTS_COMMITTED),
                tags_created=self.texts(e + L.BATCH_EFFECTS_TAGS_CREATED),
                tags_deleted=self.texts(e + L.BATCH_EFFECTS_TAGS_DELETED),
                restart_required=self.flag(e + L.BATCH_EFFECTS_RESTART_REQUIRED),
            )
        return record(
            state=self.case(p + L.BATCH_OUTCOME_STATE, LIFECYCLE, "lifecycle"),
            committed_up_to=self.opt_u64(p + L.BATCH_OUTCOME_COMMITTED_UP_TO),
            effects=effects,
        )

    def entry(self, p: int) -> Record:
        """An ``entry``."""
        ptr, n = self.view(p + L.ENTRY_COMMITTABLES, L.LIST_SIZE)
        return record(
            checkpoint=self.u64(p + L.ENTRY_CHECKPOINT),
            committables=[self.blob(ptr + L.LIST_SIZE * i) for i in range(n)],
            watermark=self.opt_s64(p + L.ENTRY_WATERMARK),
            savepoint=self.flag(p + L.ENTRY_SAVEPOINT),
        )

    def snapshot(self, p: int) -> Record:
        """A ``snapshot``; its committables are ``tuple<u32, list<u8>>``."""
        size = L.TUPLE_U32_LIST_U8_SIZE
        ptr, n = self.view(p + L.SNAPSHOT_COMMITTABLES, size)
        return record(
            id=self.u64(p + L.SNAPSHOT_ID),
            commit_user=self.text(p + L.SNAPSHOT_COMMIT_USER),
            identifier=self.u64(p + L.SNAPSHOT_IDENTIFIER),
            watermark=self.opt_s64(p + L.SNAPSHOT_WATERMARK),
            time_ms=self.u64(p + L.SNAPSHOT_TIME_MS),
            committables=[
                (self.u32(ptr + size * i + L.TUPLE_U32_LIST_U8_F0), self.blob(ptr + size * i + L.TUPLE_U32_LIST_U8_F1))
                for i in range(n)
            ],
        )

    def tag(self, p: int) -> Record:
        """A ``tag``."""
        return record(
            name=self.text(p + L.TAG_NAME),
            snapshot_id=self.u64(p + L.TAG_SNAPSHOT_ID),
            identifier=self.u64(p + L.TAG_IDENTIFIER),
            create_time_ms=self.u64(p + L.TAG_CREATE_TIME_MS),
            expire_time_ms=self.opt_u64(p + L.TAG_EXPIRE_TIME_MS),
        )

    def result(self, ret: int, ok: Callable[[int], Any], payload: int) -> Variant:
        """A ``result<T, error>`` whose payload (T or the error) is at
        ``ret + payload`` (the result type's ``_layout`` ``..._PAYLOAD``):
        ``ok`` lifts T from there. Always tagged, which the handles accept."""
        if self.disc(ret):
            return Variant("err", self.error(ret + payload))
        return Variant("ok", ok(ret + payload))
