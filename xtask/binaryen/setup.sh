#!/usr/bin/env bash
# Installs the pinned binaryen (package-lock.json beside this script) from
# the npm registry into target/binaryen, for the component build's wasm-opt
# step (xtask/src/build.rs). Idempotent: nothing to do once installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/../../target/binaryen"
if [ -f "$dest/node_modules/.package-lock.json" ] && cmp -s "$here/package-lock.json" "$dest/package-lock.json"; then
  exit 0
fi
command -v npm >/dev/null || { echo "binaryen: npm is not installed (Node >= 20 needed for wasm-opt)" >&2; exit 1; }
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
