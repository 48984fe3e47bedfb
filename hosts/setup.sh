#!/usr/bin/env bash
# Installs what the cross-runtime hosts need, from the registries only:
#   - hosts/node/node_modules: `npm ci` from package-lock.json (jco 1.35.0)
#   - target/node-package/project: a fresh project with the npm package's
#     tarball installed (hosts/node/package.sh: npm pack, npm install)
#   - target/python-package/venv: a fresh virtualenv with the Python package's
#     wheel and its s3 extra (hosts/python/package.sh: hatchling, wasmtime-py
#     50, packaging, obstore 0.12 for ObjectStoreStorage)
# Idempotent: a second run takes about 10 seconds (the venv is made anew).
#   NODE_ONLY=1 / PYTHON_ONLY=1 restrict it to one host; PYTHON picks the
#   interpreter for the venv (default python3).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ -z "${PYTHON_ONLY:-}" ]; then
  command -v node >/dev/null || { echo "setup.sh: node is not installed (Node >= 20 needed)" >&2; exit 1; }
  lock="$HERE/node/package-lock.json"
  stamp="$HERE/node/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ] || [ ! -f "$HERE/node/node_modules/@bytecodealliance/jco/package.json" ]; then
    (cd "$HERE/node" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  # The npm package: packed (its prepack transpiles the component with jco)
  # and the tarball installed into a fresh project (target/node-package/project).
  "$HERE/node/package.sh" >/dev/null
fi

if [ -z "${NODE_ONLY:-}" ]; then
  # The Python package: its wheel built from this checkout, installed into a
  # fresh venv (target/python-package/venv) the way a user installs it.
  "$HERE/python/package.sh" >/dev/null
fi
py="$HERE/../target/python-package/venv/bin/python"
echo "hosts: node $(node --version 2>/dev/null || echo -), jco $(node -p 'require("'"$HERE"'/node/node_modules/@bytecodealliance/jco/package.json").version' 2>/dev/null || echo -), sink-coordinator (Python) $("$py" -c 'import importlib.metadata as m; print(m.version("sink-coordinator"), "on wasmtime-py", m.version("wasmtime"), "with obstore", m.version("obstore"))' 2>/dev/null || echo -)"
