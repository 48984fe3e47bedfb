#!/usr/bin/env bash
# Fetches Apache Paimon's Java reader from Maven Central (pinned) and compiles
# tests/paimon/JavaRead.java against it into target/paimon-java/. Prints the classpath.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/target/paimon-java"
repo="${MAVEN_REPO:-$HOME/.m2/repository}"
# paimon-bundle needs Hadoop's Configuration (shaded client jars), slf4j, and
# snappy for pyarrow's default Parquet compression.
artifacts=(
  org.apache.paimon:paimon-bundle:1.3.1
  org.apache.hadoop:hadoop-client-api:3.3.6
  org.apache.hadoop:hadoop-client-runtime:3.3.6
  org.slf4j:slf4j-api:1.7.36
  org.xerial.snappy:snappy-java:1.1.10.7
)
cp=""
for a in "${artifacts[@]}"; do
  IFS=: read -r g n v <<<"$a"
  jar="$repo/${g//.//}/$n/$v/$n-$v.jar"
  [ -f "$jar" ] || mvn -q dependency:get -Dartifact="$a" -Dtransitive=false >&2
  cp="$cp$jar:"
done
mkdir -p "$out"
if [ ! -f "$out/JavaRead.class" ] || [ "$here/JavaRead.java" -nt "$out/JavaRead.class" ]; then
  javac -d "$out" -cp "$cp" "$here/JavaRead.java" >&2
fi
echo "$cp$out"
