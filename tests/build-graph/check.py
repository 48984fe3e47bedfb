#!/usr/bin/env python3
"""One build graph (issue 25, item 2): after `cargo test --release --workspace`
has built everything, building any one package on its own must reuse the
workspace's wasmtime, not compile a second copy with other features.

The workspace-hack crate (cargo-hakari, `.config/hakari.toml`) unifies the
features of every host-side crate. This script asks cargo for the artifact
files of the workspace's test build (`cargo test --workspace --no-run`, as
`make test` builds it), then builds each package that a user or `make test`
builds alone and fails naming every wasmtime or cranelift crate whose
artifact is not one of the workspace's: a second copy, with other features.
Artifacts, not `fresh` flags, are compared, so a second copy already cached
by an earlier build is found too. When cargo-hakari is installed, it also
checks that the hack is up to date (`cargo hakari generate --diff`,
`manage-deps --dry-run`).

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
# Target names as cargo reports them (underscores).
HEAVY = ("wasmtime", "cranelift", "pulley", "wasmparser", "wit_component")


def artifacts(cmd):
    """(compiled, heavy): the names of the crates compiled now, and the artifact
    files of every wasmtime-closure crate in the build, by target name."""
    out = subprocess.run([CARGO, *cmd, "--release", "--message-format=json"], stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"build-graph: `cargo {' '.join(cmd)}` failed (exit {out.returncode})")
    compiled, heavy = [], {}
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact":
            continue
        name = msg["target"]["name"]
        if not msg.get("fresh", True):
            compiled.append(name)
        if name.startswith(HEAVY):
            heavy.setdefault(name, set()).update(msg.get("filenames", []))
    return compiled, heavy


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
    _, workspace = artifacts(["test", "--workspace", "--no-run"])
    if not workspace:
        sys.exit("build-graph: the workspace's build has no wasmtime crate: nothing to compare")
    for args in BUILDS:
        names, built = artifacts(["build", *args])
        heavy = sorted(n for n, files in built.items() if not files <= workspace.get(n, set()))
        what = " ".join(args)
        if heavy:
            failed = True
            print(f"build-graph: `cargo build --release {what}` uses a second copy of: {', '.join(heavy)} "
                  "(its features differ from the workspace's: regenerate the workspace-hack crate, "
                  "`cargo hakari generate && cargo hakari manage-deps`)", file=sys.stderr)
        else:
            print(f"build-graph: `cargo build --release {what}`: {len(names)} crate(s) compiled, "
                  f"none of wasmtime's ({', '.join(names) or 'nothing'})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
