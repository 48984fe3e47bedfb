"""Paimon commit benchmark (issue 22, item 6): the core's commits against pypaimon's own
commit of the same commit messages, on the same tables, on a local directory and on S3
(moto's S3 API server), after histories of 10, 1,000 and 10,000 snapshots.

Run by tests/paimon/bench.sh, which builds the Rust driver (paimon-writer's example
`paimon-bench`, PAIMON_BENCH_BIN) and sets up pypaimon's and moto's environments. Steps:

1. each history is committed once through the core (in memory, then written to a
   directory) for each format, as the snapshots of another commit user;
2. each measured side gets its own copy of that directory, so every side commits on the
   same bytes: the core on the Paimon format and on the native one, pypaimon on the
   Paimon one (its FileStoreCommit through a stream write builder, with commit messages
   built from the same data files' metadata: commits need no data file to exist);
3. on S3 the Paimon table is uploaded once per length and pypaimon commits on it; with
   PAIMON_BENCH_S3_BIN (testkit's example `paimon_bench_s3`: the host's object-store
   storage, which needs wasmtime's crate) the core commits there first, then pypaimon.

Prints markdown tables: storage calls and bytes per commit (counted, deterministic), then
the commit times (medians; wall clock, so they move with the machine's load).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUCKET = "bench"  # one bucket per history length: bench-10, bench-1000, ...
# moto accepts any credentials; these are the storage tests' (testkit/src/moto.rs).
S3_OPTS = {"fs.s3.accessKeyId": "testing", "fs.s3.accessKeySecret": "testing",
           "fs.s3.region": "us-east-1"}


def rust(*args):
    p = subprocess.run([os.environ["PAIMON_BENCH_BIN"], *map(str, args)],
                       capture_output=True, text=True)
    assert p.returncode == 0, (args, p.stdout, p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def copy_table(src, dst):
    """A copy of a history for one side: hard links (a 10,000-snapshot Paimon history is
    450 MB in 40,000 files, too much to copy per side and run), except the hints, which pypaimon may overwrite in place (its
    local rename refuses an existing name, then it rewrites the file). Every other write
    of both sides makes a new name, so the history itself is never changed."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copytree(src, dst, copy_function=os.link)
    for hint in ("snapshot/LATEST", "snapshot/EARLIEST", "hint/latest-snapshot"):
        p = os.path.join(dst, hint)
        if os.path.exists(p):
            os.unlink(p)
            shutil.copyfile(os.path.join(src, hint), p)


# ---- pypaimon ---------------------------------------------------------------------------

def commit_message(f):
    """pypaimon's commit message for one of the Rust side's data files (the same fields
    the core writes into its manifest entry: no stats, level 0, file source APPEND)."""
    from pypaimon.data.timestamp import Timestamp
    from pypaimon.manifest.schema.data_file_meta import DataFileMeta
    from pypaimon.manifest.schema.simple_stats import SimpleStats
    from pypaimon.table.row.generic_row import GenericRow
    from pypaimon.write.commit_message import CommitMessage
    empty = GenericRow([], [])
    meta = DataFileMeta.create(
        file_name=f["file_name"], file_size=f["file_size"], row_count=f["row_count"],
        min_key=empty, max_key=empty, key_stats=SimpleStats.empty_stats(),
        value_stats=SimpleStats.empty_stats(), min_sequence_number=f["min_seq"],
        max_sequence_number=f["max_seq"], schema_id=0, level=0, extra_files=[],
        creation_time=Timestamp.from_epoch_millis(f["creation_time_millis"]),
        delete_row_count=0, file_source=0, value_stats_cols=[])
    return CommitMessage(partition=(), bucket=0, new_files=[meta])


class CountingStream:
    """A pypaimon stream whose bytes are counted."""

    def __init__(self, stream, counts):
        self._s, self._c = stream, counts

    def read(self, *a):
        b = self._s.read(*a)
        self._c["read"] += len(b)
        return b

    def write(self, b):
        self._c["written"] += len(b)
        return self._s.write(b)

    def __enter__(self):
        self._s.__enter__()
        return self

    def __exit__(self, *a):
        return self._s.__exit__(*a)

    def __getattr__(self, name):
        return getattr(self._s, name)


# pypaimon's FileIO primitives, as the kinds of our Storage calls (on S3 each is at least
# one request: an exists or a status is a HEAD, a rename a copy and a delete).
FILE_IO_KINDS = {"new_input_stream": "get", "new_output_stream": "put", "exists": "head",
                 "get_file_status": "head", "is_dir": "head", "list_status": "list",
                 "rename": "rename", "delete": "delete", "mkdirs": "mkdirs"}


def count_file_io(file_io, counts):
    """Counts the calls of a table's FileIO instance (the commit's managers share it)."""
    for name, kind in FILE_IO_KINDS.items():
        fn = getattr(file_io, name)

        def wrapped(*a, _fn=fn, _kind=kind, **kw):
            counts[_kind] = counts.get(_kind, 0) + 1
            out = _fn(*a, **kw)
            if _kind in ("get", "put"):
                return CountingStream(out, counts)
            return out
        setattr(file_io, name, wrapped)


def pypaimon_commits(warehouse, options, table, files, snapshots_before):
    """pypaimon's commits of `files` (one commit each, checkpoints 1..) on db.<table>,
    which holds `snapshots_before` snapshots: their times (ns) and, where its FileIO is
    pyarrow's (S3), its calls per commit."""
    from pypaimon import CatalogFactory
    cat = CatalogFactory.create({"warehouse": warehouse, **options})
    tbl = cat.get_table(f"db.{table}")
    counts = {"read": 0, "written": 0}
    # Local tables write the snapshot with open() inside try_to_write_atomic, past the
    # FileIO methods, so only the S3 FileIO's calls are all seen.
    counted = type(tbl.file_io).__name__ == "PyArrowFileIO"
    if counted:
        count_file_io(tbl.file_io, counts)
    # A fixed commit user, as ours: pypaimon would draw a UUID.
    wb = tbl.new_stream_write_builder()._with_commit_user("bench-pypaimon")
    commit = wb.new_commit()
    messages = [commit_message(f) for f in files]
    out = []
    for cp, m in enumerate(messages, start=1):
        before = dict(counts)
        t = time.perf_counter_ns()
        commit.commit([m], cp)
        ns = time.perf_counter_ns() - t
        c = {k: counts.get(k, 0) - before.get(k, 0) for k in counts}
        out.append({"ns": ns, "counts": c if counted else None})
    commit.close()
    # Each commit went on top of the history (pypaimon read the core's lists and wrote
    # base + delta): the snapshot ids and the record count run on from the history's.
    latest = tbl.snapshot_manager().get_latest_snapshot()
    rows = files[0]["row_count"]
    assert latest.id == snapshots_before + len(files), (latest.id, snapshots_before)
    assert latest.total_record_count == latest.id * rows, (latest.total_record_count, latest.id)
    return out


# ---- S3 ---------------------------------------------------------------------------------

def moto_python():
    return os.environ.get("SINKCOORD_MOTO_PYTHON", os.path.join(ROOT, "target/moto-venv/bin/python"))


class Moto:
    """moto's S3 API server (tests/s3/moto_server.py, installed by tests/s3/setup.sh)."""

    def __init__(self, buckets):
        self.p = subprocess.Popen([moto_python(), os.path.join(ROOT, "tests/s3/moto_server.py"), *buckets],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        assert line.startswith("endpoint "), f"moto did not start: {line!r}"
        self.endpoint = line.split()[1]

    def upload(self, src, bucket, prefix):
        """Uploads a history: every snapshot, the hints and the schema, and the manifest
        lists and manifests the latest snapshot reaches (what a commit reads; the older
        snapshots' lists and manifests, which neither side's commit reads, stay local:
        uploading 40,000 objects to moto, one request at a time, would take minutes).
        boto3 is in moto's environment, not pypaimon's: this script uploads from there."""
        keys = []
        for d in ("snapshot", "schema", "hint"):
            if os.path.isdir(os.path.join(src, d)):
                keys.extend(f"{d}/{n}" for n in sorted(os.listdir(os.path.join(src, d))))
        latest = os.path.join(src, "snapshot", "LATEST")
        if os.path.exists(latest):
            import fastavro  # pypaimon's, for the latest lists
            with open(latest) as fh:
                snap_key = f"snapshot/snapshot-{fh.read().strip()}"
            with open(os.path.join(src, snap_key)) as fh:
                snap = json.load(fh)
            for lst in (snap["baseManifestList"], snap["deltaManifestList"]):
                keys.append(f"manifest/{lst}")
                with open(os.path.join(src, "manifest", lst), "rb") as fh:
                    keys.extend(f"manifest/{r['_FILE_NAME']}" for r in fastavro.reader(fh))
        req = json.dumps({"endpoint": self.endpoint, "src": src, "bucket": bucket,
                          "prefix": prefix, "keys": keys})
        p = subprocess.run([moto_python(), os.path.abspath(__file__), "--upload"], input=req,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        return len(keys)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def upload_main():
    """`bench.py --upload` (in moto's environment): puts the keys of the request on stdin."""
    import boto3
    import botocore.config
    r = json.load(sys.stdin)
    s3 = boto3.client("s3", endpoint_url=r["endpoint"], aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1",
                      config=botocore.config.Config(max_pool_connections=8))

    def put(k):
        with open(os.path.join(r["src"], k), "rb") as fh:
            s3.put_object(Bucket=r["bucket"], Key=f"{r['prefix']}/{k}", Body=fh.read())
    # moto serves one request at a time; four clients hide the client's own time.
    with ThreadPoolExecutor(4) as ex:
        list(ex.map(put, r["keys"]))


def rust_s3(fmt, url, endpoint, commits, history):
    p = subprocess.run([os.environ["PAIMON_BENCH_S3_BIN"], "--format", fmt, "--url", url,
                        "--endpoint", endpoint, "--commits", str(commits), "--history", str(history)],
                       capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout, p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---- the run ----------------------------------------------------------------------------

def med_ms(runs):
    """The median of the runs' medians (each run: one side's commits on one table copy)."""
    return statistics.median(statistics.median(c["ns"] for c in r["commits"]) for r in runs) / 1e6


def med_counts(run, key):
    return statistics.median(c["counts"][key] for c in run)


def add(res, key, run):
    """Keeps `run` under `key`; the core's counts must be the same in every run."""
    runs = res.setdefault(key, [])
    # (The fsynced runs share one table, each on top of the one before.)
    if key[0] == "core" and key[2] != "dir-fsync" and runs:
        first = [c["counts"] for c in runs[0]["commits"]]
        assert first == [c["counts"] for c in run["commits"]], f"{key}: counts differ between runs"
    runs.append(run)


def measure_all(a, work):
    lengths = [int(n) for n in a.lengths.split(",")]
    # The histories and the unsynced local tables live in memory (tmpfs, `--shm`): on
    # this machine's shared disk the other work's fsyncs stall even unsynced creates and
    # renames (the journal) by milliseconds, which buried the commits' own cost, and
    # writing then deleting 50,000 history files per length took minutes. Only the
    # fsynced tables, which must reach the disk, are in the work directory.
    shm = tempfile.mkdtemp(prefix="paimon-bench-", dir=a.shm) if a.shm else os.path.join(work, "shm")
    try:
        return lengths, measure_in(a, work, shm, lengths)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def measure_in(a, work, shm, lengths):
    # Deleting a 40,000-file table from this machine's disk took minutes under load: `rm`
    # does it while the S3 phase waits on moto (a process, not a thread, so that it takes
    # no turn of this interpreter's lock from pypaimon), and the run ends when it is done.
    deleting = []
    try:
        return measure_with(a, work, shm, lengths, deleting)
    finally:
        for p in deleting:
            p.wait()


def measure_with(a, work, shm, lengths, deleting):
    hist, res, built = os.path.join(shm, "history"), {}, {}
    for fmt in ("paimon", "native"):
        for n in lengths:
            built[(fmt, n)] = rust("history", "--format", fmt, "--snapshots", n,
                                   "--out", os.path.join(hist, f"{fmt}-{n}"))
    log(f"histories built: {sorted((k, v['files']) for k, v in built.items())}")
    for n in lengths:
        # One copy on the disk per table for the fsynced runs, synced before they start
        # (so the kernel's writeback of it does not land in the measured commits). Run r
        # commits as user bench-r on top of the runs before it: the history grows by
        # `commits` per run, which a flat commit does not notice.
        for p in deleting:
            p.wait()  # the last length's table first: its I/O would fall into these runs
        disk = {}
        for fmt in ("paimon", "native"):
            disk[fmt] = os.path.join(work, "dir-fsync", f"{fmt}-{n}")
            shutil.copytree(os.path.join(hist, f"{fmt}-{n}"), disk[fmt])
        os.sync()
        for run in range(a.runs):
            for fmt in ("paimon", "native"):
                src = os.path.join(hist, f"{fmt}-{n}")
                add(res, ("core", fmt, "memory", n),
                    rust("measure", "--format", fmt, "--memory", n, "--commits", a.commits))
                dst = os.path.join(shm, "dir", f"{fmt}-{n}")
                copy_table(src, dst)
                add(res, ("core", fmt, "dir", n), rust(
                    "measure", "--format", fmt, "--table", dst, "--commits", a.commits,
                    "--history", n))
                if run < a.fsync_runs:
                    user = "bench" if run == 0 else f"bench-{run + 1}"
                    add(res, ("core", fmt, "dir-fsync", n), rust(
                        "measure", "--format", fmt, "--table", disk[fmt], "--commits", a.commits,
                        "--history", n + run * a.commits, "--user", user, "--fsync"))
            files = res[("core", "paimon", "dir", n)][0]["files"]
            wh = os.path.join(shm, "pypaimon")
            copy_table(os.path.join(hist, f"paimon-{n}"), os.path.join(wh, "db.db", f"t{n}"))
            add(res, ("pypaimon", "paimon", "dir", n),
                {"commits": pypaimon_commits(wh, {}, f"t{n}", files, n)})
            log(f"local directory, history {n}, run {run + 1} of {a.runs}: done")
        for d in (os.path.join(shm, "dir"), os.path.join(shm, "pypaimon")):
            shutil.rmtree(d, ignore_errors=True)
        for d in disk.values():
            deleting.append(subprocess.Popen(["rm", "-rf", "--", d]))
    if a.s3:
        # A bucket per history, so a table's requests see only its own objects (moto
        # answers a prefix listing by scanning the bucket's keys).
        moto = Moto([f"{BUCKET}-{n}" for n in lengths])
        rust_s3_on = bool(os.environ.get("PAIMON_BENCH_S3_BIN"))
        try:
            for n in lengths:
                bucket = f"{BUCKET}-{n}"
                files = res[("core", "paimon", "dir", n)][0]["files"][:a.s3_commits]
                for fmt in ("paimon", "native") if rust_s3_on else ("paimon",):
                    prefix = f"wh-{fmt}/db.db/t"
                    up = moto.upload(os.path.join(hist, f"{fmt}-{n}"), bucket, prefix)
                    if rust_s3_on:
                        # The core first; pypaimon then commits on top (a history of
                        # n + s3_commits: flat either way, and one upload less).
                        add(res, ("core", fmt, "s3", n), rust_s3(
                            fmt, f"s3://{bucket}/{prefix}", moto.endpoint, a.s3_commits, n))
                    if fmt == "paimon":
                        opts = {**S3_OPTS, "fs.s3.endpoint": moto.endpoint}
                        before = n + (a.s3_commits if rust_s3_on else 0)
                        add(res, ("pypaimon", "paimon", "s3", n), {"commits": pypaimon_commits(
                            f"s3://{bucket}/wh-paimon", opts, "t", files, before)})
                    log(f"S3, history {n}, {fmt}: {up} objects uploaded, done")
        finally:
            moto.close()
    return res


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def calls_table(lengths, res):
    out = ["| format | history | calls per commit: get / put / put-if-absent / list (total) | "
           "bytes read / written | first commit after start | a merging commit (calls, bytes read / written) |",
           "|---|---:|---|---|---|---|"]
    for fmt in ("paimon", "native"):
        for n in lengths:
            run = res[("core", fmt, "dir", n)][0]["commits"]
            # The first commit after start reads what the new coordinator has not cached.
            steady = run[1:]
            m = lambda k: f"{med_counts(steady, k):g}"
            first = run[0]["counts"]
            # A later commit that reads is one that merges manifests (Paimon's
            # manifest.merge-min-count: about one in 30).
            merging = [c["counts"] for c in steady if c["counts"]["get"] > 0]
            merge = (f"{merging[0]['calls']} calls, {merging[0]['read']:,} / {merging[0]['written']:,} B"
                     if merging else "none in this run")
            out.append(
                f"| {fmt} | {n:,} | {m('get')} / {m('put')} / {m('put_if_absent')} / {m('list')} "
                f"({m('calls')}) | {int(med_counts(steady, 'read')):,} / {int(med_counts(steady, 'written')):,} B "
                f"| {first['calls']} calls, {first['read']:,} B read | {merge} |")
    py = [(n, res.get(("pypaimon", "paimon", "s3", n))) for n in lengths]
    if any(r for _, r in py):
        out += ["", "pypaimon's FileIO calls per commit on S3 (its pyarrow FileIO, median; "
                "a head is an `exists` or a status, a rename is a copy and a delete on S3):", "",
                "| history | head | get | put | rename | list | delete | bytes read / written |",
                "|---:|---:|---:|---:|---:|---:|---:|---|"]
        for n, r in py:
            if not r:
                continue
            run = r[0]["commits"][1:]
            g = lambda k: statistics.median(c["counts"].get(k, 0) for c in run)
            cells = " | ".join(f"{g(k):g}" for k in ("head", "get", "put", "rename", "list", "delete"))
            out.append(f"| {n:,} | {cells} | {int(g('read')):,} / {int(g('written')):,} B |")
    return "\n".join(out)


STORAGES = [("memory", "memory (the core's own work, no I/O)"),
            ("dir", "local directory (tmpfs; no fsync, as pypaimon)"),
            ("dir-fsync", "local directory (disk), fsynced as the host's storage"),
            ("s3", "S3 (moto, loopback)")]


def mean_worst(runs):
    """Every commit of every run: the mean (a merging commit, about one in 30, is in it
    as often as it fell) and the slowest."""
    v = [c["ns"] / 1e6 for r in runs for c in r["commits"]]
    return statistics.mean(v), max(v)


def time_table(lengths, res, s3_rows_missing, shm):
    out = ["| storage | history | core, Paimon | core, native | pypaimon 2.1.0 | pypaimon ÷ core (Paimon) "
           "| mean / slowest: core, Paimon | mean / slowest: pypaimon |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    ms = lambda c: "—" if c is None else (f"{c:.3f} ms" if c < 10 else f"{c:.1f} ms")
    for storage, label in STORAGES:
        if storage == "dir" and not shm:
            label = "local directory (disk; no fsync, as pypaimon)"
        for n in lengths:
            runs = [res.get((*key, storage, n))
                    for key in (("core", "paimon"), ("core", "native"), ("pypaimon", "paimon"))]
            if not any(runs):
                continue
            cells = [med_ms(r) if r else None for r in runs]
            ratio = f"**{cells[2] / cells[0]:.0f}×**" if cells[0] and cells[2] else "—"
            spread = ["—" if not r else " / ".join(ms(x) for x in mean_worst(r)) for r in (runs[0], runs[2])]
            out.append(f"| {label} | {n:,} | {ms(cells[0])} | {ms(cells[1])} | {ms(cells[2])} | {ratio} "
                       f"| {spread[0]} | {spread[1]} |")
    if s3_rows_missing:
        out.append("")
        out.append("The core's S3 rows need the host's object-store storage (the wasmtime crate): "
                   "`PAIMON_BENCH_S3=1 tests/paimon/bench.sh` adds them.")
    return "\n".join(out)


def summary_rows(lengths, res):
    """The rows of `make bench`'s one table (tests/bench/table.py): `| what | now | goal |`,
    both sides of each comparison in the row."""
    hist = " / ".join(f"{n:,}" for n in lengths)
    calls = []
    for fmt in ("paimon", "native"):
        runs = [res.get(("core", fmt, "dir", n)) for n in lengths]
        if all(runs):
            calls.append(f"{fmt} " + " / ".join(
                f"{med_counts(r[0]['commits'][1:], 'calls'):g}" for r in runs))
    rows = []
    if calls:
        rows.append(f"| Paimon commits: storage calls per commit at {hist} snapshots (steady state; "
                    f"the native format beside it) | {'; '.join(calls)} | the same at every history |")
    ms = lambda c: f"{c:.3f} ms" if c < 10 else f"{c:.1f} ms"
    for storage, label in (("dir", "tmpfs"), ("s3", "S3 (moto)")):
        core = [res.get(("core", "paimon", storage, n)) for n in lengths]
        py = [res.get(("pypaimon", "paimon", storage, n)) for n in lengths]
        if not all(core) or not all(py):
            continue
        c = [med_ms(r) for r in core]
        p = [med_ms(r) for r in py]
        rows.append(f"| Paimon commit time at {hist} snapshots, {label}: the core ÷ pypaimon 2.1.0 "
                    f"| {' / '.join(ms(x) for x in c)} vs {' / '.join(ms(x) for x in p)} "
                    f"({' / '.join(f'{a / b:.2f}×' for a, b in zip(c, p))}) "
                    f"| flat whatever the history; ≤ pypaimon's |")
    return rows


def render(meta, lengths, res):
    print("## Paimon commits: the core against pypaimon 2.1.0\n")
    print(f"{meta['date']}; load average {meta['load_start']} at the start, {meta['load_end']} at the "
          f"end (1, 5, 15 min); {meta['commits']} commits per table ({meta['s3_commits']} on S3), one "
          f"data file each; the median of {meta['runs']} runs' medians locally, one run on S3; "
          f"the run took {meta['seconds']} s.\n")
    print("### Storage calls and bytes per commit (the core, counted; the same on every storage)\n")
    print(calls_table(lengths, res))
    print("\n### Commit time (median per commit)\n")
    missing = meta["s3"] and not any(k[0] == "core" and k[2] == "s3" for k in res)
    print(time_table(lengths, res, missing, meta.get("shm", True)))
    print("\n### Rows of `make bench`'s table\n")
    print("| what | now | goal |\n|---|---|---|")
    print("\n".join(summary_rows(lengths, res)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="10,1000,10000")
    ap.add_argument("--commits", type=int, default=20, help="measured commits per table")
    ap.add_argument("--runs", type=int, default=3, help="runs of each local measurement")
    ap.add_argument("--fsync-runs", type=int, default=3, help="runs of the fsynced ones")
    ap.add_argument("--s3-commits", type=int, default=8, help="measured commits per S3 table")
    ap.add_argument("--no-s3", dest="s3", action="store_false")
    ap.add_argument("--shm", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="a tmpfs for the unsynced local tables ('' = the work directory)")
    ap.add_argument("--work", help="work directory (default: a temporary one, removed)")
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--render", help="print the tables of an earlier run's --json file")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as fh:
            saved = json.load(fh)
        res = {(k.split()[0], k.split()[1], k.split()[2], int(k.split()[3])): v
               for k, v in saved["results"].items()}
        render(saved["meta"], saved["meta"]["lengths"], res)
        return
    loadavg = lambda: " ".join(open("/proc/loadavg").read().split()[:3])
    load_start, t0 = loadavg(), time.time()
    work = a.work or tempfile.mkdtemp(prefix="paimon-bench-")
    try:
        lengths, res = measure_all(a, work)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_start": load_start,
            "load_end": loadavg(), "commits": a.commits, "s3_commits": a.s3_commits, "runs": a.runs,
            "seconds": round(time.time() - t0), "lengths": lengths, "s3": a.s3,
            "shm": bool(a.shm)}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"meta": meta, "results": {" ".join(map(str, k)): v for k, v in res.items()}}, fh)
    render(meta, lengths, res)


if __name__ == "__main__":
    upload_main() if sys.argv[1:] == ["--upload"] else main()
