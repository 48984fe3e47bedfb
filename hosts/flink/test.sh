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
# The Chicory runtime (ComponentRuntime.CHICORY): the pure-Java binding hosts/jvm, built by
# Maven (Chicory from Maven Central into ~/.m2), beside Flink's jars on every classpath.
"${MVN:-mvn}" -B -q -f hosts/jvm/pom.xml package -Dmaven.test.skip=true >&2
JVM_CP="$ROOT/hosts/jvm/target/classes:$(cat "$ROOT/hosts/jvm/target/runtime.classpath")"
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
"${JAVAC[@]}" -Xlint:deprecation -d "$OUT/classes" -cp "$JVM_CP:$LIB/*" $(find hosts/flink/src/main/java -name '*.java')
# (the *MiniClusterTest, SinkCoordinatorTest and NativeBundleTest classes are the Maven build's
# JUnit tests, not this runner's: no JUnit here)
"${JAVAC[@]}" -d "$OUT/test-classes" -cp "$OUT/classes:$JVM_CP:$LIB/*" $(find hosts/flink/src/test/java -name '*.java' ! -name '*MiniClusterTest.java' ! -name 'NativeBundleTest.java' ! -name 'SinkCoordinatorTest.java')
java -Xmx1g -XX:-UsePerfData \
  -Djava.io.tmpdir="$JTMP" \
  -Dsinkcoord.native.library="$NATIVE" \
  -Dsinkcoord.test.dir="$OUT/tmp" \
  -Dlog4j2.configurationFile="$ROOT/hosts/flink/src/test/resources/log4j2-test.properties" \
  -cp "$OUT/test-classes:$OUT/classes:$JVM_CP:$LIB/*" \
  io.sinkcoordinator.flink.FlinkTests "$@"
