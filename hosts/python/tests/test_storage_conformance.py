"""The storage conformance suite of every host (tests/storage/cases.json,
tests/storage/README.md) against the installed package's ``DirectoryStorage``
(every case) and ``MemoryStorage`` (the cases without bounds or a file
system: it is a dict for tests and examples, with the key rules). Imported
and run by test_package.py (``make hosts-test``); every case runs even after
another fails, and the test fails with one line per failed step.
``SINKCOORD_STORAGE_CASES`` names another cases file (to check that a broken
expectation fails). A ``full-disk`` case runs on a tmpfs of
``options.full_disk_bytes`` mounted at the table root (root on Linux),
unmounted after it; where the mount fails the case is skipped with one line
saying why."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest
from typing import Any, Callable, Dict, List, Optional

import sink_coordinator as sc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CASES = os.environ.get("SINKCOORD_STORAGE_CASES") or os.path.join(REPO, "tests", "storage", "cases.json")
# The temporary-file prefix of every host's directory storage.
TMP_PREFIX = ".sinkcoord-tmp."


def value_of(v: Any) -> bytes:
    """A suite value: a string's UTF-8, or byte i of {size, seed} = (seed + i + (i >> 8)) & 0xff."""
    if isinstance(v, str):
        return v.encode("utf-8")
    size, seed = v["size"], v["seed"]
    # One period of 65,536 bytes, repeated: (i >> 8) & 0xff repeats with i & 0xffff.
    period = bytes((seed + i + (i >> 8)) & 0xFF for i in range(min(size, 65536)))
    reps, rest = divmod(size, 65536)
    return period * reps + period[:rest]


def show(b: Optional[bytes]) -> str:
    if b is None:
        return "missing"
    return repr(b.decode("utf-8", "replace")) if len(b) <= 40 else f"<{len(b)} bytes>"


def kind_of(e: BaseException) -> str:
    """A raised storage error as the suite names it."""
    if isinstance(e, sc.ValueTooLargeError):
        return "value-too-large"
    if isinstance(e, sc.InvalidKeyError):
        return "invalid-key"
    if isinstance(e, sc.BackendIOError):
        return "io"
    return f"non-storage {type(e).__name__}"


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.strip().splitlines())


def mount_tmpfs(directory: str, size: int) -> Optional[str]:
    """Mounts a tmpfs of ``size`` bytes at ``directory`` (the ``full-disk``
    capability: root on Linux); None, or why it cannot."""
    args = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", directory]
    try:
        done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    except OSError as e:
        return f"{' '.join(args)}: {e}"
    if done.returncode == 0:
        return None
    return f"{' '.join(args)}: {_one_line(done.stderr) or f'exit status {done.returncode}'}"


def unmount(directory: str) -> Optional[str]:
    """Detaches the tmpfs at ``directory`` (``umount -l``: even while a handle
    is open); None, or why it failed."""
    done = subprocess.run(["umount", "-l", directory], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return None
    return f"umount -l {directory}: {_one_line(done.stderr) or f'exit status {done.returncode}'}"


class Table:
    """A fresh table: ``open`` gives a handle; ``root`` is its directory (or
    None); ``skip`` says why a case cannot run on it after all (a
    ``full-disk`` case whose tmpfs cannot be mounted); ``mounted``: a tmpfs
    is mounted at ``root``."""

    def __init__(
        self,
        open_: Callable[[], Any],
        root: Optional[str] = None,
        base: Optional[str] = None,
        skip: Optional[str] = None,
        mounted: bool = False,
    ):
        self.open = open_
        self.root = root
        self.base = base
        self.skip = skip
        self.mounted = mounted

    def close(self) -> Optional[str]:
        """Unmounts and removes the table; None, or why unmounting failed."""
        why = unmount(self.root) if self.mounted and self.root else None
        # Never remove through a mount that is still attached.
        if self.base and why is None:
            shutil.rmtree(self.base, ignore_errors=True)
        return why


def with_pid(path: str) -> str:
    """A planted path with ``{pid}`` replaced by this process's id."""
    return path.replace("{pid}", str(os.getpid()))


def plant(root: str, s: Dict[str, Any]) -> None:
    outside = os.path.join(os.path.dirname(root), "outside")
    target = {"outside-file": "file", "outside-dir": "dir", "outside-missing": "missing"}.get(s.get("target", ""), "")
    if s["op"] == "plant-temp-links":
        for d in s["dirs"]:
            os.makedirs(os.path.join(root, d), exist_ok=True)
            for n in range(s["count"]):
                os.symlink(os.path.join(outside, target), os.path.join(root, d, f"{TMP_PREFIX}{os.getpid()}.{n}"))
        return
    path = os.path.join(root, with_pid(s["path"]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    kind = s["kind"]
    if kind == "symlink":
        os.symlink(os.path.join(outside, target), path)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "file":
        with open(path, "wb") as f:
            f.write(value_of(s["value"]))
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(s["size"])
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        raise ValueError(f"unknown kind {kind}")


def temp_files(d: str) -> List[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(d):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if name.startswith(TMP_PREFIX) and os.path.isfile(p) and not os.path.islink(p):
                found.append(p)
    return found


def race(table: Table, s: Dict[str, Any]) -> Optional[str]:
    racers, keys, prefix = s["racers"], s["keys"], s["prefix"]
    barrier = threading.Barrier(racers)
    results: List[List[bool]] = [[] for _ in range(racers)]
    errors: List[str] = []

    def racer(r: int) -> None:
        st = table.open()
        try:
            for k in range(keys):
                barrier.wait()
                results[r].append(st.put_if_absent(f"{prefix}{k}", f"racer-{r}".encode()))
        except Exception as e:  # noqa: BLE001 - reported as the step's failure
            errors.append(f"racer {r}: {type(e).__name__}: {e}")
            barrier.abort()

    threads = [threading.Thread(target=racer, args=(r,)) for r in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        return "; ".join(errors)
    st = table.open()
    for k in range(keys):
        winners = [r for r in range(racers) if results[r][k]]
        stored = st.get(f"{prefix}{k}")
        if len(winners) != 1 or stored != f"racer-{winners[0]}".encode():
            return f"key {k}: winners {winners}, stored {show(stored)}"
    return None


def step(table: Table, h: Dict[str, Any], s: Dict[str, Any], options: Dict[str, Any]) -> Optional[str]:
    """Runs one step; the failure's text, or None."""
    op, e = s["op"], s.get("expect", {})
    calls = {
        "get": lambda: h["st"].get(s["key"]),
        "put-if-absent": lambda: h["st"].put_if_absent(s["key"], value_of(s["value"])),
        "put": lambda: h["st"].put(s["key"], value_of(s["value"])),
        "delete": lambda: h["st"].delete(s["key"]),
        "list": lambda: h["st"].list(s["prefix"]),
    }
    if op in calls:
        try:
            got = calls[op]()
        except Exception as err:  # noqa: BLE001 - the suite names the kind
            if e.get("error") == kind_of(err):
                return None
            return f"got {kind_of(err)} error: {err}"
        if "error" in e:
            return f"expected a {e['error']} error, got {show(got) if op == 'get' else got!r}"
        if op == "get":
            want = None if e.get("missing") else value_of(e["value"])
            return None if got == want else f"expected {show(want)}, got {show(got)}"
        if op == "put-if-absent":
            return None if got is e["created"] else f"expected created={e['created']}, got created={got!r}"
        if op == "list":
            return None if got == e["keys"] else f"expected {e['keys']}, got {got}"
        return None
    if op == "reopen":
        h["st"] = table.open()
        return None
    if op == "race":
        return race(table, s)
    if op in ("plant", "plant-temp-links"):
        assert table.root is not None
        plant(table.root, s)
        return None
    if op in ("check-outside", "check-no-temp") and table.root is None:
        return None
    if op == "check-outside":
        outside = os.path.join(os.path.dirname(table.root), "outside")
        with open(os.path.join(outside, "file"), encoding="utf-8") as f:
            content = f.read()
        entries = len(os.listdir(os.path.join(outside, "dir")))
        created = os.path.lexists(os.path.join(outside, "missing"))
        if content == options["outside_file_content"] and entries == 0 and not created:
            return None
        return f"outside the table changed: file {content!r}, {entries} entries in dir, missing created: {created}"
    if op == "check-temp":
        assert table.root is not None
        for field, want in (("present", True), ("absent", False)):
            for p in e.get(field, []):
                if os.path.lexists(os.path.join(table.root, with_pid(p))) != want:
                    return f"{with_pid(p)} should be {field}"
        return None
    if op == "check-no-temp":
        found = temp_files(table.root)
        return f"temporary files left: {found}" if found else None
    return f"unknown op {op}"


def run(name: str, capabilities: List[str], fresh: Callable[[str, List[str]], Table]) -> List[str]:
    """Runs every case the backend can; one line per failed step.
    ``fresh(name, requires)`` makes a case's table; a table with ``skip``
    counts as skipped, with one line saying why."""
    with open(CASES, encoding="utf-8") as f:
        suite = json.load(f)
    assert suite["version"] == 1, "cases.json version"
    failures: List[str] = []
    passed = skipped = 0
    for case in suite["cases"]:
        if not all(r in capabilities for r in case.get("requires", [])):
            skipped += 1
            continue
        table = fresh(case["name"], case.get("requires", []))
        if table.skip:
            print(f"storage conformance, {case['name']}: skipped: {table.skip}")
            skipped += 1
            table.close()
            continue
        try:
            h = {"st": table.open()}
            before = len(failures)
            for i, s in enumerate(case["steps"]):
                try:
                    why = step(table, h, s, suite["options"])
                except Exception as err:  # noqa: BLE001 - a failed step, not a crashed suite
                    why = f"raised {type(err).__name__}: {err}"
                if why:
                    at = json.dumps(s.get("key", s.get("prefix", "")))
                    at = at if len(at) <= 60 else at[:60] + "..."
                    failures.append(f"{name}: {case['name']} step {i} ({s['op']} {at}): {why}")
            if len(failures) == before:
                passed += 1
        finally:
            why = table.close()
            if why:
                failures.append(f"{name}: {case['name']}: {why}")
    print(f"storage conformance, {name}: {passed} passed, {len(failures)} failed steps, {skipped} skipped")
    assert passed > 0, f"{name}: no case ran"
    return failures


def max_value_bytes() -> int:
    with open(CASES, encoding="utf-8") as f:
        return json.load(f)["options"]["max_value_bytes"]


def directory_table(name: str, requires: List[str]) -> Table:
    with open(CASES, encoding="utf-8") as f:
        options = json.load(f)["options"]
    base = tempfile.mkdtemp(prefix=f"sinkcoord-conformance-{name}-")
    os.makedirs(os.path.join(base, "outside", "dir"))
    with open(os.path.join(base, "outside", "file"), "w", encoding="utf-8") as f:
        f.write(options["outside_file_content"])
    root = os.path.join(base, "table")
    os.mkdir(root)
    bound = options["max_value_bytes"]
    # full-disk: a small tmpfs at the root, before the storage is opened.
    mount_error = mount_tmpfs(root, options["full_disk_bytes"]) if "full-disk" in requires else None
    return Table(
        lambda: sc.DirectoryStorage(root, max_value_bytes=bound),
        root,
        base,
        skip=f"cannot mount a tmpfs ({mount_error})" if mount_error else None,
        mounted="full-disk" in requires and mount_error is None,
    )


class StorageConformance(unittest.TestCase):
    def test_directory_storage(self) -> None:
        failures = run("DirectoryStorage", ["key-rules", "bounded", "filesystem", "full-disk"], directory_table)
        self.assertFalse(failures, f"{len(failures)} failed steps:\n" + "\n".join(failures))

    def test_memory_storage(self) -> None:
        def fresh(_name: str, _requires: List[str]) -> Table:
            st = sc.MemoryStorage()
            return Table(lambda: st)

        failures = run("MemoryStorage", ["key-rules"], fresh)
        self.assertFalse(failures, f"{len(failures)} failed steps:\n" + "\n".join(failures))


if __name__ == "__main__":
    unittest.main()
