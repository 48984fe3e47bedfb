#!/usr/bin/env bash
# Cross-runtime comparison: replays every *.trace.json of the given
# directories with up to four runtimes of the same component:
#   rust-native     `sinkcoord replay --native`   (the Rust core, no wasm)
#   rust-component  `sinkcoord replay`            (wasmtime)
#   node            hosts/node/run.mjs            (the installed npm package: its core-module runtime,
#                   or jco with SINK_COORDINATOR_NODE_RUNTIME=jco)
#   python          hosts/python/run.py           (the installed sink_coordinator package, wasmtime-py)
#   jvm             hosts/jvm ScriptRunner        (the Java binding on Chicory; built by `make jvm-test`,
#                   skipped with SKIP_JVM=1)
#   go              hosts/go cmd/sinkcoord-go-run (the Go module on wazero, running the component's
#                   core module dist/…<version>.core.wasm; built here, skipped with SKIP_GO=1)
# Node and Python execute the trace's resolved call script (`sinkcoord script
# TRACE`, written once per trace) and print raw results; `sinkcoord script
# --render RAW TRACE` renders their result documents and state bytes (it
# exits 1 if a host's calls differ from the script).
# and compares, byte for byte:
#   - every runtime's result document with the expected one: the sibling
#     X.result.json if it exists (where it still holds the placeholders of
#     tests/conformance/README.md, "message": "..." and "state_bytes": 0,
#     messages and state lengths are masked in this comparison), else the
#     output of `sinkcoord replay --native`; without either the trace must be
#     malformed (every runtime exits 2, nothing on stdout);
#   - the runtimes' result documents with each other (never masked);
#   - the exit codes (malformed traces: 2 everywhere);
#   - the coordinator's state bytes of every successful `checkpoint` step:
#     every runtime writes them with --states FILE; all files must be equal.
#
#   hosts/compare.sh [--component FILE] [--sinkcoord BIN] [--keep DIR] DIR...
#
# --component     the component every runtime runs (default
#                 $SINK_COORDINATOR_WASM, else the committed
#                 dist/sink-coordinator-<WIT version>.wasm);
#                 sinkcoord gets it as `--component FILE` unless SINKCOORD_ARGS
#                 is set, whose words are passed instead (SINKCOORD_ARGS=" "
#                 runs the binary's embedded component)
# --sinkcoord     the Rust CLI (default target/release/sinkcoord if it exists);
#                 its precompiled components are cached in $SINKCOORD_CACHE_DIR
#                 (default target/cwasm-cache)
# --keep DIR      keep every output under DIR (default: a temporary directory,
#                 removed at the end)
#
# Prints one line per difference and a summary "N passed, M failed"; exits 1
# if anything failed.

set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"

version="$(sed -n 's/^package sink:coordinator@\(.*\);/\1/p' "$REPO/wit/coordinator.wit")"
component="${SINK_COORDINATOR_WASM:-$REPO/dist/sink-coordinator-$version.wasm}"
sinkcoord=""
use_sinkcoord=1
keep=""
dirs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --component) component="$2"; shift 2 ;;
    --sinkcoord) sinkcoord="$2"; use_sinkcoord=1; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n "2,43p" "$0"; exit 0 ;;
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
if [ $use_sinkcoord -eq 1 ] && [ -z "$sinkcoord" ] && [ -x "$REPO/target/release/sinkcoord" ]; then
  sinkcoord="$REPO/target/release/sinkcoord"
fi
if [ ! -x "$sinkcoord" ]; then
  echo "compare.sh: no sinkcoord at \"$sinkcoord\" (run \`make build\`, or pass --sinkcoord BIN)" >&2
  exit 2
fi

NODE="${NODE:-node}"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  # The installed Python package (hosts/python/package.sh, run by setup.sh).
  PYTHON="$REPO/target/python-package/venv/bin/python"
  [ -x "$PYTHON" ] || { echo "compare.sh: no $PYTHON: run hosts/setup.sh (or set PYTHON to one with sink_coordinator installed)" >&2; exit 2; }
fi

if [ -n "$keep" ]; then out="$keep"; mkdir -p "$out"; else out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT; fi

# The JVM binding's script runner (hosts/jvm, `make jvm-test` builds it and the classpath file).
JAVA="${JAVA:-java}"
jvm_runtime=(jvm)
if [ "${SKIP_JVM:-0}" = 1 ]; then
  jvm_runtime=()
else
  jvm_target="$HERE/jvm/target"
  [ -s "$jvm_target/runner.classpath" ] && [ -d "$jvm_target/test-classes" ] \
    || { echo "compare.sh: the JVM host is not built: run \`make jvm-test\` (or set SKIP_JVM=1)" >&2; exit 2; }
  jvm_cp="$(cat "$jvm_target/runner.classpath"):$jvm_target/classes:$jvm_target/test-classes"
fi

# The Go host's script runner (hosts/go/cmd/sinkcoord-go-run), built into target/go-host
# unless GO_RUN names one; it runs the core module beside $component and checks that it is
# that component's.
go_runtime=(go)
if [ "${SKIP_GO:-0}" = 1 ]; then
  go_runtime=()
else
  core="${component%.wasm}.core.wasm"
  [ -f "$core" ] || { echo "compare.sh: no core module $core beside the component (make component writes it; or SKIP_GO=1)" >&2; exit 2; }
  if [ -z "${GO_RUN:-}" ]; then
    GO_RUN="$REPO/target/go-host/sinkcoord-go-run"
    (cd "$HERE/go" && "${GO:-go}" build -o "$GO_RUN" ./cmd/sinkcoord-go-run) \
      || { echo "compare.sh: cannot build the Go host (hosts/go; or SKIP_GO=1)" >&2; exit 2; }
  fi
  export SINK_COORDINATOR_GO_CACHE_DIR="${SINK_COORDINATOR_GO_CACHE_DIR:-$REPO/target/go-cache}"
fi

# Node runs the installed npm package (hosts/node/package.sh, run by setup.sh;
# run.mjs checks that it was built from $component).

runtimes=(node python ${jvm_runtime[@]+"${jvm_runtime[@]}"} ${go_runtime[@]+"${go_runtime[@]}"})
rust_states=0
if [ -n "$sinkcoord" ]; then
  runtimes=(rust-native rust-component node python ${jvm_runtime[@]+"${jvm_runtime[@]}"} ${go_runtime[@]+"${go_runtime[@]}"})
  if "$sinkcoord" replay --help 2>/dev/null | grep -q -- '--states'; then
    rust_states=1
  else
    echo "compare.sh: note: $sinkcoord has no replay --states; its state bytes are not compared" >&2
  fi
  export SINKCOORD_CACHE_DIR="${SINKCOORD_CACHE_DIR:-$REPO/target/cwasm-cache}"
  if [ -n "${SINKCOORD_ARGS+set}" ]; then
    # shellcheck disable=SC2206
    sinkcoord_args=(${SINKCOORD_ARGS})
  else
    sinkcoord_args=(--component "$component")
  fi
fi
echo "compare.sh: runtimes: ${runtimes[*]}" >&2

# Runs one runtime on a trace: stdout, stderr and the state bytes to $base.$rt.*
run() {
  local rt="$1" trace="$2" base="$3"
  local states=(--states "$base.$rt.states")
  rm -f "$base.$rt.states"
  case "$rt" in
    rust-native | rust-component)
      [ $rust_states -eq 1 ] || states=()
      local native=()
      [ "$rt" = rust-native ] && native=(--native)
      "$sinkcoord" "${sinkcoord_args[@]}" replay "${native[@]}" "${states[@]}" "$trace" ;;
    node | python | jvm | go)
      local script="$base.script"
      if [ ! -f "$script.code" ]; then
        "$sinkcoord" script "$trace" >"$script" 2>"$script.err"
        echo $? >"$script.code"
      fi
      local code
      code="$(cat "$script.code")"
      if [ "$code" -ne 0 ]; then cat "$script.err" >&2; return "$code"; fi
      if [ "$rt" = jvm ]; then
        # run by jvm_batch below, before the traces: one JVM for all of them
        [ "$(cat "$base.jvm.batch.code" 2>/dev/null)" = 0 ] || { cat "$base.jvm.batch.err" 2>/dev/null >&2; return 1; }
        cat "$base.jvm.batch"
      elif [ "$rt" = go ]; then
        "$GO_RUN" --core "$core" --component "$component" "$script"
      elif [ "$rt" = node ]; then
        "$NODE" "$HERE/node/run.mjs" --component "$component" "$script"
      else
        "$PYTHON" "$HERE/python/run.py" --component "$component" "$script"
      fi >"$base.$rt.raw" || return 1
      "$sinkcoord" script --render "$base.$rt.raw" "${states[@]}" "$trace" ;;
  esac >"$base.$rt.json" 2>"$base.$rt.err"
}

# Hand-derived expected results (tests/conformance/README.md) may still hold
# placeholders for the implementation-defined parts: error messages "..."
# and state_bytes 0. Where the expected file has them, it is compared with
# every message and state length masked; elsewhere byte for byte.
mask() { sed -E 's/"message": "(\\.|[^"\\])*"/"message": "..."/g; s/"state_bytes": [0-9]+/"state_bytes": 0/g' "$1"; }
same_result() {
  if cmp -s "$1" "$2"; then return 0; fi
  if grep -q -e '"message": "\.\.\."' -e '"state_bytes": 0[,}]' "$1"; then
    cmp -s <(mask "$1") <(mask "$2")
    return
  fi
  return 1
}

# The JVM runs every trace's script in one process (a JVM start and a module load per trace
# would cost more than the traces): the scripts first (reused by node and python), then one
# `ScriptRunner --batch`; run() renders each raw result like node's and python's.
jvm_batch() {
  local list="$out/jvm.batch" n=0 dir trace base script
  : >"$list"
  for dir in "${dirs[@]}"; do
    while IFS= read -r -d '' trace; do
      n=$((n + 1))
      base="$out/$n-$(basename "$trace" .trace.json)"
      script="$base.script"
      rm -f "$base.jvm.batch" "$base.jvm.batch.code" "$base.jvm.batch.err"
      if [ ! -f "$script.code" ]; then
        "$sinkcoord" script "$trace" >"$script" 2>"$script.err"
        echo $? >"$script.code"
      fi
      [ "$(cat "$script.code")" -eq 0 ] && printf '%s\t%s\n' "$script" "$base.jvm.batch" >>"$list"
    done < <(find "$dir" -name '*.trace.json' -print0 | sort -z)
  done
  "$JAVA" -cp "$jvm_cp" io.sinkcoordinator.jvm.ScriptRunner --component "$component" --batch "$list" \
    || echo "compare.sh: the JVM ScriptRunner exited $?" >&2
}
[ ${#jvm_runtime[@]} -gt 0 ] && jvm_batch

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

    for rt in "${runtimes[@]}"; do
      run "$rt" "$trace" "$base"
      echo $? >"$base.$rt.code"
    done

    # The expected result and exit code.
    if [ -f "$expected" ]; then
      exp_file="$expected"
      exp_code=0
    elif [ -n "$sinkcoord" ]; then
      exp_file="$base.rust-native.json"
      exp_code="$(cat "$base.rust-native.code")"
      if [ "$exp_code" -ne 0 ] && [ "$exp_code" -ne 2 ]; then
        fail "$trace: sinkcoord --native exited $exp_code: $(head -c 300 "$base.rust-native.err")"
        failed=$((failed + 1))
        continue
      fi
    else
      exp_file=""
      exp_code=2
    fi

    # Every runtime against the expected result, then against the first
    # runtime (byte for byte, both the result and the state bytes).
    ref=""
    for rt in "${runtimes[@]}"; do
      code="$(cat "$base.$rt.code")"
      if [ "$code" -ne "$exp_code" ]; then
        fail "$trace: $rt exited $code, expected $exp_code: $(head -c 300 "$base.$rt.err")"
      elif [ "$exp_code" -eq 2 ]; then
        [ -s "$base.$rt.json" ] && fail "$trace: $rt printed a result for a malformed trace"
      elif ! same_result "$exp_file" "$base.$rt.json"; then
        fail "$trace: $rt result differs from $(basename "$exp_file"):"
        diff "$exp_file" "$base.$rt.json" | head -8 | sed 's/^/    /'
      elif [ -n "$ref" ] && ! cmp -s "$base.$ref.json" "$base.$rt.json"; then
        fail "$trace: $rt result differs from $ref's:"
        diff "$base.$ref.json" "$base.$rt.json" | head -8 | sed 's/^/    /'
      fi
      [ -z "$ref" ] && ref="$rt"
    done
    if [ "$exp_code" -eq 0 ] && [ $ok -eq 1 ]; then
      ref=""
      for rt in "${runtimes[@]}"; do
        case "$rt" in rust-*) [ $rust_states -eq 1 ] || continue ;; esac
        if [ ! -f "$base.$rt.states" ]; then
          fail "$trace: $rt wrote no state bytes file"
        elif [ -z "$ref" ]; then
          ref="$rt"
        elif ! cmp -s "$base.$ref.states" "$base.$rt.states"; then
          fail "$trace: checkpoint state bytes differ between $ref and $rt:"
          diff "$base.$ref.states" "$base.$rt.states" | head -6 | sed 's/^/    /'
        fi
      done
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
