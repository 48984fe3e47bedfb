"""Reads a Paimon table with pypaimon and prints what a reader sees (`make run`).

    python read_table.py WAREHOUSE DB.TABLE [--expect-ids N]

Prints the number of rows, the snapshots' commit users and identifiers, and every tag with
its row count. With --expect-ids N, checks that the ids are exactly 0 .. N-1, each once.
"""
import argparse
import sys

from pypaimon import CatalogFactory


def rows_of(table):
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("warehouse")
    p.add_argument("table")
    p.add_argument("--expect-ids", type=int)
    a = p.parse_args()
    table = CatalogFactory.create({"warehouse": a.warehouse}).get_table(a.table)
    rows = rows_of(table)
    latest = table.snapshot_manager().get_latest_snapshot()
    print(f"pypaimon reads {a.table}: {len(rows)} rows, latest snapshot {latest.id} "
          f"(commit user {latest.commit_user}, identifier {latest.commit_identifier})")
    tags = table.list_tags()
    for name in sorted(tags):
        n = len(rows_of(table.copy({"scan.tag-name": name})))
        print(f"  tag {name}: {n} rows")
    if a.expect_ids is not None:
        ids = sorted(r["id"] for r in rows)
        if ids != list(range(a.expect_ids)):
            print(f"expected ids 0..{a.expect_ids - 1} exactly once, read {len(ids)} rows",
                  file=sys.stderr)
            sys.exit(1)
        print(f"  every id 0..{a.expect_ids - 1} exactly once")


if __name__ == "__main__":
    main()
