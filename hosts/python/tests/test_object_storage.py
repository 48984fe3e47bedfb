"""``ObjectStoreStorage`` (the ``s3`` extra: obstore) against a real S3 API:
moto's server (tests/s3/moto_server.py, installed by tests/s3/setup.sh into
target/moto-venv, ``make moto-setup``) on a free loopback port. Imported and
run by test_package.py (``make hosts-test``).

- the storage conformance cases (tests/storage/cases.json) with the
  ``key-rules`` capability, through test_storage_conformance's runner, on S3
  (each handle its own client) and on obstore's in-memory store;
- a Coordinator commits two checkpoints to ``s3://sinkcoord-test/table`` and a
  Table on another client reads them back (the objects under ``table/``);
- two storages race ``put_if_absent`` on one key: exactly one wins, each time;
- failures: an unreachable endpoint is a ``BackendIOError`` naming the
  operation and key, a refused key an ``InvalidKeyError`` before any request;
- without obstore the core package still imports and works, and the storage
  names the extra.

A server that cannot start FAILS these tests with the reason (never a skip).
``SINKCOORD_MOTO_PYTHON`` names another interpreter with moto[server]."""

import os
import select
import socket
import subprocess
import sys
import threading
import unittest
from typing import Any, Dict, List, Optional

import sink_coordinator as sc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
from test_storage_conformance import Table, run  # noqa: E402

#: The bucket the server is started with (testkit::moto::BUCKET).
BUCKET = "sinkcoord-test"


class Moto:
    """A moto S3 server on a loopback port; ``stop`` (or this process's exit,
    which closes its stdin) ends it."""

    def __init__(self) -> None:
        python = os.environ.get("SINKCOORD_MOTO_PYTHON") or os.path.join(REPO, "target", "moto-venv", "bin", "python")
        if not os.path.exists(python):
            raise AssertionError(
                f"moto is not installed ({python} is missing): run `make moto-setup` "
                "(tests/s3/setup.sh), which installs moto[server] from PyPI"
            )
        script = os.path.join(REPO, "tests", "s3", "moto_server.py")
        self.proc = subprocess.Popen([python, script, BUCKET], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        # The first line, within 120 s (a server that hangs fails the test).
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline().decode("utf-8", "replace") if ready else ""
        if not line.startswith("endpoint "):
            self.stop()
            why = f"unexpected output {line!r}" if ready else "no endpoint within 120 s"
            raise AssertionError(
                f"the moto S3 server did not start ({why}; exit status {self.proc.returncode}); see its stderr above"
            )
        #: ``http://127.0.0.1:PORT``.
        self.endpoint = line.split(" ", 1)[1].strip()

    def options(self) -> Dict[str, Any]:
        """``ObjectStoreStorage.from_url`` options that reach this server."""
        return {
            "endpoint": self.endpoint,
            "allow_http": True,
            "region": "us-east-1",
            "access_key_id": "testing",
            "secret_access_key": "testing",
        }

    def open(self, url: str) -> sc.ObjectStoreStorage:
        return sc.ObjectStoreStorage.from_url(url, **self.options())

    def stop(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ObjectStorageS3(unittest.TestCase):
    moto: Optional[Moto] = None
    tables = 0

    @classmethod
    def setUpClass(cls) -> None:
        try:
            import obstore  # noqa: F401
        except ImportError as e:
            raise AssertionError(f"obstore is not installed: install the package with its extra, {sc.object_storage.EXTRA} ({e})")
        cls.moto = Moto()

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.moto is not None:
            cls.moto.stop()

    def server(self) -> Moto:
        assert self.moto is not None
        return self.moto

    def fresh_url(self, name: str) -> str:
        """A table URL no other table of this run uses."""
        type(self).tables += 1
        return f"s3://{BUCKET}/{name}-{os.getpid()}-{self.tables}"

    def test_storage_conformance_on_s3(self) -> None:
        def fresh(name: str, _requires: List[str]) -> Table:
            url = self.fresh_url(f"conformance/{name}")
            # Every handle its own store (client), as separate processes would have.
            return Table(lambda: self.server().open(url))

        failures = run("ObjectStoreStorage (S3 on moto)", ["key-rules"], fresh)
        self.assertFalse(failures, f"{len(failures)} failed steps:\n" + "\n".join(failures))

    def test_storage_conformance_on_obstore_memory_store(self) -> None:
        from obstore.store import MemoryStore

        def fresh(_name: str, _requires: List[str]) -> Table:
            store = MemoryStore()
            return Table(lambda: sc.ObjectStoreStorage(store, "tables/t"))

        failures = run("ObjectStoreStorage (obstore MemoryStore)", ["key-rules"], fresh)
        self.assertFalse(failures, f"{len(failures)} failed steps:\n" + "\n".join(failures))

    def test_a_coordinator_commits_two_checkpoints_to_s3_and_a_table_reads_them(self) -> None:
        url = f"s3://{BUCKET}/table"
        storage = self.server().open(url)
        self.assertIsInstance(storage, sc.Storage)
        c = sc.Coordinator(sc.Config(parallelism=2, commit_user="job-1"), storage, sc.ManualClock(1000))
        c.start()
        writers = [sc.Writer(0), sc.Writer(1)]
        for cp in (1, 2):
            c.events([sc.WriterEvent(s, 0, w.report(cp, [f"{s}-{cp}.parquet".encode()])) for s, w in enumerate(writers)])
            c.checkpoint(cp)
            outcome = c.checkpoint_complete(cp)
            self.assertEqual(outcome.committed, [cp])
            assert outcome.committed_up_to is not None
            for w in writers:
                w.committed(outcome.committed_up_to)
        # Another client, another storage: the table is in the bucket.
        table = sc.Table(self.server().open(url))
        snaps = table.list_snapshots()
        self.assertEqual([s.identifier for s in snaps], [1, 2])
        self.assertEqual(snaps[0].committables, [(0, b"0-1.parquet"), (1, b"1-1.parquet")])
        self.assertEqual(snaps[1].committables, [(0, b"0-2.parquet"), (1, b"1-2.parquet")])
        self.assertEqual(table.latest_snapshot(), snaps[1])
        # The objects are under the URL's path, keys as a directory table has them.
        from obstore.store import S3Store

        o = self.server().options()
        bucket = S3Store(
            BUCKET,
            endpoint=o["endpoint"],
            region="us-east-1",
            access_key_id="testing",
            secret_access_key="testing",
            client_options={"allow_http": True},
        )
        paths = [m["path"] for m in bucket.list("table").collect()]
        self.assertTrue(paths and all(p.startswith("table/") for p in paths), paths)
        self.assertEqual(storage.list("snapshot/"), [p[len("table/") :] for p in sorted(paths) if p.startswith("table/snapshot/")])
        # A coordinator on a fresh storage sees the committed table (nothing twice).
        again = sc.Coordinator(sc.Config(parallelism=2, commit_user="job-1"), self.server().open(url), sc.ManualClock(2000))
        self.assertEqual(again.start().committed, [])
        self.assertEqual(len(table.list_snapshots()), 2)

    def test_two_storages_racing_put_if_absent_on_one_key_one_wins(self) -> None:
        url = self.fresh_url("race")
        racers = [self.server().open(url), self.server().open(url)]
        rounds = 20
        barrier = threading.Barrier(len(racers))
        results: List[List[bool]] = [[] for _ in racers]
        errors: List[str] = []

        def racer(r: int) -> None:
            try:
                for k in range(rounds):
                    barrier.wait()
                    results[r].append(racers[r].put_if_absent(f"snapshot/{k}", f"racer-{r}".encode()))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"racer {r}: {type(e).__name__}: {e}")
                barrier.abort()

        threads = [threading.Thread(target=racer, args=(r,)) for r in range(len(racers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        reader = self.server().open(url)
        for k in range(rounds):
            winners = [r for r in range(len(racers)) if results[r][k]]
            self.assertEqual(len(winners), 1, f"key {k}: winners {winners}")
            self.assertEqual(reader.get(f"snapshot/{k}"), f"racer-{winners[0]}".encode())
        self.assertEqual(len(reader.list("snapshot/")), rounds)

    def test_a_failing_store_is_a_backend_io_error_naming_the_op_and_key(self) -> None:
        url = f"s3://{BUCKET}/t"
        st = sc.ObjectStoreStorage.from_url(
            url,
            **{**self.server().options(), "endpoint": f"http://127.0.0.1:{closed_port()}"},
            retry_config={"max_retries": 0},
        )
        calls = [
            ("read", lambda: st.get("snapshot/1")),
            ("create", lambda: st.put_if_absent("snapshot/1", b"x")),
            ("write", lambda: st.put("hint/latest-snapshot", b"1")),
            ("delete", lambda: st.delete("tag/x")),
            ("list", lambda: st.list("snapshot/")),
        ]
        for op, call in calls:
            with self.assertRaises(sc.BackendIOError) as cm:
                call()
            self.assertNotIsInstance(cm.exception, sc.ValueTooLargeError)
            self.assertRegex(str(cm.exception), rf'^cannot {op} "[a-z/-]+1?[a-z/-]*" on {url}')
            self.assertIsNotNone(cm.exception.__cause__)
        # The key rules come first: no request is made for a refused key.
        for bad in ["", "/abs", "a//b", "../x", "a\\b", "a\0b", ".sinkcoord-tmp.1/x"]:
            with self.assertRaises(sc.InvalidKeyError):
                st.get(bad)
            with self.assertRaises(sc.InvalidKeyError):
                st.put_if_absent(bad, b"x")
        with self.assertRaises(sc.InvalidKeyError):
            st.list("a//b")

    def test_urls_and_prefixes(self) -> None:
        # A table path that breaks the key rules is refused when opened.
        with self.assertRaises(ValueError):
            self.server().open(f"s3://{BUCKET}/.sinkcoord-tmp.1/t")
        with self.assertRaises(ValueError):
            sc.ObjectStoreStorage.from_url(f"s3://{BUCKET}/t", no_such_option="x")
        # HTTP client settings among the store's options go to client_options.
        timed = sc.ObjectStoreStorage.from_url(f"s3://{BUCKET}/t", **self.server().options(), timeout="30s")
        self.assertIsNone(timed.get("snapshot/none"))
        from obstore.store import MemoryStore

        with self.assertRaises(sc.InvalidKeyError):
            sc.ObjectStoreStorage(MemoryStore(), "a/../b")
        # A store object plus a prefix: the same table as the URL's.
        shared = MemoryStore()
        sc.ObjectStoreStorage(shared, "t/").put("k", b"v")
        self.assertEqual(sc.ObjectStoreStorage(shared, "t").get("k"), b"v")
        self.assertEqual(sc.ObjectStoreStorage(shared).list(""), ["t/k"])
        # Two tables whose prefixes share text do not see each other.
        base = self.fresh_url("tables")
        one, two = self.server().open(base + "/a"), self.server().open(base + "/ab")
        self.assertTrue(one.put_if_absent("tag/x", b"a"))
        self.assertTrue(two.put_if_absent("tag/x", b"b"))
        self.assertEqual(one.list(""), ["tag/x"])
        self.assertEqual(two.get("tag/x"), b"b")
        self.assertEqual(self.server().open(base).list(""), ["a/tag/x", "ab/tag/x"])
        self.assertEqual(self.server().open(base).list("a/"), ["a/tag/x"])


class WithoutObstore(unittest.TestCase):
    def test_the_core_package_works_and_the_storage_names_the_extra(self) -> None:
        code = """
import sys
import sink_coordinator as sc
assert "obstore" not in sys.modules, "import sink_coordinator imported obstore"
sys.modules["obstore"] = None  # as if it were not installed
st = sc.MemoryStorage()
c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), st)
c.start()
w = sc.Writer(0)
c.event(0, 0, w.report(1, [b"f"]))
c.checkpoint(1)
assert c.checkpoint_complete(1).committed == [1]
try:
    sc.ObjectStoreStorage.from_url("s3://bucket/table")
except ImportError as e:
    print(e)
else:
    raise SystemExit("no ImportError")
"""
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("pip install 'sink-coordinator[s3]'", out.stdout)


if __name__ == "__main__":
    unittest.main()
