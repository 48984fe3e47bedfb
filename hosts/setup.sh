#!/usr/bin/env bash
# Installs what the cross-runtime hosts need, from the registries only:
#   - hosts/node/node_modules: `npm ci` from package-lock.json (jco 1.35.0)
#   - hosts/python/.venv: a virtualenv with requirements.txt (wasmtime 50.0.1, packaging)
# Idempotent: a second run with nothing changed takes a few seconds.
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
fi

if [ -z "${NODE_ONLY:-}" ]; then
  py="${PYTHON:-python3}"
  venv="$HERE/python/.venv"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  # The pins of requirements.txt, against what the venv has.
  want="$(grep -E '^[A-Za-z0-9_.-]+==' "$HERE/python/requirements.txt" | sort | tr '\n' ' ')"
  have="$("$venv/bin/python" - "$HERE/python/requirements.txt" 2>/dev/null <<'PY' || true
import importlib.metadata as m, sys
names = [l.split("==")[0] for l in open(sys.argv[1]) if "==" in l]
out = []
for n in names:
    try:
        out.append(f"{n}=={m.version(n)}")
    except m.PackageNotFoundError:
        pass
print(" ".join(sorted(out)) + " ")
PY
)"
  if [ "$have" != "$want" ]; then
    "$venv/bin/pip" install --disable-pip-version-check -q -r "$HERE/python/requirements.txt"
  fi
fi
echo "hosts: node $(node --version 2>/dev/null || echo -), jco $(node -p 'require("'"$HERE"'/node/node_modules/@bytecodealliance/jco/package.json").version' 2>/dev/null || echo -), wasmtime-py $("$HERE/python/.venv/bin/python" -c 'import importlib.metadata as m; print(m.version("wasmtime"))' 2>/dev/null || echo -)"
