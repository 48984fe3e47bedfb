#!/usr/bin/env bash
# Packs the npm package (hosts/node/package: `npm pack`, whose prepack (build.mjs)
# copies the component's core module into core/ and
# transpiles the committed component with jco) and installs the tarball into a
# FRESH project, the way a user would:
#
#   hosts/node/package.sh [PROJECT]     default PROJECT: <repo>/target/node-package/project
#
# The tarball is left in <repo>/target/node-package/. Prints the project's
# directory on stdout. Needs hosts/node/node_modules (npm ci: jco).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
out="$REPO/target/node-package"
project="${1:-$out/project}"
npm=(--no-audit --no-fund --loglevel=error)

mkdir -p "$out"
rm -f "$out"/sink-coordinator-*.tgz
(cd "$HERE/package" && npm pack "${npm[@]}" --pack-destination "$out" >/dev/null)
tarball="$(ls "$out"/sink-coordinator-*.tgz)"
rm -rf "$project"
mkdir -p "$project"
(cd "$project" && npm init -y >/dev/null && npm pkg set type=module && npm install "${npm[@]}" "$tarball" >&2)
echo "$project"
