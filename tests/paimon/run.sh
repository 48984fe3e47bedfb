#!/usr/bin/env bash
# Paimon reader proof: builds the crate's driver examples, then runs the pypaimon test
# (and Paimon's Java reader too, where java and mvn are installed; PAIMON_JAVA=0 skips it;
# and the `paimon` crate's reader, tests/paimon/rust-reader, with PAIMON_RUST_READER=1).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
"$here/setup.sh"
target="${CARGO_TARGET_DIR:-$root/target}"
CARGO_TARGET_DIR="$target" cargo build --quiet --release --manifest-path "$root/paimon/Cargo.toml" \
  --example paimon-commit --example coordinator-job
export PAIMON_COMMIT_BIN="$target/release/examples/paimon-commit"
# The core's Coordinator on a Paimon table (the core's `paimon` feature, turned on by
# the crate's dev-dependency).
export PAIMON_JOB_BIN="$target/release/examples/coordinator-job"
# The same job with its data files written in Rust (paimon-writer: Parquet).
CARGO_TARGET_DIR="$target" cargo build --quiet --release -p sink-coordinator-paimon-writer \
  --example rust-job --example coordinator-steps
export PAIMON_RUST_JOB_BIN="$target/release/examples/rust-job"
# The core's Coordinator step by step (start fresh or restored, events, checkpoints,
# completions), interleaved with pypaimon's commits by the test.
export PAIMON_STEPS_BIN="$target/release/examples/coordinator-steps"
# `sinkcoord expire` on copies of the tables (the readers read them the same).
CARGO_TARGET_DIR="$target" cargo build --quiet --release -p sinkcoord
export SINKCOORD_BIN="$target/release/sinkcoord"
# Apache Paimon's Rust reader (crates.io `paimon`): a standalone crate of its own (its own
# workspace and Cargo.lock), built into its own target dir. PAIMON_RUST_READER=1 runs it
# (`make paimon-rust-test`, which `make test` runs since one build graph made room in its
# budget: the whole paimon-rust-test took 3m50s with a cold reader build on 2 cores); the
# cold build is ~300 crates (arrow, parquet, opendal, tokio, reqwest).
if [ "${PAIMON_RUST_READER:-0}" = 1 ]; then
  cargo build --quiet --release --locked --manifest-path "$here/rust-reader/Cargo.toml" \
    --target-dir "$target/paimon-rust-reader"
  export PAIMON_RUST_READ_BIN="$target/paimon-rust-reader/release/paimon-rust-read"
else
  echo "note: the paimon crate's reader not run (PAIMON_RUST_READER=1 runs it: make paimon-rust-test)"
fi
if [ "${PAIMON_JAVA:-1}" != 0 ] && command -v java >/dev/null && command -v mvn >/dev/null; then
  PAIMON_JAVA_CP="$("$here/java-setup.sh")"
  export PAIMON_JAVA_CP
else
  echo "note: Paimon's Java reader not run (needs java and mvn)"
fi
exec "$root/target/paimon-venv/bin/python" "$here/test_paimon.py"
