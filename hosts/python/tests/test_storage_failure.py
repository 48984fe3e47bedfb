"""A directory table that starts failing mid-run (issue 26: "mid-run storage
failure tested natively only"): after two commits every storage call fails,
and the coordinator's call raises a typed ``StorageError`` (the handle stays
usable); once the storage is back the same call commits. Then a create-once
that lands but reports an error (an ambiguous write: the answer was lost) is
resolved by the retry without a duplicate. Imported and run by
test_package.py (``make hosts-test``)."""

import shutil
import tempfile
import unittest
from typing import Any, Callable, List, Optional

import sink_coordinator as sc


class Flaky:
    """A storage over ``inner`` that fails every call while ``down``, or
    applies one create and then fails (``lose_ack``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = False
        self.lose_ack = False
        self.failures = 0

    def _call(self, op: str, key: str, apply: Callable[[], Any]) -> Any:
        if self.down:
            self.failures += 1
            raise sc.BackendIOError(f"storage down: {op} {key}")
        result = apply()
        if self.lose_ack and op == "put_if_absent":
            self.lose_ack = False
            self.failures += 1
            raise sc.BackendIOError(f"connection lost after {op} {key} was applied")
        return result

    def get(self, key: str) -> Optional[bytes]:
        return self._call("get", key, lambda: self.inner.get(key))

    def put_if_absent(self, key: str, value: bytes) -> bool:
        return self._call("put_if_absent", key, lambda: self.inner.put_if_absent(key, value))

    def put(self, key: str, value: bytes) -> None:
        self._call("put", key, lambda: self.inner.put(key, value))

    def delete(self, key: str) -> None:
        self._call("delete", key, lambda: self.inner.delete(key))

    def list(self, prefix: str) -> List[str]:
        return self._call("list", prefix, lambda: self.inner.list(prefix))


class MidRunFailure(unittest.TestCase):
    def test_directory_storage_failing_mid_run_recovers_without_a_duplicate(self) -> None:
        d = tempfile.mkdtemp(prefix="sink-coordinator-midrun-")
        try:
            storage = Flaky(sc.DirectoryStorage(d))
            c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), storage, sc.ManualClock(7))
            c.start()

            def commit(cp: int) -> List[int]:
                c.event(0, 0, sc.Entry(cp, [f"c{cp}".encode()]))
                c.checkpoint(cp)
                return list(c.checkpoint_complete(cp).committed)

            self.assertEqual(commit(1), [1])
            self.assertEqual(commit(2), [2])

            # The storage goes down mid-run: a typed, retryable error, not a trap.
            c.event(0, 0, sc.Entry(3, [b"c3"]))
            c.checkpoint(3)
            storage.down = True
            with self.assertRaises(sc.StorageError) as cm:
                c.checkpoint_complete(3)
            self.assertIn("storage down", cm.exception.message)
            with self.assertRaises(sc.StorageError):
                c.checkpoint_complete(3)
            self.assertFalse(c.discarded)
            storage.down = False
            self.assertEqual(list(c.checkpoint_complete(3).committed), [3])

            # A create that lands but answers with an error: the retry finds its own commit.
            c.event(0, 0, sc.Entry(4, [b"c4"]))
            c.checkpoint(4)
            storage.lose_ack = True
            with self.assertRaises(sc.StorageError):
                c.checkpoint_complete(4)
            c.checkpoint_complete(4)
            self.assertEqual(commit(5), [5])
            self.assertGreaterEqual(storage.failures, 3)

            ids = [s.identifier for s in sc.Table(sc.DirectoryStorage(d)).list_snapshots()]
            self.assertEqual(ids, [1, 2, 3, 4, 5])
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
