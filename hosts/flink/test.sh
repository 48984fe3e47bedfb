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
# Java's and Flink's scratch files (the extracted RPC jar, flink-dist-cache-*,
# flink-io-*, flink-netty-shuffle-*, minicluster_*: ~30 MB a run) go to
# $OUT/javatmp, emptied before and after the run, so /tmp stays clean;
# -XX:-UsePerfData keeps hsperfdata out of /tmp (javac's JVM too).
JTMP="$OUT/javatmp"
rm -rf "$OUT/classes" "$OUT/test-classes" "$OUT/tmp" "$JTMP"
mkdir -p "$OUT/classes" "$OUT/test-classes" "$OUT/tmp" "$JTMP"
trap 'rm -rf "$JTMP"' EXIT
JAVAC=(javac -J-XX:-UsePerfData "-J-Djava.io.tmpdir=$JTMP")
"${JAVAC[@]}" -Xlint:deprecation -d "$OUT/classes" -cp "$LIB/*" $(find hosts/flink/src/main/java -name '*.java')
"${JAVAC[@]}" -d "$OUT/test-classes" -cp "$OUT/classes:$LIB/*" $(find hosts/flink/src/test/java -name '*.java')
java -Xmx1g -XX:-UsePerfData \
  -Djava.io.tmpdir="$JTMP" \
  -Dsinkcoord.native.library="$NATIVE" \
  -Dsinkcoord.test.dir="$OUT/tmp" \
  -Dlog4j2.configurationFile="$ROOT/hosts/flink/src/test/resources/log4j2-test.properties" \
  -cp "$OUT/test-classes:$OUT/classes:$LIB/*" \
  io.sinkcoordinator.flink.FlinkTests "$@"
