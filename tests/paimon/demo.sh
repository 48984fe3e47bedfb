#!/usr/bin/env bash
# `make run`'s Paimon part: a Rust job (paimon-writer's rust-job: the core's Coordinator on
# an Apache Paimon table, every data file written in Rust as Parquet, with a savepoint,
# storage faults and a failover) into ./demo-paimon, then read back by pypaimon where its
# venv exists (`make paimon-test` makes target/paimon-venv), else the command that does.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
cargo build --quiet --release -p sink-coordinator-paimon-writer --example rust-job
wh="$root/demo-paimon"
table="$wh/db.db/events"
rm -rf "$wh"
mkdir -p "$table"
out="$(target/release/examples/rust-job "$table")"
echo "rust-job wrote the Paimon table db.events under $wh: $out"
rows=$(python3 -c 'import json,sys; print(sum(len(v) for v in json.loads(sys.argv[1])["rows"].values()))' "$out")
py="$root/target/paimon-venv/bin/python"
if [ -x "$py" ]; then
  "$py" tests/paimon/read_table.py "$wh" db.events --expect-ids "$rows"
else
  echo "read it with pypaimon (tests/paimon/setup.sh makes the venv, ~580 MB, once):"
  echo "  tests/paimon/setup.sh && target/paimon-venv/bin/python tests/paimon/read_table.py $wh db.events --expect-ids $rows"
fi
