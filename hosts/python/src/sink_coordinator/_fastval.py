"""Value conversion between Python and the component, without the per-byte
cost of wasmtime-py's generic path.

**Why.** wasmtime-py (50) calls a component function through the C API's
dynamic values (``wasmtime_component_val_t``, 32 bytes each), and its generic
converters (``wasmtime/component/_types.py``) turn a ``list<u8>`` into one
such value per byte, each written by a Python call, and re-read every type
from the C API on every call (``RecordType.fields``, ``ListType.element``).
A realistic checkpoint (256 writers × 4 committables × 200 B, its state bytes
and its snapshot through ``put-if-absent``) cost about 460 ms that way, over
95 % of it in per-byte conversion.

**What.** ``compile_type`` walks a wasmtime-py ``ValType`` once and returns a
converter whose ``to_c`` / ``from_c`` produce exactly the C values and the
Python values wasmtime-py's own converters produce (``Record`` objects with
the WIT field names, ``Variant`` for tagged variants, the bare payload for
untagged ones, ``bytes`` for ``list<u8>``), with the same ownership protocol
(a lifted value's C allocations are released as wasmtime-py releases them).
A ``list<u8>`` is written and read as one block: the 32-byte values are laid
out with ``bytearray`` slice assignment at C speed. Types without bytes
inside (enums, strings, numbers, resources, other variants) use
wasmtime-py's own converter of the cached type. Nothing in wasmtime-py is
patched; like ``_wasmtime_err``, this module uses its ``_ffi`` names, hence
the pinned major version.

**What upstream would need.** A bulk path for ``list<u8>`` in the C API's
values (``wasmtime_component_val_t`` could carry a byte vector) and cached
types in wasmtime-py's ``Func.__call__`` (bytecodealliance/wasmtime-py#137).
"""

from __future__ import annotations

import ctypes
from ctypes import byref
from itertools import repeat
from typing import Any, Iterable, List, Optional, Sequence, Set, Tuple

from wasmtime import _ffi as ffi
from wasmtime.component import Record, Variant
from wasmtime.component._enter import enter_wasm
from wasmtime.component._types import (
    ListType,
    OptionType,
    RecordType,
    ResultType,
    TupleType,
    U8,
    ValType,
)

_VAL = ffi.wasmtime_component_val_t
_SIZE = ctypes.sizeof(_VAL)
_PAYLOAD = _VAL.of.offset
_U8 = bytes([ffi.WASMTIME_COMPONENT_U8.value])
_LIST = ffi.WASMTIME_COMPONENT_LIST
_RECORD = ffi.WASMTIME_COMPONENT_RECORD
_TUPLE = ffi.WASMTIME_COMPONENT_TUPLE
_OPTION = ffi.WASMTIME_COMPONENT_OPTION
_RESULT = ffi.WASMTIME_COMPONENT_RESULT
_BOOL = ffi.WASMTIME_COMPONENT_BOOL

Ptr = Any  # ctypes pointer to a wasmtime_component_val_t


class Conv:
    """Converts one WIT type: ``to_c(store, value, ptr)`` writes ``*ptr``;
    ``from_c(val)`` reads a value and releases what it owns."""

    def to_c(self, store: Any, val: Any, ptr: Ptr) -> None:
        raise NotImplementedError

    def from_c(self, c: Any) -> Any:
        raise NotImplementedError


class _Own(Conv):
    """wasmtime-py's own converter of a type with no bytes inside."""

    def __init__(self, ty: ValType) -> None:
        self.ty = ty
        self.to_c = ty.convert_to_c  # type: ignore[method-assign]
        self.from_c = ty.convert_from_c  # type: ignore[method-assign]


class _Bytes(Conv):
    """``list<u8>`` as ``bytes``, laid out and read as one block."""

    def to_c(self, store: Any, val: Any, ptr: Ptr) -> None:
        if not isinstance(val, (bytes, bytearray, memoryview)):
            raise TypeError("expected bytes value")
        n = len(val)
        raw = ffi.wasmtime_component_vallist_t()
        ffi.wasmtime_component_vallist_new_uninit(raw, n)
        if n:
            block = bytearray(n * _SIZE)
            block[0::_SIZE] = _U8 * n
            block[_PAYLOAD::_SIZE] = val
            ctypes.memmove(raw.data, (ctypes.c_char * len(block)).from_buffer(block), len(block))
        ptr.contents.kind = _LIST
        ptr.contents.of.list = raw

    def from_c(self, c: Any) -> Any:
        n = c.of.list.size
        out = ctypes.string_at(c.of.list.data, n * _SIZE)[_PAYLOAD::_SIZE] if n else b""
        ffi.wasmtime_component_vallist_delete(byref(c.of.list))
        return out


class _List(Conv):
    def __init__(self, element: Conv) -> None:
        self.element = element

    def to_c(self, store: Any, val: Any, ptr: Ptr) -> None:
        if not isinstance(val, list):
            raise TypeError("expected list value")
        raw = ffi.wasmtime_component_vallist_t()
        ffi.wasmtime_component_vallist_new_uninit(raw, len(val))
        _lower_into(store, raw, zip(repeat(self.element), val), len(val), ffi.wasmtime_component_vallist_delete)
        ptr.contents.kind = _LIST
        ptr.contents.of.list = raw

    def from_c(self, c: Any) -> Any:
        return _lift_from(c.of.list, repeat(self.element), ffi.wasmtime_component_vallist_delete)


class _Record(Conv):
    def __init__(self, fields: List[Tuple[str, Conv]]) -> None:
        self.fields = fields
        # Each lowered record owns a copy of its field names: copied from
        # arrays made once (``ffi.str_to_capi`` makes a ctypes array type
        # per call, about 15 µs each).
        self.names = []
        for name, _ in fields:
            b = name.encode("utf-8")
            self.names.append((len(b), (ffi.wasm_byte_t * len(b)).from_buffer_copy(b)))

    def to_c(self, store: Any, val: Any, ptr: Ptr) -> None:
        raw = ffi.wasmtime_component_valrecord_t()
        ffi.wasmtime_component_valrecord_new_uninit(raw, len(self.fields))
        done = 0
        try:
            for (name, conv), (n, chars) in zip(self.fields, self.names):
                entry = raw.data[done]
                conv.to_c(store, getattr(val, name), ctypes.pointer(entry.val))
                ffi.wasm_byte_vec_new(byref(entry.name), n, chars)
                done += 1
        except BaseException:
            for j in range(done, len(self.fields)):
                raw.data[j].val.kind = _BOOL
                raw.data[j].val.of.boolean = False
            ffi.wasmtime_component_valrecord_delete(byref(raw))
            raise
        ptr.contents.kind = _RECORD
        ptr.contents.of.record = raw

    def from_c(self, c: Any) -> Any:
        data = c.of.record.data
        out = Record()
        try:
            for i, (name, conv) in zip(range(c.of.record.size), self.fields):
                setattr(out, name, conv.from_c(data[i].val))
                data[i].val.kind = _BOOL
        finally:
            ffi.wasmtime_component_valrecord_delete(byref(c.of.record))
        return out


class _Tuple(Conv):
    def __init__(self, elements: List[Conv]) -> None:
        self.elements = elements

    def to_c(self, store: Any, val: Any, ptr: Ptr) -> None:
        if not isinstance(val, tuple) or len(val) != len(self.elements):
            raise TypeError("expected a tuple of %d" % len(self.elements))
        raw = ffi.wasmtime_component_valtuple_t()
        ffi.wasmtime_component_valtuple_new_uninit(raw, len(val))
        _lower_into(store, raw, zip(self.elements, val), len(val), ffi.wasmtime_component_valtuple_delete)
        ptr.contents.kind = _TUPLE
        ptr.contents.of.tuple = raw

    def from_c(self, c: Any) -> Any:
        return tuple(_lift_from(c.of.tuple, self.elements, ffi.wasmtime_component_valtuple_delete))


class _Cases(Conv):
    """``option`` and ``result``: wasmtime-py's rules (``VariantLikeType``),
    with the cases and the tagged/untagged decision taken once."""

    def __init__(self, ty: Any, cases: List[Tuple[str, Optional[Conv], Optional[ValType]]]) -> None:
        self.is_option = isinstance(ty, OptionType)
        self.tagged = ty._tagged()
        self.cases = cases
        # Untagged lowering picks the first case whose Python classes match,
        # as wasmtime-py does (``add_classes``).
        self.classes: List[Optional[Tuple[type, ...]]] = []
        for _, _, vty in cases:
            if vty is None:
                self.classes.append(None)
            else:
                s: Set[type] = set()
                vty.add_classes(s)
                self.classes.append(tuple(s))

    def _lower(self, store: Any, val: Any) -> Tuple[str, Any]:
        if self.tagged and not isinstance(val, Variant):
            raise TypeError("expected Variant type")
        for (name, conv, _), classes in zip(self.cases, self.classes):
            if self.tagged:
                if name != val.tag:
                    continue
            elif conv is None:
                if val is not None:
                    continue
            elif classes is not None and not isinstance(val, classes):
                continue
            if conv is None:
                return name, None
            raw = _VAL()
            conv.to_c(store, val.payload if self.tagged else val, ctypes.pointer(raw))
            return name, ffi.wasmtime_component_val_new(byref(raw))
        raise ValueError("value not valid for this variant")

    def to_c(self, store: Any, val: Any, ptr: Ptr) -> None:
        name, raw = self._lower(store, val)
        if self.is_option:
            ptr.contents.kind = _OPTION
            ptr.contents.of.option = raw
        else:
            ptr.contents.kind = _RESULT
            ptr.contents.of.result.is_ok = name == "ok"
            ptr.contents.of.result.val = raw

    def from_c(self, c: Any) -> Any:
        if self.is_option:
            boxed = c.of.option
            name, conv, _ = self.cases[1 if boxed else 0]
        else:
            boxed = c.of.result.val
            name, conv, _ = self.cases[0 if c.of.result.is_ok else 1]
        if conv is None:
            return Variant(name) if self.tagged else None
        payload = conv.from_c(boxed.contents)
        boxed.contents.kind = _BOOL
        boxed.contents.of.boolean = False
        ffi.wasmtime_component_val_delete(boxed)
        return Variant(name, payload) if self.tagged else payload


def _lower_into(store: Any, raw: Any, pairs: Iterable[Tuple[Conv, Any]], n: int, delete: Any) -> None:
    """Lowers each (converter, value) into ``raw.data`` (a list or tuple of
    ``n`` values made uninitialised); on a failure releases what was written
    and ``raw`` itself."""
    done = 0
    try:
        for conv, v in pairs:
            conv.to_c(store, v, ctypes.pointer(raw.data[done]))
            done += 1
    except BaseException:
        _neutralise(raw.data, done, n)
        delete(byref(raw))
        raise


def _lift_from(seq: Any, convs: Iterable[Conv], delete: Any) -> List[Any]:
    """Lifts the values of a C list or tuple, then releases it."""
    data = seq.data
    out = []
    try:
        for i, conv in zip(range(seq.size), convs):
            out.append(conv.from_c(data[i]))
            data[i].kind = _BOOL
    finally:
        delete(byref(seq))
    return out


def _neutralise(data: Any, start: int, end: int) -> None:
    """Marks values a failed lowering never wrote as plain booleans, so that
    deleting their container frees nothing they do not own."""
    for j in range(start, end):
        data[j].kind = _BOOL
        data[j].of.boolean = False


def compile_type(ty: ValType) -> Conv:
    """The converter of ``ty`` (walks the type once). Containers are
    converted here even without bytes inside, so that their element types
    and (for option and result) their case decisions are taken once."""
    if isinstance(ty, ListType):
        element = ty.element
        return _Bytes() if isinstance(element, U8) else _List(compile_type(element))
    if isinstance(ty, RecordType):
        return _Record([(name, compile_type(t)) for name, t in ty.fields])
    if isinstance(ty, TupleType):
        return _Tuple([compile_type(t) for t in ty.elements])
    if isinstance(ty, OptionType):
        payload = ty.payload
        return _Cases(ty, [("none", None, None), ("some", compile_type(payload), payload)])
    if isinstance(ty, ResultType):
        cases = []
        for name, t in (("ok", ty.ok), ("err", ty.err)):
            cases.append((name, None if t is None else compile_type(t), t))
        return _Cases(ty, cases)
    return _Own(ty)


class FastFunc:
    """A component function with its types converted once: calling it does
    what ``wasmtime.component.Func.__call__`` does (lower, call, lift,
    release), with the converters above."""

    def __init__(self, func: Any, store: Any) -> None:
        self.func = func
        fty = func.type(store)
        self._fty = fty  # keeps the types' owner alive
        self.params: List[Conv] = [compile_type(t) for _, t in fty.params]
        result = fty.result
        self.result: Optional[Conv] = None if result is None else compile_type(result)

    def __call__(self, store: Any, *params: Any) -> Any:
        if len(params) != len(self.params):
            raise TypeError(f"wrong number of parameters provided: given {len(params)}, expected {len(self.params)}")
        args = (_VAL * len(params))()
        n = 0
        try:
            for conv, val in zip(self.params, params):
                conv.to_c(store, val, ctypes.pointer(args[n]))
                n += 1
            result = _VAL() if self.result is not None else None
            out = byref(result) if result is not None else None

            def run() -> Any:
                return ffi.wasmtime_component_func_call(
                    byref(self.func._func), store._context(), args, n, out, 1 if result is not None else 0
                )

            enter_wasm(run)
            if result is None or self.result is None:
                return None
            return self.result.from_c(result)
        finally:
            for i in range(n):
                ffi.wasmtime_component_val_delete(byref(args[i]))


def lift_args(convs: Sequence[Conv], args: Any, nargs: int) -> List[Any]:
    """A host function's arguments (``_wasmtime_err``'s trampoline)."""
    return [conv.from_c(args[i]) for conv, i in zip(convs, range(nargs))]

