#!/usr/bin/env bash
# The installed package's types (py.typed): mypy --strict over the package as
# installed from the wheel, and over the examples of its README, of
# docs/hosts/python.md and of the package's docstring (a user's code
# type-checks against it). Uses the wheel
# package.sh built and a venv of its own with mypy from PyPI
# (target/python-package/mypy-venv, kept between runs).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/paths.sh"
venv="$out/mypy-venv"
work="$out/typecheck"

[ -x "$venv/bin/mypy" ] || { "${PYTHON:-python3}" -m venv "$venv" && "$venv/bin/python" -m pip install "${pip[@]}" mypy==2.4.1; }
"$venv/bin/python" -m pip install "${pip[@]}" --force-reinstall --no-deps "$wheels"/sink_coordinator-*.whl
wheel="$(echo "$wheels"/sink_coordinator-*.whl)"
# With its s3 extra: object_storage.py is checked against obstore's types.
"$venv/bin/python" -m pip install "${pip[@]}" "$wheel[s3]"
rm -rf "$work" && mkdir -p "$work"
"$venv/bin/python" - "$HERE/README.md" "$REPO/docs/hosts/python.md" "$work" "$HERE/src/sink_coordinator/__init__.py" <<'PY'
import re, sys
import ast, textwrap
for i, page in enumerate(sys.argv[1:3]):
    code = re.search(r"```python\n(.*?)```", open(page, encoding="utf-8").read(), re.S).group(1)
    open(f"{sys.argv[3]}/example_{i}.py", "w", encoding="utf-8").write(code)
# The docstring's example: its indented block (help(sink_coordinator) shows it).
doc = ast.get_docstring(ast.parse(open(sys.argv[4], encoding="utf-8").read())) or ""
block = "\n".join(l for l in doc.splitlines() if l.startswith("    ") or not l.strip())
code = textwrap.dedent(block).strip()
assert "from sink_coordinator import" in code, "no example in the package docstring"
open(f"{sys.argv[3]}/example_docstring.py", "w", encoding="utf-8").write(code + "\n")
PY
cd "$work"
"$venv/bin/mypy" --strict --no-incremental -p sink_coordinator
"$venv/bin/mypy" --strict --no-incremental example_0.py example_1.py example_docstring.py
