#!/usr/bin/env bash
# Fetches Apache Flink's runtime jars once (from the PyPI wheel
# apache-flink-libraries: there is no Maven registry here) into
# target/flink/lib. Idempotent: a second run only checks the cache.
#
#   hosts/flink/setup.sh            prints the lib directory on success
set -euo pipefail

FLINK_VERSION=2.3.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$ROOT/target/flink"
LIB="$CACHE/lib"
WHEEL="apache_flink_libraries-$FLINK_VERSION-py2.py3-none-any.whl"
# The jars a DataStream job in a MiniCluster needs (flink-dist carries the
# runtime and the DataStream API; log4j routes Flink's logging).
JARS="flink-dist-$FLINK_VERSION.jar log4j-api-2.25.3.jar log4j-core-2.25.3.jar log4j-slf4j-impl-2.25.3.jar log4j-1.2-api-2.25.3.jar"

fail() { echo "flink setup: $*" >&2; exit 1; }

command -v java >/dev/null && command -v javac >/dev/null \
  || fail "a JDK (java and javac, version 17 or later) is required; install e.g. openjdk-17-jdk-headless"

complete=1
for jar in $JARS; do [ -s "$LIB/$jar" ] || complete=0; done
if [ "$complete" = 1 ]; then echo "$LIB"; exit 0; fi

mkdir -p "$CACHE" "$LIB"
if [ ! -s "$CACHE/$WHEEL" ]; then
  command -v python3 >/dev/null || fail "python3 with pip is required to download the Flink jars"
  echo "flink setup: downloading apache-flink-libraries==$FLINK_VERSION from PyPI (330 MB, once)" >&2
  if ! python3 -m pip download --quiet --no-deps --dest "$CACHE" "apache-flink-libraries==$FLINK_VERSION" >"$CACHE/download.log" 2>&1; then
    fail "cannot download apache-flink-libraries==$FLINK_VERSION from PyPI (registry unreachable?); see $CACHE/download.log"
  fi
fi
# The wheel is a zip file: Python's zipfile extracts the jars we need.
python3 - "$CACHE/$WHEEL" "$LIB" $JARS <<'PY' || fail "the wheel $CACHE/$WHEEL is damaged; delete it and run again"
import os, sys, zipfile
wheel, lib, jars = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for jar in jars:
        data = z.read("pyflink/lib/" + jar)
        tmp = os.path.join(lib, jar + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(lib, jar))
PY
echo "$LIB"
