#!/usr/bin/env python3
"""One build graph (issue 25, item 2): after `cargo test --release --workspace`
has built everything, building any one package on its own must reuse the
workspace's wasmtime, not compile a second copy with other features.

The workspace-hack crate (cargo-hakari, `.config/hakari.toml`) unifies the
features of every host-side crate. This script builds each package that a
user or `make test` builds alone, reads cargo's JSON messages, and fails
naming every wasmtime or cranelift crate that was compiled again (`fresh`
false). When cargo-hakari is installed, it also checks that the hack is up
to date (`cargo hakari generate --diff`, `manage-deps --dry-run`).

    python3 tests/build-graph/check.py [CARGO]
"""

import json
import shutil
import subprocess
import sys

CARGO = sys.argv[1] if len(sys.argv) > 1 else "cargo"
# What is built alone: the CLI (make build), the Flink connector's JNI
# library (make flink-test), the documented examples, the build tool.
BUILDS = [
    ["-p", "sinkcoord"],
    ["-p", "sink-coordinator-flink"],
    ["-p", "sink-coordinator-host", "--example", "embed"],
    ["-p", "sink-coordinator-host", "--example", "tokio"],
    ["-p", "xtask"],
]
HEAVY = ("wasmtime", "cranelift", "pulley", "wasmparser", "wit-component")


def rebuilt(args):
    cmd = [CARGO, "build", "--release", "--message-format=json", *args]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"build-graph: `{' '.join(cmd)}` failed (exit {out.returncode})")
    names = []
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and not msg.get("fresh", True):
            names.append(msg["target"]["name"])
    return names


def main():
    failed = False
    if shutil.which("cargo-hakari"):
        for check in (["generate", "--diff"], ["manage-deps", "--dry-run"]):
            r = subprocess.run([CARGO, "hakari", *check], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                failed = True
                print(f"build-graph: `cargo hakari {' '.join(check)}` says the hack is stale:\n{r.stdout}"
                      "run `cargo hakari generate && cargo hakari manage-deps`", file=sys.stderr)
    else:
        print("build-graph: cargo-hakari is not installed; checking the builds only")
    for args in BUILDS:
        names = rebuilt(args)
        heavy = sorted({n for n in names if n.startswith(HEAVY)})
        what = " ".join(args)
        if heavy:
            failed = True
            print(f"build-graph: `cargo build --release {what}` compiled again: {', '.join(heavy)} "
                  "(its features differ from the workspace's: regenerate the workspace-hack crate, "
                  "`cargo hakari generate && cargo hakari manage-deps`)", file=sys.stderr)
        else:
            print(f"build-graph: `cargo build --release {what}`: {len(names)} crate(s) compiled, "
                  f"none of wasmtime's ({', '.join(names) or 'nothing'})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
