#!/usr/bin/env python3
"""Independent executable model of SEMANTICS v2.1 + TRACE-FORMAT v2.

Reads a trace JSON and prints the result document in the canonical layout of
tests/conformance/*.result.json, with "..." for error messages and 0 for
state_bytes (both implementation-defined).

Written from the contract only, spec/SEMANTICS.md and spec/TRACE-FORMAT.md of
this repository (../../spec/ from here; not from the Rust code). Storage model (TRACE-FORMAT's portability promise plus the
lead's fixed choices): a commit run makes, in this order, one put per snapshot
it writes (filtered snapshots make none), one put-if-absent per savepoint tag
it tags (also when the tag exists: it is then left as it is), then ONE hint put if it wrote at least one
snapshot or moved entries out of the slots (tests/regressions shows the
implementation's hint after a run that only passed an empty checkpoint). Tag deletions are delete calls. Reads (get/list) never fail here.

Usage: oracle.py TRACE.json            -> result on stdout
       oracle.py --check DIR|FILES     -> compare with *.result.json (masked)
"""
import copy
import json
import sys

from semantics import END, Malformed, CoordError, StorageError, Storage, Entry, Coordinator  # noqa: E402
from writer import WriterError, Writer  # noqa: E402

# ----------------------------------------------------------------- replay ---

V1_COMPAT = False

DEFAULT_CFG = {"checkpointing": True, "final_commit": "on-checkpoint",
               "force_create_snapshot": False, "savepoint_auto_tag": False,
               "tag_time_retained_ms": None, "recovery": "restart"}


def parse_cp(v, allow_end=True):
    if v == "end":
        if not allow_end:
            raise Malformed("end not allowed")
        return END
    if isinstance(v, bool) or not isinstance(v, int) or not (0 <= v <= END - 1):
        raise Malformed("bad checkpoint %r" % (v,))
    return v


def parse_entry(d):
    return Entry(parse_cp(d["checkpoint"]), d.get("committables", []), d.get("watermark"),
                 d.get("savepoint", False))


class Replayer:
    def __init__(self, trace):
        self.trace = trace
        self.cfg = dict(DEFAULT_CFG)
        self.cfg.update(trace["config"])
        self.storage = Storage(trace.get("clock_start_ms", 0), trace.get("clock_step_ms", 0))
        self.inst = {}
        self.kept = {}        # (inst, cp) -> state
        self.writers = {}     # (inst, s) -> Writer
        self.wkept = {}       # (inst, s, cp) -> writer state

    def make(self, name, override, restore, finished):
        cfg = dict(self.cfg)
        cfg.update(override or {})
        c = Coordinator(self.storage, cfg)
        self.inst[name] = c
        rr = False
        try:
            c.start(restore, finished)
        except CoordError as e:
            if isinstance(e, StorageError):
                return None, rr
            c.state = "failed"
            return e, rr
        return None, rr

    def call(self, c, fn, *args):
        """Run one coordinator call; returns (error, restart_required)."""
        try:
            res = fn(*args)
        except StorageError as e:
            return e, False
        except CoordError as e:
            if e.kind != "declined" and c.state not in ("closed", "failed"):
                c.state = "failed"
            return e, False
        return None, bool(res) if isinstance(res, bool) else False

    def deliver(self, name, s, count=None):
        c = self.inst[name]
        w = self.writers[(name, s)]
        err, rr = None, False
        n = len(w.outbox) if count is None else min(count, len(w.outbox))
        for _ in range(n):
            item = w.outbox.pop(0)
            if item[0] == "event":
                e, r2 = self.call(c, c.event, s, item[1].copy())
            else:
                e, r2 = self.call(c, c.restored, s, item[1], [x.copy() for x in item[2]])
            rr = rr or r2
            if e is not None:
                err = e
                break
        return err, rr

    def writer(self, name, s, create=True):
        w = self.writers.get((name, s))
        if w is None:
            if not create:
                raise Malformed("no writer")
            w = self.writers[(name, s)] = Writer()
        return w

    def writers_of(self, name, step):
        if "subtask" in step:
            if (name, step["subtask"]) not in self.writers:
                raise Malformed("subtask")
            return [step["subtask"]]
        ss = sorted(s for (n, s) in self.writers if n == name)
        if not ss:
            raise Malformed("subtask")
        return ss

    def step(self, st):
        op = st["op"]
        name = st.get("instance", "main")
        err, rr, sb = None, False, None
        if op == "start":
            err, rr = self.make(name, st.get("config"), None, ())
        elif op == "failover":
            cp = st["checkpoint"]
            if cp is None:
                err, rr = self.make(name, st.get("config"), None, ())
            else:
                cp = parse_cp(cp, False)
                if "state_hex" in st:
                    state = None   # raw bytes: this model cannot decode them
                else:
                    if (name, cp) not in self.kept:
                        raise Malformed("no kept state")
                    state = self.kept[(name, cp)]
                # restart_required from a recovery inside start
                cfg = dict(self.cfg)
                cfg.update(st.get("config") or {})
                c = Coordinator(self.storage, cfg)
                self.inst[name] = c
                try:
                    rr = bool(self._start_restore(c, cp, state, st.get("finished_subtasks", [])))
                except StorageError as e:
                    err = e
                except CoordError as e:
                    c.state = "failed"
                    err = e
        else:
            if op in ("clock", "storage_fault"):
                if op == "clock":
                    self.storage.set_clock(st["ms"])
                else:
                    cnt = st.get("count", 1)
                    if cnt < 1:
                        raise Malformed("count")
                    self.storage.add_fault(st["call"], st["mode"], st.get("skip", 0), cnt)
            else:
                if name not in self.inst and op not in ("writer_committed", "writer_abort",
                                                        "writer_snapshot"):
                    raise Malformed("no instance %s" % name)
                c = self.inst.get(name)
                if op == "event":
                    err, rr = self.call(c, c.event, st["subtask"], parse_entry(st))
                elif op == "checkpoint":
                    cp = parse_cp(st["checkpoint"])
                    try:
                        state = c.checkpoint(cp)
                        self.kept[(name, cp)] = state
                        sb = 0
                    except CoordError as e:
                        if e.kind != "declined" and c.state not in ("closed", "failed"):
                            c.state = "failed"
                        err = e
                elif op == "complete":
                    err, rr = self.call(c, c.complete, parse_cp(st["checkpoint"]))
                elif op == "abort":
                    err, rr = self.call(c, c.abort, parse_cp(st["checkpoint"]))
                elif op == "reset_subtask":
                    cp = st["checkpoint"]
                    err, rr = self.call(c, c.reset, st["subtask"],
                                        None if cp is None else parse_cp(cp, False))
                elif op == "restored":
                    err, rr = self.call(c, c.restored, st["subtask"],
                                        parse_cp(st["checkpoint"], False),
                                        [parse_entry(e) for e in st["entries"]])
                elif op == "close":
                    c.close()
                elif op == "write":
                    w = self.writer(name, st["subtask"])
                    try:
                        item = w.report(parse_cp(st["checkpoint"], False),
                                        st.get("committables", []), st.get("watermark"),
                                        st.get("savepoint", False))
                        w.outbox.append(item)
                        if st.get("send", True):
                            err, rr = self.deliver(name, st["subtask"])
                    except WriterError as e:
                        err = e
                elif op == "end_input":
                    w = self.writer(name, st["subtask"])
                    item = w.end_input(st.get("committables", []), st.get("watermark"))
                    w.outbox.append(item)
                    if st.get("send", True):
                        err, rr = self.deliver(name, st["subtask"])
                elif op == "send":
                    self.writer(name, st["subtask"])
                    cnt = st.get("count")
                    if cnt is not None and cnt < 1:
                        raise Malformed("count")
                    err, rr = self.deliver(name, st["subtask"], cnt)
                elif op == "writer_committed":
                    ss = self.writers_of(name, st)
                    if "checkpoint" in st:
                        u = parse_cp(st["checkpoint"])
                    else:
                        u = c.u if c is not None else None
                    if u is not None:
                        for s in ss:
                            self.writers[(name, s)].committed(u)
                elif op == "writer_complete" and V1_COMPAT:
                    # v1 op (sanity checks against v1 traces only): drop entries <= c
                    u = parse_cp(st["checkpoint"])
                    for s in self.writers_of(name, st):
                        self.writers[(name, s)].committed(u)
                elif op == "writer_abort":
                    for s in self.writers_of(name, st):
                        self.writers[(name, s)].aborted(parse_cp(st["checkpoint"]))
                elif op == "writer_snapshot":
                    cp = parse_cp(st["checkpoint"], False)
                    for s in self.writers_of(name, st):
                        self.wkept[(name, s, cp)] = self.writers[(name, s)].state()
                elif op == "writer_restore":
                    s = st["subtask"]
                    old = self.writers.get((name, s))
                    att = st.get("attempt", old.attempt + 1 if old else 0)
                    w = self.writers[(name, s)] = Writer(att)
                    cp = st["checkpoint"]
                    if cp is not None:
                        cp = parse_cp(cp, False)
                        if (name, s, cp) not in self.wkept:
                            raise Malformed("checkpoint")
                        try:
                            item = w.restore(self.wkept[(name, s, cp)], cp)
                            w.outbox.append(item)
                            if st.get("send", True):
                                err, rr = self.deliver(name, s)
                        except WriterError as e:
                            err = e
                else:
                    raise Malformed("op %s" % op)
        return err, rr, sb

    def _start_restore(self, c, cp, state, finished):
        try:
            return c.start((cp, state), finished)
        except CoordError:
            raise

    def run(self):
        out = []
        for i, st in enumerate(self.trace["steps"]):
            name = st.get("instance", "main")
            before_snaps = len(self.storage.snapshots)
            before_tags = dict(self.storage.tags)
            err, rr, sb = self.step(st)
            c = self.inst.get(name)
            after_tags = self.storage.tags
            created = sorted(n for n in after_tags if before_tags.get(n) is not after_tags[n])
            deleted = sorted(n for n in before_tags if n not in after_tags)
            res = {"state": c.state if c else "created",
                   "committed": [idj(s["identifier"]) for s in self.storage.snapshots[before_snaps:]],
                   "tags_created": created, "tags_deleted": deleted,
                   "restart_required": rr,
                   "committed_up_to": None if c is None or c.u is None else idj(c.u)}
            if sb is not None:
                res["state_bytes"] = sb
            if err is not None:
                res["error"] = {"kind": err.kind, "message": "..."}
            out.append(res)
        return out


def idj(v):
    return "end" if v == END else v


def render(steps, storage):
    d = lambda o: json.dumps(o, ensure_ascii=False)
    lines = ["{", '  "steps": [']
    lines.append(",\n".join("    " + d(s) for s in steps))
    lines.append("  ],")
    snaps = [{"id": s["id"], "commit_user": s["commit_user"], "identifier": idj(s["identifier"]),
              "watermark": s["watermark"], "time_ms": s["time_ms"],
              "committables": s["committables"]} for s in storage.snapshots]
    tags = [storage.tags[n] for n in sorted(storage.tags, key=lambda n: n.encode())]
    tags = [{"name": t["name"], "snapshot_id": t["snapshot_id"], "identifier": idj(t["identifier"]),
             "create_time_ms": t["create_time_ms"], "expire_time_ms": t["expire_time_ms"]}
            for t in tags]
    for key, items, last in (("snapshots", snaps, False), ("tags", tags, True)):
        tail = "" if last else ","
        if items:
            lines.append('  "%s": [' % key)
            lines.append(",\n".join("    " + d(x) for x in items))
            lines.append("  ]" + tail)
        else:
            lines.append('  "%s": []%s' % (key, tail))
    lines.append("}")
    if not steps:
        lines[2:3] = []
    return "\n".join(lines) + "\n"


def replay(trace):
    rp = Replayer(trace)
    steps = rp.run()
    return render(steps, rp.storage)


def print_diff(got, other, label):
    """The steps, snapshots and tags where two masked result documents differ: the
    oracle's (`got`) against `other` (the expected result, or the implementation's),
    `label` (six characters, so that the two lines align) naming `other`."""
    for i, (a, b) in enumerate(zip(got["steps"], other["steps"])):
        if a != b:
            print("  step %d: oracle %s\n          %s %s" % (i, json.dumps(a), label, json.dumps(b)))
    for k in ("snapshots", "tags"):
        if got[k] != other[k]:
            print("  %s: oracle %s\n          %s %s" % (k, json.dumps(got[k]), label, json.dumps(other[k])))


def mask(doc, drop_u=False):
    d = json.loads(doc)
    for s in d["steps"]:
        if "error" in s:
            s["error"]["message"] = "..."
        if "state_bytes" in s:
            s["state_bytes"] = 0
        if drop_u:
            s.pop("committed_up_to", None)
    return d


def main(argv):
    global V1_COMPAT
    if len(argv) >= 2 and argv[1] == "--v1":
        V1_COMPAT = True
        argv = argv[:1] + argv[2:]
    if len(argv) >= 2 and argv[1] == "--check":
        import glob
        import os
        files = []
        for a in argv[2:]:
            files += sorted(glob.glob(os.path.join(a, "*.trace.json"))) if os.path.isdir(a) else [a]
        bad = 0
        for f in files:
            exp_f = f.replace(".trace.json", ".result.json")
            if not os.path.exists(exp_f):
                print("NO-RESULT %s" % os.path.basename(f))
                continue
            try:
                got = replay(json.load(open(f)))
            except Exception as e:  # noqa
                print("ERROR %s: %r" % (f, e))
                bad += 1
                continue
            exp = open(exp_f).read()
            has_u = '"committed_up_to"' in exp
            g, x = mask(got, not has_u), mask(exp)
            if g != x:
                bad += 1
                print("DIFF %s" % os.path.basename(f))
                print_diff(g, x, "expect")
        print("%d traces, %d differ" % (len(files), bad))
        return 0
    trace = json.load(open(argv[1]))
    try:
        sys.stdout.write(replay(trace))
    except (Malformed, KeyError) as e:
        print("malformed: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
