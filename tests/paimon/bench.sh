#!/usr/bin/env bash
# Paimon commit benchmark (issue 22, item 6; BENCHMARKS.md "Paimon commits"): the core's
# commits on the Paimon and the native format against pypaimon's own commit, on a local
# directory and on S3 (moto), after histories of 10, 1,000 and 10,000 snapshots. Prints
# markdown tables; arguments go to bench.py (--lengths, --commits, --s3-commits, --no-s3,
# --work DIR, --json FILE). About 2 to 3 minutes on 2 cores.
#
# PAIMON_BENCH_S3=1 adds the core's own S3 rows: testkit's example paimon_bench_s3 runs the
# same commits on the host's object-store storage, which is in the wasmtime crate (a
# longer build; the run also uploads the native histories, about a minute more).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
"$here/setup.sh"                        # pypaimon 2.1.0 in target/paimon-venv
"$root/tests/s3/setup.sh" >/dev/null    # moto in target/moto-venv
target="${CARGO_TARGET_DIR:-$root/target}"
CARGO_TARGET_DIR="$target" cargo build --quiet --release -p sink-coordinator-paimon-writer \
  --example paimon-bench
export PAIMON_BENCH_BIN="$target/release/examples/paimon-bench"
if [ "${PAIMON_BENCH_S3:-0}" = 1 ]; then
  CARGO_TARGET_DIR="$target" cargo build --quiet --release -p sink-coordinator-testkit \
    --example paimon_bench_s3
  export PAIMON_BENCH_S3_BIN="$target/release/examples/paimon_bench_s3"
fi
exec "$root/target/paimon-venv/bin/python" "$here/bench.py" "$@"
