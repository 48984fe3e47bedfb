"""``sink_coordinator.paimon.encode_committable`` against the shared vectors
tests/paimon/committables.json, whose hex the Rust encoder fixes
(paimon/tests/committable_vectors.rs), and the builders' refusals. Runs with
test_package.py (the installed wheel) or alone (unittest or pytest)."""

import json
import os
import unittest
from typing import Any, Dict, Optional

import sink_coordinator as sc
from sink_coordinator.paimon import ColumnStats, DataFile, Datum, Int, Long, encode_committable

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def _datum(d: Dict[str, Any]) -> Datum:
    ((kind, v),) = d.items()
    if kind == "null":
        return None
    if kind == "int":
        return Int(v)
    if kind == "long":  # a decimal string: JSON numbers lose bits past 2^53 elsewhere
        return Long(int(v))
    if kind in ("string", "bool"):
        assert isinstance(v, (str, bool))
        return v
    raise AssertionError(f"unknown value kind {kind}")


def _data_file(j: Dict[str, Any]) -> DataFile:
    def count(s: Dict[str, Any]) -> Optional[int]:
        n = s.get("null_count")
        return None if n is None else int(n)

    return DataFile(
        j["file_name"],
        file_size=int(j["file_size"]),
        row_count=int(j["row_count"]),
        schema_id=int(j["schema_id"]),
        min_sequence_number=int(j["min_sequence_number"]),
        max_sequence_number=int(j["max_sequence_number"]),
        creation_time_millis=int(j["creation_time_millis"]),
        partition=[_datum(d) for d in j["partition"]],
        value_stats=[ColumnStats(s["column"], _datum(s["min"]), _datum(s["max"]), count(s)) for s in j["value_stats"]],
    )


def _ok(**kw: Any) -> DataFile:
    args: Dict[str, Any] = dict(
        file_name="data-1-0.parquet",
        file_size=1,
        row_count=1,
        schema_id=0,
        min_sequence_number=0,
        max_sequence_number=0,
        creation_time_millis=0,
    )
    args.update(kw)
    return DataFile(**args)


class PaimonCommittable(unittest.TestCase):
    def test_every_vector(self) -> None:
        with open(os.path.join(REPO, "tests", "paimon", "committables.json"), encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 8)
        for c in cases:
            with self.subTest(c["name"]):
                self.assertEqual(encode_committable(_data_file(c["data_file"])).hex(), c["hex"])

    def test_a_module_of_the_package(self) -> None:
        # Its names (Int, Long, DataFile) are Paimon's: kept in their own module.
        self.assertIs(sc.paimon.encode_committable, encode_committable)
        self.assertIn("paimon", sc.__all__)
        self.assertNotIn("Int", sc.__all__)

    def test_values_are_immutable_and_comparable(self) -> None:
        f = _ok(partition=["a", Int(1)], value_stats=[ColumnStats("id", Long(1), Long(2))])
        self.assertEqual(f.partition, ("a", Int(1)))
        self.assertEqual(hash(f), hash(_ok(partition=("a", Int(1)), value_stats=(ColumnStats("id", Long(1), Long(2)),))))
        self.assertNotEqual(Int(1), Long(1))

    def test_refusals(self) -> None:
        for name in ["", ".", "..", "a/b", "a\\b", "a\nb", "a\x7fb", "a" * 256, "é" * 128]:
            with self.subTest(name=name), self.assertRaisesRegex(ValueError, "is not a plain file name"):
                _ok(file_name=name)
        _ok(file_name="é" * 127 + "a")  # 255 UTF-8 bytes
        cases: list[tuple[Dict[str, Any], type, str]] = [
            ({"file_name": "a\ud800"}, ValueError, "file_name is not valid Unicode"),
            ({"file_size": -1}, ValueError, r"file_size = -1 is out of range \[0, 9223372036854775807\]"),
            ({"row_count": 1 << 63}, ValueError, "row_count = 9223372036854775808 is out of range"),
            ({"schema_id": True}, TypeError, "schema_id must be an int, not bool"),
            ({"min_sequence_number": -(1 << 63) - 1}, ValueError, "min_sequence_number = .* is out of range"),
            ({"creation_time_millis": 1.0}, TypeError, "creation_time_millis must be an int, not float"),
            ({"partition": [3]}, TypeError, r"partition\[0\] = 3: wrap an integer as Int\(3\) \(INT\) or Long\(3\)"),
            ({"partition": [b"x"]}, TypeError, r"partition\[0\] must be None, bool, Int, Long or str, not bytes"),
            ({"partition": "dt"}, TypeError, "partition must be a sequence of values, not a str"),
            ({"value_stats": [("id", 1, 2, 0)]}, TypeError, "value_stats must hold ColumnStats, not tuple"),
        ]
        for kw, error, message in cases:
            with self.subTest(**{k: repr(v) for k, v in kw.items()}), self.assertRaisesRegex(error, message):
                _ok(**kw)
        with self.assertRaisesRegex(ValueError, r"Int = 2147483648 is out of range \[-2147483648, 2147483647\]"):
            Int(1 << 31)
        with self.assertRaisesRegex(ValueError, "Long = -9223372036854775809 is out of range"):
            Long(-(1 << 63) - 1)
        with self.assertRaisesRegex(TypeError, "Int must be an int, not bool"):
            Int(True)
        with self.assertRaisesRegex(ValueError, "stats of 'id': null_count = -1 is out of range"):
            ColumnStats("id", None, None, -1)
        with self.assertRaisesRegex(TypeError, "stats of 'id': min = 1: wrap an integer"):
            ColumnStats("id", 1, None)  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "encode_committable takes a DataFile, not dict"):
            encode_committable({})  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
