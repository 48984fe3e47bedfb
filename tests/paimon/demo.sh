#!/usr/bin/env bash
# `make run`'s reading part. First the simulated job's Apache Paimon table (the warehouse
# ./demo-table, table db.events, written by `sinkcoord simulate --table-format paimon`
# with faults; ./demo-table/expect.json says which records it committed), read back by
# pypaimon. Then a Rust job (paimon-writer's rust-job: the core's Coordinator on a Paimon
# table, every data file written in Rust as Parquet, with a savepoint, storage faults and
# a failover) into ./demo-paimon, read back the same way. pypaimon reads where its venv
# exists (`make paimon-test` makes target/paimon-venv); else the commands that read are
# printed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
py="$root/target/paimon-venv/bin/python"
read_sim=(tests/paimon/read_sim_table.py demo-table db.events demo-table/expect.json)
if [ -x "$py" ]; then
  "$py" "${read_sim[@]}"
else
  echo "read it with pypaimon (tests/paimon/setup.sh makes the venv, ~580 MB, once):"
  echo "  tests/paimon/setup.sh && target/paimon-venv/bin/python ${read_sim[*]}"
fi
cargo build --quiet --release -p sink-coordinator-paimon-writer --example rust-job
wh="$root/demo-paimon"
table="$wh/db.db/events"
rm -rf "$wh"
mkdir -p "$table"
out="$(target/release/examples/rust-job "$table")"
echo "rust-job wrote the Paimon table db.events under $wh: $out"
rows=$(python3 -c 'import json,sys; print(sum(len(v) for v in json.loads(sys.argv[1])["rows"].values()))' "$out")
if [ -x "$py" ]; then
  "$py" tests/paimon/read_table.py "$wh" db.events --expect-ids "$rows"
else
  echo "  target/paimon-venv/bin/python tests/paimon/read_table.py $wh db.events --expect-ids $rows"
fi
