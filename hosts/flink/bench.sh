#!/usr/bin/env bash
# The JNI rows of `make bench` (BENCHMARKS.md): JMH on the Flink connector's component API, on
# the JNI library and on Chicory, each ÷ Rust-wasmtime's criterion median of the same workload
# (target/criterion, written by make bench's criterion step before this runs), and what a Flink
# checkpoint cycle at P = 256 costs the JobManager (SinkCoordinator driven as Flink would).
#
#   hosts/flink/bench.sh [--quick]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MVN="${MVN:-mvn}"
CARGO="${CARGO:-cargo}"
# The JNI library, bundled into target/classes by the build (native.library.dir) and extracted
# at load, as for the tests; the Chicory binding installed for the connector's build to resolve.
"$CARGO" build --release -q --manifest-path "$REPO/Cargo.toml" -p sink-coordinator-flink >&2
LIB_DIR="${CARGO_TARGET_DIR:-$REPO/target}/release"
"$MVN" -B -q -f "$REPO/hosts/jvm/pom.xml" install -DskipTests >&2
# test-classes hold the benchmarks (JMH's annotation processor runs at test-compile);
# process-test-classes writes the classpath file.
"$MVN" -B -q -f "$HERE/pom.xml" process-test-classes -Dnative.library.dir="$LIB_DIR" >&2
cp="$(cat "$HERE/target/runner.classpath"):$HERE/target/classes:$HERE/target/test-classes"
exec "${JAVA:-java}" -cp "$cp" io.sinkcoordinator.flink.bench.BenchTable "$REPO" "$@"
