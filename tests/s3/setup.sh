#!/usr/bin/env bash
# Installs moto[server] (requirements.txt, from PyPI) into a virtualenv under
# target/moto-venv, which the S3 tests start (tests/s3/moto_server.py,
# testkit/src/moto.rs). Idempotent: a second run takes a second.
#   PYTHON picks the interpreter for the venv (default python3).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
venv="${MOTO_VENV:-$ROOT/target/moto-venv}"
py="${PYTHON:-python3}"
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
want="$(sed -n 's/^moto\[server\]==//p' "$HERE/requirements.txt")"
have="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("moto"))' 2>/dev/null || true)"
# The server extra (flask) must be there too, not only moto.
if [ "$have" != "$want" ] || ! "$venv/bin/python" -c 'import flask, moto.server' 2>/dev/null; then
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$HERE/requirements.txt"
fi
echo "moto $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("moto"))') in $venv"
