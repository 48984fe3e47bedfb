"""The installed package against a hostile table directory and a stuck
storage (issue 26), imported and run by test_package.py: short writes and a
full disk publish nothing and leave no temporary file; a planted link at a
temporary name or a key is never followed; FIFOs, devices and directories at
a key are refused at once; a value above ``max_value_bytes`` (a sparse file
too) is refused before it is read; a call past ``call_deadline_ms`` traps;
``max_memory_bytes`` caps the guest. Each case failed before the fix (figures
in docs/hosts/python.md, "DirectoryStorage")."""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import sink_coordinator as sc

# One 600 KiB create-once under a limit that cuts it short: what
# put_if_absent said and which files it left (JSON).
TORN = """
import json, os, signal, sys
import sink_coordinator as sc
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write, not a killed process
s = sc.DirectoryStorage(sys.argv[1])
try:
    result = s.put_if_absent("snapshot/1", b"x" * (600 << 10))
except sc.BackendError as e:
    result = type(e).__name__ + ": " + str(e)
d = os.path.join(sys.argv[1], "snapshot")
print(json.dumps({"result": result, "files": sorted([f, os.path.getsize(os.path.join(d, f))] for f in os.listdir(d))}))
"""

# FIFO, device and directory at keys: what get and put_if_absent say (JSON).
SPECIAL = """
import json, os, subprocess, sys
import sink_coordinator as sc
root = sys.argv[1]
s = sc.DirectoryStorage(root)
os.makedirs(os.path.join(root, "snapshot", "3"))
os.mkfifo(os.path.join(root, "snapshot", "1"))
device = subprocess.run(["mknod", os.path.join(root, "snapshot", "2"), "c", "1", "5"], capture_output=True).returncode == 0
out = {"device": device}
for key in ["snapshot/1", "snapshot/2", "snapshot/3"] if device else ["snapshot/1", "snapshot/3"]:
    r = []
    for f in (lambda: s.get(key), lambda: s.put_if_absent(key, b"v")):
        try:
            r.append(repr(f()))
        except sc.BackendError as e:
            r.append(type(e).__name__ + ": " + str(e))
    out[key] = r
print(json.dumps(out))
"""

# One checkpoint through `c`, in the child scripts: what it returned or raised, as `r`.
ONE_CHECKPOINT = """
try:
    c.start()
    c.event(0, 0, sc.Entry(1, [b"a"]))
    c.checkpoint(1)
    r = repr(c.checkpoint_complete(1))
except sc.CoordinatorError as e:
    r = type(e).__name__ + ": " + str(e)
"""

# A coordinator over a table with a FIFO at its hint (JSON: what it raised).
FIFO_HINT = """
import json, os, sys
import sink_coordinator as sc
os.makedirs(os.path.join(sys.argv[1], "hint"))
os.mkfifo(os.path.join(sys.argv[1], "hint", "latest-snapshot"))
c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), sc.DirectoryStorage(sys.argv[1]))
""" + ONE_CHECKPOINT + """print(json.dumps(r))
"""


def child(code: str, args: "list[str]", prefix: "list[str] | None" = None, env: "dict[str, str] | None" = None, timeout: float = 30):
    """Runs ``code`` with this interpreter (the installed package) through
    the command ``prefix``; its JSON output. A child that hangs fails."""
    cmd = (prefix or []) + [sys.executable, "-c", code] + args
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the child did not finish within {timeout} s") from None
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    return json.loads(out.stdout)


def sparse(path: str, size: int) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)


# A coordinator whose storage's get (or put) blocks forever, as on a dead
# network, under a 300 ms deadline (JSON: what it raised, after how long).
STUCK = """
import json, sys, threading, time
import sink_coordinator as sc
op = sys.argv[1]
class Stuck(sc.MemoryStorage):
    def get(self, key):
        if op == "get":
            threading.Event().wait()
        return super().get(key)
    def put_if_absent(self, key, value):
        if op == "put_if_absent":
            threading.Event().wait()
        return super().put_if_absent(key, value)
rt = sc.Runtime(call_deadline_ms=300)
c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), Stuck(), runtime=rt)
t0 = time.monotonic()
""" + ONE_CHECKPOINT + """out = {"result": r, "seconds": time.monotonic() - t0, "discarded": c.discarded}
# The handle is gone; a new one over a storage that answers still commits.
d = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), sc.MemoryStorage(), runtime=rt)
d.start()
d.event(0, 0, sc.Entry(1, [b"a"]))
d.checkpoint(1)
out["after"] = [int(i) for i in d.checkpoint_complete(1).committed]
print(json.dumps(out))
"""


class Hostile(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sink-coordinator-hostile-")
        self.root = os.path.join(self.dir, "t")

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_short_write_publishes_nothing_and_leaves_no_temporary_file(self) -> None:
        # ulimit -f counts 512-byte blocks in sh: 424 KiB, so the first
        # write(2) stops at 434,176 bytes and the next is EFBIG. Before the
        # fix the error came, but a 434,176-byte temporary file stayed.
        out = child(TORN, [self.root], prefix=["sh", "-c", 'ulimit -f 848 && exec "$@"', "sh"])
        self.assertRegex(out["result"], r'^BackendIOError: cannot create "snapshot/1": .*File too large')
        self.assertEqual(out["files"], [])

    def test_a_full_disk_publishes_nothing_and_leaves_no_temporary_file(self) -> None:
        # A 1 MiB tmpfs of our own (root, or a user and mount namespace).
        if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
            self.skipTest("unshare -rm is not available")
        mount = 'mount -t tmpfs -o size=1m tmpfs "$MNT" && head -c 614400 /dev/zero > "$MNT/fill" && exec "$@"'
        out = child(TORN, [self.root], prefix=["unshare", "-rm", "sh", "-c", mount, "sh"], env={"MNT": self.dir})
        self.assertRegex(out["result"], r'^BackendIOError: cannot create "snapshot/1": .*No space left')
        self.assertEqual(out["files"], [])

    def test_a_link_planted_at_a_temporary_name_is_not_followed(self) -> None:
        # Before the fix: open(tmp, "wb") followed the link at
        # .sinkcoord-tmp.<pid>.0 and wrote the snapshot into the victim.
        s = sc.DirectoryStorage(self.root)
        victim = os.path.join(self.dir, "victim")
        with open(victim, "w") as f:
            f.write("keep")
        os.makedirs(os.path.join(self.root, "snapshot"))
        for n in range(200):
            os.symlink(victim, os.path.join(self.root, "snapshot", f"{sc.storage.TMP_PREFIX}{os.getpid()}.{n}"))
        self.assertTrue(s.put_if_absent("snapshot/1", b"one"))
        s.put("snapshot/2", b"two")
        with open(victim) as f:
            self.assertEqual(f.read(), "keep")
        self.assertEqual(s.list(""), ["snapshot/1", "snapshot/2"])
        self.assertEqual(s.get("snapshot/1"), b"one")

    def test_a_link_at_a_key_or_its_directory_is_refused_by_every_call(self) -> None:
        s = sc.DirectoryStorage(self.root)
        outside = os.path.join(self.dir, "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "a"), "w") as f:
            f.write("outside")
        os.symlink(outside, os.path.join(self.root, "tag"))
        os.makedirs(os.path.join(self.root, "snapshot"))
        os.symlink(os.path.join(outside, "a"), os.path.join(self.root, "snapshot", "1"))
        os.symlink("/dev/zero", os.path.join(self.root, "snapshot", "2"))
        for key in ["tag/a", "tag/b", "snapshot/1", "snapshot/2"]:
            for call in (
                lambda: s.get(key),
                lambda: s.put_if_absent(key, b"x"),
                lambda: s.put(key, b"x"),
                lambda: s.delete(key),
            ):
                with self.assertRaisesRegex(sc.InvalidKeyError, "symbolic link", msg=key):
                    call()
        for prefix in ["tag/", "snapshot/", ""]:
            with self.assertRaises(sc.InvalidKeyError, msg=prefix):
                s.list(prefix)
        self.assertEqual(os.listdir(outside), ["a"])
        with open(os.path.join(outside, "a")) as f:
            self.assertEqual(f.read(), "outside")

    def test_a_fifo_a_device_or_a_directory_at_a_key_is_refused_at_once(self) -> None:
        # In a child with a timeout: before the fix get() of a FIFO never returned.
        out = child(SPECIAL, [self.root], timeout=15)
        kinds = {"snapshot/1": "FIFO", "snapshot/2": "character device", "snapshot/3": "directory"}
        for key, kind in kinds.items():
            if key == "snapshot/2" and not out["device"]:
                continue
            for r in out[key]:
                self.assertRegex(r, rf'^InvalidKeyError: key "{key}".*is not a regular file \({kind}\)')

    def test_a_coordinator_over_a_fifo_at_its_hint_fails_with_a_storage_error(self) -> None:
        out = child(FIFO_HINT, [self.root], timeout=30)
        self.assertRegex(out, r"^StorageError: .*hint/latest-snapshot.*not a regular file \(FIFO\)")

    def test_a_value_above_the_bound_is_refused_before_it_is_read(self) -> None:
        s = sc.DirectoryStorage(self.root)
        self.assertEqual(s.max_value_bytes, sc.DEFAULT_MAX_VALUE_BYTES)
        self.assertEqual(sc.DEFAULT_MAX_VALUE_BYTES, 2 << 30)
        sparse(os.path.join(self.root, "snapshot", "1"), 3 << 30)
        sparse(os.path.join(self.root, "snapshot", "2"), 3 << 29)
        sparse(os.path.join(self.root, "hint", "latest-snapshot"), 1 << 30)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.monotonic()
        for key, size, limit in [
            ("snapshot/1", 3 << 30, 2 << 30),
            ("hint/latest-snapshot", 1 << 30, sc.MAX_HINT_BYTES),
        ]:
            with self.assertRaises(sc.ValueTooLargeError, msg=key) as cm:
                s.get(key)
            e = cm.exception
            self.assertIsInstance(e, sc.BackendIOError)
            self.assertEqual(e.kind, "io")
            self.assertEqual((e.key, e.size, e.limit), (key, size, limit))
            self.assertRegex(str(e), rf'"{key}" holds {size} bytes, more than .* \({limit} bytes\)')
        with self.assertRaises(sc.ValueTooLargeError):
            sc.DirectoryStorage(self.root, max_value_bytes=1 << 30).get("snapshot/2")
        self.assertLess(time.monotonic() - t0, 2)
        # ru_maxrss is in KiB on Linux: nothing near a file's size was read.
        self.assertLess(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, 256 << 10)

    def test_max_value_bytes_bounds_writes_and_reads_to_the_byte(self) -> None:
        s = sc.DirectoryStorage(self.root, max_value_bytes=8)
        self.assertTrue(s.put_if_absent("snapshot/1", b"12345678"))
        self.assertEqual(s.get("snapshot/1"), b"12345678")
        with self.assertRaises(sc.ValueTooLargeError) as cm:
            s.put_if_absent("snapshot/2", b"123456789")
        self.assertEqual((cm.exception.size, cm.exception.limit), (9, 8))
        with self.assertRaises(sc.ValueTooLargeError):
            s.put("tag/a", b"123456789")
        self.assertEqual(s.list(""), ["snapshot/1"])
        self.assertEqual(os.listdir(os.path.join(self.root, "snapshot")), ["1"])
        # A file another writer made larger is refused on read.
        with open(os.path.join(self.root, "snapshot", "1"), "wb") as f:
            f.write(b"123456789")
        with self.assertRaises(sc.ValueTooLargeError):
            s.get("snapshot/1")
        with open(os.path.join(self.root, "snapshot", "empty"), "wb"):
            pass
        self.assertEqual(s.get("snapshot/empty"), b"")
        for bad in (-1, 1.5, "8", True):
            with self.assertRaises(ValueError, msg=repr(bad)):
                sc.DirectoryStorage(self.root, max_value_bytes=bad)  # type: ignore[arg-type]

    def test_opening_a_table_removes_dead_writers_temporary_files(self) -> None:
        snapshots = os.path.join(self.root, "snapshot")
        os.makedirs(snapshots)
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
        names = [f".sinkcoord-tmp.{dead}.7", f".sinkcoord-tmp.{os.getpid()}.7", ".sinkcoord-tmp.1.7", ".sinkcoord-tmp.x.7"]
        for name in names:
            with open(os.path.join(snapshots, name), "w") as f:
                f.write("partial")
        s = sc.DirectoryStorage(self.root)
        self.assertEqual(s.removed_temp_files, [f"snapshot/.sinkcoord-tmp.{dead}.7"])
        self.assertEqual(sorted(os.listdir(snapshots)), sorted(names[1:]))
        self.assertEqual(s.list(""), [])


class Guards(unittest.TestCase):
    """The Rust host's wasmtime guards in wasmtime-py: a call deadline and a
    memory ceiling."""

    def test_a_call_past_its_deadline_traps_and_names_the_deadline(self) -> None:
        class Slow(sc.MemoryStorage):
            def get(self, key: str) -> "bytes | None":
                time.sleep(0.5)
                return super().get(key)

        rt = sc.Runtime(call_deadline_ms=200)
        self.assertEqual(rt.call_deadline_ms, 200)
        c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), Slow(), runtime=rt)
        c.start()
        t0 = time.monotonic()
        with self.assertRaisesRegex(sc.TrapError, "exceeded its deadline of 200 ms"):
            c.event(0, 0, sc.Entry(1, [b"a"]))
        self.assertLess(time.monotonic() - t0, 2)
        self.assertTrue(c.discarded)
        # The default runtime has the Rust host's default deadline, and a
        # fast storage never reaches it.
        self.assertEqual(sc.Runtime.default().call_deadline_ms, 435_000)
        d = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), sc.MemoryStorage())
        d.start()
        d.event(0, 0, sc.Entry(1, [b"a"]))
        d.checkpoint(1)
        self.assertEqual(d.checkpoint_complete(1).committed, [1])
        for bad in (0, -5, 1.5, True):
            with self.assertRaises(ValueError, msg=repr(bad)):
                sc.Runtime(call_deadline_ms=bad)  # type: ignore[arg-type]

    def test_a_storage_call_that_never_returns_is_bounded_by_the_deadline(self) -> None:
        # In a child with a timeout: before the fix the call never returned
        # (epoch interruption cannot stop host code). The stuck thread is a
        # daemon: the child exits although its get is still blocked.
        for op, key in [("get", "hint/latest-snapshot"), ("put_if_absent", "snapshot/00000000000000000001")]:
            out = child(STUCK, [op], timeout=20)
            self.assertRegex(
                out["result"],
                rf"^TrapError: trap: guest trapped in coordinator#\[method\]coordinator\.[a-z-]+: the call exceeded"
                rf' its deadline of 300 ms: storage {op} of key "{key}" had not returned \(it is left running on a daemon thread\)$',
            )
            self.assertLess(out["seconds"], 3, op)
            self.assertGreaterEqual(out["seconds"], 0.25, op)
            self.assertTrue(out["discarded"])
            self.assertEqual(out["after"], [1])

    def test_storage_calls_run_on_the_storage_thread_only_when_bounded(self) -> None:
        seen: "list[str]" = []

        class Watched(sc.MemoryStorage):
            def get(self, key: str) -> "bytes | None":
                seen.append(threading.current_thread().name)
                return super().get(key)

            def put_if_absent(self, key: str, value: bytes) -> bool:
                seen.append(threading.current_thread().name)
                return super().put_if_absent(key, value)

        for rt, storage, thread in [
            (sc.Runtime.default(), Watched(), "sink-coordinator-storage"),
            (sc.Runtime(bound_storage_calls=False), Watched(), threading.current_thread().name),
            (sc.Runtime(call_deadline_ms=None), Watched(), threading.current_thread().name),
        ]:
            seen.clear()
            c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), storage, runtime=rt)
            c.start()
            c.event(0, 0, sc.Entry(1, [b"a"]))
            c.checkpoint(1)
            self.assertEqual(c.checkpoint_complete(1).committed, [1])
            self.assertTrue(seen)
            self.assertEqual(set(seen), {thread})
        self.assertTrue(sc.Runtime.default().bound_storage_calls)
        # A storage error raised on the storage thread is still a StorageError.

        class Failing(sc.MemoryStorage):
            def put_if_absent(self, key: str, value: bytes) -> bool:
                raise sc.BackendIOError("the network is down")

        c = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), Failing())
        c.start()
        c.event(0, 0, sc.Entry(1, [b"a"]))
        c.checkpoint(1)
        with self.assertRaisesRegex(sc.StorageError, "the network is down"):
            c.checkpoint_complete(1)

    def test_max_memory_bytes_caps_the_guest(self) -> None:
        # 4 MiB of linear memory holds a 1 MiB entry, not a 6 MiB one (the
        # guest's allocation fails: a trap); the default (4 GiB) holds both.
        small = sc.Coordinator(
            sc.Config(parallelism=1, commit_user="job-1"), sc.MemoryStorage(), runtime=sc.Runtime(max_memory_bytes=4 << 20)
        )
        small.start()
        small.event(0, 0, sc.Entry(1, [b"x" * (1 << 20)]))
        with self.assertRaises(sc.TrapError):
            small.event(0, 0, sc.Entry(2, [b"x" * (6 << 20)]))
        big = sc.Coordinator(sc.Config(parallelism=1, commit_user="job-1"), sc.MemoryStorage())
        big.start()
        big.event(0, 0, sc.Entry(1, [b"x" * (1 << 20)]))
        big.event(0, 0, sc.Entry(2, [b"x" * (6 << 20)]))
        for bad in (1 << 20, (4 << 30) + 1):
            with self.assertRaises(ValueError, msg=repr(bad)):
                sc.Runtime(max_memory_bytes=bad)
