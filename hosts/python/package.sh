#!/usr/bin/env bash
# Builds the Python package's wheel from this checkout (hatchling from PyPI,
# in pip's isolated build environment) and installs it into a FRESH virtual
# environment, the way a user would:
#
#   hosts/python/package.sh [VENV]     default VENV: <repo>/target/python-package/venv
#
# The wheel is left in <repo>/target/python-package/wheels/. It is installed
# with its `s3` extra (obstore, for ObjectStoreStorage and its tests; Python
# 3.11 or later). Prints the venv's python on stdout. PYTHON picks the
# interpreter (default python3).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/paths.sh"
venv="${1:-$out/venv}"

rm -rf "$venv" "$wheels"
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip wheel "${pip[@]}" --no-deps -w "$wheels" "$HERE" >&2
wheel="$(echo "$wheels"/sink_coordinator-*.whl)"
"$venv/bin/python" -m pip install "${pip[@]}" "$wheel[s3]" >&2
echo "$venv/bin/python"
