#!/usr/bin/env python3
"""Compare the oracle with the implementation (native replay) on trace files.

usage: compare.py [--wasm] DIR_OR_FILES...   (run from the repo root after `make build`)
Messages are masked and state_bytes zeroed on both sides.
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

args = sys.argv[1:]
native = True
if args and args[0] == "--wasm":
    native = False
    args = args[1:]
files = []
for a in args:
    files += sorted(glob.glob(os.path.join(a, "*.trace.json"))) if os.path.isdir(a) else [a]
env = dict(os.environ, SINKCOORD_CACHE_DIR=os.path.abspath("target/cwasm-cache"))
bad = 0
skipped = 0
for f in files:
    # The oracle's storage model never fails a read: traces with get/list
    # faults are outside it (their results are pinned by the Rust tests).
    if any(st.get("op") == "storage_fault" and st.get("call") in ("get", "list")
           for st in json.load(open(f)).get("steps", [])):
        skipped += 1
        continue
    cmd = ["target/release/sinkcoord", "replay"] + (["--native"] if native else []) + [f]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print("IMPL-ERROR %s rc=%d %s" % (f, p.returncode, p.stderr.strip()[:300]))
        bad += 1
        continue
    got = oracle.mask(oracle.replay(json.load(open(f))))
    imp = oracle.mask(p.stdout)
    if got != imp:
        bad += 1
        print("DIFF %s" % f)
        oracle.print_diff(got, imp, "impl  ")
print("%d traces, %d differ, %d skipped (read faults)" % (len(files) - skipped, bad, skipped))
sys.exit(1 if bad else 0)
