"""Proof that Apache Paimon's Python reader (pypaimon) reads what sink-coordinator-paimon
writes, and that the crate reads what pypaimon writes. Where PAIMON_JAVA_CP is set
(run.sh sets it up when java and mvn exist), Paimon's Java reader must read every table
and tag the same; where PAIMON_RUST_READ_BIN is set (run.sh builds tests/paimon/rust-reader),
so must Apache Paimon's Rust reader (the `paimon` crate).

Run by tests/paimon/run.sh (which builds the driver, `cargo run --example paimon-commit`,
and exports its path as PAIMON_COMMIT_BIN). A plain script: every check is an assert,
the last line is "N passed, M failed", the exit code is non-zero on any failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import uuid

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema

BIN = os.environ["PAIMON_COMMIT_BIN"]
# The core's Coordinator on a Paimon table (paimon/examples/coordinator-job.rs).
JOB_BIN = os.environ.get("PAIMON_JOB_BIN")
RUST_JOB_BIN = os.environ.get("PAIMON_RUST_JOB_BIN")
# The core's Coordinator step by step (paimon-writer/examples/coordinator-steps.rs).
STEPS_BIN = os.environ.get("PAIMON_STEPS_BIN")


def drive(req, expect_error=None):
    p = subprocess.run([BIN], input=json.dumps(req), capture_output=True, text=True)
    out = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    if expect_error:
        assert p.returncode == 3, (p.returncode, p.stdout, p.stderr)
        assert out["error"] == "InvalidCommittable" and expect_error in out["detail"], out
        return out
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return out


def catalog(warehouse):
    return CatalogFactory.create({"warehouse": warehouse})


def table_dir(warehouse, name):
    return os.path.join(warehouse, "db.db", name)


def write_data(tdir, partition_path, rows, schema):
    """A Parquet data file under the bucket directory; returns its metadata."""
    name = f"data-{uuid.uuid4()}-0.parquet"
    d = os.path.join(tdir, partition_path, "bucket-0")
    os.makedirs(d, exist_ok=True)
    t = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(t, os.path.join(d, name))
    return {"file_name": name, "file_size": os.path.getsize(os.path.join(d, name)),
            "row_count": len(rows), "min_seq": 0, "max_seq": len(rows) - 1}


JAVA_CP = os.environ.get("PAIMON_JAVA_CP")


def java_ids(wh, name, tag=None):
    """Paimon's Java reader (tests/paimon/JavaRead.java): sorted ids, or None if not set up."""
    if not JAVA_CP:
        return None
    args = ["java", "-cp", JAVA_CP, "JavaRead", wh, name] + ([tag] if tag else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def check_java(wh, name, want, tag=None):
    got = java_ids(wh, name, tag)
    assert got is None or got == sorted(want), (name, tag, got, sorted(want))


RUST_READ_BIN = os.environ.get("PAIMON_RUST_READ_BIN")


def rust_ids(wh, name, tag=None):
    """The `paimon` crate's reader (tests/paimon/rust-reader): sorted ids, or None if not built.
    `tag` is a tag name, or `snapshot=N` for a snapshot id."""
    if not RUST_READ_BIN:
        return None
    args = [RUST_READ_BIN, wh, "db", name] + ([tag] if tag else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (name, tag, p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def check_rust(wh, name, want, tag=None):
    got = rust_ids(wh, name, tag)
    assert got is None or got == sorted(want), (name, tag, got, sorted(want))


def check_other_readers(wh, name, want, tags=()):
    """Paimon's Java and Rust readers, where set up, read the sorted ids `want` from table
    `name`, and `ids` as of each `(tag, ids)` of `tags`."""
    for tag, expected in [(None, want), *tags]:
        check_java(wh, name, expected, tag=tag)
        check_rust(wh, name, expected, tag=tag)


def check_job_table(wh, name, rows_at):
    """The table of a job that committed checkpoints 1..4 and END, with `rows_at` the ids
    of each (subtask, checkpoint) and a savepoint tag at 2: every reader reads every row
    exactly once, and the tag as of 2. Returns the table and its rows."""
    tbl = catalog(wh).get_table(f"db.{name}")
    rows = read_rows(tbl)
    want = sorted(i for v in rows_at.values() for i in v)
    assert ids(rows) == want, (ids(rows), want)
    at_2 = sorted(i for (s, c), v in rows_at.items() if c <= 2 for i in v)
    assert ids(read_rows(tbl.copy({"scan.tag-name": "savepoint-2"}))) == at_2
    check_other_readers(wh, name, want, [("savepoint-2", at_2)])
    return tbl, rows


def read_rows(tbl):
    rb = tbl.new_read_builder()
    splits = rb.new_scan().plan().splits()
    return rb.new_read().to_arrow(splits).to_pylist()


def ids(rows):
    return sorted(r["id"] for r in rows)


def commit(tdir, user, identifier, files, **kw):
    return drive(dict(op="commit", table=tdir, user=user, identifier=identifier,
                      time_millis=1_700_000_000_000 + identifier, files=files, **kw))


UNPART = pa.schema([("id", pa.int64()), ("name", pa.string())])
PART = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("h", pa.int32())])


def test_unpartitioned_two_users_and_tag(wh):
    tdir = table_dir(wh, "unpart")
    drive(dict(op="create", table=tdir, columns=[["id", "BIGINT"], ["name", "STRING"]],
               options={"file.format": "parquet"}))
    expected, next_id = [], 0

    def rows(n):
        nonlocal next_id
        out = [{"id": next_id + i, "name": f"r{next_id + i}"} for i in range(n)]
        next_id += n
        expected.extend(r["id"] for r in out)
        return out

    r = commit(tdir, "job-a", 1, [write_data(tdir, "", rows(3), UNPART)])
    assert r["snapshot_id"] == 1
    commit(tdir, "job-b", 1, [write_data(tdir, "", rows(2), UNPART), write_data(tdir, "", rows(4), UNPART)])
    commit(tdir, "job-a", 2, [write_data(tdir, "", rows(1), UNPART)])
    # A checkpoint without data still records the user's mark (an empty delta list).
    assert commit(tdir, "job-b", 2, [])["snapshot_id"] == 4
    tagged = sorted(expected)
    t = drive(dict(op="tag", table=tdir, name="savepoint-2"))
    assert t["created"] and t["tag"] == "tag/tag-savepoint-2"
    # A replay of job-a's checkpoint 2 (writer failover) is filtered by the marks.
    again = commit(tdir, "job-a", 2, [write_data(tdir, "", [{"id": 999, "name": "dup"}], UNPART)])
    assert again == {**again, "skipped": True, "committed_in": 3}, again
    commit(tdir, "job-b", 9223372036854775807, [write_data(tdir, "", rows(5), UNPART)])  # END
    tbl = catalog(wh).get_table("db.unpart")
    got = read_rows(tbl)
    assert ids(got) == sorted(expected), (ids(got), sorted(expected))
    assert {r["name"] for r in got} == {f"r{i}" for i in expected}
    assert ids(read_rows(tbl.copy({"scan.tag-name": "savepoint-2"}))) == tagged
    check_other_readers(wh, "unpart", expected, [("savepoint-2", tagged)])
    # The crate's reader also reads as of a snapshot id (scan.snapshot-id): the first
    # commit's 3 rows.
    check_rust(wh, "unpart", [0, 1, 2], tag="snapshot=1")
    snap = tbl.snapshot_manager().get_latest_snapshot()
    assert snap.commit_identifier == 9223372036854775807 and snap.commit_kind == "APPEND"
    assert snap.total_record_count == len(expected)
    assert snap.properties["sinkcoord.user.job-a"] == "2,3", snap.properties
    # Independent decoder: fastavro on the manifest list and manifest the crate wrote.
    with open(os.path.join(tdir, "manifest", snap.delta_manifest_list), "rb") as f:
        metas = list(fastavro.reader(f))
    assert len(metas) == 1 and metas[0]["_NUM_ADDED_FILES"] == 1 and metas[0]["_VERSION"] == 2
    with open(os.path.join(tdir, "manifest", metas[0]["_FILE_NAME"]), "rb") as f:
        entries = list(fastavro.reader(f))
    assert [e["_KIND"] for e in entries] == [0]
    assert entries[0]["_FILE"]["_ROW_COUNT"] == 5 and entries[0]["_TOTAL_BUCKETS"] == -1
    assert entries[0]["_FILE"]["_CREATION_TIME"] is not None


def test_partitioned_many_commits_merge_bounded(wh):
    tdir = table_dir(wh, "part")
    drive(dict(op="create", table=tdir, columns=[["id", "BIGINT"], ["dt", "STRING"], ["h", "INT"]],
               partition_keys=["dt", "h"]))
    expected, max_lists, max_get, merges, calls = [], 0, 0, 0, set()
    for cp in range(1, 31):
        files = []
        for user in ("w1", "w2") if cp % 3 else ("w1",):
            dt = f"2024-01-0{cp % 3 + 1}"
            h = cp % 2
            base = cp * 100 + (0 if user == "w1" else 50)
            rows = [{"id": base + i, "dt": dt, "h": h} for i in range(cp % 4 + 1)]
            expected.extend(r["id"] for r in rows)
            meta = write_data(tdir, f"dt={dt}/h={h}", rows, PART)
            meta["partition"] = [dt, h]
            meta["stats"] = [{"column": "id", "min": rows[0]["id"], "max": rows[-1]["id"], "null_count": 0}]
            files.append(meta)
        r = commit(tdir, "job", cp, files, max_manifests=6)
        max_lists = max(max_lists, r["base_list_len"])
        max_get = max(max_get, r["calls"]["get"])
        merges += r["merged"] > 0
        calls.add((r["merged"] > 0, tuple(sorted(r["calls"].items()))))
        # Constant calls per commit: puts = manifest + merged + 2 lists + LATEST (+EARLIEST).
        assert r["calls"]["put"] <= 6 and r["calls"]["put_if_absent"] == 1, r
    assert max_lists <= 7 and merges >= 3, (max_lists, merges)
    for merged, c in sorted(calls):
        print(f"  calls of a commit ({'merging' if merged else 'no merge'}): {dict(c)}")
    assert max_get <= 4 + 30, max_get  # LATEST, snapshot, schema, 2 lists + merge inputs
    tbl = catalog(wh).get_table("db.part")
    got = read_rows(tbl)
    assert ids(got) == sorted(expected)
    assert all(r["dt"].startswith("2024-01-0") for r in got)
    check_other_readers(wh, "part", expected)
    # Partition pruning through the manifests' partition values.
    rb = tbl.new_read_builder()
    pb = rb.new_predicate_builder()
    rb = rb.with_filter(pb.equal("dt", "2024-01-02"))
    some = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert ids(some) == sorted(r["id"] for r in got if r["dt"] == "2024-01-02") != []


def test_binary_rows_match_pypaimons_serializer(wh):
    from pypaimon.table.row.generic_row import (GenericRow, GenericRowDeserializer,
                                                GenericRowSerializer)
    tdir = table_dir(wh, "part")  # written by test_partitioned_many_commits_merge_bounded
    tbl = catalog(wh).get_table("db.part")
    fields = tbl.partition_keys_fields
    snap = tbl.snapshot_manager().get_latest_snapshot()
    seen = 0
    for lst in (snap.base_manifest_list, snap.delta_manifest_list):
        with open(os.path.join(tdir, "manifest", lst), "rb") as f:
            for meta in fastavro.reader(f):
                with open(os.path.join(tdir, "manifest", meta["_FILE_NAME"]), "rb") as g:
                    for e in fastavro.reader(g):
                        part = e["_PARTITION"]
                        values = GenericRowDeserializer.from_bytes(part, fields).values
                        assert GenericRowSerializer.to_bytes(GenericRow(values, fields)) == part, values
                        vs = e["_FILE"]["_VALUE_STATS"]
                        assert e["_FILE"]["_VALUE_STATS_COLS"] == ["id"]
                        id_field = [f for f in tbl.fields if f.name == "id"]
                        lo = GenericRowDeserializer.from_bytes(vs["_MIN_VALUES"], id_field).values
                        assert GenericRowSerializer.to_bytes(GenericRow(lo, id_field)) == vs["_MIN_VALUES"]
                        seen += 1
    assert seen == 50, seen  # 30 checkpoints, 2 writers on 20 of them


def test_invalid_committables_leave_table_unchanged(wh):
    tdir = table_dir(wh, "bad")
    drive(dict(op="create", table=tdir, columns=[["id", "BIGINT"], ["dt", "STRING"]], partition_keys=["dt"]))
    good = {"file_name": "data-x-0.parquet", "file_size": 10, "row_count": 1, "partition": ["a"]}
    for bad, err in [({"file_name": "../x.parquet"}, "BadFileName"),
                     ({"file_name": "a/b.parquet"}, "BadFileName"),
                     ({"schema_id": 4}, "SchemaIdMismatch"),
                     ({"partition": []}, "PartitionArity"),
                     ({"partition": [3]}, "PartitionType")]:
        drive(dict(op="commit", table=tdir, user="u", identifier=1, files=[{**good, **bad}]), expect_error=err)
    assert not os.path.exists(os.path.join(tdir, "snapshot"))


def test_table_created_by_pypaimon(wh):
    cat = catalog(wh)
    cat.create_database("db", True)
    cat.create_table("db.bypy", Schema.from_pyarrow_schema(PART, partition_keys=["dt"]), False)
    tdir = table_dir(wh, "bypy")
    expected = []
    for cp, dt in [(1, "x"), (2, "y"), (3, "x")]:
        rows = [{"id": cp * 10 + i, "dt": dt, "h": i} for i in range(3)]
        expected.extend(r["id"] for r in rows)
        meta = write_data(tdir, f"dt={dt}", rows, PART)
        meta["partition"] = [dt]
        commit(tdir, "ours", cp, [meta])
    assert ids(read_rows(cat.get_table("db.bypy"))) == sorted(expected)
    check_other_readers(wh, "bypy", expected)


def py_batch_commit(cat, name, cp):
    """pypaimon's own batch commit (its random commit user) of three rows of partition
    `d2` into table `name` (schema PART), ids 1000 + 10 * cp + 0..2; returns the ids."""
    tbl = cat.get_table(f"db.{name}")
    wb = tbl.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    rows = [{"id": 1000 + cp * 10 + i, "dt": "d2", "h": 2} for i in range(3)]
    w.write_arrow(pa.Table.from_pylist(rows, schema=PART))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    return [r["id"] for r in rows]


def our_partition_commit(tdir, cp):
    """Our commit (user `ours`, identifier `cp`) of two rows of partition `d1` (schema
    PART), ids 10 * cp + 0..1, merging at 4 manifests; returns the ids. pypaimon never
    merges: ours keeps the base list short even with pypaimon's manifests in it."""
    rows = [{"id": cp * 10 + i, "dt": "d1", "h": 1} for i in range(2)]
    meta = write_data(tdir, "dt=d1", rows, PART)
    meta["partition"] = ["d1"]
    r = commit(tdir, "ours", cp, [meta], max_manifests=4)
    assert r["base_list_len"] <= 5, r
    return [r["id"] for r in rows]


def test_interleaved_with_pypaimon(wh):
    tdir = table_dir(wh, "mixed")
    drive(dict(op="create", table=tdir, columns=[["id", "BIGINT"], ["dt", "STRING"], ["h", "INT"]],
               partition_keys=["dt"]))
    cat = catalog(wh)
    expected = []
    for cp in range(1, 8):
        expected.extend(our_partition_commit(tdir, cp))
        expected.extend(py_batch_commit(cat, "mixed", cp))
    got = read_rows(cat.get_table("db.mixed"))
    assert ids(got) == sorted(expected), (len(got), len(expected))
    check_other_readers(wh, "mixed", expected)
    # Our decoder reads pypaimon's snapshots and manifest lists, and the marks see its users.
    ins = drive(dict(op="inspect", table=tdir))["snapshots"]
    assert len(ins) == 14
    # Our commits keep the base short even with pypaimon's manifests in it (pypaimon's
    # own commits copy base + delta, so they add one each).
    assert max(len(s["lists"]["base"]) for s in ins) <= 6, [len(s["lists"]["base"]) for s in ins]
    theirs = [s for s in ins if s["user"] != "ours"]
    assert len(theirs) == 7 and all(s["marks"] is None for s in theirs)
    assert all(s["identifier"] == 9223372036854775807 for s in theirs)
    assert all(len(s["lists"]["delta"]) == 1 and s["lists"]["delta"][0]["added"] == 1 for s in theirs)
    last_ours = [s for s in ins if s["user"] == "ours"][-1]
    assert theirs[-2]["user"] in last_ours["marks"]["users"], last_ours
    assert last_ours["marks"]["previous"] == last_ours["id"] - 2
    # A replay of our last checkpoint after pypaimon's commit is still filtered.
    assert commit(tdir, "ours", 7, [])["skipped"]


def test_interleaved_on_a_table_pypaimon_created(wh):
    """A table pypaimon created with its defaults (`manifest.compression` zstd), pypaimon's
    commits interleaved with ours: our commits read pypaimon's zstd manifest lists (and
    merge its zstd manifests), every row of both is read once, by every reader."""
    cat = catalog(wh)
    cat.create_database("db", True)
    cat.create_table("db.bypy_zstd", Schema.from_pyarrow_schema(PART, partition_keys=["dt"]), False)
    tdir = table_dir(wh, "bypy_zstd")
    expected = []
    for cp in range(1, 8):
        expected.extend(py_batch_commit(cat, "bypy_zstd", cp))
        expected.extend(our_partition_commit(tdir, cp))
    codecs = set()
    for name in os.listdir(os.path.join(tdir, "manifest")):
        with open(os.path.join(tdir, "manifest", name), "rb") as f:
            codecs.add(fastavro.reader(f).codec)
    assert codecs == {"null", "zstandard"}, codecs
    got = read_rows(cat.get_table("db.bypy_zstd"))
    assert ids(got) == sorted(expected), (len(got), len(expected))
    check_other_readers(wh, "bypy_zstd", expected)
    ins = drive(dict(op="inspect", table=tdir))["snapshots"]
    assert len(ins) == 14 and sum(s["user"] == "ours" for s in ins) == 7


def test_every_manifest_file_decodes_with_fastavro(wh):
    """Every Avro file under every table (ours, merged, pypaimon's) through fastavro."""
    n = 0
    for name in ("unpart", "part", "bypy", "mixed"):
        mdir = os.path.join(table_dir(wh, name), "manifest")
        for f in sorted(os.listdir(mdir)):
            with open(os.path.join(mdir, f), "rb") as fh:
                r = fastavro.reader(fh)
                records = list(r)
                assert r.writer_schema["name"] in ("ManifestEntry", "ManifestFileMeta"), f
                if r.writer_schema["name"] == "ManifestEntry":
                    assert records and all(e["_KIND"] == 0 for e in records), f
            n += 1
    assert n > 100, n


def test_core_coordinator_job(wh):
    """The core's Coordinator writes the table: two writers, checkpoints 1..4, a savepoint
    at 2 (auto-tagged), storage faults in commit 3 (a failed manifest put, then a
    snapshot create that landed although it reported an error), a failover restored from
    checkpoint 4, then END. Every row is read exactly once; the tag reads as of 2."""
    assert JOB_BIN, "PAIMON_JOB_BIN is not set (run.sh builds coordinator-job)"
    tdir = table_dir(wh, "core_job")
    files, rows_at, next_id = {}, {}, 0
    for c in [1, 2, 3, 4, 9223372036854775807]:
        for s in [0, 1]:
            n = 3 + s
            rows = [{"id": next_id + i, "name": f"s{s}c{c}"} for i in range(n)]
            next_id += n
            files[f"{s}:{c}"] = write_data(tdir, "", rows, UNPART)
            rows_at[(s, c)] = [r["id"] for r in rows]
    p = subprocess.run([JOB_BIN], input=json.dumps({"table": tdir, "files": files}),
                       capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout, p.stderr[-3000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["committed"] == [1, 2, 3, 4, 9223372036854775807], out
    assert out["tags"] == ["savepoint-2"], out
    tbl, rows = check_job_table(wh, "core_job", rows_at)
    snap = tbl.snapshot_manager().get_latest_snapshot()
    assert snap.commit_user == "job" and snap.commit_identifier == 9223372036854775807
    assert snap.total_record_count == len(rows), snap.total_record_count
    assert snap.properties["sinkcoord.user.job"] == f"9223372036854775807,{snap.id}"



def test_rust_job_parquet(wh):
    """The same job with every data file written in Rust (paimon-writer's Parquet
    writer, its committables with value stats): pypaimon and Paimon's Java reader read
    every row exactly once, and the savepoint tag as of checkpoint 2."""
    assert RUST_JOB_BIN, "PAIMON_RUST_JOB_BIN is not set (run.sh builds rust-job)"
    tdir = table_dir(wh, "rust_job")
    os.makedirs(tdir, exist_ok=True)
    p = subprocess.run([RUST_JOB_BIN, tdir], capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout, p.stderr[-3000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["committed"] == [1, 2, 3, 4, 9223372036854775807], out
    assert out["tags"] == ["savepoint-2"], out
    rows_at = {tuple(int(x) for x in k.split(":")): v for k, v in out["rows"].items()}
    _, rows = check_job_table(wh, "rust_job", rows_at)
    names = {r["id"]: r["name"] for r in rows}
    for (s, c), v in rows_at.items():
        assert all(names[i] == f"s{s}c{c}" for i in v), (s, c)


SINKCOORD = os.environ.get("SINKCOORD_BIN")


def test_expired_tables_read_the_same(wh):
    """`sinkcoord expire --retain-last 1` on copies of the tables above (merged manifests,
    two commit users, savepoint tags, a failover): pypaimon, and Paimon's Java and Rust
    readers where set up, read every row and every tag as before; the snapshots below the
    latest and the manifests only they used are gone, EARLIEST names the latest; the one
    data file no snapshot references (unpart's filtered replay) is the only orphan."""
    assert SINKCOORD, "SINKCOORD_BIN is not set (run.sh builds the CLI)"
    cases = [("part", []), ("unpart", ["--unpin-user", "job-a"]), ("rust_job", []),
             ("core_job", [])]
    for name, extra in cases:
        src, copy = table_dir(wh, name), f"{name}_expired"
        dst = table_dir(wh, copy)
        shutil.copytree(src, dst)
        tbl = catalog(wh).get_table(f"db.{name}")
        want = ids(read_rows(tbl))
        tag_dir = os.path.join(src, "tag")
        tags = sorted(t[len("tag-"):] for t in os.listdir(tag_dir)) if os.path.isdir(tag_dir) else []
        tag_rows = {t: ids(read_rows(tbl.copy({"scan.tag-name": t}))) for t in tags}
        p = subprocess.run([SINKCOORD, "expire", dst, "--retain-last", "1", "--min-age-ms", "0",
                            "--orphans", "--grace-ms", "0", "--json"] + extra,
                           capture_output=True, text=True)
        assert p.returncode == 0, (name, p.stdout, p.stderr)
        doc = json.loads(p.stdout)
        latest = doc["latest"]
        assert doc["earliest"] == latest > 1 and doc["expired_snapshots"], (name, doc)
        orphans = [os.path.basename(o["key"]) for o in doc["orphans"]]
        if name == "unpart":
            assert len(orphans) == 1, (name, orphans)
        else:
            assert orphans == [], (name, orphans)
        left = sorted(os.listdir(os.path.join(dst, "snapshot")))
        assert left == sorted(["EARLIEST", "LATEST", f"snapshot-{latest}"]), (name, left)
        with open(os.path.join(dst, "snapshot", "EARLIEST")) as f:
            assert f.read().strip() == str(latest)
        if name == "part":
            assert doc["expired_manifests"], doc
        expired = catalog(wh).get_table(f"db.{copy}")
        assert ids(read_rows(expired)) == want, name
        for t, rows in tag_rows.items():
            assert ids(read_rows(expired.copy({"scan.tag-name": t}))) == rows, (name, t)
        check_other_readers(wh, copy, want, tag_rows.items())


END = 9223372036854775807


def steps(tdir, run, steps, user="job", restore=None, expect_error=None):
    """One run of the core's Coordinator (coordinator-steps): its JSON report."""
    assert STEPS_BIN, "PAIMON_STEPS_BIN is not set (run.sh builds coordinator-steps)"
    req = {"table": tdir, "user": user, "run": run, "steps": steps}
    if restore:
        req["restore"] = restore
    p = subprocess.run([STEPS_BIN], input=json.dumps(req), capture_output=True, text=True)
    want_rc = 3 if expect_error else 0
    assert p.returncode == want_rc, (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if expect_error:
        assert out["error"]["kind"] == expect_error, out
    return out


def py_stream_commit(wh, name, user, identifier, ids):
    """pypaimon's stream commit under commit user `user` with `identifier`. pypaimon 2.1.0
    has no public setter of the commit user (a builder's user is a random UUID, or
    `commit.user-prefix`_UUID); `_with_commit_user` is the builder's own hook for reusing
    an identity, which is what a restarted pypaimon job with a fixed user does."""
    tbl = catalog(wh).get_table(f"db.{name}")
    wb = tbl.new_stream_write_builder()._with_commit_user(user)
    w, c = wb.new_write(), wb.new_commit()
    rows = [{"id": i, "name": f"py-{user}-c{identifier}"} for i in ids]
    w.write_arrow(pa.Table.from_pylist(rows, schema=UNPART))
    c.commit(w.prepare_commit(identifier), identifier)
    w.close()
    c.close()
    snap = tbl.snapshot_manager().get_latest_snapshot()
    assert snap.commit_user == user and snap.commit_identifier == identifier
    assert not (snap.properties or {}), snap.properties  # no marks of ours
    return snap.id


def snaps(out):
    """(id, user, identifier) of every snapshot a coordinator run saw appear."""
    got = [(s["id"], s["user"], s["identifier"]) for s in out["start"]["snapshots"]]
    for st in out["steps"]:
        got.extend((s["id"], s["user"], s["identifier"]) for s in st["snapshots"])
    return got


def read_snapshot_json(tdir, sid):
    with open(os.path.join(tdir, "snapshot", f"snapshot-{sid}")) as f:
        return json.load(f)


def clone_foreign_snapshots(tdir, n, user):
    """`n` more snapshots of `user` on top of the newest one, a pypaimon snapshot: its
    JSON as pypaimon wrote it, with the next id and identifier (same manifest lists, so
    every reader still sees the table's rows once). 1,000 real pypaimon commits would
    cost minutes; the coordinator only reads these snapshots' JSON (and the newest one's
    lists), so clones test the walk back exactly."""
    latest = int(open(os.path.join(tdir, "snapshot", "LATEST")).read())
    src = read_snapshot_json(tdir, latest)
    assert src["commitUser"] == user and not src.get("properties"), src
    for k in range(1, n + 1):
        s = dict(src, id=latest + k, commitIdentifier=src["commitIdentifier"] + k)
        if "uuid" in s:
            s["uuid"] = str(uuid.uuid4())
        with open(os.path.join(tdir, "snapshot", f"snapshot-{latest + k}"), "x") as f:
            json.dump(s, f)
    with open(os.path.join(tdir, "snapshot", "LATEST"), "w") as f:
        f.write(str(latest + n))
    return latest + n


def test_pypaimon_same_commit_user(wh):
    """pypaimon's stream commits under the coordinator's own commit user `job` (explicit
    identifiers) are seen by the core's exactly-once filter, although Paimon's snapshots
    carry none of this project's marks: a Coordinator restored with entries of checkpoints
    pypaimon already committed as `job` (a failover replaying them) commits nothing, and
    the checkpoints above pypaimon's last identifier commit normally. Then: the newest
    snapshot is pypaimon's when the coordinator starts; 50 pypaimon snapshots of other
    users on top of our last one (the walk back finds our mark); 1,000 and 1,001 foreign
    snapshots on top (the walk has no bound). pypaimon reads every row exactly once."""
    name = "same_user"
    tdir = table_dir(wh, name)
    os.makedirs(tdir, exist_ok=True)
    want = []  # every id the table must hold exactly once

    def ev(cp, ids, **kw):
        return {"op": "event", "subtask": 0, "checkpoint": cp, "rows": ids, **kw}

    # 1. The coordinator (user job) commits 1 and 2, takes checkpoints 3 and 4 (entries of
    #    3 and 4 pending) and dies before completing them.
    a = steps(tdir, "a", [ev(1, [1, 2]), {"op": "complete", "checkpoint": 1},
                          ev(2, [3, 4]), {"op": "complete", "checkpoint": 2},
                          ev(3, [5, 6]), {"op": "checkpoint", "checkpoint": 3},
                          ev(4, [7, 8]), {"op": "checkpoint", "checkpoint": 4}])
    assert snaps(a) == [(1, "job", 1), (2, "job", 2)], snaps(a)
    want += [1, 2, 3, 4]
    s4 = a["steps"][7]["state"]
    replay = {3: a["steps"][4]["committables"], 4: a["steps"][6]["committables"]}
    # 2. Meanwhile pypaimon commits as another user, then as `job` with identifiers 3 and
    #    4 (checkpoint 3's and 4's rows: the table must end with each once), interleaved
    #    with a coordinator of another commit user; the newest snapshot is pypaimon's.
    assert py_stream_commit(wh, name, "other", 1, [100, 101]) == 3
    assert py_stream_commit(wh, name, "job", 3, [5, 6]) == 4
    b2 = steps(tdir, "b2", [ev(1, [200]), {"op": "complete", "checkpoint": 1}], user="job-b")
    assert snaps(b2) == [(5, "job-b", 1)], snaps(b2)
    assert py_stream_commit(wh, name, "job", 4, [7, 8]) == 6
    want += [100, 101, 5, 6, 200, 7, 8]
    props = read_snapshot_json(tdir, 5)["properties"]
    assert props["sinkcoord.user.job"] == "3,4", props  # job-b's snapshot saw pypaimon's job
    # 3. The failover: restored from checkpoint 4, the writer replays 3 and 4. pypaimon
    #    committed both as `job`: nothing is committed again. Checkpoint 5 commits.
    b = steps(tdir, "b", [
        {"op": "restored", "subtask": 0, "checkpoint": 4,
         "entries": [{"checkpoint": 3, "committables": replay[3]},
                     {"checkpoint": 4, "committables": replay[4]}]},
        ev(5, [9, 10]), {"op": "checkpoint", "checkpoint": 5},
        {"op": "complete", "checkpoint": 5},
        ev(6, [11, 12]), {"op": "checkpoint", "checkpoint": 6}],
        restore={"checkpoint": 4, "state": s4})
    assert b["start"]["committed"] == [] and b["steps"][0]["committed"] == [], b
    assert snaps(b) == [(7, "job", 5)], snaps(b)
    want += [9, 10]
    p7 = read_snapshot_json(tdir, 7)["properties"]
    assert p7["sinkcoord.user.job"] == "5,7" and p7["sinkcoord.user.other"] == "1,3", p7
    assert p7["sinkcoord.user.job-b"] == "1,5", p7
    assert p7["sinkcoord.previous"] == "6" and p7["sinkcoord.previous.identifier"] == "4", p7
    s5 = b["steps"][2]["state"]
    c5 = b["steps"][1]["committables"]
    c6 = b["steps"][4]["committables"]
    # 4. 50 pypaimon snapshots of other users on top of our snapshot 7; restored from
    #    checkpoint 5 (whose entries we committed at 7): the walk back through the 50
    #    finds our mark, nothing is committed again; the replayed 6 commits.
    for k in range(50):
        py_stream_commit(wh, name, ("other", "py-2")[k % 2], 2 + k, [1000 + k])
        want.append(1000 + k)
    c = steps(tdir, "c", [
        {"op": "restored", "subtask": 0, "checkpoint": 5,
         "entries": [{"checkpoint": 5, "committables": c5}]},
        {"op": "event", "subtask": 0, "checkpoint": 6, "committables": c6},
        {"op": "complete", "checkpoint": 6}],
        restore={"checkpoint": 5, "state": s5})
    assert c["start"]["committed"] == [] and c["steps"][0]["committed"] == [], c
    assert snaps(c) == [(58, "job", 6)], snaps(c)
    want += [11, 12]
    # 5. Again the newest snapshot is pypaimon's `job` (identifier 7) when a fresh
    #    coordinator starts: a report for checkpoint 7 is committed work (SEMANTICS 3
    #    rule 2: a fatal invalid-event, nothing written); checkpoint 8 commits, linked
    #    back to pypaimon's snapshot.
    assert py_stream_commit(wh, name, "job", 7, [13]) == 59
    want.append(13)
    refused = steps(tdir, "d0", [ev(7, [666]), {"op": "complete", "checkpoint": 7}],
                    expect_error="invalid-event")
    assert "checkpoint 7, which is already committed" in refused["error"]["message"], refused
    assert refused["at"] == 0 and snaps(refused) == [], refused
    d = steps(tdir, "d", [ev(8, [14]), {"op": "complete", "checkpoint": 8}])
    assert snaps(d) == [(60, "job", 8)], snaps(d)
    p60 = read_snapshot_json(tdir, 60)["properties"]
    assert p60["sinkcoord.previous"] == "59" and p60["sinkcoord.previous.identifier"] == "7", p60
    want.append(14)
    got = ids(read_rows(catalog(wh).get_table(f"db.{name}")))
    assert got == sorted(want), (got, sorted(want))
    check_java(wh, name, want)
    # 6. Long foreign runs: our snapshot 61 (checkpoint 9, its state taken before its
    #    commit), then one real pypaimon snapshot and 999 clones of it. With 1,000
    #    snapshots without marks on top of ours, a coordinator restored from checkpoint 9
    #    still finds our mark (the walk reads the 1,000 snapshots below the newest, the
    #    last of them ours) and commits nothing.
    d8 = steps(tdir, "d8", [ev(9, [15]), {"op": "checkpoint", "checkpoint": 9},
                            {"op": "complete", "checkpoint": 9}])
    assert snaps(d8) == [(61, "job", 9)], snaps(d8)
    want.append(15)
    s9, c9 = d8["steps"][1]["state"], d8["steps"][0]["committables"]
    py_stream_commit(wh, name, "other", 100, [2000])
    want.append(2000)
    assert clone_foreign_snapshots(tdir, 999, "other") == 62 + 999
    past = table_dir(wh, "same_user_past_bound")
    shutil.copytree(tdir, past)
    restore9 = [{"op": "restored", "subtask": 0, "checkpoint": 9,
                 "entries": [{"checkpoint": 9, "committables": c9}]}]
    at = steps(tdir, "e", restore9, restore={"checkpoint": 9, "state": s9})
    assert snaps(at) == [] and at["steps"][0]["committed"] == [], at
    got = ids(read_rows(catalog(wh).get_table(f"db.{name}")))
    assert got == sorted(want), (got, sorted(want))
    check_java(wh, name, want)
    # Past the old bound (1,001 snapshots without marks on top of ours) the walk still
    # finds our mark (it walks back without a bound, as Paimon's own filter does; with a
    # bound of 1,000 this committed checkpoint 9 twice): nothing is committed again.
    clone_foreign_snapshots(past, 1, "other")
    over = steps(past, "e", restore9, restore={"checkpoint": 9, "state": s9})
    assert snaps(over) == [] and over["steps"][0]["committed"] == [], over
    once = ids(read_rows(catalog(wh).get_table("db.same_user_past_bound")))
    assert once == sorted(want), "past 1,000 foreign snapshots, checkpoint 9 is still committed once"
    check_java(wh, "same_user_past_bound", want)


# Runs of `sinkcoord simulate` on Paimon: (seed, writers, checkpoints, faults). First the
# job `make run` runs (the Makefile's `run` target); then seeds with high faults, each with
# a second commit user on the table and savepoint tags (45 also a tag an abort deleted).
SIM_RUNS = [(1, 8, 60, "medium")] + [(seed, 5, 30, "high") for seed in (8, 27, 45, 53)]


def test_simulator_under_faults(wh):
    """The simulator on a Paimon table (`--table-format paimon`): storage faults, crashes,
    failovers, stale instances, two commit users and savepoints, every data file a real
    Parquet file of the records it covers. pypaimon (and Paimon's Java and Rust readers,
    where set up) read each committed record exactly once, as of the latest snapshot and
    as of each savepoint tag."""
    import read_sim_table

    assert SINKCOORD, "SINKCOORD_BIN is not set (run.sh builds sinkcoord)"
    for seed, writers, checkpoints, faults in SIM_RUNS:
        name = f"sim_{seed}_{faults}"
        expect = os.path.join(wh, f"{name}.json")
        p = subprocess.run([SINKCOORD, "simulate", "--table-format", "paimon",
                            "--table", table_dir(wh, name), "--seed", str(seed),
                            "--writers", str(writers), "--checkpoints", str(checkpoints),
                            "--faults", faults, "--paimon-expect", expect, "--quiet"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "verdict: verified" in p.stdout, (seed, p.stdout, p.stderr)
        with open(expect) as f:
            want = json.load(f)
        assert want["tags"], (seed, "the seed was chosen for its savepoint tags")
        assert {k.split(":")[0] for k in want["rows"]} == {"a", "b"}, (seed, "two commit users")
        summary, problems = read_sim_table.check(wh, f"db.{name}", want)
        assert not problems, (seed, summary, problems)
        check_other_readers(wh, name, read_sim_table.expected_ids(want["rows"]),
                            [(tag, read_sim_table.expected_ids(ranges))
                             for tag, ranges in want["tags"].items()])


def main():
    # In definition order: a later test may read a table an earlier one wrote.
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    passed = failed = 0
    keep = os.environ.get("PAIMON_KEEP_WAREHOUSE")  # a directory to leave the tables in
    if keep:
        os.makedirs(keep, exist_ok=False)
    with tempfile.TemporaryDirectory() as tmp:
        wh = keep or tmp
        for name, f in tests:
            try:
                f(wh)
                passed += 1
                print(f"ok   {name}")
            except Exception:
                failed += 1
                print(f"FAIL {name}")
                traceback.print_exc()
    print("Paimon's Java reader:", "checked every table" if JAVA_CP else "not run")
    print("the paimon crate's reader:", "checked every table" if RUST_READ_BIN else "not run")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
