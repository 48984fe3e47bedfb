#!/usr/bin/env bash
# The JVM rows of `make bench` (BENCHMARKS.md): JMH on the Java binding (Chicory, build-time
# compiled and interpreted), each ÷ Rust-wasmtime's criterion median of the same workload
# (target/criterion, written by make bench's criterion step before this runs).
#
#   hosts/jvm/bench.sh [--quick]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MVN="${MVN:-mvn}"
# test-classes hold the benchmarks (JMH's annotation processor runs at test-compile);
# process-test-classes writes the classpath file.
"$MVN" -B -q -f "$HERE/pom.xml" process-test-classes >&2
cp="$(cat "$HERE/target/runner.classpath"):$HERE/target/classes:$HERE/target/test-classes"
exec "${JAVA:-java}" -cp "$cp" io.sinkcoordinator.jvm.bench.BenchTable "$REPO" "$@"
