#!/usr/bin/env python3
"""`make bench`'s one table: every `| what | now | goal |` row that the run's parts printed
(target/bench/*.md: the core's criterion and callgrind rows with the Node and Python hosts, the
JVM on Chicory, the JNI library, Go on wazero, the Paimon commits), in the order of the files
given, under one header. Detail tables of other shapes (the Paimon bench's per-history tables)
stay in their part's file.

Usage: tests/bench/table.py PART.md... > target/bench/table.md
"""

import datetime
import subprocess
import sys

HEADER = ("what", "now", "goal")


def cells(line):
    """The cells of a markdown table row, or None (a `|` inside backquotes is not a border)."""
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")) or len(line) < 2:
        return None
    out, cell, quoted = [], "", False
    for ch in line[1:-1]:
        if ch == "`":
            quoted = not quoted
        if ch == "|" and not quoted:
            out.append(cell.strip())
            cell = ""
        else:
            cell += ch
    out.append(cell.strip())
    return out


def rows(path):
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            c = cells(line)
            if c is None or len(c) != 3 or tuple(c) == HEADER or set("".join(c)) <= set("-: "):
                continue
            yield c


def main(paths):
    if not paths:
        sys.exit(__doc__)
    found = [(p, list(rows(p))) for p in paths]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if sys.platform == "linux" else "?"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"`make bench` at {commit}, {when}, load average {load} at the end.\n")
    print("| what | now | goal |\n|---|---|---|")
    for _, part in found:
        for what, now, goal in part:
            print(f"| {what} | {now} | {goal} |")
    empty = [p for p, part in found if not part]
    if empty:
        print(f"\nNo rows from: {', '.join(empty)} (see the part's output above).")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
