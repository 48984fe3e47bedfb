#!/usr/bin/env bash
# Cross-runtime comparison: replays every *.trace.json of the given
# directories with the Node (jco) and the Python (wasmtime-py) hosts and
# compares, byte for byte:
#   - each host's result document with the expected one: the sibling
#     X.result.json if it exists (where it still holds the placeholders of
#     tests/conformance/README.md, "message": "..." and "state_bytes": 0,
#     messages and state lengths are masked on both sides), else the output
#     of `sinkcoord replay`
#     when --sinkcoord is given; a trace with neither must be malformed
#     (every host exits 2, nothing on stdout);
#   - the exit codes (malformed traces: 2 everywhere);
#   - the coordinator's state bytes of every successful `checkpoint` step,
#     Node against Python (each host writes them with --states FILE), and
#     against the Rust tool when it supports --states too.
#
#   hosts/compare.sh [--component FILE] [--sinkcoord BIN] [--keep DIR] DIR...
#
# --component  the component both hosts run (default $SINK_COORDINATOR_WASM,
#              else target/sink-coordinator.wasm)
# --sinkcoord  the Rust CLI, used where no X.result.json exists (the binary
#              runs its embedded component unless --component is also given
#              to it: set SINKCOORD_ARGS="--component FILE" to pass that)
# --keep DIR   keep every output under DIR (default: a temporary directory,
#              removed at the end)
#
# Prints one line per difference and a summary "N passed, M failed"; exits 1
# if anything failed.

set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"

component="${SINK_COORDINATOR_WASM:-$REPO/target/sink-coordinator.wasm}"
sinkcoord=""
keep=""
dirs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --component) component="$2"; shift 2 ;;
    --sinkcoord) sinkcoord="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n "2,29p" "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
if [ ${#dirs[@]} -eq 0 ]; then
  echo "usage: hosts/compare.sh [--component FILE] [--sinkcoord BIN] [--keep DIR] DIR..." >&2
  exit 2
fi
if [ ! -f "$component" ]; then
  echo "compare.sh: no component at $component (run \`make wasm\`, or pass --component)" >&2
  exit 2
fi

NODE="${NODE:-node}"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x "$HERE/python/.venv/bin/python" ]; then PYTHON="$HERE/python/.venv/bin/python"; else PYTHON=python3; fi
fi

if [ -n "$keep" ]; then out="$keep"; mkdir -p "$out"; else out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT; fi

# Transpile once up front (the Node replayer would do it on first use).
"$NODE" "$HERE/node/transpile.mjs" "$component" >/dev/null || { echo "compare.sh: jco transpile failed" >&2; exit 1; }

rust_states=0
if [ -n "$sinkcoord" ] && "$sinkcoord" replay --help 2>/dev/null | grep -q -- '--states'; then rust_states=1; fi

# Hand-derived expected results (tests/conformance/README.md) may still hold
# placeholders for the implementation-defined parts: error messages "..."
# and state_bytes 0. Where the expected file has them, both sides are
# compared with every message and state length masked; elsewhere byte for byte.
mask() { sed -E 's/"message": "(\\.|[^"\\])*"/"message": "..."/g; s/"state_bytes": [0-9]+/"state_bytes": 0/g' "$1"; }
same_result() {
  if cmp -s "$1" "$2"; then return 0; fi
  if grep -q -e '"message": "\.\.\."' -e '"state_bytes": 0[,}]' "$1"; then
    cmp -s <(mask "$1") <(mask "$2")
    return
  fi
  return 1
}

passed=0
failed=0
n=0
fail() { echo "FAIL $1"; ok=0; }

for dir in "${dirs[@]}"; do
  while IFS= read -r -d '' trace; do
    n=$((n + 1))
    name="$(basename "$trace" .trace.json)"
    base="$out/$n-$name"
    expected="${trace%.trace.json}.result.json"
    ok=1

    # Expected result and exit code.
    exp_code=0
    exp_file=""
    if [ -f "$expected" ]; then
      exp_file="$expected"
    elif [ -n "$sinkcoord" ]; then
      rust_args=(replay)
      [ $rust_states -eq 1 ] && rust_args+=(--states "$base.rust.states")
      # shellcheck disable=SC2086
      "$sinkcoord" ${SINKCOORD_ARGS:-} "${rust_args[@]}" "$trace" >"$base.rust.json" 2>"$base.rust.err"
      exp_code=$?
      exp_file="$base.rust.json"
      if [ $exp_code -ne 0 ] && [ $exp_code -ne 2 ]; then
        fail "$trace: sinkcoord exited $exp_code: $(head -c 300 "$base.rust.err")"
        failed=$((failed + 1))
        continue
      fi
    else
      exp_code=2
    fi

    for host in node python; do
      if [ $host = node ]; then
        "$NODE" "$HERE/node/replay.mjs" --component "$component" --states "$base.$host.states" "$trace" >"$base.$host.json" 2>"$base.$host.err"
      else
        "$PYTHON" "$HERE/python/replay.py" --component "$component" --states "$base.$host.states" "$trace" >"$base.$host.json" 2>"$base.$host.err"
      fi
      code=$?
      if [ $code -ne $exp_code ]; then
        fail "$trace: $host exited $code, expected $exp_code: $(head -c 300 "$base.$host.err")"
      elif [ $exp_code -eq 0 ] && ! same_result "$exp_file" "$base.$host.json"; then
        fail "$trace: $host result differs from $(basename "$exp_file"):"
        diff "$exp_file" "$base.$host.json" | head -8 | sed 's/^/    /'
      elif [ $exp_code -eq 2 ] && [ -s "$base.$host.json" ]; then
        fail "$trace: $host printed a result for a malformed trace"
      fi
    done
    if [ $exp_code -eq 0 ] && [ $ok -eq 1 ]; then
      if ! cmp -s "$base.node.states" "$base.python.states"; then
        fail "$trace: checkpoint state bytes differ between node and python:"
        diff "$base.node.states" "$base.python.states" | head -6 | sed 's/^/    /'
      elif [ -f "$base.rust.states" ] && ! cmp -s "$base.rust.states" "$base.node.states"; then
        fail "$trace: checkpoint state bytes differ between sinkcoord and the hosts"
      fi
    fi
    if [ $ok -eq 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done < <(find "$dir" -name '*.trace.json' -print0 | sort -z)
done

if [ $n -eq 0 ]; then
  echo "compare.sh: no *.trace.json under ${dirs[*]}" >&2
  exit 2
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
