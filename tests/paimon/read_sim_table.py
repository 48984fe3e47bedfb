"""Reads a Paimon table the simulator wrote, with pypaimon, and checks every record once.

    python read_sim_table.py WAREHOUSE DB.TABLE EXPECT.json

`sinkcoord simulate --table-format paimon --table WAREHOUSE/DB.db/TABLE --paimon-expect
EXPECT.json` writes the table and what its readers must find: per `job:subtask`, the
`[lo, hi)` ranges of the records committed as of the latest snapshot and as of each tag.
Each row of the table is one record `(job, subtask, record)`. This reader checks, with
nothing but pypaimon and that file, that the table holds each of those records exactly
once (no record lost, none twice, none that was never committed), and the same as of each
savepoint tag (pypaimon's `scan.tag-name`), whose Paimon times (creation, retention) are
the simulator's. Exit 1 with the first difference otherwise.
"""
import argparse
import collections
import datetime
import json
import sys

from pypaimon import CatalogFactory


JOBS = {"a": 0, "b": 1}


def record_id(job, subtask, record):
    """The `id` column of a record (testkit/src/sim/paimon.rs, `record_id`)."""
    return JOBS[job] << 56 | subtask << 32 | record


def rows_of(table):
    rb = table.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    for r in rows:
        if r["id"] != record_id(r["job"], r["subtask"], r["record"]):
            raise AssertionError(f"row {r} has the id of another record")
    return collections.Counter((r["job"], r["subtask"], r["record"]) for r in rows)


def expected(ranges):
    out = collections.Counter()
    for key, spans in ranges.items():
        job, subtask = key.split(":")
        for lo, hi in spans:
            for record in range(lo, hi):
                out[(job, int(subtask), record)] += 1
    return out


def expected_ids(ranges):
    """The sorted ids of `expected(ranges)` (what the readers of an `id` column return)."""
    return sorted(record_id(*k) for k, n in expected(ranges).items() for _ in range(n))


def compare(what, got, want):
    """None if equal, else the first difference in words."""
    if got == want:
        return None
    twice = sorted(k for k, n in got.items() if n > 1)
    if twice:
        return f"{what}: record {twice[0]} is in the table {got[twice[0]]} times"
    missing = sorted(want - got)
    if missing:
        return f"{what}: {len(missing)} committed record(s) missing, first {missing[0]}"
    extra = sorted(got - want)
    return f"{what}: {len(extra)} record(s) that were never committed, first {extra[0]}"


def check_tag_times(table, tag, times):
    """None if pypaimon reads Paimon's own times of `tag` (its `tagCreateTime`, a zoneless
    time the coordinator writes in UTC, and `tagTimeRetained`) as the simulator set them."""
    if times is None:
        return f"tag {tag}: the simulator gave no times"
    t = table.tag_manager().get(tag)
    created = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=times["created_ms"])
    if t is None or t.tag_create_time != created:
        return f"tag {tag}: pypaimon reads the creation time {t and t.tag_create_time}, not {created}"
    retained = times["retained_ms"]
    want = None if retained is None else datetime.timedelta(milliseconds=retained)
    if t.tag_time_retained != want:
        return f"tag {tag}: pypaimon reads the retention {t.tag_time_retained}, not {want}"
    return None


def check(warehouse, name, want):
    """Reads table `name` of `warehouse` with pypaimon against `want` (the simulator's
    JSON). Returns (a summary line, the problems found)."""
    table = CatalogFactory.create({"warehouse": warehouse}).get_table(name)
    problems = []
    latest = table.snapshot_manager().get_latest_snapshot()
    latest_id = latest.id if latest else 0
    if latest_id != want["latest_snapshot"]:
        problems.append(f"the latest snapshot is {latest_id}, the simulator left "
                        f"{want['latest_snapshot']}")
    rows = rows_of(table) if latest_id else collections.Counter()
    problem = compare("latest snapshot", rows, expected(want["rows"]))
    if problem:
        problems.append(problem)
    tags = sorted(table.list_tags())
    if tags != sorted(want["tags"]):
        problems.append(f"pypaimon lists the tags {tags}, the simulator left "
                        f"{sorted(want['tags'])}")
    for tag in sorted(set(tags) & set(want["tags"])):
        got = rows_of(table.copy({"scan.tag-name": tag}))
        problem = compare(f"tag {tag}", got, expected(want["tags"][tag]))
        if problem:
            problems.append(problem)
        problem = check_tag_times(table, tag, want.get("tag_times", {}).get(tag))
        if problem:
            problems.append(problem)
    summary = (f"pypaimon reads {name}: {sum(rows.values())} records in {latest_id} snapshots, "
               f"{len(tags)} tag(s)")
    return summary, problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("warehouse")
    p.add_argument("table")
    p.add_argument("expect")
    a = p.parse_args()
    with open(a.expect) as f:
        want = json.load(f)
    summary, problems = check(a.warehouse, a.table, want)
    print(summary)
    if problems:
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        sys.exit(1)
    print("  every committed record exactly once, as of the latest snapshot and of each tag")


if __name__ == "__main__":
    main()
