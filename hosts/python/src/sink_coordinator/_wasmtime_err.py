"""The one workaround for wasmtime-py in this package: a host function that
can return the ``err`` case of any ``result`` type.

**Why.** wasmtime-py (50) lowers a host function's return value by matching
it against the Python classes of the result's cases. A ``result`` whose cases
have disjoint classes is "untagged": the bare value is matched case by case.
For ``get: func(key) -> result<option<list<u8>>, storage-error>`` the ``ok``
case ``option<…>`` claims ``object`` (for ``none``), so every value, an error
included, is lowered as ``ok`` and fails ("value not valid for this
variant"), which traps the Store: a storage cannot report a failed ``get``.

**What.** ``add_func`` registers a Python function through wasmtime-py's own
C binding (``wasmtime_component_linker_instance_add_func``) with a trampoline
that does what wasmtime-py's ``func_impl`` does, except that a returned
``Err(payload)`` is lowered as the ``err`` case explicitly, and that the
values are converted by ``_fastval`` (types compiled on a function's first
call, byte lists in blocks). Nothing in
wasmtime-py is patched or replaced; this module uses three of its internal
names (``wasmtime._ffi``, ``wasmtime.component._enter.catch_exceptions``,
``FuncType._from_ptr``), which is why the package pins ``wasmtime`` to one
major version.

**What upstream would need.** An explicit way to return ``err`` from a host
function whatever the result's shape, e.g. ``VariantLikeType._lower``
(``wasmtime/component/_types.py``) accepting ``Variant('err', payload)`` (or
a dedicated ``Err`` wrapper) for an untagged ``result`` too, before trying
the cases by class. With that, ``add_func`` here becomes
``LinkerInstance.add_func``.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from ctypes import byref
from typing import Any, Callable, Dict

from wasmtime import _ffi as ffi
from wasmtime.component import FuncType, LinkerInstance
from wasmtime.component._enter import catch_exceptions

from ._fastval import compile_type, lift_args


class Err:
    """A host function's explicit ``err`` result (``payload``: the err value)."""

    __slots__ = ("payload",)

    def __init__(self, payload: Any) -> None:
        self.payload = payload


# The registered functions by index: the C side holds only the index, and
# calls `_finalize` when the linker (and every instance of it) is gone.
_FUNCTIONS: Dict[int, Callable[..., Any]] = {}
_NEXT = itertools.count(1)
_LOCK = threading.Lock()


class _Types:
    """A host function's converters, made from its type on the first call
    (``_fastval``: no per-byte conversion of ``list<u8>``)."""

    __slots__ = ("params", "result", "err")

    def __init__(self, fty: Any) -> None:
        self.params = [compile_type(t) for _, t in fty.params]
        result_ty = fty.result
        self.result = None if result_ty is None else compile_type(result_ty)
        err_ty = None if result_ty is None else getattr(result_ty, "err", None)
        self.err = None if err_ty is None else compile_type(err_ty)


_TYPES: Dict[int, _Types] = {}


def _lower(store: Any, types: _Types, result: Any, results: Any) -> None:
    if types.result is None:
        return
    if not isinstance(result, Err):
        types.result.to_c(store, result, results)
        return
    raw = None
    if types.err is not None:
        payload = ffi.wasmtime_component_val_t()
        types.err.to_c(store, result.payload, ctypes.pointer(payload))
        raw = ffi.wasmtime_component_val_new(byref(payload))
    results.contents.kind = ffi.WASMTIME_COMPONENT_RESULT
    results.contents.of.result.is_ok = False
    results.contents.of.result.val = raw


@ffi.wasmtime_component_func_callback_t
def _trampoline(idx, context, ty_raw, args, nargs, results, nresults):  # type: ignore[no-untyped-def]
    def run(store: Any) -> None:
        key = idx or 0
        func = _FUNCTIONS[key]
        types = _TYPES.get(key)
        if types is None:
            with FuncType._from_ptr(ty_raw, owner=store) as fty:
                types = _TYPES[key] = _Types(fty)
        pyargs = lift_args(types.params, args, nargs)
        _lower(store, types, func(store, *pyargs), results)

    return catch_exceptions(context, run)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _finalize(idx):  # type: ignore[no-untyped-def]
    with _LOCK:
        _FUNCTIONS.pop(idx or 0, None)
        _TYPES.pop(idx or 0, None)


def add_func(instance: LinkerInstance, name: str, func: Callable[..., Any]) -> None:
    """Like ``instance.add_func(name, func)``; ``func`` may return ``Err(x)``."""
    with _LOCK:
        idx = next(_NEXT)
        _FUNCTIONS[idx] = func
    name_bytes = name.encode("utf-8")
    err = ffi.wasmtime_component_linker_instance_add_func(
        instance.ptr(),
        ctypes.create_string_buffer(name_bytes),
        len(name_bytes),
        _trampoline,
        idx,
        _finalize,
    )
    if err:
        from wasmtime import WasmtimeError

        with _LOCK:
            _FUNCTIONS.pop(idx, None)
        raise WasmtimeError._from_ptr(err)
