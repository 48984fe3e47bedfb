#!/usr/bin/env python3
"""Replays a trace (TRACE-FORMAT v2, writer steps included) through the
sink-coordinator component under wasmtime-py and prints the result
document, byte-identical to `sinkcoord replay TRACE.json`.

    python hosts/python/replay.py [--component FILE] [--states FILE] TRACE.json

--component  the component (default $SINK_COORDINATOR_WASM, else
             <repo>/dist/sink-coordinator-<WIT version>.wasm); its compilation is cached
             in hosts/python/.cache/
--states     also write, per successful `checkpoint` step, one line
             {"step": I, "instance": NAME, "checkpoint": C, "state_hex": HEX}
             to FILE (cross-runtime comparison of the state bytes)

Exit codes: 0 replayed (even if steps returned errors), 1 the host failed,
2 the trace is malformed or the command line is wrong.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
USAGE = "usage: python replay.py [--component FILE] [--states FILE] TRACE.json"


def fail(code: int, message: str) -> "None":
    sys.stderr.write(f"replay.py: {message}\n")
    sys.exit(code)


def component_path(arg):
    if arg:
        return os.path.abspath(arg)
    if os.environ.get("SINK_COORDINATOR_WASM"):
        return os.path.abspath(os.environ["SINK_COORDINATOR_WASM"])
    return dist_component()


def dist_component():
    """The committed artifact of the WIT package version (wit/coordinator.wit)."""
    with open(os.path.join(REPO, "wit", "coordinator.wit"), encoding="utf-8") as f:
        m = re.search(r"^package sink:coordinator@(\S+);", f.read(), re.M)
    if not m:
        fail(1, "wit/coordinator.wit declares no sink:coordinator package version")
    return os.path.join(REPO, "dist", f"sink-coordinator-{m.group(1)}.wasm")


def parse_args(argv):
    args = {"component": None, "states": os.environ.get("SINKCOORD_STATES_OUT") or None, "trace": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--component", "--states"):
            if i + 1 >= len(argv):
                fail(2, f"{a} needs a value\n{USAGE}")
            args[a[2:]] = argv[i + 1]
            i += 1
        elif a in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        elif a.startswith("-") and a != "-":
            fail(2, f"unknown option {a}\n{USAGE}")
        elif args["trace"] is None:
            args["trace"] = a
        else:
            fail(2, f"unexpected argument {a}\n{USAGE}")
        i += 1
    if args["trace"] is None:
        fail(2, f"missing TRACE.json\n{USAGE}")
    return args


def main() -> None:
    args = parse_args(sys.argv[1:])
    try:
        with open(args["trace"], "rb") as f:
            data = f.read()
    except OSError as e:
        fail(1, f"cannot read {args['trace']}: {e}")

    from tracefile import Malformed, parse_trace

    try:
        trace = parse_trace(data)
    except Malformed as e:
        fail(2, f"{args['trace']}: {e}")

    try:
        import host
    except ImportError as e:
        fail(1, f"cannot import wasmtime ({e}): run hosts/setup.sh (pip install -r hosts/python/requirements.txt)")
    from render import render, render_states
    from replayer import HostFailure, replay

    path = component_path(args["component"])
    try:
        runtime = host.Runtime.load(path)
    except Exception as e:  # unreadable file, compile error
        fail(1, f"cannot load the component {path}: {e} (build it with `make wasm`)")
    try:
        result = replay(trace, runtime)
    except Malformed as e:
        fail(2, f"{args['trace']}: {e}")
    except HostFailure as e:
        fail(1, str(e))
    if args["states"]:
        with open(args["states"], "w", encoding="utf-8") as f:
            f.write(render_states(result["states"]))
    out = render(result).encode("utf-8")
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
