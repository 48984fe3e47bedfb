"""Committables of Paimon mode: the metadata of one new data file, encoded as
``PCM`` v1 (docs/paimon.md, "The committable"), the bytes a writer reports to
a coordinator whose table format is Paimon.

    from sink_coordinator.paimon import ColumnStats, DataFile, Int, Long, encode_committable

    f = DataFile("data-1-0.parquet", file_size=1234, row_count=10, schema_id=0,
                 min_sequence_number=0, max_sequence_number=9,
                 creation_time_millis=1700000000000,
                 partition=["2024-01-01", Int(3)],
                 value_stats=[ColumnStats("id", Long(1), Long(10), null_count=0)])
    committable = encode_committable(f)

A value (``Datum``) is ``None`` (null), ``Int`` (INT, TINYINT, SMALLINT and
DATE in days since epoch: 32 bits), ``Long`` (BIGINT: 64 bits), ``str``
(STRING, VARCHAR, CHAR) or ``bool`` (BOOLEAN). INT and BIGINT are separate
types because the encoding tags them differently and a Python ``int`` says
neither; a plain ``int`` is refused.

The constructors check what the coordinator checks without the table (a
plain file name, the ranges of Paimon's signed 64-bit fields), so a bad
value is a ``ValueError`` here rather than a fatal ``invalid-event`` later;
the partition arity and the value types against the table's schema are
checked by the coordinator only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence, Union

__all__ = [
    "ColumnStats",
    "DataFile",
    "Datum",
    "Int",
    "Long",
    "MAX_FILE_NAME_BYTES",
    "encode_committable",
]

_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)
_NON_NEGATIVE_I64 = (0, (1 << 63) - 1)
_U32_MAX = (1 << 32) - 1

#: Longest file name the coordinator accepts, in UTF-8 bytes.
MAX_FILE_NAME_BYTES = 255


def _check_int(what: str, value: object, bounds: tuple[int, int]) -> int:
    # bool is an int subclass: True as a row count is a bug, not 1.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{what} = {value} is out of range [{lo}, {hi}]")
    return value


def _utf8(what: str, s: object) -> bytes:
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, not {type(s).__name__}")
    try:
        b = s.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate has no UTF-8 form
        raise ValueError(f"{what} is not valid Unicode: {e.reason}") from None
    if len(b) > _U32_MAX:
        raise ValueError(f"{what} is longer than 2^32 - 1 UTF-8 bytes")
    return b


@dataclass(frozen=True)
class Int:
    """A 32-bit value: INT, TINYINT, SMALLINT, or DATE (days since epoch)."""

    value: int

    def __post_init__(self) -> None:
        _check_int("Int", self.value, _I32)


@dataclass(frozen=True)
class Long:
    """A 64-bit value: BIGINT."""

    value: int

    def __post_init__(self) -> None:
        _check_int("Long", self.value, _I64)


#: One partition or stats value; ``None`` is SQL null.
Datum = Union[None, bool, Int, Long, str]


def _check_datum(what: str, v: object) -> None:
    if v is None or isinstance(v, (bool, Int, Long)):
        return
    if isinstance(v, str):
        _utf8(what, v)
        return
    if isinstance(v, int):
        raise TypeError(f"{what} = {v}: wrap an integer as Int({v}) (INT) or Long({v}) (BIGINT)")
    raise TypeError(f"{what} must be None, bool, Int, Long or str, not {type(v).__name__}")


@dataclass(frozen=True)
class ColumnStats:
    """One column's value stats: its min and max (``None`` when every value is
    null) and its null count (``None`` when the writer does not know)."""

    column: str
    min: Datum
    max: Datum
    null_count: int | None = None

    def __post_init__(self) -> None:
        _utf8("ColumnStats.column", self.column)
        _check_datum(f"stats of {self.column!r}: min", self.min)
        _check_datum(f"stats of {self.column!r}: max", self.max)
        if self.null_count is not None:
            # The encoding's -1 means unknown: that is None here, so a negative
            # count is refused rather than silently read back as unknown.
            _check_int(f"stats of {self.column!r}: null_count", self.null_count, _NON_NEGATIVE_I64)


@dataclass(frozen=True)
class DataFile:
    """A new data file of an append table, as a writer reports it.

    ``file_name`` is the plain name (e.g. ``data-<uuid>-0.parquet``) under the
    partition's ``bucket-0/``; ``partition`` holds one value per partition key
    in key order (empty for an unpartitioned table); ``value_stats`` empty
    means no value stats. Sequences are stored as tuples (the value is
    immutable and hashable)."""

    file_name: str
    file_size: int
    row_count: int
    schema_id: int
    min_sequence_number: int
    max_sequence_number: int
    creation_time_millis: int
    partition: Sequence[Datum] = ()
    value_stats: Sequence[ColumnStats] = ()

    def __post_init__(self) -> None:
        name = _utf8("file_name", self.file_name)
        if (
            not name
            or len(name) > MAX_FILE_NAME_BYTES
            or self.file_name in (".", "..")
            or any(b in b"/\\\x7f" or b < 0x20 for b in name)
        ):
            raise ValueError(
                f"file_name {self.file_name!r} is not a plain file name (1 to {MAX_FILE_NAME_BYTES} "
                "UTF-8 bytes, not . or .., no /, \\ or control character)"
            )
        # Paimon's fields are signed 64-bit: the coordinator refuses larger sizes.
        for what in ("file_size", "row_count", "schema_id"):
            _check_int(what, getattr(self, what), _NON_NEGATIVE_I64)
        for what in ("min_sequence_number", "max_sequence_number", "creation_time_millis"):
            _check_int(what, getattr(self, what), _I64)
        if isinstance(self.partition, (str, bytes)):  # a str is a Sequence too
            raise TypeError("partition must be a sequence of values, not a str")
        object.__setattr__(self, "partition", tuple(self.partition))
        object.__setattr__(self, "value_stats", tuple(self.value_stats))
        for i, v in enumerate(self.partition):
            _check_datum(f"partition[{i}]", v)
        for s in self.value_stats:
            if not isinstance(s, ColumnStats):
                raise TypeError(f"value_stats must hold ColumnStats, not {type(s).__name__}")


def _put_str(out: bytearray, what: str, s: str) -> None:
    b = _utf8(what, s)
    out += struct.pack("<I", len(b))
    out += b


def _put_val(out: bytearray, v: Datum) -> None:
    if v is None:
        out.append(0)
    elif isinstance(v, bool):
        out += bytes((4, 1 if v else 0))
    elif isinstance(v, Int):
        out += struct.pack("<Bi", 1, v.value)
    elif isinstance(v, Long):
        out += struct.pack("<Bq", 2, v.value)
    else:
        out.append(3)
        _put_str(out, "value", v)


def encode_committable(f: DataFile) -> bytes:
    """The committable of ``f``: ``PCM`` v1, the bytes
    ``Writer.report(checkpoint, [committable, ...])`` carries."""
    if not isinstance(f, DataFile):
        raise TypeError(f"encode_committable takes a DataFile, not {type(f).__name__}")
    out = bytearray(b"PCM\x01")
    _put_str(out, "file_name", f.file_name)
    out += struct.pack("<QQQ", f.file_size, f.row_count, f.schema_id)
    out += struct.pack("<qqq", f.min_sequence_number, f.max_sequence_number, f.creation_time_millis)
    out += struct.pack("<I", len(f.partition))
    for v in f.partition:
        _put_val(out, v)
    if not f.value_stats:
        out.append(0)
    else:
        out.append(1)
        out += struct.pack("<I", len(f.value_stats))
        for c in f.value_stats:
            _put_str(out, "column", c.column)
            _put_val(out, c.min)
            _put_val(out, c.max)
            out += struct.pack("<q", -1 if c.null_count is None else c.null_count)
    return bytes(out)
