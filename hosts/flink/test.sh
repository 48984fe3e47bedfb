#!/usr/bin/env bash
# Builds the Flink connector (native library, Java sources) and runs its
# tests: `hosts/flink/test.sh [test-name ...]` (all tests by default).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
LIB="$(hosts/flink/setup.sh)"
CARGO="${CARGO:-cargo}"
"$CARGO" build --release -p sink-coordinator-flink
NATIVE="$ROOT/target/release/libsinkcoord_flink.so"
OUT="$ROOT/target/flink"
rm -rf "$OUT/classes" "$OUT/test-classes" "$OUT/tmp"
mkdir -p "$OUT/classes" "$OUT/test-classes" "$OUT/tmp"
javac -Xlint:deprecation -d "$OUT/classes" -cp "$LIB/*" $(find hosts/flink/src/main/java -name '*.java')
javac -d "$OUT/test-classes" -cp "$OUT/classes:$LIB/*" $(find hosts/flink/src/test/java -name '*.java')
exec java -Xmx1g \
  -Dsinkcoord.native.library="$NATIVE" \
  -Dsinkcoord.test.dir="$OUT/tmp" \
  -Dlog4j2.configurationFile="$ROOT/hosts/flink/src/test/resources/log4j2-test.properties" \
  -cp "$OUT/test-classes:$OUT/classes:$LIB/*" \
  io.sinkcoordinator.flink.FlinkTests "$@"
