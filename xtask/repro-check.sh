#!/usr/bin/env bash
# Reproducibility of the release artifact (issue 14, item 1): builds the
# component twice, here and in a copy of this checkout at another path with
# another, empty CARGO_HOME (its crates downloaded again from the registry),
# and compares the bytes. Both builds run the same xtask binary; what
# differs is everything a build may embed: the checkout path, the cargo home
# and its registry sources, the target directory.
#
#   bash xtask/repro-check.sh        (make repro-check)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
scratch=$(mktemp -d /tmp/sinkcoord-repro.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

cargo build --release -q -p xtask
xtask="$repo/target/release/xtask"

start=$(date +%s)
"$xtask" component --out-dir "$scratch/a" >/dev/null
t_a=$(( $(date +%s) - start ))

# The tracked and untracked (not ignored) files of this checkout, as they
# are in the working tree.
copy="$scratch/elsewhere/another-checkout"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard \
  | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$copy"

start=$(date +%s)
CARGO_HOME="$scratch/cargo-home-2" "$xtask" component --workspace "$copy" --out-dir "$scratch/b" >/dev/null
t_b=$(( $(date +%s) - start ))

# The components (the .core.wasm beside each is a byte range of its component).
a=$(ls "$scratch"/a/*.wasm | grep -v '\.core\.wasm$')
b=$(ls "$scratch"/b/*.wasm | grep -v '\.core\.wasm$')
echo "build 1: $repo, CARGO_HOME ${CARGO_HOME:-$HOME/.cargo}: $(stat -c %s "$a") bytes, sha256 $(sha256sum "$a" | cut -d' ' -f1) (${t_a} s)"
echo "build 2: $copy, CARGO_HOME $scratch/cargo-home-2: $(stat -c %s "$b") bytes, sha256 $(sha256sum "$b" | cut -d' ' -f1) (${t_b} s)"
if cmp -s "$a" "$b"; then
  echo "repro-check: identical"
else
  echo "repro-check: the two builds differ ($(cmp "$a" "$b" | head -1))" >&2
  exit 1
fi
